"""`coderag bench`: index throughput and query latency per stage, optionally vs rank_bm25."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    UserError,
    add_repo_args,
    add_setting_flags,
    print_json,
    settings_from_args,
)

if TYPE_CHECKING:
    from coderag_tui.core.eval.bench import BenchReport


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="time indexing and queries per stage (and our BM25 against rank_bm25)",
        description=(
            "Index PATH from scratch into a temporary folder, then time a deterministic sample "
            "of queries; prints each stage's throughput and p50/p95 latency, also per million "
            "characters of indexed text."
        ),
    )
    add_repo_args(parser)
    parser.add_argument(
        "--compare",
        choices=["rank-bm25"],
        default=None,
        help="also time rank_bm25.BM25Okapi on the same tokens and queries",
    )
    parser.add_argument(
        "--queries",
        dest="n_queries",
        type=int,
        default=50,
        metavar="N",
        help="how many sampled queries (default: 50)",
    )
    parser.add_argument(
        "--queries-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="one query per line instead of sampled ones",
    )
    parser.add_argument(
        "--chunking",
        dest="chunkings",
        default=None,
        help="comma list, e.g. lines:64,file (default: the settings')",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="default | split | path | split+path (default: the settings')",
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also embed the corpus and time the dense stages (slow on CPU)",
    )
    add_setting_flags(parser, ["dense_stripes"])
    parser.add_argument(
        "--reuse-index",
        action="store_true",
        help="use --index-dir as is instead of a fresh temporary index",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args: argparse.Namespace) -> int:  # noqa: C901
    from coderag_tui.core.eval.bench import run_bench
    from coderag_tui.core.eval.evaluation import TOKENIZERS
    from coderag_tui.core.records import ChunkingSpec

    settings = settings_from_args(
        argparse.Namespace(
            path=args.path, index_dir=args.index_dir, dense_stripes=args.dense_stripes
        )
    )
    tokenizer = args.tokenizer
    if tokenizer is None:
        tokenizer = {
            (False, False): "default",
            (True, False): "split",
            (False, True): "path",
            (True, True): "split+path",
        }[(settings.split_identifiers, settings.path_in_text)]
    if tokenizer not in TOKENIZERS:
        raise UserError(f"unknown tokenizer {tokenizer!r}: use {', '.join(TOKENIZERS)}.")
    split, path_text = TOKENIZERS[tokenizer]
    settings = settings.with_(split_identifiers=split, path_in_text=path_text)
    queries = None
    if args.queries_file is not None:
        try:
            text = args.queries_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(
                f"cannot read {args.queries_file} ({exc.strerror}): check the path."
            ) from exc
        queries = [line.strip() for line in text.splitlines() if line.strip()]
    if args.n_queries < 1 and queries is None:
        raise UserError("--queries needs N >= 1.")
    specs = []
    for text in (args.chunkings or "").split(","):
        if not text.strip():
            continue
        try:
            specs.append(ChunkingSpec.parse(text))
        except ValueError as exc:
            raise UserError(f"{exc}.") from exc
    if not specs:
        specs = [settings.chunking_spec]
    reports = []
    for spec in specs:
        chunk_settings = settings.with_(
            chunking=spec.strategy, chunk_lines=spec.lines, chunk_overlap=spec.overlap
        )
        reports.append(
            run_bench(
                chunk_settings,
                queries=queries,
                n_queries=args.n_queries,
                dense=args.dense,
                compare=args.compare == "rank-bm25",
                fresh=not args.reuse_index,
                tokenizer=tokenizer,
            )
        )
    if args.json:
        print_json([r.to_json() for r in reports])
    else:
        for report in reports:
            _print(report)
    return 0


def _print(report: BenchReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    idx = report.index
    mchars = idx.chars / 1e6
    console.print(
        f"[bold]{report.repo}[/] · chunking {report.chunking} · tokenizer {report.tokenizer}: "
        f"{idx.files} files, {idx.bytes / 1e6:.2f} MB, {mchars:.2f} M chars, {idx.chunks} chunks"
    )
    table = Table(title="index (fresh)")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    table.add_column("MB/s", justify="right")
    for stage, seconds in idx.stage_seconds.items():
        rate = idx.bytes_per_s(stage) / 1e6
        table.add_row(stage, f"{seconds:.3f}", "-" if rate == float("inf") else f"{rate:.1f}")
    table.add_row(
        "total",
        f"{idx.elapsed_s:.3f}",
        f"{idx.bytes / 1e6 / idx.elapsed_s:.1f}" if idx.elapsed_s > 0 else "-",
    )
    console.print(table)
    table = Table(title=f"query latency over {report.queries} queries")
    for col in ("stage", "p50 ms", "p95 ms", "p50 ms / M chars", "p95 ms / M chars"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for s in report.latency:
        table.add_row(
            s.stage,
            f"{s.p50_ms:.3f}",
            f"{s.p95_ms:.3f}",
            f"{s.p50_ms_per_mchar:.3f}",
            f"{s.p95_ms_per_mchar:.3f}",
        )
    console.print(table)
    c = report.comparison
    if c is not None:
        table = Table(title="BM25: coderag vs rank_bm25.BM25Okapi, same tokens")
        for col in ("", "coderag", "rank_bm25", "rank_bm25 / coderag"):
            table.add_column(col, justify="left" if not col else "right")
        table.add_row(
            "build s", f"{c.ours_build_s:.3f}", f"{c.theirs_build_s:.3f}", f"{c.build_ratio:.1f}x"
        )
        table.add_row(
            "query p50 ms",
            f"{c.ours_p50_ms:.3f}",
            f"{c.theirs_p50_ms:.3f}",
            f"{c.speedup_p50:.1f}x",
        )
        table.add_row(
            "query p95 ms",
            f"{c.ours_p95_ms:.3f}",
            f"{c.theirs_p95_ms:.3f}",
            f"{c.theirs_p95_ms / c.ours_p95_ms:.1f}x" if c.ours_p95_ms else "-",
        )
        console.print(table)
        console.print(
            f"top-10 overlap with rank_bm25: {100 * c.top10_overlap:.0f}% "
            "(idf variants differ: lucene vs Okapi with an idf floor)"
        )
    for note in report.notes:
        console.print(f"note: {note}")
