"""Checking only the paths a file watch saw change (`build_index(only=...)`, what `coderag
serve` does after an edit) leaves the index exactly as a full check would: every walker rule
applied to each path, files gone and folders removed forgotten, and the chunk list patched
to what reading it again gives."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.indexer import build_index
from coderag_tui.core.index.store import Store
from coderag_tui.settings import Settings
from tests.fixtures.hostile_repo import make_hostile_repo
from tests.fixtures.tiny_repo import make_tiny_repo


def stored(store: Store, key: str) -> dict[str, Any]:
    """Everything a build leaves in the store that a search or a prompt reads."""
    return {
        "files": sorted(store.file_states().values(), key=lambda s: s.path),
        "chunks": [(c.path, c.start_line, c.end_line, c.kind, c.text) for c in store.chunks(key)],
        "chunked": sorted(store.chunked_paths(key)),
        "secrets": store.secrets(),
    }


def same_lists(a: ChunkList, b: ChunkList) -> None:
    assert a.paths == b.paths
    assert a.languages == b.languages
    assert np.array_equal(a.file_starts, b.file_starts)
    assert np.array_equal(a.starts, b.starts) and np.array_equal(a.ends, b.ends)
    assert [a.kind(i) for i in range(len(a))] == [b.kind(i) for i in range(len(b))]


def full_build(settings: Settings, index_dir: Path) -> dict[str, Any]:
    """What a full check of the repository as it is now leaves in a new index."""
    full = settings.with_(index_dir=index_dir)
    with Store.open(full.index_path) as store:
        build_index(full, store, workers=1)
        return stored(store, full.chunking_spec.key)


def every_path(root: Path) -> list[str]:
    """Each file, link, FIFO… under `root` (not folders, not `.git`), as a watch names them."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not os.path.islink(os.path.join(folder, d))]
        links = [d for d in os.listdir(folder) if os.path.islink(os.path.join(folder, d))]
        for name in {*files, *links}:
            found.append(Path(folder, name).relative_to(root).as_posix())
    return sorted(found)


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_every_path_of_the_hostile_repository_checked_alone_ends_as_the_full_walk(
    tmp_path: Path, git: bool
) -> None:
    root = make_hostile_repo(tmp_path / "repo", git=git)
    stash = tmp_path / "stash"
    stash.mkdir()
    # The index first sees the README alone; then every trap arrives, named path by path.
    moved = [p.name for p in root.iterdir() if p.name not in ("README.md", ".git")]
    for name in moved:
        os.rename(root / name, stash / name)
    settings = Settings(repo=root, index_dir=tmp_path / "index", chunk_lines=8)
    key = settings.chunking_spec.key
    with Store.open(settings.index_path) as store:
        first = build_index(settings, store, workers=1)
        assert first.files_indexed == 1
        before = ChunkList.load(store, key)
        for name in moved:
            os.rename(stash / name, root / name)
        paths = every_path(root)
        report = build_index(settings, store, workers=1, only=paths, previous=first)
        assert report.touched is not None  # checked path by path, not by a walk
        assert report.chunks == len(store.chunks(key))
        assert stored(store, key) == full_build(settings, tmp_path / "full")
        same_lists(before.patched(store, report.touched), ChunkList.load(store, key))
        assert "outside_secret.py" not in str(stored(store, key)["chunks"])


def _edit(root: Path) -> list[str]:
    (root / "shop" / "cart.py").write_text("def total_with_tax(cart):\n    return cart * 2\n")
    return ["shop/cart.py"]


def _new_file(root: Path) -> list[str]:
    (root / "shop" / "ledger.py").write_text("def reconcile_ledger():\n    return []\n")
    return ["shop/ledger.py"]


def _delete(root: Path) -> list[str]:
    (root / "shop" / "cart.py").unlink()
    return ["shop/cart.py"]


def _rename(root: Path) -> list[str]:
    (root / "shop" / "cart.py").rename(root / "shop" / "basket.py")
    return ["shop/cart.py", "shop/basket.py"]


def _folder_removed(root: Path) -> list[str]:
    shutil.rmtree(root / "shop")
    return ["shop"]  # the folder's own event: the files inside it must go too


def _now_ignored(root: Path) -> list[str]:
    # ignored by a rule already there when the index was built: checked, and left out
    (root / "shop" / "scratch.log").write_text("def noisy_debug_output():\n    pass\n")
    return ["shop/scratch.log"]


def _too_large(root: Path) -> list[str]:
    (root / "shop" / "cart.py").write_text("x = 1\n" * 40_000)
    return ["shop/cart.py"]


def _secret_file(root: Path) -> list[str]:
    (root / ".env").write_text("STRIPE_KEY=sk_live_0123456789abcdefghijklmn\n")
    return [".env"]


def _link_out(root: Path) -> list[str]:
    (root.parent / "elsewhere.py").write_text("def outside_the_repository():\n    pass\n")
    (root / "shop" / "out.py").symlink_to(root.parent / "elsewhere.py")
    return ["shop/out.py"]


def _binary(root: Path) -> list[str]:
    (root / "shop" / "cart.py").write_bytes(b"\x00\x01binary\x00" * 50)
    return ["shop/cart.py"]


def _vendored(root: Path) -> list[str]:
    (root / "node_modules" / "pad").mkdir(parents=True)
    (root / "node_modules" / "pad" / "index.js").write_text("module.exports = 1;\n")
    return ["node_modules/pad/index.js"]  # its folders' events are left out: see below


CHANGES: dict[str, Callable[[Path], list[str]]] = {
    "edit": _edit,
    "new file": _new_file,
    "delete": _delete,
    "rename": _rename,
    "folder removed": _folder_removed,
    "ignored": _now_ignored,
    "too large": _too_large,
    "secret file": _secret_file,
    "link out of the repository": _link_out,
    "binary": _binary,
    "vendored": _vendored,
}


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_checked_by_its_paths_ends_as_a_full_check(
    tmp_path: Path, change: str, git: bool
) -> None:
    root = make_tiny_repo(tmp_path / "repo")
    (root / ".gitignore").write_text("*.log\n")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    settings = Settings(repo=root, index_dir=tmp_path / "index", chunk_lines=8)
    key = settings.chunking_spec.key
    with Store.open(settings.index_path) as store:
        first = build_index(settings, store, workers=1)
        before = ChunkList.load(store, key)
        paths = CHANGES[change](root)
        report = build_index(settings, store, workers=1, only=paths, previous=first)
        assert report.touched is not None
        assert report.chunks == len(store.chunks(key))
        assert stored(store, key) == full_build(settings, tmp_path / "full")
        same_lists(before.patched(store, report.touched), ChunkList.load(store, key))
        # the rest of the tree keeps the last full check's skips in the report
        assert {s.path for s in first.skipped} - set(paths) <= {s.path for s in report.skipped}


def test_a_folder_among_the_paths_means_every_file_is_checked(tmp_path: Path) -> None:
    root = make_tiny_repo(tmp_path / "repo")
    settings = Settings(repo=root, index_dir=tmp_path / "index", chunk_lines=8)
    key = settings.chunking_spec.key
    with Store.open(settings.index_path) as store:
        build_index(settings, store, workers=1)
        (root / "moved_in").mkdir()  # a folder moved in brings files no event named
        (root / "moved_in" / "gift.py").write_text("def wrap_gift():\n    pass\n")
        report = build_index(settings, store, workers=1, only=["moved_in"])
        assert report.touched is None
        assert "moved_in/gift.py" in store.chunked_paths(key)
