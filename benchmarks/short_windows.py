"""How many files end in a short line window, and how often such windows are top-10 hits.

Run: PYTHONPATH=. python benchmarks/short_windows.py census ROOT...
     PYTHONPATH=. python benchmarks/short_windows.py hits OUT

`census` counts, per folder, the source files cut into more than one 64-line window and how
many of them end in a last window of at most 1, 2, 4 or 8 lines, as plain windows would cut
them (what `lines:64` did before short last windows joined the window before).
`hits` asks the 200 NL dev questions (../shared/bench/nl_dev.jsonl) against the trees and
indexes a `run_dev_benchmark.sh nl-dense` run left in OUT (`CODERAG_BENCH_OUT`) and counts
the top-10 hits of the BM25, dense and fused lists that are a file's last window of at most
8 lines in a file of several windows; with the current chunker the count is 0 by design, so
run it with the code that made OUT.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

WINDOW = 64
SHORT = (1, 2, 4, 8)
SOURCE = {".py", ".js", ".ts", ".go", ".rs", ".java", ".php", ".rb", ".c", ".h"}
NL_DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "nl_dev.jsonl"


def census(root: Path) -> None:
    files = windows = several = 0
    short = dict.fromkeys(SHORT, 0)
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if path.suffix not in SOURCE:
                continue
            try:
                text = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if not text:
                continue
            n = len(text.removesuffix("\n").split("\n"))
            files += 1
            windows += -(-n // WINDOW)
            if n > WINDOW:
                several += 1
                last = n - (n - 1) // WINDOW * WINDOW
                for limit in SHORT:
                    short[limit] += last <= limit
    counts = " / ".join(str(short[k]) for k in SHORT)
    print(
        f"{root}: {files} files, {windows} windows, {several} with several windows; "
        f"last window of <= 1 / 2 / 4 / 8 lines: {counts}"
    )


def hits(out: Path) -> None:
    from coderag_tui.core.engine import Engine
    from coderag_tui.settings import Settings

    rows = [json.loads(line) for line in NL_DEV.read_text(encoding="utf-8").splitlines()]
    by_tree: dict[Path, list[dict[str, str]]] = collections.defaultdict(list)
    for row in rows:
        stem = f"{row['repo'].replace('/', '+')}-{row['base_commit'][:12]}"
        scope = row["benchmark_root"]
        tail = f"-under-{scope.replace('/', '_')}" if scope else ""
        by_tree[out / "trees" / f"{stem}{tail}"].append(row)
    found: collections.Counter[str] = collections.Counter()
    top3: collections.Counter[str] = collections.Counter()
    for tree, questions in sorted(by_tree.items()):
        settings = Settings(repo=tree, index_dir=out / "index")
        lengths: dict[str, int] = {}
        with Engine.open(settings) as engine:
            for row in questions:
                run = engine.search(row["query"], settings)
                for name in ("bm25", "dense", "fused"):
                    for hit in run.rankings[name].hits[:10]:
                        chunk = hit.chunk
                        if chunk.path not in lengths:
                            text = (tree / chunk.path).read_text("utf-8", "replace")
                            lengths[chunk.path] = len(text.rstrip("\n").split("\n"))
                        last = chunk.end_line == lengths[chunk.path]
                        if last and chunk.start_line > 1 and chunk.n_lines <= SHORT[-1]:
                            found[name] += 1
                            top3[name] += hit.rank <= 3
                            print(f"{row['id']} {name} #{hit.rank} {chunk.key}")
    print(f"short last windows among the top 10: {dict(found)}; in the top 3: {dict(top3)}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("census", "hits"):
        sys.exit(__doc__)
    if sys.argv[1] == "census":
        for arg in sys.argv[2:]:
            census(Path(arg))
    else:
        hits(Path(sys.argv[2]))
