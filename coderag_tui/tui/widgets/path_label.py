"""Chunk labels that never read alike, in whatever width a list leaves them.

A label is a path and a line range (`src/flask/sansio/app.py:1-64`). Where it does not fit,
it is cut as editors name their tabs: to the shortest ending of the path that no other path
on screen shares (`sansio/app.py` beside `flask/app.py`, plain `ctx.py` where only one file has
that name), its file name always whole. Leading folders go first (`src/…/sansio/app.py:1-64`,
`…/sansio/app.py:1-64`, `sansio/app.py:1-64`), then the line range from its end (`:1` still
tells two chunks of a file apart); only a name too long for the whole row is cut itself.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from rich.cells import cell_len, get_character_cell_size

_LINES = re.compile(r":\d+-\d+$")


def split_label(label: str) -> tuple[str, str]:
    """`src/app.py:12-40` -> ("src/app.py", ":12-40"); a label without a line range keeps it all."""
    found = _LINES.search(label)
    return (label[: found.start()], found.group()) if found else (label, "")


def distinct_parts(paths: Iterable[str]) -> dict[str, int]:
    """For each path, how many of its last parts tell it apart from every other path: 1 where
    no other file has its name, 2 for `flask/app.py` beside `sansio/app.py`, all of them for a
    path that is itself the ending of another (`app.py` beside `src/app.py`)."""
    splits = {path: path.split("/") for path in set(paths)}
    endings: Counter[str] = Counter()
    for parts in splits.values():
        for k in range(1, len(parts) + 1):
            endings["/".join(parts[-k:])] += 1
    found: dict[str, int] = {}
    for path, parts in splits.items():
        n = len(parts)
        found[path] = next((k for k in range(1, n) if endings["/".join(parts[-k:])] == 1), n)
    return found


def ending(path: str, parts: int) -> str:
    """The last `parts` parts of a path (`sansio/app.py`)."""
    if parts <= 1:
        return path[path.rfind("/") + 1 :]
    return "/".join(path.split("/")[-parts:])


def least_cells(path: str, lines: str, parts: int) -> int:
    """The cells of the shortest label that keeps the distinct ending and the whole line range:
    `sansio/app.py:1-64` (the whole label when that is shorter)."""
    if path.isascii() and lines.isascii():
        return len(ending(path, parts)) + len(lines)
    return cell_len(ending(path, parts)) + cell_len(lines)


def _start_cells(text: str, cells: int) -> str:
    """The longest start of `text` that fits in `cells` terminal cells."""
    used = 0
    for i, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return text[:i]
    return text


def _end_cells(text: str, cells: int) -> str:
    """The longest end of `text` that fits in `cells` terminal cells."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += get_character_cell_size(text[i])
        if used > cells:
            return text[i + 1 :]
    return text


def _shorter_lines(lines: str) -> tuple[str, ...]:
    """The line range and what is left of it as it is cut from its end: `:257-320`, `:257`, ``."""
    first = lines.split("-", 1)[0]
    return tuple(dict.fromkeys((lines, first, "")))


def fit_label(path: str, lines: str, parts: int, width: int) -> str:
    """`path` and `lines` (`:257-320`) in at most `width` cells, the last `parts` parts of the
    path kept whole as long as anything can be (see the module's docstring for the order)."""
    if width <= 0:
        return ""
    whole = path + lines
    if cell_len(whole) <= width:
        return whole
    if width == 1:
        return "…"
    keep = ending(path, parts)
    head = path[: len(path) - len(keep)]  # `src/flask/` or ""
    if head:
        # Whole leading folders, as many as fit, then `…/`: `src/…/sansio/app.py:1-64`.
        room = width - cell_len(keep + lines) - 2
        if room >= 0:
            kept = ""
            for folder in head.split("/")[:-1]:
                if cell_len(kept) + cell_len(folder) + 1 > room:
                    break
                kept += folder + "/"
            return f"{kept}…/{keep}{lines}"
    for cut in _shorter_lines(lines):
        if cell_len(keep + cut) <= width:
            return keep + cut
    name = keep[keep.rfind("/") + 1 :]
    name_cells = cell_len(name)
    if name_cells + 2 <= width and len(keep) > len(name):
        # The distinguishing folders from the left: `…nsio/app.py`.
        return "…" + _end_cells(keep[: len(keep) - len(name)], width - 1 - name_cells) + name
    if name_cells <= width:
        return name
    # A name too long for the row: its middle gives way (`sess…ns.py`).
    front = _start_cells(name, width // 2)
    return f"{front}…{_end_cells(name, width - 1 - cell_len(front))}"
