"""Secrets in repository text, found when a file is indexed, so no prompt carries one silently.

The detectors are detect-secrets' (Yelp, 1.5): format detectors for AWS, GitHub, GitLab,
Stripe, Slack, OpenAI, PyPI, npm, SendGrid, Twilio, Square, Azure, IBM, Cloudant, Discord,
Telegram and Mailchimp keys, JSON Web Tokens, private-key blocks, passwords in URLs
(`://user:pass@`), secret-sounding assignments (`password = "…"`, by file type) and
high-entropy strings, with its heuristic filters for look-alikes (UUIDs, `${templated}`
values, `get_secret()` calls, sequences such as `ABCDEF…`). A maintained library beats
regexes of our own: its patterns follow the providers' token formats as they change, and
its filters were tuned against false alarms by the teams that run it in CI and pre-commit;
we only choose which of its detectors run where.

Only a prefilter is ours, because detect-secrets' plugins take ~65 µs a line in pure Python:
about a minute for the standard library's 970,000 lines. One `bytes.translate` lowers the
text and maps the rarest letter of every needle to a sentinel byte (k, w, j, x, h and `/` to
one, c to another), and one pattern per sentinel, starting with that byte, runs at SRE's
speed for a literal first character. Keywords (key, token, secret, password, passwd, pwd,
auth, credential) count only when an assignment of a literal follows that starts with six
characters other than spaces (quoted in code, unquoted allowed in config files, as
detect-secrets itself reads them); the prefixes of the format detectors (AKIA,
ghp_/gho_/ghu_/ghs_/ghr_, sk_live_/rk_live_, xox?-, eyJ, T3BlbkFJ,
`PRIVATE KEY`, PuTTY keys, AccountKey=, :_authToken=, pypi- tokens, sq0csp-) and
`://user:pass@` count anywhere. Only the lines they find reach detect-secrets' plugins.
Formats without such a letter (ASIA…, glpat-…, SG.…, and bare Twilio, Discord, Telegram
and Mailchimp keys) are found on lines that name them (`GITLAB_TOKEN = "glpat-…"`) only.
Measured on the standard library (37 MB): the prefilter takes ~0.1 s of CPU, the plugins
~0.03 s on the 366 lines it passes, and importing detect-secrets ~0.08 s once per process
(mostly `requests`, which its plugins import to verify keys online; coderag never does).

High-entropy strings count only on lines that name a credential (one of the keywords),
never on their own: run on every line of the standard library, the two entropy plugins flag
39 files (280 strings: hash test vectors, `base64.py`'s alphabet, `secrets.py` itself) and
take 2 s; gated, they flag none, and the whole scan flags 10 of its 2,257 indexed files, all
test credentials (`password = 'python'`, `http://user:pass@python.org/`). The
`IPPublicDetector` is off (an address is not a credential), and so are detect-secrets'
`# pragma: allowlist secret` comments: a repository's own text cannot vouch for itself,
just as its `.coderag.toml` cannot switch holding secrets back off.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from coderag_tui.core.records import SecretFinding

if TYPE_CHECKING:
    from collections.abc import Callable

# Bump when the detectors, their limits or the prefilter change: stored findings are then
# recomputed from the stored texts (no file is read again).
SCANNER_VERSION = "1"
SCANNER_META_KEY = "secret_scanner"

# Entropy limits of detect-secrets' high-entropy plugins (their defaults are 4.5 and 3.0).
BASE64_LIMIT = 4.5
HEX_LIMIT = 3.0
# A value shorter than this is no credential worth holding back (`password = "x"` in tests).
MIN_SECRET_CHARS = 6
# Lines longer than this are not handed to the plugins (their patterns backtrack on them).
MAX_SCANNED_LINE = 4000
# How far a private-key block may run past its BEGIN line.
MAX_KEY_BLOCK_LINES = 400

# Kinds that name a finding only by how it looks, not what it is; a redaction prefers the other.
GENERIC_KINDS = frozenset(
    {"Secret Keyword", "Base64 High Entropy String", "Hex High Entropy String"}
)
PRIVATE_KEY = "Private Key"
EXCLUDED_PLUGINS = frozenset({"IPPublicDetector"})

# --- the prefilter ---------------------------------------------------------------------------

# The rarest letter of each needle becomes a sentinel byte, and a pattern that starts with
# that byte is scanned at SRE's literal speed. `c` gets a sentinel of its own: it is twice as
# common as the others together, and only four needles need it.
_SENTINELS: dict[int, str] = {1: "kwjx/h", 2: "c"}


def _translation() -> bytes:
    table = bytearray(range(256))
    for upper in range(ord("A"), ord("Z") + 1):
        table[upper] = upper + 32
    for sentinel in _SENTINELS:
        table[sentinel] = 0  # a sentinel byte in the text itself must not look like one
    for sentinel, chars in _SENTINELS.items():
        for char in chars:
            table[ord(char)] = sentinel
            if char.isalpha():
                table[ord(char.upper())] = sentinel
    return bytes(table)


_TABLE = _translation()

# Words that make a secret-looking assignment (lower case): detect-secrets' keyword list
# (api_key, password, passwd, pwd, secret …) widened to token, auth and credential, whose
# values the format and high-entropy detectors judge. `auth` is spelled with what follows it.
KEYWORDS: tuple[str, ...] = (
    "key", "token", "secret", "password", "passwd", "pwd", "credential", "contrase",
    "auth_", "autho", "authe", "autht", "auth=", "auth:", 'auth"', "auth'", "auth ", "auth]",
)  # fmt: skip
# Prefixes of the format detectors (lower case), anywhere on a line.
PREFIXES: tuple[str, ...] = (
    "akia", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "sk_live_", "rk_live_",
    "xoxa-", "xoxb-", "xoxo-", "xoxp-", "xoxr-", "xoxs-", "hooks.slack.com/services/",
    "eyjhb", "eyjpc", "eyj0e", "t3blbkfj", "private key", "putty-user-key-file",
    "accountkey=", "_authtoken=", "pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw",
    "sq0csp-",
)  # fmt: skip
# After a keyword: the rest of the name, a closing quote or bracket, an assignment or
# comparison, and a value that starts with MIN_SECRET_CHARS characters other than spaces and
# quotes, quoted in code (detect-secrets' rule); a sentence in quotes is no credential.
_NAME_AND_OPERATOR = rb"[\w\x01\x02]*(?:['\"\]]{0,2}|\[\d*\])\s*(?::=|[=!:]=?=?|=>|\()\s*@?"
_QUOTED_VALUE = rb"[\"'`][\w\x01\x02][^\s\"'`]{5}"
_ANY_VALUE = rb"[\"'`]?[\w\x01\x02][^\s\"'`]{5}"
# `scheme://user:password@`: a superset of BasicAuthDetector's pattern (its excluded
# characters cannot all be told apart once letters and `/` share a sentinel).
_URL_NEEDLE = "://"
_URL_CREDENTIALS = rb"[^\s:@'\"<>]{1,200}:[^\s@'\"<>]{1,200}@"


def _mapped(needle: str) -> bytes:
    return needle.encode().translate(_TABLE)


def _trie(entries: list[tuple[bytes, bytes]]) -> bytes:
    """One alternation for (literal rest, what follows it) pairs, sharing first bytes, so SRE
    tests each byte after a sentinel once instead of once per needle."""
    ends = [follow for rest, follow in entries if not rest]
    groups: dict[bytes, list[tuple[bytes, bytes]]] = {}
    for rest, follow in entries:
        if rest:
            groups.setdefault(rest[:1], []).append((rest[1:], follow))
    alternatives = [re.escape(first) + _trie(group) for first, group in sorted(groups.items())]
    if ends:
        alternatives.append(b"" if b"" in ends else b"(?:" + b"|".join(ends) + b")")
    if len(alternatives) == 1:
        return alternatives[0]
    return b"(?:" + b"|".join(alternatives) + b")"


def _prefilter(sentinel: int, value: bytes, extra: bytes = b"") -> re.Pattern[bytes] | None:
    """The pattern for the needles whose rarest letter maps to `sentinel`, or None."""
    marker = bytes([sentinel])
    tail = _NAME_AND_OPERATOR + value
    entries: list[tuple[bytes, bytes]] = []
    needles = [(k, tail) for k in KEYWORDS] + [(p, b"") for p in PREFIXES]
    needles.append((_URL_NEEDLE, _URL_CREDENTIALS))
    for needle, follow in needles:
        mapped = _mapped(needle)
        first = min((i for i, b in enumerate(mapped) if b in _SENTINELS), default=-1)
        if first < 0:
            raise ValueError(f"the needle {needle!r} has no anchor letter")
        if mapped[first] != sentinel:
            continue
        behind = b"(?<=" + re.escape(mapped) + b")" if first else b""
        entries.append((mapped[first + 1 :], behind + follow))
    if not entries:
        return None
    return re.compile(re.escape(marker) + _trie(entries) + extra)


def _prefilters(value: bytes, extra: bytes = b"") -> tuple[re.Pattern[bytes], ...]:
    found = (_prefilter(s, value, extra if s == max(_SENTINELS) else b"") for s in _SENTINELS)
    return tuple(p for p in found if p is not None)


@functools.cache
def _code_prefilters() -> tuple[re.Pattern[bytes], ...]:
    return _prefilters(_QUOTED_VALUE)


@functools.cache
def _config_prefilters() -> tuple[re.Pattern[bytes], ...]:
    # Config files are small and few, so they also get the words without an anchor letter
    # (DB_PASS=, SMTP_PASS:): a pattern with two first bytes leaves SRE's fast path.
    return _prefilters(_ANY_VALUE, b"|pass" + _NAME_AND_OPERATOR + _ANY_VALUE)


# Files whose values need no quotes: detect-secrets' config types, plus env and shell files.
_CONFIG_EXTENSIONS = frozenset(
    {
        ".yaml", ".yml", ".eyaml", ".toml", ".ini", ".cfg", ".conf", ".cnf", ".cf",
        ".properties", ".env", ".sh", ".bash", ".zsh", ".fish", ".go", ".tf", ".tfvars",
        ".hcl", ".npmrc", ".pypirc", ".netrc", ".pgpass", ".htpasswd", ".envrc",
    }
)  # fmt: skip


def _is_config(path: str) -> bool:
    name = os.path.basename(path).lower()
    stem, ext = os.path.splitext(name)
    if not ext or name.startswith(".env") or stem == "dockerfile" or name == "dockerfile":
        return True
    return ext in _CONFIG_EXTENSIONS or (stem.startswith(".") and not ext)


# --- the detectors ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Detectors:
    """detect-secrets' plugins and filters, created once and shared by the indexing threads
    (their `analyze_string` only reads them)."""

    regex_plugins: tuple[Any, ...]
    format_gate: re.Pattern[str] | None  # any format detector's pattern (None: run them all)
    keyword: Any
    entropy: tuple[tuple[Any, float], ...]
    keyword_rules: Callable[[str], Any]
    secret_filters: tuple[Callable[[str], bool], ...]
    id_like: Callable[..., bool]
    indirect: Callable[[str], bool]


_detectors: _Detectors | None = None
_detectors_lock = threading.Lock()


def _load() -> _Detectors:
    """The detectors, imported on first use: ~0.08 s, most of it `requests`, which the
    plugins import for checking keys online (coderag never does); a file whose lines pass
    no prefilter never needs them."""
    global _detectors
    with _detectors_lock:
        if _detectors is None:
            _detectors = _build_detectors()
        return _detectors


def warm() -> None:
    """Import and build the detectors now (an indexer starts this beside its reading)."""
    _load()


def _build_detectors() -> _Detectors:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins import keyword as keyword_module
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )
    from detect_secrets.util.filetype import FileType, determine_file_type

    # Its signature names a TypeVar mypy cannot solve here: these are plugin classes.
    classes = cast("Iterable[type[Any]]", get_mapping_from_secret_type_to_class().values())
    regex_plugins = tuple(
        cls()
        for cls in sorted(classes, key=lambda c: c.__name__)
        if issubclass(cls, RegexBasedDetector) and cls.__name__ not in EXCLUDED_PLUGINS
    )
    by_type = keyword_module.REGEX_BY_FILETYPE
    config_rules = keyword_module.CONFIG_DENYLIST_REGEX_TO_GROUP
    quoted_rules = keyword_module.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    def keyword_rules(path: str) -> Any:
        kind = determine_file_type(path)
        if kind is FileType.OTHER and _is_config(path):
            return config_rules
        return by_type.get(kind, quoted_rules)

    return _Detectors(
        regex_plugins=regex_plugins,
        format_gate=_gate(regex_plugins),
        keyword=keyword_module.KeywordDetector(),
        entropy=(
            (Base64HighEntropyString(limit=BASE64_LIMIT), BASE64_LIMIT),
            (HexHighEntropyString(limit=HEX_LIMIT), HEX_LIMIT),
        ),
        keyword_rules=keyword_rules,
        secret_filters=(
            heuristic.is_sequential_string,
            heuristic.is_potential_uuid,
            heuristic.is_templated_secret,
            heuristic.is_prefixed_with_dollar_sign,
            heuristic.is_not_alphanumeric_string,
        ),
        id_like=heuristic.is_likely_id_string,
        indirect=heuristic.is_indirect_reference,
    )


def _gate(plugins: Sequence[Any]) -> re.Pattern[str] | None:
    """One pattern that matches where any format detector's pattern does, so a line none of
    them matches costs one search instead of one per pattern; None if they do not combine."""
    parts = []
    for plugin in plugins:
        for pattern in plugin.denylist:
            flags = "".join(f for f, bit in (("i", re.I), ("x", re.X)) if pattern.flags & bit)
            parts.append(f"(?{flags}:{pattern.pattern})" if flags else f"(?:{pattern.pattern})")
    try:
        return re.compile("|".join(parts))
    except re.error:  # a pattern with a back reference would break numbering: no gate
        return None


# --- scanning --------------------------------------------------------------------------------


def candidate_lines(path: str, raw: bytes) -> list[tuple[int, str]]:
    """The (1-based number, text) of each line of `raw` (a file's UTF-8 text, lone surrogates
    kept) that the prefilter passes on to the detectors, in line order."""
    mapped = raw.translate(_TABLE)
    starts: set[int] = set()
    for pattern in _config_prefilters() if _is_config(path) else _code_prefilters():
        for match in pattern.finditer(mapped):
            starts.add(mapped.rfind(b"\n", 0, match.start()) + 1)
    found: list[tuple[int, str]] = []
    line_no, counted_to = 1, 0
    for start in sorted(starts):
        line_no += mapped.count(b"\n", counted_to, start)
        counted_to = start
        end = mapped.find(b"\n", start)
        line = raw[start : end if end >= 0 else len(raw)]
        found.append((line_no, line.decode("utf-8", "surrogatepass")))
    return found


def scan_text(path: str, text: str, raw: bytes | None = None) -> tuple[SecretFinding, ...]:
    """Every suspected secret in `text` (the file at repository path `path`), in line order.

    `raw` is the text's UTF-8 encoding with lone surrogates kept, when the caller has it
    already (the indexer hashes those bytes).
    """
    if raw is None:
        raw = text.encode("utf-8", "surrogatepass")
    candidates = candidate_lines(path, raw)
    if not candidates:
        return ()
    detectors = _load()
    rules = detectors.keyword_rules(path)
    findings: set[SecretFinding] = set()
    for line_no, line in candidates:
        line = line.rstrip("\r")
        if len(line) > MAX_SCANNED_LINE:
            continue
        for kind, start, end in _line_secrets(detectors, rules, line):
            if kind == PRIVATE_KEY:
                findings.add(_key_block(text, line_no, line, start))
            else:
                findings.add(SecretFinding(line_no, start, line_no, end, kind))
    return tuple(sorted(findings, key=_finding_order))


# A line that names a credential: only there do high-entropy strings count.
_NAMES_CREDENTIAL = re.compile(r"key|token|secret|passw|pwd|auth|credential|contrase", re.I)
# A captured group shorter than this is part of a token's format (GitHub's `ghp`), not the
# secret: the whole match is masked then.
_MIN_GROUP_CHARS = 4


def _line_secrets(detectors: _Detectors, rules: Any, line: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each secret the plugins find in one line, after the filters."""
    found: list[tuple[str, int, int]] = []
    gate = detectors.format_gate
    for plugin in detectors.regex_plugins if gate is None or gate.search(line) else ():
        values = {v for v in plugin.analyze_string(line) if _kept(detectors, v, line, plugin=None)}
        if values:
            found += [(plugin.secret_type, a, b) for a, b in _spans(plugin, line, values)]
    guessed: dict[str, str] = {}
    for value in detectors.keyword.analyze_string(line, denylist_regex_to_group=rules):
        if _kept(detectors, value, line, plugin=detectors.keyword):
            guessed.setdefault(value, detectors.keyword.secret_type)
    if _NAMES_CREDENTIAL.search(line):
        for plugin, limit in detectors.entropy:
            for value in plugin.analyze_string(line):
                if plugin.calculate_shannon_entropy(value) > limit and _kept(
                    detectors, value, line, plugin=plugin
                ):
                    guessed.setdefault(value, plugin.secret_type)
    for value, kind in guessed.items():
        start = line.find(value)
        while start >= 0:
            found.append((kind, start, start + len(value)))
            start = line.find(value, start + len(value))
    return found


