"""Pushing a local index to a Qdrant collection in three phases: plan, write, delete.

`plan_push` reads the collection (its marker and which points it holds) and decides, before
anything is written, whether this repository may write it (`check_origin`), whether it is made
anew or every point's weights are written again, and which points are written, given their
dense vectors, or deleted. `write_points` upserts the new and changed chunks (the marker
saying a push is running), `delete_points` removes the chunks that are gone, and the marker is
then written complete. A push that stopped half-way is finished by the next one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
    document_vector,
    read_marker,
    tokenizer_record,
    write_marker,
)
from coderag_tui.core.backends.qdrant_server import (
    BackendError,
    Server,
    answering,
    client_models,
    collection_name,
    connect,
)
from coderag_tui.core.index.identity import repository_identity
from coderag_tui.core.rank.lexical import BM25Options, chunk_tokens
from coderag_tui.core.records import Chunk
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.rank.dense import DenseIndex
    from coderag_tui.settings import Settings

BATCH = 256  # points per upsert: a few MB of text and vectors per request
# A push keeps the average chunk length the collection's weights were written with while the
# repository's stays within this share of it; past it every point is written again.
AVG_DRIFT = 0.05


@dataclass(frozen=True, kw_only=True)
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


# --- what this machine holds -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LocalPoints:
    """The chunks to push as points: ids, ordinals, text hashes, each chunk's rows of
    `dense`'s matrix, the average chunk length, and the vectors' model and size."""

    chunks: Sequence[Chunk]
    options: BM25Options
    ids: list[str]
    ordinals: list[int]
    hashes: list[str]
    dense: DenseIndex | None
    rows: dict[int, tuple[int, int]]
    avg_len: float
    model: str
    dim: int


def local_points(
    settings: Settings, chunks: Sequence[Chunk], dense: DenseIndex | None
) -> LocalPoints:
    options = BM25Options.of(settings)
    ids, ordinals, hashes = chunk_ids(chunks)
    lengths = [len(chunk_tokens(c, options)) for c in chunks]
    avg_len = sum(lengths) / len(lengths) if lengths and sum(lengths) else 1.0
    rows = _rows_by_chunk(dense)
    return LocalPoints(
        chunks=chunks,
        options=options,
        ids=ids,
        ordinals=ordinals,
        hashes=hashes,
        dense=dense,
        rows=rows,
        avg_len=avg_len,
        model=dense.model if dense is not None and rows else "",
        dim=dense.dim if dense is not None and rows else 0,
    )


def _rows_by_chunk(dense: DenseIndex | None) -> dict[int, tuple[int, int]]:
    """Each chunk's run of stripe rows in the dense matrix (stripes are grouped by chunk)."""
    if dense is None or dense.n_stripes == 0 or dense.dim == 0:
        return {}
    owners = dense.stripe_chunk
    starts = np.concatenate(([0], np.flatnonzero(np.diff(owners)) + 1))
    ends = np.append(starts[1:], len(owners))
    return {int(owners[s]): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}


# --- plan ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PushPlan:
    """What one push will do, decided from the marker, the points held and the chunks.

    `write` and `add_vectors` are positions in the chunk list; `stale` are point ids.
    """

    marker: Marker  # the marker the push leaves (complete once it finished)
    recreate: bool = False
    rewrite: bool = False
    notes: tuple[str, ...] = ()
    rows: dict[int, tuple[int, int]] = field(default_factory=dict)  # vectors that are pushed
    write: list[int] = field(default_factory=list)
    add_vectors: list[int] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    has_dense: dict[str, bool] = field(default_factory=dict)  # after the push, per point id

    @property
    def total(self) -> int:
        return len(self.write) + len(self.add_vectors) + len(self.stale)


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


def _marker_plan(
    server: Server, old: Marker | None, settings: Settings, local: LocalPoints, origin: str
) -> PushPlan:
    """The marker the push leaves, and whether the collection is made anew or every point's
    weights are written again (and why, in a note)."""
    tokenizer = tokenizer_record(local.options)
    key = settings.chunking_spec.key
    model, dim, avg_len = local.model, local.dim, local.avg_len
    fresh = Marker(
        chunking=key, tokenizer=tokenizer, model=model, dim=dim, avg_len=avg_len, origin=origin
    )
    if old is None:
        return PushPlan(marker=fresh, recreate=True)
    why = ""
    if old.tokenizer != tokenizer:
        why = "it was pushed with other BM25 words (split_identifiers, path_in_text or tokenizer)"
    elif old.chunking != key:
        why = f"it holds chunking {one_line(old.chunking)}, not {key}"
    elif model and (old.model, old.dim) != (model, dim):
        held = one_line(old.model) if old.model else "no dense vectors"
        why = f"it held {held}, not {one_line(model)}"
    if why:
        return PushPlan(
            marker=fresh, recreate=True, notes=(f"{server.named} was made anew: {why}.",)
        )
    kept = replace(fresh, model=old.model, dim=old.dim, avg_len=old.avg_len)
    if abs(avg_len / old.avg_len - 1.0) > AVG_DRIFT:
        note = (
            f"the average chunk length moved from {old.avg_len:.1f} to {avg_len:.1f} words: "
            "every point's BM25 weights were written again."
        )
        return PushPlan(marker=replace(kept, avg_len=avg_len), rewrite=True, notes=(note,))
    return PushPlan(marker=kept)


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


