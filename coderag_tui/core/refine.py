"""The model's work carried on between calls: one detached, low-priority process per index.

A `coderag search` answers at once from BM25 and the static first pass; the transformer needs
minutes on a large repository. Rather than make each call wait (and lose what it embedded
when the call ends), the command starts this module in a process of its own (`start`): it
lowers its priority to the least (at its entry point, `main`), takes the index's embedding
lock (so one runs per index), makes the static first pass when a search did not (a large
repository's: a minute or more), then, unless the index has more chunks than
`dense_background_limit`, makes the model's one-time ONNX copy if needed, embeds every chunk
the model has not, and saves the model's complete list, which the next search loads. It writes
how far it got beside the index (`core.rank.embedding_status`) and ends when done, or when the
index goes away.

It is started only where the `dense_background` setting is on (off when the CI variable is
set, and in the test suite unless a test asks for it). docs/architecture.md says why a
process that ends, rather than a resident one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from coderag_tui.core.engine import Engine
from coderag_tui.core.rank.embedding_status import (
    FIRST_PASS,
    EmbeddingStatus,
    clear_status,
    lock_path,
    read_status,
    write_status,
)
from coderag_tui.settings import SCHEMA, Settings

logger = logging.getLogger(__name__)

GONE_CHECK_S = 2.0  # how often the process looks for its index
STATUS_EVERY_S = 1.0  # how often it writes its progress
GONE_GRACE_S = 3.0  # how long a cancelled embedding has to stop before the process ends


def payload(settings: Settings) -> str:
    """The settings as JSON, for the process to rebuild exactly (no file or flag is re-read)."""
    values = {
        f.name: str(value) if isinstance(value, Path) else value
        for f in dataclasses.fields(settings)
        for value in (getattr(settings, f.name),)
    }
    return json.dumps(values)


def settings_from(text: str) -> Settings:
    values: dict[str, Any] = {
        name: Path(value) if SCHEMA[name].kind is Path and value is not None else value
        for name, value in json.loads(text).items()
    }
    return Settings(**values)


def start(settings: Settings) -> bool:
    """Start the background embedding of `settings`' index, unless the setting is off or one
    runs already; True when a process was started (it may still find another holds the lock
    and end at once)."""
    if not settings.dense_background or read_status(settings.index_path) is not None:
        return False
    command = [sys.executable, "-m", "coderag_tui.core.refine", payload(settings)]
    try:
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives the command, and the terminal's Ctrl-C
            close_fds=True,
        )
    except OSError:
        logger.debug("could not start the background embedding", exc_info=True)
        return False
    return True


def run(settings: Settings) -> int:
    """The process's work (see the module's docstring); 0 when done, stopped or not needed."""
    from filelock import FileLock, Timeout

    index = settings.index_path
    lock = FileLock(str(lock_path(index)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return 0  # another process embeds this index
    except OSError:
        return 0  # the index folder went away
    gone = threading.Event()

    def watch() -> None:
        while not gone.wait(GONE_CHECK_S):
            if not index.exists():
                logger.debug("the index %s went away: stopping", index)
                gone.set()
                # A step that cannot be cancelled (making the model's copy) must not write
                # into a folder that was removed: the process ends after a short grace.
                time.sleep(GONE_GRACE_S)
                os._exit(0)

    threading.Thread(target=watch, name="coderag-refine-watch", daemon=True).start()
    try:
        return _embed(settings, gone)
    finally:
        gone.set()
        clear_status(index)
        lock.release()


def _reporter(index: Path, stage: str, started: float, model: str = "") -> Any:
    """A progress callback that writes `stage`'s progress beside the index, once a second."""
    since = time.time()
    written = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal written
        now = time.monotonic()
        if now - written >= STATUS_EVERY_S or done >= total:
            written = now
            write_status(
                index,
                EmbeddingStatus(os.getpid(), stage, done, total, started, model, since=since),
            )

    return progress


def _embed(settings: Settings, gone: threading.Event) -> int:
    from coderag_tui.core.engine import model_started
    from coderag_tui.core.rank.embedders import offline_ready, resolve_embedder
    from coderag_tui.core.rank.static import STATIC_LABEL

    index = settings.index_path
    started = time.time()
    with Engine(settings) as engine:
        lexical = engine.saved_lexical(settings) or engine.update_index(settings, cancel=gone)
        if gone.is_set():
            return 0
        # The static first pass first (seconds to minutes): searches rank with it meanwhile.
        if engine.first_pass_worth(settings, len(lexical.chunks)):
            first = engine.open_first_pass(
                settings,
                lexical,
                progress=_reporter(index, FIRST_PASS, started, STATIC_LABEL),
                cancel=gone,
            )
            del first  # saved beside the index when complete; the next search loads it
        if gone.is_set() or not model_started(settings, len(lexical.chunks)):
            return 0  # over dense_background_limit: searches say how to embed them all
        copied = bool(settings.embed_model) or offline_ready(settings.models_path)
        stage = "loading" if copied else "preparing"
        write_status(index, EmbeddingStatus(os.getpid(), stage, started=started))
        choice = resolve_embedder(settings)  # makes the model's one-time copy if needed
        if choice.embedder is None or gone.is_set():
            logger.debug("background embedding: no model (%s)", choice.reason)
            return 0
        model = choice.embedder.name
        dense = engine.open_dense(
            settings,
            lexical,
            embedder=choice.embedder,
            progress=_reporter(index, "embedding", started, model),
            cancel=gone,
        )
    complete = dense.index is not None and dense.index.complete
    logger.debug(
        "background embedding of %s: %s after %.1f s",
        index,
        "complete" if complete else "stopped",
        time.time() - started,
    )
    return 0


def main(argv: list[str]) -> int:
    """The process's entry point: the only place its priority is lowered, so a caller that
    runs `run` in its own process (a test) keeps its own."""
    with contextlib.suppress(OSError):
        os.nice(19)  # the least priority: searches and the user's own work come first
    settings = settings_from(argv[0])
    if settings.log_file is not None:
        handler = logging.FileHandler(settings.log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        package = logging.getLogger("coderag_tui")
        package.addHandler(handler)
        package.setLevel(logging.DEBUG)
    try:
        return run(settings)
    except Exception:  # nobody reads this process's stderr: the log says what went wrong
        logger.exception("background embedding failed")
        return 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # onnxruntime's teardown at exit is slow, and nothing is left to close
