"""BM25 built by a second process while a repository's first index is written: the very
postings this process would build, and every way the child can go wrong (killed, told of
other chunks, stopped by Ctrl-C) ends with BM25 built here and no process left behind."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.core.index import indexer
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.indexer import IndexInterrupted
from coderag_tui.core.rank import bm25_process, definitions_process
from coderag_tui.core.rank.bm25_index import ChunkNumbers
from coderag_tui.core.rank.lexical import BM25Index, BM25Options, Postings, bm25_dir
from coderag_tui.settings import Settings
from tests.fixtures.classes_repo import make_classes_repo


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second process for any corpus on any machine (the thresholds are about speed)."""
    monkeypatch.setattr(bm25_process, "MIN_BYTES", 0)
    monkeypatch.setattr(bm25_process.Child, "min_chunks", 0)
    monkeypatch.setattr(definitions_process, "MIN_CORES", 1)
    bm25_process.last_outcome = ""


@pytest.fixture
def settings(tmp_path: Path, index_dir: Path) -> Settings:
    """A first index that waits for the definitions (in the background: test_definitions_follow)."""
    return Settings(
        repo=make_classes_repo(tmp_path / "repo"),
        index_dir=index_dir,
        chunk_lines=8,
        embed_backend="none",
        definitions_background=False,
    )


def same_postings(a: Postings, b: Postings) -> None:
    assert a.words == b.words
    for name in ("indptr", "docs", "tf", "lengths"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def first_index(settings: Settings) -> tuple[BM25Index, ChunkList]:
    engine = Engine(settings)
    lexical = engine.update_index(settings)
    assert isinstance(lexical.chunks, ChunkList) and isinstance(lexical.bm25, BM25Index)
    engine.close()
    return lexical.bm25, lexical.chunks


def in_process(settings: Settings, chunks: ChunkList) -> Postings:
    options = BM25Options(settings.split_identifiers, settings.path_in_text)
    return Postings.from_chunks(chunks, options)


def test_the_second_process_builds_what_this_one_would(
    settings: Settings, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_here(*args: Any, **kw: Any) -> Any:
        raise AssertionError("BM25 was built in this process")

    monkeypatch.setattr(BM25Index, "build", not_here)
    bm25, chunks = first_index(settings)
    monkeypatch.undo()
    assert bm25_process.last_outcome.startswith("built and saved by a second process")
    same_postings(bm25.base, in_process(settings, chunks))
    assert bm25.definitions is not None and bm25.definitions.lookup("store000") != ()
    assert bm25.search("store load", 3)  # it answers


def test_a_child_that_dies_leaves_the_build_to_this_process(
    settings: Settings, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_process, "_BOOT", "import sys\nsys.exit(1)\n")
    bm25, chunks = first_index(settings)
    assert "failed" in bm25_process.last_outcome
    same_postings(bm25.base, in_process(settings, chunks))


def test_a_child_told_of_other_chunks_saves_nothing(
    settings: Settings, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = bm25_process.Child.done
    monkeypatch.setattr(
        bm25_process.Child, "done", lambda self, generation, n: done(self, "another", n)
    )
    bm25, chunks = first_index(settings)
    assert "changed" in bm25_process.last_outcome
    same_postings(bm25.base, in_process(settings, chunks))  # built here instead


def test_ctrl_c_while_indexing_stops_the_child(
    settings: Settings, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    children: list[bm25_process.Child] = []
    start = bm25_process.start

    def started(*args: Any) -> bm25_process.Child | None:
        child = start(*args)
        if child is not None:
            children.append(child)
        return child

    cut = indexer.chunk_file  # type: ignore[attr-defined]
    calls = iter(range(1000))

    def chunk_then_interrupt(*args: Any, **kw: Any) -> Any:
        if next(calls) == 4:  # Ctrl-C after a few files
            raise KeyboardInterrupt
        return cut(*args, **kw)

    monkeypatch.setattr(bm25_process, "start", started)
    monkeypatch.setattr(indexer, "chunk_file", chunk_then_interrupt)
    engine = Engine(settings)
    with pytest.raises(IndexInterrupted):
        engine.update_index(settings)
    engine.close()
    assert children and all(c.process.poll() is not None for c in children)
    options = BM25Options(settings.split_identifiers, settings.path_in_text)
    assert BM25Index.read_meta(bm25_dir(settings, options)) is None  # nothing half-saved


@pytest.mark.parametrize("moved", [False, True], ids=["build order", "another order"])
def test_what_the_child_counts_while_following_is_what_the_final_order_gives(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, *, moved: bool
) -> None:
    """The child counts a batch at a time while the build is written; whether the final order
    is the one it read (a first build's) or another, the postings are those of that order."""
    _, chunks = first_index(settings)
    listed = list(chunks)
    options = BM25Options(settings.split_identifiers, settings.path_in_text)
    numbers = ChunkNumbers(options)
    monkeypatch.setattr(bm25_process, "BATCH", 3)  # several batches of a tiny repository
    counted = bm25_process._Counted()
    seen: dict[int, array[int]] = {}
    rows = list(range(1, len(listed) + 1))
    for page in (rows[i : i + 2] for i in range(0, len(rows), 2)):
        for row in page:
            seen[row] = array("i", numbers(listed[row - 1].path, listed[row - 1].text))
        counted.follow(page, seen)
    assert counted.rows  # counted on the way
    order = rows[1:] + rows[:1] if moved else rows
    postings = counted.postings(order, seen, numbers.vocab)
    same_postings(postings, Postings.from_chunks([listed[row - 1] for row in order], options))
