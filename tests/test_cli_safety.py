"""What a user can do wrong, or what can go wrong under a user, never costs the index.

Each test is an issue's reproduction ("Safety", items 5–8, 10, 11): a damaged index, a search
that silently dropped files indexed under other settings, undecodable bytes in a task, an
unreadable repository folder, two index runs at once, and an index that cannot be written.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from coderag_tui.core.prompt.clipboard import copy_text
from tests.fixtures.safety import (
    NOBODY,
    ROOT,
    damage_pages,
    make_many_files_repo,
    nobody_can_run,
    public_folder,
    run_cli,
)
from tests.fixtures.tiny_repo import FILES, make_tiny_repo

needs_nobody = pytest.mark.skipif(
    not nobody_can_run(), reason="needs root and setpriv to run a command as nobody"
)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and lines[0].startswith("coderag: ")
    assert lines[0].rstrip().endswith("."), err
    return lines[0]


# --- 5. damage in the middle of the database ----------------------------------------------


def test_index_rebuilds_a_damaged_index_and_says_so_in_one_clean_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_many_files_repo(tmp_path / "repo", 400)
    ix = str(tmp_path / "ix")
    code, out, _ = cli(
        capsys, "index", str(repo), "--index-dir", ix, "--chunk-lines", "8", "--json"
    )
    assert code == 0
    db = Path(json.loads(out)["index_path"])
    damage_pages(db, seed=7)

    code, out, err = cli(capsys, "index", str(repo), "--index-dir", ix, "--chunk-lines", "8")
    assert code == 0, err
    assert "400 indexed, 0 unchanged" in out
    (note,) = [line for line in out.splitlines() if line.startswith("Note:")]
    assert "was damaged" in note and "moved it to" in note
    assert all(ch.isprintable() for ch in note)
    code, out, err = cli(
        capsys,
        "search",
        "unit321_widget",
        str(repo),
        "--index-dir",
        ix,
        "--chunk-lines",
        "8",
        "--no-dense",
        "--json",
        "--k",
        "1",
    )
    assert code == 0, err
    assert json.loads(out)["rankings"]["bm25"]["hits"][0]["path"] == "pkg1/mod321.py"


# --- 6. settings the index was built with ---------------------------------------------------

BIG = "data/big_table.py"


def _with_big_file(repo: Path) -> None:
    rows = "".join(f"ZEBRA_ROW_{i} = {i * 7}  # zebra lookup table row\n" for i in range(40_000))
    (repo / BIG).parent.mkdir(parents=True, exist_ok=True)
    (repo / BIG).write_text(rows, encoding="utf-8")
    assert (repo / BIG).stat().st_size > 1024 * 1024


def _paths(out: str) -> set[str]:
    return {hit["path"] for hit in json.loads(out)["rankings"]["bm25"]["hits"]}


def test_search_keeps_a_file_indexed_under_a_larger_max_file_bytes(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_big_file(tiny_repo)
    common = (str(tiny_repo), "--index-dir", str(index_dir))
    code, out, _ = cli(capsys, "index", *common, "--max-file-bytes", "5000000", "--json")
    assert code == 0 and json.loads(out)["files_indexed"] == len(FILES) + 1

    code, out, err = cli(capsys, "search", "zebra lookup table", *common, "--no-dense", "--json")
    assert code == 0, err
    assert BIG in _paths(out)
    assert "max_file_bytes" not in err  # nothing re-indexed, nothing to say
    code, out, _ = cli(capsys, "index", *common, "--json")  # a bare `index` keeps it too
    data = json.loads(out)
    assert data["files_removed"] == 0 and data["files_unchanged"] == len(FILES) + 1


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_an_explicit_other_max_file_bytes_reindexes_and_says_why(
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    _with_big_file(tiny_repo)
    common = (str(tiny_repo), "--index-dir", str(index_dir))
    assert cli(capsys, "index", *common, "--max-file-bytes", "5000000")[0] == 0
    extra: tuple[str, ...] = ()
    if how == "flag":
        extra = ("--max-file-bytes", "1048576")
    else:
        monkeypatch.setenv("CODERAG_MAX_FILE_BYTES", "1048576")
    code, out, err = cli(
        capsys, "search", "zebra lookup table", *common, "--no-dense", "--json", *extra
    )
    assert code == 0, err
    assert BIG not in _paths(out)
    (note,) = [line for line in err.splitlines() if "max_file_bytes" in line]
    assert "5000000" in note and "1048576" in note and "re-check" in note


def test_raising_max_line_chars_indexes_a_file_skipped_as_minified(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wide = tiny_repo / "gen" / "wide.py"
    wide.parent.mkdir()
    wide.write_text("WALRUS_TABLE = [" + ", ".join(["1"] * 500) + "]\n", encoding="utf-8")
    common = (str(tiny_repo), "--index-dir", str(index_dir))
    code, out, _ = cli(capsys, "index", *common, "--json")
    assert "gen/wide.py" in {s["path"] for s in json.loads(out)["skipped"]}

    code, out, _ = cli(capsys, "index", *common, "--max-line-chars", "2000", "--json")
    data = json.loads(out)
    assert code == 0
    assert "gen/wide.py" not in {s["path"] for s in data["skipped"]}
    code, out, _ = cli(capsys, "search", "WALRUS_TABLE", *common, "--no-dense", "--json")
    assert "gen/wide.py" in _paths(out)


# --- 7. undecodable bytes in the task ---------------------------------------------------------


def test_an_undecodable_task_is_replaced_and_out_is_written_whole(
    tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    keep = tmp_path / "out" / "keep.txt"
    keep.parent.mkdir()
    keep.write_text("the previous prompt\n", encoding="utf-8")
    done = run_cli(
        "prompt",
        b"retry \xff",
        str(tiny_repo),
        "--index-dir",
        str(index_dir),
        "--no-dense",
        "--out",
        str(keep),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert keep.read_text(encoding="utf-8").endswith("retry \ufffd\n")
    (note,) = [line for line in done.stderr.splitlines() if "UTF-8" in line]
    assert "1 byte" in note and "U+FFFD" in note
    assert os.listdir(keep.parent) == ["keep.txt"]  # no temporary file left behind

    copied = run_cli(
        "prompt",
        b"retry \xff",
        str(tiny_repo),
        "--index-dir",
        str(index_dir),
        "--no-dense",
        "--copy",
        env={"PATH": str(tmp_path), "DISPLAY": ""},
    )
    assert "Traceback" not in copied.stderr
    assert copied.returncode == 1 and "no clipboard tool" in copied.stderr


def test_an_undecodable_task_on_stdin_is_replaced_too(tiny_repo: Path, index_dir: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "coderag_tui",
            "prompt",
            "-",
            str(tiny_repo),
            "--index-dir",
            str(index_dir),
            "--no-dense",
        ],
        input=b"why does retry \xfe\xff fail?",
        capture_output=True,
        cwd=ROOT,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8:strict"},
    )
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout.decode("utf-8").endswith("why does retry \ufffd\ufffd fail?\n")
    assert "2 bytes" in err and "U+FFFD" in err


def test_a_prompt_that_cannot_be_saved_leaves_the_old_file_alone(tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("the previous prompt\n", encoding="utf-8")
    result = copy_text("half \udcff written", out=keep, clipboard=False)
    assert not result.ok
    assert keep.read_text(encoding="utf-8") == "the previous prompt\n"
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]
    assert "could not save" in result.message and str(keep) in result.message


# --- 8. a repository folder this user may not read --------------------------------------------


@needs_nobody
def test_an_unreadable_repository_folder_is_one_sentence() -> None:
    with public_folder() as pub:
        repo = make_tiny_repo(pub / "repo", git=False)
        repo.chmod(0o000)
        (pub / "home").mkdir(mode=0o777)
        (pub / "home").chmod(0o777)
        for command in (["search", "charge card"], ["index"]):
            done = run_cli(
                *command,
                str(repo),
                "--index-dir",
                str(pub / "home" / "ix"),
                "--no-dense" if command[0] == "search" else "--json",
                prefix=NOBODY,
                env={"HOME": str(pub / "home")},
                cwd=pub,
            )
            line = _one_sentence(done.stderr)
            assert done.returncode == 2
            assert f"cannot read the repository folder {repo}" in line
            assert "permission" in line.lower()


# --- 10. two index runs at once ---------------------------------------------------------------

SLOW_BUILDER = """
import json, sys, time
from pathlib import Path
from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings

