"""Build the definitions of a repository's first index in another process: after it is
written, in the background, or while it is written, waited for.

The definitions are the costliest part of a cold lexical stage: tree-sitter parses every file
of a language without a scanner, ~45% of the CPU of a cold index of a 118k-chunk monorepo
(benchmarks/README.md, "A monorepo of 20 repositories"). When BM25 follows the build in a
second process (`core.rank.bm25_process`), the definitions are built by a child too: a new
interpreter with the parent's `sys.path`, as `core.rank.definitions_process` does, that opens
the store read-only and reads the build by row id (`Store.chunks_after`): a file's chunks are
written together, in line order, so once a later file's rows show up a file is whole, and it
is put back together, scanned or parsed (`definitions.file_found`).

In the background (`definitions_background`, the default): `start(..., written=True)` runs
the child once BM25 is ready and `Follower.leave` leaves it to finish on its own, at low
priority. It reads the whole build in one snapshot, taken before it holds the lock that tells
every run it is at work (`being_built`): until the lock is released, searches rank without
the definitions (`lexical._definitions_or_later`), and an edit indexed meanwhile leaves its
snapshot, and what it saves, as they were (the next search adds a delta of the changed files).
Both cores are free by then, and tree-sitter holds the GIL: the child hands files to a helper
process (`core.rank.parse_helper`) as long as it has room for them, and parses the rest itself.

Waited for (`definitions_background = false`, as `coderag eval` runs): `start` runs it beside
BM25's child while the index is written, and it parses each file as soon as it is whole. When
the parent has written the index it sends the store's generation and chunk count
(`Follower.done`) and waits. The child then reads the chunks' order in one snapshot; a file
whose row ids are those it followed keeps what was found, any other (missed, or written
again) is read in that snapshot and done now; with the generation and count those the parent
sent, it saves the definitions (and the parsed files' cache) exactly as
`load_or_build_definitions` would, which then loads them. Anything else (the store changed,
the child failed, was killed or too slow): it saves nothing and the parent builds them as
without it. The result is the same either way (a test holds the two equal). It ends when its
parent does (`definitions_process.ParentWatch`), unless it was left to finish.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.core.rank import definitions_process, parse_helper

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.core.rank.definitions import FileDefinition, ParseJob
    from coderag_tui.core.records import Chunk
    from coderag_tui.settings import Settings

PAGE = 2048  # chunks read per query while following the build
LOCK_WAIT_S = 1.0  # how long a follower waits for the lock that says it builds them
NICE = 10  # the niceness of a child left to build them in the background (see `start`)
WAIT_BUILT_S = 600.0  # how long a run that will not rank without them waits for that child

# What the last `start` or `Follower.finish` did, for benchmarks and tests (one sentence).
last_outcome = ""

_BOOT = definitions_process.boot(__name__)


def _record(outcome: str) -> None:
    global last_outcome
    last_outcome = outcome


def start(
    store: Store, settings: Settings, *, written: bool = False
) -> definitions_process.Follower | None:
    """A child following the first build of `settings`' chunking into `store` to build its
    definitions (see the module docstring); None when the code signals do not read them,
    they are saved already, or there is no second core. `written`: the build is written
    already (the child is left to build them in the background, `lexical._with_second`)."""
    from coderag_tui.core.rank.definitions import (
        definitions_dir,
        definitions_wanted,
        saved_generation,
    )

    directory = definitions_dir(settings)
    if not definitions_wanted(settings):
        _record("not wanted (the code signals that read them are off)")
        return None
    reason = definitions_process.no_follower()
    if reason is not None:
        _record(reason)
        return None
    key = settings.chunking_spec.key
    if (store.chunk_count(key) and not written) or saved_generation(directory) is not None:
        _record("built in-process (not a first index)")
        return None
    args = {
        "path": sys.path,
        "store": str(Path(store.path).resolve()),
        "spec_key": key,
        "directory": str(directory.resolve()),
        "written": written,
        "nice": NICE if written else 0,  # in the background: searches come first
    }
    return definitions_process.spawn(_BOOT, args, definitions_process.Follower, _record)


class _Followed:
    """What the child found in each whole file it followed: by path, the file's row ids, its
    definitions and its entry for the parsed files' cache; `known` holds the cache's entries
    and those of every file parsed since. With a `helper` (in the background), the helper
    parses each file its pipe has room for, and this process the rest."""

    def __init__(
        self, known: dict[str, list[FileDefinition]], helper: parse_helper.Helper | None = None
    ) -> None:
        self.known = known
        self.files: dict[str, tuple[tuple[int, ...], list[FileDefinition], dict[str, Any]]] = {}
        self._open: list[tuple[int, Chunk]] = []  # the rows of the file being read
        self.helper = helper
        # The files handed to the helper, in order: each job, and every file with its text.
        self._handed: dict[str, tuple[ParseJob, list[tuple[str, tuple[int, ...]]]]] = {}

    def add(self, rows: list[tuple[int, Chunk]]) -> None:
        """Take a page of rows; a file is done when the next one's rows start."""
        for row in rows:
            if self._open and row[1].path != self._open[0][1].path:
                self.close()
            self._open.append(row)

    def close(self) -> None:
        """The file being read is whole: find its definitions."""
        from coderag_tui.core.rank.definitions import ParseJob, file_job, parsed_definitions

        rows, self._open = self._open, []
        if not rows:
            return
        path, ids = rows[0][1].path, tuple(row for row, _ in rows)
        entry: dict[str, Any] = {}
        self._collect()
        found = file_job([chunk for _, chunk in rows], self.known, entry)
        if isinstance(found, ParseJob):
            if found.digest in self._handed:
                self._handed[found.digest][1].append((path, ids))  # a copy of a file handed over
                return
            if self.helper is not None and self.helper.submit(found.data, found.language):
                self._handed[found.digest] = (found, [(path, ids)])
                return
            job, found = found, parsed_definitions(found.data, found.language)
            entry[job.digest] = found
        self._found(path, ids, found, entry)

    def finish(self) -> None:
        """The last file is whole, and the helper's last answer in."""
        self.close()
        self._collect(wait=True)
        if self.helper is not None:
            self.helper.close()

    def _found(
        self, path: str, ids: tuple[int, ...], found: list[FileDefinition], entry: dict[str, Any]
    ) -> None:
        self.files[path] = (ids, found, entry)
        self.known.update(entry)  # a later copy of this file is not parsed again

    def _collect(self, *, wait: bool = False) -> None:
        """Take in the helper's answers that came (`wait`: all of them); when the helper
        failed, parse here the files it had."""
        from coderag_tui.core.rank.definitions import parsed_definitions

        while self._handed and self.helper is not None:
            digest = next(iter(self._handed))  # answered in the order handed over
            found = self.helper.answer(wait=wait)
            if found is None and self.helper.handed:
                return  # still parsing
            job, files = self._handed.pop(digest)
            if found is None:  # the helper failed
                found = parsed_definitions(job.data, job.language)
            for path, ids in files:
                self._found(path, ids, found, {job.digest: found})


