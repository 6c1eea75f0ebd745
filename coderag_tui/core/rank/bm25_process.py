"""Build BM25 in a second process while the first index of a repository is written.

A cold index reads, scans and chunks every file (one core: the reading threads share the
GIL) and only then builds BM25 (Python tokenizing every chunk), so the second core sits idle
through the first half. When a repository is indexed for the first time (no chunk of the
chunking stored yet, no BM25 saved for its options) and the walk finds at least `MIN_BYTES`
to read, `start` runs a child: a new interpreter (a spawn, never a fork of a process with
threads) with the parent's `sys.path`, as
`core.rank.definitions_process` does. It opens the store read-only and follows the build
by row id (rows are only ever inserted or deleted, never changed: `Store.chunk_rows_after`),
tokenizing each chunk as soon as its batch is committed, with the very `ChunkNumbers` the
in-process build uses, and counting them a batch at a time (`_Counted`), so that little is
left to do once the build ends.

When the parent has written the index it sends one line, the store's generation and chunk count
(`Follower.done`), and waits for it (the definitions are parsed after, in the background, by
a third process: `core.rank.definitions_follow`; with `definitions_background` off, the parent
parses them meanwhile or waits for that process, started beside this one). The child then reads
the chunks' order in one snapshot; when the generation and count are those the parent sent, it
tokenizes any row it has not seen, counts what it has not counted, and saves the BM25 folder
exactly as the parent would (`BM25Index.save`, with the file table), so `load_or_build_bm25`
loads it. Anything else (the store changed, the child failed, was killed or too slow): it
saves nothing and the parent builds BM25 as without it. The result is the same either way (a
test holds the two equal). It ends when its parent does, whatever its signal state
(`definitions_process.ParentWatch`): the parent closing its stdin (interrupted, or given up),
or dying.
"""

from __future__ import annotations

import sys
from array import array
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.core.rank import definitions_process
from coderag_tui.core.rank.bm25_index import (
    BM25Index,
    BM25Options,
    ChunkNumbers,
    Counting,
    Postings,
    bm25_dir,
)

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.settings import Settings

# Started only when the walk finds at least this much to read: about
# `definitions_process.MIN_CHUNKS` windows of 64 lines of code (a smaller repository is
# indexed before the child has even started).
MIN_BYTES = 8 << 20
PAGE = 2048  # chunks read per query while following the build
BATCH = 8192  # chunks counted at a time while following (as `Postings.count` does)

# What the last `start` or `Child.finish` did, for benchmarks and tests (one sentence).
last_outcome = ""

_BOOT = definitions_process.boot(__name__)


def _record(outcome: str) -> None:
    global last_outcome
    last_outcome = outcome


class Child(definitions_process.Follower):
    """A running child building BM25 (see the module docstring)."""


def start(store: Store, settings: Settings) -> Child | None:
    """A child following the first build of `settings`' chunking into `store` (see the
    module docstring); None when there is nothing for it to do or no second core."""
    options = BM25Options.of(settings)
    directory = bm25_dir(settings, options)
    reason = definitions_process.no_follower()
    if reason is not None:
        _record(reason)
        return None
    key = settings.chunking_spec.key
    if store.chunk_count(key) or BM25Index.read_meta(directory) is not None:
        _record("built in-process (not a first index)")
        return None
    args = {
        "path": sys.path,
        "store": str(Path(store.path).resolve()),
        "spec_key": key,
        "options": options.as_dict(),
        "directory": str(directory.resolve()),
    }
    return definitions_process.spawn(_BOOT, args, Child, _record)


class _Counted:
    """The chunks counted while the build is written, in the order they were read (row
    order), so that only the gathering is left once it ends. A first build writes its rows in
    the index's own order (by path), so the counts made on the way are the answer's; when the
    final order differs, they are dropped and every chunk is counted again in it."""

    def __init__(self) -> None:
        self.rows: list[int] = []  # counted, in order
        self.waiting: list[int] = []  # read, not counted yet
        self.counting = Counting()

    def follow(self, rows: list[int], seen: dict[int, array[int]]) -> None:
        """Take in the rows just read; count them once a batch is waiting."""
        self.waiting += rows
        if len(self.waiting) >= BATCH:
            self.counting.add([seen[row] for row in self.waiting])
            self.rows += self.waiting
            self.waiting = []

    def postings(
        self, order: list[int], seen: dict[int, array[int]], vocab: dict[str, int]
    ) -> Postings:
        """The postings of the chunks `order` names, in that order."""
        if order[: len(self.rows)] != self.rows:
            self.counting = Counting()  # let the counts go before counting again
            return Postings.count((seen[row] for row in order), vocab)
        rest = iter(order[len(self.rows) :])
        while batch := list(islice(rest, BATCH)):
            self.counting.add([seen[row] for row in batch])
        return self.counting.postings(vocab)


def main(args: dict[str, Any]) -> int:
    """The child: follow the build, then count and save BM25 (see the module docstring)."""
    try:
        parent = definitions_process.ParentWatch(args.get("parent"))
        from coderag_tui.core.index.chunk_list import ChunkList
        from coderag_tui.core.index.store import Store
        from coderag_tui.core.rank.segments import CurrentTable

        options = BM25Options(**args["options"])
        spec_key = str(args["spec_key"])
        numbers = ChunkNumbers(options)
        seen: dict[int, array[int]] = {}  # int32: a vocabulary stays far below 2**31
        counting = _Counted()
        store = Store.open(Path(args["store"]), read_only=True)
        try:
            pages = definitions_process.followed_pages(
                lambda last: store.chunk_rows_after(spec_key, last, PAGE), parent
            )
            for rows in pages:
                for row, path, text in rows:
                    seen[row] = array("i", numbers(path, text))
                counting.follow([row for row, _, _ in rows], seen)
            said = parent.said or {}
            with store.snapshot():  # the order, file table and count of one generation
                if store.generation(spec_key) != said.get("generation"):
                    return definitions_process.CHANGED
                order = store.chunk_row_ids(spec_key)
                chunks = ChunkList.load(store, spec_key)
                table = CurrentTable(store, chunks).table
                missing = [row for row in order if row not in seen]
                for row, path, text in store.chunk_rows(missing):
                    seen[row] = array("i", numbers(path, text))
            if len(order) != said.get("n_chunks") or len(seen) < len(order):
                return definitions_process.CHANGED
            postings = counting.postings(order, seen, numbers.vocab)
            extra = {"generation": said["generation"]}
            BM25Index(postings, options).save(Path(args["directory"]), extra=extra, table=table)
        finally:
            store.close()
    except KeyboardInterrupt:
        return definitions_process.INTERRUPTED
    return definitions_process.SAVED


__all__ = ["Child", "main", "start"]
