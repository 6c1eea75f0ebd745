"""The IoU scorer: |Q ∩ D| / |Q ∪ D| over token sets, on hand-computed examples, read from
the same postings as BM25 (after an edit too)."""

from __future__ import annotations

import numpy as np
import pytest

from coderag_tui.core.rank.iou import IoUIndex, distinct_counts, iou
from coderag_tui.core.rank.lexical import BM25Index, BM25Options, Postings
from coderag_tui.core.rank.segments import Drift

DOCS = [
    ["load", "config", "file", "config"],  # set {load, config, file}
    ["save", "config"],  # {save, config}
    ["render", "page"],  # {render, page}
]


def _index() -> BM25Index:
    return BM25Index.from_tokens(DOCS, BM25Options())


def test_iou_of_two_sets_by_hand() -> None:
    assert iou(["a", "b", "c"], ["b", "c", "d", "d"]) == pytest.approx(2 / 4)
    assert iou(["a"], ["b"]) == 0.0
    assert iou([], []) == 0.0


def test_iou_index_scores_each_chunk_by_hand() -> None:
    scorer = IoUIndex(_index())
    # query {config, file, missing}: doc0 shares 2 of {load, config, file, missing} -> 2/4;
    # doc1 shares 1 of {save, config, file, missing} -> 1/4; doc2 shares none
    scores = scorer.scores(["config", "file", "missing", "config"])
    assert scores.tolist() == pytest.approx([0.5, 0.25, 0.0])
    assert scorer.search_tokens(["config", "file", "missing"], 5) == [(0, 0.5), (1, 0.25)]


def test_iou_ignores_counts_and_rarity_where_bm25_does_not() -> None:
    docs = [["save", "save", "save", "x"], ["save", "config", "y", "z"]]
    bm25 = BM25Index.from_tokens(docs, BM25Options())
    scorer = IoUIndex(bm25)
    query = ["save", "config"]
    # IoU: doc0 {save, x} vs {save, config}: 1/3; doc1 {save, config, y, z}: 2/4
    assert [i for i, _ in scorer.search_tokens(query, 2)] == [1, 0]
    assert scorer.scores(query).tolist() == pytest.approx([1 / 3, 1 / 2])
    assert bm25.search_tokens(["save"], 2)[0][0] == 0  # BM25 rewards the repeated word


def test_distinct_counts_follow_an_edit() -> None:
    base = Postings.build(DOCS)
    # chunk 1 was edited away; a new chunk {config, page, x} was added at the end
    delta = Postings.build([["config", "page", "x"]])
    drift = Drift(
        remap=np.array([0, -1, 1], dtype=np.int64),
        added=np.array([2], dtype=np.int64),
        n_chunks=3,
    )
    index = BM25Index(base, BM25Options(), drift=drift, delta=delta)
    assert distinct_counts(index).tolist() == [3, 2, 3]
    # query {config, page}: chunk0 1/4, chunk1 (render, page) 1/3, chunk2 2/3
    assert IoUIndex(index).scores(["config", "page"]).tolist() == pytest.approx(
        [1 / 4, 1 / 3, 2 / 3]
    )
