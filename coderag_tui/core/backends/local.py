"""The local backend: the index as files beside the repository (SQLite, BM25, vector arrays).

It keeps the index database (`IndexKeeper`: open, checked, locked, built) and the embedding
cache, brings the index up to date before a search, and loads or builds BM25 and the chunk
vectors from them. Nothing is pushed anywhere: the files are the index.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from coderag_tui.core.backends.base import DenseOpened, Lexical
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.backends.qdrant_push import PushReport
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.core.index.keeper import IndexKeeper
    from coderag_tui.core.index.store import EmbeddingCache, Store
    from coderag_tui.core.rank.definitions_process import Follower
    from coderag_tui.core.rank.dense import DenseRanker
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.rank.lexical import LexicalIndex
    from coderag_tui.settings import Settings

EMBEDDING_CANCELLED = (
    "embedding was cancelled: dense search covers only the chunks embedded so far."
)
INDEX_CANCELLED = "indexing was cancelled: searching the files indexed so far."
DEFINITIONS_LATER = (
    "searchable now; the definitions the code signals read are still being parsed in the "
    "background, and searches use them once they are saved."
)


class LocalBackend:
    """The index database and embedding cache of one repository, kept open between calls."""

    first_pass_off = ""

    def __init__(
        self, explicit: frozenset[str] | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        # Imported here: the store (SQLite) and lock library are not needed to import the engine.
        from coderag_tui.core.index.keeper import IndexKeeper

        self.keeper: IndexKeeper = IndexKeeper(explicit, clock)
        self._cache: EmbeddingCache | None = None
        self._lock = threading.RLock()

    def store(self, settings: Settings) -> Store:
        """The index database of `settings`, opened once and kept (see `IndexKeeper.store`)."""
        return self.keeper.store(settings)

    def opened(self) -> Store | None:
        """The index database if one is open (prompts read texts and secrets from it)."""
        return self.keeper.opened()

    def embedding_cache(self, settings: Settings) -> EmbeddingCache:
        """The embedding cache of `settings`, opened once and kept."""
        from coderag_tui.core.index.store import EmbeddingCache

        with self._lock:
            if self._cache is None or self._cache.path != settings.embed_cache_path:
                if self._cache is not None:
                    self._cache.close()
                self._cache = EmbeddingCache.open(settings.embed_cache_path)
            return self._cache

    # ---------------------------------------------------------------- the lexical ranker
    def saved(self, settings: Settings) -> Lexical | None:
        from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
        from coderag_tui.core.index.store import IndexDamaged
        from coderag_tui.core.rank.lexical import load_or_build_bm25

        store = self.store(settings)
        key = settings.chunking_spec.key
        try:
            # Texts are read when shown: a file changed behind our back is checked first
            # (nothing to do when the record left by the last run matches it).
            if store.chunk_count(key) == 0 or store.damage_if_changed() is not None:
                return None
            generation = store.generation(key)
            chunks = ChunkList.load(store, key, chunk_list_dir(settings.index_path, key))
        except IndexDamaged:
            return None  # never served: `update` moves the file aside and rebuilds
        bm25 = load_or_build_bm25(store, settings, chunks)
        notices = (store.notice,) if store.notice else ()
        return Lexical(chunks=chunks, bm25=bm25, generation=generation, notices=notices)

    def update(
        self,
        settings: Settings,
        *,
        current: Lexical | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        stale_ok: bool = True,
        only: Collection[str] | None = None,
    ) -> Lexical:
        """Bring the index up to date (only changed files are read; of `only` alone when
        given, see `indexer.build_index`) and load or build BM25 (see
        `Engine.update_index`). When nothing but this build changed the store since
        `current` was read, its chunk list is patched with the files the build touched
        instead of read again."""
        notices: list[str] = []
        keeper = self.keeper
        with keeper.locked(settings, progress, cancel, notices) as locked:
            if not locked:  # cancelled while another run was indexing
                return self._as_it_is(settings, current, [*notices, INDEX_CANCELLED])
            # Started once the walk found much to read: BM25's follower, then the definitions'.
            second: list[Follower] = []
            try:
                return self._update_locked(
                    settings,
                    current,
                    progress,
                    cancel,
                    notices,
                    second,
                    stale_ok=stale_ok,
                    only=only,
                )
            finally:
                for child in second:
                    child.stop()

    def _start_second(self, settings: Settings, second: list[Follower], to_read: int) -> None:
        """A second process building BM25 while a repository's first index is written
        (`core.rank.bm25_process`), and a third building the definitions
        (`core.rank.definitions_follow`), when the walk found enough to read for them to help."""
        from coderag_tui.core.index.store import StoreError
        from coderag_tui.core.rank import bm25_process, definitions_follow

        if to_read < bm25_process.MIN_BYTES:
            return
        try:
            store = self.keeper.store(settings)
            child = None if store.read_only else bm25_process.start(store, settings)
        except StoreError:
            return
        if child is not None:
            second.append(child)
            # In the background, the definitions are left to a child started once BM25 is
            # ready (`lexical._with_second`): a third process now would slow the index down.
            if not settings.definitions_background:
                follower = definitions_follow.start(store, settings)
                if follower is not None:
                    second.append(follower)

    def _update_locked(  # noqa: PLR0913 (the update's state, passed on once)
        self,
        settings: Settings,
        current: Lexical | None,
        progress: Callable[[IndexProgress], None] | None,
        cancel: threading.Event | None,
        notices: list[str],
        second: list[Follower],
        *,
        stale_ok: bool,
        only: Collection[str] | None,
    ) -> Lexical:
        from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
        from coderag_tui.core.index.indexer import IndexProgress
        from coderag_tui.core.index.store import IndexDamaged
        from coderag_tui.core.rank.lexical import load_or_build_bm25

        key = settings.chunking_spec.key
        keeper = self.keeper
        for attempt in (1, 2):
            before = keeper.opened()
            start = before.generation(key) if before is not None and only is not None else ""
            built = keeper.build(
                settings,
                progress=progress,
                cancel=cancel,
                stale_ok=stale_ok,
                only=only,
                previous=current.report if current is not None else None,
                planned=(
                    (lambda size: self._start_second(settings, second, size))
                    if current is None and only is None and attempt == 1
                    else None
                ),
            )
            store, report = built.store, built.report
            if report is None:  # the index cannot be written: answer from what it holds
                return self._as_it_is(settings, current, [*built.notices, *notices])
            try:
                generation = store.generation(key)
                unchanged = current is not None and current.generation == generation
                if current is not None and unchanged:
                    chunks = current.chunks
                elif (
                    current is not None
                    and report.touched is not None
                    and store is before
                    and start == current.generation
                    and isinstance(current.chunks, ChunkList)
                ):
                    chunks = current.chunks.patched(store, report.touched)
                else:
                    saved = chunk_list_dir(settings.index_path, key)
                    chunks = ChunkList.load(store, key, saved)
                break
            except IndexDamaged:  # a row that no longer reads: move it aside, build anew
                if attempt == 2:
                    raise
                keeper.discard(store, "a row of it could not be read")
        assert report is not None  # else returned above
        notices = [*built.notices, *notices]
        if report.cancelled:
            notices.append(INDEX_CANCELLED)
        said = tuple(dict.fromkeys(notices))
        if current is not None and unchanged:
            return replace(
                current, generation=generation, report=report, changed=False, notices=said
            )
        if progress is not None:
            progress(IndexProgress("bm25", 0, 0, len(chunks), 0, report.elapsed_s))
        # A cancelled build is not waited for: the child is stopped (by `update`).
        usable = second and store is keeper.opened() and not report.cancelled
        followers = second if usable else []
        bm25 = load_or_build_bm25(
            store,
            settings,
            chunks,
            second=followers[0] if followers else None,
            follower=followers[1] if len(followers) > 1 else None,
        )
        bm25.warm_up()
        if followers and bm25.definitions_later is not None:  # this build left them to finish
            said = (*said, DEFINITIONS_LATER)
        return Lexical(chunks=chunks, bm25=bm25, generation=generation, report=report, notices=said)

    def _as_it_is(self, settings: Settings, current: Lexical | None, notices: list[str]) -> Lexical:
        """The index as it is, without a build (it cannot be written, or a wait was cancelled)."""
        from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
        from coderag_tui.core.index.store import StoreError
        from coderag_tui.core.rank.lexical import load_or_build_bm25

        store = self.store(settings)
        key = settings.chunking_spec.key
        said = tuple(dict.fromkeys(notices))
        generation = store.generation(key)
        if current is not None and current.generation == generation:
            return replace(current, generation=generation, report=None, changed=False, notices=said)
        chunks = ChunkList.load(store, key, chunk_list_dir(settings.index_path, key))
        stale = self.keeper.stale
        if not chunks and stale is not None:
            why = str(stale).rstrip(".")
            raise StoreError(f"{why}; it holds no chunks of {key} to answer from.")
        bm25 = load_or_build_bm25(store, settings, chunks)
        return Lexical(chunks=chunks, bm25=bm25, generation=generation, notices=said)

    def retokenized(
        self, settings: Settings, lexical: Lexical, *, splitter: str, scorer: str
    ) -> Lexical:
        from coderag_tui.core.rank.iou import IOU, IoUIndex
        from coderag_tui.core.rank.lexical import load_or_build_bm25

        bm25 = load_or_build_bm25(self.store(settings), settings, lexical.chunks, splitter=splitter)
        index: LexicalIndex = IoUIndex(bm25) if scorer == IOU else bm25
        return replace(lexical, bm25=index, changed=True, notices=())

    # ---------------------------------------------------------------- the dense ranker
    def open_dense(
        self,
        settings: Settings,
        lexical: Lexical,
        embedder: Embedder,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        embed_missing: bool = True,
        partial: bool = True,
    ) -> DenseOpened:
        """The chunk vectors, loaded or built: vectors of unchanged text come from the
        embedding cache, only new text is embedded (none without `embed_missing`)."""
        from coderag_tui.core.rank.dense import load_or_build_dense

        index = load_or_build_dense(
            self.store(settings),
            settings,
            lexical.chunks,
            embedder,
            self.embedding_cache(settings),
            progress=progress,
            cancel=cancel,
            embed_missing=embed_missing,
            partial=partial,
        )
        cut = not index.complete and embed_missing
        return DenseOpened(ranker=index, notices=(EMBEDDING_CANCELLED,) if cut else ())

    # ---------------------------------------------------------------- after indexing
    def reach(self, settings: Settings) -> None:
        """Nothing to reach: the index is on this machine."""

    def push(
        self,
        settings: Settings,
        lexical: Lexical,
        dense: DenseRanker | None,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> PushReport | None:
        """Nothing to push: indexing wrote the files that are the index."""
        return None

    def warm(self, settings: Settings) -> None:
        """The saved bases' file tables and the store's content hashes, read now (see
        `lexical.warm_saved_bases`)."""
        from coderag_tui.core.rank.lexical import warm_saved_bases

        warm_saved_bases(self.store(settings), settings)

    def describe(self, settings: Settings) -> str:
        return f"the local index {one_line(str(settings.index_path))}"

    def close(self) -> None:
        """Close the index database and the embedding cache."""
        with self._lock:
            self.keeper.close()
            if self._cache is not None:
                self._cache.close()
                self._cache = None
