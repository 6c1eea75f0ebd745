"""The BM25 word splitter against the reference one it replaced, on the standard library.

    PYTHONPATH=. python benchmarks/bench_tokenize.py [--source DIR] [--runs 5]

Both split every text file under the folder (default: the running interpreter's standard
library without site-packages), in the same process, interleaved run by run, and the script
prints the median process CPU seconds of each, their ratio, the words made, whether the words
are identical, and the load average at the start (the machine's state).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from coderag_tui.core.rank.words import tokenize
from tests.fixtures import reference_words


def texts(source: Path) -> list[str]:
    found = []
    for path in sorted(source.rglob("*")):
        if "site-packages" in path.parts or "__pycache__" in path.parts or not path.is_file():
            continue
        if path.stat().st_size <= 1 << 20:
            found.append(path.read_bytes().decode("utf-8", "replace"))
    return found


def cpu(split: Callable[..., list[str]], corpus: list[str], *, identifiers: bool) -> float:
    started = time.process_time()
    for text in corpus:
        split(text, split_identifiers=identifiers)
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    corpus = texts(args.source)
    chars = sum(map(len, corpus))
    print(f"{len(corpus)} files, {chars / 1e6:.1f} M characters under {args.source}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for identifiers in (False, True):
        same = all(
            tokenize(t, split_identifiers=identifiers)
            == reference_words.tokenize(t, split_identifiers=identifiers)
            for t in corpus
        )
        words = sum(len(tokenize(t, split_identifiers=identifiers)) for t in corpus)
        ours, theirs = [], []
        for _ in range(max(1, args.runs)):
            theirs.append(cpu(reference_words.tokenize, corpus, identifiers=identifiers))
            ours.append(cpu(tokenize, corpus, identifiers=identifiers))
        a, b = statistics.median(theirs), statistics.median(ours)
        print(
            f"split_identifiers={identifiers!s:<5} reference {a:5.2f} s  now {b:5.2f} s  "
            f"x{a / b:4.2f}  {words:,} words, identical: {same}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
