"""The resident server's wire: a Unix socket per index, one JSON request and one JSON reply.

`coderag serve` (`serve_cmd`) keeps a `core.resident.Resident` open and answers here;
`coderag search` and `coderag prompt` ask here first (`ask`) and do the work themselves when
no server answers, the server is another version, or the request needs something the server
was not opened with (`core.resident.differs`). The client resolves its settings itself (its
own flags, environment and config files) and sends them. For a search the server renders the
answer exactly as the command would have, for the client's terminal (is it a terminal, how
wide, which colours), and the client writes it out; for a prompt it sends the packed prompt
back, and the client copies, saves or prints it (the clipboard and the files are its own).

The socket lives in a folder only this user may enter (`locations.user_runtime_dir`, checked
before every use), so only this user's processes can ask. This module imports nothing heavy
at the top: `ask` runs at the start of every `coderag search` and `prompt`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import socket
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coderag_tui import __version__
from coderag_tui.core.capped import parse_json
from coderag_tui.settings import Settings

logger = logging.getLogger(__name__)

PROTOCOL = 2  # 2: the terminal is sent as rich's resolved facts, not variables
MAX_MESSAGE = 16 * 1024 * 1024  # bytes a request or reply may take (issue text can be long)
# Levels of lists and objects a request may nest: the protocol needs 3 (the message, its
# settings or request, a list in them); deeper is refused before anything reads it.
MAX_DEPTH = 8
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0  # the server's wait for a whole request, from the connection on
SEND_TIMEOUT_S = 10.0  # the server's wait for a client to take its whole reply
# The client's wait for the whole answer, after which it does the work itself: long enough
# for a re-check after a big change, short enough that a stuck server costs one wait.
ASK_TIMEOUT_S = 30.0


@dataclasses.dataclass(frozen=True, kw_only=True)
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
    """How this process's output looks: each stream's facts, as rich resolves them here (the
    server renders with them and never reads its own environment for a client)."""
    from coderag_tui.cli.output import TerminalFacts

    return {
        "stdout": TerminalFacts.of(sys.stdout).wire(),
        "stderr": TerminalFacts.of(sys.stderr).wire(),
    }


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
    """The server's reply when this run may be served (no --from or --diff, no --no-server, a
    local index) and a server answers; else None, and the command does the work itself."""
    asks_code = args.from_location or getattr(args, "diff", None) is not None
    if asks_code or args.no_server or settings.backend != "local":
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
    deadline = time.monotonic() + ASK_TIMEOUT_S
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(CONNECT_TIMEOUT_S)
            conn.connect(str(path))
            conn.settimeout(_left(deadline))  # sendall's timeout is for the whole message
            conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
            conn.shutdown(socket.SHUT_WR)
            reply = parse_json(_read_all(conn, deadline))
    except TimeoutError:
        print(
            f"coderag: the server for this index did not answer within {ASK_TIMEOUT_S:g} s; "
            "answering in this process.",
            file=sys.stderr,
        )
        return None
    except (OSError, ValueError) as exc:
        # no server (a socket left by a killed one), a server too busy to take a request,
        # or a broken reply
        logger.debug("the server did not answer (%s): answering in this process", exc)
        return None
    if not isinstance(reply, dict) or "code" not in reply:
        return None  # declined, or another version's reply
    data = reply.get("data")
    return Reply(
        stdout=str(reply.get("stdout", "")),
        stderr=str(reply.get("stderr", "")),
        code=int(reply["code"]),
        data=data if isinstance(data, dict) else None,
    )


def _left(deadline: float) -> float:
    """Seconds until `deadline` (a `time.monotonic` time); TimeoutError when it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


def _read_all(conn: socket.socket, deadline: float) -> bytes:
    """Every byte until the peer's end, all of it by `deadline` (TimeoutError if not), at most
    `MAX_MESSAGE` (ValueError): a peer sending a byte at a time cannot hold the reader longer."""
    parts: list[bytes] = []
    size = 0
    while True:
        conn.settimeout(_left(deadline))
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ValueError("message too long")
        parts.append(chunk)


# ------------------------------------------------------------------------------- the server
class BadRequest(Exception):
    """A request the server will not read: too slow, too long, too deep or not a JSON object.
    The message says which, for the client (`decline`) and the server's log."""


def read_request(conn: socket.socket) -> dict[str, Any] | None:
    """The request on `conn`, all of it within `READ_TIMEOUT_S`; None when the client sent
    nothing (a probe, or it went away); BadRequest when it is not a request to read."""
    try:
        data = _read_all(conn, time.monotonic() + READ_TIMEOUT_S)
    except TimeoutError:
        raise BadRequest(f"the request did not arrive within {READ_TIMEOUT_S:g} s") from None
    except ValueError:
        raise BadRequest(f"the request is longer than {MAX_MESSAGE >> 20} MiB") from None
    except OSError:
        return None
    if not data.strip():
        return None
    try:
        message = json.loads(data)
    except RecursionError:  # json recurses per level: a deep enough request ends here
        message = None
    except ValueError:  # not JSON, or not UTF-8
        raise BadRequest("the request is not JSON") from None
    if message is None or _deeper_than(message, MAX_DEPTH):
        raise BadRequest(f"the request is nested more than {MAX_DEPTH} levels deep")
    if not isinstance(message, dict):
        raise BadRequest("the request is not a JSON object")
    return message


def _deeper_than(value: Any, levels: int) -> bool:
    """Does `value` nest lists and objects more than `levels` deep? (Looks no deeper.)"""
    if isinstance(value, dict):
        inner: Any = value.values()
    elif isinstance(value, list):
        inner = value
    else:
        return False
    return levels <= 0 or any(_deeper_than(item, levels - 1) for item in inner)


def send(conn: socket.socket, reply: Mapping[str, Any]) -> None:
    """Write `reply`, all of it within `SEND_TIMEOUT_S`: a client that went away (Ctrl-C) or
    does not read loses it, and holds nothing longer."""
    with contextlib.suppress(OSError):
        conn.settimeout(SEND_TIMEOUT_S)
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
