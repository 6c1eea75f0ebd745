"""What changed between a saved search structure's chunks and the current ones: a base and its
drift.

BM25 and the definitions are built over the whole chunk list once (the *base*) and saved with
the table of files they were built from: each file's path, content hash and chunk count, in
chunk order. After an edit, the store's chunk list differs from the base's only in the files
that changed. `drift` compares the two tables and says, for every base chunk, where it sits in
the current list (or that its file changed or went), and which of the current chunks belong to
new or changed files. Only those are read again (a small *delta* built beside the base); the base is
rebuilt when the drift grows past a share of the corpus (`worth_a_delta`).

Chunks are ordered by (path, ordinal) in the store, so a file's chunks are one run of
consecutive indexes in both lists, and an unchanged file (same path, content hash and chunk
count under the same chunking) has the same chunks in the same order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from coderag_tui.core.capped import parse_json
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.persist import loaded_once
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store

# Rebuild the base instead of adding a delta once more than this share of the chunks changed:
# a delta's cost grows with what changed, the base's with the whole corpus.
MAX_DRIFT = 0.10
_TABLE = "files.json"


@dataclass(frozen=True)
class FileTable:
    """Each file's path, content hash and chunk count, in chunk order."""

    paths: tuple[str, ...]
    hashes: tuple[str, ...]
    counts: tuple[int, ...]

    @property
    def n_chunks(self) -> int:
        return sum(self.counts)

    @functools.cached_property
    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(chunk counts, hashes as objects, each chunk's file, each chunk's place in its
        file) as arrays: a saved base's are worked out once however many edits it meets."""
        counts = np.asarray(self.counts, dtype=np.int64)
        n = int(counts.sum())
        file_of = np.repeat(np.arange(len(self.paths)), counts)
        place = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
        return counts, np.asarray(self.hashes, dtype=object), file_of, place

    @classmethod
    def of(cls, chunks: Sequence[Chunk], hashes: Mapping[str, str]) -> FileTable:
        """The table of a chunk list ordered by path; a file the store has no hash for gets ""
        (it never matches, so its chunks are always read again)."""
        if isinstance(chunks, ChunkList):  # files in memory: no text is read
            paths_of = chunks.paths
            counts_of = chunks.file_counts()
            return cls(
                tuple(paths_of), tuple(hashes.get(p, "") for p in paths_of), tuple(counts_of)
            )
        paths: list[str] = []
        counts: list[int] = []
        last = None
        for chunk in chunks:
            if chunk.path != last:
                last = chunk.path
                paths.append(last)
                counts.append(0)
            counts[-1] += 1
        return cls(tuple(paths), tuple(hashes.get(p, "") for p in paths), tuple(counts))

    def save(self, folder: Path) -> None:
        data = {"paths": self.paths, "hashes": self.hashes, "counts": self.counts}
        (folder / _TABLE).write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> FileTable:
        """Read what `save` wrote (once per saved file: `persist.loaded_once`); ValueError
        when it is missing or damaged."""
        try:
            return loaded_once(folder / _TABLE, "file table", lambda: cls._read(folder))
        except OSError as exc:
            raise ValueError(f"the file table at {folder} is damaged: {exc}") from exc

    @classmethod
    def _read(cls, folder: Path) -> FileTable:
        try:
            data = parse_json((folder / _TABLE).read_text(encoding="utf-8"))
            table = cls(
                tuple(str(p) for p in data["paths"]),
                tuple(str(h) for h in data["hashes"]),
                tuple(int(c) for c in data["counts"]),
            )
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"the file table at {folder} is damaged: {exc}") from exc
        if not len(table.paths) == len(table.hashes) == len(table.counts):
            raise ValueError(f"the file table at {folder} is damaged: its columns differ")
        return table


