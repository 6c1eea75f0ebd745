"""The commands' progress bar: rich's bar on a terminal, one line per finished step otherwise.

Its descriptions are plain text, never markup: they name repository paths and dataset rows,
someone else's text (a file named `[bold]…` or `[link=…]` must show as itself).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from coderag_tui.core.visible import one_line


class StepBar:
    """A transient progress bar titled `title` on stderr when it is a terminal; with
    `lines`, one line per finished step where it is not (e.g. under nohup); else nothing."""

    def __init__(self, title: str, *, lines: bool = False) -> None:
        from rich.console import Console

        self.title = title
        self.console = Console(stderr=True)
        self.live = self.console.is_terminal
        self.lines = lines and not self.live
        self._progress: Any = None
        self._task: Any = None
        self._started = time.perf_counter()

    def __enter__(self) -> StepBar:
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn(f"[bold]{self.title}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}", markup=False),
                console=self.console,
                transient=True,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def show(self, done: int, total: int | None, description: str, *, finished: bool) -> None:
        """Move the bar to `done` of `total`; `finished` steps get their line when lines."""
        text = one_line(description)
        if self._progress is not None:
            self._progress.update(self._task, total=total, completed=done, description=text)
        elif self.lines and finished:
            elapsed = time.perf_counter() - self._started
            print(f"[{done}/{total}] {text} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