def plan_push(server: Server, settings: Settings, local: LocalPoints, origin: str) -> PushPlan:
    """Read the collection and decide what the push writes and deletes; nothing is written.

    BackendError (one sentence) when the collection is not coderag's or this repository
    (`origin`, its `repository_identity`) may not write it.
    """
    old = read_marker(server)
    check_origin(server, old, settings, origin)  # before anything is written or deleted
    plan = _marker_plan(server, old, settings, local, origin)
    # Pushed without vectors: the collection keeps its model's.
    rows = local.rows if plan.marker.model == local.model else {}
    existing = {} if plan.recreate else _existing(server)
    ids = local.ids
    wanted = set(ids)
    return replace(
        plan,
        rows=rows,
        write=[i for i, pid in enumerate(ids) if plan.rewrite or pid not in existing],
        add_vectors=[
            i
            for i, pid in enumerate(ids)
            if not plan.rewrite and pid in existing and not existing[pid] and i in rows
        ],
        stale=[pid for pid in existing if pid not in wanted],
        has_dense={pid: existing.get(pid, False) for pid in ids},
    )


# --- write and delete ------------------------------------------------------------------------


@dataclass
class _Progress:
    """Points done of the plan's total, told to `progress`; `stopped` once `cancel` is set."""

    total: int
    progress: Callable[[int, int], None] | None
    cancel: threading.Event | None
    done: int = 0

    def __post_init__(self) -> None:
        if self.progress is not None:
            self.progress(0, self.total)

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)

    @property
    def stopped(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


def _create(server: Server, model_dim: int) -> None:
    models = client_models()
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


def _point(local: LocalPoints, plan: PushPlan, i: int, models: Any) -> Any:
    """The point of chunk `i`: its sparse BM25 vector, its dense vectors, its payload."""
    chunk, options = local.chunks[i], local.options
    # The marker's average: every point of a collection is weighed with one.
    indices, values = document_vector(chunk_tokens(chunk, options), plan.marker.avg_len, options)
    vector: dict[str, Any] = {SPARSE: models.SparseVector(indices=indices, values=values)}
    if i in plan.rows:
        s, e = plan.rows[i]
        vector[DENSE] = local.dense.matrix[s:e].tolist() if local.dense is not None else []
    payload = {
        "path": chunk.path,
        "ord": local.ordinals[i],
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "kind": chunk.kind,
        "language": chunk.language,
        "text": chunk.text,
        "text_hash": local.hashes[i],
        "dense": i in plan.rows,
    }
    return models.PointStruct(id=local.ids[i], vector=vector, payload=payload)


def write_points(
    server: Server, local: LocalPoints, plan: PushPlan, counter: _Progress
) -> dict[str, bool]:
    """Make the collection as planned (anew when it must be), mark it as being pushed, upsert
    the new and changed chunks and give unchanged points the dense vectors they lack; stops
    between batches once cancelled. Which points hold dense vectors now, by id."""
    models = client_models()
    if plan.recreate:
        if server.client.collection_exists(server.collection):
            server.client.delete_collection(server.collection)
        _create(server, local.dim)
    write_marker(server, plan.marker)  # "pushing", no digest: readers see a push is running
    ids, rows = local.ids, plan.rows
    has_dense = dict(plan.has_dense)
    for start in range(0, len(plan.write), BATCH):
        if counter.stopped:
            break
        batch = plan.write[start : start + BATCH]
        points = [_point(local, plan, i, models) for i in batch]
        for i in batch:
            has_dense[ids[i]] = i in rows
        server.client.upsert(server.collection, points, wait=True)
        counter.add(len(points))
    for start in range(0, len(plan.add_vectors), BATCH):
        if counter.stopped or local.dense is None:
            break
        batch = plan.add_vectors[start : start + BATCH]
        matrix = local.dense.matrix
        server.client.update_vectors(
            server.collection,
            points=[
                models.PointVectors(id=ids[i], vector={DENSE: matrix[slice(*rows[i])].tolist()})
                for i in batch
            ],
            wait=True,
        )
        server.client.set_payload(
            server.collection, payload={"dense": True}, points=[ids[i] for i in batch]
        )
        for i in batch:
            has_dense[ids[i]] = True
        counter.add(len(batch))
    return has_dense


def delete_points(server: Server, plan: PushPlan, counter: _Progress) -> None:
    """Delete the points of chunks that are gone; stops between batches once cancelled."""
    models = client_models()
    for start in range(0, len(plan.stale), BATCH):
        if counter.stopped:
            break
        batch_ids = plan.stale[start : start + BATCH]
        server.client.delete(
            server.collection, points_selector=models.PointIdsList(points=batch_ids), wait=True
        )
        counter.add(len(batch_ids))


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
    client_models()  # without qdrant-client, say so before anything else
    server = connect(settings)
    local = local_points(settings, chunks, dense)
    origin = repository_identity(settings.repo_root)
    with answering(server):
        plan = plan_push(server, settings, local, origin)
        counter = _Progress(plan.total, progress, cancel)
        has_dense = write_points(server, local, plan, counter)
        delete_points(server, plan, counter)
        cancelled = counter.stopped
        dense_points = sum(has_dense.values())
        if not cancelled:
            done = replace(
                plan.marker,
                digest=digest_of(local.ids),
                chunks=len(local.ids),
                dense_points=dense_points,
                complete=True,
            )
            write_marker(server, done)
    return PushReport(
        url=server.url,
        collection=server.collection,
        chunks=len(local.ids),
        written=len(plan.write) if not cancelled else counter.done,
        vectors_added=len(plan.add_vectors),
        deleted=len(plan.stale),
        dense_points=dense_points,
        model=plan.marker.model,
        seconds=time.perf_counter() - started,
        notes=plan.notes,
        cancelled=cancelled,
    )
