"""The record beside an index vouches for the file exactly as coderag last knew it sound."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from coderag_tui.core.index import soundness


def _index(tmp_path: Path) -> Path:
    path = tmp_path / "idx.sqlite"
    path.write_bytes(b"x" * 4096)
    return path


def _settled(path: Path) -> soundness.Snapshot:
    """A snapshot taken once the file system's clock has ticked past the file's last change."""
    snapshot = soundness.take_settled(path, 2.0)
    assert snapshot is not None and snapshot.settled
    return snapshot


def test_a_settled_record_vouches_for_the_same_file(tmp_path: Path) -> None:
    path = _index(tmp_path)
    soundness.write(path, _settled(path))
    assert soundness.vouches(path)


def test_any_change_to_the_file_or_its_wal_ends_the_vouching(tmp_path: Path) -> None:
    path = _index(tmp_path)
    st = path.stat()
    changes: list[Callable[[], object]] = [
        lambda: os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns)),  # same times, new ctime
        lambda: path.write_bytes(b"y" * 4096),
        lambda: Path(f"{path}-wal").write_bytes(b"w" * 32),
    ]
    for change in changes:
        soundness.write(path, _settled(path))
        assert soundness.vouches(path)
        change()
        assert not soundness.vouches(path)


def test_a_record_taken_in_the_tick_of_the_last_write_vouches_for_nothing(
    tmp_path: Path,
) -> None:
    path = _index(tmp_path)
    taken = soundness.take(path)
    assert taken is not None
    ctime = taken.index[2]
    racy = soundness.Snapshot(ctime, (*taken.index[:1], ctime, ctime, *taken.index[3:]), None)
    assert not racy.settled
    soundness.write(path, racy)
    assert not soundness.vouches(path)


def test_no_record_or_a_broken_one_vouches_for_nothing(tmp_path: Path) -> None:
    path = _index(tmp_path)
    assert not soundness.vouches(path)
    for text in ("", "{", '{"format": 1}', "[1, 2]", '{"format": 1, "clock_ns": "x"}'):
        soundness.record_path(path).write_text(text, encoding="utf-8")
        assert not soundness.vouches(path)


def test_an_empty_wal_counts_as_none(tmp_path: Path) -> None:
    """SQLite leaves an empty WAL while a connection reads: it holds nothing to vouch for."""
    path = _index(tmp_path)
    soundness.write(path, _settled(path))
    Path(f"{path}-wal").write_bytes(b"")
    assert soundness.vouches(path)
