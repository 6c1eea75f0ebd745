"""git never turns a repository against its user (issues "Trust III", items 2, 4 and the diff,
and "Trust IV", item 1).

Each test reproduces what an attacker did against main before the fix: a `.git/config` whose
fsmonitor, clean filter, external diff and textconv ran on every index, search and `--diff`;
a committed folder laid out as a git dir whose fsmonitor ran on `coderag index service`; a
dataset whose `base_commit` reached git as `--output=~/.bashrc`, or whose `repo` left
`--repos`; a changed line `++ b/PATH` that moved a change to another file; and a clean
filter whose driver is named `x=y`, which `-c filter.x=y.clean=` did not switch off.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

import coderag_tui
from coderag_tui.core import git
from coderag_tui.core.index.changes import working_change
from coderag_tui.core.learn.history import HistoryOptions, history_pairs, hunks
from coderag_tui.settings import Settings
from tests.fixtures.cli_run import one_sentence, run_cli
from tests.fixtures.hostile_repo import BASHRC, FORGED_LINE, arm_repository, victim_home
from tests.fixtures.tiny_repo import make_tiny_repo

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "core.hooksPath=/x"]


@pytest.fixture
def armed(tmp_path: Path) -> tuple[Path, Path]:
    """The tiny shop with its `.git/config` and a `service/` folder armed (`arm_repository`)."""
    repo = make_tiny_repo(tmp_path / "shop")
    canary = tmp_path / "canary"
    arm_repository(repo, canary)
    assert not canary.exists()
    return repo, canary


def _ran(canary: Path) -> list[str]:
    return canary.read_text().split() if canary.exists() else []


def test_git_runs_no_program_the_repository_configures(
    armed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, canary = armed
    ix = str(tmp_path / "ix")
    # Plain git, as the user would run it there, does run them: the trap is real.
    subprocess.run(["git", "-C", str(repo), "diff", "--stat"], capture_output=True, check=False)
    assert {"fsmonitor", "clean", "hook"} <= set(_ran(canary))
    canary.unlink()
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n\ndef empty_cart(cart):\n    cart.items.clear()\n")
    for argv in (
        ("index", str(repo)),
        ("search", "cart total", str(repo), "--no-dense"),
        ("prompt", "review", str(repo), "--no-dense", "--diff"),
        ("index", str(repo / "service")),
    ):
        code, _, err = run_cli(capsys, *argv, "--index-dir", ix)
        assert code == 0, err
        assert _ran(canary) == [], argv
    # The folder laid out as a git dir is walked as the plain folder it is.
    code, out, err = run_cli(
        capsys, "search", "handle event", str(repo / "service"), "--no-dense", "--index-dir", ix
    )
    assert code == 0 and "handler.py" in out, err
    assert _ran(canary) == []


def test_learning_from_history_runs_no_external_diff(armed: tuple[Path, Path]) -> None:
    repo, canary = armed
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text().replace("never below zero", "never below nothing"))
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qam", "Say how discounts clamp totals"])
    canary.unlink(missing_ok=True)  # the commit above is the user's own git
    pairs = history_pairs(repo, HistoryOptions(scan=10, limit=10))
    assert [pair.gold_files for pair in pairs] == [("shop/cart.py",)]
    assert hunks(repo, pairs[0].parent, pairs[0].sha, "shop/cart.py") == ((31, 31),)
    assert _ran(canary) == []


def test_a_revision_from_outside_is_never_an_option() -> None:
    for bad in ("--output=/tmp/x", "-p", "", "HEAD main", "a\nb", "x" * 300):
        with pytest.raises(git.BadRevision):
            git.revision(bad)
    for good in ("HEAD", "main", "v1.2", "a1b2c3d", "HEAD~2", "origin/main", "HEAD^{commit}"):
        assert git.revision(good) == good
    line = git.command("/r", "show", "-s", revisions=["abc123"], paths=())
    assert line[-3:] == ["--end-of-options", "abc123", "--"]
    assert "--no-ext-diff" in line and "--no-textconv" in line


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    bashrc = victim_home(tmp_path)
    return bashrc


def test_a_dataset_base_commit_never_reaches_git_as_an_option(
    tmp_path: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = tmp_path / "repos"
    make_tiny_repo(repos / "shop")
    data = tmp_path / "d.jsonl"
    row = {"id": "1", "query": "cart total", "gold_files": ["shop/cart.py"], "repo": "shop"}
    data.write_text(json.dumps({**row, "base_commit": f"--output={victim}"}) + "\n")
    argv = ("eval", str(data), "--repos", str(repos), "--modes", "bm25", "--index-dir")
    code, _, err = run_cli(capsys, *argv, str(tmp_path / "ix"))
    assert code == 2
    one_sentence(err, "base_commit", "is not a commit name")
    assert victim.read_text() == BASHRC


@pytest.mark.parametrize("name", ["../outside", "/tmp/outside", "shop/../../outside", "a//b"])
def test_a_dataset_repo_never_leads_out_of_repos(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = tmp_path / "repos"
    repos.mkdir()
    make_tiny_repo(tmp_path / "outside")
    data = tmp_path / "d.jsonl"
    row = {"id": "1", "query": "cart total", "gold_files": ["shop/cart.py"], "repo": name}
    data.write_text(json.dumps(row) + "\n")
    argv = ("eval", str(data), "--repos", str(repos), "--modes", "bm25", "--index-dir")
    code, out, err = run_cli(capsys, *argv, str(tmp_path / "ix"))
    assert code == 2, out
    one_sentence(err, "never a path out of it")


def test_a_changed_line_never_moves_the_change_to_another_file(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    cart = repo / "shop" / "cart.py"
    lines = cart.read_text().split("\n")
    cart.write_text("\n".join(["++ b/shop/payment.py", "--- a/shop/payment.py", *lines]))
    change = working_change(Settings(repo=repo))
    assert [f.path for f in change.files] == ["shop/cart.py"]
    (only,) = change.files
    assert only.added == 2 and only.removed == 0
    assert [(s.start_line, s.end_line) for s in only.spans] == [(1, 2)]
    query, _ = change.query()
    assert "++ b/shop/payment.py" in query.split("\n")


def test_a_diff_reads_its_paths_whatever_the_repository_prefixes(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    subprocess.run(["git", "-C", str(repo), "config", "diff.noprefix", "true"], check=True)
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n# note\n")
    change = working_change(Settings(repo=repo))
    assert [f.path for f in change.files] == ["shop/cart.py"]


def test_an_armed_repository_changes_nothing_outside_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every trap of the armed fixture at once, through the faces a user runs in it."""
    bashrc = victim_home(tmp_path)
    repo = make_tiny_repo(tmp_path / "shop")
    canary = tmp_path / "canary"
    arm_repository(repo, canary, victim=bashrc)
    monkeypatch.chdir(repo)
    ix = str(tmp_path / "ix")
    code, _, err = run_cli(capsys, "search", "cart", ".", "--index-dir", ix, "--log-file",
                        "coderag.log")  # fmt: skip
    assert code == 2 and "never writes through a link" in one_sentence(err, "coderag.log")
    for argv in (
        ("index", "."),
        ("search", "cart total", ".", "--no-dense", "--rerank"),
        ("prompt", "how is the total made?", ".", "--no-dense"),
    ):
        code, _, err = run_cli(capsys, *argv, "--index-dir", ix)
        assert code == 0, err
        assert not any(line.startswith(FORGED_LINE[:20]) for line in err.splitlines()), err
    assert _ran(canary) == []
    assert bashrc.read_text() == BASHRC


