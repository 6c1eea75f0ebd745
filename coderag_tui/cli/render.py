"""What the CLI shows: rankings, files and timings as Rich tables, and status lines.

`coderag search` prints the rankings side by side; `coderag prompt` and others can reuse the
same tables so every face shows a ranking the same way. Repository text (paths, notices that
quote them) reaches the terminal only through `visible`, as plain text, never as markup.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from coderag_tui.core.echo import echo, echoed_query
from coderag_tui.core.records import Chunk, Hit, RankingName, SearchRun
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.index.indexer import IndexProgress

# One colour per ranking, so a chunk's column is recognisable at a glance.
RANKING_STYLES: dict[str, str] = {
    "bm25": "cyan",
    "dense": "magenta",
    "fused": "green",
    "rerank": "yellow",
}
RANKING_TITLES: dict[str, str] = {
    "bm25": "BM25",
    "dense": "dense",
    "fused": "fused",
    "rerank": "reranked",
}


MAX_QUERY_ECHO_CHARS = 4000  # of the query `--json` repeats (`--from` and `--diff` make long ones)


def say(message: str) -> None:
    """One status line on stderr, `coderag: …`: one line, bounded, secrets masked
    (`core.echo`), since a message may repeat a repository's or an agent's text."""
    print(f"coderag: {echo(message)}", file=sys.stderr)


IndexCallback = Callable[["IndexProgress"], None]
EmbedCallback = Callable[[int, int], None]
QUIET_SECONDS = 2.0  # off a terminal, an embedding run this short prints no progress lines


def index_line(p: IndexProgress) -> str | None:
    """The line a log gets for an index build's progress, or None for a stage that has nothing
    to tell (the build is done: the answer follows)."""
    if p.stage == "done":
        return None
    if p.stage == "walk":
        return "looking for files to index."
    if p.stage == "wait":
        return "waiting for another coderag run to finish with this index."
    if p.stage == "bm25":
        return f"making BM25 ready for {p.chunks:,} chunks."
    if p.stage == "index" and p.files_total and p.files_done == p.files_total and not p.chunks:
        # Every file was checked and none is left to read: a check, not an index.
        return f"checked {p.files_total:,} files for changes."
    total = f"/{p.files_total:,}" if p.files_total else ""
    return f"indexing ({p.stage}): {p.files_done:,}{total} files, {p.chunks:,} chunks so far."


def _bar_line(p: IndexProgress) -> str:
    """The terminal bar's words for an index build's progress: the stage and its counts, or
    for BM25's (no files to count) what it waits for."""
    if p.stage == "bm25":
        return index_line(p) or p.stage
    total = f"/{p.files_total}" if p.files_total else ""
    return f"{p.stage}: {p.files_done}{total} · {p.chunks} chunks"


@contextmanager
def loading_status(*, interactive: bool) -> Iterator[tuple[IndexCallback | None, EmbedCallback]]:
    """Progress on stderr while the index and the dense vectors load: yields the index and
    embedding callbacks to hand `Engine.open`.

    On a terminal, one line: a spinner while indexing, then a bar with the count of windows
    embedded and the time left. Off a terminal (a pipe, a log), a line every few seconds of an
    index build and every tenth of an embedding run that last more than a few seconds, so a
    long wait is never silent.
    """
    import time

    if not interactive:
        started = time.monotonic()
        said = [-1]

        def log(done: int, total: int) -> None:
            elapsed = time.monotonic() - started
            if total <= 0 or (elapsed < QUIET_SECONDS and said[0] < 0):
                return
            tenth = done * 10 // total
            if tenth > said[0]:
                said[0] = tenth
                if not done:
                    say(f"embedding {total:,} windows…")
                    return
                left = elapsed / done * (total - done)
                say(
                    f"embedding {done:,}/{total:,} windows "
                    f"({done / total:.0%}, about {_duration(left)} left)."
                )

        last = [0.0]

        def index_log(p: IndexProgress) -> None:
            """A line every few seconds of an index build that lasts more than a few."""
            if p.stage == "embed":
                log(p.files_done, p.files_total)
                return
            elapsed = time.monotonic() - started
            line = index_line(p)
            if line is None or elapsed < QUIET_SECONDS or elapsed - last[0] < QUIET_SECONDS:
                return
            last[0] = elapsed
            say(line)

        yield index_log, log
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(compact=True, elapsed_when_finished=True),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("indexing…", total=None)

    def index(p: IndexProgress) -> None:
        if p.stage == "embed":
            embed(p.files_done, p.files_total)
            return
        bar.update(task, description=_bar_line(p))

    def embed(done: int, total: int) -> None:
        bar.update(task, description="embedding windows", completed=done, total=total or None)

    with bar:
        yield index, embed


