"""Priority is lowered only where a new process or a worker thread starts (issue 44, item 1).

Before, `refine.run` niced whatever process ran it, so the test that ran it left the rest of
the suite at nice 19 (about 4% of a core beside two busy processes), and a model worker's
function run on the main thread niced the whole app.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from filelock import FileLock

from coderag_tui.core import refine
from coderag_tui.core.rank.embedding_status import lock_path
from coderag_tui.settings import Settings
from coderag_tui.tui.workers import BACKGROUND_NICE, lower_thread_priority

ROOT = Path(__file__).resolve().parents[1]


def nice_of(task: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, task)


def test_the_background_embedder_lowers_its_own_process_and_no_caller(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = Settings(repo=tiny_repo, index_dir=index_dir)
    before = nice_of(os.getpid())
    with FileLock(str(lock_path(settings.index_path))):  # another process embeds this index
        assert refine.run(settings) == 0  # in this process: it ends at once
        assert nice_of(os.getpid()) == before
        # Its own process, from its entry point, runs at the least priority.
        code = (
            "import os, sys; from coderag_tui.core import refine; refine.main(sys.argv[1:]); "
            "print(os.getpriority(os.PRIO_PROCESS, 0))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, refine.payload(settings)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=True,
        )
    assert int(done.stdout) == 19


def test_a_worker_lowers_its_own_thread_and_never_the_process() -> None:
    before = nice_of(os.getpid())
    lower_thread_priority()  # a worker's function called on the main thread
    assert nice_of(os.getpid()) == before

    seen: list[int] = []

    def worker() -> None:
        lower_thread_priority()
        seen.append(nice_of(threading.get_native_id()))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    if before < BACKGROUND_NICE:
        assert seen == [BACKGROUND_NICE]
    assert nice_of(os.getpid()) == before
