"""A table of chunks for the prompt view: its path column fits the width the others leave."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.text import Text
from textual.widgets import DataTable

from coderag_tui.tui.widgets.path_label import distinct_parts, fit_label, least_cells, split_label

CELL_PADDING = 2  # a DataTable pads every cell with a space on each side
MIN_TEXT = 8  # a reason cut shorter says nothing (`over b…`): the column leaves instead


class ChunkRow(NamedTuple):
    """One row of a prompt-view table: its chunk key and its cells, left to right."""

    key: str
    cells: tuple[str, ...]


class ChunkTable(DataTable[Text]):
    """A table of chunks whose `path` column takes the width the others leave, its labels cut
    to a path ending no other path on screen shares (`src/…/sansio/app.py:1-64`, see
    `path_label`); a `text` column (why a chunk was dropped) gives way before the file name
    does, and leaves where it would say nothing. Every column fits the panel: the tokens
    column is never cut, as it was when a long path pushed it past the border.
    """

    def __init__(
        self,
        headers: tuple[str, ...],
        *,
        path: int,
        right: Sequence[int] = (),
        text: int = -1,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._headers = headers
        self._path = path
        self._right = frozenset(right)  # right-aligned columns (ranks, tokens)
        self._text = text
        self._rows: list[ChunkRow] = []
        self._parts: dict[str, int] = {}
        self._width = -1  # the width the rows were laid out for

    def show(self, rows: list[ChunkRow], parts: dict[str, int] | None = None) -> None:
        """Replace the rows (the cursor stays on its row number); `parts` (see
        `path_label.distinct_parts`) by path, over every path on screen (default: these rows')."""
        self._rows = rows
        if parts is None:
            parts = distinct_parts(self.paths())
        self._parts = parts
        self._lay_out()

    def paths(self) -> list[str]:
        """The paths of the rows' labels."""
        return [split_label(row.cells[self._path])[0] for row in self._rows]

    def _least(self, label: str) -> int:
        path, lines = split_label(label)
        return least_cells(path, lines, self._parts.get(path, 1))

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._width:
            self._lay_out()

    def column_widths(self, width: int) -> list[int]:
        """Every column's cells at this width (0: left out): the path and text columns share
        what the others leave; the file names first, whole where they can be."""
        natural = [
            max([cell_len(h), *(cell_len(r.cells[i]) for r in self._rows)])
            for i, h in enumerate(self._headers)
        ]
        flexible = {self._path, self._text} - {-1}
        fixed = sum(natural[i] for i in range(len(natural)) if i not in flexible)
        # An empty column (the pin mark when nothing is pinned) is left out, padding and all.
        shown = sum(1 for i, w in enumerate(natural) if w or i in flexible)
        room = width - fixed - CELL_PADDING * shown
        widths = list(natural)
        names = max((self._least(r.cells[self._path]) for r in self._rows), default=0)
        header = cell_len(self._headers[self._path])
        if self._text < 0:
            widths[self._path] = max(room, header)
            return widths
        # The text column keeps its natural width while the names fit whole beside it, and
        # leaves the table (0: not shown) before it would be cut to a few letters.
        wanted = min(natural[self._path], max(names, header))
        text = min(natural[self._text], room - wanted)
        if text < min(natural[self._text], MIN_TEXT):
            text = 0
            room += CELL_PADDING
        widths[self._text] = text
        widths[self._path] = max(room - text, header)
        return widths

    def _lay_out(self) -> None:
        width = self.scrollable_content_region.width
        self._width = width
        row = self.cursor_row
        self.clear(columns=True)
        if width <= 0:
            return  # laid out at the first resize
        widths = self.column_widths(width)
        shown = [i for i, w in enumerate(widths) if w or i == self._path]
        justify: list[JustifyMethod] = [
            "right" if i in self._right else "left" for i in range(len(widths))
        ]
        for i in shown:
            self.add_column(Text(self._headers[i], justify=justify[i]), width=widths[i], key=str(i))
        for chunk_row in self._rows:
            cells = []
            for i in shown:
                cell = chunk_row.cells[i]
                if i == self._path:
                    path, lines = split_label(cell)
                    cell = fit_label(path, lines, self._parts.get(path, 1), widths[i])
                text = Text(cell, justify=justify[i])
                text.truncate(widths[i], overflow="ellipsis")
                cells.append(text)
            self.add_row(*cells, key=chunk_row.key)
        if self._rows:
            self.move_cursor(row=min(row, len(self._rows) - 1), animate=False)
