"""BM25 query latency on an index that already exists (e.g. bench_scale.py --keep's stdlib x30).

Usage: PYTHONPATH=. python benchmarks/bench_query.py REPO INDEX_DIR [--queries N] [--rounds R]

Opens the saved lexical stage the way the TUI's first paint does (no re-index), draws N queries
from the chunks as bench_search.py does (identifiers and docstring lines), and prints BM25's
top-100 latency, p50 and p95 over queries, twice: the first pass, each query once, as a fresh
`coderag search` meets it (the memory-mapped postings' pages are first touched then), and the
steady state of a running TUI (per query the median of R rounds after that pass).
Target (issue 15, stdlib x30): p50 <= 20 ms. It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import draw_queries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("index_dir", type=Path)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    settings = Settings(repo=args.repo, index_dir=args.index_dir, embed_backend="none")
    with Engine(settings) as engine:
        lexical = engine.saved_lexical(settings)
        if lexical is None:
            print(f"no saved index of {args.repo} in {args.index_dir}: run coderag index first")
            return 2
        bm25, chunks = lexical.bm25, lexical.chunks
        step = max(1, len(chunks) // 2000)  # a sample to draw from: texts are read per chunk
        sample = [chunks[i] for i in range(0, len(chunks), step)]
        queries = [bm25.tokenize_query(q) for q in draw_queries(sample, args.queries)]

        def once(tokens: list[str]) -> float:
            started = time.perf_counter()
            bm25.search_tokens(tokens, 100)
            return (time.perf_counter() - started) * 1000

        first = [once(tokens) for tokens in queries]
        steady = [statistics.median(once(t) for _ in range(args.rounds)) for t in queries]
    print(f"{len(chunks):,} chunks, {len(queries)} queries, BM25 top-100 (target p50 <= 20 ms):")
    for name, times in (("first pass, as a fresh process", first), ("steady state", steady)):
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"  {name:<31} p50 {statistics.median(times):6.2f} ms   p95 {p95:6.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
