"""Time token counting and prompt packing on the standard library's `asyncio` and `email` code.

Run: PYTHONPATH=. python benchmarks/bench_prompt.py   (prints numbers; asserts nothing about
speed, but checks that every packed prompt is within its budget). The hits are the 64-line
chunks of those packages in a fixed shuffled order, standing in for a ranking; each row packs
them with the markdown template at one budget with a fresh counter (no cached counts).
"""

from __future__ import annotations

import random
import sysconfig
import time
from pathlib import Path

from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.prompt.pack import PackInputs, pack
from coderag_tui.core.prompt.render import load_template
from coderag_tui.core.prompt.tokens import TokenCounter, tiktoken_cache_dir, token_counter
from coderag_tui.core.records import ChunkingSpec, Hit


def fresh_counter() -> TokenCounter:
    """A counter with an empty cache, so each row pays for every count it needs."""
    return token_counter("cl100k_base", cache_dir=tiktoken_cache_dir())


def main() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts: dict[str, str] = {}
    for package in ("asyncio", "email"):
        for path in sorted((stdlib / package).rglob("*.py")):
            texts[str(path.relative_to(stdlib))] = path.read_text(encoding="utf-8")
    spec = ChunkingSpec("lines", 64)
    chunks = [c for p, t in texts.items() for c in chunk_file(p, t, "python", spec)]
    random.Random(0).shuffle(chunks)
    hits = [Hit(c, 1.0 / i, i) for i, c in enumerate(chunks, start=1)]
    megabytes = sum(len(t.encode()) for t in texts.values()) / 1e6

    counter = fresh_counter()
    counter.count("warm up the encoder")
    t0 = time.perf_counter()
    for c in chunks:
        counter.count(c.text)
    single_s = time.perf_counter() - t0
    counter = fresh_counter()
    t0 = time.perf_counter()
    total = sum(counter.count_many([c.text for c in chunks]))
    batch_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in chunks:
        counter.count(c.text)
    cached_s = time.perf_counter() - t0
    print(f"corpus  {len(texts)} files, {megabytes:.1f} MB, {len(chunks)} chunks, {total} tokens")
    print(
        f"count   batch {batch_s:.2f} s ({total / batch_s / 1e6:.2f} M tok/s), "
        f"one by one {single_s:.2f} s, cached {cached_s * 1000:.1f} ms"
    )
    template = load_template("markdown")
    task = "Why does a cancelled task leave the event loop running?"
    for budget in (4_000, 8_000, 32_000, 128_000):
        counter = fresh_counter()
        t0 = time.perf_counter()
        packed = pack(
            hits,
            PackInputs(
                budget=budget, counter=counter, template=template, task=task, file_text=texts.get
            ),
        )
        seconds = time.perf_counter() - t0
        assert counter.count(packed.text) <= budget
        print(
            f"pack    {budget:>7,} tokens: {seconds:5.2f} s  {packed.tokens:>7,} used, "
            f"{len(packed.blocks)} blocks, {len(packed.dropped)} dropped"
        )


if __name__ == "__main__":
    main()
