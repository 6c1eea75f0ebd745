"""What the code signals read from a query: its words, the names it writes as code, and, in
issue text, the file paths, stack frames, dotted module names and exception names.

A short query is a question or a name: `APIRouter`, `Sinatra::Base`, `res.send`, `parse()` and
`parse_config` are names (a whole-query name gets exact-name priority), and inside a question
only words written as code count (`how does safeParse work`: safeParse). A query of more than
`LONG_QUERY_WORDS` words is read as issue text: its prose is left to BM25, and its code terms
are gathered for a second BM25 pass and for the files and frames it names. What the text points
at in any language (frames, compiler errors, links, quoted messages, flags, module paths, test
names) is read by `core.rank.evidence` and kept whole for the signals that use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import PurePosixPath

from coderag_tui.core.index.languages import GRAMMARS, language_for
from coderag_tui.core.rank.definitions import form
from coderag_tui.core.rank.evidence import URL, Evidence, read_evidence
from coderag_tui.core.rank.roles import roles_asked
from coderag_tui.core.rank.words import compounds

LONG_QUERY_WORDS = 30  # a query with more words than this is read as issue text
TITLE_CHARS = 200  # an issue's first line this long or shorter is its title
# A run of non-space characters is read as its first this many: no name or path is longer,
# and the patterns below cost a run's length squared (one 40k-character word took 38 s).
MAX_RUN_CHARS = 256

# Words that say nothing about where code lives.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "by", "can", "do", "does", "doing",
    "for", "from", "get", "gets", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "me", "my", "not", "of", "on", "or", "our", "should", "so", "that", "the", "their",
    "them", "then", "there", "these", "this", "those", "to", "use", "used", "uses", "using",
    "via", "was", "we", "what", "when", "where", "which", "while", "who", "why", "will", "with",
    "without", "work", "works", "you", "your",
})  # fmt: skip

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN_CHARS + 1},}}")
_IDENT_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
# A qualified name: a.b, a::b, a->b, a\b
_QUALIFIED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|->|\\|\.)[A-Za-z_$][\w$]*)+")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|->|\\|\.)[A-Za-z_$][\w$]*)*")
_SEPARATOR = re.compile(r"::|->|\\|\.")
_CALL = re.compile(r"([A-Za-z_$][\w$]*)\(")
_PATH_LIKE = re.compile(r"[^\s\"'`()<>\[\],;:=]*[\w-]\.[A-Za-z]{1,5}\b")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))\b")
_BACKTICKS = re.compile(r"`([^`\n]{1,80})`")
CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt",
    ".rb", ".php", ".cs", ".c", ".h", ".cc", ".cpp", ".hpp", ".swift", ".scala", ".m",
})  # fmt: skip


def stem(word: str) -> str:
    """A light stem, enough to tell `routes`, `routing` and `route` are one word."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) - len(suffix) >= 3 and w.endswith(suffix) and not w.endswith("ss"):
            return w[: -len(suffix)]
    return w


def same_word(a: str, b: str) -> bool:
    """Two stems are one word when equal or when one is a prefix (4+ letters) of the other:
    `dependenc(y)` ~ `dependencies`, `rout(ing)` ~ `router`."""
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and long.startswith(short)


def identifier_parts(name: str) -> list[str]:
    """`getUserName` -> get, user, name; `HTTP_404` -> http, 404 (lower case)."""
    return [part.lower() for part in _IDENT_PART.findall(name)]


def symbol_like(token: str) -> bool:
    """Whether a whole query is a name rather than a word: `APIRouter`, `parse_config`,
    `Sinatra::Base`, `res.send`, `_private`, `Session` (a lower-case word like `session` is
    a word)."""
    if _QUALIFIED.fullmatch(token):
        return True
    if not _IDENTIFIER.fullmatch(token):
        return False
    return "_" in token or any(c.isupper() for c in token)


# A capital after a lower-case letter (getUser), an acronym before a word (APIRouter), or
# digits after letters (L031, utf8).
_CODE_CASE = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]|[A-Za-z]\d")


def written_as_code(token: str) -> bool:
    """Whether a word among others is written as code: an underscore, a capital inside it
    (`PersonName`, `getUser`, `APIRouter`) or digits after letters (`L031`, `utf8`). A
    capitalised or all-capital word is not (sentences start with capitals; acronyms are
    words)."""
    if not _IDENTIFIER.fullmatch(token) or len(token) < 2:
        return False
    if "_" in token.strip("_") or token.startswith("__"):
        return True
    return bool(_CODE_CASE.search(token))


@dataclass(frozen=True)
class QueryTerms:
    """What the signals read from a query."""

    words: tuple[str, ...]  # lower-case words, stopwords left out, in order
    names: tuple[str, ...]  # names written as code (a qualified name's last part first)
    name_query: bool  # the whole query is one name: exact-name priority
    forms: tuple[str, ...]  # name forms of the plain words (parse config -> parseconfig …)
    roles_asked: frozenset[str]
    long: bool  # issue text
    code_text: str = ""  # issue text: its code terms alone, for a second BM25 pass
    paths: tuple[str, ...] = ()  # file paths named in issue text (stack frames too)
    frames: tuple[tuple[str, str], ...] = ()  # (path, function) of each stack frame
    dotted: tuple[tuple[str, ...], ...] = ()  # dotted names in issue text, split
    # what the text points at (`core.rank.evidence`)
    evidence: Evidence = field(default_factory=Evidence)
    titled: frozenset[str] = frozenset()  # issue text: the names its title line holds


