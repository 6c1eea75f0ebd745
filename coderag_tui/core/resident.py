"""An engine kept open for one repository, answering many searches: `coderag serve`'s core.

A fresh `coderag search` pays for the interpreter, its imports, a check of every file and
loading the saved index before BM25's few milliseconds. A resident engine pays that once.
Before each answer it asks the repository's file watch (`core.index.watch`) what changed
since the last check: when nothing did, the index is as fresh as a full check would make it,
and the answer comes from memory; when some files did, just those paths are checked, each
with the walk's rules (`Engine.update_index(only=...)`); when the watch cannot name them (an
ignore file or git's state changed, a folder moved, too many paths) or cannot confirm it saw
every change (it failed, or its cookie did not come back), the index is re-checked exactly as
a fresh process would. Between
requests a background thread takes changes in once they settle, so a search after an edit
usually finds the work done.

Requests may differ from the resident's settings only in what a search reads at query time
(`SEARCH_TIME`): k, fusion, signals, rerank, budget… Anything that shapes the index or the
models (chunking, tokenizer, embedding model, index folder) must match; a face sends the
others back to a fresh process (`differs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from coderag_tui.core.engine import DENSE_OFF_FOR_RUN, Dense, Engine, Lexical, Rerank
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.index.watch import EVERY_FILE, TreeWatch
from coderag_tui.core.rank.embedding_status import FIRST_PASS, read_status
from coderag_tui.core.rank.search import RERANK_OFF
from coderag_tui.settings import SEARCH_STAGES, Settings, settings_of

logger = logging.getLogger(__name__)

# Settings a request may set apart from the resident's: read when ranking or packing, never
# when indexing or loading a model; and those that matter only when a request ranks with
# dense search, or reranks.
SEARCH_TIME = frozenset(settings_of(*SEARCH_STAGES))
DENSE_ONLY = frozenset(settings_of("dense"))
RERANK_ONLY = frozenset(settings_of("rerank model"))
# Seconds without a file event before the background thread takes a burst of changes in.
QUIET_S = 0.3
# Seconds between the end of one background check and the start of the next, at least (a
# tool writing into the repository all the time must not keep a core busy re-checking).
MIN_GAP_S = 2.0
# After a check of the watched paths alone, every file is checked again in the background
# once the repository has been quiet this long since the last such check: whatever the paths
# could not say (a global ignore file, `git add -f`) is then taken in, as a fresh process
# would, without a search waiting for it.
FULL_CHECK_AFTER_S = 300.0
# Seconds between looks for what the background process saved (the first pass, the model).
RECHECK_DENSE_S = 10.0
WATCH_FAILED = "the file watch stopped ({}): every search re-checks the repository's files."


class Busy(CoderagError):
    """Another answer (or a re-check) held the engine longer than a request would wait."""


def differs(mine: Settings, theirs: Settings, *, dense: bool = True) -> str:
    """The first setting in which `theirs` differs from `mine` where that matters, or "":
    never `SEARCH_TIME`, the dense settings only for a request ranking with dense search
    (`dense`), the reranker's only when `theirs` reranks."""
    free = SEARCH_TIME | (frozenset() if dense else DENSE_ONLY)
    if not theirs.rerank:
        free |= RERANK_ONLY
    for field in dataclasses.fields(Settings):
        name = field.name
        if name in free:
            continue
        if getattr(mine, name) != getattr(theirs, name):
            return name
    if mine.index_path != theirs.index_path:
        return "index_dir"
    return ""


@dataclasses.dataclass
class Checks:
    """What the resident did to stay fresh, for its log and for tests."""

    trusted: int = 0  # answered with no file checked: the watch saw every change and there was none
    checked: int = 0  # every file's state checked first (a change, or the watch could not sync)
    background: int = 0  # checks the background thread made after changes settled
    by_path: int = 0  # checks of the paths the watch named alone (of `checked` + `background`)
    full_after_paths: int = 0  # background checks of every file after checks of paths alone


