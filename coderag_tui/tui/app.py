"""The coderag app: workers call the core, message handlers render what they return.

State lives here (settings, the searchable index parts, the last search and prompt, pins
and exclusions); the screens only display it. Every long call runs in a thread worker of
its own group, so a new query cancels the old one and indexing never blocks typing.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import get_current_worker

from coderag_tui.core.records import Chunk, PackedPrompt, RankingName, SearchRun
from coderag_tui.settings import Settings, user_config_dir
from coderag_tui.tui import state as tui_state
from coderag_tui.tui import themes as theme_files
from coderag_tui.tui.commands import CoderagCommands
from coderag_tui.tui.messages import (
    AdviceReady,
    EmbeddingProgressed,
    EmbeddingsReady,
    IndexBuilt,
    IndexChecked,
    IndexFailed,
    IndexProgressed,
    PromptCopied,
    PromptPacked,
    RerankerReady,
    SearchFailed,
    SearchFinished,
)
from coderag_tui.tui.preload import Preload, open_saved_index, start_preload
from coderag_tui.tui.widgets.status import IndexState
from coderag_tui.tui.widgets.tuning import TuningPanel, step_budget

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.tui.screens.main import MainScreen

Clock = Callable[[], float]
CODE_QUERY_LINES = 20  # lines before the cursor that make a code-to-code query
TEMPLATES = ("markdown", "xml")
BACKGROUND_NICE = 10  # nice value of the model-loading and embedding threads
ADVICE_SAMPLE = 400  # chunks whose tokens are counted to estimate tokens per line


def default_state_path() -> Path:
    """Where the app remembers the chosen theme and the query history between runs."""
    return user_config_dir() / tui_state.STATE_FILE


def parse_location(text: str) -> tuple[str, int]:
    """`path/to/file.py:120` -> ("path/to/file.py", 120), or ValueError in one sentence."""
    path, sep, line = text.strip().rpartition(":")
    if not sep or not path or not line.strip().isdigit() or int(line) < 1:
        raise ValueError(
            f"{text.strip()!r} is not FILE:LINE: type a repository path, a colon and a line "
            "number, e.g. shop/cart.py:25."
        )
    return path.strip(), int(line)


def lower_thread_priority() -> None:
    """Nice the calling thread (and the model threads it starts), so typing stays smooth.

    On Linux a thread is a task with its own nice value, and threads it creates inherit it:
    embedding with every core then yields to the UI thread instead of starving it.
    """
    setpriority = getattr(os, "setpriority", None)
    if setpriority is None:
        return
    with contextlib.suppress(OSError):
        setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


class CoderagApp(App[None]):
    """Rankings side by side, stage latencies, a budgeted prompt one keypress from the clipboard."""

    CSS_PATH = "app.tcss"
    TITLE = "coderag"
    COMMANDS = App.COMMANDS | {CoderagCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", tooltip="This list of keys"),
        Binding("ctrl+o", "prompt", "Prompt", tooltip="Open the assembled prompt"),
        Binding("ctrl+y", "copy_prompt", "Copy", tooltip="Copy the prompt (OSC 52 + system tool)"),
        Binding("ctrl+s", "save_prompt", "Save", tooltip="Save the prompt to a file"),
        Binding("ctrl+t", "next_template", "Template", tooltip="Switch template: markdown / xml"),
        Binding(
            "ctrl+g",
            "toggle_code_mode",
            "Code mode",
            tooltip="Query from FILE:LINE (the lines before it)",
        ),
        Binding(
            "ctrl+r",
            "reindex",
            "Re-index",
            show=False,
            tooltip="Re-read changed files, keep the rest",
        ),
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        state_path: Path | None = None,
        system_clipboard: bool = True,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.clock: Clock = clock or time.perf_counter
        self.state_path = state_path
        self.system_clipboard = system_clipboard
        # Last session's queries for this repository, so Up recalls them (shared with the input).
        self.history: list[str] = tui_state.read_history(state_path, settings.repo_root)
        self.history_problem_shown = False
        # The searchable index, replaced piece by piece as background work finishes.
        self.index_generation = 0
        self.store: Store | None = None
        self.chunks: list[Chunk] = []
        self.bm25: Any = None
        self.dense: Any = None
        self.embedder: Any = None
        self.reranker: Any = None
        self.dense_reason = "the dense index is being built — BM25 and fusion work meanwhile."
        self.rerank_reason = "the cross-encoder is loading."
        self.reranker_requested = False
        self.searcher: Any = None
        self.index_state = IndexState(
            repo=settings.repo_root.name, chunking=settings.chunking_spec.key
        )
        self.index_stats: list[tuple[str, str]] = []
        # The last search and the prompt packed from it.
        self.search_serial = 0
        self.query_text = ""
        self.code_mode = False
        self.pending_search = False
        self.last_run: SearchRun | None = None
        self.last_task = ""
        self.packed: PackedPrompt | None = None
        self.pack_error = ""
        self.selected_key: str | None = None
        self.pinned: list[str] = []
        self.excluded: list[str] = []
        self.template_name = settings.template
        self.advice = ""
        self.theme_problems: tuple[str, ...] = ()
        self.warmed_up = False
        # The saved index, opened in a thread from the Load event while the first screen is
        # composed and styled (the first build_index_worker takes it over).
        self._preload: Preload | None = None
        # Before the first screen is styled, so start-up styles the widgets once, not twice.
        self._register_themes()

    # ----------------------------------------------------------------- start-up
    def get_default_screen(self) -> Screen[Any]:
        from coderag_tui.tui.screens.main import MainScreen

        return MainScreen()

    @property
    def has_main_screen(self) -> bool:
        """False while the app starts or shuts down (worker messages may still arrive)."""
        return bool(self.screen_stack) and not self._exit

    @property
    def main(self) -> MainScreen:
        from coderag_tui.tui.screens.main import MainScreen

        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_load(self) -> None:
        # Load comes before the screen is composed: the saved index (chunks + BM25) loads
        # meanwhile instead of after the first paint. (Started before importing Textual, it
        # only slowed the imports: both sides hold the GIL; measured with bench_tui.py.)
        self._preload = start_preload(self.settings, self.clock)

    def on_mount(self) -> None:
        if self.theme_problems:
            self.notify(
                "\n".join(f"• {p}" for p in self.theme_problems),
                title="Theme problems (the rest loaded fine)",
                severity="warning",
                timeout=12,
                markup=False,
            )
        self.theme_changed_signal.subscribe(self, self._remember_theme)

    def main_ready(self) -> None:
        """The main screen is composed: show the state and start indexing."""
        self.main.show_state(self.index_state)
        if self.settings.rerank:
            self.ensure_reranker()
        self.start_indexing()

    @work(thread=True, group="warm-up", description="warm up", exit_on_error=False)
    def warm_up_worker(self, settings: Settings, template: str) -> None:
        """Load the token table and the packing code while indexing, so the first Enter is fast."""
        from rich.style import Style

        from coderag_tui.core.prompt.pack import pack  # noqa: F401 (import once, off the UI thread)
        from coderag_tui.core.prompt.render import TemplateError, load_template
        from coderag_tui.core.prompt.tokens import token_counter
        from coderag_tui.tui.widgets.preview import chunk_lines

        # Pygments loads its lexers and styles on first use; do it here, not on the first Enter.
        for path in ("x.py", "x.js", "x.md"):
            for dark in (True, False):
                chunk = Chunk(path, 1, 1, "lines", None, "x = 'a' # b\n")
                chunk_lines(chunk, ["x"], dark=dark, background="#000000", mark=Style())
        token_counter(settings.encoding)
        with contextlib.suppress(TemplateError):  # the search reports it where the prompt goes
            load_template(template, context_first=settings.context_first)

    def _register_themes(self) -> None:
        """Register bundled and user themes and pick the configured one; problems are kept."""
        folders = [*theme_files.bundled_theme_dirs(), self.settings.theme_dir]
        loaded = theme_files.load_themes(folders)
        for theme in loaded.themes:
            self.register_theme(theme)
        problems = list(loaded.problems)
        wanted = self.settings.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            fallback = theme_files.DEFAULT_THEME
            problems.append(
                f"theme {wanted!r} was not found: pick one with ctrl+p → “theme”, "
                f"or add {wanted}.yaml to {self.settings.theme_dir}"
            )
            if fallback in self.available_themes:
                self.theme = fallback
        self.theme_problems = tuple(problems)

    def _remember_theme(self, theme: Theme) -> None:
        if self.state_path is None or tui_state.read_saved_theme(self.state_path) == theme.name:
            return
        problem = tui_state.save_theme(self.state_path, theme.name)
        if problem:
            self.notify(problem, severity="warning")

    def save_history(self) -> None:
        """Write the query history to the state file; a failure is reported once per session."""
        if self.state_path is None:
            return
        problem = tui_state.save_history(self.state_path, self.settings.repo_root, self.history)
        if problem and not self.history_problem_shown:
            self.history_problem_shown = True
            self.notify(problem, title="Query history not saved", severity="warning", timeout=10)

    # ----------------------------------------------------------------- indexing
    def start_indexing(self) -> None:
        """(Re)build the index for the current settings; BM25 is searchable when it finishes."""
        self.index_generation += 1
        self.workers.cancel_group(self, "embed")
        self.index_state = IndexState(
            repo=self.index_state.repo,
            files=self.index_state.files,
            chunks=self.index_state.chunks,
            chunking=self.settings.chunking_spec.key,
            index="indexing",
            dense="waiting",
        )
        self.main.show_state(self.index_state)
        self.build_index_worker(self.index_generation, self.settings)

    @work(
        thread=True,
        exclusive=True,
        group="index",
        description="build the index and BM25",
        exit_on_error=False,
    )
    def build_index_worker(self, generation: int, settings: Settings) -> None:
        from coderag_tui.core.index.indexer import IndexProgress, build_index
        from coderag_tui.core.index.store import StoreError
        from coderag_tui.core.rank.lexical import load_or_build_bm25
        from coderag_tui.core.rank.search import Searcher  # noqa: F401 (imported here, not on the UI)

        worker = get_current_worker()
        cancel = threading.Event()

        def progress(p: IndexProgress) -> None:
            if worker.is_cancelled:
                cancel.set()
                return
            self.post_message(IndexProgressed(p.stage, p.files_done, p.files_total, p.chunks))

        start = self.clock()
        key = settings.chunking_spec.key
        preload, self._preload = self._preload, None
        try:
            if preload is not None and preload.serves(settings) and not self.chunks:
                start = preload.started  # the saved index has been loading since start-up
                saved = preload.future.result()
            else:
                saved = open_saved_index(settings, self.store, serve=not self.chunks)
            store = saved.store
            served: str | None = None
            if saved.chunks is not None and saved.bm25 is not None:
                # Serve what is already indexed at once; the check for changed files follows.
                served = saved.generation
                chunks = saved.chunks
                self.store = store
                elapsed = (self.clock() - start) * 1000
                files = len({c.path for c in chunks})
                self.post_message(
                    IndexBuilt(generation, files, chunks, saved.bm25, None, elapsed, store.notice)
                )
            report = build_index(settings, store, progress=progress, cancel=cancel)
            if worker.is_cancelled or report.cancelled:
                return
            if served is not None and store.generation(key) == served:
                elapsed = (self.clock() - start) * 1000
                self.post_message(IndexChecked(generation, report, elapsed))
                return
            chunks = store.chunks(key)
            bm25 = load_or_build_bm25(store, settings, chunks)
        except (StoreError, OSError) as exc:
            self.post_message(IndexFailed(generation, str(exc)))
            return
        if worker.is_cancelled:
            return
        self.store = store
        files = len({c.path for c in chunks})
        elapsed = (self.clock() - start) * 1000
        self.post_message(
            IndexBuilt(generation, files, chunks, bm25, report, elapsed, report.notice)
        )

    def _show_index_stats(self, report: Any, elapsed_ms: float) -> None:
        self.index_stats = [
            (
                "files",
                f"{len({c.path for c in self.chunks}):,} indexed, {len(report.skipped):,} skipped",
            ),
            ("chunks", f"{len(self.chunks):,} ({self.settings.chunking_spec.key})"),
            (
                "last check",
                f"{report.files_indexed:,} read, {report.files_unchanged:,} unchanged, "
                f"{report.files_removed:,} removed",
            ),
            ("index time", f"{elapsed_ms:,.0f} ms"),
            *[s for s in self.index_stats if s[0] == "embedding"],
        ]
        self.main.latency.show_index_stats(self.index_stats)

    def on_index_checked(self, message: IndexChecked) -> None:
        if not self.has_main_screen or message.generation != self.index_generation:
            return
        self.main.index_progress.finish()
        self._show_index_stats(message.report, message.elapsed_ms)
        self._set_state(index="ready")

    def on_index_progressed(self, message: IndexProgressed) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        total = message.files_total
        detail = (
            f"{message.files_done:,}/{total:,} files · {message.chunks:,} chunks ({message.stage})"
        )
        self.main.index_progress.advance_to(message.files_done, total, detail)

    def on_index_failed(self, message: IndexFailed) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.generation != self.index_generation:
            return
        self.main.index_progress.finish()
        self._set_state(index="failed")
        self.notify(message.message, title="Indexing failed", severity="error", timeout=15)

    def on_index_built(self, message: IndexBuilt) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.generation != self.index_generation:
            return
        self.main.index_progress.finish()
        rechunked = bool(self.chunks) and self.chunks is not message.chunks
        self.chunks = message.chunks
        self.bm25 = message.bm25
        self.dense = None
        self.dense_reason = "the dense index is being built — BM25 and fusion work meanwhile."
        if self.settings.embed_backend.strip().lower() == "none":
            self.dense_reason = (
                "dense search is off: embed_backend is none — "
                "set --embed-backend auto to enable it."
            )
        self._rebuild_searcher()
        if message.report is None:
            self.index_stats = [
                ("files", f"{message.files:,} in the index"),
                ("chunks", f"{len(message.chunks):,} ({self.settings.chunking_spec.key})"),
                ("opened in", f"{message.elapsed_ms:,.0f} ms — checking for changed files…"),
            ]
            self.main.latency.show_index_stats(self.index_stats)
        else:
            self._show_index_stats(message.report, message.elapsed_ms)
        self._set_state(
            index="ready" if message.report is not None else "checking",
            files=message.files,
            chunks=len(message.chunks),
            dense="loading model" if self.embedder is None else "embedding",
        )
        if message.notice:
            self.notify(message.notice, severity="warning", timeout=12)
        if rechunked and (self.pinned or self.excluded):
            self.pinned, self.excluded = [], []
            self.notify("Chunks changed, so pins and exclusions were cleared.")
        if not self.warmed_up:
            # After the index, not beside it: both need the GIL, and BM25 comes first.
            self.warmed_up = True
            self.warm_up_worker(self.settings, self.template_name)
        self.compute_advice_worker(self.settings, self.chunks)
        self.embed_worker(message.generation, self.settings, self.chunks, self.embedder)
        if self.pending_search or (rechunked and self.query_text):
            self.pending_search = False
            self.search(self.query_text)

    @work(
        thread=True,
        exclusive=True,
        group="embed",
        description="build the dense index",
        exit_on_error=False,
    )
    def embed_worker(
        self, generation: int, settings: Settings, chunks: list[Chunk], embedder: Any
    ) -> None:
        worker = get_current_worker()
        cancel = threading.Event()
        lower_thread_priority()
        start = self.clock()
        if embedder is None:
            from coderag_tui.core.rank.embed import resolve_embedder

            choice = resolve_embedder(settings)
            embedder = choice.embedder
            if embedder is None:
                self.post_message(EmbeddingsReady(generation, None, None, choice.reason, 0.0))
                return
        from coderag_tui.core.index.store import EmbeddingCache
        from coderag_tui.core.rank.dense import DenseIndex, load_or_build_dense

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:
                cancel.set()
                return
            self.post_message(EmbeddingProgressed(generation, done, total))

        cache = EmbeddingCache.open(settings.embed_cache_path)
        store = self.store
        try:
            if store is not None:
                # The saved vectors of an unchanged index load at once; only changes embed.
                dense = load_or_build_dense(
                    store, settings, chunks, embedder, cache, progress=progress, cancel=cancel
                )
            else:
                dense = DenseIndex.build(
                    chunks,
                    embedder,
                    cache,
                    progress=progress,
                    cancel=cancel,
                    batch_size=settings.embed_batch_size,
                    max_stripes=settings.stripe_cap,
                )
        except Exception as exc:  # a model failing mid-way must not take the app down
            reason = f"dense search is off: embedding failed ({exc}) — BM25 still works."
            self.post_message(EmbeddingsReady(generation, None, embedder, reason, 0.0))
            return
        finally:
            cache.close()
        if worker.is_cancelled or cancel.is_set():
            return
        elapsed = (self.clock() - start) * 1000
        self.post_message(EmbeddingsReady(generation, dense, embedder, "", elapsed))

    def on_embedding_progressed(self, message: EmbeddingProgressed) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.generation != self.index_generation:
            return
        self.main.embed_progress.advance_to(
            message.done,
            message.total,
            f"{message.done:,}/{message.total:,} stripes (model windows)",
        )
        if self.index_state.dense != "embedding":
            self._set_state(dense="embedding")

    def on_embeddings_ready(self, message: EmbeddingsReady) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.generation != self.index_generation:
            return
        self.main.embed_progress.finish()
        self.embedder = message.embedder
        self.dense = message.dense
        if message.dense is None:
            self.dense_reason = message.reason
            self._set_state(dense="off")
        else:
            name = str(getattr(message.embedder, "name", "model"))
            self._set_state(dense="ready", dense_detail=name.rsplit("/", 1)[-1])
            self.index_stats = [
                *[s for s in self.index_stats if s[0] != "embedding"],
                ("embedding", f"{message.elapsed_ms:,.0f} ms ({name.rsplit('/', 1)[-1]})"),
            ]
            self.main.latency.show_index_stats(self.index_stats)
        self._rebuild_searcher()
        if self.query_text and self.last_run is not None:
            self.search(self.query_text)
        elif self.last_run is None:
            self.main.show_hints()

    def _set_state(self, **changes: Any) -> None:
        values = {**self.index_state.__dict__, **changes}
        values["chunking"] = self.settings.chunking_spec.key
        self.index_state = IndexState(**values)
        self.main.show_state(self.index_state)

    def _rebuild_searcher(self) -> None:
        """A Searcher over the parts ready now (BM25 always; dense and rerank when loaded)."""
        if self.bm25 is None:
            self.searcher = None
            return
        from coderag_tui.core.rank.search import Searcher

        self.searcher = Searcher(
            self.chunks,
            self.bm25,
            dense=self.dense,
            embedder=self.embedder if self.dense is not None else None,
            reranker=self.reranker,
            dense_reason="" if self.dense is not None else self.dense_reason,
            rerank_reason="" if self.reranker is not None else self.rerank_reason,
            clock=self.clock,
        )

    # ----------------------------------------------------------------- rerank
    def ensure_reranker(self) -> None:
        if self.reranker is None and not self.reranker_requested:
            self.reranker_requested = True
            self.rerank_reason = "the cross-encoder is loading — the column fills in when ready."
            self.load_reranker_worker(self.settings)

    @work(
        thread=True,
        exclusive=True,
        group="rerank",
        description="load the cross-encoder",
        exit_on_error=False,
    )
    def load_reranker_worker(self, settings: Settings) -> None:
        from coderag_tui.core.rank.rerank import resolve_reranker

        lower_thread_priority()
        try:
            choice = resolve_reranker(settings)
        except Exception as exc:  # a broken model file must not take the app down
            self.post_message(RerankerReady(None, f"rerank is off: loading failed ({exc})."))
            return
        self.post_message(RerankerReady(choice.reranker, choice.reason))

    def on_reranker_ready(self, message: RerankerReady) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        self.reranker = message.reranker
        if message.reranker is None:
            self.rerank_reason = message.reason
            self.reranker_requested = False
        self._rebuild_searcher()
        if self.query_text and self.settings.rerank:
            self.search(self.query_text)

    # ----------------------------------------------------------------- search
    def search(self, text: str) -> None:
        """Run a query (or, in code mode, a FILE:LINE) in the exclusive search worker."""
        text = text.strip()
        if not text:
            return
        self.query_text = text
        if self.searcher is None:
            self.pending_search = True
            self.notify("The index is still being built; the search runs as soon as it is ready.")
            return
        self.search_serial += 1
        self.search_worker(
            self.search_serial,
            text,
            self.code_mode,
            self.settings,
            self.searcher,
            self._pack_options(),
        )

    def _pack_options(self) -> dict[str, Any]:
        return {
            "template": self.template_name,
            "pinned": tuple(self.pinned),
            "excluded": tuple(self.excluded),
        }

    @work(thread=True, exclusive=True, group="search", description="search", exit_on_error=False)
    def search_worker(
        self,
        serial: int,
        text: str,
        code_mode: bool,
        settings: Settings,
        searcher: Any,
        pack_options: dict[str, Any],
    ) -> None:
        worker = get_current_worker()
        query = text
        if code_mode:
            from coderag_tui.core.rank.search import query_from_location

            try:
                path, line = parse_location(text)
                query = query_from_location(settings.repo_root, path, line, CODE_QUERY_LINES)
            except (ValueError, OSError) as exc:
                self.post_message(SearchFailed(serial, str(exc)))
                return
            if not query.strip():
                self.post_message(
                    SearchFailed(
                        serial, f"there are no lines before {text}: pick a line further down."
                    )
                )
                return
        try:
            run = searcher.run(query, settings)
        except Exception as exc:  # show the failure, keep the app and the last results
            self.post_message(SearchFailed(serial, f"the search failed: {exc}"))
            return
        if worker.is_cancelled:
            return
        # Rankings first: they render while the prompt is packed (token counting takes longer).
        finished = SearchFinished(serial, run)
        self.post_message(finished)
        finished.rendered.wait(timeout=1.0)
        if worker.is_cancelled:
            return
        packed, error = self._pack(run, query, settings, pack_options)
        if not worker.is_cancelled:
            self.post_message(PromptPacked(serial, packed, error))

    def _pack(
        self, run: SearchRun, task: str, settings: Settings, options: dict[str, Any]
    ) -> tuple[PackedPrompt | None, str]:
        """Pack the final ranking into the budget (runs in a worker thread)."""
        from coderag_tui.core.prompt.pack import BudgetTooSmall, pack, packing_order
        from coderag_tui.core.prompt.render import TemplateError, load_template
        from coderag_tui.core.prompt.tokens import token_counter

        try:
            template = load_template(options["template"], context_first=settings.context_first)
            counter = token_counter(settings.encoding)
            store = self.store
            packed = pack(
                packing_order(run),  # the same hits the CLI packs
                budget=settings.budget,
                counter=counter,
                template=template,
                task=task,
                pinned=options["pinned"],
                excluded=options["excluded"],
                trim_last=settings.trim_last,
                file_text=store.file_text if store is not None else None,
            )
        except (BudgetTooSmall, TemplateError, ValueError) as exc:
            return None, str(exc)
        return packed, ""

    def on_search_finished(self, message: SearchFinished) -> None:
        self.call_after_refresh(message.rendered.set)
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.serial != self.search_serial:
            return
        self.last_run = message.run
        self.last_task = message.run.query
        self.packed = None  # until the PromptPacked for this search arrives
        self.pack_error = ""
        final = message.run.final
        keys = [h.chunk.key for r in message.run.rankings.values() for h in r.hits]
        if self.selected_key not in keys:
            self.selected_key = final.hits[0].chunk.key if final.hits else None
        self.main.show_run(message.run)
        self._refresh_prompt_views()

    def on_search_failed(self, message: SearchFailed) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.serial == self.search_serial:
            self.notify(message.message, title="Search", severity="error", timeout=8)

    def repack(self) -> None:
        """Pack the last search again after a change of budget, template, pins or exclusions."""
        if self.last_run is None:
            self._refresh_prompt_views()
            return
        self.pack_worker(
            self.search_serial, self.last_run, self.last_task, self.settings, self._pack_options()
        )

    @work(
        thread=True,
        exclusive=True,
        group="pack",
        description="pack the prompt",
        exit_on_error=False,
    )
    def pack_worker(
        self, serial: int, run: SearchRun, task: str, settings: Settings, options: dict[str, Any]
    ) -> None:
        packed, error = self._pack(run, task, settings, options)
        if not get_current_worker().is_cancelled:
            self.post_message(PromptPacked(serial, packed, error))

    def on_prompt_packed(self, message: PromptPacked) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        if message.serial != self.search_serial:
            return
        self.packed = message.packed
        self.pack_error = message.error
        self._refresh_prompt_views()

    def _refresh_prompt_views(self) -> None:
        from coderag_tui.tui.screens.prompt import PromptScreen

        self.main.show_prompt_line()
        for screen in self.screen_stack:
            if isinstance(screen, PromptScreen):
                screen.refresh_prompt()

    # ----------------------------------------------------------------- advice
    @work(
        thread=True,
        exclusive=True,
        group="advice",
        description="chunk-size advice",
        exit_on_error=False,
    )
    def compute_advice_worker(self, settings: Settings, chunks: list[Chunk]) -> None:
        from coderag_tui.core.prompt.pack import advise
        from coderag_tui.core.prompt.tokens import token_counter

        step = max(1, len(chunks) // ADVICE_SAMPLE)
        sample = chunks[::step][:ADVICE_SAMPLE]
        lines = sum(c.n_lines for c in sample)
        if not lines:
            return
        counter = token_counter(settings.encoding)
        tokens = sum(counter.count_many([c.text for c in sample]))
        advice = advise(settings.budget, settings.chunk_lines, tokens / lines)
        self.post_message(AdviceReady(advice.text))

    def on_advice_ready(self, message: AdviceReady) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        self.advice = message.text
        self.main.tuning.show_advice(message.text)

    # ----------------------------------------------------------------- tuning
    def on_tuning_panel_tuning_changed(self, message: TuningPanel.TuningChanged) -> None:
        self.apply_setting(message.field, message.value)

    def apply_setting(self, name: str, value: Any) -> None:
        """Change one setting and redo only what it affects (re-chunk, re-search or re-pack)."""
        if getattr(self.settings, name) == value:
            return
        self.settings = self.settings.with_(**{name: value})
        self.main.tuning.sync(self.settings)
        if name in ("chunking", "chunk_lines", "chunk_overlap"):
            self.notify(f"Re-chunking as {self.settings.chunking_spec.key} in the background…")
            self.start_indexing()
        elif name == "rerank":
            self.main.board.set_rerank_visible(bool(value))
            if value:
                self.ensure_reranker()
            self._rebuild_searcher()
            self.search(self.query_text)
        elif name in ("rrf_k", "depth", "rerank_keep", "k", "fusion"):
            self.search(self.query_text)
        elif name == "budget":
            self.repack()
        if name in ("budget", "chunk_lines", "chunking"):
            self.compute_advice_worker(self.settings, self.chunks)
        if name not in ("chunking", "chunk_lines"):
            self.main.show_prompt_line()

    # ----------------------------------------------------------------- actions
    def action_help(self) -> None:
        from coderag_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_prompt(self) -> None:
        from coderag_tui.tui.screens.prompt import PromptScreen

        if not isinstance(self.screen, PromptScreen):
            self.push_screen(PromptScreen())

    def action_copy_prompt(self) -> None:
        if self.packed is None:
            self.notify(
                self.pack_error or "Nothing to copy yet: run a search first.", severity="warning"
            )
            return
        text = self.packed.text
        # Textual stores it in app.clipboard and sends OSC 52 through its own driver.
        self.copy_to_clipboard(text)
        self.copy_worker(text, self.packed.tokens)

    @work(
        thread=True,
        exclusive=True,
        group="copy",
        description="copy the prompt",
        exit_on_error=False,
    )
    def copy_worker(self, text: str, tokens: int) -> None:
        from coderag_tui.core.prompt.clipboard import copy_text

        # OSC 52 already went out through Textual's driver; the core may only add a system tool.
        result = copy_text(text, osc52_stream=io.BytesIO(), use_pyperclip=self.system_clipboard)
        if result.ok and result.method != "osc52":
            how = f"Copied {tokens:,} tokens with {result.method.split('+')[0]} (and OSC 52)."
        else:
            how = (
                f"Copied {tokens:,} tokens: sent to the terminal via OSC 52 — your terminal must "
                "allow clipboard writes (no xclip, xsel or wl-copy found). Ctrl+S saves to a file."
            )
        self.post_message(PromptCopied(how, True))

    def on_prompt_copied(self, message: PromptCopied) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        self.notify(message.how, title="Prompt copied")

    def action_save_prompt(self) -> None:
        from coderag_tui.tui.screens.save import SaveScreen

        if self.packed is None:
            self.notify(
                self.pack_error or "Nothing to save yet: run a search first.", severity="warning"
            )
            return

        def save(path: Path | None) -> None:
            if path is not None:
                self.save_prompt(path)

        self.push_screen(SaveScreen(Path.cwd() / "coderag-prompt.md"), save)

    def save_prompt(self, path: Path) -> None:
        from coderag_tui.core.prompt.clipboard import copy_text

        if self.packed is None:
            return
        result = copy_text(self.packed.text, out=path, clipboard=False)
        if result.ok:
            self.notify(f"Saved {self.packed.tokens:,} tokens to {path}.", title="Prompt saved")
        else:
            self.notify(result.message, title="Prompt not saved", severity="error")

    def action_next_template(self) -> None:
        names = list(TEMPLATES)
        if self.settings.template not in names:
            names.append(self.settings.template)  # the user's own template file
        current = names.index(self.template_name) if self.template_name in names else -1
        self.template_name = names[(current + 1) % len(names)]
        self.notify(f"Template: {self.template_name}")
        self.repack()

    def action_toggle_code_mode(self) -> None:
        self.code_mode = not self.code_mode
        self.main.set_code_mode(self.code_mode)

    def action_reindex(self) -> None:
        self.notify("Re-indexing: changed files are read again, the rest is kept.")
        self.start_indexing()

    def action_budget_step(self, direction: int) -> None:
        self.apply_setting("budget", step_budget(self.settings.budget, direction))
        self.notify(f"Budget: {self.settings.budget:,} tokens")

    def action_set_budget(self, budget: int) -> None:
        self.apply_setting("budget", budget)

    def action_set_chunking(self, strategy: str) -> None:
        self.apply_setting("chunking", strategy)

    def action_toggle_rerank(self) -> None:
        self.apply_setting("rerank", not self.settings.rerank)

    def toggle_pin(self, key: str | None) -> None:
        """Pin a chunk so it goes first in the prompt (or unpin it)."""
        if key is None:
            return
        if key in self.pinned:
            self.pinned.remove(key)
            self.notify(f"Unpinned {key}")
        else:
            self.pinned.append(key)
            if key in self.excluded:
                self.excluded.remove(key)
            self.notify(f"Pinned {key}: it goes first in the prompt.")
        self.repack()

    def toggle_exclude(self, key: str | None) -> None:
        """Exclude a chunk from the prompt (or include it again)."""
        if key is None:
            return
        if key in self.excluded:
            self.excluded.remove(key)
            self.notify(f"{key} may be included again.")
        else:
            self.excluded.append(key)
            if key in self.pinned:
                self.pinned.remove(key)
            self.notify(f"Excluded {key}: it never goes into the prompt.")
        self.repack()

    def action_pin(self) -> None:
        self.toggle_pin(self.selected_key)

    def action_exclude(self) -> None:
        self.toggle_exclude(self.selected_key)

    def chunk_for(self, key: str | None) -> Chunk | None:
        """The chunk with this key in the last search (any ranking)."""
        if key is None or self.last_run is None:
            return None
        for ranking in self.last_run.rankings.values():
            for hit in ranking.hits:
                if hit.chunk.key == key:
                    return hit.chunk
        return None

    def shown_rankings(self) -> tuple[RankingName, ...]:
        return (
            ("bm25", "dense", "fused", "rerank")
            if self.settings.rerank
            else ("bm25", "dense", "fused")
        )


def make_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    state_path: Path | None = None,
    system_clipboard: bool = True,
) -> CoderagApp:
    """The one way to build the app (CLI, tests, screenshots); nothing heavy is imported here.

    `clock` replaces `time.perf_counter` for every timing the app shows (tests pass a
    deterministic one); `state_path` is where the chosen theme and each repository's query
    history are remembered (None: nowhere);
    `system_clipboard=False` keeps copies inside the terminal (OSC 52) and `app.clipboard`.
    """
    return CoderagApp(
        settings,
        clock=clock,
        state_path=state_path,
        system_clipboard=system_clipboard,
    )
