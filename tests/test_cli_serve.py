"""`coderag serve`: a real server process answers `coderag search` from memory with the same
output a fresh process prints, sees edits, leaves requests it cannot serve to the client,
and goes away cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui import __version__
from coderag_tui.cli import main
from coderag_tui.cli import server as wire
from coderag_tui.cli.server import socket_path
from coderag_tui.settings import Settings

START_TIMEOUT_S = 60.0


class Server:
    """`coderag serve` in a subprocess, its stderr read line by line."""

    def __init__(self, args: list[str]) -> None:
        env = {**os.environ, "CODERAG_EMBED_BACKEND": "none"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coderag_tui", "serve", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = START_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.log.append(line)
            if text in line:
                return line
        raise AssertionError(f"{text!r} never came; the server said: {self.log}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


@pytest.fixture
def common(tiny_repo: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("CODERAG_EMBED_BACKEND", "none")  # as the server's
    return [str(tiny_repo), "--index-dir", str(index_dir), "--chunk-lines", "8"]


@pytest.fixture
def server(common: list[str]) -> Iterator[Server]:
    running = Server([*common, "--no-dense", "--verbose"])
    running.wait_for("serving")
    yield running
    running.stop()


def search(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["search", *args])
    out, err = capsys.readouterr()
    return code, out, err


def rankings(out: str) -> dict[str, list[tuple[str, int, int]]]:
    data = json.loads(out)
    return {
        name: [(h["path"], h["start_line"], h["end_line"]) for h in ranking["hits"]]
        for name, ranking in data["rankings"].items()
    }


def test_the_server_answers_with_what_a_fresh_process_prints(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str]
) -> None:
    ask = ["refund transaction_id", *common, "--no-dense", "--k", "3"]
    code, served, served_err = search(capsys, *ask, "--json")
    assert code == 0
    server.wait_for("search 'refund transaction_id': exit 0")
    local_code, local, local_err = search(capsys, *ask, "--json", "--no-server")
    assert local_code == 0
    assert rankings(served) == rankings(local)
    assert rankings(served)["bm25"][0][0] == "shop/payment.py"
    assert served_err == local_err  # the same notes, once each
    # the table too, line for line but for the stage timings
    code, table, _ = search(capsys, *ask)
    _, local_table, _ = search(capsys, *ask, "--no-server")
    assert table.split("stage timings")[0] == local_table.split("stage timings")[0]


ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Two clients: a narrow terminal in colour, and a pipe (from a wide terminal that asks for
# no colour), which gets plain lines.
NARROW_COLOUR = {"FORCE_COLOR": "1", "COLUMNS": "50", "TERM": "xterm-256color"}
WIDE_PLAIN = {"NO_COLOR": "1", "COLUMNS": "120", "TERM": "xterm-256color"}
TERMINAL_VARIABLES = ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "TERM", "TTY_COMPATIBLE", "COLORTERM")


def as_terminal(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name in TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def widest(text: str) -> int:
    """The widest line of the tables in `text` (a note beside them is never wrapped)."""
    lines = ANSI.sub("", text).splitlines()
    return max(len(line) for line in lines if line[:1] in tuple("┏┃┡│└"))


def plain(text: str) -> bool:
    """Plain lines for a pipe: no escape sequence, no box drawing, a hit whole on its line."""
    return "\x1b[" not in text and not set(text) & set("┏┃┡│└") and "shop/payment.py:" in text


def test_two_terminals_get_each_their_own_rendering_from_one_server(
    capsys: pytest.CaptureFixture[str],
    server: Server,
    common: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ask = ["refund transaction_id", *common, "--no-dense", "--k", "3"]
    shown: list[str] = []
    for env in (NARROW_COLOUR, WIDE_PLAIN):
        as_terminal(monkeypatch, env)
        code, table, _ = search(capsys, *ask)
        assert code == 0
        _, local_table, _ = search(capsys, *ask, "--no-server")
        assert table.split("stage timings")[0] == local_table.split("stage timings")[0]
        shown.append(table)
    narrow, wide = shown
    server.wait_for("search 'refund transaction_id': exit 0")
    assert "\x1b[" in narrow and widest(narrow) <= 50
    assert plain(wide)


def test_a_served_answer_leaves_the_servers_environment_and_streams_alone(
    monkeypatch: pytest.MonkeyPatch, tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    """The server renders for each client without lending it its own `os.environ` or
    `sys.stdout`: a thread watching them while two clients are answered sees no change."""
    from coderag_tui.cli.serve_cmd import _handle
    from coderag_tui.core.resident import Resident

    settings = Settings(repo=tiny_repo, index_dir=index_dir, chunk_lines=8, embed_backend="none")
    messages = []
    for env in (NARROW_COLOUR, WIDE_PLAIN):
        as_terminal(monkeypatch, env)
        messages.append(
            {
                "protocol": wire.PROTOCOL,
                "version": __version__,
                "command": "search",
                "settings": wire.settings_wire(settings),
                "request": {"query": "refund transaction_id", "mode": "all", "dense": False},
                "terminal": wire.terminal(),
            }
        )
    as_terminal(monkeypatch, {"COLUMNS": "77"})  # the server's own terminal
    before = (dict(os.environ), sys.stdout, sys.stderr)
    seen: set[bool] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.add((dict(os.environ), sys.stdout, sys.stderr) == before)

    resident, _ = Resident.open(settings, tmp_path / "cookies", dense=False)
    watcher = threading.Thread(target=watch)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the watcher looks often while the answers are made
    try:
        with resident:
            watcher.start()
            replies = [_handle(resident, message)[0] for message in messages]
    finally:
        done.set()
        watcher.join()
        sys.setswitchinterval(switch)
    assert seen == {True}
    narrow, wide = (str(reply["stdout"]) for reply in replies)
    assert [reply["code"] for reply in replies] == [0, 0]
    assert "\x1b[" in narrow and widest(narrow) <= 50
    assert plain(wide)


def test_an_edit_is_seen_by_the_next_search(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str], tiny_repo: Path
) -> None:
    search(capsys, "charge card", *common, "--no-dense", "--json")
    (tiny_repo / "shop" / "ledger.py").write_text("def reconcile_ledger():\n    return []\n")
    code, out, _ = search(capsys, "reconcile_ledger", *common, "--no-dense", "--json")
    assert code == 0
    assert rankings(out)["bm25"][0][0] == "shop/ledger.py"
    server.wait_for("search 'reconcile_ledger': exit 0")


def test_a_request_for_another_chunking_is_answered_by_the_client_itself(
    capsys: pytest.CaptureFixture[str], server: Server, tiny_repo: Path, index_dir: Path
) -> None:
    other = [str(tiny_repo), "--index-dir", str(index_dir), "--chunk-lines", "12"]
    code, out, _ = search(capsys, "refund", *other, "--no-dense", "--json")
    assert code == 0
    assert rankings(out)["bm25"][0][0] == "shop/payment.py"
    server.wait_for("left a request to its own process: it asks for another chunk_lines")


def test_one_server_per_index_and_sigterm_removes_the_socket(
    server: Server, common: list[str], tiny_repo: Path, index_dir: Path
) -> None:
    second = Server([*common, "--no-dense"])
    assert second.proc.wait(timeout=60) == 2
    second.wait_for("a coderag server already answers for this index")
    path = socket_path(Settings(repo=tiny_repo, index_dir=index_dir))
    assert path.exists()
    assert server.stop() == 0
    assert not path.exists()


def test_a_socket_left_by_a_killed_server_is_ignored_then_replaced(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str]
) -> None:
    server.proc.kill()
    server.proc.wait(timeout=30)
    code, out, _ = search(capsys, "refund", *common, "--no-dense", "--json")
    assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
    again = Server([*common, "--no-dense"])
    try:
        again.wait_for("serving")
    finally:
        assert again.stop() == 0


def test_serve_refuses_a_runtime_folder_others_may_enter(
    capsys: pytest.CaptureFixture[str], common: list[str], private_runtime_dir: Path
) -> None:
    folder = private_runtime_dir / "coderag"
    folder.mkdir()
    folder.chmod(0o777)
    code = main(["serve", *common, "--no-dense"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "may be entered by other users" in err
    assert len(err.strip().splitlines()) == 1


def test_a_prompt_is_packed_by_the_server_and_saved_by_the_asking_process(
    capsys: pytest.CaptureFixture[str],
    server: Server,
    common: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ask = ["prompt", "Why is a refund not idempotent?", *common, "--no-dense", "--budget", "600"]
    code = main([*ask, "--json"])
    served, served_err = capsys.readouterr()
    assert code == 0
    server.wait_for("prompt 'Why is a refund not idempotent?': exit 0")
    assert main([*ask, "--json", "--no-server"]) == 0
    local, local_err = capsys.readouterr()
    a, b = json.loads(served), json.loads(local)
    assert a["prompt"] == b["prompt"] and "shop/payment.py" in a["prompt"]
    assert a["blocks"] == b["blocks"] and a["tokens"] == b["tokens"]
    assert served_err == local_err

    # --out is the client's: a relative path lands in the client's folder, not the server's
    monkeypatch.chdir(tmp_path)
    assert main([*ask, "--out", "prompt.md"]) == 0
    capsys.readouterr()
    assert (tmp_path / "prompt.md").read_text(encoding="utf-8") == a["prompt"]


def test_the_server_stops_when_its_repository_is_gone(
    server: Server, tiny_repo: Path, index_dir: Path
) -> None:
    shutil.rmtree(tiny_repo)
    server.wait_for("the repository folder is gone: the server stops.")
    assert server.proc.wait(timeout=30) == 0
    assert not socket_path(Settings(repo=tiny_repo, index_dir=index_dir)).exists()


def test_serve_stop_stops_the_running_server(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str]
) -> None:
    assert main(["serve", *common, "--stop"]) == 0
    _, err = capsys.readouterr()
    assert "asked to stop" in err
    server.wait_for("asked to stop (coderag serve --stop): the server stops.")
    assert server.proc.wait(timeout=30) == 0
    assert main(["serve", *common, "--stop"]) == 2  # nothing answers any more
    _, err = capsys.readouterr()
    assert "no coderag server answers for this index" in err


def test_a_long_runtime_folder_gets_a_short_private_socket_path(
    capsys: pytest.CaptureFixture[str],
    common: list[str],
    tiny_repo: Path,
    index_dir: Path,
    private_runtime_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    long = private_runtime_dir / ("r" * 40) / ("u" * 40)
    long.mkdir(parents=True)
    assert len(str(long)) >= 90
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long))
    short = private_runtime_dir / "tmp"  # the temporary folder the short path is made in
    short.mkdir()
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    path = socket_path(Settings(repo=tiny_repo, index_dir=index_dir))
    assert len(os.fsencode(str(path))) <= 103
    assert path.parent.parent == short
    running = Server([*common, "--no-dense", "--verbose"])
    try:
        running.wait_for("serving")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        code, out, _ = search(capsys, "refund", *common, "--no-dense", "--json")
        assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
        running.wait_for("search 'refund': exit 0")
    finally:
        assert running.stop() == 0
    # another runtime folder, as long, is another server's
    other = private_runtime_dir / ("s" * 40) / ("u" * 40)
    other.mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(other))
    assert socket_path(Settings(repo=tiny_repo, index_dir=index_dir)) != path


# ------------------------------------------------------------------ requests that are not
def connected(common: list[str]) -> socket.socket:
    """A raw connection to the server of `common`'s index."""
    settings = Settings(repo=Path(common[0]), index_dir=Path(common[2]))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(START_TIMEOUT_S)
    conn.connect(str(socket_path(settings)))
    return conn


