"""Exact cosine search over chunk embeddings, each chunk embedded as stripes of the model's window.

An embedder sees only its window (all-MiniLM-L6-v2: 256 tokens) while most 50-line chunks
are longer, so a long chunk is cut into overlapping stripes that each fit, every stripe is
embedded (never silently truncated), and the chunk scores as its best stripe. Stripe
vectors are cached by (model, sha1 of the stripe text), so unchanged text is never
embedded twice — across runs, chunk sizes and repositories.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from coderag_tui.core.models import Chunk
from coderag_tui.core.models_resolve import TOKEN_MARGIN

if TYPE_CHECKING:
    from coderag_tui.core.embed import Embedder

STRIPE_OVERLAP = 32  # tokens shared by neighbouring stripes, so no line is only ever seen cut
CACHE_SLICE = 2000  # hashes per cache lookup


class VectorCache(Protocol):
    """What DenseIndex needs from the embedding cache (core.store.EmbeddingCache provides it)."""

    def get_many(self, model: str, text_hashes: Sequence[str]) -> Mapping[str, np.ndarray]: ...

    def put_many(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None: ...


@dataclass(frozen=True)
class Stripes:
    """Every chunk's stripes, flattened: stripe texts, their token counts and owning chunk."""

    texts: list[str]
    tokens: list[int]
    chunk_of: np.ndarray  # (n_stripes,) int64, non-decreasing


@dataclass(frozen=True)
class DenseBuildStats:
    """What a build did: how many stripes came from the cache and how many were embedded."""

    chunks: int
    stripes: int
    unique_stripes: int
    cached: int
    embedded: int
    cancelled: bool
    seconds: float


_APPROX_TOKEN = re.compile(r"\w+|[^\w\s]")


def _approx_spans(text: str) -> list[tuple[int, int]]:
    """Word-and-punctuation spans, for embedders that do not expose their tokenizer."""
    return [m.span() for m in _APPROX_TOKEN.finditer(text)]


def _cut(
    text: str, n: int, window: int, overlap: int, span: Callable[[int], tuple[int, int]]
) -> list[tuple[str, int]]:
    """Cut a text of n tokens into stripes of at most `window` tokens sharing `overlap` tokens."""
    if n <= window:
        return [(text, n)]
    step = max(1, window - overlap)
    out: list[tuple[str, int]] = []
    start = 0
    while True:
        end = min(n, start + window)
        first = span(start)[0]
        last = len(text) if end == n else span(end - 1)[1]
        out.append((text[first:last], end - start))
        if end == n:
            return out
        start += step


def stripe_window(embedder: Embedder) -> tuple[Any, int]:
    """The embedder's own fast tokenizer (None if it has none) and its stripe window in tokens."""
    tokenizer: Any = getattr(embedder, "tokenizer", None)
    window = int(getattr(embedder, "window", 0) or max(4, embedder.max_tokens - 2 - TOKEN_MARGIN))
    return tokenizer, window


