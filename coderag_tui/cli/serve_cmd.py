"""`coderag serve [PATH]`: keep the index open and answer `coderag search` and `coderag
prompt` from memory.

A fresh `coderag search` on a big repository spends most of its time before ranking: the
interpreter and imports, a check of every file, loading the saved index. `serve` pays that
once, watches the repository's files (`core.index.watch`) and answers each search or prompt
that asks its socket (`cli.server`) after making sure nothing changed, or re-checking what
did (`core.resident`). A prompt is packed here and delivered (copied, saved or printed) by
the asking process. It runs in the foreground until Ctrl-C (or SIGTERM), quiet after its
first line (a line per answer with --verbose); `--no-server` on either command bypasses it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from coderag_tui.cli.common import (
    INDEX_SETTINGS,
    UserError,
    add_ranking_args,
    add_repo_args,
    add_setting_flags,
    background_embedding,
    carry_dense_on,
    settings_from_args,
)
from coderag_tui.cli.output import Output, TerminalFacts
from coderag_tui.cli.render import loading_status, say
from coderag_tui.cli.server import (
    BadRequest,
    compatible,
    cookie_dir,
    decline,
    private_folder,
    read_request,
    send,
    socket_path,
)
from coderag_tui.core.bounded import TookTooLong, within
from coderag_tui.core.echo import echo
from coderag_tui.core.records import Scope
from coderag_tui.core.visible import one_line, visible
from coderag_tui.settings import Settings, SettingsError

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine
    from coderag_tui.core.resident import Resident

STOP = "stop"  # the command `coderag serve --stop` sends
ACCEPT_POLL_S = 0.5  # how often the accept loop looks at the stop flag
QUERY_SHOWN = 60  # characters of a query in the server's log line
# Connections read at once; one more is closed at once, and its client answers by itself.
MAX_CONNECTIONS = 8
# How long a request waits for the engine while another answer works, and how long one answer
# may work before its client is told to answer by itself (within the client's own wait,
# `server.ASK_TIMEOUT_S`): a prompt over a hostile file took minutes, and every request
# behind it waited its client's whole wait. Either way the client answers in its own process.
TURN_WAIT_S = 5.0
MAX_ANSWER_S = 25.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="keep the index open and answer `coderag search` and `prompt` from memory",
        description=(
            "Open the repository's index once, watch its files, and answer every `coderag "
            "search` and `coderag prompt` run for it from memory (the index is re-checked "
            "only when a file changed). Runs until Ctrl-C; quiet after its first line "
            "unless --verbose."
        ),
    )
    add_repo_args(parser)
    parser.add_argument(
        "--stop",
        action="store_true",
        help="stop the server that answers for this repository's index, and exit",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print a line per answer (what, exit code, time, whether files were re-checked)",
    )
    add_ranking_args(parser.add_argument_group("ranking"))
    add_setting_flags(parser.add_argument_group("chunking and files"), INDEX_SETTINGS)


def run(args: argparse.Namespace) -> int:
    explicit: set[str] = set()
    settings = settings_from_args(args, explicit=explicit)
    if settings.backend != "local":
        raise UserError(
            f"coderag serve keeps a local index; with backend {settings.backend} the "
            "server already holds it (set backend = local to serve)."
        )
    path = socket_path(settings)
    if args.stop:
        return _stop(settings, path)
    problem = private_folder(path.parent, create=True)
    if problem:
        raise UserError(f"coderag serve needs a private folder for its socket: {problem}.")
    if _answers(path):
        raise UserError(f"a coderag server already answers for this index ({path}).")
    from coderag_tui.core.index.store import StoreError
    from coderag_tui.core.resident import Resident

    interactive = sys.stderr.isatty()
    try:
        with loading_status(interactive=interactive) as (progress, embed_progress):
            resident, note = Resident.open(
                settings,
                cookie_dir(settings),
                dense=args.dense,
                explicit=frozenset(explicit),
                progress=progress,
                embed_progress=embed_progress,
                background=background_embedding(settings),
            )
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    carry_dense_on(settings, resident.engine)
    with resident, _listening(path) as listener, _stopped_by_term() as stop:
        if note:
            say(note)
        lexical = resident.engine.lexical
        chunks = len(lexical.chunks) if lexical is not None else 0
        dense = resident.engine.dense
        said = dense.describe() if dense is not None else {}
        model = f"dense {said.get('model')}" if said.get("model") else "no dense"
        say(
            f"serving {visible(str(settings.repo_root))} ({chunks:,} chunks, {model}) on "
            f"{path}: `coderag search` and `prompt` for this repository are answered here; "
            "Ctrl-C stops."
        )
        _serve(resident, listener, stop, verbose=args.verbose)
    return 0


def _stop(settings: Settings, path: Any) -> int:
    """`coderag serve --stop`: ask the server of this index to stop."""
    from coderag_tui.cli.server import ask

    if not _answers(path):
        raise UserError(f"no coderag server answers for this index ({path}).")
    if ask(settings, STOP, {}) is None:
        raise UserError(
            "the server did not stop (another coderag version, or it went away): stop it with "
            "Ctrl-C in its terminal, or kill its process."
        )
    say("the server for this index was asked to stop.")
    return 0


def _answers(path: Any) -> bool:
    """Does a live server listen on `path`? (A socket left by a killed one does not.)"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def _listening(path: Any) -> Iterator[socket.socket]:
    """A socket bound at `path` (a stale one replaced), removed again at the end."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            listener.bind(str(path))
        except OSError as exc:
            raise UserError(
                f"coderag serve cannot listen on {path} ({exc.strerror or exc}): set "
                "XDG_RUNTIME_DIR or TMPDIR to a short folder of yours."
            ) from None
        path.chmod(0o600)
        listener.listen(16)
        listener.settimeout(ACCEPT_POLL_S)
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def _stopped_by_term() -> Iterator[threading.Event]:
    """An event set by SIGTERM (Ctrl-C raises KeyboardInterrupt as usual)."""
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    before = signal.signal(signal.SIGTERM, on_term)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, before)


class _Log:
    """The server's own lines, on its stderr, a whole line at a time: lines come from the
    accept loop and every connection's thread."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._stream.write(f"coderag: {echo(message)}\n")
            self._stream.flush()


