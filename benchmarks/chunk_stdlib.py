"""Time walk, read and each chunking strategy over the running interpreter's standard library.

Run: PYTHONPATH=. python benchmarks/chunk_stdlib.py [ROOT]   (prints numbers; asserts nothing
about speed, but checks that `lines` and `ast` chunks cover every line exactly once).
`ast:64 units` is `ast` without merging small siblings (one chunk per function/method),
to show what the cAST-style merge of `ast:64` changes; each row gives the chunk count and
the mean and median lines per chunk.
"""

from __future__ import annotations

import collections
import statistics
import sys
import sysconfig
import time
from pathlib import Path

from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.walk import read_source, walk
from coderag_tui.core.records import ChunkingSpec


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else sysconfig.get_paths()["stdlib"])
    t0 = time.perf_counter()
    result = walk(root)
    t_walk = time.perf_counter() - t0
    t0 = time.perf_counter()
    texts = []
    for file in result.files:
        out = read_source(root, file)
        if isinstance(out, tuple):
            texts.append((file, out[0]))
    t_read = time.perf_counter() - t0
    mb = sum(len(t.encode()) for _, t in texts) / 1e6
    print(f"root {root}")
    listed, skipped = len(result.files), len(result.skipped)
    print(f"walk   {t_walk:6.2f} s  {listed} files listed, {skipped} skipped")
    print(f"read   {t_read:6.2f} s  {len(texts)} texts, {mb:.1f} MB")
    runs = [
        ("lines:64:0", ChunkingSpec("lines", 64), True),
        ("ast:64 units", ChunkingSpec("ast", 64), False),
        ("ast:64", ChunkingSpec("ast", 64), True),
        ("file", ChunkingSpec("file"), True),
    ]
    for label, spec, merge in runs:
        kinds: collections.Counter[str] = collections.Counter()
        sizes: list[int] = []
        bad = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for file, text in texts:
            chunks = chunk_file(file.path, text, file.language, spec, merge_siblings=merge)
            kinds.update(c.kind for c in chunks)
            sizes.extend(c.n_lines for c in chunks)
            if spec.strategy != "file" and text:
                n = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
                covered = [i for c in chunks for i in range(c.start_line, c.end_line + 1)]
                bad += covered != list(range(1, n + 1))
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        mean = statistics.fmean(sizes) if sizes else 0.0
        median = statistics.median(sizes) if sizes else 0.0
        print(
            f"chunk {label:<12} {elapsed:6.2f} s (cpu {cpu:.2f} s)  "
            f"{len(sizes)} chunks, lines/chunk mean {mean:.1f} median {median:g} "
            f"({mb / elapsed:.1f} MB/s), coverage errors: {bad}, kinds: {dict(kinds.most_common())}"
        )


if __name__ == "__main__":
    main()
