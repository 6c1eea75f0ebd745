"""The learned reranker's cost per query: its features and its trees over the fused top N.

Usage: PYTHONPATH=. python benchmarks/bench_learned.py [REPO] [--queries N] [--candidates N]
       [--long]

Indexes REPO (default: the standard library) into a temporary folder, draws N queries from
its chunks as bench_search.py does (with --long, issue-length queries: five drawn queries
joined, with a traceback line), searches each with the learned reranker on (dense off) and
prints the `rerank` stage's p50 and p95 (target, issue 26: <= 5 ms p50 for the top 100),
split into the features and the trees. It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from coderag_tui.core.engine import Engine
from coderag_tui.core.rank import learned
from coderag_tui.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import draw_queries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, nargs="?", default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=learned.LEARNED_CANDIDATES)
    parser.add_argument("--long", action="store_true", help="issue-length queries")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            repo=args.repo, index_dir=Path(tmp), embed_backend="none", rerank=True,
            rerank_backend="learned", learned_candidates=args.candidates,
        )  # fmt: skip
        with Engine.open(settings, dense=False) as engine:
            lexical = engine.lexical
            assert lexical is not None
            chunks = lexical.chunks
            step = max(1, len(chunks) // 2000)
            sample = [chunks[i] for i in range(0, len(chunks), step)]
            queries = draw_queries(sample, args.queries * (5 if args.long else 1))
            if args.long:
                frame = 'File "lib/module.py", line 12, in handler\nValueError: bad value'
                queries = [
                    " ".join(queries[i : i + 5]) + "\n" + frame for i in range(0, len(queries), 5)
                ]
            # time the two parts apart: the features, then the trees
            features: list[float] = []
            trees: list[float] = []
            real = learned.candidate_features

            def timed_features(c: learned.Candidates, n: int):  # type: ignore[no-untyped-def]
                started = time.perf_counter()
                out = real(c, n)
                features.append((time.perf_counter() - started) * 1000)
                return out

            learned.candidate_features = timed_features  # type: ignore[assignment]
            totals: list[float] = []
            for query in queries:
                run = engine.search(query, settings)
                ms = next((t.ms for t in run.timings if t.stage == "rerank"), None)
                if ms is not None:
                    totals.append(ms)
            learned.candidate_features = real
            trees = [t - f for t, f in zip(totals, features, strict=False)]
    kind = "issue-length" if args.long else "short"
    print(
        f"{len(chunks):,} chunks, {len(totals)} {kind} queries, learned rerank of the fused "
        f"top {args.candidates} (target p50 <= 5 ms):"
    )
    for name, times in (("rerank stage", totals), ("  features", features), ("  trees", trees)):
        times = sorted(times)
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"  {name:<14} p50 {statistics.median(times):6.2f} ms   p95 {p95:6.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
