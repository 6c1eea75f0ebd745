"""One ranking as rows of rank, `path:start-end` and score, drawn line by line.

A DataTable renders every cell through Rich (padding, styles, measuring) after each change;
with two or three columns refilled per search that was most of a search's
screen update (benchmarks/README.md, "Ranking columns without DataTable"). Here a row is three
padded strings turned into segments, and only the rows
in view are drawn (the Line API), so refilling a column costs well under a millisecond.
The rows themselves may be a lazy sequence: a list 1,280 hits deep formats the rows the
user scrolls to, not all of them.

In a narrow column the label keeps its file name and line range whole (`…/sessions.py:
257-320`): the folders are shortened first, then the score column gives way, then the rank.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, get_character_cell_size, set_cell_size
from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

HEADER = ("#", "chunk", "score")


@dataclass(frozen=True)
class Row:
    """One hit as shown: its rank, its label and its formatted score; `key` names the chunk;
    `mark` (such as `⚠ `) goes before the label and is never shortened away."""

    rank: str
    label: str
    score: str
    key: str
    mark: str = ""


def _start_cells(text: str, cells: int) -> str:
    """The longest start of `text` that fits in `cells` terminal cells."""
    used = 0
    for i, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return text[:i]
    return text


def _end_cells(text: str, cells: int) -> str:
    """The longest end of `text` that fits in `cells` terminal cells."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += get_character_cell_size(text[i])
        if used > cells:
            return text[i + 1 :]
    return text