def reply_to(conn: socket.socket, data: bytes) -> bytes:
    """What the server answers to `data` (b"" when it only closes the connection)."""
    with conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        parts = []
        while chunk := conn.recv(1 << 16):
            parts.append(chunk)
    return b"".join(parts)


def nested(depth: int) -> bytes:
    """A request of this version whose query is a list nested `depth` deep."""
    inner = b"[" * depth + b"]" * depth
    head = json.dumps({"protocol": wire.PROTOCOL, "version": __version__, "command": "search"})
    return head[:-1].encode() + b', "settings": {}, "request": {"query": ' + inner + b"}}"


def read(data: bytes) -> dict[str, object] | None:
    """What `read_request` makes of `data` sent whole."""
    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        client_end.sendall(data)
        client_end.shutdown(socket.SHUT_WR)
        return wire.read_request(server_end)


def levels(count: int) -> dict[str, object]:
    return {"a": levels(count - 1)} if count > 1 else {}


def test_a_request_may_nest_max_depth_levels_and_no_more() -> None:
    assert read(json.dumps(levels(wire.MAX_DEPTH)).encode()) == levels(wire.MAX_DEPTH)
    with pytest.raises(wire.BadRequest, match=f"nested more than {wire.MAX_DEPTH} levels"):
        read(json.dumps(levels(wire.MAX_DEPTH + 1)).encode())
    assert read(b"") is None  # a probe: nothing to answer