@dataclasses.dataclass
class _Serving:
    """What every connection's thread shares: the engine, whose turn it is, the free slots."""

    resident: Resident
    stop: threading.Event
    log: _Log
    verbose: bool
    turn: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    slots: threading.BoundedSemaphore = dataclasses.field(
        default_factory=lambda: threading.BoundedSemaphore(MAX_CONNECTIONS)
    )

    def take_turn(self) -> str:
        """Wait for the engine, at most `TURN_WAIT_S`: "" when this request has it, else why
        not (the server stops, or another answer still works)."""
        deadline = time.monotonic() + TURN_WAIT_S
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return f"another answer still works after {TURN_WAIT_S:g} s"
            if self.turn.acquire(timeout=min(ACCEPT_POLL_S, left)):
                if not self.stop.is_set():
                    return ""
                self.turn.release()
        return "the server is stopping"


def _serve(
    resident: Resident, listener: socket.socket, stop: threading.Event, *, verbose: bool
) -> None:
    """Accept connections until `stop`; each is read in a thread of its own.

    Reading is where a client can be slow, so it happens beside the accept loop and every
    other connection, each within its deadline (`read_request`); only a whole request takes a
    turn on the engine, one at a time (the engine is not for two at once),
    and its reply is sent after the turn. At most `MAX_CONNECTIONS` are read at once.
    """
    serving = _Serving(resident, stop, _Log(sys.stderr), verbose)
    try:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                note = resident.watch_note()
                if note:
                    serving.log(note)
                if not resident.settings.repo_root.is_dir():
                    serving.log("the repository folder is gone: the server stops.")
                    return
                continue
            if not serving.slots.acquire(blocking=False):
                conn.close()  # its client answers by itself, at once
                if verbose:
                    serving.log(f"{MAX_CONNECTIONS} connections are open: one more was closed.")
                continue
            threading.Thread(
                target=_connection, args=(serving, conn), name="coderag-connection", daemon=True
            ).start()
    finally:
        stop.set()
        # an answer under way ends before the engine closes, unless it was given up already
        # (it runs past MAX_ANSWER_S); requests still waiting are left to their clients (a
        # second Ctrl-C stops waiting)
        serving.turn.acquire(timeout=MAX_ANSWER_S)
        shutil.rmtree(cookie_dir(resident.settings), ignore_errors=True)


