"""One ranking as rows of rank, `path:start-end` and score, drawn line by line.

A DataTable renders every cell through Rich (padding, styles, measuring) after each change;
with two or three columns refilled per search that was most of a search's
screen update (benchmarks/README.md, "Ranking columns without DataTable"). Here a row is three
padded strings turned into segments, and only the rows
in view are drawn (the Line API), so refilling a column costs well under a millisecond.
The rows themselves may be a lazy sequence: a list 1,280 hits deep formats the rows the
user scrolls to, not all of them.

Every row shows its rank, however narrow the list: the rank column is as wide as the ranks in
view. The label is cut as `path_label` says (never to a path another row shares); the score
column shows where every label keeps its distinct path and line range beside it, and one key
(`set_scores`) shows or hides it everywhere. The header says what is out of view: the rows
scrolled past (`↑12`) and, in a list that does not follow the cursor of another, where the
selected chunk is (`↓#48`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from coderag_tui.tui.widgets.path_label import fit_label, least_cells

HEADER = ("#", "chunk", "score")


@dataclass(frozen=True)
class Row:
    """One hit as shown: its rank, its path and line range (`:12-40`), its formatted score;
    `key` names the chunk; `mark` (such as `⚠ `) goes before the label and is never cut;
    `parts`: how many of the path's last parts tell it apart from the other paths on screen."""

    rank: str
    path: str
    lines: str
    score: str
    key: str
    mark: str = ""
    parts: int = 1

    @property
    def label(self) -> str:
        """The whole label, `src/flask/app.py:12-40`."""
        return self.path + self.lines

    @property
    def least(self) -> int:
        """The cells of the label cut as far as it may be while its distinct path and line
        range stay whole, its mark included."""
        return cell_len(self.mark) + least_cells(self.path, self.lines, self.parts)


class RowShape(NamedTuple):
    """What laying rows out needs to know of all of them, without drawing them: the widest
    rank and score, and every row's `Row.least` cells, sorted."""

    rank: int
    score: int
    names: tuple[int, ...]

    @classmethod
    def of(cls, rows: Sequence[Row]) -> RowShape:
        return cls(
            max([len(HEADER[0]), *(len(r.rank) for r in rows)]),
            max([len(HEADER[2]), *(len(r.score) for r in rows)]),
            tuple(sorted(r.least for r in rows)),
        )


def label_cells(width: int, rank_w: int, score_w: int, *, score: bool) -> int:
    """The cells a row of `width` leaves for its label (a space around every column)."""
    return width - 3 - rank_w - (score_w + 1 if score else 0)


def scores_fit(width: int, shape: RowShape) -> bool:
    """Does the score column leave every label that keeps its distinct path and line range
    without it (at the widest rank) whole? A label too long even for a row without scores
    costs the others nothing."""
    bare = bisect_right(shape.names, label_cells(width, shape.rank, shape.score, score=False))
    room = label_cells(width, shape.rank, shape.score, score=True)
    return bare > 0 and bisect_right(shape.names, room) == bare


def row_cells(row: Row, width: int, rank_w: int, score_w: int, *, score: bool) -> str:
    """The row as one line of `width` cells: rank right-aligned, mark and label, and the score
    right-aligned where shown."""
    label_w = max(1, label_cells(width, rank_w, score_w, score=score))
    fitted = fit_label(row.path, row.lines, row.parts, label_w - cell_len(row.mark))
    text = f"{row.rank:>{rank_w}} {set_cell_size(row.mark + fitted, label_w)}"
    if score:
        text = f"{text} {row.score:>{score_w}}"
    return set_cell_size(f" {text} ", max(width, 0))


