"""Compare two `coderag eval --json-file` results of one dataset, configuration by configuration.

Run: PYTHONPATH=. python benchmarks/compare_runs.py BEFORE.json AFTER.json
(e.g. two `run_dev_benchmark.sh` outputs made before and after a change to chunking). For every
configuration (mode, chunking, tokenizer) in both files it prints the main metric before and
after and the paired bootstrap interval of after - before, by the rule `coderag eval
--baseline` uses: semble's NDCG@10 resampled within each repository when every row has it (the
NL dev set), file-level MRR over queries otherwise (SWE-bench), beside Acc@1/5/10.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from coderag_tui.core.eval.metrics import paired_bootstrap

Config = tuple[str, str, str]


def _by_config(path: Path) -> dict[Config, dict[str, dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[Config, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in data["instances"]:
        out[(row["mode"], row["chunking"], row["tokenizer"])][row["id"]] = row
    return out


def _semble_mean(rows: list[dict[str, Any]]) -> float:
    per_repo: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        per_repo[row["repo"]].append(row["ndcg10_semble"])
    return sum(sum(v) / len(v) for v in per_repo.values()) / len(per_repo)


def main() -> None:
    before, after = (_by_config(Path(p)) for p in sys.argv[1:3])
    for config in (c for c in before if c in after):
        shared = [i for i in before[config] if i in after[config]]
        a = [before[config][i] for i in shared]
        b = [after[config][i] for i in shared]
        semble = all(r.get("ndcg10_semble") is not None for r in a + b)
        if semble:
            metric = "NDCG@10 (semble)"
            scores = [[r["ndcg10_semble"] for r in rows] for rows in (a, b)]
            means = _semble_mean(a), _semble_mean(b)
            groups: list[str] | None = [r["repo"] for r in a]
        else:
            metric = "MRR (files)"
            scores = [[r["files"]["mrr"] for r in rows] for rows in (a, b)]
            means = sum(scores[0]) / len(a), sum(scores[1]) / len(b)
            groups = None
        interval = paired_bootstrap(scores[0], scores[1], groups=groups)
        changed = sum(x != y for x, y in zip(*scores, strict=True))
        accs = " ".join(
            f"Acc@{k} {100 * sum(r['files'][f'acc@{k}'] for r in a) / len(a):.1f}"
            f"→{100 * sum(r['files'][f'acc@{k}'] for r in b) / len(b):.1f}"
            for k in (1, 5, 10)
        )
        print(
            f"{' '.join(config)}: n {len(shared)} ({changed} changed)  "
            f"{metric} {means[0]:.3f} → {means[1]:.3f}  "
            f"after - before {interval.mean_diff:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"
            f" {interval.verdict}  |  files {accs}"
        )


if __name__ == "__main__":
    main()
