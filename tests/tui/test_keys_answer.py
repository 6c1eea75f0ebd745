"""Keys as people press them: a new search selects the new #1, every list key answers, and a
saved prompt lands outside the repository (so it never becomes its own search hit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Label

from coderag_tui.settings import Settings
from coderag_tui.tui.screens.save import SaveScreen
from tests.tui.conftest import SIZE, AppFactory, Recorder, column, search, settle


async def test_each_new_search_selects_the_new_first_hit_of_the_focused_list(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "def return self")
        await pilot.press("escape", "1", "down", "down")  # into the BM25 list, third row
        await settle(pilot)
        bm25 = column(app, "bm25")
        assert len(bm25.keys) > 3, bm25.keys
        third = bm25.keys[2]
        assert app.session.selected_key == third
        await pilot.press("slash")
        await search(pilot, "refund payment cart")
        run = app.session.last_run
        assert run is not None
        first = run.rankings["bm25"].hits[0].chunk.key
        assert first != third
        assert third in {h.chunk.key for h in run.rankings["bm25"].hits}  # still listed
        assert app.session.selected_key == first  # not the old row, even if still listed


async def test_a_list_key_with_nothing_to_show_says_why(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        await pilot.press("escape", "4")  # the reranked list, while rerank is off
        await settle(pilot)
        assert any("rerank is off" in n and "Tuning" in n for n in recorder.notifications())
        await pilot.press("2")  # dense: no model in these settings
        await settle(pilot)
        assert any("Dense list is empty" in n for n in recorder.notifications())


async def test_the_prompt_is_saved_outside_the_repository_by_default(
    tui_settings: Settings,
    build_app: AppFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, SaveScreen)
        proposed = Path(app.screen.query_one("#save-path", Input).value)
        assert proposed.is_relative_to(tmp_path / "data")
        assert not proposed.is_relative_to(tui_settings.repo_root)
        await pilot.press("enter")
        await settle(pilot)
        assert proposed.is_file()
        assert "## Task" in proposed.read_text()


async def test_save_suggests_the_template_s_suffix_and_never_replaces_a_file_silently(
    tui_settings: Settings,
    build_app: AppFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card")
        await pilot.press("ctrl+t")  # the xml template
        await settle(pilot)
        assert app.session.template_name == "xml"
        await pilot.press("ctrl+s")
        await settle(pilot)
        field = app.screen.query_one("#save-path", Input)
        first = Path(field.value)
        assert first.name == "shop-prompt.xml"
        await pilot.press("enter")
        await settle(pilot)
        assert "<context>" in first.read_text()
        # The next save suggests a new name instead of the last save's.
        await pilot.press("ctrl+s")
        await settle(pilot)
        field = app.screen.query_one("#save-path", Input)
        assert Path(field.value).name == "shop-prompt-2.xml"
        # Typing the existing name back asks first: Enter warns, a second Enter replaces.
        field.value = str(first)
        first.write_text("keep me")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SaveScreen)
        assert "exists" in str(app.screen.query_one("#save-warning", Label).render())
        assert first.read_text() == "keep me"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, SaveScreen)
        assert "<context>" in first.read_text()
