"""Pilot tests of where keys go: no field traps the user, `/` and what follows reach the query."""

from __future__ import annotations

from textual.widgets import Input

from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.query import QueryInput
from coderag_tui.tui.widgets.ranking_table import RankingTable
from tests.tui.conftest import SIZE, AppFactory, burst, column, search, settle


async def test_esc_leaves_a_tuning_number_field_without_applying_what_was_typed(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "1", "t")  # from the BM25 list into Tuning
        await settle(pilot)
        await pilot.press("tab")
        field = app.main.query_one("#tune-chunk_lines", Input)
        assert app.focused is field
        await pilot.press("3")  # meant for a list key: it lands in the field
        assert field.value == "3"  # focus selected the old value: typing replaced it
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is column(app, "bm25").table  # back where the user came from
        assert app.settings.chunk_lines == 12 and field.value == "12"  # nothing re-chunked
        await pilot.press("3")  # now a list key again
        await pilot.pause()
        assert app.focused is column(app, "fused").table


async def test_slash_leaves_a_tuning_number_field_for_the_query(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "t")
        await settle(pilot)
        app.main.query_one("#tune-depth", Input).focus()
        await pilot.pause()
        await pilot.press("slash", "c", "a", "r", "t")
        await settle(pilot)
        query = app.main.query_one(QueryInput)
        assert app.focused is query and query.value == "cart"
        assert app.settings.depth == 100


async def test_slash_then_text_at_once_types_every_key_into_the_query(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    """`/` and a word in one burst (a paste, a fast typist): no letter acts as a list key (p
    would pin, x exclude, z zoom, 1-4 jump), every one reaches the query."""
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "1")
        await settle(pilot)
        assert isinstance(app.focused, RankingTable)
        burst(app, "slash", "p", "x", "z", "2", "s", "t")
        await settle(pilot)
        query = app.main.query_one(QueryInput)
        assert app.focused is query
        assert query.value == "pxz2st"
        assert app.session.pinned == [] and app.session.excluded == []
        assert app.main.maximized is None
        await pilot.press("slash")  # in the query, / is a character like any other
        assert query.value == "pxz2st/"


async def test_enter_applies_a_tuning_number_even_right_after_another_change(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    """Enter in a number field is never ignored, also when another setting changed a moment
    before (a key, the field left before) and the screen has not refreshed since."""
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "t")
        await settle(pilot)
        field = app.main.query_one("#tune-depth", Input)
        field.focus()
        await pilot.pause()
        applied = []
        for i, depth in enumerate(range(50, 90, 4)):
            field.value = str(depth)
            await pilot.pause()
            app.apply_setting("rrf_k", 30 + i)  # another change, just before
            burst(app, "enter")
            await settle(pilot)
            applied.append(app.settings.depth)
        assert applied == list(range(50, 90, 4))
