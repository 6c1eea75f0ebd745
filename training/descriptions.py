"""Questions of the plain kind from a repository's own doc comments, for the learned reranker.

Commit subjects teach what a change touches; a plain question asks where a feature lives.
A doc comment is the code's own answer to that: "Manages the pool of connections to one
host" above a class says, in a question's words, what the class is. So the first sentence
of a type's or function's doc comment (the defined name taken out) becomes a query whose
answer is that definition's file, and the comment is blanked from the copy that is searched,
so the words cannot simply match themselves (the CodeSearchNet recipe, on any language
coderag finds definitions in).

`documented` finds the comments of one file and `blanked` empties their lines (the line count
stays, so every other line keeps its number); `description_pairs` draws a repository's
questions and blanks their comments in its checked-out copy.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.core.index.languages import language_for
from coderag_tui.core.learn.history import HistoryPair, is_gold_path
from coderag_tui.core.rank.definitions import file_definitions

MIN_WORDS = 4  # a first sentence shorter than this, once the name is out, says too little
MAX_WORDS = 40  # longer than this: cut after this many words
KINDS = frozenset({"type", "function"})

# A line that belongs to the comment block above a definition (`#` only where it starts a
# comment: not C's `#include`).
_COMMENT_LINE = re.compile(r"^\s*(?:///?!?|/\*\*?|\*/?|--)")
_HASH_COMMENTS = frozenset({"ruby", "elixir", "perl", "r"})
# Lines that may sit between a doc comment and its definition: attributes and annotations.
_ATTRIBUTE = re.compile(r"^\s*(?:@\w|#\[|\[[A-Z]\w*)")
_MARKERS = re.compile(r"^\s*(?:/\*\*?|\*/|///?!?|\*|#|--)\s?")
_TAG = re.compile(
    r"^\s*[@:](?:param|return|returns|throws|raises|type|rtype|see|since|"
    r"author|deprecated|example|var|property|api|internal)\b",
    re.IGNORECASE,
)
_INLINE = re.compile(r"\{@\w+\s+([^}]*)\}|`+([^`]*)`+|:\w+:`~?([^`]*)`|\[\[?([^\]]+)\]?\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`\"'])|(?<=[.!?])$")
_LEGAL = re.compile(r"\b(?:copyright|licen[cs]ed?|SPDX|all rights reserved)\b", re.IGNORECASE)
_XML_REF = re.compile(r"<\w+\s+(?:cref|name|langword)=\"(?:\w:)?([^\"]+)\"\s*/>")
_PY_DOC_OPEN = re.compile(r"^\s*[rRuUbB]?(\"\"\"|''')")


@dataclass(frozen=True, slots=True)
class Described:
    """A definition with a doc comment: where it is, the comment's lines, and the query."""

    line: int  # 1-based line of the defined name
    name: str
    kind: str
    doc_start: int  # 1-based, inclusive
    doc_end: int
    query: str


def documented(text: str, language: str | None, module: str = "") -> list[Described]:
    """The definitions of `text` whose doc comment makes a query (see the module docstring),
    in line order; [] for a language coderag finds no definitions in. A Python file's module
    docstring counts too, as the definition of `module` (the file's name) on line 1."""
    if not language:
        return []
    lines = text.split("\n")
    found: list[Described] = []
    if language == "python" and module:
        span = _python_docstring(lines, 0)
        query = _query(lines[span[0] - 1 : span[1]], module) if span else ""
        if span and query:
            found.append(Described(1, module, "module", span[0], span[1], query))
    hash_comments = language in _HASH_COMMENTS
    for line, name, kind in file_definitions(text.encode("utf-8", "replace"), language):
        if kind not in KINDS or any(d.line == line for d in found):
            continue
        if language == "python":
            span = _python_docstring(lines, _header_end(lines, line))
        else:
            span = _comment_above(lines, line, hash_comments=hash_comments)
        if span is None:
            continue
        query = _query(lines[span[0] - 1 : span[1]], name)
        if query:
            found.append(Described(line, name, kind, span[0], span[1], query))
    return found