def header_cells(
    width: int,
    rank_w: int,
    score_w: int,
    notes: Sequence[tuple[str, str]],
    *,
    score: bool,
    name: str = HEADER[1],
) -> str:
    """The header line: `#`, `chunk` (or the list's `name`) and, right-aligned in the label's
    place, what is out of view (each note long or short, as room allows; the name gives way
    first)."""
    label_w = max(1, label_cells(width, rank_w, score_w, score=score))
    text = name
    if notes:
        longest = " ".join(long for long, _ in notes)
        shortest = " ".join(short for _, short in notes)
        text = shortest  # cut at the end, as a last resort
        for choice in (longest, shortest):
            if cell_len(name) + 1 + cell_len(choice) <= label_w:
                text = name + choice.rjust(label_w - cell_len(name))
                break
            if cell_len(choice) <= label_w:
                text = choice.rjust(label_w)
                break
    line = f"{HEADER[0]:>{rank_w}} {set_cell_size(text, label_w)}"
    if score:
        line = f"{line} {HEADER[2]:>{score_w}}"
    return set_cell_size(f" {line} ", max(width, 0))


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
        "ranking-table--title",
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
        & > .ranking-table--title {
            background: $panel;
        }
        &:focus > .ranking-table--title {
            background: $primary;
            color: $background;
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
        self.scores: bool | None = None  # shown, hidden, or (None) where they fit
        self.title = ""  # the list's name in the header, where no border shows it
        self._shape = RowShape.of(())
        self._index: dict[str, int] | None = None  # row by key, made on the first look-up
        self._score_shown: dict[int, bool] = {}  # by width
        self._strips: dict[tuple[int, bool, int, int, bool], Strip] = {}

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
        self._score_shown.clear()
        self._strips.clear()
        self.virtual_size = Size(0, len(rows) + 1)  # rows fit the width: no sideways scroll
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def set_scores(self, *, scores: bool | None) -> None:
        """Show the score column (True), hide it (False), or show it where it fits (None)."""
        if scores != self.scores:
            self.scores = scores
            self._score_shown.clear()
            self._strips.clear()
            self.refresh()

    def set_title(self, title: str) -> None:
        """Name the list in the header line instead of `chunk` ("": `chunk`)."""
        if title != self.title:
            self.title = title
            self.refresh()

    def index_of(self, key: str | None) -> int | None:
        """The row of a chunk, or None when this table does not list it."""
        if key is None:
            return None
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index.get(key)

    def scores_shown(self, width: int | None = None) -> bool:
        """Does the table show its score column at this width (default: its own)?"""
        if width is None:
            width = self.scrollable_content_region.width
        if self.scores is not None:
            return self.scores
        shown = self._score_shown.get(width)
        if shown is None:
            shown = self._score_shown[width] = scores_fit(width, self._shape)
        return shown

    @property
    def rows_in_view(self) -> int:
        """How many rows the table shows at once (the header takes a line)."""
        return max(1, self.scrollable_content_region.height - 1)

    @property
    def top_row(self) -> int:
        """The first row in view (0 at the top of the list)."""
        return round(self.scroll_offset.y)

    def _rank_width(self) -> int:
        """As wide as the ranks in view (the last one in view is the widest), so a list at
        its top spends one cell on its ranks, not three."""
        if not self.rows:
            return len(HEADER[0])
        last = min(len(self.rows) - 1, self.top_row + self.rows_in_view - 1)
        return max(len(HEADER[0]), len(self.rows[last].rank))

    def out_of_view(self) -> list[tuple[str, str]]:
        """What the header says is out of view, each long and short: the rows scrolled past
        (`↑ 12 above`) and the cursor's row when it is outside the view (`↓ #48 selected`)."""
        notes = []
        top = self.top_row
        if top > 0 and self.rows:
            notes.append((f"↑ {top} above", f"↑{top}"))
        if self.show_cursor and self.rows:
            row = min(self.cursor_row, len(self.rows) - 1)
            if not top <= row < top + self.rows_in_view:
                arrow = "↑" if row < top else "↓"
                rank = self.rows[row].rank
                notes.append((f"{arrow} #{rank} selected", f"{arrow}#{rank}"))
        return notes

    def move_cursor(self, row: int, *, scroll: bool = True) -> None:
        """Put the cursor on a row (clamped) and, with `scroll`, scroll it into view; no message
        is sent. A list that only marks the chunk selected in another keeps its place."""
        if not self.rows:
            return
        row = max(0, min(row, len(self.rows) - 1))
        if row != self.cursor_row:
            self.cursor_row = row
            self.refresh()
        if scroll:
            self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        # Line 0 is the header and stays put; rows scroll beneath it.
        row, top, in_view = self.cursor_row, self.top_row, self.rows_in_view
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + in_view:
            self.scroll_to(y=row - in_view + 1, animate=False, immediate=True)

    def set_show_cursor(self, *, show: bool) -> None:
        if show != self.show_cursor:
            self.show_cursor = show
            self.refresh()

    # ------------------------------------------------------------------ input
    def on_focus(self) -> None:
        """The list the user moves to shows the selected chunk it marked out of view."""
        if self.rows and self.show_cursor:
            self._scroll_to_cursor()

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
        self._user_moved(self.cursor_row + direction * self.rows_in_view)

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
        rank_w, score_w = self._rank_width(), self._shape.score
        score = self.scores_shown(width)
        if y == 0:
            style = base + self.get_component_rich_style("ranking-table--header")
            if self.title:  # the header is the list's title bar too
                style += self.get_component_rich_style("ranking-table--title")
            notes = self.out_of_view()
            name = self.title or HEADER[1]
            text = header_cells(width, rank_w, score_w, notes, score=score, name=name)
            return Strip([Segment(text, style)]).crop_extend(0, width, style)
        index = y - 1 + self.top_row
        if index >= len(self.rows):
            return Strip.blank(width, base)
        cursor = self.show_cursor and index == self.cursor_row
        cache_key = (index, cursor, width, rank_w, score)
        strip = self._strips.get(cache_key)
        if strip is None:
            style = base
            if index % 2:
                style += self.get_component_rich_style("ranking-table--even-row")
            if cursor:
                style += self.get_component_rich_style("ranking-table--cursor")
            text = row_cells(self.rows[index], width, rank_w, score_w, score=score)
            strip = Strip([Segment(text, style)]).crop_extend(0, width, style)
            self._strips[cache_key] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # focus and theme change the cursor and stripe colours