def _connection(serving: _Serving, conn: socket.socket) -> None:
    """Read one request, answer it in its turn, send the reply; then free the slot."""
    try:
        with conn:
            try:
                message = read_request(conn)
            except BadRequest as exc:
                send(conn, decline(str(exc)))
                if serving.verbose:
                    serving.log(f"refused a request: {exc}.")
                return
            if message is None:
                return  # a probe (`_answers`), or a client gone
            if message.get("command") == STOP and not compatible(message):
                send(conn, {"code": 0, "stdout": "", "stderr": ""})  # before the process ends
                serving.stop.set()
                serving.log("asked to stop (coderag serve --stop): the server stops.")
                return
            busy = serving.take_turn()
            if busy:
                send(conn, decline(busy))
                if serving.verbose:
                    serving.log(f"left a request to its own process: {busy}.")
                return

            def answer() -> tuple[dict[str, Any], str]:
                try:
                    return _handle(serving.resident, message)
                except Exception as exc:  # a bug must cost one answer, not the server
                    return _failed(exc), f"failed to answer a request ({exc!r})."
                finally:
                    serving.turn.release()  # when the work ends, however long it took

            try:
                reply, said = within(answer, MAX_ANSWER_S, "coderag-answer")
            except TookTooLong:
                why = f"the answer took longer than {MAX_ANSWER_S:g} s"
                reply = decline(why)
                said = f"left a request to its own process: {why} (its work goes on until it ends)."
            if said and serving.verbose:
                serving.log(said)
            send(conn, reply)
    finally:
        serving.slots.release()


def _failed(exc: Exception) -> dict[str, Any]:
    why = visible(f"{type(exc).__name__}: {exc}")
    return {"stdout": "", "stderr": f"coderag: the server failed to answer ({why}).\n", "code": 1}


