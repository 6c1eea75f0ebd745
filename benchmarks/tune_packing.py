"""Recall at a budget for several packing settings, each row searched once.

`coderag eval` packs and scores every ranking at every budget; comparing packing settings with
it means searching every row again per setting. This script searches each row of a dataset
once (the eval's own trees, index and models) and packs the same runs under each combination
of the settings given, printing gold-file and gold-line recall at each budget (the eval's
scoring: `coderag_tui.core.eval.budget`). Tune only on the development sets.

    PYTHONPATH=. python benchmarks/tune_packing.py ../shared/bench/nl_dev.jsonl \\
        --repos /work/.mirror --index-dir ~/.cache/coderag/dev-bench/index \\
        --tree-cache ~/.cache/coderag/dev-bench/trees --embed-backend none \\
        --set pack_breadth=6,10,14 --set packing=spans,chunks
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    budgets = parse_budgets(args.budgets)
    axes = [(name, [_value(v) for v in values.split(",")]) for name, values in
            (item.split("=", 1) for item in args.set)]  # fmt: skip
    configs = [dict(zip([n for n, _ in axes], combo, strict=True))
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
    for n, item in enumerate(work, start=1):
        row = item.row
        candidates = grid.candidates.under(row.benchmark_root)
        tree = _tree_for(item, settings, candidates, args.tree_cache, args.repos)
        base = chunking_settings(settings, tree, grid.chunkings[0], grid, reranked=False)
        with opened(base, models, embed_progress=None, cancel=None) as (engine, _, _):
            run = engine.search(row.query, base)
            for c, config in enumerate(configs):
                prompts = _Prompts(engine, base.with_(**config), row, tree, candidates, budgets)
                started = time.perf_counter()
                at = prompts.at(run, args.mode) or {}
                seconds[c].append(time.perf_counter() - started)
                for budget, score in at.items():
                    scores[c][budget].append(score)
        print(f"\r{n}/{len(work)} rows", end="", file=sys.stderr)
    print(file=sys.stderr)
    head = ["config", *(f"{b // 1000}k files/lines/tokens" for b in budgets), "ms/prompt"]
    print(" | ".join(head))
    for c, config in enumerate(configs):
        cells = []
        for budget in budgets:
            rows_at = scores[c][budget]
            lines = [s.line_recall for s in rows_at if s.line_recall is not None]
            cells.append(
                f"{statistics.fmean(s.file_recall for s in rows_at):.3f}/"
                f"{statistics.fmean(lines) if lines else 0:.3f}/"
                f"{statistics.fmean(s.tokens for s in rows_at):.0f}"
            )
        per_prompt = 1000 * statistics.fmean(seconds[c]) / len(budgets)
        label = " ".join(f"{k}={v}" for k, v in config.items()) or "(settings)"
        print(" | ".join([label, *cells, f"{per_prompt:.0f}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
