"""Repository text never reaches a terminal raw: escape sequences are shown, not obeyed."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.core.visible import control_count, one_line, visible

PAYLOAD = "# retry payment \x1b]52;c;ZXZpbA==\x07 \x1b[2J \x1b]0;pwned\x07\n"
RED_NAME = "\x1b[31mredname.py"


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "hostile"
    repo.mkdir()
    (repo / "payment.py").write_text(
        PAYLOAD + "def retry_payment(order):\n    return charge(order)  # retry payment\n"
    )
    (repo / RED_NAME).write_text("def retry_payment_again():\n    pass  # retry payment\n")
    (repo / "\x1b[2Jblob.bin").write_bytes(b"\x00\x01\x02" * 100)  # skipped: binary
    return repo


def test_visible_writes_out_every_control_but_newline_and_tab() -> None:
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("bell\x07 cr\r del\x7f csi\x9b") == "bell\\x07 cr\\r del\\x7f csi\\x9b"
    assert visible("rtl \u202e override") == "rtl \\u202e override"
    assert visible("keep\n\ttabs and é ✓") == "keep\n\ttabs and é ✓"
    assert one_line("a\nb\tc") == "a\\nb\\tc"
    assert control_count(PAYLOAD) == 5


def _no_escape(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text


def test_search_tables_and_notes_show_escapes(
    hostile_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(tmp_path / "ix")
    for extra in ([], ["--files"]):
        code = main(
            [
                "search",
                "retry payment",
                str(hostile_repo),
                "--index-dir",
                index,
                "--no-dense",
                *extra,
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0
        _no_escape(out + err)
        assert "\\x1b[31mredname.py" in out.replace("\n", "")


def test_index_verbose_lists_skipped_names_visibly(
    hostile_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["index", str(hostile_repo), "--index-dir", str(tmp_path / "ix"), "--verbose"])
    out, err = capsys.readouterr()
    assert code == 0
    _no_escape(out + err)
    assert "\\x1b[2Jblob.bin" in out


def test_json_keeps_the_exact_text(
    hostile_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "prompt",
            "retry payment",
            str(hostile_repo),
            "--index-dir",
            str(tmp_path / "ix"),
            "--no-dense",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert "\x1b]52;c;ZXZpbA==\x07" in data["prompt"]


def test_a_piped_prompt_is_exact_and_stderr_counts_the_controls(
    hostile_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "prompt",
            "retry payment",
            str(hostile_repo),
            "--index-dir",
            str(tmp_path / "ix"),
            "--no-dense",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert "\x1b]52;c;ZXZpbA==\x07" in out  # a pipe gets the exact text
    _no_escape(err)
    assert "control character(s) from the repository" in err


def test_a_prompt_printed_on_a_terminal_shows_escapes(hostile_repo: Path, tmp_path: Path) -> None:
    """Run the real command with its stdout on a pseudo-terminal and read what the terminal got."""
    leader, follower = pty.openpty()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coderag_tui",
            "prompt",
            "retry payment",
            str(hostile_repo),
            "--index-dir",
            str(tmp_path / "ix"),
            "--no-dense",
            "--budget",
            "2000",
        ],
        stdout=follower,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(follower)
    received = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower side closed: the command is done
            break
        if not data:
            break
        received += data
    os.close(leader)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    shown = received.decode("utf-8", "replace")
    assert "retry payment" in shown
    _no_escape(shown)
    assert "\\x1b]52;c;ZXZpbA==\\x07" in shown


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path: Path) -> None:
    """`coderag index --verbose | head -1`: no BrokenPipeError traceback on stderr."""
    repo = tmp_path / "many"
    repo.mkdir()
    for i in range(1500):  # enough skipped names that the listing outgrows the pipe
        (repo / f"{'padding_' * 6}blob_{i:04d}.bin").write_bytes(b"\x00" * 64)
    proc = subprocess.run(
        f"{sys.executable} -m coderag_tui index {repo} --index-dir {tmp_path / 'ix'} --verbose"
        " | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
