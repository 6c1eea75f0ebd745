"""Clipboard: pyperclip when a tool exists, else OSC 52 (tmux-wrapped in tmux), and files."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui.core.prompt.clipboard import (
    OSC52_MESSAGE,
    copied_for_sure,
    copy_text,
    keep_prompt,
    osc52_sequence,
)

ROOT = Path(__file__).resolve().parents[2]
TMUX = {"TMUX": "/tmp/tmux-1000/default,4242,0"}


@pytest.fixture
def headless(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No display and no clipboard tool on PATH: pyperclip really finds no mechanism."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(empty))


def fake_xclip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, works: bool) -> Path:
    """A stand-in `xclip` on PATH under a fake display; it stores the clipboard in a file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    store = tmp_path / "clipboard.txt"
    store.write_text("", encoding="utf-8")
    keep = f'cat > "{store}"' if works else "cat > /dev/null"
    script = bin_dir / "xclip"
    script.write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = "-o" ] && exec cat "{store}"; done\n{keep}\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return store


def test_osc52_bytes_go_to_the_stream_when_pyperclip_has_no_tool(headless: None) -> None:
    stream = io.BytesIO()
    result = copy_text("print('hi')\n", osc52_stream=stream, env={})
    assert stream.getvalue() == b"\x1b]52;c;cHJpbnQoJ2hpJykK\x07"
    assert result.ok
    assert result.method == "osc52"
    assert result.message == OSC52_MESSAGE
    assert result.message == (
        "sent to the terminal via OSC 52 — your terminal must allow clipboard writes"
    )


def test_inside_tmux_the_sequence_is_wrapped_for_passthrough(headless: None) -> None:
    stream = io.BytesIO()
    result = copy_text("naïve ✓", osc52_stream=stream, env=TMUX)
    assert stream.getvalue() == b"\x1bPtmux;\x1b\x1b]52;c;bmHDr3ZlIOKckw==\x07\x1b\\"
    assert result.ok and result.method == "osc52"
    assert result.message.startswith(OSC52_MESSAGE)
    assert "tmux" in result.message


def test_a_text_stream_receives_the_same_sequence(headless: None) -> None:
    stream = io.StringIO()
    copy_text("print('hi')\n", osc52_stream=stream, env={})
    assert stream.getvalue() == "\x1b]52;c;cHJpbnQoJ2hpJykK\x07"
    assert osc52_sequence("print('hi')\n").decode() == stream.getvalue()


def test_a_working_clipboard_tool_is_used_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = fake_xclip(tmp_path, monkeypatch, works=True)
    stream = io.BytesIO()
    result = copy_text("the prompt\nline 2\n", osc52_stream=stream, env={})
    assert result.message == "copied (xclip)"
    assert result.method == "xclip"
    assert store.read_text(encoding="utf-8") == "the prompt\nline 2\n"
    assert stream.getvalue() == b"", "no escape sequence when the tool worked"


