"""Pilot tests of lists that tell the truth about themselves: every row shows its rank, no two
files read alike, a list the user is not in keeps its place and says where the selected chunk
is, and the scores are one key away."""

from __future__ import annotations

import re

import pytest

from coderag_tui.settings import Settings
from coderag_tui.tui.app import CoderagApp
from tests.tui.conftest import AppFactory, column, search, settle, with_dense

LISTS = ("bm25", "dense", "fused", "rerank")
QUERY = "register the blueprint of the app for a request"
ROW = re.compile(r"^\s*(\d+) (.*?)\s*$")


def four_lists(settings: Settings, build_app: AppFactory) -> CoderagApp:
    """BM25, Dense (a tiny hashing embedder), Fused and the learned reranker's list."""
    return with_dense(build_app(settings.with_(rerank=True, rerank_backend="learned")))


def drawn_rows(app: CoderagApp, name: str) -> list[tuple[str, str, str]]:
    """(rank as drawn, label as drawn, the row's path) for every row in view of a list."""
    table = column(app, name).table
    top = table.top_row
    rows = []
    for y in range(1, table.size.height):
        index = top + y - 1
        if index >= table.row_count:
            break
        found = ROW.match(table.render_line(y).text)
        assert found, (name, table.render_line(y).text)
        label = found.group(2)
        if table.scores_shown():
            label, score = label.rsplit(None, 1)
            assert score == table.rows[index].score
        rows.append((found.group(1), label, table.rows[index].path))
    return rows


def reads_as(label: str) -> str:
    """What a drawn label says of its path: the part after any `…/`, without its lines."""
    path = re.sub(r":\d+(-\d+)?$", "", label)
    return path.rsplit("…", 1)[-1].lstrip("/")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_every_rank_shows_and_no_two_files_read_alike(
    nested_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    app = four_lists(nested_settings, build_app)
    async with app.run_test(size=size) as pilot:
        await search(pilot, QUERY)
        await pilot.press("escape", "3", *["down"] * 12)
        await settle(pilot)
        run = app.session.last_run
        assert run is not None and run.rankings["rerank"].available
        on_screen: dict[str, set[str]] = {}
        for name in LISTS:
            table = column(app, name).table
            rows = drawn_rows(app, name)
            assert len(rows) >= 4, name
            for rank, label, path in rows:
                assert rank == table.rows[int(rank) - 1].rank  # its own rank, drawn
                on_screen.setdefault(reads_as(label), set()).add(path)
        paths = {path for found in on_screen.values() for path in found}
        assert {"src/flask/app.py", "src/flask/sansio/app.py"} <= paths
        for said in on_screen:
            others = {p for p in paths if p.endswith(said)}
            assert len(others) == 1, f"{said!r} reads as any of {sorted(others)}"


async def test_a_list_the_user_is_not_in_keeps_its_place_and_says_where_the_chunk_is(
    nested_settings: Settings, build_app: AppFactory
) -> None:
    app = four_lists(nested_settings, build_app)
    async with app.run_test(size=(120, 40)) as pilot:
        await search(pilot, QUERY)
        await pilot.press("escape", "3", *["down"] * 30)
        await settle(pilot)
        key = app.session.selected_key
        run = app.session.last_run
        assert key is not None and run is not None
        fused = column(app, "fused").table
        assert fused.top_row > 0  # the list the user is in scrolls
        assert f"↑ {fused.top_row} above" in fused.render_line(0).text
        below = 0
        for name in ("bm25", "dense", "rerank"):
            table = column(app, name).table
            assert table.top_row == 0, name  # the others stay at their top
            rank = run.rankings[name].rank_of(key)
            if rank is not None and rank > table.rows_in_view:
                below += 1
                assert f"↓ #{rank} selected" in table.render_line(0).text, name
        assert below, "the chunk should lie below the view of another list"
        # Moving into another list shows the chunk there.
        await pilot.press("2")
        await settle(pilot)
        dense = column(app, "dense").table
        row = dense.index_of(key)
        if row is not None:
            assert dense.top_row <= row < dense.top_row + dense.rows_in_view


async def test_the_scores_are_one_key_away_in_every_list(
    nested_settings: Settings, build_app: AppFactory
) -> None:
    app = four_lists(nested_settings, build_app)
    async with app.run_test(size=(120, 40)) as pilot:
        await search(pilot, QUERY)
        await pilot.press("escape")
        await settle(pilot)
        shown = {name: column(app, name).table.scores_shown() for name in LISTS}
        await pilot.press("v")
        await pilot.pause()
        after = {name: column(app, name).table.scores_shown() for name in LISTS}
        assert len(set(after.values())) == 1 and after != shown
        if all(after.values()):
            for name in LISTS:
                table = column(app, name).table
                assert table.render_line(0).text.rstrip().endswith("score")
                first = run_hit_score(app, name)
                assert table.render_line(1).text.rstrip().endswith(first)
        await pilot.press("v")
        await pilot.pause()
        assert {column(app, n).table.scores_shown() for n in LISTS} == {not all(after.values())}


def run_hit_score(app: CoderagApp, name: str) -> str:
    return column(app, name).table.rows[0].score
