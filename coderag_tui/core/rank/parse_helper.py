"""A second process parsing files with tree-sitter for the definitions child that finishes in
the background (`core.rank.definitions_follow`, `written`), so that it uses both cores.

After BM25 is ready the definitions are the only work left, and tree-sitter's parse holds the
GIL: one process parses on one core (~20 s of a 118k-chunk monorepo's ~30 s). The child starts
this helper (`Helper.start`) and hands it each file its stdin has room for (`submit`: a line
saying the language and size, then the file's UTF-8 text), parsing the others itself; the
helper answers each, in order, with one JSON line, the file's definitions as
`parsed_definitions` gives them. The child takes the answers in as it goes (`answer`) and waits
for the last ones (`answer(wait=True)`). Anything that goes wrong (the helper did not start,
died, answered nonsense) ends the helper, and the child parses the files it held itself: the
definitions are the same either way.

The helper ends when its stdin closes: the child closing it when done, or dying.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from collections import deque
from typing import IO, TYPE_CHECKING, Any

from coderag_tui.core.rank import definitions_process

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import FileDefinition

_BOOT = definitions_process.boot(__name__)
AHEAD = 64  # files handed over and not answered, at most
_PIPE_WANTED = 1 << 20
_PIPE_MIN = 1 << 16  # what a pipe holds on any POSIX system we run on (Linux, macOS)


class Helper:
    """The child's side of the helper (see the module docstring). Files handed over wait in
    its stdin, answered in order; no more is handed over than the pipe holds (`takes`), so
    handing over never waits for a parse: neither side can block the other."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.handed: deque[int] = deque()  # sizes of the files not answered yet, in order
        self.room = _PIPE_MIN
        if process.stdin is not None:
            self.room = _widen(process.stdin.fileno())
        if process.stdout is not None:
            _widen(process.stdout.fileno())

    @classmethod
    def start(cls) -> Helper | None:
        """A running helper; None when no second core or interpreter is there to run it, or
        on Windows (whose pipes `select` cannot wait on)."""
        if os.name != "posix" or definitions_process.no_follower() is not None:
            return None
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps({"path": sys.path})],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            return None
        return cls(process)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and self.process.stdin is not None

    def takes(self, size: int) -> bool:
        """Whether a file of `size` bytes can be handed over now: nothing is waiting, or it
        fits in the pipe beside the files waiting behind the one being parsed."""
        if not self.alive:
            return False
        waiting = sum(self.handed) - self.handed[0] if self.handed else 0
        return not self.handed or (len(self.handed) < AHEAD and waiting + size <= self.room)

    def submit(self, data: bytes, language: str) -> bool:
        """Hand over one file when it `takes` it; False when not, or when the helper is gone."""
        stdin = self.process.stdin
        if stdin is None or not self.takes(len(data)):
            return False
        try:
            stdin.write(json.dumps({"language": language, "size": len(data)}).encode() + b"\n")
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            self.close()
            return False
        self.handed.append(len(data))
        return True

    def answer(self, *, wait: bool = False) -> list[FileDefinition] | None:
        """The definitions of the first file handed over and not answered, once the helper
        has answered (`wait`: until it has); None while it works, or when it failed (then it
        is ended and nothing is `handed`: the caller parses those files itself)."""
        stdout = self.process.stdout
        if not self.handed or stdout is None:
            return None
        if not wait and not select.select([stdout], [], [], 0)[0]:
            return None
        try:
            found = [(int(line), str(name), str(kind)) for line, name, kind in _line(stdout)]
        except (OSError, ValueError, TypeError):
            self.close()
            return None
        self.handed.popleft()
        return found

    def close(self) -> None:
        """End the helper: its stdin closed, it exits (killed if it does not)."""
        self.handed.clear()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _widen(fd: int) -> int:
    """Ask for a 1 MiB pipe (Linux); the bytes it holds, as granted."""
    import fcntl  # POSIX (`Helper.start` runs none elsewhere)

    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_WANTED)
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (OSError, AttributeError):  # not Linux, or over the user's pipe limit
        return _PIPE_MIN


def _line(stdout: IO[bytes]) -> list[Any]:
    """One answer: a JSON list (ValueError at the end of the stream or on anything else)."""
    raw = stdout.readline()
    found = json.loads(raw) if raw else None
    if not isinstance(found, list):
        raise ValueError("the parse helper did not answer")
    return found


def main(args: dict[str, Any]) -> int:
    """The helper: parse each file handed over on stdin, answer on stdout, until stdin ends."""
    from coderag_tui.core.rank.definitions import parsed_definitions

    del args  # the path is set by the boot code
    source, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        while header := source.readline():
            job = json.loads(header)
            data = source.read(int(job["size"]))
            found = parsed_definitions(data, str(job["language"]))
            out.write(json.dumps(found).encode() + b"\n")
            out.flush()
    except (OSError, ValueError, KeyError, KeyboardInterrupt):
        return 1
    return 0


__all__ = ["Helper", "main"]