def test_a_request_sent_a_byte_at_a_time_is_given_up_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "READ_TIMEOUT_S", 1.0)
    server_end, client_end = socket.socketpair()
    slow = Trickle(client_end, every_s=0.1)  # each byte well within any per-read timeout
    slow.start()
    with server_end, pytest.raises(wire.BadRequest, match="did not arrive within 1 s"):
        wire.read_request(server_end)
    assert slow.is_alive()  # given up while the client still sends
    slow.stop.set()
    slow.join(timeout=START_TIMEOUT_S)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"[" * 200_000, "nested"),
        (b'{"a": ' * 50_000, "nested"),
        (nested(600), "nested"),
        (b"\xff\xfe not json", "JSON"),
        (b'"just text"', "JSON object"),
    ],
    ids=["deep-array", "deep-object", "deep-value", "not-utf8", "not-an-object"],
)
def test_a_malformed_request_is_refused_in_one_sentence_and_the_server_keeps_answering(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str], data: bytes, says: str
) -> None:
    answer = reply_to(connected(common), data)
    reason = json.loads(answer)["declined"]
    assert says in reason and "\n" not in reason and len(reason) < 200
    assert server.proc.poll() is None
    code, out, _ = search(capsys, "refund", *common, "--no-dense", "--json")
    assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
    server.wait_for("search 'refund': exit 0")