def test_a_tool_that_silently_fails_falls_back_to_osc52(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_xclip(tmp_path, monkeypatch, works=False)
    stream = io.BytesIO()
    result = copy_text("x", osc52_stream=stream, env={})
    assert result.method == "osc52"
    assert result.message == f"xclip ran but the clipboard did not change; {OSC52_MESSAGE}"
    assert stream.getvalue() == osc52_sequence("x")


def test_out_is_always_written_and_reported(headless: None, tmp_path: Path) -> None:
    out = tmp_path / "prompts" / "p.md"
    stream = io.BytesIO()
    both = copy_text("ü prompt\n", out=out, osc52_stream=stream, env={})
    assert out.read_text(encoding="utf-8") == "ü prompt\n"
    assert both.method == "osc52+file"
    assert both.message == f"{OSC52_MESSAGE}; saved to {out}"
    only_file = copy_text("second\n", out=out, clipboard=False)
    assert only_file.ok and only_file.method == "file"
    assert only_file.message == f"saved to {out}"
    assert out.read_text(encoding="utf-8") == "second\n"


def test_only_a_tool_or_tmux_counts_as_copied_for_sure(
    headless: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    osc52 = copy_text("x", osc52_stream=io.BytesIO(), env={})
    assert osc52.ok and not copied_for_sure(osc52)  # a terminal may ignore it, silently
    saved = copy_text("x", out=tmp_path / "p.md", osc52_stream=io.BytesIO(), env={})
    assert saved.ok and not copied_for_sure(saved)
    fake_xclip(tmp_path, monkeypatch, works=True)
    assert copied_for_sure(copy_text("x", osc52_stream=io.BytesIO(), env={}))


def test_a_kept_prompt_replaces_the_last_one_of_its_repository(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    first = keep_prompt("one\n", folder, ".my repo", "xml")
    second = keep_prompt("two\n", folder, ".my repo", "xml")
    path = folder / "my_repo-last-prompt.xml"  # the folder's name made a plain file name
    assert first.ok and second.message == f"saved to {path}"
    assert [p.name for p in folder.iterdir()] == [path.name]
    assert path.read_text(encoding="utf-8") == "two\n"


def test_an_unwritable_out_path_is_reported(tmp_path: Path) -> None:
    result = copy_text("x", out=tmp_path, clipboard=False)  # a directory, not a file
    assert not result.ok
    assert result.message.startswith(f"{tmp_path} is a folder, and coderag writes only regular")


def test_without_a_tool_or_a_terminal_the_user_learns_what_to_install(tmp_path: Path) -> None:
    # A new session has no controlling terminal, so /dev/tty cannot be opened.
    code = (
        "from coderag_tui.core.prompt.clipboard import copy_text\n"
        "r = copy_text('x', env={})\n"
        "print(r.ok, r.method)\nprint(r.message)\n"
    )
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": str(empty), "PYTHONPATH": str(ROOT)},
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    first, message = done.stdout.splitlines()
    assert first == "False none"
    assert message.startswith("no clipboard tool and no terminal to send OSC 52 to")
    assert message.endswith("install xclip, xsel or wl-copy, or use --out FILE")


@pytest.fixture
def tmux_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A real tmux server on a private socket, and the environment a program inside it sees;
    no display and no clipboard tool on PATH, only tmux."""
    import shutil

    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").symlink_to(tmux)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    socket = tmp_path / "tmux.sock"
    subprocess.run(
        [tmux, "-S", str(socket), "new-session", "-d", "-x", "80", "-y", "24"],
        check=True,
        env={"PATH": str(bin_dir), "TERM": "xterm"},
    )
    pid = subprocess.run(
        [tmux, "-S", str(socket), "display", "-p", "#{pid}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    yield {"PATH": str(bin_dir), "TMUX": f"{socket},{pid},0", "TERM": "screen"}
    subprocess.run([tmux, "-S", str(socket), "kill-server"], check=False)


def _tmux_buffer(env: dict[str, str]) -> str:
    socket = env["TMUX"].split(",")[0]
    out = subprocess.run(
        ["tmux", "-S", socket, "show-buffer"], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout


def test_inside_tmux_the_prompt_lands_in_tmux_s_buffer(tmux_session: dict[str, str]) -> None:
    stream = io.BytesIO()
    result = copy_text("## Task\nfix the retry ✓", env=tmux_session, osc52_stream=stream)
    assert result.ok and result.method == "tmux"
    assert _tmux_buffer(tmux_session) == "## Task\nfix the retry ✓"
    assert "prefix + ] pastes it" in result.message
    assert stream.getvalue() == b""  # no OSC 52 that tmux would drop by default


def test_inside_tmux_with_set_clipboard_off_it_says_the_terminal_did_not_get_it(
    tmux_session: dict[str, str],
) -> None:
    socket = tmux_session["TMUX"].split(",")[0]
    subprocess.run(
        ["tmux", "-S", socket, "set", "-g", "set-clipboard", "off"], check=True, env=tmux_session
    )
    result = copy_text("prompt text", env=tmux_session, osc52_stream=io.BytesIO())
    assert result.ok and result.method == "tmux"
    assert _tmux_buffer(tmux_session) == "prompt text"
    assert "set-clipboard is off" in result.message
    assert "set -g set-clipboard on" in result.message
