"""The engine: the one way a face (CLI, TUI, eval, bench) gets answers.

It opens in stages, each usable as soon as it is ready: the lexical stage (the index brought
up to date, its chunks and BM25), the dense stage (an embedder and the chunk vectors) and the
reranker. A stage is opened by a method that returns it as a value and touches nothing else,
so a face may open stages in worker threads and install them with `use` wherever it keeps its
state; `open` does all of it in order for one-shot faces. `search` ranks with what is
installed, `prompt` packs a search into the token budget. Every face asks the same methods,
so the same request gives the same rankings and the same prompt everywhere.
"""

from __future__ import annotations

import functools
import gc
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from coderag_tui.core.backends.base import Lexical as Lexical
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.records import (
    EVERY_FILE,
    Chunk,
    Origin,
    PackedPrompt,
    Scope,
    SearchRun,
    SecretFinding,
)

if TYPE_CHECKING:
    from pathlib import Path

    from coderag_tui.core.backends.base import Backend
    from coderag_tui.core.backends.local import LocalBackend
    from coderag_tui.core.backends.qdrant_push import PushReport
    from coderag_tui.core.index.changes import Change
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.core.index.store import Store
    from coderag_tui.core.prompt.pack import Advice
    from coderag_tui.core.prompt.render import Template
    from coderag_tui.core.prompt.spans import FileFacts, QueryMatch
    from coderag_tui.core.prompt.tokens import TokenCounter
    from coderag_tui.core.rank.dense import DenseRanker
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.rank.learned import LearnedReranker
    from coderag_tui.core.rank.rerank import Reranker
    from coderag_tui.core.rank.search import Searcher
    from coderag_tui.core.rank.static import StaticEmbedder
    from coderag_tui.settings import Settings

Clock = Callable[[], float]
ADVICE_SAMPLE = 200  # chunks whose tokens estimate the repository's tokens per line
STEMMED_LENGTH = 5  # words this long or longer also match their stem when packing
FILES_KEPT = 2048  # files whose definitions and line prices the engine keeps for packing
MATCHES_KEPT = 16  # queries whose words (and what each line holds of them) are kept
CHUNKS_PER_BUDGET = 100  # a prompt looks at least budget/100 hits deep (100-token chunks)
logger = logging.getLogger(__name__)

DENSE_OFF_FOR_RUN = "dense search is off: it was turned off for this run."
DENSE_CANCELLED = "dense search is off: loading was cancelled."
# Chunks the int8 model embeds a second on 2 cores, roughly (44 for a monorepo's 64-line
# windows in the background, benchmarks/README.md, issue 43): a search does not wait for a
# model that could not finish within its wait, and the cap's sentence says how long it takes.
MODEL_CHUNKS_PER_S = 45
# Chunks the static first pass embeds before a command answers (about 3 s on 2 cores); a larger
# repository's first pass is made by the background process while BM25 answers.
FIRST_PASS_AT_ONCE = 5_000


def model_started(settings: Settings, n_chunks: int) -> bool:
    """Does the background process start the model on its own for an index of `n_chunks`
    (`dense_background_limit`; `coderag index --dense` embeds every chunk whatever it is)?"""
    limit = settings.dense_background_limit
    return not limit or n_chunks <= limit


def capped_note(settings: Settings, model: str, n_chunks: int) -> str:
    """The one sentence that says the background model is capped, and how to finish it."""
    return (
        f"{model} is not started on its own above {settings.dense_background_limit:,} chunks "
        f"(dense_background_limit), and this index has {n_chunks:,}: `coderag index --dense` "
        f"embeds them all, in about {model_minutes(n_chunks)} min on 2 cores."
    )


def model_minutes(n_chunks: int) -> int:
    """Minutes the model needs for `n_chunks` on 2 cores, roughly (at least 1)."""
    return max(1, round(n_chunks / MODEL_CHUNKS_PER_S / 60))


class PromptError(CoderagError, ValueError):
    """A prompt that cannot be made as asked (budget too small, bad template or encoding)."""


# --- what a code-to-code query is ------------------------------------------------------------


def code_query(settings: Settings, file: str, line: int, n_lines: int) -> tuple[str, Origin]:
    """The N lines before LINE of FILE (LINE excluded) as a query, and where they came from.

    Raises LocationError (one sentence) when FILE:LINE cannot give a query, FILE included
    when it is not a file of the repository that the index would read.
    """
    from coderag_tui.core.given_paths import location_path, query_from_location

    query = query_from_location(settings, file, line, n_lines)
    path = location_path(settings.repo_root, file)
    return query, Origin.at(path, max(1, line - n_lines), line)


# The task of a prompt asked with a change alone: the change is in the prompt, its own section.
DIFF_TASK = (
    "Review this change: say what it does, what else in this code it affects (callers, "
    "tests, docs), and what could break."
)


def diff_query(settings: Settings, ref: str = "HEAD") -> tuple[str, Origin, Change]:
    """The work tree's change against REF as a query, the changed lines as its origin (their
    chunks are left out, as a code query's own lines are), and the change itself (for the
    prompt's "The change" section). Raises ChangeError (one sentence) when there is no
    change to read, or none of the files the index reads changed."""
    from coderag_tui.core.index.changes import ChangeError, working_change

    change = working_change(settings, ref)
    if change.empty:
        against = "HEAD" if ref == "HEAD" else f"{ref} (from where this branch left it)"
        others = f" ({len(change.left_out)} changed files coderag does not index)"
        raise ChangeError(
            f"nothing changed against {against}{others if change.left_out else ''}: edit a "
            "file, or give another REF (--diff main)."
        )
    query, _ = change.query()
    return query, Origin(change.spans), change


# --- the stages, as values ---------------------------------------------------------------------


