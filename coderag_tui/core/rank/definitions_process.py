"""Build the definitions in a second process while this one builds the BM25 index.

A cold lexical stage builds BM25 (Python tokenizing every chunk) and then the chunks'
definitions; both hold the GIL, so a second
core sits idle. When BM25 is about to be rebuilt over at least `MIN_CHUNKS` chunks and the
definitions saved for the store's generation are missing, `start` runs
`load_or_build_definitions_at` in a child: a new interpreter running this module (a spawn,
never a fork of a process with threads) with the parent's `sys.path`, so it imports the very
code the parent runs, installed or not, and needs no network. The child opens the store
read-only, reads the chunks of the generation the parent read (anything else: it saves
nothing), builds the definitions and saves them atomically (`persist.save_folder`). The parent
waits for it after BM25 and then calls `load_or_build_definitions` as before, which loads the
saved folder — or, when the child saved nothing (it failed, was killed, was too slow, or the
store changed), builds in-process: the result is the same either way.

Stopping: the child ends when its parent does, whatever the signal state it inherited
(`ParentWatch`). It stops itself (KeyboardInterrupt, so a folder being written is removed)
when the parent closes its stdin or dies (stdin's end, or its parent's pid seen gone every
`POLL_S`); Python's own SIGINT handler is put back first, because a child of `coderag index &`
started from a script inherits SIGINT ignored, which made that interrupt a no-op and left the
child looping for ever. Should the interrupt not end it within `GRACE_S` (a long call in C),
it exits there and then. The parent closes stdin when it is interrupted (Ctrl-C) or gives up
waiting, and kills the child if it has not stopped `GRACE_S` later. A child killed while
saving leaves at most a temporary folder beside the definitions, never a half-written one. A
follower left to finish on its own (`Follower.leave`) is told so on the same pipe, and from
then on neither the pipe's end nor its parent's stops it.

`MIN_CHUNKS`: the child costs a start and its own read of the chunks, so it pays only over
many chunks, and only when the second core is really free; when the host lends less than two
cores' worth, it costs more than building here at every size tried. `MIN_CHUNKS` sits above
the free-core break-even with room for a slower start. The measurements, on a 2-vCPU VM both
ways, are in benchmarks/README.md ("Definitions in a second process");
benchmarks/bench_index.py prints both ways for the machine it runs on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.settings import Settings

MIN_CHUNKS = 4096  # fewer chunks: built in-process (see the module docstring)
MIN_CORES = 2  # fewer usable cores: built in-process (see the module docstring)
GRACE_S = 2.0  # how long a child asked to stop may take before it is killed
POLL_S = 0.5  # how often a child checks that its parent is still there
WAIT_FLOOR_S = 5.0  # after BM25, wait at least this long (or as long as BM25 took)
IDLE_S = 0.02  # how long a follower waits for the next batch of a build to be committed
PATIENCE = 3.0  # a follower is waited for up to this many times as long as it has run

# Exit codes of the child.
SAVED, CHANGED, INTERRUPTED = 0, 3, 130

# What the last `start` or `Child.finish` did, for benchmarks and tests (one sentence).
last_outcome = ""

# The followers left to finish on their own (`Follower.leave`), reaped as they end.
LEFT: list[subprocess.Popen[bytes]] = []


def reap() -> list[subprocess.Popen[bytes]]:
    """The followers left to finish on their own that still run (the others are reaped)."""
    LEFT[:] = [process for process in LEFT if process.poll() is None]
    return LEFT


def boot(module: str) -> str:
    """The code a child runs: `module`'s `main` on its arguments, with the parent's path."""
    return (
        "import json, sys\n"
        "args = json.loads(sys.argv[1])\n"
        "sys.path[:] = args['path']\n"
        f"from {module} import main\n"
        "sys.exit(main(args))\n"
    )


_BOOT = boot(__name__)


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def no_follower() -> str | None:
    """Why a follower (BM25's, the definitions') cannot start here, as its outcome sentence;
    None when it can."""
    if cores() < MIN_CORES:
        return "built in-process (fewer than two cores)"
    if getattr(sys, "frozen", False) or not sys.executable:
        return "built in-process (no interpreter to start)"
    return None


def _record(outcome: str) -> None:
    global last_outcome
    last_outcome = outcome


class Child:
    """A running child building the definitions (see the module docstring); `record` takes
    the sentence saying how it ended (this module's `last_outcome` by default: the BM25
    child of `core.rank.bm25_process` keeps its own)."""

    wait_floor_s = WAIT_FLOOR_S

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        errors: IO[bytes],
        record: Callable[[str], None] = _record,
    ) -> None:
        self.process = process
        self._errors = errors
        self._record = record
        self._started = time.perf_counter()

    @property
    def running_s(self) -> float:
        """Seconds since the child was started."""
        return time.perf_counter() - self._started

    def finish(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the child; True when it finished its work (the
        definitions are saved unless the folder could not be written). A child still running
        then is stopped (`stop`)."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            self._record(f"the second process took over {timeout:.1f} s and was stopped")
            return False
        seconds = time.perf_counter() - self._started
        if code == SAVED:
            self._record(f"built and saved by a second process in {seconds:.2f} s")
        elif code == CHANGED:
            self._record("the second process found the chunks changed and saved nothing")
        else:
            self._record(f"the second process failed (exit code {code}){self._last_error()}")
        self._close()
        return code == SAVED

    def stop(self) -> None:
        """Ask the child to stop (its stdin closed), kill it after `GRACE_S`; wait for it."""
        if self.process.poll() is None:
            self._close_stdin()
            try:
                self.process.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._close()

    def _close_stdin(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):  # a broken pipe: the child is gone already
                stdin.close()

    def _close(self) -> None:
        self._close_stdin()
        self._errors.close()

    def _last_error(self) -> str:
        """The last line the child wrote to stderr, as ": …" (or "")."""
        try:
            self._errors.seek(0)
            lines = self._errors.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f": {lines[-1]}" if lines else ""


class Follower(Child):
    """A child following the first index of a repository as it is written
    (`core.rank.bm25_process`, `core.rank.definitions_follow`): told by `done` when it is."""

    min_chunks = MIN_CHUNKS  # fewer chunks written: the parent builds it itself
    _left = False  # `leave` was called

    @property
    def patience_s(self) -> float:
        """How long the parent waits for it once the index is written: `PATIENCE` times as
        long as it has run (at least `wait_floor_s`). Two followers share a core with the
        parent's build, so at its end they may be well behind; stopping one then throws its
        work away and does it all again in the parent."""
        return max(self.wait_floor_s, PATIENCE * self.running_s)

    def done(self, generation: str, n_chunks: int) -> None:
        """Tell the child the index is written: `generation` with `n_chunks` chunks."""
        self._say({"generation": generation, "n_chunks": n_chunks})

    def leave(self) -> None:
        """Let the child finish on its own: it no longer ends with this process, `stop` leaves
        it running, and it is kept in `LEFT` (to be reaped, and waited for by tests)."""
        self._say({"alone": True})
        self._left = True
        LEFT.append(self.process)
        self._record("left to finish in the background")
        self._close()

    def stop(self) -> None:
        if not self._left:
            super().stop()

    def _say(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        try:
            if stdin is not None:
                stdin.write((json.dumps(message) + "\n").encode("utf-8"))
                stdin.flush()
        except (OSError, ValueError):  # gone already: `finish` says how it ended
            pass


_R = TypeVar("_R", bound=tuple[Any, ...])


def followed_pages(read: Callable[[int], list[_R]], parent: ParentWatch) -> Iterator[list[_R]]:
    """A follower's side of a build: the pages of rows `read(after)` gives (rows led by their
    row id, in row order) as the build commits them, until the parent says it is done. Rows
    committed just before that may be missed: the follower reads them in its final snapshot."""
    last = 0
    while True:
        rows = read(last)
        if rows:
            yield rows
            last = rows[-1][0]
        elif parent.heard.wait(IDLE_S):
            return


def start(
    store: Store, settings: Settings, n_chunks: int, generation: str, max_drift: float
) -> Child | None:
    """A child building the definitions of the store's `generation` of `settings`' chunking
    (`n_chunks` chunks); None when they are built in-process instead: fewer chunks than
    `MIN_CHUNKS` or usable cores than `MIN_CORES`, saved already for this generation, or no
    interpreter to start."""
    from coderag_tui.core.rank.definitions import definitions_dir, saved_generation

    global last_outcome
    directory = definitions_dir(settings)
    if n_chunks < MIN_CHUNKS:
        last_outcome = f"built in-process ({n_chunks} chunks < {MIN_CHUNKS})"
        return None
    if cores() < MIN_CORES:
        last_outcome = f"built in-process ({cores()} cores < {MIN_CORES})"
        return None
    if saved_generation(directory) == generation:
        last_outcome = "saved already"
        return None
    if getattr(sys, "frozen", False) or not sys.executable:
        last_outcome = "built in-process (no interpreter to start)"
        return None
    args = {
        "path": sys.path,
        "store": str(Path(store.path).resolve()),
        "spec_key": settings.chunking_spec.key,
        "directory": str(directory.resolve()),
        "generation": generation,
        "n_chunks": n_chunks,
        "max_drift": max_drift,
    }
    return spawn(_BOOT, args, Child, _record)


_C = TypeVar("_C", bound=Child)


def spawn(
    boot: str, args: dict[str, Any], kind: type[_C], record: Callable[[str], None]
) -> _C | None:
    """Start `python -c boot ARGS` (ARGS: `args` as JSON, with this process's pid as
    "parent") as a `kind` of child whose stdin the parent holds; None when it cannot start.
    `record` hears what happened."""
    errors = tempfile.TemporaryFile()  # noqa: SIM115 (the child's stderr: `Child` closes it)
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", boot, json.dumps({**args, "parent": os.getpid()})],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        errors.close()
        record(f"built in-process (the second process did not start: {exc})")
        return None
    record("started a second process")
    return kind(process, errors, record)


class ParentWatch:
    """The child's side of its link to the parent: the first line the parent writes (`said`,
    `heard`), and the child's end when the parent closes the pipe or dies, whatever signal
    state the child inherited (see the module docstring, "Stopping")."""

    def __init__(self, parent: int | None) -> None:
        self.parent = parent
        self.said: dict[str, Any] | None = None
        self.heard = threading.Event()
        self.alone = threading.Event()  # the parent said so: its end is no longer the child's
        self._gone = threading.Event()
        self._lock = threading.Lock()
        # Python's handler, even when SIGINT came ignored: `interrupt_main` is a no-op without.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminated)
        for target, name in ((self._read, "coderag-parent-read"), (self._poll, "coderag-parent")):
            threading.Thread(target=target, name=name, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        try:  # the file descriptor, not sys.stdin: its lock would stall the interpreter's exit
            while chunk := os.read(0, 65536):
                buffer += chunk
                while b"\n" in buffer:
                    line, _, buffer = buffer.partition(b"\n")
                    said = json.loads(line.decode("utf-8"))
                    said = said if isinstance(said, dict) else {}
                    if said.get("alone") is True:
                        self.alone.set()
                    elif self.said is None:
                        self.said = said
                        self.heard.set()
        except (OSError, ValueError):
            pass
        if not self.alone.is_set():
            self._stop()

    def _poll(self) -> None:
        while not self._gone.wait(POLL_S):
            if self.alone.is_set():
                return
            if self.parent is not None and os.getppid() != self.parent:
                if self.alone.wait(POLL_S):  # its last word may still be in the pipe
                    return
                self._stop()

    def _stop(self) -> None:
        """Interrupt the main thread (its `finally` blocks remove what was half written); exit
        outright if it is still running `GRACE_S` later."""
        with self._lock:
            if self._gone.is_set():
                return
            self._gone.set()
        import _thread

        _thread.interrupt_main()
        time.sleep(GRACE_S)
        os._exit(INTERRUPTED)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(args: dict[str, Any]) -> int:
    """The child: build and save the definitions `args` describe (see `start`)."""
    try:
        ParentWatch(args.get("parent"))
        from coderag_tui.core.index.store import Store
        from coderag_tui.core.rank.definitions import load_or_build_definitions_at
        from coderag_tui.core.rank.segments import CurrentTable

        spec_key, generation = str(args["spec_key"]), str(args["generation"])
        store = Store.open(Path(args["store"]), read_only=True)
        try:
            with store.snapshot():  # the chunks and their file table of one generation
                if store.generation(spec_key) != generation:
                    return CHANGED
                chunks = store.chunks(spec_key)
                current = CurrentTable(store, chunks)
                _ = current.table  # read now, in the snapshot
            if len(chunks) != int(args["n_chunks"]):
                return CHANGED
            load_or_build_definitions_at(
                store,
                spec_key,
                Path(args["directory"]),
                chunks,
                generation=generation,
                current=current,
                max_drift=float(args["max_drift"]),
            )
        finally:
            store.close()
    except KeyboardInterrupt:
        return INTERRUPTED
    return SAVED
