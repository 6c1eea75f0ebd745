"""A shared index on a Qdrant server: the chunks pushed once, BM25 and dense ranked there.

`push` upserts every chunk of a lexical stage as one point of a collection: its payload
(path, ordinal, lines, kind, language, text, text hash), a sparse vector "bm25" and, when
the chunk has model vectors, a multivector "dense" (one vector per stripe, compared by
MAX_SIM, so a chunk scores as its best stripe as `DenseIndex` does). The sparse vector holds
the document side of coderag's BM25 ("lucene"): for each word of `chunk_tokens`, hashed to 32
bits, tf / (tf + k1 (1 - b + b len / avglen)); the collection's IDF modifier makes the server
multiply by log(1 + (N - n + 0.5) / (n + 0.5)), the same idf, so a query vector of word
counts scores every chunk as `BM25Index` does.

Point ids come from (path, ordinal, lines, text hash), so a push only writes what changed,
deletes the points of chunks that are gone, and a push that stopped half-way is finished by
the next one. A reserved point with no vectors marks the collection as coderag's and records
its schema, chunking, tokenizer, model and average chunk length; any other collection is
refused. `RemoteLexical` and `RemoteDense` answer the queries `Searcher` asks of `BM25Index`
and `DenseIndex` with positions in the engine's chunk list; fusion and the code signals stay
on this machine.

qdrant_client is imported inside functions: the package imports without it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.identity import repository_identity
from coderag_tui.core.index.store import StoreError
from coderag_tui.core.rank.dense import DenseBuildStats, DenseIndex
from coderag_tui.core.rank.lexical import BM25Options, chunk_tokens
from coderag_tui.core.rank.words import TOKENIZER_VERSION, tokenize
from coderag_tui.core.records import Chunk
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import Definitions
    from coderag_tui.settings import Settings

SCHEMA_VERSION = 1  # bump when points or the marker change meaning; older collections are refused
SPARSE = "bm25"
DENSE = "dense"
_NAMESPACE = uuid.UUID("7b3c1f0e-5d2a-4c8e-9a61-0c0de4a9c0de")
MARKER_ID = str(uuid.uuid5(_NAMESPACE, "coderag collection marker"))
TERM_HASH = "blake2b-32"  # how a word becomes a sparse index (recorded in the marker)
BATCH = 256  # points per upsert: a few MB of text and vectors per request
SCROLL = 1024  # points per scroll page
# A push keeps the average chunk length the collection's weights were written with while the
# repository's stays within this share of it; past it every point is written again.
AVG_DRIFT = 0.05
# Points fetched beyond k, so chunks tied with the k-th score are ordered by position as the
# local index orders them.
SLACK = 16
TIMEOUT_S = 30
NEEDS_CLIENT = "the qdrant backend needs qdrant-client: pip install 'coderag-tui[server]'."
NO_URL = (
    "the qdrant backend needs a server: pass --url http://HOST:6333 (or a folder for Qdrant's "
    "embedded mode), or set backend_url in your config or CODERAG_BACKEND_URL."
)


class BackendError(StoreError):
    """The server or its collection cannot be used; one sentence naming it and the fix.

    A StoreError, so every face that reports an index it cannot use reports this too.
    """


# --- connecting ------------------------------------------------------------------------------


def _client_module() -> Any:
    try:
        import qdrant_client
    except ImportError:
        raise BackendError(NEEDS_CLIENT) from None
    return qdrant_client


def _models() -> Any:
    return _client_module().models


def is_server_url(url: str) -> bool:
    return url.strip().lower().startswith(("http://", "https://"))


# A URL after its "scheme://": the authority (user, host, port) and the path, up to "?" or "#".
_AUTHORITY_PATH = re.compile(r"([^/?#]*)([^?#]*)")


def shown_url(url: str) -> str:
    """The URL as messages show it: no user, password or query string (they may hold keys).

    Total: a URL that does not parse (a bracket left open, a port that is no number) is shown
    as typed from its host on, since that is the part to fix.
    """
    url = url.strip()
    if not is_server_url(url):
        return one_line(url)
    if _url_problem(url):
        scheme, _, rest = url.partition("://")
        match = _AUTHORITY_PATH.match(rest)
        assert match is not None  # every text matches: both parts may be empty
        authority, path = match.groups()
        return one_line(f"{scheme}://{authority.rpartition('@')[2]}{path}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return one_line(f"{parts.scheme}://{host}{port}{parts.path}")


def _url_problem(url: str) -> str:
    """ "" when a server URL's host and port read, else what is wrong with them."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - reading it checks it: a port that is no number, or too big
    except ValueError as exc:
        return one_line(str(exc)) or "it does not parse"
    if not parts.hostname:
        return "it names no host"
    return ""