def split_stripes(
    texts: Sequence[str], tokenizer: Any, window: int, overlap: int = STRIPE_OVERLAP
) -> Stripes:
    """Cut texts into stripes of at most `window` tokens of `tokenizer` (word spans if None)."""
    overlap = max(0, min(overlap, window // 4))
    stripe_texts: list[str] = []
    stripe_tokens: list[int] = []
    owners: list[int] = []
    if tokenizer is not None:
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for i, (text, encoding) in enumerate(zip(texts, encodings, strict=True)):
            n = len(encoding.ids)
            for stripe, count in _cut(text, n, window, overlap, encoding.token_to_chars):
                stripe_texts.append(stripe)
                stripe_tokens.append(count)
                owners.append(i)
    else:
        for i, text in enumerate(texts):
            spans = _approx_spans(text)
            for stripe, count in _cut(text, len(spans), window, overlap, spans.__getitem__):
                stripe_texts.append(stripe)
                stripe_tokens.append(count)
                owners.append(i)
    return Stripes(stripe_texts, stripe_tokens, np.asarray(owners, dtype=np.int64))


def text_hash(text: str) -> str:
    """sha1 hex of the UTF-8 text: the embedding cache key next to the model name."""
    return hashlib.sha1(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _lookup(cache: VectorCache, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for i in range(0, len(hashes), CACHE_SLICE):
        found.update(cache.get_many(model, hashes[i : i + CACHE_SLICE]))
    vectors = {h: np.asarray(v, dtype=np.float32).reshape(-1) for h, v in found.items()}
    if vectors:
        # A folder reused for another model could leave vectors of another size: re-embed those.
        dim = Counter(v.shape[0] for v in vectors.values()).most_common(1)[0][0]
        vectors = {h: v for h, v in vectors.items() if v.shape[0] == dim}
    return vectors


class DenseIndex:
    """One float32 matrix of stripe vectors and the chunk each stripe belongs to."""

    def __init__(
        self, matrix: np.ndarray, stripe_chunk: np.ndarray, n_chunks: int, stats: DenseBuildStats
    ) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.stripe_chunk = np.asarray(stripe_chunk, dtype=np.int64)
        self.n_chunks = n_chunks
        self.stats = stats
        # Stripes are grouped by chunk, so each present chunk is one contiguous run.
        if len(self.stripe_chunk):
            change = np.flatnonzero(np.diff(self.stripe_chunk)) + 1
            self._starts = np.concatenate(([0], change)).astype(np.int64)
        else:
            self._starts = np.zeros(0, dtype=np.int64)
        self._chunk_ids = self.stripe_chunk[self._starts]
        self._one_stripe_each = len(self._starts) == len(self.stripe_chunk)

    @property
    def n_stripes(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    @property
    def complete(self) -> bool:
        """Does every chunk have its vectors (False after a cancelled build)?"""
        return not self.stats.cancelled and len(self._chunk_ids) == self.n_chunks

    @classmethod
    def build(
        cls,
        chunks: Sequence[Chunk],
        embedder: Embedder,
        cache: VectorCache,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        batch_size: int = 32,
        overlap: int = STRIPE_OVERLAP,
    ) -> DenseIndex:
        """Embed every chunk's stripes that the cache lacks and assemble the matrix.

        Missing stripes are embedded shortest first in batches (less padding) and written to
        the cache after each batch, so a cancelled build keeps what it embedded; the returned
        index then covers the chunks whose stripes are all known. progress(done, total)
        counts unique stripes, cached ones included.
        """
        started = time.perf_counter()
        tokenizer, window = stripe_window(embedder)
        stripes = split_stripes([c.text for c in chunks], tokenizer, window, overlap)
        hashes = [text_hash(t) for t in stripes.texts]
        first: dict[str, int] = {}
        for i, h in enumerate(hashes):
            first.setdefault(h, i)
        unique = list(first)
        vectors = _lookup(cache, embedder.name, unique)
        cached = len(vectors)
        total = len(unique)
        if progress is not None:
            progress(cached, total)
        missing = sorted(
            (h for h in unique if h not in vectors), key=lambda h: stripes.tokens[first[h]]
        )
        embedded = 0
        cancelled = False
        size = max(1, batch_size)
        for i in range(0, len(missing), size):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            batch = missing[i : i + size]
            matrix = embedder.embed_documents([stripes.texts[first[h]] for h in batch])
            rows = [np.asarray(row, dtype=np.float32) for row in matrix]
            cache.put_many(embedder.name, list(zip(batch, rows, strict=True)))
            vectors.update(zip(batch, rows, strict=True))
            embedded += len(batch)
            if progress is not None:
                progress(cached + embedded, total)
        stats = DenseBuildStats(
            chunks=len(chunks),
            stripes=len(hashes),
            unique_stripes=total,
            cached=cached,
            embedded=embedded,
            cancelled=cancelled,
            seconds=time.perf_counter() - started,
        )
        return cls._assemble(stripes.chunk_of, hashes, vectors, len(chunks), stats)

    @classmethod
    def _assemble(
        cls,
        chunk_of: np.ndarray,
        hashes: list[str],
        vectors: Mapping[str, np.ndarray],
        n_chunks: int,
        stats: DenseBuildStats,
    ) -> DenseIndex:
        """The matrix over chunks whose stripes all have vectors (all chunks unless cancelled)."""
        known = np.fromiter((h in vectors for h in hashes), dtype=bool, count=len(hashes))
        if not known.all():
            incomplete = np.unique(chunk_of[~known])
            known &= ~np.isin(chunk_of, incomplete)
        keep = np.flatnonzero(known)
        dim = next((v.shape[0] for v in vectors.values()), 0)
        if len(keep):
            matrix = np.stack([vectors[hashes[i]] for i in keep]).astype(np.float32, copy=False)
        else:
            matrix = np.zeros((0, dim), dtype=np.float32)
        return cls(matrix, chunk_of[keep], n_chunks, stats)

    def chunk_scores(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, best-stripe cosine of each) for every chunk in the index."""
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if self.n_stripes == 0:
            return self._chunk_ids, np.zeros(0, dtype=np.float32)
        if query.shape[0] != self.dim:
            raise ValueError(
                f"the query vector has {query.shape[0]} dimensions but the index has {self.dim}: "
                "embed the query with the model that built the index"
            )
        scores = self.matrix @ query
        if not self._one_stripe_each:
            scores = np.maximum.reduceat(scores, self._starts)
        return self._chunk_ids, scores

    def search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k chunks nearest the query by cosine (best stripe), best first."""
        ids, scores = self.chunk_scores(query_vector)
        k = min(int(k), len(scores))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        order = top[np.lexsort((ids[top], -scores[top]))]  # ties: lower chunk index first
        return [(int(ids[i]), float(scores[i])) for i in order]
