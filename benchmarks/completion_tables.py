"""Markdown tables of `coderag eval --completion` runs (their `--json-file` outputs).

    python benchmarks/completion_tables.py NAME=run.json [NAME=signals.json:LABEL ...]
    python benchmarks/completion_tables.py --across BUDGET NAME=run.json [NAME=run.json ...]
    python benchmarks/completion_tables.py --by-chunk B1,B2,... NAME=run.json [...]

For each run: per mode, tokenizer and chunking, file Acc@1/Acc@5/MRR and the share of rows
whose definition is packed within each budget; then, per budget, the chunking that packs
the most rows for each mode (the paper's "best chunk size grows with the budget"). A file
given as `path:LABEL` has its modes renamed LABEL (e.g. `fused` with dense off is BM25 plus
coderag's code signals).

`--across BUDGET` prints one table over several repositories instead: a row per list,
tokenizer and chunking, a column per repository with file MRR and the share packed at BUDGET
tokens, and their means (each repository weighs the same). `--by-chunk B1,B2,...` prints,
per run, a row per list and tokenizer and a column per chunking: file MRR, then the shares
packed at those budgets (the grid: splitter x scorer x chunk x budget).
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


def across(budget: str, argv: list[str]) -> int:
    """One row per configuration, one column per repository: MRR / packed % at `budget`."""
    table: dict[tuple[str, str, str], dict[str, tuple[float, float | None]]] = defaultdict(dict)
    names: list[str] = []
    for arg in argv:
        name, _, path = arg.partition("=")
        names.append(name)
        for c in json.loads(Path(path).read_text(encoding="utf-8"))["configs"]:
            key = (c["mode"], c["tokenizer"], c["chunking"])
            packed = c.get("packed")  # None: a list of files (imports, path-distance) packs none
            table[key][name] = (c["files"]["mrr"], packed.get(budget, 0.0) if packed else None)
    head = ["list", "tokenizer/scorer", "chunking", *names, "mean"]
    print(f"File MRR / definition packed within {_budget(budget)} tokens (%)\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (mode, tok, chunking), cells in table.items():
        row = [cells.get(n) for n in names]
        got = [c for c in row if c is not None]
        packs = [p for _, p in got if p is not None]
        mean = (
            sum(m for m, _ in got) / len(got),
            sum(packs) / len(packs) if len(packs) == len(got) else None,
        )
        shown = [
            "–" if c is None else f"{c[0]:.3f}" + ("" if c[1] is None else f" / {100 * c[1]:.0f}")
            for c in (*row, mean)
        ]
        print(f"| {mode} | {tok} | {chunking} | " + " | ".join(shown) + " |")
    return 0


def by_chunk(budgets: list[str], argv: list[str]) -> int:
    """Per run: one row per list and tokenizer, one column per chunking."""
    for arg in argv:
        name, _, path = arg.partition("=")
        configs = json.loads(Path(path).read_text(encoding="utf-8"))["configs"]
        chunkings = list(dict.fromkeys(c["chunking"] for c in configs))
        cells: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
        for c in configs:
            packed = c.get("packed") or {}
            shares = "/".join(f"{100 * packed.get(b, 0.0):.0f}" for b in budgets)
            cells[(c["mode"], c["tokenizer"])][c["chunking"]] = (
                f"{c['files']['mrr']:.3f} · {shares}"
            )
        shown = "/".join(_budget(b) for b in budgets)
        print(f"**{name}**: file MRR · definition packed within {shown} tokens (%)\n")
        print("| list | tokenizer/scorer | " + " | ".join(chunkings) + " |")
        print("|" + "---|" * (len(chunkings) + 2))
        for (mode, tok), row in cells.items():
            print(f"| {mode} | {tok} | " + " | ".join(row.get(ch, "–") for ch in chunkings) + " |")
        print()
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--across"] and len(argv) > 2:
        return across(argv[1], argv[2:])
    if argv[:1] == ["--by-chunk"] and len(argv) > 2:
        return by_chunk(argv[1].split(","), argv[2:])
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