def collection_name(settings: Settings) -> str:
    """The collection of this repository and chunking: the setting, or one derived from the
    repository root's resolved path and the chunking key (never from ranking rules)."""
    if settings.backend_collection:
        return settings.backend_collection
    digest = hashlib.sha1(str(settings.repo_root).encode("utf-8", "surrogatepass")).hexdigest()
    chunking = settings.chunking_spec.key.replace(":", "-")
    return f"coderag-{digest[:12]}-{chunking}"


# Qdrant's embedded mode locks its folder: one client per folder and process, kept open
# until `close_embedded` (run at exit too, while the interpreter can still close them).
_EMBEDDED: dict[str, Any] = {}
_EMBEDDED_LOCK = threading.Lock()


def close_embedded() -> None:
    """Close every embedded-mode client this process opened (their folders are unlocked)."""
    with _EMBEDDED_LOCK:
        clients = list(_EMBEDDED.values())
        _EMBEDDED.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # a folder removed meanwhile: nothing to keep
            client.close()


@dataclass
class Server:
    """A client of one Qdrant (a server or an embedded folder) and the collection it serves."""

    client: Any
    url: str  # as messages show it
    collection: str
    embedded: bool

    @property
    def named(self) -> str:
        return f"the collection {one_line(self.collection)} at {self.url}"


def connect(settings: Settings) -> Server:
    """A client for `settings.backend_url`; nothing is asked of the server yet."""
    url = settings.backend_url.strip()
    if not url:
        raise BackendError(NO_URL)
    qdrant_client = _client_module()
    name = collection_name(settings)
    if is_server_url(url):
        problem = _url_problem(url)
        if problem:
            raise BackendError(
                f"cannot use {shown_url(url)} as a Qdrant server ({problem}): give "
                "http://HOST:PORT."
            )
        try:
            client = qdrant_client.QdrantClient(
                url=url, timeout=TIMEOUT_S, check_compatibility=False
            )
        except TypeError:  # a client older than check_compatibility (1.12)
            client = qdrant_client.QdrantClient(url=url, timeout=TIMEOUT_S)
        except Exception as exc:  # a malformed URL
            raise BackendError(
                f"cannot use {shown_url(url)} as a Qdrant server ({_reason(exc)}): give "
                "http://HOST:PORT."
            ) from None
        return Server(client, shown_url(url), name, embedded=False)
    folder = Path(url).expanduser().resolve()
    with _EMBEDDED_LOCK:
        client = _EMBEDDED.get(str(folder))
        if client is None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                client = qdrant_client.QdrantClient(path=str(folder))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise BackendError(_embedded_failed(folder, exc)) from None
                raise BackendError(
                    f"the Qdrant folder {one_line(str(folder))} is open in another process: "
                    "close it, or share the index through a Qdrant server."
                ) from None
            except Exception as exc:
                raise BackendError(_embedded_failed(folder, exc)) from None
            if not _EMBEDDED:
                atexit.register(close_embedded)
            _EMBEDDED[str(folder)] = client
    return Server(client, one_line(str(folder)), name, embedded=True)


def _embedded_failed(folder: Path, exc: BaseException) -> str:
    return (
        f"Qdrant's embedded mode cannot use {one_line(str(folder))} ({_reason(exc)}); the local "
        "index is untouched: give a writable folder or a server URL."
    )