def _spans(plugin: Any, line: str, values: set[str]) -> list[tuple[int, int]]:
    """Where a format detector's findings are in the line.

    detect-secrets reports a pattern's captured groups as the secret (the password of
    `://user:password@`, the 40 characters after `aws_secret_access_key =`) and the whole
    match when there are none; a short group (GitHub's `ghp` prefix) is part of the format,
    so the whole match is the secret then.
    """
    spans: list[tuple[int, int]] = []
    for pattern in plugin.denylist:
        for match in pattern.finditer(line):
            groups = [i for i in range(1, pattern.groups + 1) if match.group(i)]
            reported = [match.group(i) for i in groups] or [match.group(0)]
            if not values.intersection(reported):
                continue
            long_groups = [i for i in groups if len(match.group(i)) >= _MIN_GROUP_CHARS]
            spans.append(match.span(long_groups[0]) if long_groups else match.span())
    return spans


def _kept(detectors: _Detectors, value: str, line: str, *, plugin: Any) -> bool:
    """detect-secrets' heuristic filters; `plugin` set for the guessing (non-format) plugins."""
    if not value:
        return False
    if plugin is not None:
        if len(value) < MIN_SECRET_CHARS:
            return False
        if detectors.indirect(line) or detectors.id_like(value, line, plugin):
            return False
    return not any(check(value) for check in detectors.secret_filters)


