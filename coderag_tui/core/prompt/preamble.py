"""A file's licence preamble: the comment block at its top that states its copyright or
licence, which no question about the code is answered by.

Many projects open every file with the same notice (an Apache or MIT header, often 5–20
lines), so a file ranked for words the notice happens to hold ("notice", the project's
name) was shown by it alone: ~100 tokens each, the same text six times in a 2k prompt.
The packer never shows these lines and no match is read from them (`core.prompt.spans`).

The preamble is the leading comment groups (groups apart by a blank line; block comments,
and a first line that is a shebang or PHP's opening tag, included) up to the last that names
a copyright or a licence. A group after it (a package's doc comment) stays, and so does a
file that is nothing but comments (a notice file is its own content). Prose files (`PROSE`),
where `#` starts a heading, have none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SCANNED = 200  # lines read at most: a preamble longer than this is shown as it is
PROSE = frozenset({"markdown", "rst", "text"})

_LICENCE = re.compile(
    r"copyright|©|\(c\)\s*(?:19|20)\d\d|spdx-license-identifier|licen[cs]ed (?:under|to)\b"
    r"|all rights reserved|permission is hereby granted|general public licen[cs]e"
    r"|apache licen[cs]e|mit licen[cs]e|bsd licen[cs]e",
    re.IGNORECASE,
)
_LINE_COMMENT = ("//", "#", "--", ";", "%", "*")
_BLOCKS = (("/*", "*/"), ("<!--", "-->"), ("{-", "-}"), ("(*", "*)"))
# `#` lines that are code: C's preprocessor, Rust's attributes.
_NOT_COMMENT = re.compile(
    r"#\s*(?:include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|import|error|line)\b"
    r"|#!?\["
)
_PROLOG = re.compile(r"#!(?!\[)|<\?(?:php|xml)\b")  # a first line before the notice


def _opens_block(stripped: str) -> str | None:
    """The closing marker a line opens a block comment with and does not close, if any."""
    for opener, closer in _BLOCKS:
        if stripped.startswith(opener):
            return None if closer in stripped[len(opener) :] else closer
    return None


def _is_comment(stripped: str) -> bool:
    if any(stripped.startswith(opener) for opener, _ in _BLOCKS):
        return True
    return stripped.startswith(_LINE_COMMENT) and not _NOT_COMMENT.match(stripped)


def licence_preamble(lines: Sequence[str], language: str | None) -> int:
    """The last line of the file's licence preamble (1-based), 0 when it has none."""
    if language is None or language in PROSE:
        return 0
    end = 0
    group_last, group_licence = 0, False
    closer: str | None = None
    for number, line in enumerate(lines[:SCANNED], start=1):
        stripped = line.strip()
        if closer is not None:  # inside a block comment
            group_last = number
            group_licence = group_licence or bool(_LICENCE.search(stripped))
            if closer in stripped:
                closer = None
            continue
        if not stripped:
            if group_licence:
                end = group_last
            group_last, group_licence = 0, False
            continue
        if number == 1 and _PROLOG.match(stripped):
            continue  # a shebang, PHP's or XML's opening tag
        if not _is_comment(stripped):
            if group_licence:
                end = group_last
            return end
        group_last = number
        group_licence = group_licence or bool(_LICENCE.search(stripped))
        closer = _opens_block(stripped)
    return end if len(lines) > SCANNED else 0
