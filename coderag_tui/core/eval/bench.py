"""Speed measurements: index throughput per stage, query latency per stage, BM25 vs rank_bm25.

Latency is also given per million characters of indexed text (the unit the research reports
in), so numbers from repositories of different sizes can be compared. Queries are a
deterministic sample of identifiers and comment/docstring lines from the corpus itself.
"""

from __future__ import annotations

import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.core.records import Chunk, SearchRun
from coderag_tui.settings import Settings

_IDENTIFIER = re.compile(
    r"\b(?:def|class|function|func|fn|interface|struct|type)\s+([A-Za-z_][A-Za-z0-9_]{3,})"
)
_PROSE = re.compile(r'^\s*(?:#|//|\*|"""|\'\'\'|/\*\*?)\s*([A-Za-z][^\n]{20,120})$')


def sample_queries(chunks: Sequence[Chunk], n: int, *, seed: int = 0) -> list[str]:
    """About half identifiers (function/class names) and half comment or docstring lines."""
    identifiers: list[str] = []
    prose: list[str] = []
    for chunk in chunks:
        identifiers.extend(_IDENTIFIER.findall(chunk.text))
        for line in chunk.text.splitlines():
            match = _PROSE.match(line)
            if match and len(match.group(1).split()) >= 4:
                prose.append(match.group(1).strip().rstrip("\"'*/ "))
    rng = random.Random(seed)
    ids = sorted(set(identifiers))
    lines = sorted(set(prose))
    rng.shuffle(ids)
    rng.shuffle(lines)
    half = n // 2
    picked = lines[: n - min(half, len(ids))]
    picked += ids[: n - len(picked)]
    rng.shuffle(picked)
    return picked[:n]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation; 0.0 for no values."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


@dataclass(frozen=True, slots=True)
class StageLatency:
    """p50/p95 of one query stage in milliseconds, and per million characters of corpus."""

    stage: str
    p50_ms: float
    p95_ms: float
    p50_ms_per_mchar: float
    p95_ms_per_mchar: float


@dataclass(frozen=True, slots=True)
class IndexThroughput:
    """How long each indexing stage took on a fresh index, and bytes per second through it."""

    files: int
    bytes: int
    chars: int
    chunks: int
    stage_seconds: dict[str, float]
    elapsed_s: float

    def bytes_per_s(self, stage: str) -> float:
        seconds = self.stage_seconds.get(stage, 0.0)
        return self.bytes / seconds if seconds > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class Comparison:
    """Our BM25 against rank_bm25.BM25Okapi on the same tokens and queries."""

    ours_build_s: float
    theirs_build_s: float
    ours_p50_ms: float
    ours_p95_ms: float
    theirs_p50_ms: float
    theirs_p95_ms: float
    top10_overlap: float  # mean fraction of shared chunks in the two top-10 lists

    @property
    def speedup_p50(self) -> float:
        return self.theirs_p50_ms / self.ours_p50_ms if self.ours_p50_ms > 0 else float("inf")

    @property
    def build_ratio(self) -> float:
        return self.theirs_build_s / self.ours_build_s if self.ours_build_s > 0 else float("inf")


