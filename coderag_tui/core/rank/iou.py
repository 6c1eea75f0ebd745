"""The seed paper's IoU scorer: how much a chunk's set of tokens overlaps the query's.

    iou(Q, D) = |Q ∩ D| / |Q ∪ D|   over the distinct tokens of the query and of the chunk

Unlike BM25 it ignores how often a token occurs and how rare it is, and it penalises long
chunks only through their number of distinct tokens. It reads the same postings as BM25
(`core.rank.lexical`): a query token's column says which chunks hold it, and each chunk's
number of distinct tokens is its number of postings, so it works under every splitter
(`core.rank.splitters`) and after every edit (the base segment with its delta) without an
index of its own. Only chunks sharing a token with the query are ranked, ties by chunk order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from coderag_tui.core.rank.lexical import BM25Index, BM25Options

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import Definitions, Later

BM25 = "bm25"
IOU = "iou"
SCORERS: tuple[str, ...] = (BM25, IOU)


def iou(query: Sequence[str], document: Sequence[str]) -> float:
    """The IoU of two token lists taken as sets (0.0 when both are empty)."""
    q, d = set(query), set(document)
    union = len(q | d)
    return len(q & d) / union if union else 0.0


def distinct_counts(index: BM25Index) -> np.ndarray:
    """Each of today's chunks' number of distinct tokens (its postings over both segments)."""
    base = np.bincount(np.asarray(index.base.docs), minlength=index.base.n_docs)
    if index.drift is None:
        return base.astype(np.int64)
    out = np.zeros(index.n_docs, dtype=np.int64)
    live = index.drift.remap >= 0
    out[index.drift.remap[live]] = base[live]
    if index.delta is not None:
        out[index.drift.added] = np.bincount(
            np.asarray(index.delta.docs), minlength=index.delta.n_docs
        )
    return out


class IoUIndex:
    """The lexical stage scored by IoU instead of BM25, over a BM25 index's postings.

    It answers what ranking asks of a lexical index (`LexicalIndex`), so the Searcher, the
    signals and `coderag eval` take it in place of BM25; the ranking keeps BM25's name
    ("bm25": the lexical list) and eval labels it with the scorer.
    """

    scorer = IOU

    def __init__(self, index: BM25Index) -> None:
        self.index = index
        self.options: BM25Options = index.options
        self.n_docs = index.n_docs
        self._distinct: np.ndarray | None = None

    @property
    def definitions(self) -> Definitions | None:
        return self.index.definitions

    @definitions.setter
    def definitions(self, value: Definitions | None) -> None:
        self.index.definitions = value

    @property
    def definitions_later(self) -> Later | None:
        return self.index.definitions_later

    @property
    def empty(self) -> bool:
        return self.index.empty

    def tokenize_query(self, query: str) -> list[str]:
        """The query's tokens, split exactly as the chunks were."""
        return self.index.tokenize_query(query)

    def holders(self, word: str) -> np.ndarray | None:
        """The chunks holding `word` (the learned reranker's coverage feature reads it)."""
        return self.index.holders(word)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """IoU of every chunk's token set with the query's (0 where nothing is shared)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        wanted = set(tokens)
        found = [h for t in wanted if (h := self.index.holders(t)) is not None]
        if not found:
            return out
        shared = np.bincount(np.concatenate(found), minlength=self.n_docs)
        if self._distinct is None:
            self._distinct = distinct_counts(self.index)
        hit = np.flatnonzero(shared)
        union = len(wanted) + self._distinct[hit] - shared[hit]
        out[hit] = shared[hit] / union
        return out

    def search_tokens(self, tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, IoU) for the query's tokens, best first, ties by chunk order."""
        if k <= 0 or not tokens:
            return []
        scores = self.scores(tokens)
        top = np.flatnonzero(scores > 0)
        order = np.lexsort((top, -scores[top]))[:k]
        return [(int(top[i]), float(scores[top[i]])) for i in order]

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.search_tokens(self.tokenize_query(query), k)

    def warm_up(self) -> None:
        self.index.warm_up()
