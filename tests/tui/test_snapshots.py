"""SVG snapshots of every screen on the tiny repository, with a deterministic clock.

Regenerate after an intended change of looks with
`pytest tests/tui/test_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from coderag_tui.settings import Settings
from tests.tui.conftest import SIZE, AppFactory, search, settle, with_dense

QUERY = "charge the card and retry on timeout"


async def _after_a_search(pilot: Pilot[Any]) -> None:
    """The query run, focus back on the rankings, the first hit's preview shown."""
    await search(pilot, QUERY)
    await pilot.press("escape", "down")
    await settle(pilot)


def test_main_view_after_a_search(
    snap_compare: Any, tui_settings: Settings, build_app: AppFactory
) -> None:
    assert snap_compare(build_app(tui_settings), terminal_size=SIZE, run_before=_after_a_search)


def test_prompt_view(snap_compare: Any, tui_settings: Settings, build_app: AppFactory) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, QUERY)
        await pilot.press("ctrl+o")
        await settle(pilot)

    assert snap_compare(build_app(tui_settings), terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Any, tui_settings: Settings, build_app: AppFactory) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(build_app(tui_settings), terminal_size=SIZE, run_before=run_before)


def test_main_view_on_a_large_terminal(
    snap_compare: Any, tui_settings: Settings, build_app: AppFactory
) -> None:
    """200x50: the rankings get the width, the preview and side panel the height."""
    large = (200, 50)
    assert snap_compare(build_app(tui_settings), terminal_size=large, run_before=_after_a_search)


SMALL = pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])


@SMALL
def test_main_view_on_a_small_terminal(
    snap_compare: Any, tui_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, QUERY)
        await pilot.press("escape", "down")
        await settle(pilot)

    assert snap_compare(build_app(tui_settings), terminal_size=size, run_before=run_before)


@SMALL
def test_prompt_view_on_a_small_terminal(
    snap_compare: Any, tui_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, QUERY)
        await pilot.press("ctrl+o")
        await settle(pilot)

    assert snap_compare(build_app(tui_settings), terminal_size=size, run_before=run_before)


@SMALL
def test_help_on_a_small_terminal(
    snap_compare: Any, tui_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(build_app(tui_settings), terminal_size=size, run_before=run_before)


NESTED = pytest.mark.parametrize("size", [(80, 24), (120, 30)], ids=["80x24", "120x30"])


@NESTED
def test_three_columns_with_nested_paths(
    snap_compare: Any, nested_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    """BM25, Dense and Fused on a flask-like repository: every row keeps its file name and
    line range (`…/sessions.py:257-320`); at 80x24 the scores and ranks give way for them."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, "push the request context and load config")
        await pilot.press("escape", "down", "down")
        await settle(pilot)

    app = with_dense(build_app(nested_settings))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@NESTED
def test_prompt_view_with_nested_paths(
    snap_compare: Any, nested_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    """Every block's tokens whole, every dropped chunk's file name and line range shown."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, "admin index session cookie")
        await pilot.press("ctrl+o")
        await settle(pilot)

    settings = nested_settings.with_(chunk_lines=12, budget=4000)
    assert snap_compare(build_app(settings), terminal_size=size, run_before=run_before)


FOUR = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


@FOUR
def test_four_lists_after_moving_down_the_fused_list(
    snap_compare: Any, nested_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    """BM25, Dense, Fused and the learned reranker's list, the cursor moved down the fused
    list: every row shows its rank, `flask/app.py` and `sansio/app.py` never read alike, the
    other lists keep their place and say where the selected chunk is (`↓#12`). At 80x24 the
    lists sit two a row."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await search(pilot, "register the blueprint of the app for a request")
        await pilot.press("escape", "3", *["down"] * 11)
        await settle(pilot)

    settings = nested_settings.with_(rerank=True, rerank_backend="learned")
    app = with_dense(build_app(settings))
    assert snap_compare(app, terminal_size=size, run_before=run_before)
