"""Retrieval metrics (Acc@k, recall@k, MRR, NDCG@k) over file and chunk rankings.

Every metric is computed from one shape: for each ranked item, the set of gold items it
matches. A file matches the gold file with the same path; a chunk matches every gold line
range of the same file that it overlaps. Each gold item counts once (the first item that
matches it gets the credit), so a gold range split across three chunks is not found three
times and NDCG stays within [0, 1].

semble's chunk-level NDCG@10 (`semble_ndcg`) scores the top chunks against targets that are
whole files or line ranges, and a paired bootstrap (`paired_bootstrap`) says whether one
configuration's per-query scores beat another's by more than chance.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Matches = Sequence[Collection[int]]
"""For each ranked item (best first), the indices of the gold items it matches."""


@dataclass(frozen=True, slots=True)
class GoldChunk:
    """A gold line range: 1-based, inclusive, in a repository-relative path."""

    path: str
    start_line: int
    end_line: int

    def overlaps(self, path: str, start_line: int, end_line: int) -> bool:
        """Whether a chunk of `path` spanning start_line..end_line shares a line with this range."""
        return path == self.path and start_line <= self.end_line and end_line >= self.start_line


def hit_at_k(matches: Matches, k: int) -> float:
    """1.0 when any gold item is within the top k (Acc@k), else 0.0."""
    return 1.0 if any(matches[:k]) else 0.0


def recall_at_k(matches: Matches, n_gold: int, k: int) -> float:
    """Fraction of the gold items matched by the top k (0.0 when there is no gold)."""
    if n_gold <= 0:
        return 0.0
    found: set[int] = set()
    for matched in matches[:k]:
        found.update(matched)
    return len(found) / n_gold


def first_relevant_rank(matches: Matches) -> int | None:
    """1-based rank of the first item that matches any gold item, or None."""
    for rank, matched in enumerate(matches, start=1):
        if matched:
            return rank
    return None


def reciprocal_rank(matches: Matches) -> float:
    """1 / rank of the first gold match (the per-query term of MRR), 0.0 when none."""
    rank = first_relevant_rank(matches)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(matches: Matches, n_gold: int, k: int = 10) -> float:
    """NDCG@k, binary relevance: an item is relevant when it matches a gold item not yet found."""
    if n_gold <= 0:
        return 0.0
    claimed: set[int] = set()
    dcg = 0.0
    for i, matched in enumerate(matches[:k]):
        new = set(matched) - claimed
        if new:
            claimed.update(new)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, n_gold)))
    return dcg / ideal


def file_matches(ranked_paths: Sequence[str], gold_files: Sequence[str]) -> list[frozenset[int]]:
    """Match a file ranking against gold paths (each path matches itself only)."""
    index = {path: i for i, path in enumerate(gold_files)}
    return [frozenset({index[p]}) if p in index else frozenset() for p in ranked_paths]


def chunk_matches(
    ranked_chunks: Iterable[tuple[str, int, int]], gold_chunks: Sequence[GoldChunk]
) -> list[frozenset[int]]:
    """Match (path, start_line, end_line) chunks against gold ranges by overlap."""
    return [
        frozenset(i for i, gold in enumerate(gold_chunks) if gold.overlaps(path, start, end))
        for path, start, end in ranked_chunks
    ]


def metric_names(k: int = 10) -> tuple[str, ...]:
    """The metric names in report order: Acc@1/5/10 (and Acc@k), recall@k, MRR, NDCG@10."""
    accs = sorted({1, 5, 10, k})
    return (*(f"acc@{a}" for a in accs), f"recall@{k}", "mrr", "ndcg@10")


def score_matches(matches: Matches, n_gold: int, k: int = 10) -> dict[str, float]:
    """Every metric of `metric_names(k)` for one query."""
    scores = {f"acc@{a}": hit_at_k(matches, a) for a in sorted({1, 5, 10, k})}
    scores[f"recall@{k}"] = recall_at_k(matches, n_gold, k)
    scores["mrr"] = reciprocal_rank(matches)
    scores["ndcg@10"] = ndcg_at_k(matches, n_gold, 10)
    return scores


def score_files(
    ranked_paths: Sequence[str], gold_files: Sequence[str], k: int = 10
) -> dict[str, float]:
    """File-level metrics of one ranking against its gold files."""
    gold = list(dict.fromkeys(gold_files))
    return score_matches(file_matches(ranked_paths, gold), len(gold), k)


def score_chunks(
    ranked_chunks: Sequence[tuple[str, int, int]], gold_chunks: Sequence[GoldChunk], k: int = 10
) -> dict[str, float]:
    """Chunk-level metrics of one ranking against gold line ranges (overlap counts as a hit)."""
    return score_matches(chunk_matches(ranked_chunks, gold_chunks), len(gold_chunks), k)


def mean_scores(per_query: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Average each metric over queries (Acc@k averaged is the hit rate; 0..1)."""
    totals: dict[str, float] = {}
    count = 0
    for scores in per_query:
        count += 1
        for name, value in scores.items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: total / count for name, total in totals.items()} if count else {}