class Trickle(threading.Thread):
    """A client sending a request a byte at a time, never finishing it, until the server
    closes its connection, `stop` is set or `START_TIMEOUT_S` passed; `ended` says when its
    connection ended."""

    def __init__(self, conn: socket.socket, every_s: float) -> None:
        super().__init__(daemon=True)
        self.conn, self.every_s = conn, every_s
        self.stop = threading.Event()
        self.ended = float("inf")

    def run(self) -> None:
        give_up = time.monotonic() + START_TIMEOUT_S
        try:
            with self.conn:
                while not self.stop.wait(self.every_s) and time.monotonic() < give_up:
                    self.conn.sendall(b" ")
        except OSError:
            pass  # the server closed it
        self.ended = time.monotonic()


def test_a_slow_client_does_not_hold_other_searches(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str]
) -> None:
    slow = Trickle(connected(common), every_s=0.5)  # accepted first: it connected first
    slow.start()
    try:
        code, out, _ = search(capsys, "refund", *common, "--no-dense", "--json")
        answered = time.monotonic()
        assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
        server.wait_for("search 'refund': exit 0")  # answered by the server
    finally:
        slow.stop.set()
        slow.join(timeout=START_TIMEOUT_S)
    assert answered < slow.ended  # while the slow client was still connected


def stalled(common: list[str]) -> socket.socket:
    conn = connected(common)
    conn.sendall(b'{"protocol": 1')
    return conn


def still_open(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_stalled_connections_never_make_a_search_wait(
    capsys: pytest.CaptureFixture[str], server: Server, common: list[str]
) -> None:
    from coderag_tui.cli.serve_cmd import MAX_CONNECTIONS

    conns = [stalled(common) for _ in range(MAX_CONNECTIONS + 2)]
    try:
        # every slot is taken: the search is refused at once and answered here
        code, out, _ = search(capsys, "refund", *common, "--no-dense", "--json")
        assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
        assert all(still_open(conn) for conn in conns[:MAX_CONNECTIONS])
    finally:
        for conn in conns:
            conn.close()
    # the slots are free again once their connections end
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        code, out, _ = search(capsys, "refund transaction_id", *common, "--no-dense", "--json")
        assert code == 0
        try:
            server.wait_for("search 'refund transaction_id': exit 0", timeout=1.0)
            break
        except AssertionError:
            assert time.monotonic() < deadline, "the server never answered again"


def test_a_server_that_does_not_answer_leaves_the_search_to_the_client(
    capsys: pytest.CaptureFixture[str],
    common: list[str],
    tiny_repo: Path,
    index_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "ASK_TIMEOUT_S", 1.0, raising=False)
    path = socket_path(Settings(repo=tiny_repo, index_dir=index_dir))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    held: list[socket.socket] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(4)

        def accept_and_say_nothing() -> None:
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

        threading.Thread(target=accept_and_say_nothing, daemon=True).start()
        result: list[tuple[int, str, str]] = []
        asking = threading.Thread(
            target=lambda: result.append(search(capsys, "refund", *common, "--no-dense", "--json")),
            daemon=True,
        )
        asking.start()
        asking.join(timeout=START_TIMEOUT_S)
        finished = not asking.is_alive()
        for conn in held:
            conn.close()
        asking.join(timeout=START_TIMEOUT_S)
    assert finished, "the search waited for a server that never answered"
    code, out, err = result[0]
    assert code == 0 and rankings(out)["bm25"][0][0] == "shop/payment.py"
    assert err.count("did not answer") == 1 and "Traceback" not in err
