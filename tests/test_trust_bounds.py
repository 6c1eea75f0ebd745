"""Every input from a repository or a dataset is bounded in size and in matching time (issue
"Trust III", item 5 and the low findings).

Each test reproduces what an attacker did against main before the fix: a `.coderagignore`
pattern that a backtracking matcher took minutes over, an ignore file of 49 MB, a cache file
nested 100k deep, a dataset line of 50k `[`, an index folder under `/proc`, a template that
is a FIFO, too large or not UTF-8, and a query of one very long word.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.core.index.walk import MAX_IGNORE_BYTES, MAX_IGNORE_PATTERNS, walk
from tests.fixtures.cli_run import run_cli, run_cli_child
from tests.fixtures.hostile_repo import SLOW_IGNORE_NAME, SLOW_IGNORE_PATTERN
from tests.fixtures.tiny_repo import make_tiny_repo


@pytest.mark.parametrize("git", [True, False])
def test_an_ignore_pattern_is_matched_in_linear_time(tmp_path: Path, git: bool) -> None:
    """A backtracking matcher takes minutes (hours for a longer name) over this pattern; the
    walk runs in a child with a minute to spare, so the old matcher fails it."""
    repo = make_tiny_repo(tmp_path / "shop", git=git)
    (repo / ".coderagignore").write_text(SLOW_IGNORE_PATTERN + "\n" + "*a*a*a*a*a*a*a*a*a*a*ac\n")
    if not git:  # the plain walk reads .gitignore with the same matcher (git has its own)
        (repo / ".gitignore").write_text(SLOW_IGNORE_PATTERN + "x\n")
    (repo / SLOW_IGNORE_NAME).write_text("SLOW = 1\n")
    (repo / ("a" * 60 + "b")).write_text("ignored\n")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from coderag_tui.core.index.walk import walk\n"
        "print('\\n'.join(f.path for f in walk(Path(sys.argv[1])).files))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=60
    )
    listed = done.stdout.split()
    assert SLOW_IGNORE_NAME in listed and "shop/cart.py" in listed
    assert "a" * 60 + "b" not in listed  # the pattern still means what git says it means


@pytest.mark.parametrize(
    "content",
    [
        "*.py\n" + "#" * (MAX_IGNORE_BYTES + 1),
        "".join(f"build{i}/\n" for i in range(MAX_IGNORE_PATTERNS + 1)) + "*.py\n",
    ],
    ids=["larger-than-its-bound", "more-patterns-than-its-bound"],
)
def test_an_ignore_file_past_its_bounds_is_not_read(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A --log-file of an earlier test keeps the package's records to itself: hear them here.
    monkeypatch.setattr(logging.getLogger("coderag_tui"), "propagate", True)
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / ".coderagignore").write_text(content)
    with caplog.at_level(logging.WARNING, logger="coderag_tui.core.index.walk"):
        files = {f.path for f in walk(repo).files}
    assert "shop/cart.py" in files  # its `*.py` was never read
    (warning,) = caplog.messages
    assert ".coderagignore" in warning and "not read" in warning and "\n" not in warning


def test_an_ignore_file_in_bounds_still_leaves_files_out(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / ".coderagignore").write_text("shop/pay*.py\n!README.md\n[[bad\n!\n")
    files = {f.path for f in walk(repo).files}
    assert "shop/payment.py" not in files and "shop/cart.py" in files


def test_a_walk_of_a_plain_folder_reads_gitignore_with_git_semantics(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop", git=False)
    (repo / ".gitignore").write_text("shop/\n!shop/cart.py\n")
    files = {f.path for f in walk(repo).files}
    assert not any(path.startswith("shop/") for path in files)  # a folder cannot be re-entered


@pytest.mark.parametrize("kind", ["fifo", "folder", "latin-1", "no-task"])
def test_someone_elses_template_never_stops_a_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    template = repo / "prompt.tpl"
    if kind == "fifo":
        os.mkfifo(template)
    elif kind == "folder":
        template.mkdir()
    elif kind == "latin-1":
        template.write_bytes(b"caf\xe9 {context} {task}\n")
    else:
        template.write_text("no placeholders at all\n")
    (repo / ".coderag.toml").write_text('template = "prompt.tpl"\n')
    code, out, err = run_cli(capsys, "prompt", "refund", str(repo), "--no-dense", "--index-dir",
                          str(tmp_path / "ix"))  # fmt: skip
    assert code == 0, err
    assert "## Task" in out
    (line,) = [line for line in err.splitlines() if "ignored template" in line]
    assert "its template cannot be used" in line


def test_an_index_folder_where_nothing_can_be_made_isone_sentence(
    tiny_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = (
        "import sys\n"
        "from coderag_tui.cli import main\n"
        "argv = ['search', 'cart', sys.argv[1], '--no-dense', '--index-dir', '/proc/self']\n"
        "sys.exit(main(argv))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tiny_repo)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("coderag: ") and "--index-dir" in line


def test_a_damaged_cache_file_nested_deep_is_repaired(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "refund", str(tiny_repo), "--no-dense", "--index-dir", str(index_dir)]
    assert main(argv) == 0
    capsys.readouterr()
    tables = list(index_dir.rglob("files.json"))
    assert tables
    for table in tables:
        table.write_text("[" * 100_000)
    for _ in range(2):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0 and "shop/payment.py" in out, err
        assert "Traceback" not in err
    cart = tiny_repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n# an edit: the tables are read, found damaged, rebuilt\n")
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "shop/payment.py" in out, err
    for table in index_dir.rglob("files.json"):
        assert not table.read_text().startswith("[["), table


def test_a_dataset_line_nested_deep_isone_sentence(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("[" * 50_000 + "\n")
    code, _, err = run_cli(capsys, "eval", str(data), "--repo", str(tiny_repo), "--index-dir",
                        str(tmp_path / "ix"))  # fmt: skip
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "nested too deeply" in line


def test_a_query_of_one_long_word_is_ranked_in_bounded_time(
    tiny_repo: Path, tmp_path: Path
) -> None:
    """The signals read a 40k-character word in 38 s before (its length squared); 100k
    characters would take minutes. The search runs in a child with a minute to spare."""
    ix = str(tmp_path / "ix")
    done = run_cli_child("search", "a/" * 50_000, str(tiny_repo), "--no-dense", "--index-dir", ix)
    assert done.returncode == 0, done.stderr
    assert "ranked on its first 65,536 characters" in done.stderr
