"""Pure helpers behind the widgets: bars, path shortening, the ranks line, query words, budgets."""

from __future__ import annotations

import pytest

from coderag_tui.core.records import Chunk, Hit, Ranking, SearchRun
from coderag_tui.tui.widgets.latency import bar
from coderag_tui.tui.widgets.preview import term_pattern, word_matches
from coderag_tui.tui.widgets.ranking_table import fit_left
from coderag_tui.tui.widgets.rankings import ranks_line
from coderag_tui.tui.widgets.tuning import step_budget
from coderag_tui.tui.workers import parse_location


def chunk(path: str, start: int) -> Chunk:
    return Chunk(path, start, start + 9, "lines", "python", "x = 1\n")


def test_ranks_line_shows_every_list_with_a_dash_where_absent_and_off_where_unavailable() -> None:
    a, b = chunk("a.py", 1), chunk("b.py", 1)
    run = SearchRun(
        query="q",
        rankings={
            "bm25": Ranking("bm25", (Hit(b, 2.0, 1), Hit(a, 1.0, 2))),
            "dense": Ranking("dense", available=False, reason="no model"),
            "fused": Ranking("fused", (Hit(b, 0.2, 1),)),
            "rerank": Ranking("rerank", (Hit(a, 3.0, 1),)),
        },
        timings=(),
    )
    shown = ("bm25", "dense", "fused", "rerank")
    assert ranks_line(run, a.key, shown) == "BM25 #2 · Dense off · Fused — · Rerank #1"
    assert ranks_line(run, None, shown) == ""


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("shop/cart.py:1-12", 40, "shop/cart.py:1-12"),
        ("very/long/path/cart.py:1-12", 12, "…py:1-12"),
    ],
)
def test_fit_left_keeps_the_end_of_a_path(text: str, width: int, expected: str) -> None:
    out = fit_left(text, width)
    assert out.endswith(expected.lstrip("…")) and len(out) <= width


def test_bar_is_proportional_and_exactly_as_wide_as_asked() -> None:
    assert bar(1.0, 8) == "█" * 8
    assert bar(0.0, 8) == " " * 8
    half = bar(0.5, 8)
    assert half.startswith("████") and len(half) == 8
    assert bar(2.0, 4) == "████"  # clamped


def test_query_words_are_marked_as_words_or_identifier_parts() -> None:
    pattern = term_pattern(["on", "card", "user", "x"])
    assert pattern is not None
    line = "function on(card_token, getUserName, cardinal, x)"
    assert [line[a:b] for a, b in word_matches(pattern, line)] == ["on", "card", "User"]
    assert term_pattern(["x"]) is None  # single letters would mark half the file


def test_parse_location_reads_file_and_line_or_explains() -> None:
    assert parse_location("shop/cart.py:25") == ("shop/cart.py", 25)
    assert parse_location(" C:/repo/x.py:3 ") == ("C:/repo/x.py", 3)
    for bad in ("shop/cart.py", "shop/cart.py:0", ":5", "shop/cart.py:ten"):
        with pytest.raises(ValueError, match="FILE:LINE"):
            parse_location(bad)


def test_budget_steps_walk_the_presets() -> None:
    assert step_budget(8000, -1) == 4000
    assert step_budget(8000, 1) == 16000
    assert step_budget(2000, -1) == 2000
    assert step_budget(128_000, 1) == 128_000
    assert step_budget(5000, 1) == 8000  # a custom budget steps to the next preset
