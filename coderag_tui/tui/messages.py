"""Messages the workers post to the app: small past-tense dataclasses, one per event.

Workers never touch widgets or app state; they post one of these, carrying the engine's
values (a stage, a search run, a packed prompt), and a handler on the app installs and
renders it. Progress messages may replace an older one of the same kind still waiting in
the queue, so a fast indexer never floods the UI.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from coderag_tui.core.records import Chunk, SearchRun

if TYPE_CHECKING:
    from coderag_tui.core.engine import Dense, Lexical, PromptResult, Rerank
    from coderag_tui.core.index.indexer import IndexReport
    from coderag_tui.core.prompt.pack import Advice


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
    """A lexical stage with other chunks is ready: BM25 search works now.

    `report` is None when the saved index is served before the check for changed files.
    """

    serial: int
    lexical: Lexical
    chunking: str  # the chunking the stage was built for
    elapsed_ms: float

    @property
    def chunks(self) -> Sequence[Chunk]:
        return self.lexical.chunks

    @property
    def files(self) -> int:
        return self.lexical.files

    @property
    def report(self) -> IndexReport | None:
        return self.lexical.report


@dataclass
class IndexChecked(Message):
    """The check for changed files found none: the stage already served is current."""

    serial: int
    lexical: Lexical  # the same chunks, with the check's report
    elapsed_ms: float


@dataclass
class IndexFailed(Message):
    """Indexing stopped with a problem the user can fix (one sentence)."""

    serial: int
    message: str


@dataclass
class EmbeddingProgressed(Message):
    """The dense stage embedded another batch of stripes: the model's, or the static first
    pass's (`first_pass`; a large repository's takes minutes)."""

    serial: int
    done: int
    total: int
    first_pass: bool = False

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EmbeddingProgressed)


@dataclass
class ModelLoaded(Message):
    """The embedding model is loaded, and the vectors it already has (embedding cache, saved
    index) do not cover every chunk: `known` covers `known.coverage`; the rest is embedding."""

    serial: int
    known: Dense
    elapsed_ms: float


@dataclass
class FirstPassReady(Message):
    """The static first pass covers every chunk (`dense.available`), or is off (`dense.reason`).

    It stands in for the model's list until the model has embedded every chunk.
    """

    serial: int
    dense: Dense
    elapsed_ms: float


@dataclass
class EmbeddingsReady(Message):
    """The model's dense stage is open (`dense.available`) or off (`dense.reason` says why)."""

    serial: int
    dense: Dense
    elapsed_ms: float


@dataclass
class RerankerReady(Message):
    """The rerank stage is open (`rerank.reranker` is set) or off (`rerank.reason` says why)."""

    rerank: Rerank


@dataclass
class SearchFinished(Message):
    """A search ran: every ranking and timing (the prompt follows in a PromptPacked)."""

    serial: int
    run: SearchRun
    # Kinds of suspected secret in the listed chunks, by chunk key (they are marked).
    secrets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    change: str = ""  # the diff the search asked with (its prompt holds it)
    asked: str = ""  # what was ranked, in words, where the query bar cannot show it (a change)
    # Set once the results are on screen; the worker packs the prompt after that, because
    # token counting holds the GIL and would otherwise delay the first paint of the results.
    rendered: threading.Event = field(default_factory=threading.Event)


@dataclass
class SearchFailed(Message):
    """A search could not run (e.g. a bad FILE:LINE in code mode)."""

    serial: int
    message: str


@dataclass
class PromptPacked(Message):
    """The prompt was packed from the final ranking (after a search, or a change of budget,
    template, pins or exclusions); `result` is None when it could not be (error says why)."""

    serial: int
    result: PromptResult | None
    error: str = ""


@dataclass
class AdviceReady(Message):
    """The chunk-size advice for the current budget and chunking."""

    advice: Advice


@dataclass
class PromptExported(Message):
    """The prompt went to the clipboard or a file (or did not, or may not have: `ok`, and
    `sure` False where nothing can tell, as for OSC 52 alone); `how` says so."""

    title: str
    how: str
    ok: bool = True
    sure: bool = True
