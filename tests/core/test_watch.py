"""The file watch a resident server trusts: a change made before `sync` is always seen, the
index's own files and git's bookkeeping are not changes, and a failed watch says so."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui.core.index.watch import EVERY_FILE, MAX_PATHS, TreeWatch


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def a():\n    return 1\n")
    (root / ".git").mkdir()
    (root / "index-here").mkdir()
    return root


@pytest.fixture
def watch(repo: Path, tmp_path: Path) -> Iterator[TreeWatch]:
    with TreeWatch(repo, tmp_path / "cookies", ignore=[repo / "index-here"]) as w:
        assert w.sync(), "the watch never came up"
        w.take_changed()
        yield w


def test_a_quiet_tree_is_unchanged(watch: TreeWatch) -> None:
    assert watch.sync()
    assert not watch.take_changed()


def test_an_edit_made_just_before_sync_is_seen(watch: TreeWatch, repo: Path) -> None:
    (repo / "pkg" / "a.py").write_text("def a():\n    return 2\n")
    assert watch.sync()  # no sleep: the cookie orders it after the edit
    assert watch.take_changed()
    assert not watch.take_changed()  # taken: the next question starts clean


@pytest.mark.parametrize(
    "change",
    ["new file", "new folder with a file", "delete", "rename", "folder removed"],
)
def test_every_kind_of_change_counts(watch: TreeWatch, repo: Path, change: str) -> None:
    if change == "new file":
        (repo / "pkg" / "b.py").write_text("x = 1\n")
    elif change == "new folder with a file":
        (repo / "deep" / "er").mkdir(parents=True)
        (repo / "deep" / "er" / "c.py").write_text("y = 2\n")
    elif change == "delete":
        (repo / "pkg" / "a.py").unlink()
    elif change == "rename":
        (repo / "pkg" / "a.py").rename(repo / "pkg" / "renamed.py")
    else:
        shutil.rmtree(repo / "pkg")
    assert watch.sync()
    assert watch.take_changed()


def test_a_file_in_a_folder_made_after_the_start_is_watched(watch: TreeWatch, repo: Path) -> None:
    (repo / "later").mkdir()
    assert watch.sync()
    watch.take_changed()
    (repo / "later" / "d.py").write_text("z = 3\n")
    assert watch.sync()
    assert watch.take_changed()


def test_the_index_files_and_gits_bookkeeping_are_not_changes(watch: TreeWatch, repo: Path) -> None:
    (repo / "index-here" / "index.sqlite").write_bytes(b"x" * 100)
    (repo / ".git" / "index").write_bytes(b"staged")
    (repo / ".git" / "objects").mkdir()
    (repo / ".git" / "objects" / "ab").write_bytes(b"blob")
    assert watch.sync()
    assert not watch.take_changed()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/other\n")  # a checkout: counts
    assert watch.sync()
    assert watch.take_changed()


def test_a_stopped_watch_cannot_sync(repo: Path, tmp_path: Path) -> None:
    w = TreeWatch(repo, tmp_path / "cookies")
    assert w.sync()
    w.close()
    assert not w.sync(timeout=0.3)


def test_a_root_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="not there"):
        TreeWatch(tmp_path / "missing", tmp_path / "cookies")


def test_a_cookie_folder_that_is_a_file_is_refused(repo: Path, tmp_path: Path) -> None:
    # a file where the cookie folder should be: the kernel watch cannot be set up on it
    with TreeWatch(repo, tmp_path / "cookies") as w:
        assert w.sync()
    shutil.rmtree(tmp_path / "cookies")
    (tmp_path / "cookies").write_text("not a folder")
    with pytest.raises(OSError):
        TreeWatch(repo, tmp_path / "cookies")


def test_the_changed_paths_are_named(watch: TreeWatch, repo: Path) -> None:
    (repo / "pkg" / "a.py").write_text("def a():\n    return 2\n")
    (repo / "pkg" / "b.py").write_text("x = 1\n")
    (repo / "index-here" / "index.sqlite").write_bytes(b"not a change")
    assert watch.sync()
    assert watch.take_changes() == {"pkg/a.py", "pkg/b.py"}
    assert watch.take_changes() == frozenset()  # taken


@pytest.mark.parametrize(
    "rule", [".gitignore", "pkg/.gitignore", "pkg/.coderagignore", ".git/HEAD", ".git/info"]
)
def test_a_change_to_what_picks_files_means_every_file(
    watch: TreeWatch, repo: Path, rule: str
) -> None:
    (repo / "pkg" / "a.py").write_text("def a():\n    return 3\n")
    if rule == ".git/info":
        (repo / ".git" / "info").mkdir()
        (repo / ".git" / "info" / "exclude").write_text("*.py\n")
    else:
        (repo / rule).write_text("*.log\n")
    assert watch.sync()
    assert watch.take_changes() is EVERY_FILE


def test_a_burst_of_more_than_max_paths_means_every_file(watch: TreeWatch, repo: Path) -> None:
    for i in range(MAX_PATHS + 1):
        (repo / "pkg" / f"m{i}.py").write_text(f"X = {i}\n")
    assert watch.sync()
    assert watch.take_changes() is EVERY_FILE
    assert watch.take_changes() == frozenset()
