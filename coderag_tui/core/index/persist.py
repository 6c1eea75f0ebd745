"""Saved search structures (BM25 matrix, dense vectors): atomic folder writes and their metadata.

A folder is written under a temporary name and renamed into place, so a crash mid-write
leaves either the old folder or the new one, never half of one. A saved file is therefore
never changed in place: `loaded_once` keeps what was read from one (by its inode, size and
modification time), so a resident process that applies edit after edit to the same saved
base reads the base once.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from coderag_tui.core.capped import parse_json

_T = TypeVar("_T")
_KEPT = 8  # files whose loaded value is kept (a few bases of one or two chunkings)
_loaded: dict[tuple[str, str], tuple[tuple[int, int, int, int], Any]] = {}
_loaded_lock = threading.Lock()


def loaded_once(path: Path, kind: str, load: Callable[[], _T]) -> _T:
    """`load()`, or what it gave the last time for the file at `path` when that file has not
    been replaced since (same device, inode, size and modification time). `kind` names what
    `load` makes of it. The value is shared: it must never be changed by its users."""
    st = os.stat(path)
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    key = (kind, str(path))
    with _loaded_lock:
        hit = _loaded.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]  # type: ignore[no-any-return]
    value = load()
    with _loaded_lock:
        _loaded.pop(key, None)
        while len(_loaded) >= _KEPT:
            _loaded.pop(next(iter(_loaded)))
        _loaded[key] = (stamp, value)
    return value


def save_folder(
    directory: Path, write: Callable[[Path], None], meta: Mapping[str, Any], meta_name: str
) -> None:
    """Let `write` fill a temporary folder, add `meta` as JSON, then rename it to `directory`."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=directory.name + ".tmp-", dir=directory.parent))
    try:
        write(tmp)
        (tmp / meta_name).write_text(json.dumps(dict(meta)), encoding="utf-8")
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(tmp, directory)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def make_folder_once(
    target: Path, done: Callable[[Path], bool], make: Callable[[Path], None]
) -> Path:
    """`target`, made by `make` into a temporary folder renamed into place unless `done`
    says it is there already: an interrupted run leaves nothing half-made, and when another
    process finishes first its folder is kept."""
    if done(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        make(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not done(target):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def read_folder_meta(directory: Path, meta_name: str, fmt: object) -> dict[str, Any] | None:
    """The folder's metadata when it exists, parses and has format `fmt`; otherwise None."""
    try:
        meta = parse_json((directory / meta_name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        return None
    return meta
