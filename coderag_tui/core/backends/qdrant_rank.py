"""Ranking on a Qdrant collection: BM25 by its sparse index, dense by its multivectors.

`open_remote` opens a collection for searching: its chunk list (the local index's when it
is exactly the one pushed, else read from the points' payloads) and `RemoteLexical`.
`RemoteLexical` (a `LexicalIndex`) and `RemoteDense` (a `DenseRanker`) answer the queries
`Searcher` asks with positions in that chunk list; fusion and the code signals stay on this
machine. A chunk's dense vectors are one per stripe, compared by MAX_SIM, so a chunk scores
as its best stripe as `DenseIndex` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from coderag_tui.core.backends.qdrant_points import (
    DENSE,
    MARKER_ID,
    SCROLL,
    SPARSE,
    Marker,
    chunk_ids,
    digest_of,
    query_vector,
    read_marker,
    tokenizer_record,
)
from coderag_tui.core.backends.qdrant_server import (
    BackendError,
    Server,
    answering,
    client_models,
    connect,
)
from coderag_tui.core.rank.lexical import BM25Options
from coderag_tui.core.rank.words import tokenize
from coderag_tui.core.records import Chunk
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import Definitions, Later
    from coderag_tui.settings import Settings

# Points fetched beyond k, so chunks tied with the k-th score are ordered by position as the
# local index orders them.
SLACK = 16


def _chunk_of(payload: Any) -> tuple[Chunk, int, bool] | None:
    """A chunk, its ordinal and whether it has dense vectors, from a point's payload (None when
    the payload is not a chunk's: payloads are someone else's data)."""
    if not isinstance(payload, dict):
        return None
    path, text, kind = payload.get("path"), payload.get("text"), payload.get("kind")
    start, end, ordinal = payload.get("start_line"), payload.get("end_line"), payload.get("ord")
    language = payload.get("language")
    if not (isinstance(path, str) and isinstance(text, str) and isinstance(kind, str)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (start, end, ordinal)):
        return None
    if language is not None and not isinstance(language, str):
        return None
    chunk = Chunk(path, int(start), int(end), kind, language, text)  # type: ignore[arg-type]
    return chunk, int(ordinal), bool(payload.get("dense"))  # type: ignore[arg-type]


def _collection_chunks(server: Server) -> tuple[list[Chunk], list[str], int, int]:
    """The collection's chunks ordered by path and ordinal, their point ids, how many of them
    have dense vectors, and how many points were not chunks."""
    found: list[tuple[str, int, Chunk, str, bool]] = []
    skipped = 0
    offset = None
    while True:
        records, offset = server.client.scroll(
            server.collection, limit=SCROLL, offset=offset, with_payload=True, with_vectors=False
        )
        for record in records:
            pid = str(record.id)
            if pid == MARKER_ID:
                continue
            read = _chunk_of(record.payload)
            if read is None:
                skipped += 1
                continue
            chunk, ordinal, dense = read
            found.append((chunk.path, ordinal, chunk, pid, dense))
        if offset is None:
            break
    found.sort(key=lambda item: (item[0], item[1]))
    dense_points = sum(1 for item in found if item[4])
    return [f[2] for f in found], [f[3] for f in found], dense_points, skipped


@dataclass(frozen=True)
class Remote:
    """A collection opened for searching: the chunk list positions refer to, and its BM25."""

    chunks: list[Chunk]
    lexical: RemoteLexical
    generation: str
    from_local: bool  # the chunk list is the local index's (the one that was pushed)
    notices: tuple[str, ...] = ()


def open_remote(settings: Settings, local: Callable[[], list[Chunk] | None]) -> Remote:
    """Open the collection for searching.

    The chunk list is `local()` (the local index's) when it is exactly the pushed one, else
    it is read from the collection's payloads. Raises BackendError (one sentence) when the
    server cannot be reached or the collection is missing or not coderag's.
    """
    server = connect(settings)
    notices: list[str] = []
    with answering(server):
        marker = read_marker(server)
        if marker is None:
            raise BackendError(
                f"there is no {server.named[4:]}: push it first with `coderag index --backend "
                "qdrant --url URL` on the repository (or name one with --collection)."
            )
        chunks = local() if marker.complete and marker.digest else None
        ids = chunk_ids(chunks)[0] if chunks is not None else []
        from_local = chunks is not None and digest_of(ids) == marker.digest
        if from_local and chunks is not None:
            dense_points = marker.dense_points
        else:
            chunks, ids, dense_points, skipped = _collection_chunks(server)
            if skipped:
                notices.append(f"{server.named} holds {skipped} points that are not chunks.")
    if not marker.complete:
        notices.append(
            f"the last push to {server.named} did not finish: searches see the chunks that "
            "arrived; run `coderag index --backend qdrant` again to finish it."
        )
    wanted = tokenizer_record(BM25Options.of(settings))
    if {k: marker.tokenizer.get(k) for k in wanted} != wanted:
        notices.append(
            "BM25 reads the query as the collection was pushed "
            f"(split_identifiers {_ON_OFF[marker.options.split_identifiers]}, path_in_text "
            f"{_ON_OFF[marker.options.path_in_text]}), not as the settings say."
        )
    generation = marker.digest if from_local else f"{marker.digest or 'pushing'}:{len(ids)}"
    lexical = RemoteLexical(server, ids, marker, dense_points)
    return Remote(chunks, lexical, generation, from_local, tuple(notices))


_ON_OFF = {True: "on", False: "off"}


def _ranked(
    points: Sequence[Any], positions: dict[str, int], k: int, *, matched: bool = False
) -> list[tuple[int, float]]:
    """(position, score) of the returned points, best first, ties by position (as locally);
    with `matched`, only those with a positive score (BM25's chunks that hold a query word)."""
    found = [
        (positions[pid], float(p.score))
        for p in points
        if (pid := str(p.id)) in positions and (p.score > 0 or not matched)
    ]
    found.sort(key=lambda item: (-item[1], item[0]))
    return found[:k]


class RemoteLexical:
    """BM25 answered by the server's sparse index, with positions in the engine's chunk list
    (a `LexicalIndex`, so the Searcher and the code signals take it unchanged)."""

    def __init__(
        self, server: Server, ids: Sequence[str], marker: Marker, dense_points: int
    ) -> None:
        self.options = marker.options
        self.n_docs = len(ids)
        self.definitions: Definitions | None = None
        self.definitions_later: Later | None = None
        self.server = server
        self.marker = marker
        self.dense_points = dense_points
        self.positions = {pid: i for i, pid in enumerate(ids)}

    @property
    def empty(self) -> bool:
        return self.n_docs == 0

    def tokenize_query(self, query: str) -> list[str]:
        """The query's words, split exactly as the pushed chunks were."""
        return tokenize(query, split_identifiers=self.options.split_identifiers)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, score) for a query string; an empty or unknown query gives []."""
        return self.search_tokens(self.tokenize_query(query), k)

    def search_tokens(self, tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, score) for query words, best first, ties by chunk order."""
        if k <= 0 or not tokens or self.empty:
            return []
        models = client_models()
        indices, values = query_vector(tokens)
        with answering(self.server):
            answer = self.server.client.query_points(
                self.server.collection,
                query=models.SparseVector(indices=indices, values=values),
                using=SPARSE,
                limit=k + SLACK,
                with_payload=False,
                with_vectors=False,
            )
        return _ranked(answer.points, self.positions, k, matched=True)

    def warm_up(self) -> None:
        """One query, so the first real query's timing holds no connection set-up."""
        self.search_tokens(["coderag"], 1)

    def dense(self, model: str) -> tuple[RemoteDense | None, str]:
        """The collection's dense list for an embedder named `model`, or why there is none."""
        held = self.marker.model
        if not held or not self.dense_points:
            return None, (
                f"dense search is off: {self.server.named} holds no dense vectors — push them "
                "with `coderag index --dense --backend qdrant`."
            )
        if held != model:
            return None, (
                f"dense search is off: {self.server.named} holds vectors of {one_line(held)}, "
                f"not of {one_line(model)} — search with --embed-model {one_line(held)}, or "
                "push again with this model."
            )
        return RemoteDense(self), ""


class RemoteDense:
    """Dense search answered by the server (best stripe by MAX_SIM), positions as
    RemoteLexical's: a `DenseRanker`, so the Searcher and the engine's stage take it. It holds
    no vectors; the collection's marker says which model made them and how many chunks have
    them."""

    def __init__(self, lexical: RemoteLexical) -> None:
        self.lexical = lexical
        self.model = lexical.marker.model
        self.n_chunks = lexical.n_docs
        self.dim = lexical.marker.dim
        self.covered = min(lexical.dense_points, self.n_chunks)

    @property
    def coverage(self) -> float:
        """The share of chunks the collection has vectors of, 0..1 (1 for an empty one)."""
        return self.covered / self.n_chunks if self.n_chunks else 1.0

    @property
    def complete(self) -> bool:
        return self.covered == self.n_chunks

    @property
    def embedded(self) -> int:
        """Nothing is embedded here: the vectors were pushed."""
        return 0

    def search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k chunks nearest the query by cosine (best stripe), best first."""
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if k <= 0 or self.covered == 0:
            return []
        if query.shape[0] != self.dim:
            raise ValueError(
                f"the query vector has {query.shape[0]} dimensions but the collection has "
                f"{self.dim}: embed the query with the model that pushed the vectors"
            )
        server = self.lexical.server
        with answering(server):
            answer = server.client.query_points(
                server.collection,
                query=[query.tolist()],
                using=DENSE,
                limit=k + SLACK,
                with_payload=False,
                with_vectors=False,
            )
        return _ranked(answer.points, self.lexical.positions, k)
