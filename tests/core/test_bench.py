"""Bench helpers: deterministic query sampling, percentiles, our BM25 against rank_bm25."""

from __future__ import annotations

import pytest

from coderag_tui.core.eval.bench import (
    compare_rank_bm25,
    percentile,
    sample_queries,
    stage_latencies,
)
from coderag_tui.core.records import Chunk, Ranking, SearchRun, StageTiming
from tests.fixtures.tiny_repo import FILES


def _chunks() -> list[Chunk]:
    return [
        Chunk(path, 1, text.count("\n") + 1, "file", None, text)
        for path, text in sorted(FILES.items())
    ]


def test_sampled_queries_are_deterministic_identifiers_and_prose() -> None:
    first = sample_queries(_chunks(), 6)
    assert first == sample_queries(_chunks(), 6)
    assert len(first) == 6
    identifiers = {
        "charge_card",
        "refund",
        "apply_discount",
        "total_cents",
        "reserve",
        "restock",
        "renderCart",
        "checkout",
        "PaymentDeclined",
        "OutOfStock",
        "Inventory",
        "Cart",
        "Item",
        "test_total",
        "test_discount",
    }
    assert any(q in identifiers for q in first)
    assert any(" " in q for q in first)  # a docstring or comment line
    assert sample_queries(_chunks(), 6, seed=1) != first or len(set(first)) < 6


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([], 95) == 0.0


def test_stage_latencies_scale_per_million_chars() -> None:
    runs = [
        SearchRun("q", {"bm25": Ranking("bm25")}, (StageTiming("bm25", ms),))
        for ms in (1.0, 2.0, 3.0)
    ]
    stats = {s.stage: s for s in stage_latencies(runs, chars=500_000)}
    assert stats["bm25"].p50_ms == pytest.approx(2.0)
    assert stats["bm25"].p50_ms_per_mchar == pytest.approx(4.0)  # 2 ms on half a million chars
    assert stats["total"].p95_ms == pytest.approx(2.9)


def test_compare_with_rank_bm25_agrees_on_the_best_chunk() -> None:
    chunks = _chunks()
    result = compare_rank_bm25(
        chunks,
        ["charge card gateway timeout", "reserve stock", "discount percent"],
        split_identifiers=False,
        path_in_text=False,
    )
    assert result.ours_p50_ms > 0 and result.theirs_p50_ms > 0
    assert result.top10_overlap > 0.5
