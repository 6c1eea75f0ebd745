"""Metrics against values worked out by hand for small rankings, and the paired bootstrap."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coderag_tui.core.eval.metrics import (
    GoldChunk,
    Target,
    mean_scores,
    metric_names,
    paired_bootstrap,
    score_chunks,
    score_files,
    semble_ndcg,
    target_ranks,
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
        "acc@1": 1.0,
        "acc@5": 1.0,
        "acc@10": 1.0,
        "recall@10": 1.0,
        "mrr": 1.0,
        "ndcg@10": 1.0,
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
        "acc@1",
        "acc@5",
        "acc@10",
        "acc@20",
        "recall@20",
        "mrr",
        "ndcg@10",
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


# --- semble's chunk-level NDCG@10 ---------------------------------------------------------------


def test_semble_ndcg_by_hand() -> None:
    targets = [Target("a.py", 10, 20), Target("b.py"), Target("c.py")]
    ranked = [
        ("x.py", 1, 50),
        ("a.py", 1, 9),  # a.py, but not the range
        ("b.py", 1, 50),  # finds b.py (any chunk of the file)
        ("a.py", 15, 30),  # finds the range
        ("b.py", 51, 90),  # b.py again: no new credit
    ]
    assert target_ranks(ranked, targets) == (4, 3, None)
    dcg = 1 / math.log2(5) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert semble_ndcg(ranked, targets) == pytest.approx(dcg / idcg)
    assert semble_ndcg(ranked, targets) == pytest.approx(0.4367, abs=1e-4)


def test_semble_ndcg_looks_at_the_top_ten_chunks_only() -> None:
    ranked = [("x.py", i, i) for i in range(1, 11)] + [("gold.py", 1, 5)]
    assert target_ranks(ranked, [Target("gold.py")]) == (None,)
    assert semble_ndcg(ranked, [Target("gold.py")]) == 0.0
    assert semble_ndcg(ranked[1:], [Target("gold.py")]) == pytest.approx(1 / math.log2(11))


def test_semble_ndcg_counts_a_rank_once_and_ideal_caps_at_ten() -> None:
    # the file and a range of it are both first found by chunk 1: one gain at rank 1
    both = [Target("a.py"), Target("a.py", 1, 3)]
    assert semble_ndcg([("a.py", 1, 10)], both) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    many = [Target(f"f{i}.py") for i in range(12)]
    ranked = [(f"f{i}.py", 1, 1) for i in range(12)]
    assert semble_ndcg(ranked, many) == pytest.approx(1.0)  # IDCG over min(10, 12) ranks
    assert semble_ndcg(ranked, []) == 0.0


# --- paired bootstrap ---------------------------------------------------------------------------


def test_identical_configurations_differ_by_exactly_zero() -> None:
    scores = [0.1, 0.9, 0.5, 0.0, 1.0, 0.3]
    interval = paired_bootstrap(scores, scores, resamples=2000)
    assert (interval.low, interval.mean_diff, interval.high) == (0.0, 0.0, 0.0)
    assert interval.verdict == "no clear difference"


def test_better_on_every_query_gives_an_interval_above_zero() -> None:
    base = [0.1, 0.4, 0.2, 0.5, 0.3, 0.0, 0.6, 0.2]
    better = [b + 0.05 + 0.1 * (i % 3) for i, b in enumerate(base)]
    interval = paired_bootstrap(base, better, resamples=5000, seed=3)
    assert interval.low > 0 and interval.verdict == "better"
    assert interval.mean_diff == pytest.approx(sum(better) / 8 - sum(base) / 8)
    assert paired_bootstrap(better, base, resamples=5000, seed=3).verdict == "worse"


def test_mixed_results_straddle_zero_and_a_seed_repeats() -> None:
    base = [0.0, 1.0] * 10
    flipped = [1.0, 0.0] * 10
    interval = paired_bootstrap(base, flipped, resamples=3000)
    assert interval.low < 0 < interval.high
    assert interval == paired_bootstrap(base, flipped, resamples=3000)


def test_grouped_bootstrap_averages_groups_not_queries() -> None:
    # group "a" (three queries) gains 0.3 each; group "b" (one query) loses 0.1
    base = [0.0, 0.0, 0.0, 0.5]
    cand = [0.3, 0.3, 0.3, 0.4]
    grouped = paired_bootstrap(base, cand, groups=["a", "a", "a", "b"], resamples=2000)
    assert grouped.mean_diff == pytest.approx((0.3 - 0.1) / 2)
    # every group's diffs are constant, so every resample gives the same statistic
    assert grouped.low == pytest.approx(0.1) and grouped.high == pytest.approx(0.1)
    assert paired_bootstrap(base, cand).mean_diff == pytest.approx((0.9 - 0.1) / 4)


@pytest.mark.parametrize(
    ("base", "cand", "kwargs"),
    [
        ([], [], {}),
        ([1.0], [1.0, 2.0], {}),
        ([1.0], [1.0], {"resamples": 0}),
        ([1.0], [1.0], {"groups": ["a", "b"]}),
    ],
)
def test_bootstrap_rejects_unpaired_input(
    base: list[float], cand: list[float], kwargs: dict[str, object]
) -> None:
    with pytest.raises(ValueError):
        paired_bootstrap(base, cand, **kwargs)  # type: ignore[arg-type]


@given(
    diffs=st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=30),
    shift=st.floats(0.01, 1),
)
def test_bootstrap_interval_stays_within_the_observed_differences(
    diffs: list[float], shift: float
) -> None:
    base = [0.0] * len(diffs)
    interval = paired_bootstrap(base, diffs, resamples=500)
    assert min(diffs) - 1e-9 <= interval.low <= interval.high <= max(diffs) + 1e-9
    # swapping the two configurations mirrors the interval
    mirror = paired_bootstrap(diffs, base, resamples=500)
    assert mirror.low == pytest.approx(-interval.high, abs=1e-9)
    assert mirror.mean_diff == pytest.approx(-interval.mean_diff, abs=1e-9)
    # better on every query: the whole interval is above zero
    lifted = paired_bootstrap(base, [abs(d) + shift for d in diffs], resamples=500)
    assert lifted.low > 0
