"""Latency: a bar per stage of the last search, a sparkline of recent totals, each stage's
recent times as a line of its own, index statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Sparkline, Static

from coderag_tui.core.records import SearchRun, StageTiming
from coderag_tui.core.visible import one_line
from coderag_tui.tui.widgets.status import chunking_label

if TYPE_CHECKING:
    from coderag_tui.core.engine import Lexical
    from coderag_tui.core.index.indexer import IndexReport

BLOCKS = " ▏▎▍▌▋▊▉█"
HISTORY = 40  # searches remembered by the sparkline
STAGE_HISTORY = 24  # searches each stage's line shows
TICKS = "▁▂▃▄▅▆▇█"


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of eighth-blocks, `fraction` (0..1) of `width` cells long."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    text = "█" * full + (BLOCKS[rest] if rest else "")
    return text.ljust(width)


def meter(fraction: float, width: int, style: str = "$accent") -> Content:
    """A bar on a dim track, so an almost empty bar still shows how much room is left."""
    filled = bar(fraction, width).rstrip()
    track = "░" * (width - len(filled))
    return Content.assemble((filled, style), (track, "$panel-lighten-2"))


def fitting(variants: Sequence[Content], width: int) -> Content:
    """The first (richest) of one line's variants that fits in `width` cells, else the last
    (its widget's ellipsis cuts it)."""
    return next((v for v in variants if v.cell_length <= width), variants[-1])


def format_ms(ms: float) -> str:
    return f"{ms:,.1f} ms" if ms < 1000 else f"{ms / 1000:,.2f} s"


def stage_lines(timings: Sequence[StageTiming], width: int = 18) -> Content:
    """One line per stage: name, bar scaled to the slowest stage, milliseconds."""
    if not timings:
        return Content.from_markup("[dim]no search yet — type a question and press Enter[/]")
    longest = max((t.ms for t in timings), default=0.0) or 1.0
    name_width = max(len(t.stage) for t in timings)
    lines = []
    for t in timings:
        lines.append(
            Content.assemble(
                (t.stage.ljust(name_width), "$text-muted"),
                " ",
                (bar(t.ms / longest, width), "$accent"),
                " ",
                format_ms(t.ms).rjust(10),
            )
        )
    total = sum(t.ms for t in timings)
    lines.append(
        Content.assemble(
            ("total".ljust(name_width), "bold"),
            " " * (width + 2),
            (format_ms(total).rjust(10), "bold"),
        )
    )
    return Content("\n").join(lines)


def spark(values: Sequence[float | None], high: float) -> str:
    """One character per value, its height a share of `high`; a blank where a search had no
    such stage (dense off, no reranker)."""
    top = len(TICKS) - 1
    return "".join(
        " " if v is None else TICKS[min(top, round(top * v / high)) if high > 0 else 0]
        for v in values
    )


def stage_history(runs: Sequence[Mapping[str, float]], width: int = STAGE_HISTORY) -> Content:
    """Each stage's time over the last searches (oldest first), one line a stage, each scaled
    to its own slowest, with its latest time: which stage grew, and when."""
    runs = list(runs)[-width:]
    stages = list(dict.fromkeys(stage for run in runs for stage in run))
    if len(runs) < 2 or not stages:
        return Content("")
    name_width = max(len(stage) for stage in stages)
    lines = [Content.styled(f"stage times, last {len(runs)} searches", "$text-muted")]
    for stage in stages:
        values = [run.get(stage) for run in runs]
        high = max((v for v in values if v is not None), default=0.0)
        last = next((v for v in reversed(values) if v is not None), 0.0)
        lines.append(
            Content.assemble(
                (stage.ljust(name_width), "$text-muted"),
                " ",
                (spark(values, high).ljust(width), "$accent"),
                " ",
                format_ms(last).rjust(10),
            )
        )
    return Content("\n").join(lines)


def index_rows(
    files: int, chunks: int, chunking: str, report: IndexReport | None, elapsed_ms: float
) -> list[tuple[str, str]]:
    """Label/value pairs about the index: served from disk (no report yet) or just checked."""
    if report is None:
        return [
            ("files", f"{files:,} in the index"),
            ("chunks", f"{chunks:,} ({chunking_label(chunking)})"),
            ("opened in", f"{elapsed_ms:,.0f} ms — checking for changed files…"),
        ]
    return [
        ("files", f"{files:,} indexed, {len(report.skipped):,} skipped"),
        ("chunks", f"{chunks:,} ({chunking_label(chunking)})"),
        (
            "last check",
            f"{report.files_indexed:,} read, {report.files_unchanged:,} unchanged, "
            f"{report.files_removed:,} removed",
        ),
        ("index time", f"{elapsed_ms:,.0f} ms"),
    ]


class LatencyPanel(Vertical):
    """Where the time went in the last search, how searches have trended, and the index size."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.totals: list[float] = []
        self.stage_runs: list[dict[str, float]] = []  # per search: each stage's milliseconds
        self._stage_count = -1
        self._notes: tuple[str, ...] = ()
        self._index_rows: list[tuple[str, str]] = []
        self._dense_rows: dict[str, str] = {}  # "first pass", "full model" -> time or why

    def compose(self) -> ComposeResult:
        yield Static(stage_lines(()), id="stage-bars")
        yield Static("recent searches (total ms)", classes="caption")
        yield Sparkline([], id="latency-sparkline")
        yield Static("", id="stage-history")
        yield Static("", id="index-stats")
        yield Static("", id="search-notes")

    def show_run(self, run: SearchRun) -> None:
        self.totals = [*self.totals, run.total_ms][-HISTORY:]
        times: dict[str, float] = {}
        for timing in run.timings:
            times[timing.stage] = times.get(timing.stage, 0.0) + timing.ms
        self.stage_runs = [*self.stage_runs, times][-STAGE_HISTORY:]
        history = stage_history(self.stage_runs)
        chart = self.query_one("#stage-history", Static)
        chart.update(history)
        chart.display = bool(history.plain)  # shown from the second search on
        # A new layout only when the number of stage lines changes (fewer relayouts per search).
        count, self._stage_count = self._stage_count, len(run.timings)
        bars = self.query_one("#stage-bars", Static)
        bars.update(stage_lines(run.timings), layout=count != len(run.timings))
        # One value would fill the whole sparkline; a trend needs two.
        self.query_one(Sparkline).data = list(self.totals) if len(self.totals) > 1 else []
        caption = self.query_one(".caption", Static)
        low, high = min(self.totals), max(self.totals)
        caption.update(
            f"last {len(self.totals)} searches: {format_ms(low)} – {format_ms(high)}", layout=False
        )

    def show_index_stats(self, lines: Sequence[tuple[str, str]]) -> None:
        """Label/value pairs describing the index (files, chunks, chunking, build time …)."""
        self._index_rows = list(lines)
        self._show_stats()

    def show_index(self, lexical: Lexical, chunking: str, elapsed_ms: float) -> None:
        """The index as served from disk (no report yet) or as just checked."""
        rows = index_rows(lexical.files, len(lexical.chunks), chunking, lexical.report, elapsed_ms)
        self.show_index_stats(rows)

    def reset_dense(self) -> None:
        """Other chunks: their dense lists are timed anew."""
        self._dense_rows = {}
        self._show_stats()

    def show_first_pass(self, ms: float | None, note: str) -> None:
        """Time from the index to the static first pass (`note` names it), or why it is off."""
        self._show_dense("first pass", ms, note)

    def show_model(self, ms: float | None, note: str) -> None:
        """Time from the index to the model's full list (`note` names the model), or what the
        model is doing or why it is off."""
        self._show_dense("full model", ms, note)

    def _show_dense(self, label: str, ms: float | None, note: str) -> None:
        note = one_line(note)  # it names a model, which a config file may name
        self._dense_rows[label] = f"{format_ms(ms)} ({note})" if ms is not None else note
        self._show_stats()

    def _show_stats(self) -> None:
        order = ("first pass", "full model")
        dense = [(label, self._dense_rows[label]) for label in order if label in self._dense_rows]
        lines = [*self._index_rows, *dense]
        width = max((len(label) for label, _ in lines), default=0)
        content = Content("\n").join(
            Content.assemble((label.ljust(width), "$text-muted"), "  ", value)
            for label, value in lines
        )
        self.query_one("#index-stats", Static).update(content)

    def show_notes(self, notes: Sequence[str]) -> None:
        """What the last search wants the user to know (e.g. fused = BM25 while dense is off)."""
        if tuple(notes) == self._notes:
            return  # the same notes as the last search: nothing to lay out again
        self._notes = tuple(notes)
        text = "\n".join(f"• {one_line(note)}" for note in notes)
        self.query_one("#search-notes", Static).update(Content.styled(text, "$text-muted"))