def _handle(resident: Resident, message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The reply to one request, and the line the server's log shows for it."""
    started = time.perf_counter()
    reason = compatible(message)
    command = message.get("command")
    handler = HANDLERS.get(command) if isinstance(command, str) else None
    if not reason and handler is None:
        reason = f"this server answers searches and prompts only, not {command!r}"
    settings: Settings | None = None
    if not reason:
        dense = bool(message["request"].get("dense"))
        settings, reason = _request_settings(resident, message["settings"], dense=dense)
    if reason or settings is None or handler is None:
        return decline(reason), f"left a request to its own process: {reason}."
    request = message["request"]
    checks_before = dataclasses.replace(resident.checks)
    try:
        reply = handler(resident, settings, request, message.get("terminal") or {})
    except Exception as exc:  # a bug must cost one answer, not the server
        reply = _failed(exc)
    checked = "trusted"
    if resident.checks.checked > checks_before.checked:
        by_path = resident.checks.by_path > checks_before.by_path
        checked = "checked: the changed paths" if by_path else "checked: every file"
    query = one_line(str(request.get("query") or request.get("task") or "")[: QUERY_SHOWN + 1])
    shown = query if len(query) <= QUERY_SHOWN else query[: QUERY_SHOWN - 1] + "…"
    ms = (time.perf_counter() - started) * 1000.0
    return reply, f"{command} {shown!r}: exit {reply['code']} in {ms:.0f} ms (index {checked})."


def _request_settings(
    resident: Resident, wire: dict[str, Any], *, dense: bool
) -> tuple[Settings | None, str]:
    from coderag_tui.core.resident import differs

    try:
        theirs = Settings(**wire)
    except (SettingsError, TypeError) as exc:
        return None, f"its settings do not read ({exc})"
    different = differs(resident.settings, theirs, dense=dense)
    if different:
        return None, f"it asks for another {different} than the server was opened with"
    return theirs, ""


def _served(
    resident: Resident,
    settings: Settings,
    request: dict[str, Any],
    facts: dict[str, Any],
    work: Callable[[Engine, Output], tuple[int, dict[str, Any] | None]],
) -> dict[str, Any]:
    """Run `work` (exit code, data for the client) with the resident engine, holding the
    stages the request asks for, rendering to buffers that look like the client's terminal
    (`facts`); an error is one sentence on the client's stderr, as the command says it."""
    from coderag_tui.core.index.store import StoreError

    output = Output.buffered(
        TerminalFacts.from_wire(facts.get("stdout")), TerminalFacts.from_wire(facts.get("stderr"))
    )
    data: dict[str, Any] | None = None
    try:
        with resident.serving(
            settings, dense=bool(request.get("dense")), rerank=settings.rerank
        ) as engine:
            code, data = work(engine, output)
    except (UserError, StoreError) as exc:
        output.say(str(exc))
        code = exc.exit_code if isinstance(exc, UserError) else 2
    out, err = output.text()
    return {"stdout": out, "stderr": err, "code": code, "data": data}


def _search(
    resident: Resident, settings: Settings, request: dict[str, Any], facts: dict[str, Any]
) -> dict[str, Any]:
    """Search and print as `coderag search` does; the client writes the output out."""
    from coderag_tui.cli.search_cmd import MODES, answer

    mode = request.get("mode")
    args = argparse.Namespace(
        mode=mode if mode in MODES else "all",
        files=bool(request.get("files")),
        json=bool(request.get("json")),
        from_location=None,
        diff=None,
    )
    query = str(request.get("query", ""))
    scope = _scope(request)
    return _served(
        resident,
        settings,
        request,
        facts,
        lambda engine, output: (
            answer(args, settings, engine, query, scope=scope, output=output),
            None,
        ),
    )


def _scope(request: dict[str, Any]) -> Scope:
    """The files a request ranks (its client checked the patterns against the repository)."""
    return Scope(
        tuple(str(p) for p in request.get("include") or []),
        tuple(str(p) for p in request.get("exclude") or []),
    )


def _prompt(
    resident: Resident, settings: Settings, request: dict[str, Any], facts: dict[str, Any]
) -> dict[str, Any]:
    """Pack the prompt; the asking process copies, saves or prints it (`prompt_cmd.deliver`)."""
    from coderag_tui.cli.prompt_cmd import compose, pack_with
    from coderag_tui.core.engine import PromptRequest

    asked = PromptRequest(
        str(request.get("task") or ""),
        pinned=tuple(str(p) for p in request.get("pin") or []),
        excluded=tuple(str(p) for p in request.get("exclude_chunks") or []),
    )
    scope = _scope(request)

    def work(engine: Engine, output: Output) -> tuple[int, dict[str, Any] | None]:
        composed = compose(*pack_with(engine, settings, asked, scope=scope))
        return 0, {"text": composed.text, "record": composed.record, "lines": composed.lines}

    return _served(resident, settings, request, facts, work)


# command -> what answers it: (resident, settings, request, the client's terminal) -> reply
HANDLERS: dict[str, Callable[[Resident, Settings, dict[str, Any], dict[str, Any]], dict[str, Any]]]
HANDLERS = {"search": _search, "prompt": _prompt}
