"""The Qdrant backend against the local index: the same answers, and what it costs.

Usage: PYTHONPATH=. python benchmarks/bench_backend.py [K] [--dataset FILE] [--repos DIR]
                                                        [--out DIR] [--dense] [--queries N]
                                                        [--skip-parity] [--skip-speed]

Parity: the SWE-bench Lite dev set (`coderag eval` over each row's tree at base_commit, non-test
.py files, 64-line chunks, split+path BM25) is evaluated twice, once with the local index and
once with `--backend qdrant` on Qdrant's embedded mode in a folder (each tree indexed, pushed,
then ranked by the collection), and Acc@1, Acc@5 and MRR of bm25 and fused are printed side by
side with the number of instances whose gold rank differs. Dense is off unless --dense (then
fused is RRF of BM25 and the offline MiniLM; embedding the five repositories takes tens of
minutes on 2 cores the first time), so fused is BM25 + the code signals.

Speed: the running interpreter's standard library (without site-packages and __pycache__)
copied K times (default 1) is indexed locally, then pushed to an embedded Qdrant folder:
push throughput in chunks/s, then the BM25 stage's p50/p95 over N queries (default 50) for the
local index and the collection, both through the engine.

Target: the backend's Acc@k equals the local's within one instance. Skips with exit 0 when the
dataset or repositories are absent; CI does not run it.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from coderag_tui.core.engine import Engine
from coderag_tui.core.eval.datasets import CandidateFilter, load_dataset
from coderag_tui.core.eval.evaluation import EvalReport, Grid, run_eval
from coderag_tui.settings import Settings

HERE = Path(__file__).resolve().parent.parent
DATASET = HERE.parent / "shared" / "bench" / "swe_bench_lite_dev.jsonl"
REPOS = Path("/work/.mirror")
METRICS = ("acc@1", "acc@5", "mrr")
CHUNKING = "lines:64"


def _summary(report: EvalReport, mode: str) -> dict[str, float]:
    for summary in report.summaries:
        if summary.mode == mode:
            return {m: summary.scores[m] for m in METRICS}
    return {}


def _ranks(report: EvalReport, mode: str) -> dict[str, int | None]:
    return {r.id: r.gold_rank for r in report.instances if r.mode == mode}


def parity(args: argparse.Namespace, out: Path) -> int:
    if not args.dataset.is_file() or not args.repos.is_dir():
        print(f"parity skipped: no dataset at {args.dataset} or no repositories at {args.repos}.")
        return 0
    rows = load_dataset(args.dataset)
    grid = Grid(
        modes=("bm25", "fused"),
        chunkings=(CHUNKING,),
        tokenizers=("split+path",),
        k=10,
        candidates=CandidateFilter(include=("*.py",), exclude_tests=True),
    )
    base = Settings(
        repo=HERE,
        index_dir=out / "index",
        embed_backend="auto" if args.dense else "none",
    )
    reports: dict[str, EvalReport] = {}
    for backend in ("local", "qdrant"):
        settings = base
        if backend == "qdrant":
            folder = out / "qdrant"
            shutil.rmtree(folder, ignore_errors=True)  # every tree pushed from scratch
            settings = base.with_(backend="qdrant", backend_url=str(folder))
        started = time.perf_counter()
        reports[backend] = run_eval(
            rows, settings, grid, repos_dir=args.repos, tree_cache=out / "trees"
        )
        print(
            f"{backend}: {len(reports[backend].instances) // 2} instances evaluated in "
            f"{time.perf_counter() - started:.0f} s"
        )
        for note in reports[backend].notes:
            print(f"  note: {note}")
    print()
    print(
        f"SWE-bench Lite dev, {CHUNKING}, split+path, non-test .py files, dense "
        f"{'on (offline MiniLM)' if args.dense else 'off'}"
    )
    print(f"{'mode':<6} {'metric':<7} {'local':>7} {'qdrant':>7}")
    worst = 0
    for mode in grid.modes:
        local, remote = _summary(reports["local"], mode), _summary(reports["qdrant"], mode)
        for metric in METRICS:
            print(f"{mode:<6} {metric:<7} {local.get(metric, 0):7.3f} {remote.get(metric, 0):7.3f}")
        a, b = _ranks(reports["local"], mode), _ranks(reports["qdrant"], mode)
        differ = sorted(i for i in a if a[i] != b.get(i))
        n = len(a)
        for metric in ("acc@1", "acc@5"):
            hits = round(abs(local.get(metric, 0) - remote.get(metric, 0)) * n)
            worst = max(worst, hits)
        print(
            f"{mode:<6} gold rank differs on {len(differ)} of {n} instances"
            + (f": {', '.join(differ)}" if differ else "")
        )
    print(f"parity: Acc@k differs by at most {worst} instance(s) (target: <= 1)")
    return 0 if worst <= 1 else 1


def _copy_stdlib(target: Path, copies: int) -> None:
    source = Path(sysconfig.get_paths()["stdlib"])
    ignore = shutil.ignore_patterns("site-packages", "__pycache__")
    for n in range(copies):
        shutil.copytree(source, target / f"stdlib{n}", symlinks=True, ignore=ignore)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def speed(args: argparse.Namespace, out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="coderag-backend-") as tmp:
        root = Path(tmp)
        corpus = root / "corpus"
        _copy_stdlib(corpus, args.copies)
        local = Settings(repo=corpus, index_dir=root / "index", embed_backend="none")
        remote = local.with_(backend="qdrant", backend_url=str(root / "qdrant"))
        with Engine(local) as engine:
            started = time.perf_counter()
            lexical = engine.update_index(local)
            indexed = time.perf_counter() - started
            n = len(lexical.chunks)
            print(
                f"stdlib x{args.copies}: {lexical.files:,} files, {n:,} chunks, indexed "
                f"locally in {indexed:.1f} s ({n / indexed:,.0f} chunks/s)"
            )
            started = time.perf_counter()
            report = engine.push(remote, lexical)
            pushed = time.perf_counter() - started
            print(
                f"push to Qdrant's embedded mode: {pushed:.1f} s, {n / pushed:,.0f} chunks/s "
                f"({report.written:,} points written)"
            )
            started = time.perf_counter()
            again = engine.push(remote, lexical)
            print(
                f"re-push with nothing changed: {time.perf_counter() - started:.1f} s "
                f"({again.written} written)"
            )
            rng = random.Random(7)
            words = [w for c in rng.sample(list(lexical.chunks), 200) for w in c.text.split()]
            words = [w for w in words if w.isidentifier() and len(w) > 3]
            queries = [" ".join(rng.sample(words, 3)) for _ in range(args.queries)]
        timings: dict[str, list[float]] = {}
        for label, settings in (("local", local), ("qdrant embedded", remote)):
            with Engine.open(settings, dense=False) as engine:
                engine.search(queries[0])
                bm25, total = [], []
                for query in queries:
                    run = engine.search(query)
                    bm25 += [t.ms for t in run.timings if t.stage == "bm25"]
                    total.append(sum(t.ms for t in run.timings))
                timings[label] = bm25
                print(
                    f"{label:<16} query p50 bm25 {statistics.median(bm25):7.1f} ms  "
                    f"p95 {_p(bm25, 0.95):7.1f} ms  (search with signals p50 "
                    f"{statistics.median(total):.1f} ms, {len(queries)} queries)"
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("copies", nargs="?", type=int, default=1, metavar="K")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--repos", type=Path, default=REPOS)
    parser.add_argument(
        "--out", type=Path, default=Path.home() / ".cache" / "coderag" / "bench-backend"
    )
    parser.add_argument("--dense", action="store_true", help="fused with the offline MiniLM")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--skip-parity", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    try:
        import qdrant_client  # noqa: F401
    except ImportError:
        print("skipped: pip install 'coderag-tui[server]' to run the Qdrant backend.")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    status = 0 if args.skip_parity else parity(args, args.out)
    if not args.skip_speed:
        print()
        speed(args, args.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
