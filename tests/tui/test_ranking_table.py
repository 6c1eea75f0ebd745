"""The ranking table on its own: a fixed header, rows that scroll under it, keys and clicks."""

from __future__ import annotations

from rich.style import Style
from textual.app import App, ComposeResult

from coderag_tui.core.records import Chunk
from coderag_tui.tui.widgets.preview import ChunkPreview, chunk_lines
from coderag_tui.tui.widgets.ranking_table import RankingTable, Row


class TableApp(App[None]):
    CSS = "RankingTable { height: 8; width: 50; }"

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str] = []

    def compose(self) -> ComposeResult:
        yield RankingTable(id="table")

    def on_mount(self) -> None:
        rows = [
            Row(str(i), f"pkg/mod_{i}.py", ":1-50", f"{30 - i:.2f}", f"k{i}") for i in range(1, 31)
        ]
        table = self.query_one(RankingTable)
        table.set_rows(rows)
        table.set_show_cursor(show=True)
        table.focus()

    def on_ranking_table_highlighted(self, message: RankingTable.Highlighted) -> None:
        self.highlighted.append(message.key)


def visible_lines(app: TableApp) -> list[str]:
    table = app.query_one(RankingTable)
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_keys_move_the_cursor_and_scroll_rows_under_a_fixed_header() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(RankingTable)
        assert visible_lines(app)[0].split() == ["#", "chunk", "score"]
        await pilot.press("down", "down")
        assert table.cursor_row == 2 and app.highlighted == ["k2", "k3"]
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == 29
        lines = visible_lines(app)
        # The header stayed, and says how many rows are scrolled past.
        assert lines[0].split() == ["#", "chunk", "↑", "23", "above", "score"]
        assert lines[-1].split()[:2] == ["30", "pkg/mod_30.py:1-50"]  # the cursor row is in view
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0 and visible_lines(app)[1].split()[0] == "1"


async def test_a_click_selects_the_row_under_the_mouse_and_move_cursor_stays_quiet() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(RankingTable)
        await pilot.click(RankingTable, offset=(5, 3))  # line 3 = the third row
        assert table.cursor_row == 2 and app.highlighted == ["k3"]
        table.move_cursor(10)  # following another column: no message
        await pilot.pause()
        assert table.cursor_row == 10 and app.highlighted == ["k3"]


def test_preview_lines_are_numbered_from_the_file_line_and_mark_query_words() -> None:
    chunk = Chunk(
        "shop/cart.py", 98, 100, "lines", "python", "def total(cart):\n    x = 1\n    return cart\n"
    )
    mark = Style(bgcolor="red")
    lines = chunk_lines(chunk, ["cart"], dark=True, background="#000000", mark=mark)
    assert [line.plain for line in lines] == [
        " 98 def total(cart):",
        " 99     x = 1",
        "100     return cart",
    ]
    marked = [line.plain[s.start : s.end] for line in lines for s in line.spans if s.style == mark]
    assert marked == ["cart", "cart"]


async def test_the_preview_draws_only_the_lines_in_view() -> None:
    class PreviewApp(App[None]):
        CSS = "ChunkPreview { height: 5; }"

        def compose(self) -> ComposeResult:
            yield ChunkPreview(id="preview")

    text = "".join(f"line_{i} = {i}\n" for i in range(1, 201))
    chunk = Chunk("big.py", 1, 200, "lines", "python", text)
    app = PreviewApp()
    async with app.run_test(size=(40, 10)) as pilot:
        preview = app.query_one(ChunkPreview)
        preview.show(chunk, chunk_lines(chunk, [], dark=True, background="#000000", mark=Style()))
        await pilot.pause()
        assert preview.virtual_size.height == 200
        assert preview.render_line(0).text.startswith("  1 line_1 = 1")
        assert len(preview._strips) <= 10  # not 200
