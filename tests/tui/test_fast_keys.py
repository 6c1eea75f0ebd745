"""Pilot tests of keys typed faster than the screen follows: each acts on what the user sees."""

from __future__ import annotations

from coderag_tui.settings import Settings
from tests.tui.conftest import SIZE, AppFactory, burst, column, search, settle, text_of


async def test_pin_and_exclude_in_a_burst_act_on_the_row_under_the_cursor(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "cart item total discount")
        bm25 = column(app, "bm25")
        bm25.table.focus()
        await pilot.press("home")
        await settle(pilot)
        assert len(bm25.keys) >= 3 and bm25.table.cursor_row == 0
        burst(app, "down", "down", "p")
        await settle(pilot)
        third = bm25.keys[2]
        assert bm25.table.cursor_row == 2
        assert app.session.pinned == [third]
        assert app.session.selected_key == third
        assert "📌 pinned" in text_of(app, "#ranks")

        burst(app, "x")
        await settle(pilot)
        assert app.session.excluded == [third] and app.session.pinned == []
        ranks = text_of(app, "#ranks")
        assert "✕ excluded" in ranks and "pinned" not in ranks
