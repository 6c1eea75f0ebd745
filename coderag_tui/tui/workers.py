"""The app's background work: each function runs in a thread worker, asks the engine one
thing and posts what it got as a message. None of them touches the app or a widget; loops
stop when the worker is cancelled (a new query, a re-chunk, quitting).
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from textual.message import Message
from textual.worker import get_current_worker

from coderag_tui.core.engine import (
    DIFF_TASK,
    Dense,
    PromptError,
    capped_note,
    code_query,
    diff_query,
    model_started,
    prompt_tools,
)
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.given_paths import parse_location
from coderag_tui.core.records import Chunk, Scope, SearchRun
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
from coderag_tui.tui.session import Ask

if TYPE_CHECKING:
    from pathlib import Path

    from coderag_tui.core.engine import Engine, Lexical, PromptRequest
    from coderag_tui.core.index.changes import Change
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.settings import Settings

Post = Callable[[Message], object]
BACKGROUND_NICE = 10  # nice value of the model-loading and embedding threads


def lower_thread_priority() -> None:
    """Nice the calling worker thread (and the model threads it starts), so typing stays
    smooth; the first line of a worker that loads or runs a model.

    On Linux a thread is a task with its own nice value, and threads it creates inherit it:
    embedding with every core then yields to the UI thread instead of starving it. Never on
    the main thread: its task is the process, so the whole app (or whatever called the
    worker's function directly, a test) would stay niced.
    """
    setpriority = getattr(os, "setpriority", None)
    if setpriority is None or threading.current_thread() is threading.main_thread():
        return
    with contextlib.suppress(OSError):
        setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


def build_index(
    engine: Engine, serial: int, settings: Settings, current: Lexical | None, post: Post
) -> None:
    """Serve the saved index at once (when no stage of this chunking is installed), then
    bring it up to date: IndexBuilt for other chunks, IndexChecked when nothing changed."""

    # engine.use builds a Searcher on the UI thread: import its module here, off that thread.
    from coderag_tui.core.rank import search as _search  # noqa: F401

    worker = get_current_worker()
    cancel = threading.Event()

    files = (0, 0)  # the last files done / total: building BM25 reports no files of its own

    def progress(p: IndexProgress) -> None:
        nonlocal files
        if worker.is_cancelled:
            cancel.set()
            return
        if p.files_total:
            files = (p.files_done, p.files_total)
        post(IndexProgressed(p.stage, *files, p.chunks))

    clock = engine.clock
    start = clock()
    chunking = settings.chunking_spec.key
    served = current
    try:
        if current is None:
            served, start = _serve_saved(engine, serial, settings, start, post)
        lexical = engine.update_index(settings, current=served, progress=progress, cancel=cancel)
    except (CoderagError, OSError) as exc:  # StoreError, a full disk ...: one sentence
        post(IndexFailed(serial, str(exc)))
        return
    if worker.is_cancelled:
        return
    elapsed = (clock() - start) * 1000
    if lexical.changed:
        post(IndexBuilt(serial, lexical, chunking, elapsed))
    else:
        post(IndexChecked(serial, lexical, elapsed))


def _serve_saved(
    engine: Engine, serial: int, settings: Settings, start: float, post: Post
) -> tuple[Lexical | None, float]:
    """The saved index of this chunking (preloaded since start-up, or opened now), posted
    at once (IndexBuilt) so it answers while it is checked; with when its loading began."""
    preloaded = engine.take_preload(settings)
    if preloaded is not None:
        served, start = preloaded  # loading since start-up: count from then
    else:
        served = engine.saved_lexical(settings)
    if served is not None:
        elapsed = (engine.clock() - start) * 1000
        post(IndexBuilt(serial, served, settings.chunking_spec.key, elapsed))
    return served, start


def open_dense(
    engine: Engine,
    serial: int,
    settings: Settings,
    lexical: Lexical,
    embedder: Embedder | None,
    first_pass_over: int,
    post: Post,
) -> None:
    """Open the model's dense stage for these chunks: at once when the vectors it already
    has cover every chunk, else say how much they cover (ModelLoaded) and embed the rest.

    When more than `first_pass_over` chunks are missing and the engine finds a first pass
    worth it, the static first pass runs first (FirstPassReady), in this worker: beside the
    model's embedding, two cores would slow both. Above `dense_background_limit` chunks the
    model is not started on its own (hours): the first pass stays, and one sentence says how
    to embed them all.
    """
    lower_thread_priority()
    worker = get_current_worker()
    cancel = threading.Event()
    start = engine.clock()

    def progress(done: int, total: int, *, first_pass: bool = False) -> None:
        if worker.is_cancelled:
            cancel.set()
            return
        post(EmbeddingProgressed(serial, done, total, first_pass))

    def first_progress(done: int, total: int) -> None:
        progress(done, total, first_pass=True)

    known = engine.open_dense(
        settings, lexical, embedder=embedder, embed_missing=False, prepare=False
    )
    first_shown = False  # the static first pass answers
    if known.pending:
        # The model's one-time ONNX copy is still to be made (10-30 s on a machine's first
        # run): the static first pass ranks every chunk meanwhile, then the copy is made.
        first_start = engine.clock()
        first = engine.open_first_pass(settings, lexical, progress=first_progress, cancel=cancel)
        if worker.is_cancelled or cancel.is_set():
            return
        post(FirstPassReady(serial, first, (engine.clock() - first_start) * 1000))
        first_shown = first.available
        known = engine.open_dense(settings, lexical, embed_missing=False)
        first_pass_over = len(lexical.chunks) + 1  # it has run
    if worker.is_cancelled:
        return
    index = known.index
    if not known.available or (index is not None and index.complete):
        post(EmbeddingsReady(serial, known, (engine.clock() - start) * 1000))
        return
    post(ModelLoaded(serial, known, (engine.clock() - start) * 1000))
    missing = index.n_chunks - index.covered if index is not None else 0
    if missing > first_pass_over and engine.first_pass_worth(settings, missing):
        first_start = engine.clock()
        first = engine.open_first_pass(settings, lexical, progress=first_progress, cancel=cancel)
        if worker.is_cancelled or cancel.is_set():
            return
        post(FirstPassReady(serial, first, (engine.clock() - first_start) * 1000))
        first_shown = first.available
    if not model_started(settings, len(lexical.chunks)):
        note = capped_note(settings, known.model, len(lexical.chunks))
        # With the first pass answering, the model is left off; without one, the vectors the
        # model has (a `coderag index --dense` cut short) answer for what they cover.
        off = Dense(reason=note) if first_shown else replace(known, notices=(*known.notices, note))
        post(EmbeddingsReady(serial, off, (engine.clock() - start) * 1000))
        return
    dense = engine.open_dense(
        settings, lexical, embedder=known.embedder, progress=progress, cancel=cancel
    )
    if worker.is_cancelled or cancel.is_set():
        return
    post(EmbeddingsReady(serial, dense, (engine.clock() - start) * 1000))


def open_reranker(engine: Engine, settings: Settings, post: Post) -> None:
    """Load and warm up the reranker (learned or a cross-encoder), or say why it is off."""
    lower_thread_priority()
    post(RerankerReady(engine.open_reranker(settings)))


def search(
    engine: Engine,
    serial: int,
    ask: Ask,
    settings: Settings,
    scope: Scope,
    request: PromptRequest,
    post: Post,
) -> None:
    """Rank for the question (only files in `scope`), post the rankings, then pack the prompt
    (the run's query is the task; a change's review task and diff for `ask.diff`) once they
    are on screen."""
    worker = get_current_worker()
    query, origin, change = ask.text, ask.origin, ask.change
    asked = ""
    if ask.diff is not None:
        try:
            query, origin, changed = diff_query(settings, ask.diff)
        except ValueError as exc:  # ChangeError is one: a sentence naming the fix
            post(SearchFailed(serial, str(exc)))
            return
        change = changed.text
        asked = change_words(changed)
    elif ask.location:
        try:
            path, line = parse_location(ask.text)
            query, origin = code_query(settings, path, line, settings.query_lines)
        except ValueError as exc:  # LocationError is one: a sentence naming the fix
            post(SearchFailed(serial, str(exc)))
            return
    try:
        run = engine.search(query, settings, origin, scope)
        listed = {h.chunk.key: h.chunk for r in run.rankings.values() for h in r.hits}
        secrets = engine.secret_kinds(listed.values())  # reads the index: it can fail too
    except CoderagError as exc:  # a sentence to show; a bug surfaces as a crash report
        post(SearchFailed(serial, f"the search failed: {exc}"))
        return
    if worker.is_cancelled:
        return
    # Rankings first: they render while the prompt is packed (token counting takes longer).
    finished = SearchFinished(serial, run, secrets, change, asked)
    post(finished)
    finished.rendered.wait(timeout=1.0)
    if worker.is_cancelled:
        return
    task = DIFF_TASK if change else run.query
    pack(engine, serial, run, replace(request, task=task, change=change), settings, post)


def change_words(change: Change) -> str:
    """`the change against HEAD: 2 files, +12 −4` (what a change review ranked)."""
    files = len(change.files)
    added = sum(f.added for f in change.files)
    removed = sum(f.removed for f in change.files)
    against = "uncommitted change" if change.ref == "HEAD" else f"change since {change.ref}"
    return f"the {against}: {files} file{'s' if files != 1 else ''}, +{added} −{removed}"


def pack(
    engine: Engine,
    serial: int,
    run: SearchRun,
    request: PromptRequest,
    settings: Settings,
    post: Post,
) -> None:
    """Pack the run into the budget (searched again deeper when the budget needs it)."""
    try:
        result = engine.prompt(run, request, settings)
    except (PromptError, ValueError) as exc:
        post(PromptPacked(serial, None, str(exc)))
        return
    if not get_current_worker().is_cancelled:
        post(PromptPacked(serial, result))


def advise(engine: Engine, settings: Settings, post: Post) -> None:
    """The chunk-size advice for the budget and chunking."""
    post(AdviceReady(engine.advice(settings)))


def warm_up(settings: Settings, template: str) -> None:
    """Load the token table, the template and the highlighter while the index is checked, so
    the first Enter does not pay for them."""
    from rich.style import Style

    from coderag_tui.core.prompt.pack import pack  # noqa: F401 (import once, off the UI thread)
    from coderag_tui.tui.widgets.preview import chunk_lines

    # Pygments loads its lexers and styles on first use; do it here, not on the first Enter.
    for path in ("x.py", "x.js", "x.md"):
        for dark in (True, False):
            chunk = Chunk(path, 1, 1, "lines", None, "x = 'a' # b\n")
            chunk_lines(chunk, ["x"], dark=dark, mark=Style())
    with contextlib.suppress(PromptError):  # the search reports it where the prompt goes
        prompt_tools(settings, template)


# App._work passes a worker's arguments in order, the message poster last.
def copy(text: str, tokens: int, system_clipboard: bool, post: Post) -> None:  # noqa: FBT001
    """Add a system clipboard tool to the OSC 52 copy Textual already sent; say which, or
    that the copy cannot be known to have arrived (OSC 52 alone: a terminal may ignore it)."""
    from coderag_tui.core.prompt.clipboard import OSC52_MESSAGE, copy_text

    result = copy_text(text, osc52_stream=io.BytesIO(), use_pyperclip=system_clipboard)
    method = result.method.split("+")[0]
    if result.ok and method == "tmux":
        # tmux drops an application's own OSC 52 by default: say where the text really is.
        post(PromptExported("Prompt copied", f"Copied {tokens:,} tokens: {result.message}."))
    elif result.ok and method != "osc52":
        how = f"Copied {tokens:,} tokens with {method} (and OSC 52)."
        post(PromptExported("Prompt copied", how))
    else:
        # Before the OSC 52 part, what the system tools said (`xclip ran but …`), if anything.
        why = "" if result.message.startswith(OSC52_MESSAGE) else result.message.split("; ")[0]
        tools = f"{why}; " if why else "no xclip, xsel or wl-copy found; "
        how = (
            f"{tools}the {tokens:,} tokens were only sent to the terminal (OSC 52), which may "
            "ignore them, and nothing tells coderag whether they arrived. Ctrl+S saves the "
            "prompt to a file."
        )
        post(PromptExported("Prompt not copied", how, sure=False))


def save(text: str, tokens: int, path: Path, repo: Path, post: Post) -> None:
    """Write the prompt to a file (never through a link in the repository); say where, or
    why not."""
    from coderag_tui.core.prompt.clipboard import copy_text

    result = copy_text(text, out=path, clipboard=False, guarded=repo)
    if result.ok:
        post(PromptExported("Prompt saved", f"Saved {tokens:,} tokens to {path}."))
    else:
        post(PromptExported("Prompt not saved", result.message, ok=False))