_KEY_END = re.compile(r"-----END[ A-Z0-9]*-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----")
_KEY_BODY = re.compile(r"^[\s'\"`]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+: .*|)[\s'\"`,\\n]*$")


def _key_block(text: str, line_no: int, line: str, found_at: int) -> SecretFinding:
    """A private key from its BEGIN line to its END line (or the end of its base64 body)."""
    begin = line.rfind("-----", 0, found_at + 1)
    col = begin if begin >= 0 and line.startswith("-----BEGIN", begin) else found_at
    end_match = _KEY_END.search(line, col)
    if end_match is not None:
        return SecretFinding(line_no, col, line_no, end_match.end(), PRIVATE_KEY)
    lines = _lines_after(text, line_no, MAX_KEY_BLOCK_LINES)
    last_no, last_end = line_no, len(line)
    for offset, following in enumerate(lines, start=1):
        end_match = _KEY_END.search(following)
        if end_match is not None:
            return SecretFinding(line_no, col, line_no + offset, end_match.end(), PRIVATE_KEY)
        if not _KEY_BODY.match(following):
            break
        last_no, last_end = line_no + offset, len(following)
    return SecretFinding(line_no, col, last_no, last_end, PRIVATE_KEY)


def _lines_after(text: str, line_no: int, limit: int) -> list[str]:
    pos = 0
    for _ in range(line_no):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return []
    return text[pos:].split("\n", limit)[:limit]