def _clipped(query: str) -> str:
    """The query with each run of more than `MAX_RUN_CHARS` non-space characters cut to it."""
    return _LONG_RUN.sub(lambda run: run.group()[:MAX_RUN_CHARS], query)


def is_issue_text(query: str) -> bool:
    """Is the query issue text (more than `LONG_QUERY_WORDS` words), as `analyse` reads it?"""
    words = _WORD.finditer(_clipped(query))
    return any(count > LONG_QUERY_WORDS for count, _ in enumerate(words, start=1))


def analyse(query: str) -> QueryTerms:  # noqa: C901
    """Read words, names, paths and frames from a query (see the module docstring); a run of
    more than `MAX_RUN_CHARS` non-space characters is read as its start."""
    query = _clipped(query)
    raw_words = _WORD.findall(query)
    words = tuple(w.lower() for w in raw_words if w.lower() not in STOPWORDS)
    long = len(raw_words) > LONG_QUERY_WORDS
    whole = query.strip().removesuffix("()")
    called = query.strip().endswith("()") and _IDENTIFIER.fullmatch(whole) is not None
    name_query = bool(whole) and " " not in whole and (called or symbol_like(whole))
    names: list[str] = []

    def add(name: str) -> None:
        if len(form(name)) >= 2 and name not in names:
            names.append(name)

    frames: list[tuple[str, str]] = []
    paths: list[str] = []
    evidence = Evidence()
    if name_query:
        for part in reversed(_split(whole)):  # `Sinatra::Base`: Base, then Sinatra
            add(part)
    else:
        evidence = read_evidence(query)
        for frame in evidence.frames:
            frames.append((frame.path, frame.symbol))
            if frame.symbol and frame.form != "link":
                add(frame.symbol)
        paths += [p for p in evidence.paths if "/" in p or _is_code_file(p)]
        for match in _EXCEPTION.finditer(query):
            add(match.group(1))
        text = URL.sub(" ", query)
        for token in _NAME.findall(text):
            if _is_code_file(token):
                continue  # a file name: read above
            if _QUALIFIED.fullmatch(token):
                # In issue text `np.random.seed` may name another library: there, plain parts
                # count only after one the repository knows (`dotted`, read by the signals).
                for part in reversed(_split(token)):
                    if written_as_code(part) or (not long and len(part) >= 3):
                        add(part)
            elif written_as_code(token):
                add(token)
        for match in _CALL.finditer(text):
            if not long or written_as_code(match.group(1)):
                add(match.group(1))
        for match in _BACKTICKS.finditer(text):
            inside = _IDENTIFIER.findall(match.group(1))
            for token in inside:
                if len(inside) == 1 or written_as_code(token):
                    add(token)
    dotted: list[tuple[str, ...]] = []
    if long:
        for token in _DOTTED.findall(URL.sub(" ", query)):
            if not _is_code_file(token):
                dotted.append(tuple(token.split(".")))
    words += tuple(w for w in compounds(query) if w.isalnum() and w not in words)
    return QueryTerms(
        titled=_titled(query, names) if long else frozenset(),
        words=words,
        names=tuple(names),
        name_query=name_query,
        forms=name_forms(words),
        roles_asked=frozenset() if long else roles_asked(words),  # issues mention tests
        long=long,
        code_text=" ".join([*names, *paths]) if long else "",
        paths=tuple(dict.fromkeys(paths)),
        frames=tuple(frames),
        dotted=tuple(dict.fromkeys(dotted)),
        evidence=evidence,
    )


def _titled(query: str, names: Sequence[str]) -> frozenset[str]:
    """The names written in an issue's title: its first line, when more lines follow and it
    is a line a title can be (at most `TITLE_CHARS`)."""
    first, _, rest = query.strip().partition("\n")
    if not rest.strip() or len(first) > TITLE_CHARS:
        return frozenset()
    said = set(_NAME.findall(URL.sub(" ", first)))
    said |= {part for token in said for part in _split(token)}
    return frozenset(name for name in names if name in said)


def name_forms(words: Sequence[str]) -> tuple[str, ...]:
    """Name forms of adjacent plain words: both orders of each pair, the second also as a
    doer, and each triple (`parse config` -> parseconfig, configparse, configparser …)."""
    found: list[str] = []
    plain = [w for w in words if w.isalpha() and len(w) >= 2]
    for a, b in pairwise(plain):
        for first, second in ((a, b), (b, a)):
            root = stem(second)
            found += [first + second, first + root, first + root + "er", first + root + "r"]
    for a, b, c in zip(plain, plain[1:], plain[2:], strict=False):
        found.append(a + b + c)
    return tuple(dict.fromkeys(f for f in found if len(f) >= 6))


def _split(token: str) -> list[str]:
    return [part for part in _SEPARATOR.split(token) if part]


def _is_code_file(token: str) -> bool:
    name = token.rstrip(".")
    return PurePosixPath(name).suffix.lower() in CODE_SUFFIXES or language_for(name) in GRAMMARS
