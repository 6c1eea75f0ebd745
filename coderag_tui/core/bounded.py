"""Work a caller waits for only so long: a model's load, a served answer.

Python cannot stop a thread, and a library call (onnxruntime folding a graph, a prompt packing
a hostile file) cannot be asked to stop, so the work runs in a daemon thread beside the caller,
who stops waiting at the bound and goes on without it. The work ends on its own; whatever it
holds (a server's turn on its engine) it releases then, so it runs at most once at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from coderag_tui.core.errors import CoderagError

T = TypeVar("T")


class TookTooLong(CoderagError, TimeoutError):
    """The work did not end within its bound; it goes on in its thread, unwaited for."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"it took longer than {seconds:g} s")
        self.seconds = seconds


def within(work: Callable[[], T], seconds: float, name: str = "coderag-bounded") -> T:
    """`work()`'s result or its exception, or TookTooLong when it has not ended after
    `seconds` (it then runs on in a daemon thread named `name`)."""
    result: list[tuple[bool, Any]] = []
    finished = threading.Event()

    def run() -> None:
        try:
            result.append((True, work()))
        except BaseException as exc:  # handed to the caller, whatever it is
            result.append((False, exc))
        finally:
            finished.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not finished.wait(seconds):
        raise TookTooLong(seconds)
    done, value = result[0]
    if not done:
        raise value
    return value  # type: ignore[no-any-return]
