"""Pilot tests of the prompt: budget, copy, the prompt view with pin and exclude."""

from __future__ import annotations

from textual.widgets import DataTable

from coderag_tui.settings import Settings
from coderag_tui.tui.screens.prompt import PromptScreen
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle, text_of


async def test_changing_the_budget_changes_the_prompt_token_count(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    big = tui_settings.repo / "shop" / "reports.py"
    big.write_text(
        "".join(
            f"def report_{i}(cart, card):\n    '''Charge report {i} for the cart total.'''\n"
            f"    return cart.total_cents() * {i} + len(card)\n\n\n"
            for i in range(300)
        )
    )
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge report cart total")
        assert app.session.packed is not None
        before = app.session.packed.tokens
        assert before > 2000
        await pilot.press("escape")  # leave the input so [ reaches the screen
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert app.settings.budget == 2000
        assert app.session.packed.budget == 2000
        assert app.session.packed.tokens <= 2000 < before
        assert "/ 2,000 tokens" in text_of(app, "#prompt-line")
        assert any(d.reason == "over budget" for d in app.session.packed.dropped)


async def test_copy_puts_the_prompt_in_the_clipboard_and_says_how(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        assert app.session.packed is not None
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard == app.session.packed.text
        assert "## Task" in app.clipboard and "charge card" in app.clipboard
        assert any("OSC 52" in n for n in recorder.notifications())


async def test_prompt_view_pin_and_exclude(tui_settings: Settings, build_app: AppFactory) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "cart item total discount")
        assert app.session.packed is not None and len(app.session.packed.blocks) >= 2
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        header = text_of(app, "#prompt-header")
        assert f"{app.session.packed.tokens:,} / 8,000 tokens" in header
        # Exclude the first block: it moves to the dropped list as "excluded".
        first_key = app.session.packed.blocks[0].chunk_keys[0]
        await pilot.press("x")
        await settle(pilot)
        assert first_key in app.session.excluded
        assert all(first_key not in b.chunk_keys for b in app.session.packed.blocks)
        assert any(
            d.key == first_key and d.reason == "excluded" for d in app.session.packed.dropped
        )
        dropped = app.screen.query_one("#dropped", DataTable)
        assert dropped.row_count >= 1
        # Pin the last included block: it goes first.
        included = app.screen.query_one("#included", DataTable)
        last_key = app.session.packed.blocks[-1].chunk_keys[0]
        included.move_cursor(row=included.row_count - 1)
        await pilot.press("p")
        await settle(pilot)
        assert app.session.pinned == [last_key]
        assert app.session.packed.blocks[0].chunk_keys[0] == last_key
        await pilot.press("escape")
        assert not isinstance(app.screen, PromptScreen)


async def test_the_command_palette_runs_coderag_actions(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"budget 2k")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert app.settings.budget == 2000
        assert app.session.packed is not None and app.session.packed.budget == 2000