# --- semble's chunk-level NDCG@10 -------------------------------------------------------------

SEMBLE_NDCG = "ndcg10_semble"
SEMBLE_NDCG_LABEL = "NDCG@10 (semble)"
SEMBLE_K = 10


@dataclass(frozen=True, slots=True)
class Target:
    """Something a result should find: a whole file, or a line range of it (1-based, inclusive)."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    def found_by(self, path: str, start_line: int, end_line: int) -> bool:
        """Whether a chunk of `path` spanning start_line..end_line finds this target."""
        if path != self.path:
            return False
        if self.start_line is None or self.end_line is None:
            return True
        return start_line <= self.end_line and end_line >= self.start_line

    def __str__(self) -> str:
        if self.start_line is None:
            return self.path
        return f"{self.path}:{self.start_line}-{self.end_line}"


def target_ranks(
    ranked_chunks: Sequence[tuple[str, int, int]], targets: Sequence[Target], k: int = SEMBLE_K
) -> tuple[int | None, ...]:
    """For each target, the 1-based rank of the first of the top k chunks that finds it."""
    top = ranked_chunks[:k]
    return tuple(
        next((rank for rank, chunk in enumerate(top, start=1) if target.found_by(*chunk)), None)
        for target in targets
    )


def semble_ndcg(
    ranked_chunks: Sequence[tuple[str, int, int]], targets: Sequence[Target], k: int = SEMBLE_K
) -> float:
    """semble's NDCG@k: gain 1 at each rank where some target is first found, IDCG over
    min(k, #targets) ideal ranks.

    A rank counts once even when it is the first find of two targets (as semble marks
    relevant positions), so the score stays within [0, 1].
    """
    if not targets:
        return 0.0
    found = {rank for rank in target_ranks(ranked_chunks, targets, k) if rank is not None}
    dcg = sum(1.0 / math.log2(rank + 1) for rank in found)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(targets))))
    return dcg / ideal


# --- paired bootstrap -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """How much `candidate` beats `baseline` on average, with a percentile interval."""

    mean_diff: float  # candidate - baseline, on the whole sample
    low: float
    high: float
    n: int  # paired queries
    resamples: int
    confidence: float

    @property
    def verdict(self) -> str:
        """`better`, `worse`, or `no clear difference` (the interval contains 0)."""
        if self.low > 0:
            return "better"
        if self.high < 0:
            return "worse"
        return "no clear difference"


def _grouped_mean(values: np.ndarray, groups: Sequence[np.ndarray]) -> float:
    return float(np.mean([values[g].mean() for g in groups]))


def paired_bootstrap(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    groups: Sequence[Hashable] | None = None,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Mean difference candidate - baseline over paired queries, with a percentile interval.

    Each resample draws queries with replacement and keeps each query's two scores together.
    With `groups` (e.g. each query's repository) queries are drawn within their group and the
    statistic is the plain mean over groups of each group's mean, as a score averaged over
    repositories is; without, it is the mean over queries. Seeded, so a rerun agrees.
    """
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("baseline and candidate need one score per query, paired")
    if a.size == 0:
        raise ValueError("a paired bootstrap needs at least one query")
    if resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError("need resamples >= 1 and 0 < confidence < 1")
    diffs = b - a
    labels = list(groups) if groups is not None else [0] * a.size
    if len(labels) != a.size:
        raise ValueError("groups needs one label per query")
    members: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        members.setdefault(label, []).append(i)
    index = [np.asarray(m, dtype=np.intp) for m in members.values()]
    rng = np.random.default_rng(seed)
    if groups is None:
        draws = rng.integers(0, a.size, size=(resamples, a.size))
        stats = diffs[draws].mean(axis=1)
    else:
        stats = np.zeros(resamples)
        for members_ in index:
            draws = rng.integers(0, members_.size, size=(resamples, members_.size))
            stats += diffs[members_][draws].mean(axis=1)
        stats /= len(index)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(stats, [tail, 100.0 - tail])
    return BootstrapInterval(
        mean_diff=_grouped_mean(diffs, index) if groups is not None else float(diffs.mean()),
        low=float(low),
        high=float(high),
        n=int(a.size),
        resamples=resamples,
        confidence=confidence,
    )
