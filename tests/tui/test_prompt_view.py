"""Pilot tests of the prompt: budget, copy, the prompt view with pin and exclude."""

from __future__ import annotations

from typing import Any

import pytest
from textual.notifications import Notify
from textual.widgets import DataTable

from coderag_tui.settings import Settings
from coderag_tui.tui.screens.prompt import PromptScreen
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle, text_of


def table_lines(table: DataTable[Any]) -> list[str]:
    """The table's rows as drawn, header first."""
    return [table.render_line(y).text for y in range(table.size.height)]


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
    app = build_app(tui_settings.with_(packing="chunks"))  # whole chunks fill the budget
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


async def test_a_copy_by_osc52_alone_says_not_copied_and_offers_save(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    """A terminal that ignores OSC 52 answers nothing: the app cannot say `copied`."""
    app = build_app(tui_settings)  # no system clipboard tool: OSC 52 only
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        assert app.session.packed is not None
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard == app.session.packed.text  # sent, as far as the app can
        assert "## Task" in app.clipboard and "charge card" in app.clipboard
        told = [m.notification for m in recorder.of(Notify)][-1]
        assert told.title == "Prompt not copied" and told.severity == "warning"
        assert "OSC 52" in told.message and "Ctrl+S saves" in told.message
        assert not any(m.notification.title == "Prompt copied" for m in recorder.of(Notify))
        await pilot.press("ctrl+s")  # the offer: a file the prompt is sure to reach
        await pilot.pause()
        assert type(app.screen).__name__ == "SaveScreen"


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


@pytest.mark.parametrize("size", [(200, 50), (80, 24)], ids=["200x50", "80x24"])
async def test_every_token_count_and_file_name_shows_whole_in_the_prompt_view(
    nested_settings: Settings, build_app: AppFactory, size: tuple[int, int]
) -> None:
    """The tokens column lost its last digit (`66` for 660) when a long path pushed it past
    the border, even at 200 columns; the Dropped table showed rank and reason, no path."""
    settings = nested_settings.with_(chunk_lines=12, budget=4000, packing="chunks")
    app = build_app(settings)
    async with app.run_test(size=size) as pilot:
        await search(pilot, "admin index session cookie")
        packed = app.session.packed
        assert packed is not None and packed.blocks and packed.dropped
        await pilot.press("ctrl+o")
        await settle(pilot)
        included = app.screen.query_one("#included", DataTable)
        lines = table_lines(included)
        assert "tokens" in lines[0]
        for block, line in zip(packed.blocks, lines[1:], strict=False):
            assert line.rstrip().endswith(f"{block.tokens:,}"), line
            assert f"{block.path.rsplit('/', 1)[-1]}:{block.start_line}-" in line, line
        dropped = app.screen.query_one("#dropped", DataTable)
        lines = table_lines(dropped)
        for drop, line in zip(packed.dropped, lines[1:-1], strict=False):
            name, lines_range = drop.key.rsplit("/", 1)[-1].split(":")
            assert f"{name[:3]}" in line and f":{lines_range} " in line, line
            if size[0] > 80:  # at 80x24, 38 columns: the longest names lose their middle
                assert f"{name}:{lines_range}" in line, line
            assert f" {drop.tokens:,} " in f"{line} ", line
        assert "over budget" in str(dropped.border_subtitle)