def description_pairs(folder: Path, commit: str, *, limit: int, seed: int) -> list[HistoryPair]:
    """A seeded draw of up to `limit` described definitions of the source files in `folder`
    (a checked-out copy of `commit`, which this rewrites: each drawn comment is blanked), as
    pairs asked at `commit` whose gold is the definition's line. Types and modules are drawn
    first (up to half the draw), then functions."""
    root = folder.resolve()
    found: list[tuple[str, Described]] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file() or not is_gold_path(rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [(rel, d) for d in documented(text, language_for(rel), path.name.split(".")[0])]
    rng = random.Random(seed)
    rng.shuffle(found)
    types = [f for f in found if f[1].kind != "function"][: limit // 2]
    functions = [f for f in found if f[1].kind == "function"]
    drawn = types + functions[: limit - len(types)]
    by_file: dict[str, list[tuple[int, int]]] = {}
    for rel, d in drawn:
        by_file.setdefault(rel, []).append((d.doc_start, d.doc_end))
    for rel, spans in by_file.items():
        target = root / rel
        target.write_text(blanked(target.read_text(encoding="utf-8"), spans), encoding="utf-8")
    return [
        HistoryPair(
            sha=f"doc:{rel}:{d.line}",
            parent=commit,
            time=0,
            queries=(d.query,),
            gold=((rel, ((d.line, d.line),)),),
        )
        for rel, d in drawn
    ]


def blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the lines of each (start, end) span (1-based, inclusive) emptied."""
    lines = text.split("\n")
    for start, end in spans:
        for n in range(start - 1, min(end, len(lines))):
            lines[n] = ""
    return "\n".join(lines)


def _comment_above(lines: list[str], line: int, *, hash_comments: bool) -> tuple[int, int] | None:
    """The block of comment lines right above the definition on `line` (attributes and
    annotations between them allowed)."""
    at = line - 2  # 0-based index of the line above

    def comment(text: str) -> bool:
        if not text.strip():
            return False
        if text.lstrip().startswith("#"):
            return hash_comments
        return bool(_COMMENT_LINE.match(text))

    while at >= 0 and _ATTRIBUTE.match(lines[at]) and not comment(lines[at]):
        at -= 1
    end = at
    while at >= 0 and comment(lines[at]):
        at -= 1
    if at + 1 > end:
        return None
    return at + 2, end + 1


def _header_end(lines: list[str], line: int) -> int:
    """The 1-based line where the `def`/`class` header starting on `line` ends (its `:`)."""
    for at in range(line - 1, min(line + 11, len(lines))):
        if lines[at].split("#", 1)[0].rstrip().endswith(":"):
            return at + 1
    return line


def _python_docstring(lines: list[str], after: int) -> tuple[int, int] | None:
    """The docstring that is the first statement after 1-based line `after` (0: the file's
    start, where comments and blank lines may come first)."""
    at = after
    while at < len(lines) and (
        not lines[at].strip() or (after == 0 and lines[at].lstrip().startswith("#"))
    ):
        at += 1
    if at >= len(lines):
        return None
    opened = _PY_DOC_OPEN.match(lines[at])
    if opened is None:
        return None
    quote = opened.group(1)
    if quote in lines[at][opened.end() :]:
        return at + 1, at + 1
    for end in range(at + 1, min(at + 200, len(lines))):
        if quote in lines[end]:
            return at + 1, end + 1
    return None


def _query(comment: list[str], name: str) -> str:
    """The first sentence of a comment's prose, markup and the defined name taken out."""
    prose: list[str] = []
    for raw in comment:
        text = _MARKERS.sub("", raw, count=1).strip()
        text = re.sub(r"^[rRuUbB]?(\"\"\"|''')|(\"\"\"|''')$", "", text).strip()
        if _TAG.match(text):
            break  # the tags start: the prose is over
        if not text:
            if prose:
                break  # a blank line ends the first paragraph
            continue
        prose.append(text)
    paragraph = " ".join(prose)
    paragraph = _INLINE.sub(lambda m: next(g for g in m.groups() if g is not None), paragraph)
    paragraph = _XML_REF.sub(r"\1", paragraph)  # C#'s <see cref="Policy"/>
    paragraph = re.sub(r"<[^>]+>", " ", paragraph)  # HTML in Javadoc, XML in C#
    paragraph = re.sub(r"\s*\*/\s*$", "", paragraph)  # a one-line /* ... */
    first = _SENTENCE_END.split(paragraph, maxsplit=1)[0]
    if _LEGAL.search(first):
        return ""
    first = re.sub(rf"\b{re.escape(name)}\b", " ", first)
    words = first.split()
    if len([w for w in words if any(c.isalpha() for c in w)]) < MIN_WORDS:
        return ""
    return " ".join(words[:MAX_WORDS]).strip(" .,:;")