def building_path(directory: Path) -> Path:
    """The lock a follower holds while it runs, beside the definitions folder `directory`."""
    return directory.with_name(directory.name + ".building")


def being_built(directory: Path) -> bool:
    """Whether a follower is building the definitions of `directory` now (its lock is held)."""
    from filelock import FileLock, Timeout

    path = building_path(directory)
    if not path.exists():
        return False
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False


def wait_built(directory: Path, timeout: float = WAIT_BUILT_S) -> None:
    """Wait until no child builds the definitions of `directory` (at most `timeout` seconds)."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(building_path(directory)))
    with contextlib.suppress(Timeout, OSError):
        lock.acquire(timeout=timeout)
        lock.release()


def main(args: dict[str, Any]) -> int:
    """The child: follow the build, then build and save the definitions (see the module
    docstring), holding the lock that says so (`being_built`). Started once the build is
    `written`, it reads the whole build in one snapshot, taken before the lock:
    an edit indexed meanwhile then costs its parent's successors a delta, not its work."""
    try:
        from filelock import FileLock, Timeout

        from coderag_tui.core.index.store import Store

        spec_key = str(args["spec_key"])
        directory = Path(args["directory"])
        written = bool(args.get("written"))
        store = Store.open(Path(args["store"]), read_only=True)
        try:
            with store.snapshot() if written else contextlib.nullcontext():
                store.generation(spec_key)  # the read that fixes the snapshot
                lock = FileLock(str(building_path(directory)))
                try:
                    directory.parent.mkdir(parents=True, exist_ok=True)
                    lock.acquire(timeout=LOCK_WAIT_S)
                except (Timeout, OSError):  # another child builds them: not two at once
                    return definitions_process.CHANGED
                try:
                    parent = definitions_process.ParentWatch(args.get("parent"))
                    if args.get("nice"):
                        with contextlib.suppress(OSError, AttributeError):  # else as it is
                            os.nice(int(args["nice"]))
                    # In the background both cores are free: a helper parses beside it.
                    helper = parse_helper.Helper.start() if written else None
                    try:
                        return _follow(store, spec_key, directory, parent, helper)
                    finally:
                        if helper is not None:
                            helper.close()
                finally:
                    lock.release()
        finally:
            store.close()
    except KeyboardInterrupt:
        return definitions_process.INTERRUPTED