def fit_middle(label: str, width: int) -> str:
    """Shorten a `dir/name.py:12-40` label to `width` cells by eliding the middle.

    The file name and line range tell chunks apart, so they go last: first the directory is
    shortened (`src/…/sessions.py:257-320`), then the name (`sess…ns.py:257-320`); only when
    not even the line range fits is the label cut from the left.
    """
    if width <= 0:
        return ""
    if cell_len(label) <= width:
        return label
    if width == 1:
        return "…"
    slash = label.rfind("/")
    head, tail = label[: slash + 1], label[slash + 1 :]
    room = width - cell_len(tail) - 2  # "…/" between the directory's start and the name
    if head and room >= 0:
        start = _start_cells(head[:-1], room)
        cut = start.rfind("/")  # prefer whole directory names: `src/…/`, not `src/req…/`
        if cut >= 0:
            start = start[: cut + 1]
        elif cell_len(start) < 3:
            start = ""  # `c…/` says nothing that `…/` does not
        elif cell_len(start) < room:
            start += "/"
        if start.endswith("/"):
            return f"{start}…/{tail}"
        return f"{start}…{label[slash:]}" if start else f"…/{tail}"
    colon = tail.rfind(":")
    name, lines = (tail[:colon], tail[colon:]) if colon > 0 else (tail, "")
    room = width - cell_len(lines) - 1
    if room >= 2:
        front = _start_cells(name, (room + 1) // 2)
        back = _end_cells(name, room - cell_len(front))
        return f"{front}…{back}{lines}"
    return "…" + _end_cells(label, width - 1)


def whole_name_cells(label: str) -> int:
    """The fewest cells a `dir/name.py:12-40` label fits in with its file name and line range
    whole: `…/name.py:12-40` (just `name.py:12-40` without a folder)."""
    slash = label.rfind("/")
    tail = label[slash + 1 :]
    cells = len(tail) if tail.isascii() else cell_len(tail)
    return cells + 2 if slash >= 0 else cells


class RowShape(NamedTuple):
    """What laying rows out needs to know of all of them, without drawing them: the widest
    rank and score, and every label's `whole_name_cells` (mark included), sorted."""

    rank: int
    score: int
    names: tuple[int, ...]

    @classmethod
    def of(cls, rows: Sequence[Row]) -> RowShape:
        return cls(
            max([len(HEADER[0]), *(len(r.rank) for r in rows)]),
            max([len(HEADER[2]), *(len(r.score) for r in rows)]),
            tuple(sorted(cell_len(r.mark) + whole_name_cells(r.label) for r in rows)),
        )


class RowLayout(NamedTuple):
    """Which of the rank and score columns a table shows beside the labels."""

    rank: bool = True
    score: bool = True


FULL = RowLayout()
# Richest first: the score gives way before the rank.
LAYOUTS = (FULL, RowLayout(rank=True, score=False), RowLayout(rank=False, score=False))


def label_cells(width: int, rank_w: int, score_w: int, layout: RowLayout = FULL) -> int:
    """The cells a row of `width` leaves for its label (a space around every column)."""
    used = 2 + (rank_w + 1 if layout.rank else 0) + (score_w + 1 if layout.score else 0)
    return width - used


def choose_layout(width: int, shape: RowShape) -> RowLayout:
    """The richest layout in which every label that can keep its file name whole at this
    width does: the score gives way first, then the rank. A name too long even for a bare
    row is shortened in its middle and costs the others nothing; when no name fits at all,
    the names get the whole row."""
    bare = bisect_right(shape.names, label_cells(width, shape.rank, shape.score, LAYOUTS[-1]))
    if bare == 0 and shape.names:
        return LAYOUTS[-1]
    for layout in LAYOUTS:
        room = label_cells(width, shape.rank, shape.score, layout)
        if bisect_right(shape.names, room) == bare:
            return layout
    return LAYOUTS[-1]


def row_cells(
    row: tuple[str, str, str],
    width: int,
    rank_w: int,
    score_w: int,
    mark: str = "",
    layout: RowLayout = FULL,
) -> str:
    """The row as one line of `width` cells: rank right-aligned, mark and label, score
    right-aligned (rank and score only where the layout keeps them)."""
    label_w = max(1, label_cells(width, rank_w, score_w, layout))
    rank, label, score = row
    fitted = fit_middle(label, label_w - cell_len(mark))
    text = set_cell_size(mark + fitted, label_w)
    if layout.rank:
        text = f"{rank:>{rank_w}} {text}"
    if layout.score:
        text = f"{text} {score:>{score_w}}"
    return set_cell_size(f" {text} ", max(width, 0))


class RankingTable(ScrollView, can_focus=True):
    """A header line and one line per hit, with a cursor row the user moves with keys or mouse."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "ranking-table--header",
        "ranking-table--cursor",
        "ranking-table--even-row",
    }
    DEFAULT_CSS = """
    RankingTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        & > .ranking-table--header {
            color: $primary;
            text-style: bold;
        }
        & > .ranking-table--even-row {
            background: $surface-lighten-1 40%;
        }
        & > .ranking-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
        }
        &:focus > .ranking-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """

    @dataclass
    class Highlighted(Message):
        """The user moved the cursor onto a row (keys or mouse); `key` names its chunk."""

        table: RankingTable
        key: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Sequence[Row] = ()
        self.keys: Sequence[str] = ()  # the rows' chunk keys, in order
        self.cursor_row = 0
        self.show_cursor = False
        self._shape = RowShape.of(())
        self._index: dict[str, int] | None = None  # row by key, made on the first look-up
        self._layouts: dict[int, RowLayout] = {}  # by width
        self._strips: dict[tuple[int, bool, int], Strip] = {}

    # ------------------------------------------------------------------ data
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def set_rows(
        self,
        rows: Sequence[Row],
        *,
        keys: Sequence[str] | None = None,
        shape: RowShape | None = None,
    ) -> None:
        """Replace every row; the cursor goes back to the first. A lazy `rows` sequence
        comes with its `keys` and `shape`, so that no row is formatted before it is drawn."""
        self.rows = rows
        self.keys = keys if keys is not None else [r.key for r in rows]
        self.cursor_row = 0
        self._shape = shape if shape is not None else RowShape.of(rows)
        self._index = None
        self._layouts.clear()
        self._strips.clear()
        self.virtual_size = Size(0, len(rows) + 1)  # rows fit the width: no sideways scroll
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def index_of(self, key: str | None) -> int | None:
        """The row of a chunk, or None when this table does not list it."""
        if key is None:
            return None
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index.get(key)

    def _row_layout(self, width: int) -> RowLayout:
        """Which of rank and score the rows show at this width (kept per width)."""
        layout = self._layouts.get(width)
        if layout is None:
            layout = self._layouts[width] = choose_layout(width, self._shape)
        return layout

    def move_cursor(self, row: int) -> None:
        """Put the cursor on a row (clamped) and scroll it into view; no message is sent."""
        if not self.rows:
            return
        row = max(0, min(row, len(self.rows) - 1))
        if row != self.cursor_row:
            self.cursor_row = row
            self.refresh()
        # Line 0 is the header and stays put; rows scroll beneath it.
        in_view = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + in_view:
            self.scroll_to(y=row - in_view + 1, animate=False, immediate=True)

    def set_show_cursor(self, *, show: bool) -> None:
        if show != self.show_cursor:
            self.show_cursor = show
            self.refresh()

    # ------------------------------------------------------------------ input
    def _user_moved(self, row: int) -> None:
        if not self.rows:
            return
        self.show_cursor = True
        self.move_cursor(row)
        self.refresh()
        self.post_message(self.Highlighted(self, self.keys[self.cursor_row]))

    def action_cursor(self, step: int) -> None:
        self._user_moved(self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - 1)
        self._user_moved(self.cursor_row + direction * page)

    def action_jump(self, row: int) -> None:
        self._user_moved(row if row >= 0 else len(self.rows) - 1)

    def on_click(self, event: events.Click) -> None:
        line = event.y + self.scroll_offset.y
        if line >= 1 and line - 1 < len(self.rows):
            self.focus()
            self._user_moved(line - 1)

    def on_resize(self) -> None:
        self._strips.clear()
        self.virtual_size = Size(0, len(self.rows) + 1)

    # ------------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        rank_w, score_w = self._shape.rank, self._shape.score
        layout = self._row_layout(width)
        if y == 0:
            header = self.get_component_rich_style("ranking-table--header")
            style = base + header
            text = row_cells(HEADER, width, rank_w, score_w, layout=layout)
            return Strip([Segment(text, style)]).crop_extend(0, width, style)
        index = y - 1 + self.scroll_offset.y
        if index >= len(self.rows):
            return Strip.blank(width, base)
        cursor = self.show_cursor and index == self.cursor_row
        cache_key = (index, cursor, width)
        strip = self._strips.get(cache_key)
        if strip is None:
            style = base
            if index % 2:
                style += self.get_component_rich_style("ranking-table--even-row")
            if cursor:
                style += self.get_component_rich_style("ranking-table--cursor")
            row = self.rows[index]
            cells = (row.rank, row.label, row.score)
            text = row_cells(cells, width, rank_w, score_w, row.mark, layout)
            strip = Strip([Segment(text, style)]).crop_extend(0, width, style)
            self._strips[cache_key] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # focus and theme change the cursor and stripe colours
