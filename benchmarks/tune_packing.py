"""Recall at a budget for several packing settings, each row searched once.

`coderag eval` packs and scores every ranking at every budget; comparing packing settings with
it means searching every row again per setting. This script searches each row of a dataset
once (the eval's own trees, index and models) and packs the same runs under each combination
of the settings (`--set NAME=V1,V2`) and of the packer's constants (`--constant
pack_spans.NAME=V1,V2`, a module of `coderag_tui.core.prompt`) given, printing gold-file and
gold-line recall at each budget (the eval's scoring: `coderag_tui.core.eval.budget`), the
blocks per prompt, and what a reader cannot use at the largest budget. Tune only on the
development sets.

    PYTHONPATH=. python benchmarks/tune_packing.py ../shared/bench/nl_dev.jsonl \\
        --repos /work/.mirror --index-dir ~/.cache/coderag/dev-bench/index \\
        --tree-cache ~/.cache/coderag/dev-bench/trees --embed-backend none \\
        --constant pack_spans.BLOCK_COST=0,60 --set packing=spans,chunks
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from coderag_tui.core.eval.budget import BUDGETS, BudgetScore, parse_budgets
from coderag_tui.core.eval.datasets import CandidateFilter, load_dataset
from coderag_tui.core.eval.evaluation import (
    Grid,
    Models,
    _plan,
    _Prompts,
    _tree_for,
    chunking_settings,
    opened,
)
from coderag_tui.settings import Settings


def _value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _axes(items: list[str]) -> list[tuple[str, list[object]]]:
    return [(name, [_value(v) for v in values.split(",")]) for name, values in
            (item.split("=", 1) for item in items)]  # fmt: skip


def _use_constants(config: dict[str, object]) -> None:
    """Set each `module.NAME` of `coderag_tui.core.prompt` to its value for this config."""
    for name, value in config.items():
        module, constant = name.rsplit(".", 1)
        target = importlib.import_module(f"coderag_tui.core.prompt.{module}")
        if not hasattr(target, constant):
            raise SystemExit(
                f"--constant {name}: coderag_tui.core.prompt.{module} has no {constant}"
            )
        setattr(target, constant, value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--tree-cache", type=Path, required=True)
    parser.add_argument("--embed-backend", default="none")
    parser.add_argument("--mode", default="fused")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--exclude-tests", action="store_true")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=V1,V2", help="a setting's values"
    )
    parser.add_argument(
        "--constant",
        action="append",
        default=[],
        metavar="MODULE.NAME=V1,V2",
        help="a packer constant's values, e.g. pack_spans.BLOCK_COST=0,60",
    )
    args = parser.parse_args()
    budgets = parse_budgets(args.budgets)
    axes = _axes(args.set) + _axes(args.constant)
    names = [n for n, _ in axes]
    configs = [dict(zip(names, combo, strict=True))
               for combo in itertools.product(*(v for _, v in axes))]  # fmt: skip
    settings = Settings(index_dir=args.index_dir, embed_backend=args.embed_backend)
    grid = Grid(
        modes=("bm25", args.mode),
        candidates=CandidateFilter(include=tuple(args.include), exclude_tests=args.exclude_tests),
    )
    rows = load_dataset(args.dataset)[: args.limit]
    work, skipped = _plan(rows, settings, args.repos)
    for row_id, why in skipped:
        print(f"skipped {row_id}: {why}", file=sys.stderr)
    models = Models.start(settings, grid, [], None)
    scores: dict[int, dict[int, list[BudgetScore]]] = defaultdict(lambda: defaultdict(list))
    seconds: dict[int, list[float]] = defaultdict(list)
    constants = {name for name, _ in _axes(args.constant)}
    for n, item in enumerate(work, start=1):
        row = item.row
        candidates = grid.candidates.under(row.benchmark_root)
        tree = _tree_for(item, settings, candidates, args.tree_cache, args.repos)
        base = chunking_settings(settings, tree, grid.chunkings[0], grid, reranked=False)
        with opened(base, models, embed_progress=None, cancel=None) as (engine, _, _):
            run = engine.search(row.query, base)
            for c, config in enumerate(configs):
                _use_constants({k: v for k, v in config.items() if k in constants})
                chosen = {k: v for k, v in config.items() if k not in constants}
                prompts = _Prompts(engine, base.with_(**chosen), row, tree, candidates, budgets)
                started = time.perf_counter()
                at = prompts.at(run, args.mode) or {}
                seconds[c].append(time.perf_counter() - started)
                for budget, score in at.items():
                    scores[c][budget].append(score)
        print(f"\r{n}/{len(work)} rows", end="", file=sys.stderr)
    print(file=sys.stderr)
    _print(configs, budgets, scores, seconds)
    return 0


def _print(
    configs: list[dict[str, object]],
    budgets: tuple[int, ...],
    scores: dict[int, dict[int, list[BudgetScore]]],
    seconds: dict[int, list[float]],
) -> None:
    """One line per config: file and line recall (%) and blocks at each budget, and at the
    largest budget the reader's faults (signatures without their matched body, lone lines;
    totals) and the outline and data-file tokens (means); ms per prompt."""
    top = max(budgets)
    print(f"budgets: {', '.join(map(str, budgets))}")
    for c, config in enumerate(configs):
        files, lines, blocks = [], [], []
        for budget in budgets:
            at = scores[c][budget]
            shown = [s.line_recall for s in at if s.line_recall is not None]
            files.append(f"{100 * statistics.fmean(s.file_recall for s in at):.1f}")
            lines.append(f"{100 * statistics.fmean(shown):.1f}" if shown else "-")
            blocks.append(f"{statistics.fmean(s.blocks for s in at):.1f}")
        last = scores[c][top]
        faults = (
            f"bare {sum(s.account.bare_signatures for s in last)} "
            f"lone {sum(s.account.lone_lines for s in last)} "
            f"outline {statistics.fmean(s.account.outline_tokens for s in last):.0f} "
            f"data {statistics.fmean(s.account.data_tokens for s in last):.0f}"
        )
        per_prompt = 1000 * statistics.fmean(seconds[c]) / len(budgets)
        label = " ".join(f"{k}={v}" for k, v in config.items()) or "(settings)"
        print(
            f"{label} | files {' '.join(files)} | lines {' '.join(lines)} | "
            f"blocks {' '.join(blocks)} | at {top}: {faults} | {per_prompt:.0f} ms/prompt"
        )


if __name__ == "__main__":
    sys.exit(main())