repo, index_dir, marker = sys.argv[1:4]
settings = Settings(repo=Path(repo), index_dir=Path(index_dir))

def progress(p):
    if p.stage == "index":
        Path(marker).touch()
    time.sleep(0.1)

with Engine(settings) as engine:
    report = engine.update_index(settings, progress=progress).report
print(json.dumps({"indexed": report.files_indexed, "unchanged": report.files_unchanged}))
"""


@pytest.mark.slow
def test_two_index_runs_at_once_never_double_the_work(tmp_path: Path) -> None:
    repo = make_many_files_repo(tmp_path / "repo", 40)
    ix, marker = tmp_path / "ix", tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(
        [sys.executable, "-c", SLOW_BUILDER, str(repo), str(ix), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.02)
    second = run_cli("index", str(repo), "--index-dir", str(ix), "--json")
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert second.returncode == 0, second.stderr
    a, b = json.loads(out), json.loads(second.stdout)
    assert a["indexed"] == 40
    assert (b["files_indexed"], b["files_unchanged"]) == (0, 40)
    assert any("another coderag run" in note for note in b["notes"])


# --- 11. an index that cannot be written --------------------------------------------------------


def _touch_a_file(repo: Path) -> None:
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text(encoding="utf-8") + "\n# touched\n", encoding="utf-8")


@needs_nobody
def test_search_and_prompt_answer_from_an_index_folder_they_may_not_write() -> None:
    with public_folder() as pub:
        repo = make_tiny_repo(pub / "repo", git=False)
        ix = pub / "ix"
        assert main(["index", str(repo), "--index-dir", str(ix)]) == 0
        # root's index is root's alone until root shares it on purpose, read-only
        subprocess.run(["chmod", "-R", "go+rX", str(ix)], check=True)
        _touch_a_file(repo)
        home = pub / "home"
        home.mkdir()
        home.chmod(0o777)
        as_nobody: dict[str, Any] = {"prefix": NOBODY, "env": {"HOME": str(home)}, "cwd": pub}
        common = (str(repo), "--index-dir", str(ix), "--no-dense")

        done = run_cli("search", "refund transaction_id", *common, "--json", **as_nobody)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["rankings"]["bm25"]["hits"][0]["path"] == "shop/payment.py"
        (note,) = [line for line in done.stderr.splitlines() if "could not update" in line]
        assert str(ix) in note and "--index-dir" in note

        done = run_cli("prompt", "how is a refund made?", *common, **as_nobody)
        assert done.returncode == 0, done.stderr
        assert "### [shop/payment.py" in done.stdout
        assert "could not update" in done.stderr

        done = run_cli("index", str(repo), "--index-dir", str(ix), **as_nobody)
        assert done.returncode == 2
        assert "--index-dir" in _one_sentence(done.stderr)


def test_search_answers_from_an_index_file_that_is_immutable(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "index", str(tiny_repo), "--index-dir", str(index_dir), "--json")
    db = Path(json.loads(out)["index_path"])
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not available on this file system")
    try:
        _touch_a_file(tiny_repo)
        code, out, err = cli(
            capsys,
            "search",
            "refund transaction_id",
            str(tiny_repo),
            "--index-dir",
            str(index_dir),
            "--no-dense",
            "--json",
        )
        assert code == 0, err
        assert json.loads(out)["rankings"]["bm25"]["hits"][0]["path"] == "shop/payment.py"
        assert "could not update the index" in err
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)


def _small_files(limit: int) -> None:
    """In the child: writes past `limit` bytes fail with EFBIG instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_search_answers_when_the_disk_fills_up(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "repo", git=False)
    ix = tmp_path / "ix"
    assert main(["index", str(repo), "--index-dir", str(ix)]) == 0
    big = repo / "shop" / "catalogue.py"
    big.write_text("".join(f"ITEM_{i} = 'refund policy {i}'\n" for i in range(20_000)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "coderag_tui",
            "search",
            "refund transaction_id",
            str(repo),
            "--index-dir",
            str(ix),
            "--no-dense",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: _small_files(64 * 1024),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rankings"]["bm25"]["hits"][0]["path"] == "shop/payment.py"
    (note,) = [line for line in done.stderr.splitlines() if "could not update" in line]
    assert "disk" in note
