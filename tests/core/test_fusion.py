"""Fusion: Reciprocal Rank Fusion and weighted min-max blending, checked by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coderag_tui.core.rank.fusion import rrf, weighted


def test_rrf_hand_computed_with_k_60() -> None:
    # bm25: a b c ; dense: c a d
    # a: 1/61 + 1/62 = 0.0325225...   c: 1/63 + 1/61 = 0.0322664...
    # b: 1/62 = 0.0161290...          d: 1/63 = 0.0158730...
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert [item for item, _ in fused] == ["a", "c", "b", "d"]
    expected = {"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62, "d": 1 / 63}
    for item, score in fused:
        assert score == pytest.approx(expected[item])


def test_rrf_with_k_0_weighs_one_first_place_like_two_second_places() -> None:
    # k=0: x = 1/1 (first once) equals y = 1/2 + 1/2 (second twice)
    fused = dict(rrf([["x", "y"], ["z", "y"]], k=0))
    assert fused["x"] == pytest.approx(1.0)
    assert fused["y"] == pytest.approx(1.0)


def test_rrf_of_one_list_keeps_its_order_and_ties_keep_first_seen() -> None:
    assert [i for i, _ in rrf([[3, 1, 2]])] == [3, 1, 2]
    assert [i for i, _ in rrf([[1], [2]])] == [1, 2]
    assert rrf([]) == []
    with pytest.raises(ValueError):
        rrf([[1]], k=-1)


def test_weighted_hand_computed() -> None:
    bm25 = [(1, 10.0), (2, 6.0), (3, 2.0)]  # normalised: 1.0, 0.5, 0.0
    dense = [(3, 0.9), (1, 0.5), (4, 0.1)]  # normalised: 1.0, 0.5, 0.0
    fused = weighted([bm25, dense], [0.7, 0.3])
    # 1: 0.7*1.0 + 0.3*0.5 = 0.85 ; 2: 0.7*0.5 = 0.35 ; 3: 0.0 + 0.3*1.0 = 0.3 ; 4: 0.0
    assert [i for i, _ in fused] == [1, 2, 3, 4]
    assert [s for _, s in fused] == pytest.approx([0.85, 0.35, 0.3, 0.0])


def test_weighted_equal_scores_and_empty_lists() -> None:
    assert weighted([[(1, 5.0), (2, 5.0)], []], [0.5, 0.5]) == [(1, 0.5), (2, 0.5)]
    with pytest.raises(ValueError):
        weighted([[(1, 1.0)]], [0.5, 0.5])


@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=20), max_size=4))
def test_rrf_is_sorted_and_covers_every_item(lists: list[list[int]]) -> None:
    fused = rrf(lists)
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert {i for i, _ in fused} == {i for lst in lists for i in lst}
