"""Pilot tests of state that follows the user's action: a new question drops the pins of the
last one, the query bar names what is ranked, and a change review ends with its change."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label

from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.query import QueryInput
from tests.fixtures.gated_definitions import gated_boot, wait_for_left_followers
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle, text_of

CART = "shop/cart.py"
OLD = "        self.items.append(item)\n"
NEW = "        self.items.append(item)  # keep order\n"


def bar(app: object) -> tuple[str, str, str]:
    """The query bar as the user reads it: its mode label, its text and its placeholder."""
    screen = app.main  # type: ignore[attr-defined]
    query = screen.query_one(QueryInput)
    return str(screen.query_one("#mode-label", Label).render()), query.value, query.placeholder


async def test_a_pin_for_one_question_stays_out_of_the_next_one_s_prompt(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    cart = tui_settings.repo_root / CART
    cart.write_text(cart.read_text().replace(OLD, NEW))
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "refund the payment")
        pinned = app.session.selected_key
        assert pinned is not None
        app.toggle_pin(pinned)
        await settle(pilot)
        packed = app.session.packed
        assert packed is not None and packed.blocks[0].chunk_keys[0] == pinned
        # The same question again keeps what was chosen for it.
        await search(pilot, "refund the payment")
        assert app.session.pinned == [pinned]
        # A change review is another question: the pin was the last one's.
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.session.pinned == []
        assert "Prompt" in text_of(app, "#prompt-line")
        assert "pinned" not in text_of(app, "#prompt-line")
        assert any("1 pin of the last one" in n for n in recorder.notifications())
        packed = app.session.packed
        assert packed is not None and "Review this change" in packed.text
        assert not any(pinned in block.chunk_keys for block in packed.blocks[:1])


async def test_the_query_bar_names_what_the_rankings_answer(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    cart = tui_settings.repo_root / CART
    cart.write_text(cart.read_text().replace(OLD, NEW))
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge the card")
        assert bar(app)[:2] == ("Ask ›", "charge the card")
        await pilot.press("escape", "ctrl+n")
        await settle(pilot)
        label, value, placeholder = bar(app)
        assert (label, value) == ("Diff ›", "")  # not the old question
        assert placeholder.startswith("the uncommitted change: 1 file, +1 −1")
        await search(pilot, "apply a discount")
        assert bar(app)[:2] == ("Ask ›", "apply a discount")


async def test_re_indexing_after_the_change_was_reverted_ends_its_review(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    cart = tui_settings.repo_root / CART
    original = cart.read_text()
    cart.write_text(original.replace(OLD, NEW))
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        packed = app.session.packed
        assert packed is not None and "# keep order" in packed.text
        cart.write_text(original)  # reverted
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.session.last_run is None and app.session.packed is None
        assert "no prompt yet" in text_of(app, "#prompt-line")
        assert bar(app)[:2] == ("Ask ›", "")
        assert any("The change reviewed is gone" in n for n in recorder.notifications())
        # A change made again is reviewed again, with its own diff.
        cart.write_text(original.replace(OLD, "        self.items.append(item)  # again\n"))
        await pilot.press("ctrl+n")
        await settle(pilot)
        packed = app.session.packed
        assert packed is not None and "# again" in packed.text
        assert "# keep order" not in packed.text


async def test_the_top_bar_says_while_the_definitions_are_parsed_in_the_background(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index that leaves the definitions to a background process: the top bar says
    so until that process is done, and the search after it ranks with them."""
    from coderag_tui.core.rank import bm25_process, definitions_follow, definitions_process

    gate = tmp_path / "gate"
    monkeypatch.setattr(bm25_process, "MIN_BYTES", 0)  # the followers at any size
    monkeypatch.setattr(definitions_process.Follower, "min_chunks", 0)
    monkeypatch.setattr(definitions_process, "MIN_CORES", 1)
    monkeypatch.setattr(definitions_follow, "_BOOT", gated_boot(gate))
    app = build_app(tui_settings)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert "definitions parsing" in text_of(app, "#topbar")
            gate.touch()
            wait_for_left_followers()
            for _ in range(50):  # the bar checks every second
                await pilot.pause(0.1)
                if "definitions parsing" not in text_of(app, "#topbar"):
                    break
            assert "definitions parsing" not in text_of(app, "#topbar")
            assert "index ready" in text_of(app, "#topbar")
            await search(pilot, "refund the payment")
            run = app.session.last_run
            assert run is not None and not any("for now" in note for note in run.notes)
    finally:
        gate.touch()
        wait_for_left_followers()
