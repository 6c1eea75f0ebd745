"""The resident server's wire: a Unix socket per index, one JSON request and one JSON reply.

`coderag serve` (`serve_cmd`) keeps a `core.resident.Resident` open and answers here;
`coderag search` and `coderag prompt` ask here first (`ask`) and do the work themselves when
no server answers, the server is another version, or the request needs something the server
was not opened with (`core.resident.differs`). The client resolves its settings itself (its
own flags, environment and config files) and sends them. For a search the server renders the
answer exactly as the command would have, for the client's terminal (is it a terminal, how
wide, which colours), and the client writes it out; for a prompt it sends the packed prompt
back, and the client copies, saves or prints it (the clipboard and the files are its own).

The socket lives in a folder only this user may enter (`settings.user_runtime_dir`, checked
before every use), so only this user's processes can ask. This module imports nothing heavy
at the top: `ask` runs at the start of every `coderag search` and `prompt`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import shutil
import socket
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from coderag_tui import __version__
from coderag_tui.settings import Settings

PROTOCOL = 1
MAX_MESSAGE = 16 * 1024 * 1024  # bytes a request or reply may take (issue text can be long)
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0  # the server waits this long for a request's bytes
# The terminal's variables that decide how rich renders (colour, width, dumb terminals).
TERMINAL_ENV = (
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLUMNS",
    "LINES",
)


@dataclasses.dataclass(frozen=True)
class Reply:
    """What the command printed on the server and its exit code, or (`data`) what it made
    for this process to deliver (a prompt is copied by the asking terminal, not the server)."""

    stdout: str
    stderr: str
    code: int
    data: dict[str, Any] | None = None

    def emit(self) -> int:
        sys.stderr.write(self.stderr)
        sys.stderr.flush()
        sys.stdout.write(self.stdout)
        sys.stdout.flush()
        return self.code


def socket_path(settings: Settings) -> Path:
    return settings.server_path.with_name(settings.server_path.name + ".sock")


def cookie_dir(settings: Settings) -> Path:
    return settings.server_path.with_name(settings.server_path.name + ".sync")


def private_folder(folder: Path, *, create: bool) -> str:
    """ "" when `folder` is a real folder of this user that no one else may enter (made so
    when `create`), else why it cannot hold a socket."""
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            return f"{folder} cannot be made ({exc.strerror or exc})"
    try:
        st = folder.lstat()
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror or exc})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder"
    if st.st_uid != os.getuid():
        return f"{folder} belongs to another user"
    if st.st_mode & 0o077:
        return f"{folder} may be entered by other users (it must be mode 700)"
    return ""


def settings_wire(settings: Settings) -> dict[str, Any]:
    """Every setting as JSON (paths as strings); `Settings(**wire)` reads it back."""
    return {
        f.name: str(v) if isinstance(v, Path) else v
        for f in dataclasses.fields(Settings)
        for v in (getattr(settings, f.name),)
    }


def terminal() -> dict[str, Any]:
    """How this process's output looks: the facts rich decides colours and width from."""
    out_tty = sys.stdout.isatty()
    env = {k: os.environ[k] for k in TERMINAL_ENV if k in os.environ}
    if out_tty and "COLUMNS" not in env:
        env["COLUMNS"] = str(shutil.get_terminal_size().columns)
    return {"stdout_tty": out_tty, "stderr_tty": sys.stderr.isatty(), "env": env}


# ------------------------------------------------------------------------------- the client
def add_no_server_arg(parser: argparse.ArgumentParser, doing: str) -> None:
    """`--no-server`: `doing` ("search", "pack") in this process even when a server runs."""
    parser.add_argument(
        "--no-server",
        dest="no_server",
        action="store_true",
        help=f"{doing} in this process even when `coderag serve` runs for this repository",
    )


def ask_first(
    args: argparse.Namespace, settings: Settings, command: str, request: Mapping[str, Any]
) -> Reply | None:
    """The server's reply when this run may be served (no --from, no --no-server, a local
    index) and a server answers; else None, and the command does the work itself."""
    if args.from_location or args.no_server or settings.backend != "local":
        return None
    return ask(settings, command, request)


def ask(settings: Settings, command: str, request: Mapping[str, Any]) -> Reply | None:
    """The reply of the server of `settings`' index to `command`, or None when there is no
    server to ask or it declines (the caller then answers by itself)."""
    path = socket_path(settings)
    # a folder this user may not enter, or another user's: never a server to ask
    if not os.path.exists(path) or private_folder(path.parent, create=False):
        return None
    message = {
        "protocol": PROTOCOL,
        "version": __version__,
        "command": command,
        "settings": settings_wire(settings),
        "request": dict(request),
        "terminal": terminal(),
    }
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(CONNECT_TIMEOUT_S)
            conn.connect(str(path))
            conn.settimeout(None)  # a re-check after a big change may take a while
            conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
            conn.shutdown(socket.SHUT_WR)
            reply = json.loads(_read_all(conn))
    except (OSError, ValueError):
        return None  # no server (a socket left by a killed one), or a broken reply
    if not isinstance(reply, dict) or "code" not in reply:
        return None  # declined, or another version's reply
    data = reply.get("data")
    return Reply(
        str(reply.get("stdout", "")),
        str(reply.get("stderr", "")),
        int(reply["code"]),
        data if isinstance(data, dict) else None,
    )


def _read_all(conn: socket.socket) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := conn.recv(1 << 16):
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ValueError("message too long")
        parts.append(chunk)
    return b"".join(parts)


# ------------------------------------------------------------------------------- the server
class _Stream(io.StringIO):
    """Captured output that says it is a terminal when the client's is one."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@contextlib.contextmanager
def as_client(facts: Mapping[str, Any]) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Capture stdout and stderr as the client's terminal would show them.

    Output goes to buffers that answer `isatty` as the client's streams did, and the
    terminal's variables (`TERMINAL_ENV`) are the client's while the block runs. Both are
    process-wide: the server runs one request at a time, and prints nothing else meanwhile.
    """
    env = facts.get("env") if isinstance(facts.get("env"), dict) else {}
    assert isinstance(env, dict)
    saved = {k: os.environ.get(k) for k in TERMINAL_ENV}
    out = _Stream(bool(facts.get("stdout_tty")))
    err = _Stream(bool(facts.get("stderr_tty")))
    try:
        for key in TERMINAL_ENV:
            value = env.get(key)
            if isinstance(value, str) and "\0" not in value:
                os.environ[key] = value
            else:
                os.environ.pop(key, None)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def read_request(conn: socket.socket) -> dict[str, Any] | None:
    """The request on `conn`, or None when it is not one (too long, slow or not JSON)."""
    conn.settimeout(READ_TIMEOUT_S)
    try:
        message = json.loads(_read_all(conn))
    except (OSError, ValueError):
        return None
    return message if isinstance(message, dict) else None


def send(conn: socket.socket, reply: Mapping[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the client went away (Ctrl-C): nothing to tell it
        conn.sendall(json.dumps(reply).encode("utf-8"))


def decline(reason: str) -> dict[str, Any]:
    return {"declined": reason}


def compatible(message: Mapping[str, Any]) -> str:
    """ "" when the request speaks this server's protocol and version, else why not."""
    if message.get("protocol") != PROTOCOL or message.get("version") != __version__:
        return f"another coderag version asked ({message.get('version')!r})"
    if not isinstance(message.get("settings"), dict) or not isinstance(
        message.get("request"), dict
    ):
        return "the request is incomplete"
    return ""
