"""`coderag index [PATH]`: build or update a repository's index and say what was done.

A progress bar on a terminal, a plain summary otherwise, `--json` for scripts, and a
clean exit 130 on Ctrl-C with everything finished so far kept.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    BACKEND_GROUP,
    BACKEND_SETTINGS,
    DENSE_SETTINGS,
    INDEX_SETTINGS,
    UserError,
    add_repo_args,
    add_setting_flags,
    print_json,
    say_one_time_setup,
    settings_from_args,
)
from coderag_tui.cli.render import index_line, loading_status
from coderag_tui.core.engine import Dense, Engine, Lexical
from coderag_tui.core.index.indexer import IndexInterrupted, IndexProgress, IndexReport
from coderag_tui.core.index.store import StoreError
from coderag_tui.core.visible import one_line, visible
from coderag_tui.settings import Settings

if TYPE_CHECKING:
    from coderag_tui.core.backends.qdrant_push import PushReport


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "index",
        help="build or update the index of a repository",
        description=(
            "Walk the repository (git's file list, else .gitignore rules), skip binary, huge, "
            "minified and vendored files with a reason, chunk the rest and store them. "
            "Re-runs only read files whose size or modification time changed."
        ),
    )
    add_repo_args(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object with the full report (no progress bar)",
    )
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="list every skipped file with its reason"
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also embed every chunk with the dense model (progress and time left on stderr), "
        "so later searches and the TUI rank with it at once; Ctrl-C keeps what is embedded",
    )
    add_setting_flags(parser.add_argument_group("chunking and files"), INDEX_SETTINGS)
    add_setting_flags(parser.add_argument_group(BACKEND_GROUP), BACKEND_SETTINGS)
    add_setting_flags(parser.add_argument_group("dense"), DENSE_SETTINGS)


@contextmanager
def _progress_bar(*, enabled: bool) -> Iterator[Callable[[IndexProgress], None] | None]:
    """A rich progress bar on stderr (files, chunks, MB/s) when it is a terminal, else nothing.
    Its clock counts from the start; the last phase (BM25 and the code signals, no files to
    count) is a bar of its own that pulses and says what it waits for."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
    from rich.text import Text

    started = time.monotonic()

    class Clock(ProgressColumn):
        def render(self, task: Task) -> Text:
            elapsed = timedelta(seconds=int(time.monotonic() - started))
            return Text(str(elapsed), style="progress.elapsed")

    bar = Progress(
        TextColumn("[bold]{task.description:<6}"),
        BarColumn(),
        TextColumn("{task.fields[counts]}", markup=False),
        Clock(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("walk", total=None, counts="")
    last: list[Any] = []  # the last phase's bar, once it started

    def update(p: IndexProgress) -> None:
        if p.stage == "bm25":
            if not last:
                bar.update(task, visible=False)
                counts = index_line(p) or ""
                last.append(bar.add_task("ready", total=None, counts=counts))
            return
        files = f"{p.files_done:,}/{p.files_total:,}" if p.files_total else f"{p.files_done:,}"
        speed = f" · {p.bytes_done / 1e6 / p.elapsed_s:.1f} MB/s" if p.elapsed_s > 0 else ""
        bar.update(
            task,
            description=p.stage,
            completed=p.files_done,
            total=p.files_total or None,
            counts=f"{files} files · {p.chunks:,} chunks{speed}",
        )

    with bar:
        yield update


def _summary(settings: Settings, report: IndexReport, *, verbose: bool) -> list[str]:
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in report.stage_seconds.items())
    source = "git file list" if report.is_git else "folder walk with .gitignore rules"
    lines = [
        f"Indexed {settings.repo_root} ({source}) with chunking {report.spec_key}.",
        f"  files:    {report.files_indexed} indexed, {report.files_unchanged} unchanged, "
        f"{report.files_removed} removed ({report.files_total} candidates, "
        f"{report.files_read} read, {report.bytes_read / 1e6:.1f} MB)",
    ]
    by_reason = report.skipped_by_reason()
    if by_reason:
        lines.append(f"  skipped:  {len(report.skipped)} files")
        lines.extend(f"            {count:>5}  {reason}" for reason, count in by_reason.items())
    else:
        lines.append("  skipped:  none")
    if report.invalid_utf8:
        lines.append(
            f"  invalid UTF-8: {len(report.invalid_utf8)} files (decoded with replacement "
            "characters)"
        )
    lines.append(f"  chunks:   {report.chunks}")
    if report.secrets:
        n = len(report.secrets)
        lines.append(
            f"  secrets:  {n} file{'s' if n != 1 else ''} with suspected secrets, held back "
            f"from prompts ({report.files_scanned} scanned this run)"
        )
    lines.append(f"  elapsed:  {report.elapsed_s:.2f} s (stages, summed over threads: {stages})")
    lines.append(f"  index:    {report.index_path}")
    if verbose and report.skipped:
        lines.append("Skipped files:")
        for skip in report.skipped:
            detail = f" ({skip.detail})" if skip.detail else ""
            lines.append(f"  {one_line(skip.path)}: {skip.reason.value}{one_line(detail)}")
    if verbose and report.secrets:
        lines.append("Files with suspected secrets (held back from prompts):")
        lines.extend(f"  {one_line(path)}: {', '.join(kinds)}" for path, kinds in report.secrets)
    if verbose and report.invalid_utf8:
        lines.append("Files with invalid UTF-8:")
        lines.extend(f"  {one_line(path)}" for path in report.invalid_utf8)
    if report.cancelled:
        lines.append(f"Cancelled with {report.files_left} files left; run again to finish.")
    if report.notice:
        lines.append(f"Note: {report.notice}")
    return lines


def _embed(
    engine: Engine, settings: Settings, lexical: Lexical, *, show_bar: bool
) -> tuple[Dense, dict[str, Any]]:
    """Embed every chunk with the dense model; what the dense list now covers, and why not
    when it is off."""
    import time

    started = time.perf_counter()
    say_one_time_setup(settings)
    with loading_status(interactive=show_bar) as (_, progress):
        dense = engine.open_dense(settings, lexical, progress=progress)
    index = dense.index
    return dense, {
        **dense.describe(),
        "reason": dense.reason,
        "embedded": index.embedded if index is not None else 0,
        "seconds": round(time.perf_counter() - started, 2),
        "notices": list(dense.notices),
    }


def _push(
    engine: Engine, settings: Settings, lexical: Lexical, dense: Dense | None, *, show_bar: bool
) -> PushReport | None:
    """Push the chunks, and the model vectors that exist, to the server's collection."""
    local = settings.with_(backend="local")
    if dense is None:  # without --dense: the vectors already embedded, if the model loads
        dense = engine.open_dense(local, lexical, embed_missing=False)
    if not show_bar:
        return engine.push(settings, lexical, dense)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("[bold]push"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("points"),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("push", total=None)
    with bar:
        return engine.push(
            settings,
            lexical,
            dense,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )


def _dense_summary(dense: dict[str, Any]) -> str:
    if not dense.get("available"):
        return f"  dense:    off — {one_line(str(dense.get('reason', '')))}"
    return (
        f"  dense:    {one_line(str(dense['model']))} covers {dense['coverage']:.0%} of "
        f"{dense['of']:,} chunks ({dense['embedded']:,} windows embedded now, "
        f"{dense['seconds']:.1f} s)"
    )


def run(args: argparse.Namespace) -> int:
    explicit: set[str] = set()
    shared = settings_from_args(args, explicit=explicit)
    # With a server, this machine's index is built as always, then pushed to it.
    settings = shared.with_(backend="local")
    engine = Engine(settings, explicit=frozenset(explicit))
    show_bar = not args.json and sys.stderr.isatty()
    pushed: PushReport | None = None
    try:
        if shared.backend != "local":  # a server that cannot take the push: stop before indexing
            engine.reach_backend(shared)
        started = time.perf_counter()
        with _progress_bar(enabled=show_bar) as progress:
            # BM25 is built too, so the next search or TUI start answers at once. An index
            # that cannot be written is an error here: updating it is all this command does.
            lexical = engine.update_index(settings, progress=progress, stale_ok=False)
        ready_s = time.perf_counter() - started
        stage, dense = (
            _embed(engine, settings, lexical, show_bar=show_bar) if args.dense else (None, None)
        )
        if shared.backend != "local":
            pushed = _push(engine, shared, lexical, stage, show_bar=show_bar)
    except IndexInterrupted as stop:
        kept = stop.report.files_indexed + stop.report.files_unchanged
        print(f"coderag: interrupted; {kept} files kept; run again to finish.", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(
            "coderag: interrupted; the index and every window embedded so far are kept; "
            "run again to finish.",
            file=sys.stderr,
        )
        return 130
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    finally:
        engine.close()
    report = lexical.report
    assert report is not None  # update_index always checks the repository
    # What the engine adds: a wait for another run, a build setting that changed.
    notes = [n for n in lexical.notices if n != report.notice]
    if dense is not None:
        notes += [n for n in dense.pop("notices", ()) if isinstance(n, str)]
    if args.json:
        record = {
            "repo": str(settings.repo_root),
            **report.as_dict(),
            "ready_s": round(ready_s, 4),
            "notes": notes,
        }
        if dense is not None:
            record["dense"] = dense
        if pushed is not None:
            record["push"] = {**asdict(pushed), "unchanged": pushed.unchanged}
        print_json(record)
    else:
        lines = _summary(settings, report, verbose=args.verbose)
        at = next(i for i, line in enumerate(lines) if line.startswith("  elapsed:"))
        lines.insert(at + 1, f"  ready:    {ready_s:.2f} s to a searchable index (BM25 included)")
        if dense is not None:
            lines.append(_dense_summary(dense))
        if pushed is not None:
            lines.append(f"  server:   {pushed.summary()}")
            notes += list(pushed.notes)
        lines += [f"Note: {note}" for note in notes]
        print(visible("\n".join(lines)))
    return 0
