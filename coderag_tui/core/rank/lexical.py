"""The lexical stage: a store's chunks as a BM25 index, loaded, brought up to date or built.

The index itself (its options, postings, scoring and saved folders) lives in
`core.rank.bm25_index`, which `core.rank.bm25_process` (a child counting BM25 while the first
index is written) imports too; this module decides between the saved base, the base with a
delta of what changed (`core.rank.segments`), or a new build, with the definitions the code
signals read built beside it (`core.rank.definitions`, in a second process when that pays:
`core.rank.definitions_process`, or following a first index: `core.rank.definitions_follow`).
Its names are re-exported here for the faces and stages.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from coderag_tui.core.index.persist import save_folder
from coderag_tui.core.rank.bm25_index import (
    DEFAULT_METHOD,
    FORMAT,
    K1,
    META_NAME,
    METHODS,
    B,
    BM25Index,
    BM25Options,
    ChunkNumbers,
    Postings,
    bm25_dir,
    chunk_tokens,
    idf_of,
    length_norm,
    tfc_of,
)
from coderag_tui.core.rank.segments import MAX_DRIFT, CurrentTable, Drift, FileTable, delta_fits
from coderag_tui.core.rank.splitters import WORD
from coderag_tui.core.rank.words import TOKENIZER_VERSION
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.core.rank.definitions import Definitions, Later
    from coderag_tui.core.rank.definitions_process import Child, Follower
    from coderag_tui.settings import Settings


class LexicalIndex(Protocol):
    """What ranking asks of a lexical index: the local `BM25Index`, or a server's
    (`core.backends.qdrant_rank.RemoteLexical`). Results are indexes into the chunk list."""

    options: BM25Options
    n_docs: int
    definitions: Definitions | None

    @property
    def definitions_later(self) -> Later | None: ...

    @property
    def empty(self) -> bool: ...

    def tokenize_query(self, query: str) -> list[str]: ...

    def search_tokens(self, tokens: Sequence[str], k: int) -> list[tuple[int, float]]: ...

    def search(self, query: str, k: int) -> list[tuple[int, float]]: ...

    def warm_up(self) -> None: ...


def load_or_build_bm25(  # noqa: PLR0913 (the two followers are passed on once)
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    *,
    method: str = DEFAULT_METHOD,
    max_drift: float = MAX_DRIFT,
    splitter: str = WORD,
    second: Follower | None = None,
    follower: Follower | None = None,
) -> BM25Index:
    """The saved index when the store's chunks are unchanged (same generation); after an
    edit, the saved base with a delta of the changed files (`max_drift` as in
    `Drift.worth_a_delta`); else rebuilt.

    `second`: a child that followed the build of these chunks (`core.rank.bm25_process`):
    told they are written, it counts and saves BM25 while the definitions are built here, or
    by `follower`, a third that followed the build too (`core.rank.definitions_follow`);
    each is waited for a while (`Follower.patience_s`), and whatever becomes of them what
    they saved is then loaded, or built here.

    With the code signals that read them on, the chunks' definitions come with it (saved
    beside it the same way; `core.rank.definitions`), or, while a child left to build them in
    the background runs (`definitions_background`, after a first index), `definitions_later`
    gets them once it is done. When both are rebuilt over many chunks,
    a second process builds the definitions meanwhile (`core.rank.definitions_process`);
    whatever becomes of it, they are then loaded, or built here as without it.
    """
    from coderag_tui.core.rank.definitions import definitions_wanted

    current = CurrentTable(store, chunks)
    generation = store.generation(settings.chunking_spec.key)
    options = BM25Options(
        settings.split_identifiers, settings.path_in_text, method, splitter=splitter
    )
    wanted = definitions_wanted(settings)
    if second is not None:
        if splitter == WORD and len(chunks) >= second.min_chunks:
            return _with_second(store, settings, chunks, second, follower, wanted=wanted)
        second.stop()
    if follower is not None:
        follower.stop()
    children: list[Child] = []

    def before_build() -> None:  # BM25 is about to be rebuilt: the definitions too
        from coderag_tui.core.rank import definitions_process

        child = definitions_process.start(store, settings, len(chunks), generation, max_drift)
        if child is not None:
            children.append(child)

    started = time.perf_counter()
    try:
        index = _load_or_build_matrix(
            bm25_dir(settings, options),
            options,
            chunks,
            generation,
            current,
            max_drift,
            before_build=before_build if wanted else None,
        )
        for child in children:  # as long as BM25 took (a few seconds at least): then stopped
            child.finish(max(child.wait_floor_s, time.perf_counter() - started))
    finally:
        for child in children:  # interrupted (or BM25 failed): stop it, never leave it
            child.stop()
    if wanted:
        index.definitions, index.definitions_later = _definitions_or_later(
            store, settings, chunks, current, generation, max_drift
        )
    return index


def _definitions_or_later(
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    current: CurrentTable,
    generation: str,
    max_drift: float = MAX_DRIFT,
) -> tuple[Definitions | None, Later | None]:
    """The definitions, loaded or built; or, while a child left to build them in the
    background runs (`definitions_follow.being_built`), none yet and how to get them later
    (without `definitions_background`, as `coderag eval` runs: once it is done, they)."""
    from coderag_tui.core.rank.definitions import (
        definitions_dir,
        load_or_build_definitions,
        saved_generation,
    )
    from coderag_tui.core.rank.definitions_follow import being_built, wait_built

    directory = definitions_dir(settings)
    if saved_generation(directory) != generation and being_built(directory):
        if settings.definitions_background:
            return None, _later(store, settings, chunks, current, max_drift)
        wait_built(directory)
    built = load_or_build_definitions(store, settings, chunks, current=current, max_drift=max_drift)
    return built, None


def _later(
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    current: CurrentTable,
    max_drift: float = MAX_DRIFT,
) -> Later:
    """The definitions once the child building them in the background is done: loaded, or
    built here when it saved none; None while it runs."""
    from coderag_tui.core.rank import definitions_process
    from coderag_tui.core.rank.definitions import definitions_dir, load_or_build_definitions
    from coderag_tui.core.rank.definitions_follow import being_built

    directory = definitions_dir(settings)

    def later() -> Definitions | None:
        if being_built(directory):
            return None
        definitions_process.reap()  # the child this process left, if it did: ended
        return load_or_build_definitions(
            store, settings, chunks, current=current, max_drift=max_drift
        )

    return later


def warm_saved_bases(store: Store, settings: Settings) -> None:
    """Read what the first check of a few changed paths would otherwise read then: the saved
    BM25 and definitions bases' file tables with their columns (kept by `loaded_once`) and the
    store's content hashes (kept by the store). A base not saved yet is left alone."""
    from coderag_tui.core.rank.definitions import definitions_dir

    options = BM25Options.of(settings)
    for directory in (bm25_dir(settings, options), definitions_dir(settings)):
        with contextlib.suppress(ValueError):
            FileTable.load(directory).columns  # noqa: B018 (worked out once, then kept)
    store.content_hashes()


