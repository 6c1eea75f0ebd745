"""Time from an empty index to the first fused answer, in a fresh process, with its coverage.

Each run starts `coderag search QUERY PATH --json` in a new process with an empty index
folder (so an empty embedding cache too) and reads the dense coverage from its JSON:

    python benchmarks/bench_first_answer.py                 # this repository and the stdlib
    python benchmarks/bench_first_answer.py --runs 3 --wait # ... and the wait-for-the-model run
    python benchmarks/bench_first_answer.py --cold-models   # a fresh user cache as well: the
                                                            # first run on a machine (distils
                                                            # the static table, exports ONNX)

Modes: `default` is `coderag search` with no flag (it waits at most `dense_wait`, 15 s, for
the model, then answers from the static first pass); `no-wait` answers from the static first
pass at once; `wait` (`--wait`) embeds every chunk with the model first (minutes on the
stdlib; only with --wait, and only on this repository unless --wait-stdlib). Prints the
median wall time of the runs, the coverage and the stage, and the load average at start.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
QUERY = "how is the dense index built from chunk embeddings"


def stdlib() -> Path:
    return Path(os.__file__).resolve().parent


def one_run(repo: Path, mode: str, *, cold_models: bool) -> tuple[float, dict[str, object]]:
    """Wall seconds of one fresh `coderag search`, and its JSON's dense record."""
    scratch = Path(tempfile.mkdtemp(prefix="coderag-first-answer-"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if cold_models:
        env["XDG_CACHE_HOME"] = str(scratch / "cache")
    argv = [
        sys.executable,
        "-m",
        "coderag_tui",
        "search",
        QUERY,
        str(repo),
        "--index-dir",
        str(scratch / "index"),
        "--json",
    ]
    if mode != "default":
        argv.append(f"--{mode}")
    try:
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"coderag failed on {repo}: {done.stderr.strip()[-400:]}")
    record = json.loads(done.stdout)
    dense = record.get("dense") or {}
    fused = record["rankings"].get("fused", {})
    dense["fused_hits"] = len(fused.get("hits", []))
    return seconds, dense


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wait", action="store_true", help="also time the wait mode here")
    parser.add_argument("--wait-stdlib", action="store_true", help="... and on the stdlib")
    parser.add_argument("--cold-models", action="store_true", help="fresh user cache per run")
    parser.add_argument("--repo", type=Path, action="append", help="corpora (default: both)")
    args = parser.parse_args()
    corpora = args.repo or [HERE, stdlib()]
    print(f"query: {QUERY!r}; {args.runs} fresh process(es) per row; empty index each run")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    header = f"{'corpus':<28} {'mode':<8} {'median s':>9} {'min':>7} {'max':>7}  dense"
    print(header)
    print("-" * len(header))
    for repo in corpora:
        modes = ["default", "no-wait"]
        if args.wait and (repo == HERE or args.wait_stdlib):
            modes.append("wait")
        for mode in modes:
            times: list[float] = []
            dense: dict[str, object] = {}
            for _ in range(max(1, args.runs)):
                seconds, dense = one_run(repo, mode, cold_models=args.cold_models)
                times.append(seconds)
            share = float(dense.get("coverage", 0.0) or 0.0)  # type: ignore[arg-type]
            what = (
                f"{dense.get('model')} ({dense.get('stage')}) covers {share:.0%} of "
                f"{dense.get('of')} chunks; fused hits {dense.get('fused_hits')}"
                if dense.get("available")
                else "off"
            )
            name = repo.name if repo != stdlib() else "stdlib"
            print(
                f"{name:<28} {mode:<8} {statistics.median(times):>9.2f} {min(times):>7.2f} "
                f"{max(times):>7.2f}  {what}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