def _reason(exc: BaseException) -> str:
    """The innermost cause of a client error, on one line and short."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "source", None) or exc.__cause__ or exc.__context__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    text = one_line(str(exc).strip()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "…"


@contextlib.contextmanager
def _answering(server: Server) -> Iterator[None]:
    """Client failures become one BackendError sentence (the local index is never touched)."""
    try:
        yield
    except BackendError:
        raise
    except Exception as exc:
        if server.embedded:
            raise BackendError(
                f"Qdrant's embedded mode in {server.url} failed ({_reason(exc)}); the local "
                "index is untouched."
            ) from None
        from qdrant_client.http.exceptions import UnexpectedResponse

        if isinstance(exc, UnexpectedResponse):
            status = exc.status_code
            raise BackendError(
                f"the Qdrant server at {server.url} refused a request (HTTP {status}: "
                f"{_reason(exc)}); the local index is untouched: check the URL and the "
                "server's access rules."
            ) from None
        raise BackendError(
            f"cannot reach the Qdrant server at {server.url}: {_reason(exc)}; the local index "
            "is untouched."
        ) from None


# --- the marker ------------------------------------------------------------------------------


def _tokenizer(options: BM25Options) -> dict[str, Any]:
    return {**options.as_dict(), "version": TOKENIZER_VERSION, "hash": TERM_HASH}


@dataclass(frozen=True)
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
            bool(t.get("split_identifiers")),
            bool(t.get("path_in_text")),
            str(t.get("method", "lucene")),
            float(t.get("k1", 1.5)),
            float(t.get("b", 0.75)),
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


def _write_marker(server: Server, marker: Marker) -> None:
    models = _models()
    point = models.PointStruct(id=MARKER_ID, vector={}, payload=marker.payload())
    server.client.upsert(server.collection, [point], wait=True)


def check(settings: Settings) -> Marker | None:
    """Reach the server and read the collection's marker (None: no collection yet), so a face
    can stop before anything local changes."""
    server = connect(settings)
    with _answering(server):
        return read_marker(server)


# --- points ----------------------------------------------------------------------------------


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


def _rows_by_chunk(dense: DenseIndex | None) -> dict[int, tuple[int, int]]:
    """Each chunk's run of stripe rows in the dense matrix (stripes are grouped by chunk)."""
    if dense is None or dense.n_stripes == 0 or dense.dim == 0:
        return {}
    owners = dense.stripe_chunk
    starts = np.concatenate(([0], np.flatnonzero(np.diff(owners)) + 1))
    ends = np.append(starts[1:], len(owners))
    return {int(owners[s]): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}


@dataclass(frozen=True)
class PushReport:
    """What a push did, for the face to say."""

    url: str
    collection: str
    chunks: int
    written: int  # points upserted (new or changed chunks, or all after a rewrite)
    vectors_added: int  # unchanged points that got their dense vectors
    deleted: int
    dense_points: int  # points with dense vectors after the push
    model: str
    seconds: float
    notes: tuple[str, ...] = ()
    cancelled: bool = False

    @property
    def unchanged(self) -> int:
        return self.chunks - self.written

    def summary(self) -> str:
        """One line: what the collection now holds and what this push changed."""
        dense = (
            f", dense vectors ({one_line(self.model)}) for {self.dense_points:,}"
            if self.dense_points
            else ", no dense vectors"
        )
        done = "stopped early" if self.cancelled else f"{self.seconds:.1f} s"
        return (
            f"pushed {self.chunks:,} chunks to {one_line(self.collection)} at {self.url}: "
            f"{self.written:,} written, {self.unchanged:,} unchanged, {self.deleted:,} deleted"
            f"{dense} ({done})"
        )


def _existing(server: Server) -> dict[str, bool]:
    """Every chunk point's id and whether it has dense vectors (payload "dense")."""
    found: dict[str, bool] = {}
    offset = None
    while True:
        records, offset = server.client.scroll(
            server.collection,
            limit=SCROLL,
            offset=offset,
            with_payload=["dense"],
            with_vectors=False,
        )
        for record in records:
            pid = str(record.id)
            if pid != MARKER_ID:
                found[pid] = bool((record.payload or {}).get("dense"))
        if offset is None:
            return found


def _create(server: Server, model_dim: int) -> None:
    models = _models()
    vectors = {}
    if model_dim:
        vectors[DENSE] = models.VectorParams(
            size=model_dim,
            distance=models.Distance.DOT,  # the vectors are normalised: DOT is their cosine
            multivector_config=models.MultiVectorConfig(
                comparator=models.MultiVectorComparator.MAX_SIM
            ),
        )
    server.client.create_collection(
        server.collection,
        vectors_config=vectors,
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )


@dataclass
class _Plan:
    """What one push will do, decided from the marker and the chunks."""

    marker: Marker
    recreate: bool = False
    rewrite: bool = False
    notes: list[str] = field(default_factory=list)


def check_origin(server: Server, old: Marker | None, settings: Settings, origin: str) -> None:
    """BackendError unless this repository may write the collection: one it made, or a new
    one. A collection from before origins were recorded is taken over only under the name
    derived from this repository's own path."""
    if old is None or old.origin == origin:
        return
    if old.origin:
        raise BackendError(
            f"{server.named} was made from another repository, and coderag never writes one "
            "repository's chunks over another's: name another collection with --collection, "
            "or delete that one if it is yours to delete."
        )
    if server.collection != collection_name(settings.with_(backend_collection="")):
        raise BackendError(
            f"{server.named} does not say which repository made it (an older coderag made it), "
            "so coderag will not write this repository over it: name another collection with "
            "--collection, or delete that one if it is yours to delete."
        )