def _finding_order(finding: SecretFinding) -> tuple[int, int, int, int, str]:
    return (finding.line, finding.col, finding.end_line, finding.end_col, finding.kind)


# --- using the findings ----------------------------------------------------------------------


def kinds_in(findings: Sequence[SecretFinding], start_line: int, end_line: int) -> tuple[str, ...]:
    """The kinds of the findings that touch lines start_line–end_line, specific ones first."""
    kinds = {f.kind for f in findings if f.line <= end_line and f.end_line >= start_line}
    return tuple(sorted(kinds, key=lambda k: (k in GENERIC_KINDS, k)))


def redact_lines(
    lines: Sequence[str], first_line: int, findings: Sequence[SecretFinding]
) -> list[str]:
    """`lines` (numbered from `first_line`) with each secret replaced by `<redacted:KIND>`.

    Line breaks stay where they were, so line numbers still match the file: a secret over
    several lines (a private key) becomes one marker on its first line and empty lines.
    """
    out = list(lines)
    last_line = first_line + len(out) - 1
    for finding in _merged(findings):
        if finding.end_line < first_line or finding.line > last_line:
            continue
        marker = f"<redacted:{finding.kind}>"
        for number in range(max(finding.line, first_line), min(finding.end_line, last_line) + 1):
            text = out[number - first_line]
            start = finding.col if number == finding.line else 0
            end = finding.end_col if number == finding.end_line else len(text)
            shown = marker if number == finding.line else ""
            out[number - first_line] = text[:start] + shown + text[end:]
    return out


def _merged(findings: Iterable[SecretFinding]) -> list[SecretFinding]:
    """Overlapping findings as one (named by the most specific kind), last in the text first,
    so replacing one never moves the columns of another on the same line."""
    spans: list[SecretFinding] = []
    for f in sorted(findings, key=_finding_order):
        last = spans[-1] if spans else None
        if last is not None and (f.line, f.col) < (last.end_line, last.end_col):
            end = max((last.end_line, last.end_col), (f.end_line, f.end_col))
            kind = (
                last.kind if (last.kind not in GENERIC_KINDS or f.kind in GENERIC_KINDS) else f.kind
            )
            spans[-1] = SecretFinding(last.line, last.col, end[0], end[1], kind)
        else:
            spans.append(f)
    return spans[::-1]