class Resident:
    """One repository's engine, kept open with a watch on its files. Use `serving` to answer.

    Made by `open`; `close` (or the context manager) stops the watch and the engine.
    """

    def __init__(
        self, engine: Engine, watch: TreeWatch | None, *, dense: bool, background: bool = False
    ) -> None:
        self.engine = engine
        # A background process embeds for this index (`core.refine`): what it saves is taken in.
        self.background = background
        self._dense_checked = time.monotonic()
        self.settings = engine.settings
        self.watch = watch
        self.checks = Checks()
        self._dense: Dense | None = engine.dense if dense else None
        self._rerank: Rerank | None = engine.rerank
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self.warmed = threading.Event()  # set once the read ahead for the first edit is done
        self._stale = watch is None
        self._by_path_since = 0.0  # when the first check of paths alone since a full one ran
        self._said_watch = False
        self._thread: threading.Thread | None = None
        if watch is not None:
            self._thread = threading.Thread(
                target=self._background, name="coderag-resident", daemon=True
            )
            self._thread.start()

    @classmethod
    def open(
        cls,
        settings: Settings,
        cookies: Path,
        *,
        dense: bool = True,
        explicit: frozenset[str] | None = None,
        open_engine: Callable[..., Engine] = Engine.open,
        **engine_kw: object,
    ) -> tuple[Resident, str]:
        """Start the watch, then open the engine (a full check of the index) and return the
        resident with a sentence about the watch ("" when it runs).

        The watch starts first and is known to be in place (`sync`) before the check, so no
        change can fall between the two. `open_engine` is `Engine.open` (its keywords in
        `engine_kw`); the engine opens with dense search when `dense`.
        """
        from coderag_tui.core.index.indexer import index_excludes

        note = ""
        watch: TreeWatch | None = None
        try:
            watch = TreeWatch(settings.repo_root, cookies, index_excludes(settings))
            if not watch.sync():
                reason = watch.failure or "it did not answer in time"
                watch.close()
                watch, note = None, WATCH_FAILED.format(reason)
        except OSError as exc:
            watch, note = None, WATCH_FAILED.format(exc.strerror or exc)
        try:
            engine = open_engine(settings, dense=dense, explicit=explicit, **engine_kw)
        except BaseException:
            if watch is not None:
                watch.close()
            raise
        background = bool(engine_kw.get("background"))
        return cls(engine, watch, dense=dense, background=background), note

    # ---------------------------------------------------------------- staying fresh
    def _check(self, only: frozenset[str] | None = EVERY_FILE) -> None:
        """Re-check every file, or the paths `only` (what the watch saw change since the last
        check), reading only changed ones, and install what changed."""
        engine, settings = self.engine, self.settings
        if self._stale:
            only = EVERY_FILE  # the last check failed: what it missed is not known
        self._stale = True  # until the check has succeeded
        lexical = engine.update_index(settings, current=engine.lexical, only=only)
        if lexical.report is not None and lexical.report.touched is not None:
            self.checks.by_path += 1
            self._by_path_since = self._by_path_since or time.monotonic()
        else:
            self._by_path_since = 0.0
        engine.use(lexical)
        if lexical.changed and self._dense is not None:
            self._dense = self._reopen_dense(lexical)
            engine.use(self._dense)
        self._stale = False

    def _reopen_dense(self, lexical: Lexical) -> Dense:
        dense, settings = self._dense, self.settings
        assert dense is not None
        if not dense.available:
            return dense  # off for a reason (no model): still off
        if not dense.first_pass:  # the model's list: the few changed chunks are embedded now
            return self.engine.open_dense(settings, lexical, embedder=dense.embedder)
        return self.engine.open_dense_now(settings, lexical)

    def _take_background_work(self) -> None:
        """Install what the background process saved since the dense stage was opened (the
        static first pass, the model's complete list): looked for when its status says a
        stage ended, at most every `RECHECK_DENSE_S`."""
        dense, lexical = self._dense, self.engine.lexical
        if dense is None or lexical is None or not self.background:
            return
        if not (dense.pending or dense.first_pass):
            return
        now = time.monotonic()
        if now - self._dense_checked < RECHECK_DENSE_S:
            return
        self._dense_checked = now
        status = read_status(self.settings.index_path)
        if status is not None and (dense.first_pass or status.stage == FIRST_PASS):
            return  # still at it: the stage it is making is not saved yet
        newer = self.engine.open_dense_now(self.settings, lexical, background=True)
        if newer.available or not dense.available:
            self._dense = newer

    def fresh(self) -> bool:
        """Make the index as fresh as a full check would; True when that took a check."""
        with self._lock:
            watch = self.watch
            in_step = watch is not None and watch.sync()
            changes = watch.take_changes() if in_step and watch is not None else EVERY_FILE
            if changes == frozenset() and not self._stale:
                self.checks.trusted += 1
                return False
            self._check(changes)
            self.checks.checked += 1
            return True

    def _background(self) -> None:
        watch = self.watch
        assert watch is not None
        self._warm()
        while not self._closed.is_set():
            if not watch.wait_changed(timeout=1.0):
                if watch.failure:
                    return  # every request checks for itself from now on
                self._full_check_when_due()
                continue
            watch.quiet_for(QUIET_S)
            if self._closed.is_set():
                return
            with self._lock:
                changes = watch.take_changes()
                if changes != frozenset():
                    with contextlib.suppress(Exception):  # the next request checks and says why
                        self._check(changes)
                        self.checks.background += 1
            self._closed.wait(MIN_GAP_S)

    def _warm(self) -> None:
        """What the first edit's check would read, read now: it then costs what later ones
        do. A failure only leaves that to the first check (said in the debug log)."""
        with self._lock:
            try:
                if not self._closed.is_set():
                    self.engine.warm_for_edits(self.settings)
            except Exception as exc:  # a read ahead: the check reads for itself
                logger.debug("serve: reading ahead for the first edit failed: %s", exc)
            finally:
                self.warmed.set()

    def _full_check_when_due(self) -> None:
        """Every file checked in the background, `FULL_CHECK_AFTER_S` after the first check
        of paths alone since the last full one (see there)."""
        since = self._by_path_since
        if not since or time.monotonic() - since < FULL_CHECK_AFTER_S:
            return
        # A failure leaves the index stale: the next request checks and says why.
        with self._lock, contextlib.suppress(Exception):
            self._check(EVERY_FILE)
            self.checks.background += 1
            self.checks.full_after_paths += 1

    def watch_note(self) -> str:
        """A sentence once, when the watch has stopped since it was last asked ("" otherwise)."""
        watch = self.watch
        if watch is None or self._said_watch or not watch.failure:
            return ""
        self._said_watch = True
        return WATCH_FAILED.format(watch.failure)

    # ---------------------------------------------------------------- answering
    @contextlib.contextmanager
    def serving(
        self, settings: Settings, *, dense: bool, rerank: bool, wait: float | None = None
    ) -> Iterator[Engine]:
        """The engine, fresh and holding the stages a request asks for, until the block ends.

        One request at a time: the block holds the resident's lock, waited for at most `wait`
        seconds (None: as long as it takes), else Busy. `settings` must not differ from the
        resident's outside `SEARCH_TIME` (see `differs`).
        """
        if not self._lock.acquire(timeout=-1 if wait is None else wait):
            raise Busy(
                f"the index is busy with another answer (still working after {wait:g} s): "
                "ask again in a moment"
            )
        try:
            self.fresh()
            if dense:
                self._take_background_work()
            engine = self.engine
            if dense and self._dense is None:  # opened without it: open it now, keep it
                lexical = engine.lexical
                assert lexical is not None
                self._dense = engine.open_dense(self.settings, lexical)
            engine.use(self._dense if dense and self._dense else Dense(reason=DENSE_OFF_FOR_RUN))
            if rerank and self._rerank is None:  # opened on first use, then kept
                self._rerank = engine.open_reranker(self.settings)
            engine.use(self._rerank if rerank and self._rerank else Rerank(reason=RERANK_OFF))
            yield engine
            lexical = engine.lexical
            if lexical is not None and lexical.notices:
                # said once, as a fresh run says them once: later answers stay quiet
                engine.use(dataclasses.replace(lexical, notices=()))
        finally:
            self._lock.release()

    def close(self) -> None:
        self._closed.set()
        if self.watch is not None:
            self.watch.close()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self.engine.close()

    def __enter__(self) -> Resident:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