def _plan(
    server: Server,
    old: Marker | None,
    settings: Settings,
    avg_len: float,
    model: str,
    dim: int,
    origin: str,
) -> _Plan:
    options = BM25Options(settings.split_identifiers, settings.path_in_text)
    tokenizer = _tokenizer(options)
    key = settings.chunking_spec.key
    fresh = Marker(key, tokenizer, model, dim, avg_len, origin=origin)
    if old is None:
        return _Plan(fresh, recreate=True)
    why = ""
    if old.tokenizer != tokenizer:
        why = "it was pushed with other BM25 words (split_identifiers, path_in_text or tokenizer)"
    elif old.chunking != key:
        why = f"it holds chunking {one_line(old.chunking)}, not {key}"
    elif model and (old.model, old.dim) != (model, dim):
        held = one_line(old.model) if old.model else "no dense vectors"
        why = f"it held {held}, not {one_line(model)}"
    if why:
        note = f"{server.named} was made anew: {why}."
        return _Plan(fresh, recreate=True, notes=[note])
    kept = Marker(key, tokenizer, old.model, old.dim, old.avg_len, origin=origin)
    if abs(avg_len / old.avg_len - 1.0) > AVG_DRIFT:
        note = (
            f"the average chunk length moved from {old.avg_len:.1f} to {avg_len:.1f} words: "
            "every point's BM25 weights were written again."
        )
        return _Plan(
            Marker(key, tokenizer, old.model, old.dim, avg_len, origin=origin),
            rewrite=True,
            notes=[note],
        )
    return _Plan(kept)


