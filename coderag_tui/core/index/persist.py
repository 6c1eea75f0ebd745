"""Saved search structures (BM25 matrix, dense vectors): atomic folder writes and their metadata.

A folder is written under a temporary name and renamed into place, so a crash mid-write
leaves either the old folder or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


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
        meta = json.loads((directory / meta_name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        return None
    return meta