def _follow(
    store: Store,
    spec_key: str,
    directory: Path,
    parent: definitions_process.ParentWatch,
    helper: parse_helper.Helper | None = None,
) -> int:
    from coderag_tui.core.index.chunk_list import ChunkList
    from coderag_tui.core.rank.definitions import (
        Definitions,
        file_found,
        known_files,
        save_base,
    )
    from coderag_tui.core.rank.segments import CurrentTable
    from coderag_tui.core.records import Chunk

    followed = _Followed(known_files(directory), helper)
    pages = definitions_process.followed_pages(
        lambda last: store.chunks_after(spec_key, last, PAGE), parent
    )
    for rows in pages:
        followed.add(rows)
    followed.finish()
    said = parent.said or {}
    files: list[tuple[range, list[FileDefinition]]] = []
    seen: dict[str, list[FileDefinition]] = {}
    with store.snapshot():  # the order, file table and count of one generation
        if store.generation(spec_key) != said.get("generation"):
            return definitions_process.CHANGED
        order = store.chunk_row_ids(spec_key)
        chunks = ChunkList.load(store, spec_key)
        table = CurrentTable(store, chunks).table
        if len(order) != said.get("n_chunks") or len(order) != len(chunks):
            return definitions_process.CHANGED
        bounds = chunks.file_starts.tolist()
        missed: dict[int, range] = {}  # file -> its chunks, of the files not followed whole
        for f, path in enumerate(chunks.paths):
            ids = range(bounds[f], bounds[f + 1])
            known = followed.files.get(path)
            if known is not None and known[0] == tuple(order[ids.start : ids.stop]):
                files.append((ids, known[1]))
                seen.update(known[2])
            else:
                missed[f] = ids
        texts = dict(
            (row, text)
            for row, _, text in store.chunk_rows([order[i] for ids in missed.values() for i in ids])
        )
    for f, ids in missed.items():
        language = chunks.languages[f]
        file_chunks = [
            Chunk(
                chunks.paths[f],
                int(chunks.starts[i]),
                int(chunks.ends[i]),
                chunks.kind(i),
                language,
                texts.get(order[i], ""),
            )
            for i in ids
        ]
        files.append((ids, file_found(file_chunks, followed.known, seen)))
    files.sort(key=lambda file: file[0].start)  # in chunk order, as `Definitions.build`
    definitions = Definitions.of_files(
        len(chunks), chunks.starts, chunks.ends, [file for file in files if file[1]]
    )
    save_base(directory, definitions, str(said["generation"]), table, seen)
    return definitions_process.SAVED


__all__ = ["being_built", "building_path", "main", "start", "wait_built"]
