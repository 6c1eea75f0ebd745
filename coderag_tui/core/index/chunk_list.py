"""The current chunks of one chunking: where each one is, in memory; its text, in the store.

A search needs every chunk's file and lines (to rank, to group by file, to leave a query's own
lines out) but the text of only the few it shows or packs. Loading every text made a warm
start read the whole chunks table, growing with the corpus; a `ChunkList` reads the files
and line spans (far less: benchmarks/README.md, "Chunk texts read when shown") and fetches a chunk's
text when the chunk is asked for. Iterating it (what a full BM25, definitions or dense build
does) reads the texts page by page, so no build holds two copies of the corpus.

Indexes are those of `Store.chunks()`: ordered by (path, ordinal), so a file's chunks are one
run, and its ordinal is the chunk's place in that run.
"""

from __future__ import annotations

import bisect
import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import overload

import numpy as np

from coderag_tui.core.capped import parse_json
from coderag_tui.core.index.persist import read_folder_meta, save_folder
from coderag_tui.core.index.store import Store
from coderag_tui.core.records import Chunk

_PAGE = 4096  # chunks read per query while iterating
_KEEP = 4096  # chunks kept once read (the hits of recent searches)
_FORMAT = 1  # of the saved files and spans
_META = "coderag-chunks.json"


def places_of(paths: list[str], wanted: Sequence[str]) -> np.ndarray:
    """Where each of `wanted` goes in the sorted `paths` (bisection, before an equal one)."""
    return np.fromiter((bisect.bisect_left(paths, p) for p in wanted), np.int64, len(wanted))


def chunk_list_dir(index_path: Path, spec_key: str) -> Path:
    """Where the files and spans of one chunking are saved (beside its BM25 folders)."""
    return index_path.with_suffix(".bm25") / f"{spec_key.replace(':', '_')}-chunks"


