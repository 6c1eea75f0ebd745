"""The no-change check of a folder without git: the last walk's stat of every folder it
entered and every file it listed, taken again, answers without a walk, and every change
that could alter what the walk lists (edits, touches, new, deleted, renamed, newly ignored,
grown past the size limit) still walks."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.core.index import indexer
from coderag_tui.core.index.indexer import IndexReport, build_index
from coderag_tui.core.index.store import Store
from coderag_tui.settings import Settings
from tests.core.test_fresh_check import texts, walks


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "pkg" / "alpha.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (root / "pkg" / "deep" / "beta.py").write_text("def beta():\n    return 2\n", encoding="utf-8")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("x = 1\n", encoding="utf-8")
    (root / "build" / "shared.py").write_text("def shared(): ...\n", encoding="utf-8")
    (root / "pkg" / "link.py").symlink_to(root / "build" / "shared.py")  # indexed as pkg/link.py
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    return root


def built_twice(
    settings: Settings, store: Store, monkeypatch: pytest.MonkeyPatch
) -> tuple[IndexReport, list[int]]:
    """Build twice (the second build records the check) and count the walks from then on:
    the first build's report and the count."""
    first = build_index(settings, store)
    build_index(settings, store)
    return first, walks(monkeypatch)


def test_an_unchanged_folder_skips_the_walk_with_the_same_report(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(repo=folder, index_dir=tmp_path / "index")
    with Store.open(settings.index_path) as store:
        first, calls = built_twice(settings, store, monkeypatch)
        again = build_index(settings, store)
        assert calls == []
        assert again.files_indexed == 0 and again.files_read == 0
        assert (again.files_total, again.chunks, again.skipped) == (
            first.files_total,
            first.chunks,
            first.skipped,
        )
        assert not again.is_git


def test_odd_entries_keep_the_check_and_skip_the_walk(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO, a link loop and a link out of the folder are skipped with a reason by the walk,
    and stat-ed (never opened, never followed out) by the check. (A broken link is an
    unreadable file: such a build records no check and walks again, as with git.)"""
    os.mkfifo(folder / "pkg" / "pipe.py")
    (folder / "pkg" / "loop.py").symlink_to(folder / "pkg" / "loop.py")
    (folder / "pkg" / "out.py").symlink_to(tmp_path)
    settings = Settings(repo=folder, index_dir=tmp_path / "index")
    with Store.open(settings.index_path) as store:
        first, calls = built_twice(settings, store, monkeypatch)
        again = build_index(settings, store)
        assert calls == []
        assert again.skipped == first.skipped
        assert {s.path for s in again.skipped} >= {"pkg/pipe.py", "pkg/loop.py", "pkg/out.py"}
        (folder / "pkg" / "out.py").unlink()
        (folder / "pkg" / "out.py").symlink_to(folder / "pkg" / "alpha.py")  # now inside
        build_index(settings, store)
        assert calls == [1]
        assert "def alpha" in texts(store, settings)["pkg/out.py"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


ALPHA, BETA = Path("pkg/alpha.py"), Path("pkg/deep/beta.py")
# Each change, and what the index holds after the next build (path -> a word of its text;
# None: not indexed).
CHANGES: dict[str, tuple[Callable[[Path], object], dict[str, str | None]]] = {
    "edit": (
        lambda f: _write(f / ALPHA, "def alpha():\n    return 'edited'\n"),
        {"pkg/alpha.py": "edited"},
    ),
    "touch_same_content": (lambda f: os.utime(f / ALPHA, ns=(1, 1)), {"pkg/alpha.py": "alpha"}),
    "new_file_deep": (
        lambda f: _write(f / "pkg/deep/gamma.py", "def gamma(): ...\n"),
        {"pkg/deep/gamma.py": "gamma"},
    ),
    "new_folder": (
        lambda f: _write(f / "pkg/fresh/gamma.py", "def gamma(): ...\n"),
        {"pkg/fresh/gamma.py": "gamma"},
    ),
    "delete": (lambda f: (f / ALPHA).unlink(), {"pkg/alpha.py": None}),
    "rename": (
        lambda f: (f / BETA).rename(f / "pkg/deep/gamma.py"),
        {"pkg/deep/gamma.py": "beta", "pkg/deep/beta.py": None},
    ),
    "newly_ignored": (
        lambda f: _write(f / ".gitignore", "build/\nalpha.py\n"),
        {"pkg/alpha.py": None},
    ),
    "coderagignore": (
        lambda f: _write(f / "pkg/.coderagignore", "alpha.py\n"),
        {"pkg/alpha.py": None},
    ),
    "grown_past_the_limit": (
        lambda f: _write(f / ALPHA, "def alpha():\n" + "    x = 1\n" * 40),
        {"pkg/alpha.py": None},
    ),
    # an ignored folder's file, indexed through a link
    "link_target_edit": (
        lambda f: _write(f / "build/shared.py", "def edited(): ...\n"),
        {"pkg/link.py": "edited"},
    ),
    # not indexed: nothing to see, and no walk needed
    "ignored_edit": (lambda f: _write(f / "build/out.py", "x = 22\n"), {"build/out.py": None}),
}
NO_WALK = {"ignored_edit"}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_change_in_a_plain_folder_is_seen(
    change: str, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(repo=folder, index_dir=tmp_path / "index", max_file_bytes=200)
    make, expected = CHANGES[change]
    with Store.open(settings.index_path) as store:
        _, calls = built_twice(settings, store, monkeypatch)
        make(folder)
        build_index(settings, store)
        now = texts(store, settings)
    assert calls == ([] if change in NO_WALK else [1])
    for path, word in expected.items():
        assert (word in now[path]) if word is not None else (path not in now), path


def test_other_settings_walk_a_plain_folder_again(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(repo=folder, index_dir=tmp_path / "index")
    with Store.open(settings.index_path) as store:
        _, calls = built_twice(settings, store, monkeypatch)
        build_index(settings.with_(max_file_bytes=10), store)  # a different walk setting
        build_index(settings.with_(max_line_chars=5), store)  # a different reading rule
        assert calls == [1, 1]
        store.set_meta(indexer.WATCHED_META_PREFIX + settings.chunking_spec.key, "{damaged")
        build_index(settings, store)  # an unreadable record: walk
        assert calls == [1, 1, 1]
