"""Open the saved index in a thread at start-up, beside composing and painting the first screen.

The app starts it from its Load event and its first index worker takes it over. Nothing here
imports Textual.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store


@dataclass(frozen=True)
class SavedIndex:
    """What start-up can serve before checking for changed files: the store, and its chunks and
    BM25 index when the current chunking already has chunks (else None)."""

    store: Store
    generation: str | None
    chunks: list[Chunk] | None
    bm25: Any


def open_saved_index(
    settings: Settings, store: Store | None = None, *, serve: bool = True
) -> SavedIndex:
    """Open (or reuse) the store; with `serve`, load the chunks and BM25 index already saved."""
    from coderag_tui.core.index.store import Store
    from coderag_tui.core.rank.lexical import load_or_build_bm25

    if store is None or store.path != settings.index_path:
        store = Store.open(settings.index_path)
    key = settings.chunking_spec.key
    if not serve or store.chunk_count(key) == 0:
        return SavedIndex(store, None, None, None)
    generation = store.generation(key)
    chunks = store.chunks(key)
    return SavedIndex(store, generation, chunks, load_or_build_bm25(store, settings, chunks))


def _depends_on(settings: Settings) -> tuple[object, ...]:
    """The settings a saved index depends on (a theme or budget change does not matter)."""
    return (
        settings.index_path,
        settings.chunking_spec.key,
        settings.split_identifiers,
        settings.path_in_text,
    )


@dataclass(frozen=True)
class Preload:
    """A saved index being opened in the background; `started` is on the caller's clock."""

    key: tuple[object, ...]
    started: float
    future: Future[SavedIndex]

    def serves(self, settings: Settings) -> bool:
        return self.key == _depends_on(settings)


def start_preload(settings: Settings, clock: Callable[[], float] = time.perf_counter) -> Preload:
    """Start opening the saved index for `settings` in a daemon thread.

    The collector is paused until the thread ends: what start-up builds (chunks, BM25, the
    first screen's widgets) lives as long as the app, and full collections re-scanning it
    took ~0.2 s of a stdlib start-up; it is then frozen out of later scans.
    """
    future: Future[SavedIndex] = Future()
    collecting = gc.isenabled()

    def run() -> None:
        try:
            future.set_result(open_saved_index(settings))
        except BaseException as exc:  # handed to the index worker, which reports it
            future.set_exception(exc)
        finally:
            gc.freeze()
            if collecting:
                gc.enable()

    gc.disable()
    preload = Preload(_depends_on(settings), clock(), future)
    threading.Thread(target=run, name="coderag-preload", daemon=True).start()
    return preload
