"""The secret scan's recall on provider key formats and the files it flags in real folders.

Usage: PYTHONPATH=. python benchmarks/bench_secrets.py [--folder DIR ...] [--list] [--seed N]

Recall: every format of `tests/fixtures/secret_formats.py` (real-shaped fake keys, made from
--seed) in its bare line (no credential word near it) and as a named config value. A key is
*found* when the findings cover it whole (a redaction would leave none of it) and *touched*
when they cover a part. Then the lines of ordinary code that must not be flagged
(`NOT_SECRETS`) and, for each folder (default: the running interpreter's standard library
and this repository), the files the indexer would read, how many of them the scan flags,
by kind, and the scan's CPU time (one thread, the detectors imported before timing).
`--list` prints each flagged file with its kinds.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

from coderag_tui.core.index import secret_scan
from coderag_tui.core.index.walk import read_source, walk
from coderag_tui.core.records import SecretFinding
from tests.fixtures.secret_formats import FORMATS, NOT_SECRETS, cases


def _offsets(text: str, findings: tuple[SecretFinding, ...]) -> set[int]:
    """The character offsets in `text` that the findings cover."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    covered: set[int] = set()
    for f in findings:
        covered.update(range(starts[f.line - 1] + f.col, starts[f.end_line - 1] + f.end_col))
    return covered


def recall(seed: int) -> None:
    by_context: dict[str, list[int]] = {}
    missed: list[str] = []
    for case in cases(seed):
        covered = _offsets(case.text, secret_scan.scan_text(case.path, case.text))
        span = set(range(case.start, case.start + len(case.key)))
        span -= {i for i in span if case.text[i] == "\n"}
        found, touched = span <= covered, bool(span & covered)
        counts = by_context.setdefault(case.context, [0, 0, 0])
        counts[0] += found
        counts[1] += touched
        counts[2] += 1
        if not found:
            missed.append(f"{case.context}: {case.format}" + (" (in part)" if touched else ""))
    print(f"recall on {len(FORMATS)} formats (seed {seed}):")
    total = [sum(c[i] for c in by_context.values()) for i in range(3)]
    for context, (found, touched, n) in [*by_context.items(), ("all", tuple(total))]:
        print(f"  {context:6} found whole {found}/{n} ({found / n:.0%}), touched {touched}/{n}")
    for line in missed:
        print(f"  missed  {line}")
    flagged = [
        f"{path}: {line!r}" for path, line in NOT_SECRETS if secret_scan.scan_text(path, line)
    ]
    print(f"ordinary lines flagged: {len(flagged)}/{len(NOT_SECRETS)}")
    for line in flagged:
        print(f"  flagged {line}")


def folder(root: Path, *, show: bool) -> None:
    listed = walk(root, exclude=[root / "site-packages"])  # installed code: not the stdlib
    texts = []
    for file in listed.files:
        outcome = read_source(root, file)
        if isinstance(outcome, tuple):
            texts.append((file.path, outcome[0]))
    secret_scan.warm()
    flagged: dict[str, tuple[str, ...]] = {}
    kinds: Counter[str] = Counter()
    cpu = time.process_time()
    for path, text in texts:
        found = secret_scan.scan_text(path, text)
        if found:
            flagged[path] = secret_scan.kinds_in(found, 1, max(f.end_line for f in found))
    cpu = time.process_time() - cpu
    for file_kinds in flagged.values():
        kinds.update(file_kinds)
    size = sum(len(t) for _, t in texts) / 1e6
    print(
        f"{root}: {len(flagged)} of {len(texts)} files flagged ({size:.1f} M characters); "
        f"scan CPU {cpu:.2f} s"
    )
    for kind, n in kinds.most_common():
        print(f"  {n:4}  {kind}")
    if show:
        for path, file_kinds in sorted(flagged.items()):
            print(f"  {path}: {', '.join(file_kinds)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--folder", type=Path, action="append")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--list", action="store_true", help="print every flagged file")
    args = parser.parse_args(argv)
    recall(args.seed)
    here = Path(__file__).resolve().parent.parent
    for root in args.folder or [Path(sysconfig.get_paths()["stdlib"]), here]:
        folder(root, show=args.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