@dataclass(frozen=True)
class Dense:
    """The dense stage: an embedder and the chunk vectors, or the reason dense search is off.

    `first_pass` marks the static table that stands in while the model embeds (see
    `Engine.open_first_pass`); `coverage` is the share of chunks the list can rank.
    """

    embedder: Embedder | None = None
    index: DenseRanker | None = None
    reason: str = ""
    notices: tuple[str, ...] = ()
    first_pass: bool = False
    # No model yet because its one-time copy is still to be made (`open_dense(prepare=False)`).
    pending: bool = False

    @property
    def available(self) -> bool:
        return self.embedder is not None and self.index is not None

    @property
    def coverage(self) -> float:
        return self.index.coverage if self.index is not None else 0.0

    @property
    def model(self) -> str:
        """The model's short name as people call it ("" when there is none)."""
        if self.embedder is None:
            return ""
        return model_label(self.embedder.name)

    def describe(self) -> dict[str, object]:
        """What the dense list is made of, for JSON and the latency panel."""
        index = self.index
        return {
            "available": self.available,
            "model": self.model,
            "stage": "first pass" if self.first_pass else "model",
            "coverage": round(self.coverage, 4),
            "chunks": index.covered if index is not None else 0,
            "of": index.n_chunks if index is not None else 0,
        }


def model_label(name: str, *, variant: bool = True) -> str:
    """A model id without its backend prefix or folder (`static MiniLM` for the first pass),
    with its variant (`all-MiniLM-L6-v2 int8`) unless `variant` is false."""
    from coderag_tui.core.rank.static import SHIPPED_KEY, STATIC_KEY, STATIC_LABEL

    if name in (STATIC_KEY, SHIPPED_KEY):
        return STATIC_LABEL
    for backend in ("fastembed", "sentence-transformers", "model2vec"):
        if name.startswith(f"{backend}:"):
            name = name[len(backend) + 1 :]
            break
    name, _, tag = name.partition(":")  # a variant of a model, e.g. ":int8"
    label = name.rstrip("/").rsplit("/", 1)[-1]
    return f"{label} {tag}" if tag and variant else label


@dataclass(frozen=True)
class Rerank:
    """The rerank stage: the learned model or a cross-encoder, or the reason reranking is off."""

    reranker: Reranker | LearnedReranker | None = None
    reason: str = ""
    notices: tuple[str, ...] = ()


Stage = Lexical | Dense | Rerank


# --- prompts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptRequest:
    """What to pack: the task, chunks to put first or leave out, and the template to use;
    `admitted` chunks go in although they touch a suspected secret (the user let each in)."""

    task: str
    pinned: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    template: str | None = None  # None: settings.template
    admitted: tuple[str, ...] = ()
    change: str = ""  # a unified diff (`--diff`): "The change", a section within the budget
    source: str | None = None  # pack from this ranking alone (bm25, dense, fused, rerank)


@dataclass(frozen=True)
class PromptResult:
    """A packed prompt with the search it came from (deepened when the budget needed it)."""

    run: SearchRun
    packed: PackedPrompt
    counter: TokenCounter
    advice: Advice
    # Kinds of suspected secret in the task itself (masked unless secrets is "allow").
    task_secrets: tuple[str, ...] = ()
    # The change's lines in the prompt and in all (cut to fit `CHANGE_SHARE` of the budget),
    # and the kinds of suspected secret in it (masked unless secrets is "allow").
    change_lines: tuple[int, int] = (0, 0)
    change_secrets: tuple[str, ...] = ()


# Characters of a query that are ranked: a task of megabytes (a serve client's, a paste on
# stdin) is ranked on its start, as BM25 and the embedder gain nothing from more; the prompt
# still carries the whole task.
MAX_RANKED_QUERY_CHARS = 64 * 1024


def masked_task(task: str, mode: str) -> tuple[str, tuple[str, ...]]:
    """The task with each suspected secret masked as `<redacted:KIND>` (as it is when `mode`
    is "allow"), and the kinds found: a task can be repository text (`--from`) or a paste."""
    from coderag_tui.core.index.secret_scan import kinds_in, redact_lines, scan_text

    findings = scan_text("task", task)
    if not findings:
        return task, ()
    kinds = kinds_in(findings, 1, task.count("\n") + 1)
    if mode == "allow":
        return task, kinds
    return "\n".join(redact_lines(task.split("\n"), 1, findings)), kinds


def prompt_tools(settings: Settings, template: str | None = None) -> tuple[Template, TokenCounter]:
    """The template and token counter a prompt uses, or PromptError in one sentence (faces may
    call it before indexing, to fail fast on a bad template or encoding)."""
    from coderag_tui.core.prompt.render import TemplateError, load_template
    from coderag_tui.core.prompt.tokens import UnknownEncodingError, token_counter

    try:
        loaded = load_template(template or settings.template, context_first=settings.context_first)
        counter = token_counter(settings.encoding, allow_download=settings.allow_download)
        loaded.check_fits(counter.count, settings.budget)
    except (TemplateError, UnknownEncodingError) as exc:
        raise PromptError(str(exc)) from exc
    return loaded, counter