class ChunkList(Sequence[Chunk]):
    """The chunks of one chunking of a store, texts read on demand (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        spec_key: str,
        files: Sequence[tuple[str, str | None, int]],
        spans: Sequence[tuple[int, int]] | np.ndarray,
        kinds: Sequence[str] | None,
    ) -> None:
        counts = np.fromiter((f[2] for f in files), dtype=np.int64, count=len(files))
        self._fill(store, spec_key, [f[0] for f in files], [f[1] for f in files], counts)
        self._place(spans, kinds)

    def _fill(
        self,
        store: Store,
        spec_key: str,
        paths: list[str],
        languages: list[str | None],
        counts: np.ndarray,
    ) -> None:
        self._store = store
        self._spec_key = spec_key
        self.paths: list[str] = paths
        self.languages: list[str | None] = languages
        self.file_starts = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.file_starts[1:])
        self.file_of = np.repeat(np.arange(len(paths), dtype=np.int64), counts)

    def _place(
        self, spans: Sequence[tuple[int, int]] | np.ndarray, kinds: Sequence[str] | None
    ) -> None:
        n = int(self.file_starts[-1])
        if len(spans) != n or (kinds is not None and len(kinds) != n):
            raise ValueError(f"the chunks of {self._spec_key} changed while they were read")
        lines = np.asarray(spans, dtype=np.int64).reshape(n, 2)  # ValueError when damaged
        self.starts = lines[:, 0]
        self.ends = lines[:, 1]
        self._kinds = kinds
        self._read: dict[int, Chunk] = {}

    @classmethod
    def load(cls, store: Store, spec_key: str, saved: Path | None = None) -> ChunkList:
        """The store's chunks of `spec_key` (files and spans read now, texts when asked for).

        With `saved`, a folder: the files and spans saved there for the store's generation
        of `spec_key` are read instead of the store's rows (0.47 s on the stdlib x30), and
        saved there when they are not.
        """
        with store.snapshot():  # another process may write between these reads
            generation = store.generation(spec_key)
            if saved is not None:
                with contextlib.suppress(ValueError, KeyError, TypeError, OSError):
                    meta = read_folder_meta(saved, _META, _FORMAT)
                    if meta is not None and meta.get("generation") == generation:
                        return cls._from_folder(store, spec_key, saved)
            files = store.chunk_files(spec_key)
            rows, kinds = store.chunk_spans(spec_key)
        counts = np.fromiter((f[2] for f in files), dtype=np.int64, count=len(files))
        expected = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        if rows.shape[0] != expected.size or not np.array_equal(rows[:, 0], expected):
            raise ValueError(f"the chunks of {spec_key} changed while they were read")
        chunks = cls(store, spec_key, files, rows[:, 1:], kinds)
        if saved is not None:
            with contextlib.suppress(OSError):  # a read-only cache costs a re-read next time
                save_folder(
                    saved, chunks._write, {"format": _FORMAT, "generation": generation}, _META
                )
        return chunks

    def patched(self, store: Store, touched: Iterable[str]) -> ChunkList:
        """This list with the chunks of the files `touched` read again from `store` (gone,
        changed or new files), the rest kept: what `load` would give when nothing else
        changed since this list was read, without reading every chunk's span."""
        fresh = store.file_spans(self._spec_key, touched)
        added = sorted(fresh)
        # The files that leave (touched ones this list holds), found by bisection: paths are
        # in order. Each new file goes where the kept files' order puts it.
        names = sorted(set(touched))
        gone = [
            i for i, p in zip(places_of(self.paths, names), names, strict=True) if self._holds(i, p)
        ]
        kept = np.delete(np.arange(len(self.paths), dtype=np.int64), gone)
        at_old = places_of(self.paths, added)
        at_kept = at_old - np.searchsorted(np.asarray(gone, dtype=np.int64), at_old)
        which = np.insert(kept, at_kept, -1 - np.arange(len(added)))
        counts_new = np.fromiter((len(fresh[p][1]) for p in added), np.int64, len(added))
        starts_new = len(self) + np.cumsum(counts_new) - counts_new
        old = which >= 0
        counts = np.empty(len(which), dtype=np.int64)
        source = np.empty(len(which), dtype=np.int64)
        counts[old] = np.diff(self.file_starts)[which[old]]
        source[old] = self.file_starts[which[old]]
        counts[~old], source[~old] = counts_new[-1 - which[~old]], starts_new[-1 - which[~old]]
        # Row k of the new list is row `source[file] + (k - its file's first row)` of the old
        # rows followed by the new ones.
        first = np.cumsum(counts) - counts
        rows = np.repeat(source - first, counts) + np.arange(int(counts.sum()), dtype=np.int64)
        new_spans = [span for path in added for span in fresh[path][1]]
        spans = np.concatenate(
            [
                np.stack([self.starts, self.ends], axis=1),
                np.asarray([s[:2] for s in new_spans], dtype=np.int64).reshape(-1, 2),
            ]
        )[rows]
        kinds: list[str] | None = None
        new_kinds = [s[2] for s in new_spans]
        if self._kinds is not None or any(k != "lines" for k in new_kinds):
            every = np.asarray([*(self._kinds or ["lines"] * len(self)), *new_kinds], dtype=object)
            kinds = every[rows].tolist()
        at = np.where(old, which, len(self.paths) - 1 - which).tolist()
        paths = [*self.paths, *added]
        languages = [*self.languages, *(fresh[p][0] for p in added)]
        patched = ChunkList.__new__(ChunkList)
        patched._fill(
            store, self._spec_key, [paths[i] for i in at], [languages[i] for i in at], counts
        )
        patched._place(spans, kinds)
        return patched

    def _holds(self, i: int, path: str) -> bool:
        return bool(i < len(self.paths) and self.paths[i] == path)

    def _write(self, folder: Path) -> None:
        columns = {"paths": self.paths, "languages": self.languages, "kinds": self._kinds}
        (folder / "files.json").write_text(json.dumps(columns), encoding="utf-8")
        np.save(folder / "counts.npy", np.diff(self.file_starts), allow_pickle=False)
        spans = np.stack([self.starts, self.ends], axis=1) if len(self) else np.zeros((0, 2))
        np.save(folder / "spans.npy", spans.astype(np.int64), allow_pickle=False)

    @classmethod
    def _from_folder(cls, store: Store, spec_key: str, folder: Path) -> ChunkList:
        columns = parse_json((folder / "files.json").read_text(encoding="utf-8"))
        counts = np.load(folder / "counts.npy", allow_pickle=False)
        spans = np.load(folder / "spans.npy", allow_pickle=False)
        paths, languages, kinds = columns["paths"], columns["languages"], columns["kinds"]
        if len(paths) != len(languages) or len(paths) != len(counts) or spans.ndim != 2:
            raise ValueError(f"the chunk list at {folder} is damaged")
        files = list(zip(paths, languages, counts.tolist(), strict=True))
        return cls(store, spec_key, files, spans, kinds)

    def __len__(self) -> int:
        return int(self.starts.size)

    @property
    def n_files(self) -> int:
        return len(self.paths)

    def file_counts(self) -> list[int]:
        """Chunks per file, in file order."""
        return np.diff(self.file_starts).tolist()  # type: ignore[no-any-return]

    def path(self, index: int) -> str:
        return self.paths[int(self.file_of[index])]

    def kind(self, index: int) -> str:
        return "lines" if self._kinds is None else self._kinds[index]

    @overload
    def __getitem__(self, index: int) -> Chunk: ...

    @overload
    def __getitem__(self, index: slice) -> list[Chunk]: ...

    def __getitem__(self, index: int | slice) -> Chunk | list[Chunk]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"chunk {index} of {len(self)}")
        chunk = self._read.get(i)
        if chunk is None:
            chunk = self._fetch(i)
            if len(self._read) >= _KEEP:
                self._read.clear()
            self._read[i] = chunk
        return chunk

    @property
    def _source(self) -> Store:
        """The store, opened again for reading when its engine has closed it (a stage's
        chunks stay readable after the engine that served them is gone)."""
        if self._store.closed:
            self._store = Store.open(self._store.path, read_only=True)
        return self._store

    def _fetch(self, i: int) -> Chunk:
        fid = int(self.file_of[i])
        path = self.paths[fid]
        start, end = int(self.starts[i]), int(self.ends[i])
        row = self._source.chunk_text(self._spec_key, path, i - int(self.file_starts[fid]))
        # A file re-indexed since this list was read (a newer list is on its way) shows "".
        text = row[2] if row is not None and row[:2] == (start, end) else ""
        return Chunk(path, start, end, self.kind(i), self.languages[fid], text)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same chunks (texts included), like a list."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable like a list: never a dict key

    def __iter__(self) -> Iterator[Chunk]:
        """Every chunk with its text, read a page at a time."""
        after: tuple[str, int] | None = None
        given = 0
        while given < len(self):
            page = self._source.chunk_page(self._spec_key, after, _PAGE)
            if not page:
                break
            for chunk, _ in page[: len(self) - given]:
                yield chunk
            given += len(page)
            last = page[-1]
            after = (last[0].path, last[1])
        if given < len(self):
            raise ValueError(f"the chunks of {self._spec_key} changed while they were read")
