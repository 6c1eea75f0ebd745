"""Pure helpers behind the widgets: bars, path labels, the ranks line, query words, budgets."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from coderag_tui.core.records import Chunk, Hit, Ranking, RankingName, SearchRun
from coderag_tui.tui.widgets.latency import bar
from coderag_tui.tui.widgets.path_label import distinct_parts, fit_label, split_label
from coderag_tui.tui.widgets.preview import term_pattern, word_matches
from coderag_tui.tui.widgets.ranking_table import (
    Row,
    RowShape,
    header_cells,
    row_cells,
    scores_fit,
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


FLASK_PATHS = [
    "src/flask/app.py",
    "src/flask/sansio/app.py",
    "src/flask/blueprints.py",
    "src/flask/sansio/blueprints.py",
    "src/flask/ctx.py",
    "app.py",
    "docs/api.rst",
    "tests/test_apps/blueprintapp/apps/admin/__init__.py",
    "tests/test_apps/blueprintapp/apps/frontend/__init__.py",
    "src/flask/__init__.py",
]


def test_each_path_keeps_the_fewest_last_parts_no_other_path_shares() -> None:
    parts = distinct_parts(FLASK_PATHS)
    endings = {path: "/".join(path.split("/")[-n:]) for path, n in parts.items()}
    assert endings["src/flask/app.py"] == "flask/app.py"
    assert endings["src/flask/sansio/app.py"] == "sansio/app.py"
    assert endings["src/flask/sansio/blueprints.py"] == "sansio/blueprints.py"
    assert endings["src/flask/ctx.py"] == "ctx.py"  # one file of that name: the name alone
    assert endings["app.py"] == "app.py"  # the ending of another path: all of it
    assert endings["tests/test_apps/blueprintapp/apps/admin/__init__.py"] == "admin/__init__.py"
    assert endings["src/flask/__init__.py"] == "flask/__init__.py"
    assert len(set(endings.values())) == len(FLASK_PATHS)


@pytest.mark.parametrize(
    ("path", "parts", "width", "expected"),
    [
        ("shop/cart.py", 1, 40, "shop/cart.py:1-12"),
        ("shop/cart.py", 1, 17, "shop/cart.py:1-12"),
        # the leading folders go first, whole ones kept where they fit
        ("src/flask/sansio/app.py", 2, 26, "src/…/sansio/app.py:1-12"),
        ("src/flask/sansio/app.py", 2, 20, "…/sansio/app.py:1-12"),
        ("src/flask/sansio/app.py", 2, 19, "sansio/app.py:1-12"),
        ("src/requests/sessions.py", 1, 22, "src/…/sessions.py:1-12"),
        ("a/b/c/d/e/f/models.py", 1, 20, "a/b/…/models.py:1-12"),
        # then the line range, from its end: the first line still tells chunks apart
        ("src/flask/sansio/app.py", 2, 16, "sansio/app.py:1"),
        ("src/flask/sansio/app.py", 2, 13, "sansio/app.py"),
        # then the distinguishing folders, from the left; the file name stays whole
        ("src/flask/sansio/app.py", 2, 10, "…io/app.py"),
        ("src/flask/sansio/app.py", 2, 6, "app.py"),
        # only a name longer than the row is cut, in its middle
        ("src/requests/sessions.py", 1, 8, "sess….py"),
        ("src/requests/sessions.py", 1, 1, "…"),
        ("src/requests/sessions.py", 1, 0, ""),
        # wide characters count two cells each
        ("a/b/日本語ファイル.py", 1, 25, "…/日本語ファイル.py:1-12"),
        ("a/b/日本語ファイル.py", 1, 19, "日本語ファイル.py:1"),
        ("a/b/日本語ファイル.py", 1, 9, "日本….py"),
    ],
)
def test_a_label_is_cut_folders_first_then_the_lines_never_the_distinct_ending(
    path: str, parts: int, width: int, expected: str
) -> None:
    out = fit_label(path, ":1-12", parts, width)
    assert out == expected
    assert cell_len(out) <= max(width, 0)


@pytest.mark.parametrize("width", range(0, 40))
def test_labels_never_overflow_and_keep_the_distinct_ending_while_it_fits(width: int) -> None:
    for path, parts in (("src/flask/sansio/app.py", 2), ("x/日本/ファイル名.py", 1), ("a.py", 1)):
        out = fit_label(path, ":257-320", parts, width)
        keep = "/".join(path.split("/")[-parts:])
        assert cell_len(out) <= width
        if width >= cell_len(keep):
            assert keep in out
        if width >= cell_len(keep) + len(":257-320") + 2:
            assert out.endswith(keep + ":257-320")


def test_labels_on_one_screen_never_read_alike_at_any_width() -> None:
    """`src/flask/app.py` and `src/flask/sansio/app.py` both read `src/…/app.py` before."""
    parts = distinct_parts(FLASK_PATHS)
    for width in range(len("sansio/blueprints.py:1"), 40):
        labels = [fit_label(p, ":33-64", parts[p], width) for p in FLASK_PATHS]
        assert len(set(labels)) == len(labels), (width, labels)


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("src/app.py:12-40", ("src/app.py", ":12-40")),
        ("odd:name.py:1-2", ("odd:name.py", ":1-2")),
        ("no-range.py", ("no-range.py", "")),
    ],
)
def test_a_label_splits_into_path_and_line_range(label: str, expected: tuple[str, str]) -> None:
    assert split_label(label) == expected


def row(label: str, rank: str = "3", score: str = "0.81", mark: str = "", parts: int = 1) -> Row:
    path, lines = split_label(label)
    return Row(rank, path, lines, score, label, mark, parts)


def test_a_ranking_row_keeps_its_mark_and_is_exactly_as_wide_as_the_table() -> None:
    line = row_cells(row("src/requests/sessions.py:257-320", mark="⚠ "), 34, 2, 5, score=True)
    assert cell_len(line) == 34
    assert line.startswith("  3 ⚠ ") and ":257-320" in line and line.endswith("0.81 ")


FLASK = [
    "src/flask/sessions.py:257-320",
    "src/flask/config.py:129-192",
    "docs/api.rst:1-64",
    "src/flask/ctx.py:1-64",
]


def shape_of(labels: list[str], rank: str = "20", score: str = "0.0164") -> RowShape:
    return RowShape.of([row(label, rank, score) for label in labels])


@pytest.mark.parametrize(
    ("width", "score"),
    [
        (60, True),
        (31, True),  # `sessions.py:257-320` beside rank and score
        (30, False),  # the score gives way first
        (24, False),  # a fifth of 120 columns: the name and range, whole
        (12, False),  # the rank never does
    ],
)
def test_the_score_gives_way_to_whole_file_names_and_the_rank_never_does(
    width: int, *, score: bool
) -> None:
    shape = shape_of(FLASK)
    assert scores_fit(width, shape) == score
    for label in FLASK:
        line = row_cells(row(label, "20", "0.0164"), width, shape.rank, shape.score, score=score)
        assert cell_len(line) == width
        assert line.startswith(" 20 ")  # the rank, at every width
        assert ("0.0164" in line) == score
        if width >= 24:
            assert label.rsplit("/", 1)[-1] in line  # the file name and its line range, whole


def test_a_name_too_long_for_any_row_costs_the_others_nothing() -> None:
    long = "tests/test_apps/blueprintapp/apps/admin/a_very_long_module_name_indeed.py:1-64"
    assert scores_fit(40, shape_of([*FLASK, long]))
    assert not scores_fit(12, shape_of(FLASK))


def test_the_header_says_what_is_out_of_view_long_or_short() -> None:
    notes = [("↑ 12 above", "↑12"), ("↓ #48 selected", "↓#48")]
    wide = header_cells(50, 2, 6, notes, score=True)
    assert wide.split() == ["#", "chunk", "↑", "12", "above", "↓", "#48", "selected", "score"]
    narrow = header_cells(19, 2, 6, notes, score=False)
    assert narrow.split() == ["#", "chunk", "↑12", "↓#48"]
    assert cell_len(narrow) == 19
    tight = header_cells(14, 2, 6, notes, score=False)
    assert tight.split() == ["#", "↑12", "↓#48"]  # the word gives way, not what is out of view
    assert header_cells(30, 1, 6, [], score=False).split() == ["#", "chunk"]


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
