"""Messages the workers post to the app: small past-tense dataclasses, one per event.

Workers never touch widgets; they post one of these and a handler on the app renders it.
Progress messages may replace an older one of the same kind still waiting in the queue,
so a fast indexer never floods the UI.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from coderag_tui.core.records import PackedPrompt, SearchRun


@dataclass
class IndexProgressed(Message):
    """The indexer finished another batch of files."""

    stage: str
    files_done: int
    files_total: int
    chunks: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IndexProgressed)


@dataclass
class IndexBuilt(Message):
    """The chunks for the current chunking exist and BM25 is ready: lexical search works now."""

    generation: int
    files: int
    chunks: list[Any]  # list[Chunk], kept for the dense index and the preview
    bm25: Any
    report: Any  # IndexReport, or None when the existing index is served before the check
    elapsed_ms: float
    notice: str | None = None


@dataclass
class IndexChecked(Message):
    """The check for changed files found none: the index already served is current."""

    generation: int
    report: Any  # IndexReport
    elapsed_ms: float


@dataclass
class IndexFailed(Message):
    """Indexing stopped with a problem the user can fix (one sentence)."""

    generation: int
    message: str


@dataclass
class EmbeddingProgressed(Message):
    """The dense index embedded another batch of chunks."""

    generation: int
    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EmbeddingProgressed)


@dataclass
class EmbeddingsReady(Message):
    """The dense index is built (dense is not None) or unavailable (reason says why)."""

    generation: int
    dense: Any
    embedder: Any
    reason: str
    elapsed_ms: float


@dataclass
class RerankerReady(Message):
    """The cross-encoder is loaded (reranker is not None) or unavailable (reason says why)."""

    reranker: Any
    reason: str


@dataclass
class SearchFinished(Message):
    """A search ran: every ranking and timing (the prompt follows in a PromptPacked)."""

    serial: int
    run: SearchRun
    # Set once the results are on screen; the worker packs the prompt after that, because
    # token counting holds the GIL and would otherwise delay the first paint of the results.
    rendered: threading.Event = field(default_factory=threading.Event)


@dataclass
class SearchFailed(Message):
    """A search could not run (e.g. a bad file:line in code mode)."""

    serial: int
    message: str


@dataclass
class PromptPacked(Message):
    """The prompt was packed from the final ranking (after a search, or a change of budget,
    template, pins or exclusions); `packed` is None when it could not be (error says why)."""

    serial: int
    packed: PackedPrompt | None
    error: str = ""


@dataclass
class AdviceReady(Message):
    """The chunk-size advice for the current budget and chunking."""

    text: str


@dataclass
class PromptCopied(Message):
    """The prompt went to the clipboard (or a file); `how` is what the user should be told."""

    how: str
    ok: bool