def _with_second(
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    second: Follower,
    follower: Follower | None,
    *,
    wanted: bool,
) -> BM25Index:
    """`load_or_build_bm25` with a child counting BM25 meanwhile, and one building the
    definitions (see there); or, with `definitions_background`, BM25 alone is waited for and
    the definitions are left to a child started then (`_left_to_build`)."""
    from coderag_tui.core.rank.definitions import load_or_build_definitions

    current = CurrentTable(store, chunks)
    generation = store.generation(settings.chunking_spec.key)
    options = BM25Options.of(settings)
    children = [second] if follower is None else [second, follower]
    background = wanted and follower is None and settings.definitions_background
    definitions, left = None, False
    try:
        for child in children:
            child.done(generation, len(chunks))
        if wanted and follower is None and not background:
            definitions = load_or_build_definitions(store, settings, chunks, current=current)
        for child in children:
            child.finish(child.patience_s)
        if background:
            left = _left_to_build(store, settings, generation, len(chunks))
        if wanted and definitions is None and not left:  # the follower's, or built here
            definitions = load_or_build_definitions(store, settings, chunks, current=current)
    finally:
        for child in children:
            child.stop()
    index = _load_or_build_matrix(
        bm25_dir(settings, options), options, chunks, generation, current, MAX_DRIFT
    )
    index.definitions = definitions
    index.definitions_later = _later(store, settings, chunks, current) if left else None
    return index


