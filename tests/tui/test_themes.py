"""Themes as data: bundled YAML files load, bad files are reported once, the choice persists."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widget import Widget

from coderag_tui.settings import Settings
from coderag_tui.tui.app import CoderagApp
from coderag_tui.tui.state import read_saved_theme, save_theme
from coderag_tui.tui.themes import (
    DEFAULT_THEME,
    bundled_theme_dirs,
    load_themes,
    theme_from_mapping,
)
from coderag_tui.tui.widgets.preview import ChunkPreview
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle


def test_bundled_themes_load_without_problems() -> None:
    loaded = load_themes(bundled_theme_dirs())
    assert loaded.problems == ()
    names = {t.name for t in loaded.themes}
    assert {DEFAULT_THEME, "coderag-light", "coderag-high-contrast"} <= names
    light = next(t for t in loaded.themes if t.name == "coderag-light")
    assert light.dark is False


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"name": "x", "primary": "not-a-colour"}, "`primary` is not a colour"),
        ({"name": "x"}, "`primary` is missing"),
        ({"primary": "#fff"}, "`name` is missing"),
        ({"name": "x", "primary": "#fff", "dark": "yes"}, "`dark` must be true or false"),
        ({"name": "x", "primary": "#fff", "colour": "#000"}, "unknown field(s) colour"),
        ({"name": "x", "primary": "#fff", "variables": ["a"]}, "`variables` must be a mapping"),
        (["primary"], "expected a mapping"),
    ],
)
def test_theme_problems_name_the_file_and_the_field(data: object, problem: str) -> None:
    theme, problems = theme_from_mapping(data, "mine.yaml")
    assert theme is None
    assert any(p.startswith("mine.yaml: ") and problem in p for p in problems), problems


def test_saved_theme_round_trips_and_survives_a_corrupt_state_file(tmp_path: Path) -> None:
    state = tmp_path / "config" / "tui-state.json"
    assert read_saved_theme(state) is None
    assert save_theme(state, "coderag-light") is None
    assert read_saved_theme(state) == "coderag-light"
    state.write_text("{not json")
    assert read_saved_theme(state) is None
    assert save_theme(state, "coderag-dark") is None
    assert read_saved_theme(state) == "coderag-dark"


async def test_a_bad_theme_file_gives_one_notification_and_the_good_ones_load(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    folder = tui_settings.theme_dir
    folder.mkdir(parents=True)
    (folder / "broken.yaml").write_text("name: broken\nprimary: [unclosed\n")
    (folder / "ugly.yaml").write_text("name: ugly\nprimary: '#zzzzzz'\n")
    (folder / "mine.yml").write_text("name: mine\nprimary: '#ff8800'\ndark: false\n")
    app = build_app(tui_settings.with_(theme="mine"))
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        theme_notes = [n for n in recorder.notifications() if "broken.yaml" in n]
        assert len(theme_notes) == 1
        assert "ugly.yaml: `primary` is not a colour" in theme_notes[0]
        assert "not valid YAML" in theme_notes[0]
        assert app.theme == "mine"  # the good user theme loaded and was chosen
        assert app.main.query_one("#topbar").styles.background is not None


async def test_the_chosen_theme_is_remembered(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    app = build_app(tui_settings, state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == DEFAULT_THEME
        app.theme = "coderag-high-contrast"
        await pilot.pause()
    assert read_saved_theme(state) == "coderag-high-contrast"


async def test_an_unknown_theme_falls_back_to_the_default_and_says_so(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings.with_(theme="no-such-theme"))
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        assert app.theme == DEFAULT_THEME
        assert any("'no-such-theme' was not found" in n for n in recorder.notifications())


def backgrounds(app: CoderagApp, widget: Widget, row: int) -> set[str]:
    """The background colours of one line of a widget as the screen draws it."""
    line = app.screen._compositor.render_strips()[widget.region.y + row]
    cropped = line.crop(widget.content_region.x, widget.content_region.right)
    return {
        seg.style.bgcolor.get_truecolor().hex
        for seg in cropped
        if seg.style is not None and seg.style.bgcolor is not None
    }


@pytest.mark.parametrize("theme", ["coderag-light", "coderag-high-contrast"])
async def test_a_theme_chosen_while_a_chunk_is_shown_paints_the_whole_preview(
    tui_settings: Settings, build_app: AppFactory, theme: str
) -> None:
    """The preview's lines took the old theme's background behind their text (and the old
    syntax colours); the rest of the pane took the new one."""
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge the card and retry on timeout")
        await pilot.press("escape", "down")
        await settle(pilot)
        app.theme = theme
        await settle(pilot)
        preview = app.main.query_one(ChunkPreview)
        surface = preview.rich_style.bgcolor
        assert surface is not None
        mark = app.current_theme.accent  # query words keep their mark
        for row in (1, 2, 3, 4):
            assert backgrounds(app, preview, row) - {mark.lower() if mark else ""} == {
                surface.get_truecolor().hex
            }
