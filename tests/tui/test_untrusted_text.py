"""Queries, paths and file contents are someone else's text: the TUI shows them as plain text
(never Textual markup) and shows control characters instead of sending them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from coderag_tui.settings import Settings
from coderag_tui.tui.app import CoderagApp
from coderag_tui.tui.widgets.preview import ChunkPreview
from tests.fixtures.tiny_repo import make_tiny_repo
from tests.tui.conftest import SIZE, AppFactory, Recorder, column, search, settle

PAYLOAD = "# retry payment \x1b]52;c;ZXZpbA==\x07 \x1b[2J \x1b]0;pwned\x07 [b]bold[/b] [/]\n"


def screen_text(app: CoderagApp) -> str:
    """Every character the current screen would send, widget by widget, line by line."""
    lines: list[str] = []
    for widget in app.screen.walk_children(Widget):
        if not widget.display or not widget.size.height:
            continue
        for y in range(widget.size.height):
            strip = widget.render_line(y)
            if isinstance(strip, Strip):
                lines.append("".join(segment.text for segment in strip))
    return "\n".join(lines)


async def test_brackets_and_escapes_are_shown_not_obeyed(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    repo: Path = tui_settings.repo
    slug = repo / "app" / "[slug]"
    slug.mkdir(parents=True)
    (slug / "page.py").write_text(PAYLOAD + "def retry_payment(order):\n    return order\n")
    (repo / "\x1b[31mred.py").write_text("def retry_payment_red():\n    pass  # retry payment\n")
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "retry payment [b] [slug] \x1b[2J")
        run = app.session.last_run
        assert run is not None and run.final.hits
        paths = {h.chunk.path for h in run.final.hits}
        assert "app/[slug]/page.py" in paths and "\x1b[31mred.py" in paths
        # The preview of the hostile file: its escapes written out, its brackets kept.
        app.select(next(h.chunk.key for h in run.final.hits if h.chunk.path.endswith("page.py")))
        await settle(pilot)
        shown = screen_text(app)
        assert "\x1b" not in shown and "\x07" not in shown
        assert "\\x1b[31mred.py" in shown
        labels = [row.label for row in column(app, "bm25").table.rows]
        assert any(label.startswith("app/[slug]/page.py:") for label in labels)
        preview = app.main.query_one(ChunkPreview)
        title = preview.border_title
        assert title is not None
        assert Content.from_markup(str(title)).plain == "app/[slug]/page.py:1-3"
        # Code mode with a location that is markup: one plain sentence, no crash.
        await pilot.press("ctrl+g")
        await search(pilot, "[/]:x", typed=True)
        notes = recorder.notifications()
        assert any("[/]:x" in note and "FILE:LINE" in note for note in notes), notes
        assert app.is_running


async def test_a_hostile_folder_name_reaches_no_terminal_raw(
    tmp_path: Path, index_dir: Path, build_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The folder's name sets the terminal title and writes the clipboard when sent raw.
    name = "pkg\x1b]0;PWNED\x07\x1b]52;c;ZXZpbA==\x07[b]x"
    repo = make_tiny_repo(tmp_path / name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    settings = Settings(
        repo=repo, index_dir=index_dir, embed_backend="none", theme_dir=tmp_path / "themes"
    )
    app = build_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card")
        shown = screen_text(app)
        assert "\x1b" not in shown and "\x07" not in shown
        assert "pkg\\x1b]0;PWNED\\x07" in shown
        assert "[b]x" in shown  # not markup either
        # The suggested save path is a plain file name, whatever the folder is called.
        await pilot.press("ctrl+s")
        await settle(pilot)
        proposed = app.screen.query_one("#save-path", Input).value
        assert Path(proposed).name == "pkg__0_PWNED___52_c_ZXZpbA____b_x-prompt.md"
