"""The rankings board: one table per retrieval method, side by side, cursors kept in step."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from coderag_tui.core.models import RANKING_NAMES, Ranking, RankingName, SearchRun

TITLES: dict[RankingName, str] = {
    "bm25": "BM25",
    "dense": "Dense",
    "fused": "Fused (RRF)",
    "rerank": "Reranked",
}
SHORT: dict[RankingName, str] = {
    "bm25": "BM25",
    "dense": "Dense",
    "fused": "Fused",
    "rerank": "Rerank",
}
SCORE_FORMAT: dict[RankingName, str] = {
    "bm25": "{:.2f}",
    "dense": "{:.3f}",
    "fused": "{:.4f}",
    "rerank": "{:.3f}",
}


def fit_left(text: str, width: int) -> str:
    """Shorten text from the left with an ellipsis, so the file name and lines stay visible."""
    if width <= 1 or len(text) <= width:
        return text
    return "…" + text[-(width - 1) :]


def ranks_line(run: SearchRun | None, key: str | None, shown: tuple[RankingName, ...]) -> str:
    """`BM25 #3 · Dense #17 · Fused #2 · Rerank #1` for the chunk (— where it is absent)."""
    if run is None or key is None:
        return ""
    parts = []
    for name in shown:
        ranking = run.rankings.get(name)
        if ranking is None or not ranking.available:
            parts.append(f"{SHORT[name]} off")
            continue
        rank = ranking.rank_of(key)
        parts.append(f"{SHORT[name]} #{rank}" if rank is not None else f"{SHORT[name]} —")
    return " · ".join(parts)


class RankingColumn(Vertical):
    """One method's ranking as a table of rank, `path:start-end` and score, or why it is off."""

    @dataclass
    class ChunkHighlighted(Message):
        """The user moved the cursor in this column onto a chunk."""

        column: RankingColumn
        key: str

    def __init__(self, name: RankingName, *, id: str | None = None) -> None:
        super().__init__(id=id or f"column-{name}", classes="ranking-column")
        self.method: RankingName = name
        self.keys: list[str] = []
        self._ranking: Ranking | None = None
        self._rows = 20
        self.border_title = TITLES[name]

    def compose(self) -> ComposeResult:
        table: DataTable[str | Text] = DataTable(
            id=f"table-{self.method}", cursor_type="row", zebra_stripes=True
        )
        yield Static("", classes="unavailable")
        yield table

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one(DataTable)

    def on_mount(self) -> None:
        self.table.add_columns("#", "chunk", "score")
        self.table.show_cursor = False

    def show(self, ranking: Ranking | None, *, empty_hint: str = "", rows: int = 20) -> None:
        """Fill the table with a ranking's top `rows` hits, or explain why there is no list."""
        self._ranking = ranking
        self._rows = rows
        table = self.table
        table.clear()
        self.keys = []
        # Only touch classes and display when they change: each change restyles the screen.
        if ranking is None:
            self._set_note(empty_hint, off=False)
            self.border_subtitle = ""
            return
        if not ranking.available:
            self._set_note(ranking.reason or f"{TITLES[self.method]} is unavailable.", off=True)
            self.border_subtitle = "off"
            return
        self._set_note("" if ranking.hits else "no matches", off=False)
        width = max(12, table.size.width - 18) if table.size.width else 40
        fmt = SCORE_FORMAT[self.method]
        for hit in ranking.hits[:rows]:
            chunk = hit.chunk
            label = fit_left(f"{chunk.path}:{chunk.start_line}-{chunk.end_line}", width)
            table.add_row(
                Text(str(hit.rank), justify="right"),
                label,
                Text(fmt.format(hit.score), justify="right"),
                key=chunk.key,
            )
            self.keys.append(chunk.key)
        shown = min(rows, len(ranking.hits))
        self.border_subtitle = (
            f"{len(ranking.hits)} hits"
            if shown == len(ranking.hits)
            else f"top {shown} of {len(ranking.hits)}"
        )
        table.show_cursor = bool(self.keys)

    def _set_note(self, text: str, *, off: bool) -> None:
        note = self.query_one(".unavailable", Static)
        if str(note.render()) != text:
            note.update(text)
        if note.display != bool(text):
            note.display = bool(text)
        if self.has_class("off") != off:
            self.set_class(off, "off")

    def follow(self, key: str | None) -> None:
        """Put the cursor on the chunk when this list has it; hide the cursor when it has not."""
        table = self.table
        if key is None or key not in self.keys:
            table.show_cursor = False
            return
        table.show_cursor = True
        row = self.keys.index(key)
        if table.cursor_row != row:
            table.move_cursor(row=row, animate=False)

    def on_resize(self) -> None:
        if self._ranking is not None and self._ranking.hits:
            current = self.keys[self.table.cursor_row] if self.keys else None
            self.show(self._ranking, rows=self._rows)
            self.follow(current)

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # Only the focused table speaks for the user; the others are just following it.
        if not event.data_table.has_focus or event.row_key.value is None:
            return
        self.post_message(self.ChunkHighlighted(self, event.row_key.value))


class RankingsBoard(Horizontal):
    """The columns BM25 | Dense | Fused | Reranked (the last only while rerank is on)."""

    def compose(self) -> ComposeResult:
        for name in RANKING_NAMES:
            yield RankingColumn(name)

    def column(self, name: RankingName) -> RankingColumn:
        return self.query_one(f"#column-{name}", RankingColumn)

    def set_rerank_visible(self, visible: bool) -> None:
        self.column("rerank").display = visible

    def show_run(
        self, run: SearchRun | None, hints: dict[RankingName, str], *, rows: int = 20
    ) -> None:
        """Fill every column from a search (or show each column's hint before the first one)."""
        for name in RANKING_NAMES:
            ranking = None if run is None else run.rankings.get(name)
            self.column(name).show(ranking, empty_hint=hints.get(name, ""), rows=rows)

    def follow(self, key: str | None) -> None:
        for col in self.query(RankingColumn):
            col.follow(key)
