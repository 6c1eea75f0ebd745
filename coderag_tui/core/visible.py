"""Repository text made safe for a terminal: control characters are shown, never obeyed.

File contents and names are someone else's text. An escape sequence inside them (a clipboard
write with OSC 52, a screen clear, a title change) would act on the user's terminal if
printed raw, and bidirectional overrides can make code read differently from what it is.
Every face passes such text through `visible` before it reaches a terminal; `--json`, `--out`
and a prompt piped to a file keep the exact text, and `control_count` says how many were there.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidirectional controls
# (embeddings, overrides, isolates, marks) that "Trojan Source" attacks use.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMES = {"\r": "\\r", "\x1b": "\\x1b"}


def _show(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character written out (`\\x1b`, `\\x07`, `\\u202e`)."""
    return _CONTROL.sub(_show, text)


def control_count(text: str) -> int:
    """How many control characters `visible` would write out."""
    return len(_CONTROL.findall(text))


def one_line(text: str, limit: int | None = None) -> str:
    """`visible`, with newlines and tabs written out too: for a name shown on one line; with
    `limit`, cut to at most that many characters (the cut said with `…`)."""
    if limit is not None and len(text) > limit:  # cut first: a huge text costs nothing more
        text = text[: limit + 1]
    shown = visible(text).replace("\n", "\\n").replace("\t", "\\t")
    if limit is not None and len(shown) > limit:
        shown = shown[: max(0, limit - 1)] + "…"
    return shown
