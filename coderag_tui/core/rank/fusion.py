"""Fusing ranked lists: Reciprocal Rank Fusion (the default) and a weighted score blend.

RRF needs only ranks, so it fuses BM25 and cosine scores without calibrating them; the
weighted blend min-max normalises each list's scores to [0, 1] first. Both break ties by
first appearance (the first list's order first), so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[T]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[T, float]]:
    """Fuse id lists (best first) by sum of w / (k + rank), rank 1-based; best fused first.

    `weights` (default: 1 each) scales each list's reciprocal ranks.
    """
    if k < 0:
        raise ValueError(f"the RRF constant must be >= 0, not {k}")
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    scores: dict[T, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else float(weights[n])
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _sorted(scores)


def weighted(
    scored: Sequence[Sequence[tuple[T, float]]], weights: Sequence[float]
) -> list[tuple[T, float]]:
    """Fuse (id, score) lists by a weighted sum of min-max normalised scores; best first.

    An item missing from a list gets 0 from it. A list whose scores are all equal counts
    each of its items as 1 (they are all that list's best).
    """
    if len(scored) != len(weights):
        raise ValueError(f"{len(scored)} score lists but {len(weights)} weights")
    fused: dict[T, float] = {}
    for items, weight in zip(scored, weights, strict=True):
        if not items:
            continue
        values = [score for _, score in items]
        low, high = min(values), max(values)
        span = high - low
        for item, score in items:
            norm = (score - low) / span if span > 0 else 1.0
            fused[item] = fused.get(item, 0.0) + weight * norm
    return _sorted(fused)


def _sorted(scores: dict[T, float]) -> list[tuple[T, float]]:
    """Best score first; ties keep insertion order (sorted is stable)."""
    return sorted(scores.items(), key=lambda pair: -pair[1])
