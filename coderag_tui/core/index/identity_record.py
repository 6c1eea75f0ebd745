"""Whether an index file may have changed since coderag last knew it sound, without reading it.

SQLite's page check (`PRAGMA quick_check`) reads every page of the index (a cost that grows
with the index: benchmarks/README.md, "Index health checks"), yet it can only
find damage that a writer other than
coderag's own SQLite made: another program, a disk fault, a crash in the middle of a write.
So a small record beside the index (`<index>.sound`) keeps the identity of the file and of
its write-ahead log as the page check last found them sound, or as coderag's own committed
writes last left a file known sound; a run that finds the same identity skips the check, and
any other (no record, another size, time or inode) runs it.

The identity holds the change time (ctime), which every write and every `utime` set to the
file system's clock and no program can set back, so a program that rewrites the file and
restores its size and modification time still changes it. A write in the same clock tick as
the recorded state would not, so the record also keeps a time read from the file system's own
clock before the identity was taken, and matches only files last changed before it (git's
rule for "racily clean" files): a record taken in the tick of the last write matches
nothing, and the next run checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.core.capped import parse_json

RECORD_SUFFIX = ".sound"
_FORMAT = 1
_TICK_POLL_S = 0.001

# size, mtime_ns, ctime_ns, inode, device
Identity = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Snapshot:
    """The identity of an index file and of its WAL (None when absent or empty, as SQLite
    treats it), and `clock_ns`, the file system's clock read just before them."""

    clock_ns: int
    index: Identity
    wal: Identity | None

    @property
    def settled(self) -> bool:
        """Were both files last changed before `clock_ns`, so that any later write changes them?"""
        return all(
            max(ident[1], ident[2]) < self.clock_ns
            for ident in (self.index, self.wal)
            if ident is not None
        )


def record_path(index: Path) -> Path:
    """Where the record of `index` lies: beside it, `<index>.sound`."""
    return index.with_name(index.name + RECORD_SUFFIX)


def take(index: Path) -> Snapshot | None:
    """The index's identity now, or None when it cannot be taken (no file, no writable folder)."""
    clock = _file_system_clock(record_path(index))
    if clock is None:
        return None
    try:
        ident = _identity(index)
        wal = _identity(Path(f"{index}-wal"))
    except OSError:
        return None
    if ident is None:
        return None
    return Snapshot(clock, ident, wal)


def take_settled(index: Path, wait_s: float) -> Snapshot | None:
    """`take`, retried for up to `wait_s` until the file system's clock has ticked past the
    last write (a few milliseconds on a coarse clock; never on a fine one)."""
    deadline = time.monotonic() + wait_s
    while True:
        snapshot = take(index)
        if snapshot is None or snapshot.settled or time.monotonic() >= deadline:
            return snapshot
        time.sleep(_TICK_POLL_S)


def write(index: Path, snapshot: Snapshot) -> None:
    """Keep `snapshot` as the record of `index` (best effort: a record not written only costs
    the next run a page check)."""
    target = record_path(index)
    temporary = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    data = {
        "format": _FORMAT,
        "clock_ns": snapshot.clock_ns,
        "index": list(snapshot.index),
        "wal": None if snapshot.wal is None else list(snapshot.wal),
    }
    try:
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, target)
    except OSError:
        temporary.unlink(missing_ok=True)


def matches(index: Path) -> bool:
    """Does the record beside `index` match the file and its WAL as they are now?"""
    try:
        data = parse_json(record_path(index).read_bytes())
        recorded = Snapshot(
            int(data["clock_ns"]),
            _as_identity(data["index"]),
            None if data["wal"] is None else _as_identity(data["wal"]),
        )
        if data["format"] != _FORMAT or not recorded.settled:
            return False
        now = (_identity(index), _identity(Path(f"{index}-wal")))
    except (OSError, ValueError, TypeError, KeyError):
        return False
    return now == (recorded.index, recorded.wal)


def forget(index: Path) -> None:
    """Drop the record of `index` (its file was moved aside)."""
    with contextlib.suppress(OSError):
        record_path(index).unlink(missing_ok=True)


def _identity(path: Path) -> Identity | None:
    """What `stat` says identifies the file's content; None when it is absent or empty."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if st.st_size == 0:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _as_identity(value: object) -> Identity:
    if not isinstance(value, list) or len(value) != 5:
        raise ValueError("not an identity")
    size, mtime, ctime, inode, device = (int(v) for v in value)
    return (size, mtime, ctime, inode, device)


def _file_system_clock(path: Path) -> int | None:
    """The file system's own clock (its time, its granularity): `path`'s times set to now."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.utime(path)
            return os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
    except OSError:
        return None
