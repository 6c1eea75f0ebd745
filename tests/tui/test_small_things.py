"""Pilot tests of the small things a user notices: toasts that cover nothing they need, lines
that fit 120 columns, a way back to the Latency tab, a switch readable without colour."""

from __future__ import annotations

from textual.widgets import Label, Static, TabbedContent
from textual.widgets._toast import Toast

from coderag_tui.settings import Settings
from tests.tui.conftest import AppFactory, Recorder, search, settle, text_of

WIDE = (120, 40)


async def test_toasts_cover_neither_the_prompt_line_nor_the_side_panel(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await search(pilot, "charge the card")
        await pilot.press("escape", "p")  # a pin says so in a toast
        await settle(pilot)
        assert list(app.screen.query(Toast))

        def shown_at(x: int, y: int) -> type:
            return type(app.screen.get_widget_at(x, y)[0])

        line = app.main.query_one("#prompt-line").region
        side = app.main.query_one("#side").region
        toast_rows = {y for y in range(WIDE[1]) if shown_at(2, y) is Toast}
        assert toast_rows  # on screen, bottom left
        for x in range(line.x, line.right):
            assert shown_at(x, line.y) is not Toast
        for y in range(side.y, side.bottom):
            for x in range(side.x, side.right):
                assert shown_at(x, y) is not Toast


async def test_budget_keys_raise_no_toasts_and_the_prompt_line_says_the_budget(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=WIDE, message_hook=recorder) as pilot:
        await search(pilot, "charge the card")
        await pilot.press("escape", "right_square_bracket", "right_square_bracket")
        await settle(pilot)
        assert app.settings.budget == 32_000
        assert "/ 32,000 tokens" in text_of(app, "#prompt-line")
        assert recorder.notifications() == []
        await pilot.press(*["right_square_bracket"] * 2)  # 128k, then the end of the presets
        await settle(pilot)
        said = recorder.notifications()
        assert len(said) == 1 and "largest preset (128,000 tokens)" in said[0]


async def test_the_prompt_line_the_prompt_header_and_the_advice_fit_120_columns(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await search(pilot, "charge the card and retry on timeout")
        line = text_of(app, "#prompt-line")
        assert "…" not in line and "chunks in" in line and "markdown" in line
        await pilot.press("escape", "t")
        await settle(pilot)
        advice = app.main.query_one("#advice", Static)
        assert "recommended" in str(advice.render())
        panel = app.main.query_one("#tuning").region
        assert advice.region.height >= 1 and panel.contains_region(advice.region)
        await pilot.press("escape", "ctrl+o")
        await settle(pilot)
        header = text_of(app, "#prompt-header")
        assert (
            "…" not in header and " block" in header and " in, " in header and "markdown" in header
        )
        assert "cl100k_base (offline)" in header


async def test_l_goes_back_to_the_latency_tab(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await search(pilot, "charge the card")
        tabs = app.main.query_one(TabbedContent)
        await pilot.press("escape", "t")
        await settle(pilot)
        assert tabs.active == "tab-tuning"
        await pilot.press("escape", "l")
        await pilot.pause()
        assert tabs.active == "tab-latency"


async def test_the_rerank_switch_says_on_or_off_in_a_word(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings.with_(rerank_backend="learned"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        state = app.main.query_one("#tune-rerank-state", Label)
        assert str(state.render()) == "off"
        app.action_toggle_rerank()  # as the command palette does
        await settle(pilot)
        assert app.settings.rerank and str(state.render()) == "on"