def _left_to_build(store: Store, settings: Settings, generation: str, n_chunks: int) -> bool:
    """Start a child building the definitions of the index just written and leave it to
    finish on its own; True once it holds the lock that tells every run so (else it is
    stopped, and False)."""
    from coderag_tui.core.rank import definitions_follow
    from coderag_tui.core.rank.definitions import definitions_dir

    store.fold_wal()  # before the child's long read keeps the log as it is
    child = definitions_follow.start(store, settings, written=True)
    if child is None:
        return False
    directory = definitions_dir(settings)
    waited = time.perf_counter() + definitions_follow.LOCK_WAIT_S * 2
    while not definitions_follow.being_built(directory):
        if child.process.poll() is not None or time.perf_counter() > waited:
            child.stop()
            return False
        time.sleep(0.01)
    child.done(generation, n_chunks)
    child.leave()
    return True


def _load_or_build_matrix(
    directory: Path,
    options: BM25Options,
    chunks: Sequence[Chunk],
    generation: str,
    current: CurrentTable,
    max_drift: float,
    *,
    before_build: Callable[[], None] | None = None,
) -> BM25Index:
    """The saved base (with its delta) or a new one; `before_build` is called just before a
    new one is built."""
    delta_dir = directory.with_name(directory.name + ".delta")
    meta = BM25Index.read_meta(directory)
    with contextlib.suppress(ValueError, KeyError, TypeError):
        if meta is not None and meta.get("generation") == generation:
            if meta.get("n_docs") == len(chunks):
                return BM25Index.load(directory)
        elif meta is not None:
            return _with_delta(directory, delta_dir, meta, chunks, generation, current, max_drift)
    if before_build is not None:
        before_build()
    index = BM25Index.build(
        chunks,
        split_identifiers=options.split_identifiers,
        path_in_text=options.path_in_text,
        method=options.method,
        splitter=options.splitter,
    )
    # A read-only or full cache costs a rebuild next time, never the search.
    with contextlib.suppress(OSError):
        index.save(directory, extra={"generation": generation}, table=current.table)
        shutil.rmtree(delta_dir, ignore_errors=True)
    return index


def _with_delta(
    directory: Path,
    delta_dir: Path,
    meta: dict[str, Any],
    chunks: Sequence[Chunk],
    generation: str,
    current: CurrentTable,
    max_drift: float,
) -> BM25Index:
    """The saved base with the delta of the current generation: saved, or built now when the
    drift is small (ValueError when it is not, or something saved is damaged)."""
    options = BM25Options(**meta["options"])
    base = Postings.load(directory)
    if delta_fits(BM25Index.read_meta(delta_dir), meta, generation, len(chunks)):
        drift = Drift.load(delta_dir, len(chunks), base.n_docs)
        return BM25Index(base, options, drift=drift, delta=Postings.load(delta_dir))
    drift = current.drift_from(FileTable.load(directory))
    if drift.n_chunks != len(chunks) or not drift.worth_a_delta(max_drift):
        raise ValueError("the drift is too large for a delta")
    delta = Postings.from_chunks((chunks[int(i)] for i in drift.added), options)

    def write(tmp: Path) -> None:
        delta.save(tmp)
        drift.save(tmp)

    delta_meta = {
        "format": FORMAT,
        "tokenizer": TOKENIZER_VERSION,
        "generation": generation,
        "base": meta.get("generation"),
        "n_chunks": len(chunks),
        "options": options.as_dict(),
    }
    with contextlib.suppress(OSError):
        save_folder(delta_dir, write, delta_meta, META_NAME)
    return BM25Index(base, options, drift=drift, delta=delta)


__all__ = [
    "DEFAULT_METHOD",
    "K1",
    "METHODS",
    "B",
    "BM25Index",
    "BM25Options",
    "ChunkNumbers",
    "LexicalIndex",
    "Postings",
    "bm25_dir",
    "chunk_tokens",
    "idf_of",
    "length_norm",
    "load_or_build_bm25",
    "tfc_of",
    "warm_saved_bases",
]
