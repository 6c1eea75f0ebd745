"""The seed paper's structure-aware lists for code-to-code queries: files near the query's
file in the tree, or linked to it by imports, put before the lexical list.

Both need the file a query comes from (code mode, `--from FILE:LINE`, a completion row); a
natural-language question has none, and then they do not apply. Each list is a set of files
put first, ordered by their best rank in the lexical list (files it did not find after, in
their own order), then the lexical list backfills the rest (the paper's prepend-and-backfill).
The query's own file is never put first: its other chunks come through the backfill.

- `path-distance`: the files within `PATH_DISTANCE_MAX` folder steps of the query's file
  (its folder, the folder above and the folders below), nearest first;
- `imports`: the files the query's file imports, then those importing it
  (`core.index.imports`).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Mapping, Sequence

PATH_DISTANCE = "path-distance"
IMPORTS = "imports"
STRUCTURE_LISTS: tuple[str, ...] = (PATH_DISTANCE, IMPORTS)
# Folder steps from the query's file a file may be to be put first: its own folder (0), the
# folder above or one below (1). Two would take sibling folders too, most of a flat package.
PATH_DISTANCE_MAX = 1
NO_ORIGIN = (
    "it needs a query with an origin file (code-to-code: --from FILE:LINE or a completion "
    "row); a natural-language question has none"
)


def _folders(path: str) -> list[str]:
    folder = posixpath.dirname(path)
    return folder.split("/") if folder else []


def path_distance(a: str, b: str) -> int:
    """Folder steps between two files' folders: 0 in the same folder, 1 for the folder
    above or one below, 2 for a sibling folder, and so on."""
    fa, fb = _folders(a), _folders(b)
    common = 0
    for x, y in zip(fa, fb, strict=False):
        if x != y:
            break
        common += 1
    return len(fa) + len(fb) - 2 * common


def prepend(first: Iterable[str], ranked: Sequence[str]) -> list[str]:
    """`first`, then `ranked` without them (each file once)."""
    out = dict.fromkeys(first)
    out.update(dict.fromkeys(ranked))
    return list(out)


def _by_rank(files: Iterable[str], ranked: Sequence[str]) -> list[str]:
    """`files` ordered by their rank in `ranked`, those it lacks after in their own order."""
    rank = {path: i for i, path in enumerate(ranked)}
    listed = list(dict.fromkeys(files))
    return sorted(listed, key=lambda p: (rank.get(p, math.inf), listed.index(p)))


def path_distance_files(
    origin: str,
    ranked: Sequence[str],
    every_file: Iterable[str],
    max_distance: int = PATH_DISTANCE_MAX,
) -> list[str]:
    """The path-distance list: files within `max_distance` of `origin`, nearest first (ties
    by their lexical rank), then the lexical list `ranked`."""
    near = [p for p in set(every_file) if p != origin and path_distance(origin, p) <= max_distance]
    rank = {path: i for i, path in enumerate(ranked)}
    near.sort(key=lambda p: (path_distance(origin, p), rank.get(p, math.inf), p))
    return prepend(near, ranked)


def import_files(origin: str, related: Sequence[str], ranked: Sequence[str]) -> list[str]:
    """The imports list: the files related to `origin` by imports (`ImportGraph.related`),
    by their lexical rank, then the lexical list `ranked`."""
    return prepend(_by_rank((p for p in related if p != origin), ranked), ranked)


def chunks_first(
    files: Sequence[str], ranked: Sequence[int], file_chunks: Mapping[str, Sequence[int]]
) -> list[int]:
    """A chunk-level list from a file-level one: each file's chunks in the lexical order
    `ranked` (chunk numbers), then its unranked chunks in file order; files in `files`' order,
    then any ranked chunk of another file (for packing a budget chunk by chunk)."""
    position = {c: i for i, c in enumerate(ranked)}
    out: list[int] = []
    for path in files:
        chunks = file_chunks.get(path, ())
        out += sorted(chunks, key=lambda c: (position.get(c, math.inf), c))
    seen = set(out)
    out += [c for c in ranked if c not in seen]
    return out
