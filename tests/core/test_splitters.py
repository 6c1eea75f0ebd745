"""The seed paper's other splitters: lines and cl100k BPE tokens, on known snippets, and BM25
built over them (the same BM25 code as over words)."""

from __future__ import annotations

import pytest

from coderag_tui.core.rank.lexical import BM25Index, BM25Options, chunk_tokens
from coderag_tui.core.rank.splitters import (
    SplitterError,
    bpe_tokens,
    describe,
    line_tokens,
    split_many,
    split_text,
)
from coderag_tui.core.records import Chunk

SNIPPET = "def total(items):\n\n    return  sum(items)\t\n"


def _chunk(path: str, text: str, start: int = 1) -> Chunk:
    return Chunk(path, start, start + text.count("\n"), "lines", "python", text)


def test_line_tokens_are_whole_stripped_lines_with_whitespace_made_one_space() -> None:
    assert line_tokens(SNIPPET) == ["def total(items):", "return sum(items)"]
    assert split_text(SNIPPET, "line") == line_tokens(SNIPPET)


def test_bpe_tokens_are_cl100k_ids_read_offline() -> None:
    # cl100k_base: "hello" is 15339 and " world" 1917 (the leading space is part of it)
    assert bpe_tokens("hello world") == ["15339", "1917"]
    tokens = split_text("def foo(bar):\n    return bar", "bpe")
    assert describe(tokens, "bpe") == ["def", " foo", "(bar", "):\n", "   ", " return", " bar"]
    # the batch encoder gives what one text at a time gives
    assert list(split_many(["hello world", SNIPPET], "bpe")) == [
        bpe_tokens("hello world"),
        bpe_tokens(SNIPPET),
    ]


def test_word_splitting_stays_the_default() -> None:
    assert split_text("getUserName(x)", "word") == ["getusername", "x"]
    assert split_text("getUserName", "word", split_identifiers=True) == [
        "getusername",
        "get",
        "user",
        "name",
    ]


def test_an_unknown_splitter_is_one_sentence() -> None:
    with pytest.raises(SplitterError, match="unknown splitter 'char': use one of word, line, bpe"):
        split_text("x", "char")


def test_bm25_over_lines_ranks_the_chunk_holding_the_query_line_first() -> None:
    chunks = [
        _chunk("a.py", "total = 0\nfor x in items:\n    total += x\n"),
        _chunk("b.py", "def total(items):\n    return sum(items)\n"),
        _chunk("c.py", "items = load()\nprint(sum(items))\n"),
    ]
    index = BM25Index.build(chunks, split_identifiers=False, path_in_text=False, splitter="line")
    assert index.options.splitter == "line"
    assert chunk_tokens(chunks[1], index.options) == ["def total(items):", "return sum(items)"]
    # word splitting would match a.py and c.py too (`total`, `items`, `sum`); lines only b.py
    assert [i for i, _ in index.search("    return   sum(items)", 5)] == [1]
    words = BM25Index.build(chunks, split_identifiers=False, path_in_text=False)
    assert len(words.search("return sum(items)", 5)) == 3


def test_bm25_over_bpe_tokens_matches_what_words_miss() -> None:
    # BPE splits `parse_header_line` and `parseHeader` into shared pieces, words do not
    chunks = [
        _chunk("a.py", "def parseHeaderLine(raw):\n    return raw\n"),
        _chunk("b.py", "def render(page):\n    return page\n"),
    ]
    bpe = BM25Index.build(chunks, split_identifiers=False, path_in_text=False, splitter="bpe")
    words = BM25Index.build(chunks, split_identifiers=False, path_in_text=False)
    assert words.search("parseHeader", 5) == []
    assert bpe.search("parseHeader", 5)[0][0] == 0


def test_each_splitter_saves_its_index_in_its_own_folder() -> None:
    names = {BM25Options(splitter=s).folder_name for s in ("word", "line", "bpe")}
    assert len(names) == 3
    # the word splitter keeps the folder name saved indexes already have
    assert BM25Options().folder_name == "words-nopath-lucene-k1.5-b0.75"
