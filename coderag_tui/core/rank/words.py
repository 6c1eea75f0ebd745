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


_EXPANSIONS: dict[str, tuple[str, ...]] = {}
_EXPANSIONS_MAX = 1 << 19  # distinct words remembered; a corpus vocabulary is far smaller


def _single_digit(word: str) -> bool:
    """A numeral of one digit: too common in code (indexes, versions) to say anything."""
    return len(word) == 1 and word.isdigit()


def _expand(word: str) -> tuple[str, ...]:
    """The lowercased word followed by its identifier parts when it has more than one."""
    low = word.lower()
    # Only compound words need splitting: an underscore or a capital after the first letter.
    if "_" in word or (not word[1:].islower() and not word.isupper() and not word.islower()):
        parts = [p.lower() for p in _PART.findall(word) if not _single_digit(p)]
        if len(parts) > 1 or (parts and parts[0] != low):
            return (low, *parts)
    return (low,)


def tokenize(text: str, *, split_identifiers: bool = False) -> list[str]:
    """Split text into lowercase BM25 words; optionally add the parts of compound identifiers."""
    if not split_identifiers:
        return [w for w in _ALNUM.findall(text.lower()) if not _single_digit(w)]
    out: list[str] = []
    extend = out.extend
    cache = _EXPANSIONS
    for word in _WORD.findall(text):
        expansion = cache.get(word)
        if expansion is None:
            if _single_digit(word):
                continue
            if len(cache) >= _EXPANSIONS_MAX:
                cache.clear()
            expansion = cache[word] = _expand(word)
        extend(expansion)
    return out