def search_depth(settings: Settings) -> int:
    """How deep every list goes: the depth setting, the hits shown, or deep enough that the
    budget can be filled with whole chunks, whichever is largest (one rule for every face)."""
    return max(settings.depth, settings.k, settings.budget // CHUNKS_PER_BUDGET, 1)


# --- the engine ------------------------------------------------------------------------------


@dataclass
class _Preload:
    key: tuple[object, ...]
    future: Future[Lexical | None]
    started: float


def _lexical_key(settings: Settings) -> tuple[object, ...]:
    """The settings a lexical stage depends on (a theme or budget change does not matter)."""
    return (
        settings.index_path,
        settings.chunking_spec.key,
        settings.split_identifiers,
        settings.path_in_text,
    )


@dataclass
class Engine:
    """Opens the stages of one repository's index and answers searches and prompts from them."""

    settings: Settings
    clock: Clock = time.perf_counter
    # Settings the user gave (flags, environment, config files); None: those that differ
    # from their defaults. A build setting not given keeps the index's value (IndexKeeper).
    explicit: frozenset[str] | None = None
    # This machine's index (SQLite, BM25, vectors, the embedding cache), and the backends
    # `settings.backend` names (the local one among them), each made once.
    _local: LocalBackend = field(init=False, repr=False)
    _backends: dict[str, Backend] = field(default_factory=dict, repr=False)
    _lexical: Lexical | None = field(default=None, repr=False)
    _dense: Dense | None = field(default=None, repr=False)
    _rerank: Rerank | None = field(default=None, repr=False)
    _searcher: Searcher | None = field(default=None, repr=False)
    _preload: _Preload | None = field(default=None, repr=False)
    # The static table loading beside the index check (`prefetch_first_pass`), by models folder.
    _table: tuple[Path, Future[StaticEmbedder | None]] | None = field(default=None, repr=False)
    _advice: dict[tuple[object, ...], tuple[float, int]] = field(default_factory=dict, repr=False)
    # What packing knows of a file (its definitions, its lines' tokens), by path and text
    # hash, and the last queries' words: packing parses and prices a file once however many
    # prompts it serves.
    _files: dict[tuple[str, int], FileFacts] = field(default_factory=dict, repr=False)
    _matches: dict[tuple[object, ...], QueryMatch] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # ---------------------------------------------------------------- one call for one-shot faces
    @classmethod
    def open(  # noqa: PLR0913
        cls,
        settings: Settings,
        *,
        dense: bool = True,
        rerank: bool | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        embed_progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        clock: Clock = time.perf_counter,
        explicit: frozenset[str] | None = None,
        background: bool = False,
    ) -> Engine:
        """Bring the index up to date and open every stage asked for, in order.

        Dense search opens when `dense` is true and a model resolves; the reranker when
        `rerank` (default: settings.rerank) is true. A missing model never fails the call:
        the stage carries the reason and `search` shows it in place of that ranking.
        `explicit` names the settings the user gave (see `Engine.explicit`); `background`
        says the caller leaves the model's missing chunks to a background process (the
        dense notice says so).
        """
        from coderag_tui.core.index.walk import start_fingerprint, stop_fingerprint

        engine = cls(settings, clock=clock, explicit=explicit)
        try:
            start_fingerprint(settings.repo_root)  # git lists the tree while this goes on
            if dense and not settings.dense_wait:
                engine.prefetch_first_pass(settings)
            try:
                lexical = engine.update_index(settings, progress=progress, cancel=cancel)
            finally:
                stop_fingerprint(settings.repo_root)  # what the check did not read
            engine.use(lexical)
            cancelled = cancel is not None and cancel.is_set()
            if not dense:
                engine.use(Dense(reason=DENSE_OFF_FOR_RUN))
            elif cancelled:
                engine.use(Dense(reason=DENSE_CANCELLED))
            else:
                if embed_progress is None and progress is not None:
                    embed_progress = engine._embed_as_index_progress(progress, len(lexical.chunks))
                if not settings.dense_wait:
                    engine.use(
                        engine.open_dense_now(
                            settings, lexical, background=background, progress=embed_progress
                        )
                    )
                else:
                    engine.use(engine.open_dense_waiting(settings, lexical, embed_progress, cancel))
            if settings.rerank if rerank is None else rerank:
                engine.use(engine.open_reranker(settings))
        except BaseException:
            engine.close()
            raise
        return engine

    def _embed_as_index_progress(
        self, progress: Callable[[IndexProgress], None], n_chunks: int
    ) -> Callable[[int, int], None]:
        from coderag_tui.core.index.indexer import IndexProgress

        started = self.clock()

        def report(done: int, total: int) -> None:
            progress(IndexProgress("embed", done, total, n_chunks, 0, self.clock() - started))

        return report

    # ---------------------------------------------------------------- the lexical stage
    def __post_init__(self) -> None:
        from coderag_tui.core.backends.local import LocalBackend

        self._local = LocalBackend(self.explicit, self.clock)

    def _backend(self, settings: Settings) -> Backend:
        """Where `settings`' index lives (`settings.backend`), asked for every stage."""
        from coderag_tui.core.backends import backend_for

        with self._lock:
            backend = self._backends.get(settings.backend)
            if backend is None:
                backend = self._backends[settings.backend] = backend_for(
                    settings.backend, self._local
                )
                logger.debug("index: %s", backend.describe(settings))
            return backend

    def store(self, settings: Settings | None = None) -> Store:
        """The index database of `settings` (default: the engine's), opened once and kept
        (for reading only when it cannot be written; `update_index` then says so)."""
        return self._local.store(settings or self.settings)

    def preload(self) -> None:
        """Start opening the saved index in a daemon thread (a start-up beside the first paint).

        The collector is paused until the thread ends: what start-up builds (chunks, BM25, a
        face's first screen) lives as long as the process, and full collections re-scanning
        it took ~0.2 s of a stdlib start-up; it is then frozen out of later scans.
        """
        settings = self.settings
        future: Future[Lexical | None] = Future()
        collecting = gc.isenabled()

        def run() -> None:
            try:
                future.set_result(self.saved_lexical(settings))
            except BaseException as exc:  # handed to whoever takes the preload
                future.set_exception(exc)
            finally:
                gc.freeze()
                if collecting:
                    gc.enable()

        gc.disable()
        self._preload = _Preload(_lexical_key(settings), future, self.clock())
        threading.Thread(target=run, name="coderag-preload", daemon=True).start()

    def take_preload(self, settings: Settings) -> tuple[Lexical | None, float] | None:
        """The preloaded stage and when loading it started, if a preload serves `settings`."""
        preload, self._preload = self._preload, None
        if preload is None or preload.key != _lexical_key(settings):
            return None
        return preload.future.result(), preload.started

    def saved_lexical(self, settings: Settings) -> Lexical | None:
        """What the saved index serves at once, before any check for changed files (or None
        when this chunking has no chunks yet, or the index is a server's)."""
        return self._backend(settings).saved(settings)

    def warm_for_edits(self, settings: Settings) -> None:
        """Read ahead what the first check of a few changed paths reads (`Backend.warm`), so
        a resident's first edit costs what later ones do. Nothing changes."""
        self._backend(settings).warm(settings)

    def update_index(
        self,
        settings: Settings,
        *,
        current: Lexical | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        stale_ok: bool = True,
        only: Collection[str] | None = None,
    ) -> Lexical:
        """Bring the index up to date (only changed files are read) and load or build BM25.

        `only`: the repository paths a file watch saw change since `current` was checked;
        just those are checked then (each with the walk's rules), unless something makes
        every file need it (see `indexer.build_index`).

        With `current` (a stage already served) and no change found, the same chunks and
        BM25 come back with the check's report and `changed` false.

        One run at a time builds a repository's index: another waits for it (progress stage
        "wait") and then finds its work done. The file is page-checked before its first
        build; a damaged one is moved aside and rebuilt, said in a notice. An index that
        cannot be written serves what it holds with a notice saying so (unless `stale_ok` is
        false: then IndexNotWritable). Build settings the user did not give keep the values
        the index was built with; a different given value re-checks every file, said too.
        With a server's collection (`backend`), nothing is built: the collection is opened.
        """
        return self._backend(settings).update(
            settings,
            current=current,
            progress=progress,
            cancel=cancel,
            stale_ok=stale_ok,
            only=only,
        )

    def lexical_for(
        self, settings: Settings, lexical: Lexical, *, splitter: str = "word", scorer: str = "bm25"
    ) -> Lexical:
        """The same chunks with the lexical index of `settings`' tokenizer, built over
        `splitter`'s tokens and scored by `scorer` (eval's grid: `core.rank.splitters`,
        `core.rank.iou`); a server's collection has the one tokenizer it was pushed with."""
        from coderag_tui.core.rank.iou import SCORERS

        if scorer not in SCORERS:
            raise ValueError(f"unknown scorer {scorer!r}: use one of {', '.join(SCORERS)}")
        return self._backend(settings).retokenized(
            settings, lexical, splitter=splitter, scorer=scorer
        )

    # ---------------------------------------------------------------- a shared index on a server
    def reach_backend(self, settings: Settings) -> None:
        """Reach the server and check its collection is coderag's (BackendError otherwise), so
        `coderag index` fails before anything local changes."""
        self._backend(settings).reach(settings)

    def push(
        self,
        settings: Settings,
        lexical: Lexical,
        dense: Dense | None = None,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> PushReport | None:
        """Make the server's collection hold the chunks of `lexical` (a local stage) and the
        model vectors of `dense` (never a first pass's); only what changed is written. None
        when `settings` name the local index: there is nothing to push."""
        model = dense is not None and dense.available and not dense.first_pass
        index = dense.index if model and dense is not None else None
        backend = self._backend(settings)
        return backend.push(settings, lexical, index, progress=progress, cancel=cancel)

    # ---------------------------------------------------------------- dense and rerank stages
    def open_dense(  # noqa: PLR0913 (each keyword a way of opening the one stage)
        self,
        settings: Settings,
        lexical: Lexical,
        *,
        embedder: Embedder | None = None,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        embed_missing: bool = True,
        first_pass: bool = False,
        prepare: bool = True,
        partial: bool = True,
    ) -> Dense:
        """Resolve the embedder (unless given) and load or build the chunk vectors.

        Vectors of unchanged text come from the embedding cache shared by every repository
        and chunking; only new text is embedded. A cancelled build covers what was embedded;
        with `embed_missing` false nothing is embedded and the index covers what is known
        (with `partial` false too: every chunk or none, at no cost). Without `prepare`, a
        model whose one-time copy is not made yet is not made: the stage is `pending`.
        """
        notices: list[str] = []
        if embedder is None:
            from coderag_tui.core.rank.embedders import resolve_embedder

            choice = resolve_embedder(settings, prepare=prepare)
            if choice.embedder is None:
                return Dense(reason=choice.reason, pending=choice.pending)
            embedder = choice.embedder
            if choice.reason:
                notices.append(choice.reason)
        try:
            opened = self._backend(settings).open_dense(
                settings,
                lexical,
                embedder,
                progress=progress,
                cancel=cancel,
                embed_missing=embed_missing,
                partial=partial,
            )
        except Exception as exc:  # a model failing mid-way must not take a face down
            return Dense(
                embedder=embedder,
                reason=f"dense search is off: embedding failed ({exc}) — BM25 still works.",
            )
        index = opened.ranker
        if index is None:
            return Dense(reason=opened.reason)
        notices += opened.notices
        # The first call pays for lazy model set-up; pay it here, not in the first query's time
        # (not for a list that ranks nothing yet: a caller answers from another list then).
        if index.covered:
            try:
                embedder.embed_query("warm up")
            except Exception as exc:  # a model that cannot answer (ModelTimeout): BM25 goes on
                return Dense(
                    reason=f"dense search is off: the model failed ({exc}) — BM25 still works."
                )
        return Dense(embedder, index, "", tuple(notices), first_pass)

    def open_first_pass(
        self,
        settings: Settings,
        lexical: Lexical,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> Dense:
        """The static first pass: every chunk embedded in seconds by a token table.

        The table ships with coderag (distilled from the shipped all-MiniLM-L6-v2; one
        distilled into the models folder comes first). Off (with the reason) when settings
        say so, when the final model is itself static, or when model2vec is not installed.
        """
        from coderag_tui.core.rank import static

        if settings.dense_first_pass == "off":
            return Dense(reason="the static first pass is off (dense_first_pass = off).")
        off = self._backend(settings).first_pass_off
        if off:
            return Dense(reason=off)
        if settings.embed_backend in ("none", "model2vec"):
            return Dense(
                reason=f"no first pass is needed with embed_backend {settings.embed_backend}."
            )
        try:
            embedder = self._take_table(settings) or static.load_distilled(settings.models_path)
            if embedder is None:
                return Dense(reason=static.NO_FIRST_PASS)
            return self.open_dense(
                settings,
                lexical,
                embedder=embedder,
                progress=progress,
                cancel=cancel,
                first_pass=True,
            )
        except Exception as exc:  # a failed distillation must not take a face down
            return Dense(reason=f"the static first pass is off: {exc}.")

    def prefetch_first_pass(self, settings: Settings) -> bool:
        """Start loading the static table in a daemon thread when this search will likely
        rank with the first pass: one is saved for this chunking, and no model's list of it
        is complete. The load (model2vec's import, the tokenizer) then runs while the index
        is checked and git's listing is awaited: ~0.25 s of a later search on a 35,000-file
        repository. A wrong guess costs only that thread's work. True when it started."""
        from coderag_tui.core.rank import static
        from coderag_tui.core.rank.dense import saved_lists

        if settings.dense_first_pass == "off" or settings.embed_backend in ("none", "model2vec"):
            return False
        found = static.table(settings.models_path)
        lists = saved_lists(settings)
        if found is None or not any(meta.get("model") == found[1] for meta in lists):
            return False
        if any(meta.get("complete") and meta.get("model") != found[1] for meta in lists):
            return False
        future: Future[StaticEmbedder | None] = Future()
        models = settings.models_path

        def run() -> None:
            try:
                future.set_result(static.load_distilled(models))
            except BaseException as exc:  # handed to open_first_pass, which says why
                future.set_exception(exc)

        self._table = (models, future)
        threading.Thread(target=run, name="coderag-static-table", daemon=True).start()
        return True

    def _take_table(self, settings: Settings) -> StaticEmbedder | None:
        """The prefetched static table, if one was started for `settings`' models folder."""
        table, self._table = self._table, None
        if table is None or table[0] != settings.models_path:
            return None
        return table[1].result()

    def first_pass_worth(self, settings: Settings, missing: int) -> bool:
        """Is the static first pass worth running before the model embeds `missing` chunks?

        Yes when chunks are missing and a static table is at hand (it ships with coderag, so
        the pass costs seconds; nothing is distilled at run time) and model2vec can run it.
        """
        from coderag_tui.core.rank import models as mr
        from coderag_tui.core.rank import static

        if settings.dense_first_pass == "off" or missing <= 0:
            return False
        return static.is_distilled(settings.models_path) and mr.installed("model2vec")

    def open_dense_waiting(
        self,
        settings: Settings,
        lexical: Lexical,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> Dense:
        """The model's dense list if it embeds every chunk within `settings.dense_wait`
        seconds (all: however long it takes); else, once that time is up, what
        `open_dense_now` gives, with a note saying how far the model got and how to finish.

        What the model embedded in the time is kept in the embedding cache, so every run
        gets further.
        """
        from coderag_tui.settings import DENSE_WAIT_ALL

        if settings.dense_wait == DENSE_WAIT_ALL:
            return self.open_dense(settings, lexical, progress=progress, cancel=cancel)
        known = self.open_dense(settings, lexical, embed_missing=False)
        if not known.available or known.index is None or known.index.complete:
            return known
        wait = settings.dense_wait
        missing = known.index.n_chunks - known.index.covered
        finish = (
            ": `coderag index --dense` embeds the rest, `coderag serve` refines in the "
            "background, and --wait waits for it."
        )
        if missing > wait * MODEL_CHUNKS_PER_S and self.first_pass_worth(settings, missing):
            # The model cannot finish within the wait: spend it on nothing, answer now.
            first = self.open_first_pass(settings, lexical, cancel=cancel)
            if first.available:
                minutes = model_minutes(missing)
                note = (
                    f"{known.model} has embedded {known.coverage:.0%} of chunks and needs about "
                    f"{minutes} min for the rest, more than the {wait} s a search waits, so "
                    f"dense is the static first pass{finish}"
                )
                return replace(first, notices=(note,))
        deadline = threading.Event()
        timer = threading.Timer(wait, deadline.set)
        timer.daemon = True
        stop = deadline
        if cancel is not None:  # the caller's cancel stops the wait too
            stop = _either(cancel, deadline)
        timer.start()
        try:
            full = self.open_dense(
                settings, lexical, embedder=known.embedder, progress=progress, cancel=stop
            )
        finally:
            timer.cancel()
        if (cancel is not None and cancel.is_set()) or not deadline.is_set():
            return full
        if not full.available or (full.index is not None and full.index.complete):
            return full
        first = self.open_first_pass(settings, lexical, cancel=cancel)
        now, what = (
            (first, "is the static first pass") if first.available else (full, "covers those")
        )
        note = (
            f"{full.model} embedded {full.coverage:.0%} of chunks in the {wait} s a search "
            f"waits, so dense {what}{finish}"
        )
        return replace(now, notices=(note,))

    def open_dense_now(
        self,
        settings: Settings,
        lexical: Lexical,
        *,
        background: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> Dense:
        """The best dense list that needs no model run: the model's own vectors when they
        cover every chunk, else the static first pass, else the model's partial vectors.

        Nothing here waits on a one-time setup: a model whose ONNX copy is not made yet
        counts as covering nothing. The stage's notice says which list it is and what is
        still coming (`background`: a background process embeds the rest; else how to).
        `progress` hears the first pass embed what it has not embedded before.
        """
        from coderag_tui.core.rank.embedders import OFFLINE_LABEL
        from coderag_tui.core.rank.embedding_status import read_status

        full = self.open_dense(settings, lexical, embed_missing=False, prepare=False, partial=False)
        if full.available and full.index is not None and full.index.complete:
            return full
        if not full.available and not full.pending:
            return full  # dense is off, and says why
        model = full.model or OFFLINE_LABEL
        n_chunks = len(lexical.chunks)
        status = read_status(settings.index_path) if background else None
        doing = f" ({status.describe()})" if status is not None else ""
        if background and not model_started(settings, n_chunks):
            coming = capped_note(settings, model, n_chunks)
        elif background:
            coming = (
                f"{model} embeds the chunks in a background process at low priority{doing}: "
                "later searches use it once it has embedded every chunk (--wait waits for it)."
            )
        else:
            coming = (
                f"{model} has not embedded every chunk yet — `coderag index --dense` embeds "
                "the rest, --wait waits for it."
            )
        if not self.first_pass_at_once(settings, lexical):
            # A first pass of a large repository takes a minute or more: BM25 answers now and
            # the background process makes it (said with what is still coming).
            if background:
                note = (
                    f"dense search is off for now: a background process at low priority makes "
                    f"the static first pass of {n_chunks:,} chunks{doing}, which later searches "
                    f"use; then {coming}"
                )
            else:
                note = (
                    f"dense search is off for now: the static first pass of {n_chunks:,} chunks "
                    "is made by the background process (dense_background is off) or by "
                    "`coderag index --dense`, which embeds every chunk with the model too."
                )
            return Dense(reason=note, pending=True)
        first = self.open_first_pass(settings, lexical, progress=progress)
        if first.available:
            note = f"dense is the static first pass{' while ' if background else ': '}{coming}"
            return Dense(first.embedder, first.index, notices=(note,), first_pass=True)
        if full.pending:
            return Dense(reason=f"dense search is off for now: {coming}", pending=True)
        known = self.open_dense(settings, lexical, embedder=full.embedder, embed_missing=False)
        if not known.available:
            return known
        share = f"{known.coverage:.0%}"
        note = f"dense covers {share} of chunks so far: {coming}"
        return replace(known, notices=(*known.notices, note))

    def first_pass_at_once(self, settings: Settings, lexical: Lexical) -> bool:
        """May a command make the static first pass itself before it answers? When the
        repository is small (`FIRST_PASS_AT_ONCE` chunks: seconds), or a first pass of this
        chunking is saved (only the chunks that changed since are embedded)."""
        from coderag_tui.core.rank import static
        from coderag_tui.core.rank.dense import DenseIndex, dense_dir

        if len(lexical.chunks) <= FIRST_PASS_AT_ONCE:
            return True
        found = static.table(settings.models_path)
        return found is not None and DenseIndex.read_meta(dense_dir(settings, found[1])) is not None

    def open_reranker(self, settings: Settings) -> Rerank:
        """Resolve and warm up the reranker (learned or a cross-encoder), or say why
        reranking is off."""
        from coderag_tui.core.rank.learned import LearnedReranker
        from coderag_tui.core.rank.rerank import resolve_reranker

        try:
            choice = resolve_reranker(settings)
            if choice.reranker is None:
                return Rerank(reason=choice.reason)
            if isinstance(choice.reranker, LearnedReranker):
                choice.reranker.warm_up()
            else:
                choice.reranker.score("warm up", ["warm up"])
        except Exception as exc:  # a broken model file must not take a face down
            return Rerank(reason=f"rerank is off: loading failed ({exc}).")
        return Rerank(choice.reranker, "", (choice.reason,) if choice.reason else ())

    # ---------------------------------------------------------------- installing stages
    def use(self, stage: Stage) -> None:
        """Install a stage: later searches rank with it (a new lexical stage drops the dense
        one built for other chunks)."""
        if isinstance(stage, Dense | Rerank) and stage.reason:
            logger.debug("%s stage off: %s", type(stage).__name__.lower(), stage.reason)
        for notice in stage.notices:
            logger.debug("%s stage: %s", type(stage).__name__.lower(), notice)
        from coderag_tui.core.rank.search import Searcher

        with self._lock:
            if isinstance(stage, Lexical):
                if self._lexical is None or stage.chunks is not self._lexical.chunks:
                    self._dense = None
                self._lexical = stage
            elif isinstance(stage, Dense):
                self._dense = stage
            else:
                self._rerank = stage
            lexical, dense, rerank = self._lexical, self._dense, self._rerank
            if lexical is None:
                self._searcher = None
                return
            old = self._searcher
            self._searcher = Searcher(
                lexical.chunks,
                lexical.bm25,
                dense=dense.index if dense is not None and dense.available else None,
                embedder=dense.embedder if dense is not None and dense.available else None,
                reranker=rerank.reranker if rerank is not None else None,
                dense_reason=dense.reason if dense is not None else "",
                rerank_reason=rerank.reason if rerank is not None else "",
                clock=self.clock,
            )
            if old is not None and old.bm25 is lexical.bm25:
                # Same chunks: what the signals read about them is still true (a new dense or
                # rerank stage must not cost a rebuild of the per-file facts).
                self._searcher.share_facts(old)

    @property
    def lexical(self) -> Lexical | None:
        return self._lexical

    @property
    def dense(self) -> Dense | None:
        return self._dense

    @property
    def rerank(self) -> Rerank | None:
        return self._rerank

    @property
    def ready(self) -> bool:
        """Can `search` answer (the lexical stage is installed)?"""
        return self._searcher is not None

    @property
    def notices(self) -> tuple[str, ...]:
        """What the installed stages have to say once (fallbacks, cancellations, repairs)."""
        found: list[str] = []
        for stage in (self._lexical, self._dense, self._rerank):
            if stage is not None:
                found += stage.notices
        return tuple(dict.fromkeys(found))

    # ---------------------------------------------------------------- answers
    def search(
        self,
        query: str,
        settings: Settings | None = None,
        origin: Origin | None = None,
        scope: Scope = EVERY_FILE,
    ) -> SearchRun:
        """Rank the chunks for `query` with every installed stage, each stage timed.

        With `origin`, the chunks holding the query's own lines are left out of every ranking
        (they would trivially rank first); with `scope`, the chunks of files outside it.
        Lists go `search_depth(settings)` deep.
        """
        settings = settings or self.settings
        searcher = self._searcher
        if searcher is None:
            raise RuntimeError("the engine has no lexical stage yet: call update_index and use")
        own: frozenset[int] = frozenset()
        if origin is not None:
            own = frozenset().union(
                *(searcher.overlapping(s.path, s.start_line, s.end_line) for s in origin.spans)
            )
        outside = searcher.outside(scope) if scope.active else frozenset()
        depth = search_depth(settings)
        cut = len(query) > MAX_RANKED_QUERY_CHARS
        if cut:  # a task may be megabytes (a serve client's, stdin's): its start is ranked
            query = query[:MAX_RANKED_QUERY_CHARS]
        run = searcher.run(query, settings.with_(depth=depth), exclude=own | outside)
        notes = run.notes
        if cut:
            notes = (
                *notes,
                f"the query was ranked on its first {MAX_RANKED_QUERY_CHARS:,} characters.",
            )
        return replace(  # what the searcher said (`fused_from` …), with where it looked
            run,
            notes=notes,
            depth=depth,
            origin=origin,
            left_out=len(own),
            scope=scope,
            out_of_scope=len(outside - own),
        )

    def prompt(
        self, run: SearchRun, request: PromptRequest, settings: Settings | None = None
    ) -> PromptResult:
        """Pack the run's best hits into the budget, most relevant first, and say what fit.

        A run too shallow for the budget (see `search_depth`) is searched again deeper
        first, so a large budget is filled the same way in every face.
        """
        from coderag_tui.core.index.store import StoreError
        from coderag_tui.core.prompt.pack import (
            CHANGE_SHARE,
            BudgetTooSmall,
            PackInputs,
            fit_change,
            pack,
            packing_order,
        )
        from coderag_tui.core.prompt.pack_spans import (
            SpanInputs,
            data_keys,
            pack_spans,
            relevant_keys,
        )

        settings = settings or self.settings
        template, counter = prompt_tools(settings, request.template)
        if run.depth < search_depth(settings):
            run = self.search(run.query, settings, run.origin, run.scope)
        store = self._local.opened()
        file_text = store.file_text if store is not None else None
        source = request.source
        if source is None and settings.prompt_order == "reranked":
            source = "rerank"
        hits = packing_order(run, source)
        task, task_secrets = masked_task(request.task, settings.secrets)
        change, change_secrets = masked_task(request.change, settings.secrets)
        change_lines = (0, 0)
        if change:
            limit = int(settings.budget * CHANGE_SHARE)
            change, shown, total = fit_change(change, counter, limit)
            change_lines = (shown, total)
        inputs = PackInputs(
            budget=settings.budget,
            counter=counter,
            template=template,
            task=task,
            pinned=request.pinned,
            excluded=request.excluded,
            trim_last=settings.trim_last,
            file_text=file_text,
            secrets=self._secrets_of([h.chunk for h in hits]),
            secret_mode=settings.secrets,
            admitted=request.admitted,
            change=change,
        )
        try:
            if settings.packing == "chunks":
                packed = pack(hits, inputs)
            else:
                how = SpanInputs(
                    match=self.query_match(run.query, settings),
                    facts=self._facts_of,
                    relevant=relevant_keys(
                        run, source, settings.pack_floor_rank, settings.pack_floor_share
                    ),
                    data=data_keys(run, source),
                    pointed=self.pointed(run.query),
                )
                packed = pack_spans(hits, inputs, how)
        except (BudgetTooSmall, StoreError) as exc:  # StoreError: the index failed a read
            raise PromptError(str(exc)) from exc
        advice = self.advice(settings, counter)
        return PromptResult(
            run, packed, counter, advice, task_secrets, change_lines, change_secrets
        )

    def query_match(self, query: str, settings: Settings | None = None) -> QueryMatch:
        """The query's words as packing finds them in a line: BM25's words but stopwords
        (and the light stem of a longer word: `pushed` finds `def push`), each worth its idf
        in the index (a stem no more than its word)."""
        from coderag_tui.core.prompt.spans import QueryMatch
        from coderag_tui.core.rank.query_terms import STOPWORDS, stem
        from coderag_tui.core.rank.words import tokenize

        settings = settings or self.settings
        split = settings.split_identifiers
        lexical = self._lexical
        key = (query, split, lexical.generation if lexical is not None else "")
        kept = self._matches.get(key)
        if kept is not None:
            return kept
        index = lexical.bm25 if lexical is not None else None
        idf = getattr(index, "idf", None)

        def weight(word: str) -> float:
            return float(idf(word)) if callable(idf) else 1.0

        weights: dict[str, float] = {}
        for word in set(tokenize(query, split_identifiers=split)) - STOPWORDS:
            own = weight(word)
            if own > 0:
                weights[word] = max(weights.get(word, 0.0), own)
            root = stem(word) if len(word) >= STEMMED_LENGTH else word
            if root != word and (value := weight(root)) > 0:
                value = min(value, own) if own > 0 else value
                weights[root] = max(weights.get(root, 0.0), value)
        if len(self._matches) >= MATCHES_KEPT:
            self._matches.clear()
        found = self._matches[key] = QueryMatch(
            weights, functools.partial(tokenize, split_identifiers=split)
        )
        return found

    def pointed(
        self, query: str
    ) -> Callable[[str, Sequence[str], str | None], dict[int, float]] | None:
        """The lines of a file that the query's text points at (a stack frame's line, a quoted
        message's string literal, a backticked name's definition, a flag's handler), with
        their weights; None when the query points at nothing."""
        from coderag_tui.core.rank.evidence import lines_pointed_at, read_evidence

        evidence = read_evidence(query)
        if not evidence:
            return None

        def pointed(path: str, lines: Sequence[str], language: str | None) -> dict[int, float]:
            return {p.line: p.weight for p in lines_pointed_at(evidence, path, lines, language)}

        return pointed

    def _facts_of(self, path: str, text: str | None, language: str | None) -> FileFacts:
        """A file's definitions, statements and line prices for packing, kept by path and
        text."""
        from coderag_tui.core.prompt.spans import FileFacts, file_facts

        if text is None:  # not readable as indexed: nothing to keep
            return FileFacts(())
        key = (path, hash(text))
        found = self._files.get(key)
        if found is None:
            if len(self._files) > FILES_KEPT:
                self._files.clear()
            found = self._files[key] = file_facts(text, language)
        return found

    def secret_kinds(self, chunks: Iterable[Chunk]) -> dict[str, tuple[str, ...]]:
        """The kinds of suspected secret in each chunk that touches one, by chunk key (for
        marking hits: searches stay local and show every chunk)."""
        from coderag_tui.core.index.secret_scan import kinds_in

        chunks = list(chunks)
        found = self._secrets_of(chunks)
        marks: dict[str, tuple[str, ...]] = {}
        for chunk in chunks:
            kinds = kinds_in(found.get(chunk.path, ()), chunk.start_line, chunk.end_line)
            if kinds:
                marks[chunk.key] = kinds
        return marks

    def held_texts(
        self, chunks: Sequence[Chunk], mode: str
    ) -> list[tuple[str | None, tuple[str, ...]]]:
        """Each chunk's text as a prompt would hold it, and the kinds of suspected secret it
        touches: None (held back) when `mode` is "hold", each secret masked as
        `<redacted:KIND>` for "redact", as it is for "allow" (for faces that hand chunk texts
        to another program, as the MCP server does)."""
        from coderag_tui.core.index.secret_scan import kinds_in, redact_lines

        found = self._secrets_of(chunks)
        held: list[tuple[str | None, tuple[str, ...]]] = []
        for chunk in chunks:
            findings = found.get(chunk.path, ())
            kinds = kinds_in(findings, chunk.start_line, chunk.end_line) if findings else ()
            if not kinds or mode == "allow":
                held.append((chunk.text, kinds))
            elif mode == "redact":
                lines = redact_lines(chunk.text.split("\n"), chunk.start_line, findings)
                held.append(("\n".join(lines), kinds))
            else:
                held.append((None, kinds))
        return held

    def _secrets_of(self, chunks: Sequence[Chunk]) -> dict[str, tuple[SecretFinding, ...]]:
        """The suspected secrets of the chunks' files as the index found them; without an
        index open, the chunks' own texts are scanned, so nothing passes unchecked."""
        from coderag_tui.core.index.secret_scan import scan_text

        store = self._local.opened()
        if store is not None:
            return store.secrets({c.path for c in chunks})
        found: dict[str, set[SecretFinding]] = {}
        for chunk in {c.key: c for c in chunks}.values():
            shift = chunk.start_line - 1
            for f in scan_text(chunk.path, chunk.text):
                moved = SecretFinding(f.line + shift, f.col, f.end_line + shift, f.end_col, f.kind)
                found.setdefault(chunk.path, set()).add(moved)
        return {
            path: tuple(sorted(items, key=lambda f: (f.line, f.col)))
            for path, items in found.items()
        }

    def advice(
        self, settings: Settings | None = None, counter: TokenCounter | None = None
    ) -> Advice:
        """Chunk-size advice for the budget, from the tokens per line of a sample of chunks.

        The sample's figures are kept per chunking and encoding, so the advice follows a
        budget change at no cost.
        """
        from coderag_tui.core.prompt.pack import advise
        from coderag_tui.core.prompt.tokens import token_counter

        settings = settings or self.settings
        lexical = self._lexical
        chunks = lexical.chunks if lexical is not None else []
        key = (lexical.generation if lexical else "", settings.chunking_spec.key, settings.encoding)
        figures = self._advice.get(key)
        if figures is None:
            step = max(1, len(chunks) // ADVICE_SAMPLE)
            sample = chunks[::step][:ADVICE_SAMPLE]
            lines = sum(c.n_lines for c in sample)
            if counter is None:
                counter = token_counter(settings.encoding, allow_download=settings.allow_download)
            tokens = sum(counter.count_many([c.text for c in sample])) if sample else 0
            per_line = tokens / lines if lines else 10.0
            mean_lines = round(lines / len(sample)) if sample else settings.chunk_lines
            figures = self._advice[key] = (per_line, max(1, mean_lines))
        per_line, mean_lines = figures
        chunk_lines = mean_lines if settings.chunking == "file" else settings.chunk_lines
        return advise(settings.budget, chunk_lines, per_line)

    # ---------------------------------------------------------------- the end
    def close(self) -> None:
        """Close the index database, the embedding cache and what backends hold open (stages
        stay usable for reading)."""
        with self._lock:
            for backend in self._backends.values():
                if backend is not self._local:
                    backend.close()
            self._local.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _either(first: threading.Event, second: threading.Event) -> threading.Event:
    """An event that is set once either of two is (checked where the build checks it)."""

    class _Either(threading.Event):
        def is_set(self) -> bool:
            return first.is_set() or second.is_set()

    return _Either()
