"""Markdown tables of `coderag eval --completion` runs (their `--json-file` outputs).

    python benchmarks/completion_tables.py NAME=run.json [NAME=signals.json:LABEL ...]

For each run: per mode, tokenizer and chunking, file Acc@1/Acc@5/MRR and the share of rows
whose definition is packed within each budget; then, per budget, the chunking that packs
the most rows for each mode (the paper's "best chunk size grows with the budget"). A file
given as `path:LABEL` has its modes renamed LABEL (e.g. `fused` with dense off is BM25 plus
coderag's code signals).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def _budget(b: str) -> str:
    n = int(b)
    return f"{n // 1000}k" if n >= 1000 else str(n)


def _series(config: dict[str, Any], label: str | None) -> str:
    mode = label or config["mode"]
    return mode if config["tokenizer"] in ("default", "-") else f"{mode} ({config['tokenizer']})"


def main(argv: list[str]) -> int:
    runs: dict[str, list[tuple[dict[str, Any], str | None]]] = defaultdict(list)
    counts: dict[str, dict[str, Any]] = {}
    for arg in argv:
        name, _, spec = arg.partition("=")
        path, _, label = spec.partition(":")
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        runs[name] += [(c, label or None) for c in data["configs"]]
        counts.setdefault(name, data.get("completion", {}))
    for name, configs in runs.items():
        task = counts[name]
        budgets = sorted({b for c, _ in configs for b in c.get("packed", {})}, key=int)
        print(
            f"**{name}** — {len(task.get('rows', []))} rows of {task.get('available')} target "
            f"lines in {task.get('files')} files\n"
        )
        head = ["mode", "chunking", "Acc@1", "Acc@5", "MRR", *(_budget(b) for b in budgets)]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        best: dict[tuple[str, str], tuple[float, str]] = {}
        for config, label in configs:
            series = _series(config, label)
            files = config["files"]
            packed = config.get("packed", {})
            cells = [
                series,
                config["chunking"],
                f"{100 * files['acc@1']:.0f}",
                f"{100 * files['acc@5']:.0f}",
                f"{files['mrr']:.3f}",
                *(f"{100 * packed.get(b, 0):.0f}" for b in budgets),
            ]
            print("| " + " | ".join(cells) + " |")
            for b in budgets:
                key = (series, b)
                value = packed.get(b, 0.0)
                if key not in best or value > best[key][0]:
                    best[key] = (value, config["chunking"].removeprefix("lines:"))
        print()
        print("Best chunk (lines) per budget, packed %:\n")
        print("| mode | " + " | ".join(_budget(b) for b in budgets) + " |")
        print("|" + "---|" * (len(budgets) + 1))
        for series in dict.fromkeys(_series(c, label) for c, label in configs):
            cells = [f"{best[(series, b)][1]} ({100 * best[(series, b)][0]:.0f})" for b in budgets]
            print(f"| {series} | " + " | ".join(cells) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
