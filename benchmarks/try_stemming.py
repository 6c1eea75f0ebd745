"""Tried and not kept: BM25 words stemmed (Snowball English, PyStemmer), on the index and query.

    pip install PyStemmer
    CODERAG_EMBED_BACKEND=none python benchmarks/try_stemming.py {none,replace,parts} \
        eval ../shared/bench/nl_dev.jsonl --repos /work/.mirror --modes bm25,fused \
        --index-dir NEW_FOLDER

It runs `coderag` with `words.word_terms` wrapped: `replace` stems every BM25 word (an
identifier's whole word and its parts), `parts` keeps the whole word and stems its parts, `none`
changes nothing (the control). Give a new `--index-dir` each time: a saved BM25 index holds the
words it was built with. The second process that counts BM25 on a first index is turned off,
since it would not see the wrapper. Results: benchmarks/README.md, "The learned reranker".
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import Stemmer

import coderag_tui.core.rank.bm25_process as bm25_process
import coderag_tui.core.rank.lexical as lexical
import coderag_tui.core.rank.words as words
from coderag_tui.cli import main

MODES = ("none", "replace", "parts")


def wrapped(mode: str):
    stemmer = Stemmer.Stemmer("english")
    plain = words.word_terms

    @functools.cache
    def word_terms(word: str, split_identifiers: bool) -> tuple[str, ...]:  # noqa: FBT001
        terms = plain(word, split_identifiers)
        if mode == "none" or not terms:
            return terms
        if mode == "replace" or len(terms) == 1:
            return tuple(dict.fromkeys(stemmer.stemWords(list(terms))))
        return (terms[0], *stemmer.stemWords(list(terms[1:])))

    return word_terms


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    terms = wrapped(sys.argv[1])
    words.word_terms = terms
    lexical.word_terms = terms  # type: ignore[attr-defined]
    words._TERMS = {flag: words.WordTerms(split_identifiers=flag) for flag in (False, True)}
    bm25_process.MIN_BYTES = 1 << 62  # the child would count unstemmed words
    sys.exit(main(sys.argv[2:]))
