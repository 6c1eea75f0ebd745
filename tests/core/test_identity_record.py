"""The record beside an index matches the file exactly as coderag last knew it sound."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from coderag_tui.core.index import identity_record


def _index(tmp_path: Path) -> Path:
    path = tmp_path / "idx.sqlite"
    path.write_bytes(b"x" * 4096)
    return path


def _settled(path: Path) -> identity_record.Snapshot:
    """A snapshot taken once the file system's clock has ticked past the file's last change."""
    snapshot = identity_record.take_settled(path, 2.0)
    assert snapshot is not None and snapshot.settled
    return snapshot


def test_a_settled_record_matches_the_same_file(tmp_path: Path) -> None:
    path = _index(tmp_path)
    identity_record.write(path, _settled(path))
    assert identity_record.matches(path)


def test_any_change_to_the_file_or_its_wal_ends_the_match(tmp_path: Path) -> None:
    path = _index(tmp_path)
    st = path.stat()
    changes: list[Callable[[], object]] = [
        lambda: os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns)),  # same times, new ctime
        lambda: path.write_bytes(b"y" * 4096),
        lambda: Path(f"{path}-wal").write_bytes(b"w" * 32),
    ]
    for change in changes:
        identity_record.write(path, _settled(path))
        assert identity_record.matches(path)
        change()
        assert not identity_record.matches(path)


def test_a_record_taken_in_the_tick_of_the_last_write_matches_nothing(
    tmp_path: Path,
) -> None:
    path = _index(tmp_path)
    taken = identity_record.take(path)
    assert taken is not None
    ctime = taken.index[2]
    racy = identity_record.Snapshot(ctime, (*taken.index[:1], ctime, ctime, *taken.index[3:]), None)
    assert not racy.settled
    identity_record.write(path, racy)
    assert not identity_record.matches(path)


def test_no_record_or_a_broken_one_matches_nothing(tmp_path: Path) -> None:
    path = _index(tmp_path)
    assert not identity_record.matches(path)
    for text in ("", "{", '{"format": 1}', "[1, 2]", '{"format": 1, "clock_ns": "x"}'):
        identity_record.record_path(path).write_text(text, encoding="utf-8")
        assert not identity_record.matches(path)


def test_an_empty_wal_counts_as_none(tmp_path: Path) -> None:
    """SQLite leaves an empty WAL while a connection reads: it holds nothing to match."""
    path = _index(tmp_path)
    identity_record.write(path, _settled(path))
    Path(f"{path}-wal").write_bytes(b"")
    assert identity_record.matches(path)
