"""The rankings board: one table per retrieval method, side by side, cursors kept in step."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from rich.cells import cell_len
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from coderag_tui.core.records import RANKING_NAMES, Hit, Ranking, RankingName, SearchRun
from coderag_tui.core.visible import one_line, visible
from coderag_tui.tui.widgets.path_label import distinct_parts, least_cells
from coderag_tui.tui.widgets.ranking_table import HEADER, RankingTable, Row, RowShape

TITLES: dict[RankingName, str] = {
    "bm25": "BM25",
    "dense": "Dense",
    "fused": "Fused",  # the run adds what it fused: `Fused · RRF + signals`
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


SECRET_MARK = "⚠ "  # before the label of a chunk with a suspected secret (kept out of prompts)


class HitRows(Sequence[Row]):
    """A ranking's hits as table rows, each formatted when first drawn: a list scrolls to
    its whole depth (1,280 hits at a 128k budget) without formatting rows nobody looks at.

    The keys and the shape (widest rank and score, every label's least cells) are read from
    the hits at once: the table follows the selection by key and lays its rows out by them.
    `parts` says, by path as shown, how many of its last parts tell it apart on screen.
    """

    def __init__(
        self,
        hits: Sequence[Hit],
        score_format: str,
        secrets: Mapping[str, tuple[str, ...]] | None = None,
        parts: Mapping[str, int] | None = None,
    ) -> None:
        self._hits = hits
        self._format = score_format
        self._secrets = secrets or {}
        self._parts = parts or {}
        self._rows: dict[int, Row] = {}
        self.keys = tuple(hit.chunk.key for hit in hits)

    def shape(self) -> RowShape:
        hits, fmt = self._hits, self._format
        if not hits:
            return RowShape.of(())
        ranks = (hits[0].rank, hits[-1].rank)  # in rank order
        scores = [hit.score for hit in hits]
        # Fixed decimals: the widest score is the largest or the most negative.
        widest = (fmt.format(max(scores)), fmt.format(min(scores)))
        mark, secrets, parts = cell_len(SECRET_MARK), self._secrets, self._parts
        endings: dict[str, int] = {}  # cells of each path's distinct ending
        names = []
        for hit in hits:  # 1,280 of them at a 128k budget: a file's ending is measured once
            chunk = hit.chunk
            path = chunk.path
            cells = endings.get(path)
            if cells is None:
                shown = one_line(path)  # the label shows control characters escaped
                cells = endings[path] = least_cells(shown, "", parts.get(shown, 1))
            cells += len(str(chunk.start_line)) + len(str(chunk.end_line)) + 2
            names.append(cells + mark if secrets and chunk.key in secrets else cells)
        names.sort()
        return RowShape(
            max(len(HEADER[0]), *(len(str(r)) for r in ranks)),
            max(len(HEADER[2]), *(len(w) for w in widest)),
            tuple(names),
        )

    def __len__(self) -> int:
        return len(self._hits)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | Sequence[Row]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._hits)
        row = self._rows.get(index)
        if row is None:
            hit = self._hits[index]  # IndexError past the end, as a list
            chunk = hit.chunk
            path = one_line(chunk.path)
            row = self._rows[index] = Row(
                str(hit.rank),
                path,
                f":{chunk.start_line}-{chunk.end_line}",
                self._format.format(hit.score),
                self.keys[index],
                SECRET_MARK if self.keys[index] in self._secrets else "",
                self._parts.get(path, 1),
            )
        return row


def shown_paths(run: SearchRun) -> list[str]:
    """Every path the lists of a run show, as shown (control characters escaped)."""
    paths = {hit.chunk.path for ranking in run.rankings.values() for hit in ranking.hits}
    return [one_line(path) for path in paths]


def ranks_line(
    run: SearchRun | None,
    key: str | None,
    shown: tuple[RankingName, ...],
    pending: Collection[RankingName] = (),
) -> str:
    """`BM25 #3 · Dense #17 · Fused #2 · Rerank #1` for the chunk (— where it is absent,
    `pending` where the list's stage is still opening, e.g. the model embedding)."""
    if run is None or key is None:
        return ""
    parts = []
    for name in shown:
        ranking = run.rankings.get(name)
        if ranking is None or not ranking.available:
            parts.append(f"{SHORT[name]} {'pending' if name in pending else 'off'}")
            continue
        rank = ranking.rank_of(key)
        parts.append(f"{SHORT[name]} #{rank}" if rank is not None else f"{SHORT[name]} —")
    return " · ".join(parts)


class RankingColumn(Vertical):
    """One method's ranking as a table of rank, `path:start-end` and score, or why it is off."""

    ALLOW_MAXIMIZE = True  # zoom shows the whole column, title and all, not the bare table

    @dataclass
    class ChunkHighlighted(Message):
        """The user moved the cursor in this column onto a chunk."""

        column: RankingColumn
        key: str

    def __init__(self, name: RankingName, *, id: str | None = None) -> None:
        super().__init__(id=id or f"column-{name}", classes="ranking-column")
        self.method: RankingName = name
        self.border_title = TITLES[name]
        self._count = ""  # `20 hits`, `top 10 of 100`, `off`
        self._stage_labels: tuple[str, ...] = ()  # what the list is made of, longest first
        self._stage_detail = ""  # how far a stage that is still opening has got

    @property
    def refreshing(self) -> bool:
        """Do the rows wait for a new ranking (they are the last good one, kept on screen)?"""
        return self.has_class("refreshing")

    def set_stage(self, *labels: str, detail: str = "") -> None:
        """Name what the list is made of in the title (`Dense · static MiniLM · first pass`,
        or a shorter label when that does not fit) and how far its next stage has got below
        it (`MiniLM 34%`)."""
        self._stage_labels = tuple(label for label in labels if label)
        self._stage_detail = detail
        self._show_title()
        self._show_subtitle()

    def on_resize(self) -> None:
        self._show_title()
        self._show_subtitle()

    def _fitting(self, *texts: str) -> str:
        """The first text that fits in the border (they come longest first)."""
        room = self.size.width - 6  # corners, the spaces around a title, a margin
        return next((t for t in texts if cell_len(t) <= room), texts[-1])

    def _show_title(self) -> None:
        name = TITLES[self.method]
        title = self._fitting(*(f"{name} · {label}" for label in self._stage_labels), name)
        if str(self.border_title) != title:
            self.border_title = Content(one_line(title))  # model names are plain text
        if self.has_class("compact"):  # no border: the header line names the list
            self.table.set_title(f"{name} …" if self.refreshing else name)

    def set_compact(self, *, compact: bool) -> None:
        """Without a border (two lists a row on a narrow screen) the header names the list."""
        if self.has_class("compact") != compact:
            self.set_class(compact, "compact")
        if compact:
            self._show_title()
        else:
            self.table.set_title("")

    def set_refreshing(self, *, refreshing: bool) -> None:
        """Keep the rows on screen, marked, while a new ranking is on its way."""
        if self.refreshing != refreshing:
            self.set_class(refreshing, "refreshing")
        self._show_title()
        self._show_subtitle()

    def _show_subtitle(self) -> None:
        count = "refreshing…" if self.refreshing and self.keys else self._count
        detail = self._stage_detail
        both = " · ".join(p for p in (detail, count) if p)
        subtitle = self._fitting(both, detail) if detail else both
        if str(self.border_subtitle) != subtitle:
            self.border_subtitle = Content(one_line(subtitle))

    def compose(self) -> ComposeResult:
        yield Static("", classes="unavailable")
        yield RankingTable(id=f"table-{self.method}")

    @property
    def table(self) -> RankingTable:
        return self.query_one(RankingTable)

    @property
    def keys(self) -> Sequence[str]:
        """The chunk keys shown, in rank order."""
        return self.table.keys

    def show(
        self,
        ranking: Ranking | None,
        *,
        empty_hint: str = "",
        secrets: Mapping[str, tuple[str, ...]] | None = None,
        pending: bool = False,
        parts: Mapping[str, int] | None = None,
    ) -> None:
        """Fill the table with every hit of a ranking (it scrolls to the ranking's depth), or
        explain why there is no list; `parts` (see `HitRows`) keeps its labels distinct.

        A `pending` column whose stage is still opening keeps its place (it says so) instead
        of giving its width away as an off column does, so the layout does not jump.
        """
        table = self.table
        if self.refreshing:
            self.set_class(False, "refreshing")  # noqa: FBT003 (Textual's signature)
        # Only touch classes and display when they change: each change restyles the screen.
        if ranking is None:
            table.set_rows([])
            self._set_note(empty_hint, off=False)
            self._count = ""
            self._show_subtitle()
            return
        if not ranking.available:
            table.set_rows([])
            why = ranking.reason or f"{TITLES[self.method]} is unavailable."
            self._set_note(why, off=not pending)
            self._count = "" if pending else "off"
            self._show_subtitle()
            return
        self._set_note("" if ranking.hits else "no matches", off=False)
        rows = HitRows(ranking.hits, SCORE_FORMAT[self.method], secrets, parts)
        table.set_rows(rows, keys=rows.keys, shape=rows.shape())
        self._count = f"{len(rows):,} hits"
        self._show_subtitle()
        table.set_show_cursor(show=bool(rows))

    @property
    def note(self) -> str:
        """Why the list is empty or off ("" while it shows hits)."""
        return str(self.query_one(".unavailable", Static).render())

    def _set_note(self, text: str, *, off: bool) -> None:
        note = self.query_one(".unavailable", Static)
        if str(note.render()) != text:
            note.update(Content(visible(text)))  # reasons name paths and extras: plain text
        if note.display != bool(text):
            note.display = bool(text)
        if self.has_class("off") != off:
            self.set_class(off, "off")

    def follow(self, key: str | None) -> None:
        """Put the cursor on the chunk when this list has it; hide the cursor when it has not.
        Only the list the user is in scrolls to it: another keeps its place (its top, unless
        the user scrolled it) and its header says where the chunk is (`↓#48`)."""
        table = self.table
        row = table.index_of(key)
        if row is None:
            table.set_show_cursor(show=False)
            return
        table.set_show_cursor(show=True)
        table.move_cursor(row, scroll=table.has_focus)

    @on(RankingTable.Highlighted)
    def _row_highlighted(self, event: RankingTable.Highlighted) -> None:
        event.stop()
        self.post_message(self.ChunkHighlighted(self, event.key))


def off_note(off: list[tuple[RankingName, str]]) -> Content:
    """`Dense off: no model — set …` for every column that is off, in one line."""
    parts = []
    for name, reason in off:
        text = one_line(reason)
        if text.lower().startswith(f"{SHORT[name].lower()} "):  # "dense search is off: …"
            parts.append(Content(text))
        else:
            parts.append(Content.assemble((f"{TITLES[name]} off", "bold"), f": {text}"))
    return Content(" · ").join(parts)


# Narrower than this, side by side, the lists sit two a row without borders: four lists at
# 80 columns would leave each label 13 cells, too few for `sansio/blueprints.py` to show.
COMPACT_BELOW = 26


class RankingsBoard(Vertical):
    """The columns BM25 | Dense | Fused | Reranked (the last only while rerank is on); a
    column that is off gives its width to the others and says why in one line below them.
    Where the lists would be narrower than COMPACT_BELOW cells, they sit two a row, each
    named in its header line instead of a border (`compact`)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="columns"):
            for name in RANKING_NAMES:
                yield RankingColumn(name)
        yield Static("", id="board-note")

    def on_mount(self) -> None:
        self.query_one("#board-note", Static).display = False

    def column(self, name: RankingName) -> RankingColumn:
        return self.query_one(f"#column-{name}", RankingColumn)

    def set_rerank_visible(self, *, visible: bool) -> None:
        column = self.column("rerank")
        if column.has_class("hidden") == visible:
            column.set_class(not visible, "hidden")
        self._show_off_note()
        self._lay_out()

    def on_resize(self) -> None:
        self._lay_out()

    @property
    def shown(self) -> list[RankingColumn]:
        """The columns on screen (not hidden, not off)."""
        return [
            col
            for col in self.query(RankingColumn)
            if not (col.has_class("off") or col.has_class("hidden"))
        ]

    def _lay_out(self) -> None:
        shown = self.shown
        width = self.size.width
        compact = len(shown) > 2 and 0 < width < COMPACT_BELOW * len(shown)
        if self.has_class("compact") != compact:
            self.set_class(compact, "compact")
        for col in self.query(RankingColumn):
            col.set_compact(compact=compact)
            # An odd list out takes the whole last row.
            wide = compact and len(shown) % 2 == 1 and col is shown[-1]
            if col.has_class("wide") != wide:
                col.set_class(wide, "wide")

    def show_run(
        self,
        run: SearchRun | None,
        hints: dict[RankingName, str],
        *,
        secrets: Mapping[str, tuple[str, ...]] | None = None,
        pending: Collection[RankingName] = (),
    ) -> None:
        """Fill every column from a search (or show each column's hint before the first one);
        chunks with suspected secrets (kinds by key) are marked; `pending` columns are opening
        (they keep their place). A path is cut to an ending no other path of any list shares,
        so that two files never read alike, wherever a list is scrolled to."""
        parts = distinct_parts(shown_paths(run)) if run is not None else {}
        for name in RANKING_NAMES:
            ranking = None if run is None else run.rankings.get(name)
            column = self.column(name)
            column.show(
                ranking,
                empty_hint=hints.get(name, ""),
                secrets=secrets,
                pending=name in pending,
                parts=parts,
            )
        self._show_off_note()
        self._lay_out()

    def set_refreshing(self, *, refreshing: bool) -> None:
        """Mark every list as the last good one, kept on screen until new rankings arrive."""
        for col in self.query(RankingColumn):
            col.set_refreshing(refreshing=refreshing)

    @property
    def refreshing(self) -> bool:
        return any(col.refreshing for col in self.query(RankingColumn))

    def _show_off_note(self) -> None:
        off = [
            (col.method, col.note)
            for col in self.query(RankingColumn)
            if col.has_class("off") and not col.has_class("hidden")
        ]
        note = self.query_one("#board-note", Static)
        if off:
            note.update(off_note(off), layout=False)
        if note.display != bool(off):
            note.display = bool(off)

    def follow(self, key: str | None) -> None:
        for col in self.query(RankingColumn):
            col.follow(key)

    @property
    def scores_shown(self) -> bool:
        """Does any list on screen show its scores now?"""
        return any(
            not (col.has_class("off") or col.has_class("hidden")) and col.table.scores_shown()
            for col in self.query(RankingColumn)
        )

    def toggle_scores(self) -> bool:
        """Show the scores in every list, or hide them where any shows; whether they show."""
        show = not self.scores_shown
        for col in self.query(RankingColumn):
            col.table.set_scores(scores=show)
        return show
