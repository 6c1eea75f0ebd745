"""`coderag eval`: measure retrieval on an issue-to-file dataset or on the repository's history."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    UserError,
    add_dense_stripes_arg,
    add_repo_args,
    print_json,
    settings_from_args,
)
from coderag_tui.core.records import RANKING_NAMES

if TYPE_CHECKING:
    from rich.console import Console

    from coderag_tui.core.eval.evaluation import EvalProgress, EvalReport

DEFAULT_MODES = "bm25,dense,fused"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "eval",
        help="measure retrieval (Acc@k, recall, MRR, NDCG) on a dataset or git history",
        description=(
            "Evaluate retrieval on a JSONL dataset (id, query, gold_files, optional repo and "
            "base_commit) or on the repository's own history, over a grid of modes, chunkings "
            "and tokenizers, and print one table row per configuration."
        ),
    )
    parser.add_argument("dataset", nargs="?", type=Path, metavar="DATASET.jsonl",
                        help="rows with id/instance_id, query/problem_statement, gold_files")
    parser.add_argument("--from-git-history", type=int, metavar="N", default=None,
                        help="use the last N non-merge commits touching 1-5 source files instead")
    parser.add_argument("--save-dataset", type=Path, metavar="FILE", default=None,
                        help="also write the rows built from git history to FILE (JSONL)")
    parser.add_argument("--repo", dest="path", default=None, metavar="PATH",
                        help="the repository for rows without `repo` (default: current folder)")
    parser.add_argument("--repos", type=Path, metavar="DIR", default=None,
                        help="folder holding the repositories named by rows (owner/name, name "
                             "or owner+name; bare or checkout)")
    parser.add_argument("--modes", default=DEFAULT_MODES,
                        help=f"comma list of {','.join(RANKING_NAMES)},fused-files (RRF of the "
                             f"BM25 and dense file rankings) (default: {DEFAULT_MODES})")
    parser.add_argument("--chunking", dest="chunkings", default=None,
                        help="comma list, e.g. lines:32,lines:64,ast,file (default: the settings')")
    parser.add_argument("--tokenizer", dest="tokenizers", default=None,
                        help="comma list of default,split,path,split+path (default: the settings')")
    parser.add_argument("--k", dest="cutoff", type=int, default=10, metavar="K",
                        help="cut-off for recall@K (Acc@1/5/10 are always shown)")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="evaluate only the first N rows")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="only rank files matching GLOB (repeatable, e.g. '*.py')")
    parser.add_argument("--exclude-tests", action="store_true",
                        help="do not rank test files (tests/ folders, test_*.py, conftest.py)")
    parser.add_argument("--tree-cache", type=Path, default=None, metavar="DIR",
                        help="where trees at base_commit are extracted (default: user cache)")
    parser.add_argument("--embed-model", default=None, help="embedding model name or path")
    parser.add_argument("--embed-backend", default=None,
                        help="auto | fastembed | sentence-transformers | none")
    add_dense_stripes_arg(parser)
    parser.add_argument("--rerank-model", default=None, help="cross-encoder name or path")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--csv", type=Path, default=None, metavar="FILE",
                        help="also write one row per configuration to FILE")
    parser.add_argument("--json-file", type=Path, default=None, metavar="FILE",
                        help="also write the JSON results (with every instance) to FILE")
    parser.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                        help="also write the summary as a markdown table to FILE")
    add_repo_args(parser, path_positional=False)


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _tokenizer_name(split: bool, path: bool) -> str:
    return {(False, False): "default", (True, False): "split", (False, True): "path",
            (True, True): "split+path"}[(split, path)]


def run(args: argparse.Namespace) -> int:
    from coderag_tui.core.eval.datasets import (
        CandidateFilter,
        DatasetError,
        from_git_history,
        load_dataset,
        rows_to_jsonl,
    )
    from coderag_tui.core.eval.evaluation import Grid, run_eval

    values = {
        "path": args.path, "index_dir": args.index_dir, "embed_model": args.embed_model,
        "embed_backend": args.embed_backend, "rerank_model": args.rerank_model,
        "dense_stripes": args.dense_stripes,
    }
    settings = settings_from_args(argparse.Namespace(**values))
    if (args.dataset is None) == (args.from_git_history is None):
        raise UserError("give a DATASET.jsonl or --from-git-history N (one of the two).")
    try:
        if args.dataset is not None:
            rows = load_dataset(args.dataset)
        else:
            if args.from_git_history < 1:
                raise UserError("--from-git-history needs N >= 1.")
            rows = from_git_history(settings.repo_root, args.from_git_history)
            if not rows:
                raise UserError(
                    f"no commit in {settings.repo_root} modifies 1-5 existing source files: "
                    "evaluate a repository with more history."
                )
            if args.save_dataset is not None:
                args.save_dataset.write_text(rows_to_jsonl(rows), encoding="utf-8")
    except DatasetError as exc:
        raise UserError(str(exc)) from exc
    if args.limit is not None:
        rows = rows[: max(0, args.limit)]
    if args.repos is not None and not args.repos.is_dir():
        raise UserError(f"{args.repos} is not a folder: pass the folder holding the repositories.")

    spec = settings.chunking_spec
    default_chunking = spec.strategy if spec.strategy == "file" else f"{spec.strategy}:{spec.lines}"
    grid = Grid(
        modes=_split(args.modes),
        chunkings=_split(args.chunkings) if args.chunkings else (default_chunking,),
        tokenizers=(
            _split(args.tokenizers) if args.tokenizers
            else (_tokenizer_name(settings.split_identifiers, settings.path_in_text),)
        ),
        k=args.cutoff,
        candidates=CandidateFilter(
            include=tuple(p for pat in args.include for p in _split(pat)),
            exclude_tests=args.exclude_tests,
        ),
    )
    try:
        grid.validate()
    except ValueError as exc:
        raise UserError(f"{exc}.") from exc

    cancel = threading.Event()
    try:
        with _ProgressView(enabled=True) as view:
            report = run_eval(
                rows, settings, grid, repos_dir=args.repos, tree_cache=args.tree_cache,
                progress=view.update, cancel=cancel,
            )
    except KeyboardInterrupt:
        cancel.set()
        raise
    except DatasetError as exc:
        raise UserError(str(exc)) from exc

    if args.csv is not None:
        _write_csv(args.csv, report)
    if args.markdown is not None:
        _write_text(args.markdown, markdown_table(report), "--markdown")
    if args.json_file is not None:
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False)
        _write_text(args.json_file, text, "--json-file")
    if args.json:
        print_json(report.to_json())
    else:
        _print_report(report)
    if not report.instances:
        print("coderag: no row could be evaluated (see the notes above).", file=sys.stderr)
        return 1
    return 0


class _ProgressView:
    """A rich progress bar on a terminal; one line per finished step otherwise (e.g. nohup)."""

    def __init__(self, *, enabled: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.live = enabled and self.console.is_terminal
        self.lines = enabled and not self.live
        self._progress: Any = None
        self._task: Any = None
        self._started = time.perf_counter()

    def __enter__(self) -> _ProgressView:
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("{task.description}"),
                console=self.console, transient=True,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def update(self, event: EvalProgress) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task, total=event.total, completed=event.done,
                description=f"{event.label} {event.detail}",
            )
        elif self.lines and event.detail == "done":
            elapsed = time.perf_counter() - self._started
            print(f"[{event.done}/{event.total}] {event.label} ({elapsed:.0f} s)",
                  file=sys.stderr, flush=True)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _print_report(report: EvalReport, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # a file or pipe: do not squeeze the table to 80 columns
            console = Console(width=220)
    names = report.metric_names
    for level in ("files", "chunks"):
        summaries = [
            s for s in report.summaries if level == "files" or s.chunk_scores is not None
        ]
        if not summaries:
            continue
        table = Table(title=f"{level[:-1]}-level retrieval (Acc and recall in %, k={report.k})")
        for col in ("mode", "chunking", "tokenizer", "n"):
            table.add_column(col, justify="right" if col == "n" else "left")
        for name in names:
            table.add_column(name.replace("acc", "Acc").replace("ndcg", "NDCG")
                             .replace("mrr", "MRR"), justify="right")
        table.add_column("median ms", justify="right")
        table.add_column("per stage (median ms)")
        for s in summaries:
            scores = s.scores if level == "files" else (s.chunk_scores or {})
            cells = [
                f"{scores.get(n, 0.0):.3f}" if n in ("mrr", "ndcg@10") else _pct(scores.get(n, 0))
                for n in names
            ]
            stages = " · ".join(f"{st} {ms:.1f}" for st, ms in s.stage_ms.items())
            table.add_row(s.mode, s.chunking, s.tokenizer, str(s.n), *cells,
                          f"{s.search_ms:.1f}", stages)
        console.print(table)
    for row_id, reason in report.skipped:
        console.print(f"skipped {row_id}: {reason}")
    for note in report.notes:
        console.print(f"note: {note}")
    console.print(f"wall time {report.wall_s:.1f} s" + (" (cancelled)" if report.cancelled else ""))


def markdown_table(report: EvalReport) -> str:
    """The file-level summary as a markdown table (Acc and recall in %, MRR and NDCG 0-1)."""
    names = report.metric_names
    head = ["mode", "chunking", "tokenizer", "n", *names, "median ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in report.summaries:
        cells = [
            f"{s.scores.get(n, 0.0):.3f}" if n in ("mrr", "ndcg@10") else _pct(s.scores.get(n, 0))
            for n in names
        ]
        lines.append("| " + " | ".join(
            [s.mode, s.chunking, s.tokenizer, str(s.n), *cells, f"{s.search_ms:.1f}"]
        ) + " |")
    return "\n".join(lines) + "\n"


def _write_text(path: Path, text: str, flag: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path} ({exc.strerror}): choose another {flag}.") from exc


def _write_csv(path: Path, report: EvalReport) -> None:
    rows = report.csv_rows()
    columns: list[str] = []
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    except OSError as exc:
        raise UserError(
            f"cannot write {path} ({exc.strerror}): choose another --csv path."
        ) from exc