# Driver names git's `-c NAME=VALUE` cannot carry (it splits at the first `=`) next to names
# with dots, quotes, spaces and a newline. The ones without whitespace are what
# `.gitattributes` can name (an attribute's value ends at a space); a newline cannot be in a
# config file at all, so git refuses that config and coderag walks the folder without git.
DRIVER_NAMES = ["x=y", "x=y.clean=", "a.b.c", 'say"hi"', "it's", "two words", "new\nline"]


def _config_section(name: str) -> str:
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'[filter "{quoted}"]\n'


@pytest.mark.parametrize("name", DRIVER_NAMES, ids=repr)
def test_git_runs_no_filter_whatever_its_driver_is_named(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    canary = tmp_path / "canary"
    script = tmp_path / "clean.sh"
    script.write_text(f'#!/bin/sh\necho clean >> "{canary}"\nexec cat\n')
    script.chmod(0o755)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"{_config_section(name)}\tclean = {script}\n\tsmudge = {script}\n")
    if not any(ch.isspace() for ch in name):
        (repo / ".gitattributes").write_text(f"* filter={name}\n")
    # A racy index (a tarball's mtimes, a commit in the same second): git must look at every
    # file's content, through its clean filter.
    for path in repo.rglob("*.py"):
        os.utime(path, ns=(0, 0))
    ix = str(tmp_path / "ix")
    code, out, err = run_cli(
        capsys, "search", "cart total", str(repo), "--no-dense", "--index-dir", ix
    )
    assert code == 0 and "shop/cart.py" in out, err
    assert not canary.exists()
    if "\n" not in name:
        trap = subprocess.run(
            ["git", "-C", str(repo), "config", "--get", f"filter.{name}.clean"],
            capture_output=True,
            text=True,
        )
        assert trap.stdout.strip() == str(script)  # the trap is set
        seen = git.output(repo, "config", "--get", f"filter.{name}.clean")
        assert seen is not None and seen.strip() == b"", seen  # and coderag's git empties it


def test_git_is_run_only_through_core_git() -> None:
    """One place holds the rules above: no other module of the package names the program."""
    package = Path(coderag_tui.__file__).parent
    for path in package.rglob("*.py"):
        if path == package / "core" / "git.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
                first = node.elts[0]
                assert not (isinstance(first, ast.Constant) and first.value == "git"), path
