"""The coderag app: one Engine answers, workers ask it, message handlers install and render.

State lives here (settings, the last search and its prompt, pins and exclusions); the engine
holds the stages that answer (lexical, dense, rerank) and the screens only display. Every
long call runs in a thread worker of its own group (see `workers`), so a new query cancels
the old one and indexing never blocks typing; only the handlers below touch app state.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import RenderableType
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.theme import Theme
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from coderag_tui.core.engine import Dense, Engine, Rerank
from coderag_tui.core.records import EVERY_FILE, PackedPrompt, RankingName, Scope
from coderag_tui.core.visible import one_line, visible
from coderag_tui.locations import user_config_dir, user_data_dir
from coderag_tui.settings import Settings, SettingsError, settings_of
from coderag_tui.tui import state as tui_state
from coderag_tui.tui import workers
from coderag_tui.tui.commands import CoderagCommands
from coderag_tui.tui.keys import APP_BINDINGS
from coderag_tui.tui.messages import (
    AdviceReady,
    EmbeddingProgressed,
    EmbeddingsReady,
    FirstPassReady,
    IndexBuilt,
    IndexChecked,
    IndexFailed,
    IndexProgressed,
    ModelLoaded,
    PromptExported,
    PromptPacked,
    RerankerReady,
    SearchFailed,
    SearchFinished,
)
from coderag_tui.tui.screens.main import MainScreen
from coderag_tui.tui.session import (
    DENSE_BUILDING,
    RERANK_LOADING,
    Ask,
    Session,
    column_hints,
    dense_title,
    model_title,
    short_model,
)
from coderag_tui.tui.themes import register_themes
from coderag_tui.tui.widgets.status import IndexState
from coderag_tui.tui.widgets.tuning import SettingValue, TuningPanel, step_budget

if TYPE_CHECKING:
    from coderag_tui.core.engine import Lexical
    from coderag_tui.core.rank.embed import Embedder

Clock = Callable[[], float]
CHUNKING_FIELDS = settings_of("chunking")
RANKING_FIELDS = settings_of("fusion", "rerank", "results")
# A loaded model embeds this many missing chunks in a second or two (2 cores): no first pass
# for them, since switching the Dense list to the static table and back would only flicker.
QUICK_EMBED_CHUNKS = 64
# How long new chunks may keep the last results on screen, marked refreshing, while their
# dense list is opened; after that the search runs with what is ready.
REFRESH_WAIT_S = 3.0
DEFINITIONS_POLL_S = 1.0  # how often the top bar checks that the definitions are parsed


def default_state_path() -> Path:
    """Where the app remembers the chosen theme and the query history between runs."""
    return user_config_dir() / tui_state.STATE_FILE


class CoderagApp(App[None]):
    """Rankings side by side, stage latencies, a budgeted prompt one keypress from the clipboard."""

    CSS_PATH = "app.tcss"
    TITLE = "coderag"
    COMMANDS = App.COMMANDS | {CoderagCommands}
    # Textual's own ctrl+q is hidden; a newcomer should see in the footer how to leave.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True, tooltip="Quit"),
        *APP_BINDINGS,
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        state_path: Path | None = None,
        system_clipboard: bool = True,
        notices: Sequence[str] = (),
        scope: Scope = EVERY_FILE,
    ) -> None:
        super().__init__()
        self.startup_notices = tuple(notices)  # e.g. unknown keys in a config file
        self.settings = settings
        self.scope = scope  # the files the rankings show (--include/--exclude)
        self.engine = Engine(settings, clock=clock or time.perf_counter)  # every timing shown
        self.state_path = state_path
        self.system_clipboard = system_clipboard
        # Last session's queries for this repository, so Up recalls them (shared with the input).
        self.history: list[str] = tui_state.read_history(state_path, settings.repo_root)
        self.history_problem_shown = False
        self.notices_shown: set[str] = set()
        # What the engine is opening: stale messages of an older run are dropped.
        self.index_serial = 0
        self.embed_serial = 0  # of the dense work for the installed chunks (first pass, model)
        self.dense_started = 0.0  # when that work started (the times shown count from it)
        self.model_installed = False  # the model's own stage is installed for embed_serial
        self.model_embedder: Embedder | None = None  # kept across re-chunks: loaded once
        self.model_coverage = 0.0  # share of chunks the model has embedded (while it embeds)
        self.model_eta = ""  # its time left at its rate so far ("" before a rate is known)
        self.model_off = False  # not started (dense_background_limit) or failed: no share shown
        self.first_pass_share = ""  # how far the static first pass is, while it is made
        # when each kind of progress (the model's, the first pass's) began, and how far it was
        self._embed_marks: dict[bool, tuple[float, int]] = {}
        self.refresh_timer: Timer | None = None  # while the last results wait for dense
        self.definitions_timer: Timer | None = None  # while the definitions are parsed
        self.quick_embed_chunks = QUICK_EMBED_CHUNKS  # fewer missing: the model, no first pass
        self.lexical_chunking: str | None = None  # the chunking of the installed lexical stage
        self.reranker_requested = False
        self.index_state = IndexState(
            repo=settings.repo_root.name, chunking=settings.chunking_spec.key
        )
        self.session = Session(settings.template)  # the last search and its prompt
        self.warmed_up = False
        # Before the first screen is styled, so start-up styles the widgets once, not twice.
        self.theme_problems = register_themes(self, settings.theme, settings.theme_dir)

    # ----------------------------------------------------------------- start-up and exit
    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    @property
    def has_main_screen(self) -> bool:
        """False while the app starts or shuts down (worker messages may still arrive)."""
        return bool(self.screen_stack) and not self._exit

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_load(self) -> None:
        # Load comes before the screen is composed: the saved index (chunks + BM25) loads
        # meanwhile instead of after the first paint. (Started before importing Textual, it
        # only slowed the imports: both sides hold the GIL; measured with bench_tui.py.)
        self.engine.preload()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification is plain text with control characters shown: messages quote
        queries, paths and repository text, which must never be read as markup or sent raw."""
        super().notify(
            visible(message),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def on_mount(self) -> None:
        for title, problems in (
            ("Theme problems (the rest loaded fine)", self.theme_problems),
            ("Settings", self.startup_notices),
        ):
            if problems:
                text = "\n".join(f"• {p}" for p in problems)
                self.notify(text, title=title, severity="warning", timeout=12)
        self.theme_changed_signal.subscribe(self, self._remember_theme)

    def on_unmount(self) -> None:
        self.engine.close()

    def exit(
        self,
        result: None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Quit without waiting for background work to reach its next check (an embedding
        batch or the static table's distillation took 1 to 6 s on 2 busy cores): the event
        loop gets a fresh default executor, so closing it waits for none of the worker
        threads; `cli.entry` then ends the process without joining them. What they write
        is written in transactions and atomic renames, so nothing is left half done. A
        headless app (tests, screenshots) still waits, so no test outlives its work."""
        if not self.is_headless:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to leave
                asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        super().exit(result, return_code, message)

    def main_ready(self) -> None:
        """The main screen is composed: show the state and start indexing."""
        self.main.show_state(self.index_state)
        if self.settings.rerank:
            self.ensure_reranker()
        self.start_indexing()

    def _work(self, work: Callable[..., None], *args: object) -> None:
        """Run a `workers` function in a thread worker of its own group (the running one of
        that group is cancelled); it posts its result to this app."""
        self.run_worker(
            partial(work, *args, self.post_message),
            group=work.__name__,
            description=(work.__doc__ or work.__name__).split("\n")[0],
            exit_on_error=False,  # failures arrive as messages; none may end the app
            exclusive=True,
            thread=True,
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that failed unexpectedly (a bug: expected failures arrive as messages)
        is said in one sentence with where its crash report is, and the app stays usable."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.error is None:
            return
        from coderag_tui.tui.crash import write_crash_report

        doing = worker.description or worker.group
        try:
            where = f"the report is in {write_crash_report(worker.error, doing)}"
        except OSError as exc:
            where = f"no report could be written ({exc.strerror or exc})"
        if not self.has_main_screen:
            return
        if worker.group == "build_index":
            self.main.index_progress.finish()
            self._set_state(replace(self.index_state, index="failed"))
        elif worker.group == "search":
            self.session.asking = None
        what = one_line(f"{type(worker.error).__name__}: {worker.error}")[:200]
        self.notify(
            f"Something went wrong ({doing.rstrip('.').lower()}): {what}; {where}.",
            title="Unexpected error",
            severity="error",
            timeout=20,
        )

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

    def _notify_new(self, notices: tuple[str, ...]) -> None:
        """Say what a stage has to say (fallbacks, repairs, cancellations), once per session."""
        for notice in notices:
            if notice not in self.notices_shown:
                self.notices_shown.add(notice)
                self.notify(notice, severity="warning", timeout=12)

    def _follow_definitions(self, lexical: Lexical) -> None:
        """While a background process parses the definitions, the top bar says so, and stops
        saying it once the process is done (checked every `DEFINITIONS_POLL_S`)."""
        from coderag_tui.core.rank.definitions import definitions_dir
        from coderag_tui.core.rank.definitions_follow import being_built

        directory = definitions_dir(self.settings)

        def check() -> None:
            if self.definitions_timer is not None and not being_built(directory):
                self.definitions_timer.stop()
                self.definitions_timer = None
            parsing = "parsing" if self.definitions_timer is not None else ""
            self._set_state(replace(self.index_state, definitions=parsing))

        if self.definitions_timer is not None:  # an earlier index's
            self.definitions_timer.stop()
            self.definitions_timer = None
        bm25 = lexical.bm25
        if bm25.definitions is None and bm25.definitions_later is not None:
            self.definitions_timer = self.set_interval(DEFINITIONS_POLL_S, check)
        check()

    def _set_state(self, state: IndexState) -> None:
        state = replace(state, chunking=self.settings.chunking_spec.key)
        if state != self.index_state:  # progress repeats itself: draw only what changed
            self.index_state = state
            self.main.show_state(state)

    # ----------------------------------------------------------------- the lexical stage
    def start_indexing(self) -> None:
        """(Re)build the index for the current settings; BM25 is searchable when it finishes."""
        self.index_serial += 1
        chunking = self.settings.chunking_spec.key
        current = self.engine.lexical if self.lexical_chunking == chunking else None
        state = replace(self.index_state, index="indexing")
        if current is None:  # other chunks are coming: their dense stage starts over
            self.workers.cancel_group(self, workers.open_dense.__name__)
            # The counts of the old chunking would be stale: the progress row counts anew.
            state = replace(state, dense="waiting", dense_detail="", chunks=None)
        self._set_state(state)
        self._work(workers.build_index, self.engine, self.index_serial, self.settings, current)

    def on_index_progressed(self, message: IndexProgressed) -> None:
        if self.has_main_screen:  # else the app is shutting down
            self.main.show_index_progress(message)

    def on_index_failed(self, message: IndexFailed) -> None:
        if not self.has_main_screen or message.serial != self.index_serial:
            return
        self.main.index_progress.finish()
        self._set_state(replace(self.index_state, index="failed"))
        self.notify(message.message, title="Indexing failed", severity="error", timeout=15)

    def on_index_built(self, message: IndexBuilt) -> None:
        if not self.has_main_screen or message.serial != self.index_serial:
            return
        self.main.index_progress.finish()
        lexical, chunking, session = message.lexical, message.chunking, self.session
        previous = self.engine.lexical
        rechunked = previous is not None and previous.chunks is not lexical.chunks
        last = session.last_run
        dense_shown = last is not None and last.rankings["dense"].available
        # The embedder outlives the chunks: re-chunking embeds with the model already loaded.
        embedder = self.model_embedder
        self.engine.use(lexical)  # drops the dense stage of the old chunks
        self.engine.use(Dense(embedder, reason=DENSE_BUILDING))
        self.lexical_chunking = chunking
        self.main.latency.show_index(lexical, chunking, message.elapsed_ms)
        index = "ready" if lexical.report is not None else "checking"
        dense = "loading model" if embedder is None else "embedding"
        state = replace(self.index_state, index=index, dense=dense, dense_detail="")
        self._set_state(replace(state, files=lexical.files, chunks=len(lexical.chunks)))
        self._follow_definitions(lexical)
        self._notify_new(lexical.notices)
        if rechunked and (session.pinned or session.excluded or session.admitted):
            carried = session.carry_marks(lexical.chunks)  # to the chunks of the same lines
            if session.admitted:  # a secret let in is let in chunk by chunk, never carried
                session.admitted = []
                carried = f"{carried} Chunks let in with secrets are held back again.".strip()
            if carried:
                self.notify(carried, timeout=10)
        if not self.warmed_up:
            # After the index, not beside it: both need the GIL, and BM25 comes first.
            self.warmed_up = True
            warm = partial(workers.warm_up, self.settings, session.template_name)
            self.run_worker(warm, group="warm-up", thread=True, exit_on_error=False)
        self._advise()
        self._open_dense(lexical, embedder)
        if session.pending is not None:
            pending, session.pending = session.pending, None
            self._start_search(pending)
        elif rechunked and dense_shown and self.settings.embed_backend != "none":
            # Searching at once would show Dense off and Fused as BM25 for a moment: the last
            # results stay, marked refreshing, until a dense list of the new chunks is in.
            self._refresh_when_dense_ready()
        elif rechunked:
            self._search_again()

    def on_index_checked(self, message: IndexChecked) -> None:
        if not self.has_main_screen or message.serial != self.index_serial:
            return
        self.engine.use(message.lexical)  # the same chunks, now with the check's report
        self.main.index_progress.finish()
        chunking = self.settings.chunking_spec.key
        self.main.latency.show_index(message.lexical, chunking, message.elapsed_ms)
        self._set_state(replace(self.index_state, index="ready"))
        self._notify_new(message.lexical.notices)

    # ----------------------------------------------------------------- dense and rerank stages
    def _open_dense(self, lexical: Lexical, embedder: Embedder | None) -> None:
        """Open the dense list of these chunks: the model's vectors when they cover every
        chunk, else the static first pass at once and the model in the background."""
        self.embed_serial += 1
        self.dense_started = self.engine.clock()
        self.model_installed = False
        self.model_coverage = 0.0
        self.model_eta, self.model_off, self.first_pass_share = "", False, ""
        self._embed_marks.clear()
        self.main.latency.reset_dense()
        self.main.show_dense_stage(None, "")
        self._work(
            workers.open_dense,
            self.engine,
            self.embed_serial,
            self.settings,
            lexical,
            embedder,
            self.quick_embed_chunks,
        )

    def _dense_ms(self) -> float:
        return (self.engine.clock() - self.dense_started) * 1000

    @property
    def dense_pending(self) -> bool:
        """Is a dense list of the installed chunks still being opened (not off for good)?"""
        dense = self.engine.dense
        return dense is not None and not dense.available and dense.reason == DENSE_BUILDING

    def _show_dense_state(self) -> None:
        """The top bar and the Dense column name what the list is made of, and how far the
        model has got: `static MiniLM · first pass` with `MiniLM 34%`, then the model."""
        dense = self.engine.dense
        embedder = self.model_embedder
        share = ""
        if embedder is not None and not self.model_installed and not self.model_off:
            share = f"{short_model(model_title(embedder.name))} {self.model_coverage:.0%}"
            if self.model_eta:
                share += f", {self.model_eta} left"
        if dense is not None and dense.available and dense.first_pass:
            detail = " · ".join(p for p in (dense_title(dense), share) if p)
            self._set_state(replace(self.index_state, dense="first pass", dense_detail=detail))
            self.main.show_dense_stage(dense, share)
        elif dense is not None and dense.available:
            name = dense_title(dense)
            self._set_state(replace(self.index_state, dense="ready", dense_detail=name))
            self.main.show_dense_stage(dense, "")
        elif self.dense_pending:
            # While the first pass is made no model loads: `dense embedding (static first
            # pass 13%, 4 min left)`, not `dense loading model (...)`.
            making = self.model_embedder is not None or bool(self.first_pass_share)
            state = "embedding" if making else "loading model"
            share = self.first_pass_share or share  # the first pass is made before the model
            self._set_state(replace(self.index_state, dense=state, dense_detail=share))
            self.main.show_dense_stage(None, share)
        else:
            self._set_state(replace(self.index_state, dense="off", dense_detail=""))
            self.main.show_dense_stage(None, "")

    def on_model_loaded(self, message: ModelLoaded) -> None:
        if not self.has_main_screen or message.serial != self.embed_serial:
            return
        known = message.known
        self.model_embedder = known.embedder
        self.model_coverage = known.coverage
        self.main.latency.show_model(None, f"embedding… ({dense_title(known)})")
        self._show_dense_state()

    def on_first_pass_ready(self, message: FirstPassReady) -> None:
        if not self.has_main_screen or message.serial != self.embed_serial:
            return
        first = message.dense
        if self.model_installed:
            return  # late: the model's own list is in already and must stay
        if not first.available:
            self.main.latency.show_first_pass(None, first.reason)
            self._notify_new(first.notices)
            return  # the model's list follows as without a first pass
        self.first_pass_share = ""
        self.main.embed_progress.finish()  # the model's progress, if it embeds, follows
        self.engine.use(first)
        self.main.latency.show_first_pass(self._dense_ms(), dense_title(first))
        self._show_dense_state()
        self._notify_new(first.notices)
        self._dense_installed()

    def on_embedding_progressed(self, message: EmbeddingProgressed) -> None:
        if not self.has_main_screen or message.serial != self.embed_serial:
            return
        self.main.show_embed_progress(message)
        eta = self._eta(message.done, message.total, first_pass=message.first_pass)
        if message.first_pass:
            share = f"static first pass {message.done / max(message.total, 1):.0%}"
            self.first_pass_share = f"{share}, {eta} left" if eta else share
        else:
            self.model_coverage = message.done / max(message.total, 1)
            self.model_eta = eta
        self._show_dense_state()

    def _eta(self, done: int, total: int, *, first_pass: bool) -> str:
        """The time left to the model (or the first pass) at its rate since its progress
        began ("" until known)."""
        from coderag_tui.core.rank.embedding_status import duration

        now = time.monotonic()
        mark = self._embed_marks.get(first_pass)
        if mark is None or done < mark[1]:
            self._embed_marks[first_pass] = (now, done)
            return ""
        since, first = mark
        if done <= first or now <= since:
            return ""
        return duration((total - done) * (now - since) / (done - first))

    def on_embeddings_ready(self, message: EmbeddingsReady) -> None:
        if not self.has_main_screen or message.serial != self.embed_serial:
            return
        self.main.embed_progress.finish()
        dense = message.dense
        current = self.engine.dense
        first_pass_shown = current is not None and current.available and current.first_pass
        if dense.embedder is not None:
            self.model_embedder = dense.embedder
        self._notify_new(dense.notices)
        if dense.available:
            self.model_installed = True
            self.model_coverage = dense.coverage
            self.engine.use(dense)
            self.main.latency.show_model(self._dense_ms(), dense_title(dense))
        elif first_pass_shown:
            # The model failed or is not started (dense_background_limit): the first pass
            # keeps answering, and the reason is said once.
            self.model_off = True
            self.main.latency.show_model(None, dense.reason)
            self._notify_new((dense.reason,))
            self._show_dense_state()
            return
        else:
            self.engine.use(dense)
            if dense.embedder is not None:  # it failed; no model at all: the board says why
                self.main.latency.show_model(None, dense.reason)
        self._show_dense_state()
        self._dense_installed()

    def _refresh_when_dense_ready(self) -> None:
        """Keep the last results on screen, marked refreshing, until a dense list of the new
        chunks is installed (or REFRESH_WAIT_S passed): then search again."""
        self.main.board.set_refreshing(refreshing=True)
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
        self.refresh_timer = self.set_timer(REFRESH_WAIT_S, self._refresh_now)

    def _refresh_now(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
            self.refresh_timer = None
            self._search_again()

    def _dense_installed(self) -> None:
        """A dense stage (first pass, the model's, or off) is in: the search runs again."""
        if self.refresh_timer is not None:
            self._refresh_now()
        elif not self._search_again():
            self.main.show_hints()

    def ensure_reranker(self) -> None:
        rerank = self.engine.rerank
        if self.reranker_requested or (rerank is not None and rerank.reranker is not None):
            return
        self.reranker_requested = True
        self.engine.use(Rerank(reason=RERANK_LOADING))
        self._work(workers.open_reranker, self.engine, self.settings)

    def on_reranker_ready(self, message: RerankerReady) -> None:
        if not self.has_main_screen:
            return  # the app is shutting down
        self.engine.use(message.rerank)
        if message.rerank.reranker is None:
            self.reranker_requested = False  # turning rerank on again tries again
        self._notify_new(message.rerank.notices)
        if self.settings.rerank:
            self._search_again()

    def column_hints(self) -> dict[RankingName, str]:
        return column_hints(self.engine.dense, self.engine.rerank, ready=self.engine.ready)

    # ----------------------------------------------------------------- search
    def search(self, text: str) -> None:
        """Search for what the user typed (in code mode, the lines before a FILE:LINE)."""
        text = text.strip()
        if not text:
            return
        ask = Ask(text, location=self.session.code_mode)
        if self.engine.ready:
            self._start_search(ask)
        else:
            self.session.pending = ask
            self.notify("The index is still being built; the search runs as soon as it is ready.")
        self.save_history()  # after the search started, so the tiny write overlaps it

    def action_related_to_change(self) -> None:
        """Search with the work tree's change against HEAD (`--diff`): the code it touches,
        its changed lines' own chunks left out; the prompt reviews the change."""
        ask = Ask("", diff="HEAD")
        if self.engine.ready:
            self._start_search(ask)
        else:
            self.session.pending = ask
            self.notify("The index is still being built; the search runs as soon as it is ready.")

    def _search_again(self) -> bool:
        """Run the current search again with the stages and settings of now (if there is one)."""
        ask = self.session.again()
        if ask is not None:
            self._start_search(ask)
        return ask is not None

    def _start_search(self, ask: Ask) -> None:
        if self.refresh_timer is not None:  # this search brings the new results
            self.refresh_timer.stop()
            self.refresh_timer = None
        dropped = self.session.new_question(ask)
        if dropped:
            self.notify(dropped, timeout=8)
            if self.has_main_screen:
                self.main.show_prompt_line()
        serial = self.session.start(ask)
        request = self.session.request(task="")  # the worker sets the task: the query it ran
        self._work(workers.search, self.engine, serial, ask, self.settings, self.scope, request)

    def on_search_finished(self, message: SearchFinished) -> None:
        self.call_after_refresh(message.rendered.set)
        if not self.has_main_screen or message.serial != self.session.serial:
            return
        asked = self.session.asking
        self.session.finished(message.run, self.main.focused_ranking(), message.change)
        self.session.secrets = message.secrets
        if asked is not None and (asked.fresh or asked.diff is not None):
            self.main.show_asked(asked, message.asked)  # the bar says what is ranked
        self.main.show_run(message.run)
        self._refresh_prompt_views()

    def on_search_failed(self, message: SearchFailed) -> None:
        if not self.has_main_screen or message.serial != self.session.serial:
            return
        failed, session = self.session.asking, self.session
        session.asking = None
        reviewed = session.ranked is not None and session.ranked.diff is not None
        if failed is not None and failed.diff is not None and not failed.fresh and reviewed:
            # The change on screen cannot be read again (reverted, committed): its rankings
            # and its review prompt would answer a question that is gone.
            session.forget_run()
            self.main.show_asked(Ask(""), "")
            self.main.show_hints()
            self.main.show_selection()
            self._refresh_prompt_views()
            self.notify(
                f"The change reviewed is gone — {message.message} Its rankings and prompt are "
                "cleared.",
                title="Change review",
                severity="warning",
                timeout=10,
            )
            return
        self.notify(message.message, title="Search", severity="error", timeout=8)

    # ----------------------------------------------------------------- prompt and advice
    def repack(self) -> None:
        """Pack the last search again after a change of budget, template, pins or exclusions."""
        session = self.session
        run = session.run_to_pack(self.settings)
        if run is None:
            self._refresh_prompt_views()
            return
        request = session.request(run.query)
        self._work(workers.pack, self.engine, session.serial, run, request, self.settings)

    def on_prompt_packed(self, message: PromptPacked) -> None:
        if not self.has_main_screen or message.serial != self.session.serial:
            return
        self.session.prompt = message.result
        self.session.pack_error = message.error
        self._refresh_prompt_views()
        kinds = message.result.task_secrets if message.result is not None else ()
        if kinds:
            masked = message.result is not None and message.result.packed.secret_mode != "allow"
            how = "masked as <redacted:TYPE> in the prompt" if masked else "kept as it is"
            self.notify(
                f"The query looks like it holds a secret ({', '.join(kinds)}): {how}.",
                severity="warning",
            )

    def _refresh_prompt_views(self) -> None:
        from coderag_tui.tui.screens.prompt import PromptScreen

        self.main.show_prompt_line()
        for screen in self.screen_stack:
            if isinstance(screen, PromptScreen):
                screen.refresh_prompt()

    def _advise(self) -> None:
        self._work(workers.advise, self.engine, self.settings)

    def on_advice_ready(self, message: AdviceReady) -> None:
        if self.has_main_screen:  # else the app is shutting down
            self.session.advice = message.advice.text
            self.main.tuning.show_advice(message.advice.text)

    # ----------------------------------------------------------------- tuning
    def on_tuning_panel_tuning_changed(self, message: TuningPanel.TuningChanged) -> None:
        self.apply_setting(message.field, message.value)

    def apply_setting(self, name: str, value: SettingValue) -> None:
        """Change one setting and redo only what it affects (re-chunk, re-search or re-pack)."""
        if getattr(self.settings, name) == value:
            return
        try:
            self.settings = self.settings.with_(**{name: value})
        except SettingsError as exc:  # e.g. chunk lines at or below the configured overlap
            self.notify(str(exc), title="Setting not changed", severity="error")
            self.main.tuning.sync(self.settings)
            return
        self.main.tuning.sync(self.settings)
        if name in CHUNKING_FIELDS:
            self.notify(
                f"Re-chunking as {self.settings.chunking_spec.key} in the background…", markup=False
            )
            self.start_indexing()
        elif name == "rerank":
            self.main.board.set_rerank_visible(visible=bool(value))
            if value:
                self.ensure_reranker()
            self._search_again()
        elif name in RANKING_FIELDS:
            self._search_again()
        elif name == "budget":
            self.repack()
        if name in ("budget", "chunk_lines", "chunking"):
            self._advise()
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

    def action_focus_query(self) -> None:
        self.main.action_focus_query()

    def _packed_or_say(self, verb: str) -> PackedPrompt | None:
        """The packed prompt, or None after telling the user why there is none."""
        packed = self.session.packed
        if packed is None:
            why = self.session.pack_error or f"Nothing to {verb} yet: run a search first."
            self.notify(why, severity="warning")
        return packed

    def action_copy_prompt(self) -> None:
        packed = self._packed_or_say("copy")
        if packed is not None:
            # Textual stores it in app.clipboard and sends OSC 52 through its own driver.
            self.copy_to_clipboard(packed.text)
            self._work(workers.copy, packed.text, packed.tokens, self.system_clipboard)

    def action_save_prompt(self) -> None:
        from coderag_tui.tui.screens.save import SaveScreen, suggested_path

        def save(path: Path | None) -> None:
            packed = self.session.packed
            if path is not None and packed is not None:
                self._work(workers.save, packed.text, packed.tokens, path, self.settings.repo_root)

        if self._packed_or_say("save") is not None:
            # Outside the repository: a saved prompt must not become its own top search hit.
            folder, repo = user_data_dir() / "prompts", self.settings.repo_root.name
            path = suggested_path(folder, repo, self.session.template_name)
            self.push_screen(SaveScreen(path), save)

    def on_prompt_exported(self, message: PromptExported) -> None:
        if self.has_main_screen:  # else the app is shutting down
            severity: SeverityLevel = "information" if message.ok else "error"
            if message.ok and not message.sure:
                severity = "warning"
            self.notify(message.how, title=message.title, severity=severity, timeout=10)

    def action_next_template(self) -> None:
        # No toast: the prompt line (and the prompt view's header) name the template.
        self.session.next_template(self.settings.template)
        if self.has_main_screen:
            self.main.show_prompt_line()
        self.repack()

    def action_toggle_code_mode(self) -> None:
        self.session.code_mode = not self.session.code_mode
        self.main.set_code_mode(code=self.session.code_mode)

    def action_reindex(self) -> None:
        self.notify("Re-indexing: changed files are read again, the rest is kept.")
        self.start_indexing()

    def action_budget_step(self, direction: int) -> None:
        """The next budget preset; the prompt line and the Tuning tab show it (a toast per
        press stacked over them), and only a press that changes nothing is told."""
        budget = step_budget(self.settings.budget, direction)
        if budget == self.settings.budget:
            end = "largest" if direction > 0 else "smallest"
            self.notify(
                f"The budget is at its {end} preset ({budget:,} tokens); the Tuning tab (t) "
                "takes any number.",
                timeout=4,
            )
            return
        self.apply_setting("budget", budget)

    def action_set_budget(self, budget: int) -> None:
        self.apply_setting("budget", budget)

    def action_set_chunking(self, strategy: str) -> None:
        self.apply_setting("chunking", strategy)

    def action_toggle_rerank(self) -> None:
        self.apply_setting("rerank", not self.settings.rerank)

    def select(self, key: str | None) -> None:
        self.session.selected_key = key

    def toggle_pin(self, key: str | None) -> None:
        """Pin a chunk so it goes first in the prompt (or unpin it)."""
        if key is not None:
            self.notify(self.session.toggle_pin(key))
            self._marks_changed(key)

    def toggle_exclude(self, key: str | None) -> None:
        """Exclude a chunk from the prompt (or include it again)."""
        if key is not None:
            self.notify(self.session.toggle_exclude(key))
            self._marks_changed(key)

    def toggle_admit(self, key: str | None) -> None:
        """Let a held-back chunk into the prompt as it is (or hold it back again)."""
        if key is not None:
            self.notify(self.session.toggle_admit(key), markup=False)
            self._marks_changed(key)

    def _marks_changed(self, key: str) -> None:
        """Pins or exclusions changed: the ranks line says so at once, the prompt follows."""
        if self.has_main_screen and key == self.session.selected_key:
            self.main.show_selection()
        self.repack()

    def _key_at_cursor(self) -> str | None:
        """The chunk under the cursor now, selected first if its highlight is still queued
        (keys typed fast act on the row the user sees, not the one before it)."""
        key = self.main.cursor_key()
        if key is not None and key != self.session.selected_key:
            self.select(key)
            self.main.show_selection()
        return key

    def action_pin(self) -> None:
        self.toggle_pin(self._key_at_cursor())

    def action_exclude(self) -> None:
        self.toggle_exclude(self._key_at_cursor())

    def action_admit(self) -> None:
        self.toggle_admit(self._key_at_cursor())


def make_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    state_path: Path | None = None,
    system_clipboard: bool = True,
    notices: Sequence[str] = (),
    scope: Scope = EVERY_FILE,
) -> CoderagApp:
    """The one way to build the app (CLI, tests, screenshots); nothing heavy is imported here.

    `clock` replaces `time.perf_counter` for every timing the app shows (tests pass a
    deterministic one); `state_path` is where the chosen theme and each repository's query
    history are remembered (None: nowhere);
    `system_clipboard=False` keeps copies inside the terminal (OSC 52) and `app.clipboard`;
    `notices` are shown once the screen is up (warnings from reading the settings);
    `scope` limits the rankings to some files (--include/--exclude).
    """
    return CoderagApp(
        settings,
        clock=clock,
        state_path=state_path,
        system_clipboard=system_clipboard,
        notices=notices,
        scope=scope,
    )
