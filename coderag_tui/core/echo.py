"""Outside text said back: one line, bounded, and with its secrets masked as a prompt masks them.

coderag repeats text it did not write: a value from a repository's `.coderag.toml` in a
warning, a path or a pattern in a refusal, the query an answer was ranked for (which `--from`
and MCP's `related` take from a file's lines), an agent's argument. Said raw, a newline in it
forges a line of coderag's own (`coderag: … | sh`) on stderr or in a log, a megabyte of it
comes back as a megabyte, and a key on a line `--from` points at is printed. So every such
echo (stderr, the log, MCP answers and JSON fields) goes through `echo` (or `masked` where
the text keeps its lines, in a JSON string): secrets masked as `<redacted:KIND>` by the same
scan the prompt uses, control characters and newlines written out (`core.visible.one_line`),
and at most `limit` characters, the cut said with `…`.
"""

from __future__ import annotations

import re

from coderag_tui.core.visible import one_line

MAX_ECHO_CHARS = 1000  # a notice, a log line or a refusal
# What a secret in a notice looks like before the scan looks closer: a long run of token
# characters, a credential's name assigned, a password in a URL. coderag's own lines
# ("7,812 of 8,000 tokens") pass without the scan's detectors (their import costs ~0.5 s).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_+/=\-]{16,}")  # a key, a token, a hash …
_LONG_PART = re.compile(r"[A-Za-z0-9+/=]{12}")  # … with a long part: `all-MiniLM-L6-v2` is no key
_WORTH_SCANNING = re.compile(
    # a credential's name assigned (`password=`, `db_pass:`; not a "first pass:")
    r"(?i:passw|passph|[a-z]_?pass\b|pwd|secret|key|token|auth|credential)\w*['\"]?\s*[:=]"
    r"|://[^\s/@]+:[^\s/@]+@"  # user:password@ in a URL
)


def _worth_scanning(text: str) -> bool:
    """Might `text` hold a secret? (In time linear in the text, whatever it holds.)"""
    if _WORTH_SCANNING.search(text):
        return True
    return any(_LONG_PART.search(run.group()) for run in _TOKEN_RUN.finditer(text))


# Characters scanned for secrets beyond what is shown: a secret that starts in the shown part
# is found whole (the scan's window is 4,000 characters).
_SCAN_MARGIN = 8192


def masked(text: str) -> str:
    """`text` with each suspected secret replaced by `<redacted:KIND>`, its lines kept."""
    from coderag_tui.core.index.secret_scan import redact_lines, scan_text

    findings = scan_text("task", text)
    if not findings:
        return text
    return "\n".join(redact_lines(text.split("\n"), 1, findings))


def echo(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` fit to say back on one line: secrets masked, control characters and newlines
    written out, at most `limit` characters."""
    head = text[: limit + _SCAN_MARGIN]
    return one_line(masked(head) if _worth_scanning(head) else head, limit)


def echoed_query(query: str, secrets: str, limit: int = 500) -> str:
    """The query an answer repeats (a JSON field, an MCP answer): its secrets masked unless
    `secrets` is "allow" (a query can be a file's lines: `--from`, MCP's `related`), at most
    `limit` characters, the cut said with `…`."""
    head = query[: limit + _SCAN_MARGIN]
    shown = head if secrets == "allow" else masked(head)
    return shown if len(shown) <= limit else shown[:limit] + "…"


__all__ = ["MAX_ECHO_CHARS", "echo", "echoed_query", "masked"]
