"""Reading a small file someone else may have named (a config, a template, a model): never
more than a bound, so a huge or sparse file costs nothing before it is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_capped(path: Path, limit: int) -> bytes | None:
    """The bytes of `path`, or None when it holds more than `limit` bytes (at most `limit` + 1
    are read). OSError as `open` raises it; callers check `is_file()` first, so a FIFO or a
    folder named like the file is never opened."""
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def parse_json(text: str | bytes) -> Any:
    """`json.loads(text)`, with JSON nested too deeply for the decoder (100k `[`) a ValueError
    like any other damage, instead of a RecursionError that no caller expects: a cache file
    or a line someone else wrote is then repaired or refused, never a traceback."""
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
