"""Pure helpers behind the widgets: bars, path shortening, the ranks line, query words, budgets."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from coderag_tui.core.records import Chunk, Hit, Ranking, RankingName, SearchRun
from coderag_tui.tui.widgets.latency import bar
from coderag_tui.tui.widgets.preview import term_pattern, word_matches
from coderag_tui.tui.widgets.ranking_table import (
    FULL,
    Row,
    RowLayout,
    RowShape,
    choose_layout,
    fit_middle,
    row_cells,
)
from coderag_tui.tui.widgets.rankings import HitRows, ranks_line
from coderag_tui.tui.widgets.status import chunking_label
from coderag_tui.tui.widgets.tuning import step_budget


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
    shown: tuple[RankingName, ...] = ("bm25", "dense", "fused", "rerank")
    assert ranks_line(run, a.key, shown) == "BM25 #2 · Dense off · Fused — · Rerank #1"
    assert ranks_line(run, None, shown) == ""
    pending: tuple[RankingName, ...] = ("dense",)
    assert ranks_line(run, a.key, shown, pending=pending).startswith("BM25 #2 · Dense pending")


@pytest.mark.parametrize(
    ("label", "width", "expected"),
    [
        ("shop/cart.py:1-12", 40, "shop/cart.py:1-12"),
        ("shop/cart.py:1-12", 17, "shop/cart.py:1-12"),
        # the directory goes first, whole names kept where they fit
        ("src/requests/sessions.py:257-320", 26, "src/…/sessions.py:257-320"),
        ("src/requests/sessions.py:257-320", 24, "src…/sessions.py:257-320"),
        ("a/b/c/d/e/f/models.py:1-64", 21, "a/b/…/models.py:1-64"),
        ("tests/test_requests.py:1-64", 23, "…/test_requests.py:1-64"),
        # then the middle of the file name; the line range stays
        ("src/requests/sessions.py:257-320", 18, "sessi…s.py:257-320"),
        ("src/requests/sessions.py:257-320", 12, "se…y:257-320"),
        # not even the range fits: the end is kept
        ("src/requests/sessions.py:257-320", 5, "…-320"),
        ("src/requests/sessions.py:257-320", 1, "…"),
        ("src/requests/sessions.py:257-320", 0, ""),
        ("no_directory_at_all.py:1-9", 16, "no_dir…ll.py:1-9"),
        # wide characters count two cells each
        ("a/b/日本語ファイル.py:1-9", 23, "…/日本語ファイル.py:1-9"),
        ("a/b/日本語ファイル.py:1-9", 21, "日本語フ…イル.py:1-9"),
        ("a/b/日本語ファイル.py:1-9", 14, "日本…ル.py:1-9"),
    ],
)
def test_fit_middle_keeps_the_file_name_and_line_range(
    label: str, width: int, expected: str
) -> None:
    out = fit_middle(label, width)
    assert out == expected
    assert cell_len(out) <= max(width, 0)


@pytest.mark.parametrize("width", range(0, 40))
def test_fit_middle_never_overflows_and_keeps_the_range_when_it_fits(width: int) -> None:
    for label in ("src/requests/sessions.py:257-320", "x/日本/ファイル名.py:10-20", "a.py:1-2"):
        out = fit_middle(label, width)
        assert cell_len(out) <= width
        if width >= len(":257-320") + 1:
            assert out.endswith(label[label.rfind(":") :])


def test_a_ranking_row_keeps_its_mark_and_is_exactly_as_wide_as_the_table() -> None:
    line = row_cells(("3", "src/requests/sessions.py:257-320", "0.81"), 30, 2, 5, "⚠ ")
    assert cell_len(line) == 30
    assert line.startswith("  3 ⚠ ") and ":257-320" in line and line.endswith("0.81 ")


FLASK = [
    "src/flask/sessions.py:257-320",
    "src/flask/config.py:129-192",
    "docs/api.rst:1-64",
    "src/flask/ctx.py:1-64",
]


def shape_of(labels: list[str], rank: str = "20", score: str = "0.0164") -> RowShape:
    return RowShape.of([Row(rank, label, score, label) for label in labels])


NO_SCORE = RowLayout(rank=True, score=False)
BARE = RowLayout(rank=False, score=False)


@pytest.mark.parametrize(
    ("width", "layout"),
    [
        (60, FULL),
        (37, FULL),  # `src/…/sessions.py:257-320` beside rank and score
        (33, FULL),  # `…/sessions.py:257-320` still fits beside both
        (32, NO_SCORE),  # the score gives way first
        (26, NO_SCORE),
        (25, BARE),  # then the rank
        (23, BARE),  # a third of 80 columns: the name and range, whole
    ],
)
def test_the_score_then_the_rank_give_way_to_whole_file_names(
    width: int, layout: RowLayout
) -> None:
    shape = shape_of(FLASK)
    assert choose_layout(width, shape) == layout
    for label in FLASK:
        line = row_cells(("20", label, "0.0164"), width, shape.rank, shape.score, layout=layout)
        assert cell_len(line) == width
        assert label.rsplit("/", 1)[-1] in line  # the file name and its line range, whole
        assert ("0.0164" in line) == layout.score and (" 20 " in line) == layout.rank


def test_a_name_too_long_for_any_row_costs_the_others_nothing() -> None:
    long = "tests/test_apps/blueprintapp/apps/admin/a_very_long_module_name_indeed.py:1-64"
    assert choose_layout(40, shape_of([*FLASK, long])) == FULL
    assert choose_layout(12, shape_of(FLASK)) == BARE  # nothing fits: names get the row


def test_a_deep_list_formats_only_the_rows_it_is_asked_for() -> None:
    hits = [Hit(chunk(f"src/pkg/mod_{i}.py", 1), 1.0 / i, i) for i in range(1, 1281)]
    rows = HitRows(hits, "{:.4f}", {hits[5].chunk.key: ("AWS Access Key",)})
    assert len(rows) == 1280 and rows.keys[1279] == "src/pkg/mod_1280.py:1-10"
    assert rows.shape().rank == 4 and rows.shape().score == 6
    assert rows[-1].rank == "1280" and rows[5].mark == "⚠ "
    assert len(rows._rows) == 2  # not 1,280


def test_a_lazy_list_is_shaped_as_its_rows_would_be() -> None:
    paths = ["a.py", "src/x/b.py", "日本/ファイル.py", "evil\x1b[2J/c.py", "d/\u202ee.py"]
    hits = [Hit(chunk(p, 10 * i + 1), -2.5 + i, i + 1) for i, p in enumerate(paths)]
    rows = HitRows(hits, "{:.3f}", {hits[1].chunk.key: ("kind",)})
    assert rows.shape() == RowShape.of(list(rows))


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


def test_budget_steps_walk_the_presets() -> None:
    assert step_budget(8000, -1) == 4000
    assert step_budget(8000, 1) == 16000
    assert step_budget(2000, -1) == 2000
    assert step_budget(128_000, 1) == 128_000
    assert step_budget(5000, 1) == 8000  # a custom budget steps to the next preset


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("lines:64:0", "64-line chunks"),
        ("lines:40:8", "40-line chunks, 8 overlap"),
        ("ast:64", "ast chunks ≤ 64 lines"),
        ("file", "whole files"),
        ("something-new", "something-new"),
    ],
)
def test_the_top_bar_names_the_chunking_in_words(key: str, label: str) -> None:
    assert chunking_label(key) == label
