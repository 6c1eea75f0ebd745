"""`coderag eval --completion N` and `--plot`: the task built from the repository, what it
holds, and the run's curves drawn in the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from coderag_tui.cli.common import UserError
from coderag_tui.core.visible import one_line, visible

if TYPE_CHECKING:
    from rich.console import Console

    from coderag_tui.core.eval.completion import CompletionTask
    from coderag_tui.core.eval.evaluation import EvalReport, Grid
    from coderag_tui.settings import Settings


def completion_task(
    args: argparse.Namespace, settings: Settings, grid: Grid
) -> tuple[Settings, CompletionTask]:
    """The rows of `--completion N` and the settings to search them with: a bare repository
    (a mirror) is read at its HEAD, its candidate files (`--include`, `--exclude-tests`)
    extracted once into the tree cache."""
    from coderag_tui.core.eval.completion import completion_task as build
    from coderag_tui.core.eval.datasets import DatasetError, materialise_tree

    n = int(args.completion)
    if n < 1:
        raise UserError("--completion needs N >= 1.")
    root = settings.repo_root
    if (root / "HEAD").is_file() and (root / "objects").is_dir() and not (root / ".git").exists():
        label = root.parent.name if root.name in ("repo", ".git") else root.name
        try:
            tree = materialise_tree(
                root, "HEAD", cache_dir=args.tree_cache, label=label, candidates=grid.candidates
            )
        except DatasetError as exc:
            raise UserError(str(exc)) from exc
        settings = settings.with_(repo=tree)
    task = build(settings, n, seed=args.seed, candidates=grid.candidates)
    if not task.rows:
        raise UserError(
            f"no line of {settings.repo_root} uses a class or function defined in another of "
            "its files: --completion needs a repository whose files use each other."
        )
    return settings, task


def print_task(task: CompletionTask, console: Console | None = None) -> None:
    """The task's size and its first row, repository text shown as text."""
    from rich.console import Console
    from rich.text import Text

    console = console or Console()
    row = task.rows[0]
    console.print(
        Text(
            f"completion task on {visible(task.repo)}: {len(task.rows)} rows (seed {task.seed}) "
            f"of {task.available} target lines in {task.files} files; query = the "
            f"{task.query_lines} lines before the target"
        )
    )
    console.print(
        Text(
            f"sample row {one_line(row.id)}: uses {row.kind} {one_line(row.name)}, defined in "
            f"{one_line(row.gold)}:{row.gold_line}"
        )
    )
    last = row.query.splitlines()[-3:]
    for line in last:
        console.print(Text("    " + one_line(line)), soft_wrap=True)


_MARKS = "o+x*#@%&=~"


def print_plots(report: EvalReport, width: int | None = None) -> None:
    """Each figure of the run as a terminal line chart (plotext), chunkings along x."""
    import plotext as plt

    from coderag_tui.core.eval.figures import figures

    drawn = figures(report)
    if not drawn:
        print("coderag: nothing to plot (no row was scored).", file=sys.stderr)
        return
    colour = sys.stdout.isatty()
    for figure in drawn:
        if len(figure.xs) < 2:
            continue  # one chunking: a curve is a point, the table says it
        plt.clear_figure()
        plt.theme("pro" if colour else "clear")
        plt.plotsize(width or 100, 20)
        for i, curve in enumerate(figure.curves):
            xs = [figure.xs.index(p.x) + 1 for p in curve.points]
            ys = [100 * p.value for p in curve.points]
            # a letter per curve: told apart without colour too (a file, a pipe)
            plt.plot(xs, ys, label=visible(curve.name), marker=_MARKS[i % len(_MARKS)])
        plt.xticks(list(range(1, len(figure.xs) + 1)), [visible(x) for x in figure.xs])
        plt.ylim(0, 100)
        plt.title(visible(figure.title) + " (%)")
        plt.xlabel("chunking")
        chart = plt.build()
        print(chart if colour else plt.uncolorize(chart))