def dense_line(dense: Mapping[str, Any] | None, notes: Sequence[str] = ()) -> str | None:
    """One sentence on what the dense list covers, when it is not the model's full list and
    none of the `notes` said it already."""
    if not dense or not dense.get("available"):
        return None
    if any(" covers " in note or "static first pass" in note for note in notes):
        return None
    share = float(dense.get("coverage", 0.0))
    if dense.get("stage") == "model" and share >= 1.0:
        return None
    return (
        f"dense: {dense.get('model')} ({dense.get('stage')}) covers {share:.0%} of "
        f"{int(dense.get('of', 0)):,} chunks."
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"


def chunk_name(chunk: Chunk) -> str:
    """`path:start-end`, the one way a chunk is named (control characters in the path
    written out)."""
    return f"{one_line(chunk.path)}:{chunk.start_line}-{chunk.end_line}"


def score_text(score: float) -> str:
    """A score with four significant digits (BM25 ~10, cosine ~0.5, RRF ~0.03)."""
    return f"{score:.4g}"


Row = tuple[str, str, str]


@dataclass(frozen=True)
class Column:
    """One ranking as a face shows it: its name, its title and its first rows."""

    name: str
    title: str
    rows: list[Row]


def ranking_columns(run: SearchRun, names: Sequence[RankingName], k: int) -> list[Column]:
    """The chosen rankings that are available: rows of (rank, `path:start-end`, score)."""
    columns: list[Column] = []
    for name in names:
        ranking = run.rankings.get(name)
        if ranking is None or not ranking.available:
            continue
        title = RANKING_TITLES.get(name, name)
        if ranking.by:
            title = f"{title} ({one_line(ranking.by)})"
        rows = [(str(h.rank), chunk_name(h.chunk), score_text(h.score)) for h in ranking.hits[:k]]
        columns.append(Column(name, title, rows))
    return columns


def file_columns(run: SearchRun, names: Sequence[RankingName], k: int) -> list[Column]:
    """The chosen rankings aggregated to files (each file scored by its best chunk): rows of
    (rank, path, best lines)."""
    columns: list[Column] = []
    for name in names:
        if name not in run.rankings or not run.rankings[name].available:
            continue
        rows = [
            (str(f.rank), one_line(f.path), f"{f.best_chunk.start_line}-{f.best_chunk.end_line}")
            for f in run.files(name)[:k]
        ]
        columns.append(Column(name, f"{RANKING_TITLES.get(name, name)} files", rows))
    return columns


def _side_by_side(columns: Sequence[Column], third: str, title: str | None) -> Table:
    table = Table(title=title, show_lines=False, pad_edge=False, expand=False)
    for column in columns:
        style = RANKING_STYLES.get(column.name, "")
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column(column.title, style=style, overflow="fold")
        table.add_column(third, justify="right" if third == "score" else "left", no_wrap=True)
    depth = max((len(c.rows) for c in columns), default=0)
    for i in range(depth):
        row: list[str | Text] = []
        for column in columns:
            rank, label, last = column.rows[i] if i < len(column.rows) else ("", "", "")
            row += [rank, Text(label), last]
        table.add_row(*row)
    return table


def rankings_table(
    run: SearchRun, names: Sequence[RankingName], k: int, *, title: str | None = None
) -> Table:
    """The chosen rankings side by side: for each, a rank, `path:start-end` and score column."""
    return _side_by_side(ranking_columns(run, names, k), "score", title)


def files_table(
    run: SearchRun, names: Sequence[RankingName], k: int, *, title: str | None = None
) -> Table:
    """The chosen rankings aggregated to files (each file scored by its best chunk)."""
    return _side_by_side(file_columns(run, names, k), "best lines", title)


def timing_rows(run: SearchRun) -> list[tuple[str, str]]:
    """(stage, milliseconds) per search stage, then the total."""
    rows = [(t.stage, f"{t.ms:.2f}") for t in run.timings]
    return [*rows, ("total", f"{run.total_ms:.2f}")]


def timings_table(run: SearchRun, *, title: str | None = "stage timings") -> Table:
    """Milliseconds per search stage and the total."""
    table = Table(title=title, pad_edge=False)
    table.add_column("stage")
    table.add_column("ms", justify="right")
    rows = timing_rows(run)
    for stage, ms in rows[:-1]:
        table.add_row(stage, ms)
    stage, ms = rows[-1]
    table.add_row(Text(stage, style="bold"), Text(ms, style="bold"))
    return table


def plain_lines(
    title: str, rows: Sequence[Sequence[str]], *, right: Sequence[int] = (0,)
) -> list[str]:
    """A title, then one line per row with its fields lined up (those numbered in `right`
    aligned right, the rest left): for a pipe or a file, where no width is known, so no line
    is ever wrapped or cut."""
    if not rows:
        return [title]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [title]
    for row in rows:
        fields = [
            field.rjust(width) if i in right else field.ljust(width)
            for i, (field, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(fields).rstrip())
    return lines


def unavailable_lines(run: SearchRun, names: Sequence[RankingName]) -> list[str]:
    """The reason of each chosen ranking that could not be computed (reasons name their stage)."""
    return [
        run.rankings[n].reason for n in names if n in run.rankings and not run.rankings[n].available
    ]


def hit_record(
    run: SearchRun,
    hit: Hit,
    name: RankingName,
    secrets: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """A JSON-ready hit with its rank in every other available ranking (None if absent), the
    kinds of suspected secret in it (`secret`, empty when none; `secrets` by chunk key) and
    why it ranks there (`why`: the fused score and each code signal's part; empty for the
    raw lists)."""
    ranks = run.ranks_of(hit.chunk.key)
    return {
        "rank": hit.rank,
        "path": hit.chunk.path,
        "start_line": hit.chunk.start_line,
        "end_line": hit.chunk.end_line,
        "kind": hit.chunk.kind,
        "score": hit.score,
        "ranks": {other: r for other, r in ranks.items() if other != name},
        "secret": list((secrets or {}).get(hit.chunk.key, ())),
        # fused hits with code signals: each contribution to the score (they sum to it)
        "why": [{"signal": label, "value": value} for label, value in hit.why],
    }


def run_record(
    run: SearchRun,
    names: Sequence[RankingName],
    k: int,
    *,
    files: bool = False,
    secrets: Mapping[str, tuple[str, ...]] | None = None,
    secret_mode: str = "hold",
) -> dict[str, Any]:
    """A JSON-ready SearchRun: rankings (top k hits), optional files, timings and notes;
    `secrets` (kinds by chunk key, see Engine.secret_kinds) marks hits with suspected secrets,
    and the query is repeated with its own masked unless `secret_mode` is allow."""
    rankings: dict[str, Any] = {}
    for name in names:
        ranking = run.rankings.get(name)
        if ranking is None:
            continue
        entry: dict[str, Any] = {
            "available": ranking.available,
            "reason": ranking.reason,
            "hits": [hit_record(run, hit, name, secrets) for hit in ranking.hits[:k]],
        }
        if files and ranking.available:
            entry["files"] = [
                {
                    "rank": f.rank,
                    "path": f.path,
                    "score": f.score,
                    "start_line": f.best_chunk.start_line,
                    "end_line": f.best_chunk.end_line,
                }
                for f in run.files(name)[:k]
            ]
        rankings[name] = entry
    return {
        "query": echoed_query(run.query, secret_mode, MAX_QUERY_ECHO_CHARS),
        "rankings": rankings,
        "timings": [{"stage": t.stage, "ms": round(t.ms, 4)} for t in run.timings],
        "total_ms": round(run.total_ms, 4),
        "notes": list(run.notes),
    }
