"""Metrics against values worked out by hand for small rankings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coderag_tui.core.eval.metrics import (
    GoldChunk,
    mean_scores,
    metric_names,
    score_chunks,
    score_files,
)

# ranked: a, g1, b, g2, c   gold: g1, g2, g3 (g3 never retrieved)
RANKED = ["a.py", "g1.py", "b.py", "g2.py", "c.py"]
GOLD = ["g1.py", "g2.py", "g3.py"]


def test_file_metrics_by_hand() -> None:
    scores = score_files(RANKED, GOLD, k=5)
    assert scores["acc@1"] == 0.0
    assert scores["acc@5"] == 1.0
    assert scores["acc@10"] == 1.0
    assert scores["recall@5"] == pytest.approx(2 / 3)
    assert scores["mrr"] == pytest.approx(0.5)
    # DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3) + 1/log2(4) (three gold files)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 0.5
    assert scores["ndcg@10"] == pytest.approx(dcg / idcg)
    assert scores["ndcg@10"] == pytest.approx(0.49819, abs=1e-5)


def test_recall_at_smaller_k_counts_only_the_top() -> None:
    assert score_files(RANKED, GOLD, k=2)["recall@2"] == pytest.approx(1 / 3)


def test_single_gold_at_rank_one_is_perfect() -> None:
    scores = score_files(["x.py", "y.py"], ["x.py"])
    assert scores == {
        "acc@1": 1.0, "acc@5": 1.0, "acc@10": 1.0, "recall@10": 1.0, "mrr": 1.0, "ndcg@10": 1.0,
    }


def test_gold_missing_scores_zero() -> None:
    scores = score_files(["x.py", "y.py"], ["z.py"])
    assert set(scores.values()) == {0.0}


def test_gold_at_rank_eleven_misses_acc10_but_counts_in_mrr() -> None:
    ranked = [f"f{i}.py" for i in range(10)] + ["gold.py"]
    scores = score_files(ranked, ["gold.py"])
    assert scores["acc@10"] == 0.0
    assert scores["mrr"] == pytest.approx(1 / 11)
    assert scores["ndcg@10"] == 0.0


def test_multi_gold_acc_means_any_gold() -> None:
    scores = score_files(["b.py", "x.py"], ["a.py", "b.py"])
    assert scores["acc@1"] == 1.0
    assert scores["recall@10"] == pytest.approx(0.5)
    # one of two gold found at rank 1: DCG 1, IDCG 1 + 1/log2(3)
    assert scores["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_chunk_metrics_count_overlap_and_each_gold_range_once() -> None:
    gold = [GoldChunk("a.py", 10, 20), GoldChunk("b.py", 5, 5)]
    ranked = [
        ("a.py", 1, 9),  # just before the range: no
        ("a.py", 15, 30),  # overlaps range 0
        ("a.py", 18, 25),  # overlaps range 0 again: no new credit
        ("b.py", 1, 10),  # overlaps range 1
    ]
    scores = score_chunks(ranked, gold, k=3)
    assert scores["acc@1"] == 0.0
    assert scores["acc@5"] == 1.0
    assert scores["mrr"] == pytest.approx(0.5)
    assert scores["recall@3"] == pytest.approx(0.5)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx(dcg / idcg)


def test_chunk_touching_the_boundary_line_overlaps() -> None:
    gold = [GoldChunk("a.py", 10, 20)]
    assert score_chunks([("a.py", 1, 10)], gold)["acc@1"] == 1.0
    assert score_chunks([("a.py", 21, 40)], gold)["acc@1"] == 0.0
    assert score_chunks([("other.py", 10, 20)], gold)["acc@1"] == 0.0


def test_mean_scores_averages_per_metric() -> None:
    means = mean_scores([{"mrr": 1.0, "acc@1": 1.0}, {"mrr": 0.5, "acc@1": 0.0}])
    assert means == {"mrr": 0.75, "acc@1": 0.5}
    assert mean_scores([]) == {}


def test_metric_names_include_the_requested_k() -> None:
    assert metric_names(10) == ("acc@1", "acc@5", "acc@10", "recall@10", "mrr", "ndcg@10")
    assert metric_names(20) == (
        "acc@1", "acc@5", "acc@10", "acc@20", "recall@20", "mrr", "ndcg@10",
    )


@given(
    ranked=st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
    gold=st.lists(st.sampled_from("abcdefgh"), unique=True, min_size=1, max_size=4),
)
def test_every_metric_stays_between_zero_and_one(ranked: list[str], gold: list[str]) -> None:
    scores = score_files(ranked, gold)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in scores.values())
    # a ranking that starts with all gold files is perfect on NDCG
    perfect = score_files(gold + [p for p in ranked if p not in gold], gold)
    assert perfect["ndcg@10"] == pytest.approx(1.0)
