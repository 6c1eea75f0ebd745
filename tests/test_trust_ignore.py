"""The ignore rules stay git's, and RE2 stays quiet (issue "Trust IV", items 4; cases 9, 10).

Each test reproduces what an attacker did against main before the fix: a `.coderagignore`
line RE2 rejects made RE2's own logger print it to fd 2, a raw clear-screen and terminal reset
with it; `private[[:digit:]].md`, which git ignores, was dropped as a pattern RE2 refused, so
`private1.md` went into the prompt; and `[z-a]` ended the walk with a traceback.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from coderag_tui.core.index.walk import walk
from tests.fixtures.cli_run import run_cli_child
from tests.fixtures.tiny_repo import make_tiny_repo

# Patterns whose brackets pathspec reads otherwise than git (a POSIX class, an escape, a
# reversed range, a class git does not know, an unclosed bracket), then plain ones, then a
# `!pattern` of the first kind that must not let back in what git keeps out.
PATTERNS = [
    "private[[:digit:]].md",
    "[[:upper:]]*.log",
    "odd[\\]]name.txt",
    "span[z-a].txt",
    "cls[[:bogus:]].txt",
    "keep*.cfg",
    "!keep[[:digit:]].cfg",
    "*.tmp",
    "[Bb]uild.txt",
]
NAMES = [
    "private1.md",
    "privateX.md",
    "private.md",
    "Upper.log",
    "lower.log",
    "odd]name.txt",
    "oddxname.txt",
    "spanz.txt",
    "spanq.txt",
    "clsb.txt",
    "keep1.cfg",
    "keepx.cfg",
    "scratch.tmp",
    "Build.txt",
    "build.txt",
    "plain.py",
]


def _git_ignores(tmp_path: Path, lines: list[str]) -> set[str]:
    """What git itself ignores of NAMES under a `.gitignore` of `lines`: the truth."""
    truth = tmp_path / "truth"
    truth.mkdir()
    subprocess.run(["git", "init", "-q", str(truth)], check=True)
    (truth / ".gitignore").write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        ["git", "-C", str(truth), "check-ignore", "--no-index", "--stdin", "-z"],
        input="\0".join(NAMES).encode(),
        capture_output=True,
        check=False,
    )
    return {name for name in done.stdout.decode().split("\0") if name}


def _folder(root: Path, ignore_file: str, *, git: bool) -> Path:
    repo = make_tiny_repo(root, git=git)
    for name in NAMES:
        (repo / name).write_text(f"SECRET_OF_{name.replace('.', '_')} = 1\n")
    (repo / ignore_file).write_text("\n".join(PATTERNS) + "\n")
    return repo


@pytest.mark.parametrize(
    ("ignore_file", "git"),
    [(".coderagignore", True), (".coderagignore", False), (".gitignore", False)],
    ids=["coderagignore-in-git", "coderagignore-plain", "gitignore-plain"],
)
def test_a_file_git_would_ignore_is_never_indexed(
    tmp_path: Path, ignore_file: str, git: bool
) -> None:
    ignored = _git_ignores(tmp_path, PATTERNS)
    assert {"private1.md", "Upper.log", "odd]name.txt", "keepx.cfg", "build.txt"} <= ignored
    assert {"privateX.md", "oddxname.txt", "clsb.txt", "keep1.cfg"}.isdisjoint(ignored)
    repo = _folder(tmp_path / "shop", ignore_file, git=git)
    listed = {f.path for f in walk(repo).files}
    assert ignored.isdisjoint(listed), sorted(ignored & listed)
    # Patterns pathspec reads as git does still mean exactly what they mean to git; the others
    # leave out at least git's files (`[[:upper:]]*.log` takes `lower.log` with it).
    assert {"private.md", "plain.py", "shop/cart.py"} <= listed


def test_re2_never_writes_to_the_terminal(tmp_path: Path) -> None:
    """A pattern RE2 refuses, holding a clear-screen and a terminal reset: RE2's own logger
    printed it raw to fd 2 (a child process, so fd 2 is seen as the terminal would)."""
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / ".coderagignore").write_text("x[[:digit:]\x1b[2J\x1bc].md\nprivate[[:digit:]].md\n")
    (repo / "private1.md").write_text("SECRET = 1\n")
    ix = str(tmp_path / "ix")
    done = run_cli_child("search", "secret", str(repo), "--no-dense", "--index-dir", ix)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "Error parsing" not in done.stderr, done.stderr
    assert all(line.startswith("coderag: ") for line in done.stderr.splitlines()), done.stderr
    assert "private1.md" not in done.stdout