def push(
    settings: Settings,
    chunks: Sequence[Chunk],
    dense: DenseIndex | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> PushReport:
    """Make the collection hold exactly these chunks (and `dense`'s vectors of them).

    Only points whose chunk is new or changed are written, points of chunks that are gone are
    deleted, and unchanged points that lack dense vectors get them; `progress(done, total)`
    follows the writes. A cancelled push leaves the marker saying so; the next one finishes it.
    """
    started = time.perf_counter()
    models = _models()
    server = connect(settings)
    options = BM25Options(settings.split_identifiers, settings.path_in_text)
    ids, ordinals, hashes = chunk_ids(chunks)
    lengths = [len(chunk_tokens(c, options)) for c in chunks]
    avg_len = sum(lengths) / len(lengths) if lengths and sum(lengths) else 1.0
    rows = _rows_by_chunk(dense)
    model = dense.model if dense is not None and rows else ""
    dim = dense.dim if dense is not None and rows else 0
    origin = repository_identity(settings.repo_root)
    with _answering(server):
        old = read_marker(server)
        check_origin(server, old, settings, origin)  # before anything is written or deleted
        plan = _plan(server, old, settings, avg_len, model, dim, origin)
        if plan.recreate:
            if server.client.collection_exists(server.collection):
                server.client.delete_collection(server.collection)
            _create(server, dim)
        marker = plan.marker
        if marker.model != model:  # pushed without vectors: the collection keeps its model's
            rows = {}
        _write_marker(server, marker)  # "pushing", no digest: readers see a push is running
        existing = {} if plan.recreate else _existing(server)
        wanted = set(ids)
        stale = [pid for pid in existing if pid not in wanted]
        write = [i for i, pid in enumerate(ids) if plan.rewrite or pid not in existing]
        add_vectors = [
            i
            for i, pid in enumerate(ids)
            if not plan.rewrite and pid in existing and not existing[pid] and i in rows
        ]
        has_dense = {pid: existing.get(pid, False) for pid in ids}
        total = len(write) + len(add_vectors) + len(stale)
        done = 0
        if progress is not None:
            progress(0, total)

        def stopped() -> bool:
            return cancel is not None and cancel.is_set()

        for start in range(0, len(write), BATCH):
            if stopped():
                break
            points = []
            for i in write[start : start + BATCH]:
                chunk = chunks[i]
                # The marker's average: every point of a collection is weighed with one.
                indices, values = document_vector(
                    chunk_tokens(chunk, options), marker.avg_len, options
                )
                vector: dict[str, Any] = {
                    SPARSE: models.SparseVector(indices=indices, values=values)
                }
                if i in rows:
                    s, e = rows[i]
                    vector[DENSE] = dense.matrix[s:e].tolist() if dense is not None else []
                has_dense[ids[i]] = i in rows
                payload = {
                    "path": chunk.path,
                    "ord": ordinals[i],
                    "start_line": chunk.start_line,
                    "end_line": chunk.end_line,
                    "kind": chunk.kind,
                    "language": chunk.language,
                    "text": chunk.text,
                    "text_hash": hashes[i],
                    "dense": i in rows,
                }
                points.append(models.PointStruct(id=ids[i], vector=vector, payload=payload))
            server.client.upsert(server.collection, points, wait=True)
            done += len(points)
            if progress is not None:
                progress(done, total)
        for start in range(0, len(add_vectors), BATCH):
            if stopped() or dense is None:
                break
            batch = add_vectors[start : start + BATCH]
            server.client.update_vectors(
                server.collection,
                points=[
                    models.PointVectors(
                        id=ids[i], vector={DENSE: dense.matrix[slice(*rows[i])].tolist()}
                    )
                    for i in batch
                ],
                wait=True,
            )
            server.client.set_payload(
                server.collection, payload={"dense": True}, points=[ids[i] for i in batch]
            )
            for i in batch:
                has_dense[ids[i]] = True
            done += len(batch)
            if progress is not None:
                progress(done, total)
        for start in range(0, len(stale), BATCH):
            if stopped():
                break
            batch_ids = stale[start : start + BATCH]
            server.client.delete(
                server.collection, points_selector=models.PointIdsList(points=batch_ids), wait=True
            )
            done += len(batch_ids)
            if progress is not None:
                progress(done, total)
        cancelled = stopped()
        dense_points = sum(has_dense.values())
        if not cancelled:
            _write_marker(
                server,
                Marker(
                    marker.chunking,
                    marker.tokenizer,
                    marker.model,
                    marker.dim,
                    marker.avg_len,
                    digest_of(ids),
                    len(ids),
                    dense_points,
                    complete=True,
                    origin=marker.origin,
                ),
            )
    return PushReport(
        server.url,
        server.collection,
        len(ids),
        len(write) if not cancelled else done,
        len(add_vectors),
        len(stale),
        dense_points,
        marker.model,
        time.perf_counter() - started,
        tuple(plan.notes),
        cancelled,
    )


# --- answering queries -------------------------------------------------------------------------


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
    with _answering(server):
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
    wanted = _tokenizer(BM25Options(settings.split_identifiers, settings.path_in_text))
    if {k: marker.tokenizer.get(k) for k in wanted} != wanted:
        notices.append(
            "BM25 reads the query as the collection was pushed "
            f"(split_identifiers {_onoff(marker.options.split_identifiers)}, path_in_text "
            f"{_onoff(marker.options.path_in_text)}), not as the settings say."
        )
    generation = marker.digest if from_local else f"{marker.digest or 'pushing'}:{len(ids)}"
    lexical = RemoteLexical(server, ids, marker, dense_points)
    return Remote(chunks, lexical, generation, from_local, tuple(notices))


def _onoff(flag: bool) -> str:
    return "on" if flag else "off"


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
        models = _models()
        indices, values = query_vector(tokens)
        with _answering(self.server):
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


class RemoteDense(DenseIndex):
    """Dense search answered by the server (best stripe by MAX_SIM), positions as RemoteLexical's.

    A DenseIndex so the Searcher and the engine's stage take it unchanged; it holds no matrix.
    """

    def __init__(self, lexical: RemoteLexical) -> None:
        n = lexical.n_docs
        stats = DenseBuildStats(n, 0, 0, 0, 0, False, 0.0)
        marker = lexical.marker
        super().__init__(
            np.zeros((0, marker.dim), dtype=np.float32),
            np.zeros(0, dtype=np.int64),
            n,
            stats,
            model=marker.model,
        )
        self.lexical = lexical
        self._covered = min(lexical.dense_points, n)
        self._dim = marker.dim

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def covered(self) -> int:
        return self._covered

    @property
    def complete(self) -> bool:
        return self._covered == self.n_chunks

    def chunk_scores(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("a remote index ranks on the server: use search")

    def save(self, directory: Path, *, extra: Any = None) -> None:
        raise NotImplementedError("a remote index is saved on its server")

    def search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The k chunks nearest the query by cosine (best stripe), best first."""
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if k <= 0 or self._covered == 0:
            return []
        if query.shape[0] != self._dim:
            raise ValueError(
                f"the query vector has {query.shape[0]} dimensions but the collection has "
                f"{self._dim}: embed the query with the model that pushed the vectors"
            )
        server = self.lexical.server
        with _answering(server):
            answer = server.client.query_points(
                server.collection,
                query=[query.tolist()],
                using=DENSE,
                limit=k + SLACK,
                with_payload=False,
                with_vectors=False,
            )
        return _ranked(answer.points, self.lexical.positions, k)
