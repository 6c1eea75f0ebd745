"""`coderag tune`: fit the learned reranker to the repository's own history."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    UserError,
    add_repo_args,
    print_json,
    settings_from_args,
)
from coderag_tui.cli.progress import StepBar

if TYPE_CHECKING:
    from coderag_tui.core.learn.tune import TuneProgress, TuneReport

STAGES = {"history": "reading the history", "search": "searching commit", "fit": "fitting"}


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "tune",
        help="fit the learned reranker to this repository's history",
        description=(
            "Learn how this repository answers questions from its own history: each recent "
            "commit's message is searched at its parent commit, with the files it changed as "
            "the answer. The latest commits are held back; the tuned model is kept beside "
            "the index and used by the learned reranker only when it beats the shipped model "
            "on them (one line says which)."
        ),
    )
    add_repo_args(parser)
    parser.add_argument(
        "--commits",
        type=int,
        default=200,
        metavar="N",
        help="commits to learn from, drawn from the latest --scan (default: 200)",
    )
    parser.add_argument(
        "--scan",
        type=int,
        default=2000,
        metavar="N",
        help="how many of the latest commits to choose from (default: 2000)",
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also learn from searches with dense on (embeds the history: slow on CPU "
        "unless the repository's chunks are embedded already)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the draw of commits (default: 0)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args: argparse.Namespace) -> int:
    from coderag_tui.core.learn.tune import TuneError, TuneOptions, tune

    settings = settings_from_args(argparse.Namespace(path=args.path, index_dir=args.index_dir))
    if args.commits < 2 or args.scan < 1:
        raise UserError("--commits needs N >= 2 and --scan N >= 1.")
    embedder = None
    if args.dense:
        from coderag_tui.core.rank.embedders import resolve_embedder

        choice = resolve_embedder(settings)
        if choice.embedder is None:
            raise UserError(f"--dense needs an embedding model: {choice.reason}")
        embedder = choice.embedder
    cancel = threading.Event()
    options = TuneOptions(pairs=args.commits, scan=args.scan, seed=args.seed)
    try:
        with StepBar("tune") as bar:

            def update(event: TuneProgress) -> None:
                bar.show(
                    event.done,
                    event.total,
                    STAGES.get(event.stage, event.stage),
                    finished=False,
                )

            report = tune(settings, options, embedder=embedder, progress=update, cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        raise
    except TuneError as exc:
        raise UserError(str(exc)) from exc
    if args.json:
        print_json(report.to_json())
    else:
        _print(report)
    return 0


def _print(report: TuneReport) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    table = Table(
        title=f"held back: the latest {report.held_back_commits} commits "
        f"({report.held_back_queries} queries)"
    )
    for column in ("ranking", "file MRR", "Acc@1", "NDCG@10, files once"):
        table.add_column(column, justify="left" if column == "ranking" else "right")
    for name, scores in (
        ("fused (hand-weighted signals)", report.fused),
        ("learned, shipped model", report.shipped),
        ("learned, tuned here", report.tuned),
    ):
        table.add_row(name, f"{scores.mrr:.3f}", f"{scores.acc1:.3f}", f"{scores.file_ndcg10:.3f}")
    console.print(table)
    low, high = report.mrr_interval
    seconds = report.seconds
    console.print(
        Text(
            f"{report.pairs} commits ({report.train_queries} queries learned from); tuned minus "
            f"shipped file MRR, 95% interval [{low:+.3f}, {high:+.3f}]; "
            f"{seconds.get('total', 0):.0f} s (history {seconds.get('history', 0):.0f} s, "
            f"searches {seconds.get('search', 0):.0f} s, fit {seconds.get('fit', 0):.0f} s)"
        )
    )
    console.print(Text(f"coderag tune: {report.line()}", style="bold"))
    console.print(Text(f"model: {report.model_path}"), soft_wrap=True)
    sys.stdout.flush()
