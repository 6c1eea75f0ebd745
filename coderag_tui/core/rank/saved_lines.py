"""Lines of a saved text file, decoded one at a time when asked for.

The vocabularies and definition tables coderag saves are sorted lines searched by bisection:
a lookup decodes ~20 lines, where a list of every line cost a later search on a 35,000-file
repository 0.15 s per file to make (529,411 BM25 words).
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence
from pathlib import Path
from typing import overload

import numpy as np

_NEWLINE = 10  # b"\n"


class SavedLines(Sequence[str]):
    """UTF-8 lines held as bytes or a memory map, at the offsets `at` says (each line's
    start, then the end; a line's span may end with its newline, which is not part of it)."""

    def __init__(self, data: bytes | mmap.mmap, at: np.ndarray) -> None:
        self.data = data
        self.at = at

    @classmethod
    def split(cls, data: bytes) -> SavedLines:
        """The lines of `data` as `"\\n".join(lines)` wrote them (no text: no line)."""
        if not data:
            return cls(data, np.zeros(1, dtype=np.int64))
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _NEWLINE)
        return cls(data, np.concatenate(([0], ends + 1, [len(data)])).astype(np.int64))

    @classmethod
    def open(cls, path: Path, at: Path, count: int) -> SavedLines:
        """The `count` lines of the file at `path`, memory-mapped, at the offsets saved in `at`
        (`np.save`); ValueError when they do not fit the file."""
        offsets = np.load(at, allow_pickle=False)
        size = path.stat().st_size
        if offsets.ndim != 1 or len(offsets) != count + 1 or int(offsets[-1]) != size:
            raise ValueError("the entries and their offsets do not match")
        if not size:
            return cls(b"", offsets)
        with path.open("rb") as handle:
            return cls(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), offsets)

    def __len__(self) -> int:
        return len(self.at) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        start, end = int(self.at[index]), int(self.at[index + 1])
        if end > start and self.data[end - 1] == _NEWLINE:
            end -= 1
        return self.data[start:end].decode("utf-8", "replace")

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same lines
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal to a list of its lines: unhashable
