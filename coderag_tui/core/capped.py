"""Reading a small file someone else may have named (a config, a template, a model): never
more than a bound, so a huge or sparse file costs nothing before it is refused."""

from __future__ import annotations

from pathlib import Path


def read_capped(path: Path, limit: int) -> bytes | None:
    """The bytes of `path`, or None when it holds more than `limit` bytes (at most `limit` + 1
    are read). OSError as `open` raises it; callers check `is_file()` first, so a FIFO or a
    folder named like the file is never opened."""
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None