@dataclass(frozen=True)
class BenchReport:
    """One repository under one chunking: index throughput, query latency, optional comparison."""

    repo: str
    chunking: str
    tokenizer: str
    index: IndexThroughput
    queries: int
    latency: tuple[StageLatency, ...]
    comparison: Comparison | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "repo": self.repo,
            "chunking": self.chunking,
            "tokenizer": self.tokenizer,
            "index": {
                "files": self.index.files,
                "bytes": self.index.bytes,
                "chars": self.index.chars,
                "chunks": self.index.chunks,
                "elapsed_s": round(self.index.elapsed_s, 4),
                "stage_seconds": {k: round(v, 4) for k, v in self.index.stage_seconds.items()},
                "bytes_per_s": {
                    k: round(self.index.bytes_per_s(k), 1)
                    for k in self.index.stage_seconds
                    if self.index.stage_seconds[k] > 0
                },
            },
            "queries": self.queries,
            "latency": [
                {
                    "stage": s.stage,
                    "p50_ms": round(s.p50_ms, 4),
                    "p95_ms": round(s.p95_ms, 4),
                    "p50_ms_per_mchar": round(s.p50_ms_per_mchar, 4),
                    "p95_ms_per_mchar": round(s.p95_ms_per_mchar, 4),
                }
                for s in self.latency
            ],
            "notes": list(self.notes),
        }
        if self.comparison is not None:
            c = self.comparison
            data["compare_rank_bm25"] = {
                "ours_build_s": round(c.ours_build_s, 4),
                "rank_bm25_build_s": round(c.theirs_build_s, 4),
                "ours_p50_ms": round(c.ours_p50_ms, 4),
                "ours_p95_ms": round(c.ours_p95_ms, 4),
                "rank_bm25_p50_ms": round(c.theirs_p50_ms, 4),
                "rank_bm25_p95_ms": round(c.theirs_p95_ms, 4),
                "speedup_p50": round(c.speedup_p50, 2),
                "build_ratio": round(c.build_ratio, 2),
                "top10_overlap": round(c.top10_overlap, 3),
            }
        return data


def stage_latencies(runs: Sequence[SearchRun], chars: int) -> tuple[StageLatency, ...]:
    """p50/p95 per stage (in the order stages first appear) plus the total, over runs."""
    per_stage: dict[str, list[float]] = {}
    totals: list[float] = []
    for run in runs:
        for timing in run.timings:
            per_stage.setdefault(timing.stage, []).append(timing.ms)
        totals.append(run.total_ms)
    per_stage["total"] = totals
    scale = chars / 1e6 if chars > 0 else 1.0
    out = []
    for stage, values in per_stage.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        out.append(StageLatency(stage, p50, p95, p50 / scale, p95 / scale))
    return tuple(out)


def compare_rank_bm25(
    chunks: Sequence[Chunk],
    queries: Sequence[str],
    *,
    split_identifiers: bool,
    path_in_text: bool,
    k: int = 10,
    clock: Callable[[], float] = time.perf_counter,
) -> Comparison:
    """Build both BM25s on identical tokens, time each query's top-k, report both and overlap."""
    from rank_bm25 import BM25Okapi

    from coderag_tui.core.rank.lexical import BM25Index, BM25Options, chunk_tokens

    options = BM25Options(split_identifiers=split_identifiers, path_in_text=path_in_text)
    corpus = [chunk_tokens(c, options) for c in chunks]
    t = clock()
    ours = BM25Index.from_tokens(corpus, options)
    ours_build = clock() - t
    t = clock()
    theirs = BM25Okapi([doc or [""] for doc in corpus])
    theirs_build = clock() - t
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    overlaps: list[float] = []
    for query in queries:
        tokens = ours.tokenize_query(query)
        t = clock()
        mine = [i for i, _ in ours.search_tokens(tokens, k)]
        ours_ms.append((clock() - t) * 1000)
        t = clock()
        scores = np.asarray(theirs.get_scores(tokens))
        top = min(k, len(scores))
        best = np.argpartition(-scores, top - 1)[:top] if top else np.array([], dtype=int)
        other = [int(i) for i in best[np.argsort(-scores[best], kind="stable")] if scores[i] > 0]
        theirs_ms.append((clock() - t) * 1000)
        if mine or other:
            overlaps.append(len(set(mine) & set(other)) / max(len(mine), len(other)))
    return Comparison(
        ours_build_s=ours_build,
        theirs_build_s=theirs_build,
        ours_p50_ms=percentile(ours_ms, 50),
        ours_p95_ms=percentile(ours_ms, 95),
        theirs_p50_ms=percentile(theirs_ms, 50),
        theirs_p95_ms=percentile(theirs_ms, 95),
        top10_overlap=statistics.fmean(overlaps) if overlaps else 1.0,
    )