@dataclass(frozen=True)
class Drift:
    """Where a base's chunks sit in the current list, and the current chunks the base does not hold.

    `remap[d]` is the current index of base chunk d, or -1 when its file changed or went; `added`
    holds the current indexes of the chunks of new and changed files, ascending.
    """

    remap: np.ndarray
    added: np.ndarray
    n_chunks: int

    @property
    def removed(self) -> int:
        return int(np.count_nonzero(self.remap < 0))

    @property
    def none(self) -> bool:
        """True when the current list is the base's, chunk for chunk."""
        return (
            not self.added.size
            and self.n_chunks == self.remap.size
            and bool(np.array_equal(self.remap, np.arange(self.remap.size)))
        )

    def worth_a_delta(self, max_share: float = MAX_DRIFT) -> bool:
        """Whether a delta beats rebuilding the base: at most `max_share` of chunks changed."""
        changed = self.added.size + self.removed
        return changed <= max_share * max(self.n_chunks, self.remap.size)

    def save(self, folder: Path) -> None:
        np.save(folder / "remap.npy", self.remap.astype(np.int64), allow_pickle=False)
        np.save(folder / "added.npy", self.added.astype(np.int64), allow_pickle=False)

    @classmethod
    def load(cls, folder: Path, n_chunks: int, n_base: int) -> Drift:
        """Read what `save` wrote; ValueError when it is missing, damaged or out of range."""
        try:
            remap = np.load(folder / "remap.npy", allow_pickle=False)
            added = np.load(folder / "added.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"the drift at {folder} is damaged: {exc}") from exc
        if (
            remap.ndim != 1
            or added.ndim != 1
            or remap.size != n_base
            or (remap.size and int(remap.max()) >= n_chunks)
            or (added.size and (int(added.min()) < 0 or int(added.max()) >= n_chunks))
        ):
            raise ValueError(f"the drift at {folder} does not fit {n_chunks} chunks")
        return cls(remap.astype(np.int64), added.astype(np.int64), n_chunks)


def drift(base: FileTable, current: FileTable) -> Drift:
    """Compare a base's file table with the current one (see `Drift`); vectorised over chunks,
    with one dictionary look-up per file."""
    base_counts, base_hashes, base_file, offset = base.columns
    current_counts = np.asarray(current.counts, dtype=np.int64)
    remap = np.full(int(base_counts.sum()), -1, dtype=np.int64)
    if not current.paths:
        return Drift(remap, np.zeros(0, dtype=np.int64), 0)
    where = dict(zip(current.paths, range(len(current.paths)), strict=True))
    found = np.fromiter(map(where.get, base.paths, repeat(-1)), np.int64, len(base.paths))
    at = np.maximum(found, 0)  # the current file of each base file (meaningful where `same`)
    same = (
        (found >= 0)
        & (base_hashes != "")
        & (base_hashes == np.asarray(current.hashes, dtype=object)[at])
        & (base_counts == current_counts[at])
    )
    # Each base chunk's file and place in it (`offset`): unchanged files keep that place now.
    current_starts = np.cumsum(current_counts) - current_counts
    keep = same[base_file]
    remap[keep] = current_starts[at[base_file[keep]]] + offset[keep]
    matched = np.zeros(len(current.paths), dtype=bool)
    matched[at[same]] = True
    added = np.flatnonzero(~np.repeat(matched, current_counts)).astype(np.int64)
    return Drift(remap, added, current.n_chunks)


def delta_fits(
    saved: Mapping[str, object] | None, base: Mapping[str, object], generation: str, n_chunks: int
) -> bool:
    """Whether a saved delta's metadata says it was built for the current generation on top of
    this base (its metadata `base`), for a list of `n_chunks` chunks."""
    return (
        saved is not None
        and saved.get("generation") == generation
        and saved.get("base") == base.get("generation")
        and saved.get("n_chunks") == n_chunks
    )


class CurrentTable:
    """The current file table of a chunk list, read from the store when first asked for (only a
    structure whose base is out of date needs it), and its drift from each base asked about."""

    def __init__(self, store: Store, chunks: Sequence[Chunk]) -> None:
        self._store = store
        self._chunks = chunks
        self._table: FileTable | None = None
        self._drifts: list[tuple[FileTable, Drift]] = []

    def drift_from(self, base: FileTable) -> Drift:
        """`drift(base, self.table)`, computed once for BM25 and the definitions (built from
        the same chunks, their bases' tables are usually equal)."""
        for seen, found in self._drifts:
            if seen == base:
                return found
        found = drift(base, self.table)
        self._drifts.append((base, found))
        return found

    @property
    def table(self) -> FileTable:
        if self._table is None:
            self._table = FileTable.of(self._chunks, self._store.content_hashes())
        return self._table
