"""The Qdrant backend: a shared index held by a Qdrant collection, ranked there.

The chunks are indexed on this machine as always (`LocalBackend`) and pushed once
(`qdrant_push`); searches open the collection (`qdrant_rank`) and rank BM25 and dense on the
server, with positions in the local index's chunk list when it is exactly the one pushed.
Only the URL the user chose (`backend_url`) is connected to (`qdrant_server`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from coderag_tui.core.backends.base import DenseOpened, Lexical
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.core.backends.local import LocalBackend
    from coderag_tui.core.backends.qdrant_push import PushReport
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.core.rank.dense import DenseRanker
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.records import Chunk
    from coderag_tui.settings import Settings


class QdrantBackend:
    """A collection on a Qdrant server or folder; `local` is this machine's index, which a
    push reads and whose chunk list searches use when it is the one pushed."""

    first_pass_off = "no first pass is needed: the server holds the model's vectors."

    def __init__(self, local: LocalBackend) -> None:
        self.local = local

    def warm(self, settings: Settings) -> None:
        """Nothing to read ahead: the server's collection is the index."""

    def saved(self, settings: Settings) -> Lexical | None:
        """Nothing before a check: the collection is opened by `update`."""
        return None

    def update(
        self,
        settings: Settings,
        *,
        current: Lexical | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        stale_ok: bool = True,
        only: Collection[str] | None = None,  # nothing is built here: unused
    ) -> Lexical:
        """The lexical stage of the collection `settings` name, which a push filled; nothing
        is built (the server's collection is the index).

        Raises BackendError (a StoreError, one sentence) when the server cannot be reached or
        the collection is missing or not coderag's; the local index is never changed.
        """
        from coderag_tui.core.backends.qdrant_rank import open_remote
        from coderag_tui.core.index.store import StoreError

        def local_chunks() -> list[Chunk] | None:
            if not settings.index_path.exists():
                return None
            try:
                return self.local.store(settings).chunks(settings.chunking_spec.key)
            except StoreError:
                return None

        remote = open_remote(settings, local_chunks)
        if not remote.from_local:  # texts and secrets come from the collection, not this index
            self.local.keeper.close()
        if current is not None and current.generation == remote.generation:
            return replace(
                current, generation=remote.generation, report=None, changed=False, notices=()
            )
        remote.lexical.warm_up()
        return Lexical(
            chunks=remote.chunks,
            bm25=remote.lexical,
            generation=remote.generation,
            notices=remote.notices,
        )

    def retokenized(
        self, settings: Settings, lexical: Lexical, *, splitter: str, scorer: str
    ) -> Lexical:
        """The same stage: a collection has the one tokenizer it was pushed with."""
        return lexical

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
        """The collection's dense list, queried with the local embedder that made its vectors."""
        from coderag_tui.core.backends.qdrant_rank import RemoteLexical

        if not isinstance(lexical.bm25, RemoteLexical):
            return DenseOpened(reason="dense search is off: the lexical stage is not the server's.")
        ranker, reason = lexical.bm25.dense(embedder.name)
        return DenseOpened(ranker=ranker, reason=reason)

    def reach(self, settings: Settings) -> None:
        """Reach the server and check its collection is coderag's (BackendError otherwise)."""
        from coderag_tui.core.backends.qdrant_points import check

        check(settings)

    def push(
        self,
        settings: Settings,
        lexical: Lexical,
        dense: DenseRanker | None,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> PushReport:
        """Make the collection hold the chunks of `lexical` (a local stage) and the vectors of
        `dense` when they are this machine's (`DenseIndex`); only what changed is written."""
        from coderag_tui.core.backends.qdrant_push import push
        from coderag_tui.core.rank.dense import DenseIndex

        vectors = dense if isinstance(dense, DenseIndex) else None
        return push(settings, lexical.chunks, vectors, progress=progress, cancel=cancel)

    def describe(self, settings: Settings) -> str:
        from coderag_tui.core.backends.qdrant_server import collection_name, shown_url

        collection = one_line(collection_name(settings))
        return f"the Qdrant collection {collection} at {shown_url(settings.backend_url)}"

    def close(self) -> None:
        """Nothing to close: an embedded-mode folder stays open for the process (its lock
        allows one client per folder), and is closed at exit."""
