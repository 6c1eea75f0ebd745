"""The no-change check from git's own file list: a warm build answers without a walk, and
every change git could hide (edits, touches, new, deleted, ignored files) still re-indexes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui.core.index import indexer
from coderag_tui.core.index.indexer import build_index
from coderag_tui.core.index.store import Store
from coderag_tui.core.index.walk import fingerprint, start_fingerprint, stop_fingerprint
from coderag_tui.settings import Settings

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(repo: Path, *argv: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "alpha.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (root / "pkg" / "beta.py").write_text("def beta():\n    return 2\n", encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.fixture
def store(repo: Path, tmp_path: Path) -> Iterator[tuple[Settings, Store]]:
    settings = Settings(repo=repo, index_dir=tmp_path / "index")
    opened = Store.open(settings.index_path)
    yield settings, opened
    opened.close()


def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the full walks build_index makes."""
    calls: list[int] = []
    real = indexer.walk  # type: ignore[attr-defined]  # the module's own import, patched

    def counting(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer, "walk", counting)
    return calls


def texts(store: Store, settings: Settings) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk in store.chunks(settings.chunking_spec.key):
        found[chunk.path] = found.get(chunk.path, "") + chunk.text
    return found


def test_unchanged_tree_skips_the_walk_with_the_same_report(
    store: tuple[Settings, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, opened = store
    first = build_index(settings, opened)
    second = build_index(settings, opened)  # the slow path found nothing: records it
    calls = walks(monkeypatch)
    third = build_index(settings, opened)
    assert calls == []
    assert third.files_indexed == 0 and third.files_read == 0
    for report in (second, third):
        assert report.files_total == first.files_total
        assert report.chunks == first.chunks
        assert report.skipped == first.skipped
        assert report.invalid_utf8 == first.invalid_utf8


@pytest.mark.parametrize(
    "change",
    ["edit", "touch_same_content", "new_untracked", "delete", "commit_edit", "ignored_edit"],
)
def test_every_change_is_seen(
    change: str, repo: Path, store: tuple[Settings, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, opened = store
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("x = 1\n", encoding="utf-8")
    build_index(settings, opened)
    build_index(settings, opened)
    before = fingerprint(repo, exclude=indexer.index_excludes(settings))
    alpha = repo / "pkg" / "alpha.py"
    if change == "edit":
        alpha.write_text("def alpha():\n    return 'changed'\n", encoding="utf-8")
    elif change == "touch_same_content":
        os.utime(alpha, ns=(1, 1))
    elif change == "new_untracked":
        (repo / "pkg" / "gamma.py").write_text("def gamma():\n    pass\n", encoding="utf-8")
    elif change == "delete":
        alpha.unlink()
    elif change == "commit_edit":
        alpha.write_text("def alpha():\n    return 'committed'\n", encoding="utf-8")
        git(repo, "commit", "-q", "-am", "edit")
    elif change == "ignored_edit":  # not indexed: nothing to see, and no walk needed
        (repo / "build" / "out.py").write_text("x = 2\n", encoding="utf-8")
    after = fingerprint(repo, exclude=indexer.index_excludes(settings))
    calls = walks(monkeypatch)
    report = build_index(settings, opened)
    now = texts(opened, settings)
    if change == "ignored_edit":
        assert after == before and calls == []
        return
    assert after != before and calls == [1]
    if change in ("edit", "commit_edit"):
        assert "changed" in now["pkg/alpha.py"] or "committed" in now["pkg/alpha.py"]
        assert report.files_indexed == 1
    elif change == "touch_same_content":
        assert report.files_indexed == 0 and report.files_read == 1
    elif change == "new_untracked":
        assert "pkg/gamma.py" in now
    else:
        assert "pkg/alpha.py" not in now and report.files_removed == 1


def test_assume_unchanged_files_turn_the_check_off(repo: Path) -> None:
    assert fingerprint(repo) is not None
    git(repo, "update-index", "--assume-unchanged", "pkg/alpha.py")
    assert fingerprint(repo) is None


def test_other_settings_or_a_cancelled_build_walk_again(
    store: tuple[Settings, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, opened = store
    build_index(settings, opened)
    calls = walks(monkeypatch)
    build_index(settings.with_(max_file_bytes=10), opened)  # a different walk setting
    build_index(settings.with_(max_line_chars=5), opened)  # a different reading rule
    build_index(settings, opened)  # and back: the record was replaced, so walk once more
    assert calls == [1, 1, 1]
    build_index(settings, opened)
    assert calls == [1, 1, 1]


def test_not_a_work_tree_top_has_no_fingerprint(repo: Path, tmp_path: Path) -> None:
    assert fingerprint(repo / "pkg") is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert fingerprint(plain) is None


def test_a_listing_started_ahead_is_the_check_and_is_read_once(repo: Path) -> None:
    plain = fingerprint(repo)
    start_fingerprint(repo)  # what a search does before its imports and loads
    assert fingerprint(repo) == plain
    (repo / "pkg" / "gamma.py").write_text("def gamma():\n    return 3\n", encoding="utf-8")
    changed = fingerprint(repo)  # a new listing: the one started ahead was read already
    assert changed is not None and changed != plain
    start_fingerprint(repo)
    stop_fingerprint(repo)  # never read: ended
    assert fingerprint(repo) == changed
    start_fingerprint(repo / "pkg")  # not a work tree's top: nothing starts
    stop_fingerprint(repo / "pkg")


@pytest.mark.parametrize("how", ["untracked", "ignored_by_git", "committed"])
def test_a_coderagignore_leaves_files_out_and_the_check_notices_it(
    how: str, repo: Path, store: tuple[Settings, Store]
) -> None:
    settings, opened = store
    build_index(settings, opened)
    build_index(settings, opened)
    assert "pkg/beta.py" in texts(opened, settings)
    before = fingerprint(repo, exclude=indexer.index_excludes(settings))
    if how == "ignored_by_git":  # the root one is read even when git ignores it
        (repo / ".gitignore").write_text("build/\n.coderagignore\n", encoding="utf-8")
        git(repo, "commit", "-q", "-am", "ignore it")
        build_index(settings, opened)
        before = fingerprint(repo, exclude=indexer.index_excludes(settings))
    (repo / ".coderagignore").write_text("beta.py\n", encoding="utf-8")
    if how == "committed":
        git(repo, "add", ".coderagignore")
        git(repo, "commit", "-q", "-m", "coderag leaves beta out")
    assert fingerprint(repo, exclude=indexer.index_excludes(settings)) != before
    build_index(settings, opened)
    now = texts(opened, settings)
    assert "pkg/beta.py" not in now and "pkg/alpha.py" in now
    (repo / ".coderagignore").write_text("# nothing left out\n", encoding="utf-8")
    build_index(settings, opened)
    assert "pkg/beta.py" in texts(opened, settings)
