"""What the engine asks of the place an index lives: the `Backend` protocol and its values.

A backend opens the lexical and dense rankers of an index (`LexicalIndex`, `DenseRanker`),
brings the index up to date or pushes it after indexing, says where it is, and closes. The
engine holds one backend per kind it was asked for and never asks which kind it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.backends.qdrant_push import PushReport
    from coderag_tui.core.index.indexer import IndexProgress, IndexReport
    from coderag_tui.core.rank.dense import DenseRanker
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.rank.lexical import LexicalIndex
    from coderag_tui.settings import Settings


@dataclass(frozen=True, kw_only=True)
class Lexical:
    """The lexical stage: the indexed chunks of one chunking and their BM25 index.

    `report` is None when the stage was served from the saved index before checking the
    repository for changes; `changed` says whether a check found other chunks than the stage
    it was given (`update_index`'s `current`).
    """

    chunks: Sequence[Chunk]
    bm25: LexicalIndex
    generation: str
    report: IndexReport | None = None
    changed: bool = True
    notices: tuple[str, ...] = ()

    @property
    def files(self) -> int:
        from coderag_tui.core.index.chunk_list import ChunkList

        if isinstance(self.chunks, ChunkList):
            return self.chunks.n_files
        return len({c.path for c in self.chunks})


@dataclass(frozen=True, kw_only=True)
class DenseOpened:
    """A backend's dense list for an embedder, or the reason there is none."""

    ranker: DenseRanker | None = None
    reason: str = ""
    notices: tuple[str, ...] = ()


class Backend(Protocol):
    """Where an index lives, as the engine asks it: `LocalBackend` (files beside the
    repository) or `QdrantBackend` (a collection on a Qdrant server or folder)."""

    # Why the static first pass is never needed here ("": it may stand in for the model).
    first_pass_off: str

    def saved(self, settings: Settings) -> Lexical | None:
        """What the index serves at once, before any check for changed files (None: nothing
        yet, or nothing this backend serves before a check)."""
        ...

    def update(
        self,
        settings: Settings,
        *,
        current: Lexical | None,
        progress: Callable[[IndexProgress], None] | None,
        cancel: threading.Event | None,
        stale_ok: bool,
        only: Collection[str] | None = None,
    ) -> Lexical:
        """The index brought up to date (or opened) and its lexical ranker; `only`: the
        paths a file watch saw change since `current` was checked (a backend may check
        every file instead)."""
        ...

    def retokenized(
        self, settings: Settings, lexical: Lexical, *, splitter: str, scorer: str
    ) -> Lexical:
        """The same chunks ranked with `settings`' tokenizer over `splitter`'s tokens and
        scored by `scorer`, where the backend can."""
        ...

    def open_dense(
        self,
        settings: Settings,
        lexical: Lexical,
        embedder: Embedder,
        *,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None,
        embed_missing: bool,
        partial: bool = True,
    ) -> DenseOpened:
        """The dense ranker of `lexical`'s chunks for `embedder`, or why there is none
        (without `embed_missing` and `partial`, only a ranker that covers every chunk, else
        an empty one, at no cost beyond reading what is saved)."""
        ...

    def reach(self, settings: Settings) -> None:
        """Check the index can take a push before anything local changes (a StoreError
        in one sentence otherwise)."""
        ...

    def push(
        self,
        settings: Settings,
        lexical: Lexical,
        dense: DenseRanker | None,
        *,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None,
    ) -> PushReport | None:
        """After indexing locally: make the backend hold `lexical`'s chunks and `dense`'s
        vectors (None: the local files are the index, nothing to push)."""
        ...

    def warm(self, settings: Settings) -> None:
        """Read ahead what checking a few changed paths will read (a resident process calls
        it once it has opened the index, so its first edit costs what later ones do)."""
        ...

    def describe(self, settings: Settings) -> str:
        """Where the index is, in one line safe to show."""
        ...

    def close(self) -> None:
        """Let go of what the backend holds open (stages stay usable for reading)."""
        ...
