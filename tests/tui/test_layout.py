"""The layout on small terminals: what a user on a laptop or over SSH sees and can reach."""

from __future__ import annotations

from textual.widget import Widget

from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.preview import ChunkPreview
from tests.tui.conftest import AppFactory, column, search, settle, with_dense


def on_screen(widget: Widget, width: int, height: int) -> bool:
    """Shown and wholly inside the terminal."""
    region = widget.region
    return (
        widget.display
        and region.height >= 1
        and region.right <= width
        and region.bottom <= height
        and region.y >= 0
    )


async def test_at_80x24_rankings_preview_and_prompt_line_share_one_screen(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await search(pilot, "charge the card and retry on timeout")
        screen = app.main
        assert screen.has_class("-narrow") and screen.has_class("-short")
        bm25 = column(app, "bm25")
        assert on_screen(bm25, 80, 24) and bm25.table.region.height >= 4  # header + 3 rows
        preview = screen.query_one(ChunkPreview)
        assert on_screen(preview, 80, 24) and preview.region.height >= 4
        assert on_screen(screen.query_one("#prompt-line"), 80, 24)
        assert not screen.query_one("#side").display  # the side panel gave way to the preview
        # `s` swaps the preview for the latency and tuning panel, and back.
        await pilot.press("escape", "s")
        await pilot.pause()
        assert screen.query_one("#side").display and not preview.display
        await pilot.press("s")
        await pilot.pause()
        assert preview.display and not screen.query_one("#side").display


async def test_at_80x24_three_columns_show_ranks_and_whole_distinct_file_names(
    nested_settings: Settings, build_app: AppFactory
) -> None:
    """Flask's `src/flask/sessions.py:257-320` in a third of 80 columns: the folders give way
    (`sessions.py:257-320`), then the end of the line range; the rank stays, and the name is
    never cut, nor the folder that tells `sansio/blueprints.py` from `flask/blueprints.py`."""
    app = with_dense(build_app(nested_settings))
    async with app.run_test(size=(80, 24)) as pilot:
        await search(pilot, "open the session cookie of the blueprint")
        for name in ("bm25", "dense", "fused"):
            table = column(app, name).table
            assert column(app, name).display and table.size.width < 27
            lines = [table.render_line(y).text for y in range(1, table.size.height)]
            assert len(lines) >= 5
            for row, line in zip(table.rows, lines, strict=False):
                ending = "/".join(row.path.split("/")[-row.parts :])
                assert line.startswith(f" {row.rank} "), (name, line)
                label = line.split()[1]
                assert label.split(":")[0].endswith(ending), (name, line)
                if len(ending) < 12:
                    assert f"{ending}{row.lines}" in line, (name, line)


async def test_an_off_column_gives_its_width_away_and_says_why_in_one_line(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(100, 30)) as pilot:
        await search(pilot, "charge card retry")
        assert not column(app, "dense").display
        assert column(app, "bm25").region.width >= 45  # half the width, not a third
        note = app.main.query_one("#board-note")
        assert note.display and note.region.height == 1
        assert "--embed-backend auto" in str(note.render())


async def test_z_zooms_the_focused_column_and_esc_restores_it(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "1", "z")
        await settle(pilot)
        assert app.main.maximized is column(app, "bm25")
        assert column(app, "bm25").region.height > 16
        await pilot.press("escape")
        await pilot.pause()
        assert app.main.maximized is None


async def test_help_at_80x24_fits_the_terminal_and_scrolls_to_every_key(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        body = app.screen.query_one("#help-body")
        assert body.border_title == "coderag — keys"
        assert on_screen(body, 80, 24)
        assert body.max_scroll_y > 0  # more keys than rows: it scrolls instead of cutting off
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y == body.max_scroll_y


async def test_the_prompt_text_gets_the_width_at_80x24(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await search(pilot, "charge the card and retry on timeout")
        await pilot.press("ctrl+o")
        await settle(pilot)
        text = app.screen.query_one("#prompt-text")
        assert text.region.width >= 76 and text.region.height >= 8
        for table in ("#included", "#dropped"):
            assert on_screen(app.screen.query_one(table), 80, 24)


async def test_t_reaches_the_tuning_panel_even_where_the_side_panel_is_hidden(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await search(pilot, "charge card retry")
        await pilot.press("escape", "t")
        await settle(pilot)
        assert app.main.side_shown and app.main.query_one("#side").display
        focused = app.focused
        assert focused is not None and focused.id == "tune-chunking"
        assert on_screen(focused, 80, 24)
        # Esc goes back to the lists, and the preview takes its place again.
        await pilot.press("escape")
        await settle(pilot)
        assert not app.main.side_shown and app.main.query_one(ChunkPreview).display
        assert app.focused is column(app, "fused").table
