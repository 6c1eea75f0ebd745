"""A Qdrant collection's coderag points: the marker that says whose it is, and chunk points.

Every chunk is one point whose id comes from (path, ordinal, lines, text hash), so the same
chunk text at the same place keeps its id and a push writes only what changed. Its sparse
vector "bm25" holds the document side of coderag's BM25 ("lucene"): for each word of
`chunk_tokens`, hashed to 32 bits, tf / (tf + k1 (1 - b + b len / avglen)); the collection's
IDF modifier makes the server multiply by log(1 + (N - n + 0.5) / (n + 0.5)), the same idf,
so a query vector of word counts scores every chunk as `BM25Index` does. A reserved point
with no vectors marks the collection as coderag's and records its schema, chunking,
tokenizer, model, average chunk length and the repository that made it; any other
collection is refused.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coderag_tui.core.backends.qdrant_server import (
    BackendError,
    Server,
    answering,
    client_models,
    connect,
)
from coderag_tui.core.hashing import text_hash
from coderag_tui.core.rank.lexical import BM25Options
from coderag_tui.core.rank.words import TOKENIZER_VERSION
from coderag_tui.core.records import Chunk
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.settings import Settings

SCHEMA_VERSION = 1  # bump when points or the marker change meaning; older collections are refused
SPARSE = "bm25"
DENSE = "dense"
_NAMESPACE = uuid.UUID("7b3c1f0e-5d2a-4c8e-9a61-0c0de4a9c0de")
MARKER_ID = str(uuid.uuid5(_NAMESPACE, "coderag collection marker"))
TERM_HASH = "blake2b-32"  # how a word becomes a sparse index (recorded in the marker)
SCROLL = 1024  # points per scroll page


def tokenizer_record(options: BM25Options) -> dict[str, Any]:
    return {**options.as_dict(), "version": TOKENIZER_VERSION, "hash": TERM_HASH}


@dataclass(frozen=True, kw_only=True)
class Marker:
    """What the reserved point says about its collection."""

    chunking: str
    tokenizer: dict[str, Any]
    model: str = ""  # the embedding model of the dense vectors ("": none)
    dim: int = 0
    avg_len: float = 1.0  # the average chunk length (words) the sparse weights use
    digest: str = ""  # sha1 of every point id in chunk order ("" while a push runs)
    chunks: int = 0
    dense_points: int = 0
    complete: bool = False
    origin: str = ""  # the repository that made it (`repository_identity`; "": not recorded)

    @property
    def options(self) -> BM25Options:
        t = self.tokenizer
        return BM25Options(
            split_identifiers=bool(t.get("split_identifiers")),
            path_in_text=bool(t.get("path_in_text")),
            method=str(t.get("method", "lucene")),
            k1=float(t.get("k1", 1.5)),
            b=float(t.get("b", 0.75)),
        )

    def payload(self) -> dict[str, Any]:
        return {
            "coderag_schema": SCHEMA_VERSION,
            "chunking": self.chunking,
            "tokenizer": self.tokenizer,
            "model": self.model,
            "dim": self.dim,
            "avg_len": self.avg_len,
            "digest": self.digest,
            "chunks": self.chunks,
            "dense_points": self.dense_points,
            "state": "complete" if self.complete else "pushing",
            "origin": self.origin,
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Marker:
        tokenizer = payload.get("tokenizer")
        return cls(
            chunking=str(payload.get("chunking", "")),
            tokenizer=dict(tokenizer) if isinstance(tokenizer, dict) else {},
            model=str(payload.get("model") or ""),
            dim=int(payload.get("dim") or 0),
            avg_len=float(payload.get("avg_len") or 1.0),
            digest=str(payload.get("digest") or ""),
            chunks=int(payload.get("chunks") or 0),
            dense_points=int(payload.get("dense_points") or 0),
            complete=payload.get("state") == "complete",
            origin=str(payload.get("origin") or ""),
        )


def read_marker(server: Server) -> Marker | None:
    """The collection's marker, None when there is no such collection, or BackendError when
    the collection is another tool's or another schema's."""
    client, name = server.client, server.collection
    if not client.collection_exists(name):
        return None
    records = client.retrieve(name, [MARKER_ID], with_payload=True, with_vectors=False)
    payload = records[0].payload if records else None
    if not isinstance(payload, dict) or "coderag_schema" not in payload:
        raise BackendError(
            f"{server.named} was not made by coderag (it has no coderag marker): name another "
            "with --collection, or delete it if it is yours to delete."
        )
    schema = payload.get("coderag_schema")
    if schema != SCHEMA_VERSION:
        raise BackendError(
            f"{server.named} holds coderag schema {one_line(str(schema))[:20]} and this "
            f"coderag reads schema {SCHEMA_VERSION}: push into a new collection "
            "(--collection NAME) or delete that one."
        )
    try:
        return Marker.from_payload(payload)
    except (TypeError, ValueError):
        raise BackendError(
            f"{server.named} has a damaged coderag marker: delete the collection and push again."
        ) from None


def write_marker(server: Server, marker: Marker) -> None:
    models = client_models()
    point = models.PointStruct(id=MARKER_ID, vector={}, payload=marker.payload())
    server.client.upsert(server.collection, [point], wait=True)


def check(settings: Settings) -> Marker | None:
    """Reach the server and read the collection's marker (None: no collection yet), so a face
    can stop before anything local changes."""
    server = connect(settings)
    with answering(server):
        return read_marker(server)


@functools.lru_cache(maxsize=1 << 20)
def term_index(word: str) -> int:
    """A word's sparse-vector index: 32 bits of its BLAKE2b hash (collisions are rare and only
    merge two words' counts)."""
    digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def point_id(path: str, ordinal: int, chunk: Chunk, hashed: str) -> str:
    """A chunk's point id: the same chunk text at the same place gives the same id."""
    key = f"{path}\x00{ordinal}\x00{chunk.start_line}\x00{chunk.end_line}\x00{hashed}"
    return str(uuid.uuid5(_NAMESPACE, key))


def chunk_ids(chunks: Sequence[Chunk]) -> tuple[list[str], list[int], list[str]]:
    """Every chunk's point id, its ordinal within its file and its text hash, in order."""
    ids: list[str] = []
    ordinals: list[int] = []
    hashes: list[str] = []
    previous, ordinal = None, 0
    for chunk in chunks:
        ordinal = ordinal + 1 if chunk.path == previous else 0
        previous = chunk.path
        hashed = text_hash(chunk.text)
        ids.append(point_id(chunk.path, ordinal, chunk, hashed))
        ordinals.append(ordinal)
        hashes.append(hashed)
    return ids, ordinals, hashes


def digest_of(ids: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(ids).encode("ascii")).hexdigest()


def document_vector(
    tokens: Sequence[str], avg_len: float, options: BM25Options
) -> tuple[list[int], list[float]]:
    """The document side of BM25 for one chunk: tf saturated by k1 and normalised by length
    (b), per hashed word; the server multiplies by idf."""
    counts = Counter(map(term_index, tokens))
    norm = options.k1 * (1.0 - options.b + options.b * len(tokens) / max(avg_len, 1e-9))
    return list(counts), [tf / (tf + norm) for tf in counts.values()]


def query_vector(tokens: Sequence[str]) -> tuple[list[int], list[float]]:
    """A query's words as counts (a repeated word counts twice, as in `BM25Index.scores`)."""
    counts = Counter(map(term_index, tokens))
    return list(counts), [float(c) for c in counts.values()]
