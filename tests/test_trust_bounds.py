"""Every input from a repository or a dataset is bounded in size and in matching time (issue
"Trust III", item 5 and the low findings).

Each test reproduces what an attacker did against main before the fix: a `.coderagignore`
pattern that a backtracking matcher took minutes over, an ignore file of 49 MB, a cache file
nested 100k deep, a dataset line of 50k `[`, an index folder under `/proc`, a template that
is a FIFO, too large or not UTF-8, and a query of one very long word.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.core.index.walk import MAX_IGNORE_BYTES, MAX_IGNORE_PATTERNS, walk
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
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
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