def run_bench(
    settings: Settings,
    *,
    queries: Sequence[str] | None = None,
    n_queries: int = 50,
    dense: bool = False,
    compare: bool = False,
    fresh: bool = True,
    tokenizer: str = "default",
) -> BenchReport:
    """Index settings.repo (into a throw-away index unless fresh=False), then time queries.

    With fresh=True the index and the embedding cache live in a temporary folder, so every
    stage is measured from scratch; with fresh=False settings.index_dir is used as is.
    """
    if fresh:
        with tempfile.TemporaryDirectory(prefix="coderag-bench-") as tmp:
            return _bench(
                settings.with_(index_dir=Path(tmp)),
                queries,
                n_queries,
                dense=dense,
                compare=compare,
                tokenizer=tokenizer,
            )
    return _bench(settings, queries, n_queries, dense=dense, compare=compare, tokenizer=tokenizer)


def _bench(
    settings: Settings,
    queries: Sequence[str] | None,
    n_queries: int,
    *,
    dense: bool,
    compare: bool,
    tokenizer: str,
) -> BenchReport:
    from coderag_tui.core.engine import Dense, Engine

    notes: list[str] = []
    engine = Engine(settings)
    try:
        t = time.perf_counter()
        lexical = engine.update_index(settings)
        elapsed = time.perf_counter() - t
        engine.use(lexical)
        report = lexical.report
        assert report is not None  # update_index always checks
        spec = settings.chunking_spec
        chunks = lexical.chunks
        store = engine.store()
        states = [s for s in store.file_states().values() if s.skip_reason is None]
        chars = sum(len(store.file_text(s.path) or "") for s in states)
        stage_seconds = dict(report.stage_seconds)
        stage_seconds["bm25 build"] = max(0.0, elapsed - report.elapsed_s)
        engine.use(Dense(reason="dense was not requested (pass --dense)"))
        if dense:
            from coderag_tui.core.rank.embedders import resolve_embedder

            choice = resolve_embedder(settings)
            if choice.embedder is None:
                engine.use(Dense(reason=choice.reason))
                notes.append(choice.reason)
            else:
                t = time.perf_counter()
                engine.use(engine.open_dense(settings, lexical, embedder=choice.embedder))
                stage_seconds["embed"] = time.perf_counter() - t
                if settings.stripe_cap:
                    n = settings.stripe_cap
                    notes.append(
                        f"dense embedded only each chunk's first {n} "
                        f"stripe{'' if n == 1 else 's'} (--dense-stripes {n})."
                    )
        throughput = IndexThroughput(
            files=len(states),
            bytes=sum(s.size for s in states),
            chars=chars,
            chunks=len(chunks),
            stage_seconds=stage_seconds,
            elapsed_s=sum(stage_seconds.values()),
        )
        asked = list(queries) if queries is not None else sample_queries(chunks, n_queries)
        runs: list[SearchRun] = []
        if asked:
            engine.search(asked[0], settings)  # warm-up: lazy imports and first-call costs
            runs = [engine.search(q, settings) for q in asked]
        comparison = None
        if compare:
            try:
                comparison = compare_rank_bm25(
                    chunks,
                    asked,
                    split_identifiers=settings.split_identifiers,
                    path_in_text=settings.path_in_text,
                )
            except ModuleNotFoundError:
                notes.append("rank_bm25 is not installed: `pip install rank-bm25` to compare.")
        return BenchReport(
            repo=str(settings.repo_root),
            chunking=spec.key,
            tokenizer=tokenizer,
            index=throughput,
            queries=len(runs),
            latency=stage_latencies(runs, chars),
            comparison=comparison,
            notes=tuple(notes),
        )
    finally:
        engine.close()
