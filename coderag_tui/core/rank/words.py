"""The BM25 word splitter: one function for chunks and queries, so both sides see the same words.

Default (the research default): split on every non-alphanumeric character (underscores
included, so `get_user_name` gives `get`, `user`, `name`); single digits are dropped, while
numerals of two or more digits (`404`, `2038`, `0x1F` gives `0x1f`) are words, since people
search for status codes, ports and error numbers; everything is lowercased; no stemming, no
stopwords.

With `split_identifiers`, identifiers are kept whole AND split into their parts, camelCase
included: `getUserName` -> `getusername`, `get`, `user`, `name`; `get_user_name` ->
`get_user_name`, `get`, `user`, `name`; `HTTPServer2` -> `httpserver2`, `http`, `server`;
`HTTP_404_NOT_FOUND` -> `http_404_not_found`, `http`, `404`, `not`, `found`.
"""

from __future__ import annotations

import re
from itertools import chain

# Bump when the words change for the same text: saved BM25 indexes then rebuild.
TOKENIZER_VERSION = 5  # 5 keeps numerals of 2+ digits; 3 split compound segments twice

# A run of letters and digits (any script); single digits are filtered afterwards (measured
# faster on the stdlib than a pattern that refuses them, which has to look behind everywhere).
_ALNUM = re.compile(r"[^\W_]+")
# With identifier splitting, whole identifiers (underscores included) are the unit to expand.
_WORD = re.compile(r"\w+")
# Parts of an identifier: an upper-case run before a capitalised word (HTTP|Server), a
# capitalised or lower-case word, a trailing upper-case run, or digits.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")


_EXPANSIONS_MAX = 1 << 19  # distinct words remembered; a corpus vocabulary is far smaller


def _single_digit(word: str) -> bool:
    """A numeral of one digit: too common in code (indexes, versions) to say anything."""
    return len(word) == 1 and word.isdigit()


# split_identifiers stays positional: BM25's hot loops (rank/lexical.py) pass it so.
def word_terms(word: str, split_identifiers: bool) -> tuple[str, ...]:  # noqa: FBT001
    """The BM25 words of one word `split_words` gave: none for a single digit; with
    `split_identifiers`, the lowercased word followed by its identifier parts when it has
    more than one."""
    if _single_digit(word):
        return ()
    if not split_identifiers:
        return (word,)  # `split_words` lowercased it already
    low = word.lower()
    # Only compound words need splitting: an underscore or a capital after the first letter.
    if "_" in word or (not word[1:].islower() and not word.isupper() and not word.islower()):
        if word.isascii() and word.islower() and word.replace("_", "").isalpha():
            parts = [p for p in word.split("_") if p]  # snake_case: what _PART finds, faster
        else:
            parts = [p.lower() for p in _PART.findall(word) if not _single_digit(p)]
        if len(parts) > 1 or (parts and parts[0] != low):
            return (low, *parts)
    return (low,)


# ASCII text (most code) splits the way the patterns above do with `str.translate` and
# `str.split`, both in C: every character a pattern skips becomes a space (and, for the words
# of `_ALNUM`, capitals their lower case), about twice as fast as `findall`.
_ASCII_WORD = str.maketrans({c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})
_ASCII_ALNUM_LOWER = str.maketrans(
    {
        c: (chr(c).lower() if chr(c).isalnum() else " ")
        for c in range(128)
        if not chr(c).isalnum() or chr(c).isupper()
    }
)


def split_words(text: str, split_identifiers: bool) -> list[str]:  # noqa: FBT001 (as above)
    """The words of `text` before `word_terms` expands them: whole identifiers (underscores
    included) with `split_identifiers`, else lowercased runs of letters and digits."""
    if split_identifiers:
        return text.translate(_ASCII_WORD).split() if text.isascii() else _WORD.findall(text)
    if text.isascii():
        return text.translate(_ASCII_ALNUM_LOWER).split()
    return _ALNUM.findall(text.lower())


class WordTerms(dict[str, tuple[str, ...]]):
    """`word_terms` of each word, worked out the first time it is looked up: `map(get, words)`
    then runs in C for every word seen before (nearly all of them)."""

    def __init__(self, *, split_identifiers: bool) -> None:
        super().__init__()
        self.split_identifiers = split_identifiers

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= _EXPANSIONS_MAX:
            self.clear()
        terms = self[word] = word_terms(word, self.split_identifiers)
        return terms


_TERMS = {flag: WordTerms(split_identifiers=flag) for flag in (False, True)}


# Words a person joins with a dash or a slash where code writes them as one identifier:
# `HTTP/2` (http2), `e-mail` (email), `utf-8` (utf8), `Set-Cookie` (SetCookie, set_cookie),
# `max-depth` (maxDepth, max_depth). Two or three parts of letters or digits, not inside a
# longer path or word.
_COMPOUND = re.compile(
    r"(?<![\w/.])(?<![\w/.]-)[A-Za-z0-9]+(?:[-/][A-Za-z0-9]+){1,2}(?![\w/-]|\.\w)"
)
COMPOUND_MAX_CHARS = 24  # a longer run is a path or a sentence, not a name


def compounds(text: str) -> list[str]:
    """The identifiers a query's dashed or slashed words stand for, lower case: each run
    joined (`HTTP/2` -> http2, `Set-Cookie` -> setcookie) and, with letters on both sides of a
    dash, joined by underscores (set_cookie), as code spells them; what `tokenize` already
    gives (a single word) is left out."""
    out: list[str] = []
    for run in _COMPOUND.findall(text):
        if len(run) > COMPOUND_MAX_CHARS or not any(c.isalpha() for c in run):
            continue
        parts = re.split(r"[-/]", run.lower())
        out.append("".join(parts))
        if "-" in run and all(p.isalpha() for p in parts):
            out.append("_".join(parts))
    return list(dict.fromkeys(out))


def tokenize(text: str, *, split_identifiers: bool = False) -> list[str]:
    """Split text into lowercase BM25 words; optionally add the parts of compound identifiers."""
    terms = _TERMS[split_identifiers]
    return list(chain.from_iterable(map(terms.__getitem__, split_words(text, split_identifiers))))
