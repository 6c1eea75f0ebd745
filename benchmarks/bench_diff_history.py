"""`--diff` measured on a repository's own history: a commit's diff of one file as the query,
the other files it changed as the answer, against the commit message as the query.

Usage: PYTHONPATH=. python benchmarks/bench_diff_history.py [REPO] [--commits N] [--depth K]

For the last N non-merge commits of REPO (default: this repository) that modify 2–5 non-test
source files (`core.eval.datasets.from_git_history`), every modified file F in turn is "the
file I am editing": the tree at the commit's parent with F at the commit's version is indexed
(BM25 + code signals: dense off, to keep a run within minutes on two cores), then asked
(a) with F's diff as `--diff` asks (`Change.query`, F's changed chunks left out as the origin),
(b) with the commit message, (c) with both. The answer is the other files the commit
modified; F is left out of every ranked file list (it is known), so the three rank the same
candidates. Reported: Acc@1/5/10 (a gold file in the top k files of the fused list) and MRR
(of the first gold file), per query and as a mean.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coderag_tui.core.engine import Engine
from coderag_tui.core.eval.datasets import (
    HistoryOptions,
    from_git_history,
    is_test_path,
    materialise_tree,
)
from coderag_tui.core.index.changes import Change, _file_change, _sections
from coderag_tui.core.records import Origin
from coderag_tui.settings import Settings

KS = (1, 5, 10)


def git(repo: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *argv], capture_output=True, check=True, text=True
    )
    return done.stdout


def file_diff(repo: Path, parent: str, sha: str, path: str) -> Change:
    """The commit's change of one file, read as `--diff` reads a change."""
    text = git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", "-U3", parent, sha,
               "--", path)  # fmt: skip
    files = tuple(_file_change(path, section) for section in _sections(text))
    return Change("commit", parent, files)


def first_gold_rank(ranked: list[str], gold: set[str]) -> int | None:
    for rank, path in enumerate(ranked, start=1):
        if path in gold:
            return rank
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--depth", type=int, default=50, help="files ranked per query")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    rows = from_git_history(repo, args.commits * 3, options=HistoryOptions(2, 5))
    rows = [
        row.__class__(
            id=row.id,
            query=row.query,
            gold_files=tuple(p for p in row.gold_files if not is_test_path(p)),
            base_commit=row.base_commit,
        )
        for row in rows
    ]
    rows = [row for row in rows if 2 <= len(row.gold_files) <= 5][: args.commits]
    work = Path(tempfile.mkdtemp(prefix="coderag-diff-history-"))
    results: dict[str, list[int | None]] = {"diff": [], "message": [], "both": []}
    started = time.perf_counter()
    try:
        for n, row in enumerate(rows, start=1):
            parent = row.base_commit
            sha = git(repo, "rev-parse", f"{row.id}").strip()
            clean = materialise_tree(repo, parent, cache_dir=work / "trees")
            for edited in row.gold_files:
                tree = work / "tree"
                shutil.rmtree(tree, ignore_errors=True)
                shutil.copytree(clean, tree, symlinks=True)
                (tree / edited).write_text(git(repo, "show", f"{sha}:{edited}"), encoding="utf-8")
                change = file_diff(repo, parent, sha, edited)
                if change.empty or not change.spans:
                    continue
                diff_query, _ = change.query()
                settings = Settings(
                    repo=tree, index_dir=work / "index" / f"{n}", embed_backend="none", depth=200
                )
                gold = set(row.gold_files) - {edited}
                with Engine.open(settings, dense=False) as engine:
                    asks = {
                        "diff": (diff_query, Origin(change.spans)),
                        "message": (row.query, None),
                        "both": (f"{row.query}\n{diff_query}", Origin(change.spans)),
                    }
                    for name, (query, origin) in asks.items():
                        run = engine.search(query, settings, origin)
                        files = [f.path for f in run.files("fused") if f.path != edited]
                        results[name].append(first_gold_rank(files[: args.depth], gold))
                shutil.rmtree(work / "index" / f"{n}", ignore_errors=True)
            print(f"  {n}/{len(rows)} {row.id} ({len(row.gold_files)} files)", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started
    queries = len(results["diff"])
    print(f"{repo.name}: {len(rows)} commits, {queries} queries, {elapsed:.0f} s")
    print(f"| query | {' | '.join(f'Acc@{k}' for k in KS)} | MRR |")
    print(f"|---|{'---|' * len(KS)}---|")
    for name, ranks in results.items():
        accs = [sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in KS]
        mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
        label = {
            "diff": "the diff of one file (`--diff`)",
            "message": "the commit message",
            "both": "message + diff",
        }[name]
        print(f"| {label} | {' | '.join(f'{a:.3f}' for a in accs)} | {mrr:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
