"""A ChunkList holds every chunk's file and lines, and reads a chunk's text when asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
from coderag_tui.core.index.store import Store
from coderag_tui.core.rank.signals import CodeFacts
from coderag_tui.core.records import ChunkingSpec
from tests.fixtures.stored import put_source

SPEC = ChunkingSpec("lines", 3)
FILES = {
    "a/one.py": "def one():\n    return 1\n\n\ndef two():\n    return 2\n",
    "a/three.go": "package a\n\nfunc Three() int {\n  return 3\n}\n",
    "b.md": "# notes\n\nnothing to see\n",
    "z/empty.py": "",
}


def _put(store: Store, path: str, text: str) -> None:
    put_source(store, SPEC, path, text)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "index.sqlite")
    with store.batch():
        for path, text in FILES.items():
            _put(store, path, text)
    return store


def test_it_holds_the_stores_chunks_in_order(store: Store) -> None:
    listed = ChunkList.load(store, SPEC.key)
    whole = store.chunks(SPEC.key)
    assert len(listed) == len(whole) and listed.n_files == 3  # the empty file has no chunk
    assert list(listed) == whole == listed  # iterating, and equal to the list
    assert [listed[i] for i in range(len(listed))] == whole  # one at a time from the store
    assert listed[-1] == whole[-1] and listed[1:3] == whole[1:3]
    with pytest.raises(IndexError):
        listed[len(whole)]
    facts = CodeFacts(listed, None)  # columns, not texts
    assert facts.paths == sorted({c.path for c in whole})
    assert [facts.paths[f] for f in facts.file_of] == [c.path for c in whole]


def test_files_and_spans_are_saved_for_the_generation(store: Store, tmp_path: Path) -> None:
    saved = chunk_list_dir(tmp_path / "index.sqlite", SPEC.key)
    first = ChunkList.load(store, SPEC.key, saved)
    stamp = (saved / "spans.npy").stat().st_mtime_ns
    again = ChunkList.load(store, SPEC.key, saved)
    assert (saved / "spans.npy").stat().st_mtime_ns == stamp  # read back, not re-queried
    assert list(again) == list(first) == store.chunks(SPEC.key)
    with store.batch():
        _put(store, "a/one.py", "def one():\n    return 11\n")
    fresh = ChunkList.load(store, SPEC.key, saved)  # a new generation: read from the store
    assert list(fresh) == store.chunks(SPEC.key) and len(fresh) == len(first) - 1
    (saved / "spans.npy").write_bytes(b"not an array")  # damaged: read from the store
    with store.batch():
        _put(store, "b.md", "# notes\n")
    assert list(ChunkList.load(store, SPEC.key, saved)) == store.chunks(SPEC.key)


def test_a_stale_list_shows_no_text_of_a_changed_file(store: Store) -> None:
    listed = ChunkList.load(store, SPEC.key)
    at = next(i for i in range(len(listed)) if listed.path(i) == "a/three.go")
    with store.batch():
        _put(store, "a/three.go", "package a\n")
    assert listed[at].text == "" and listed[at].path == "a/three.go"


def test_texts_stay_readable_after_the_store_is_closed(store: Store) -> None:
    listed = ChunkList.load(store, SPEC.key)
    whole = store.chunks(SPEC.key)
    store.close()
    assert listed[0] == whole[0] and list(listed) == whole


def test_reads_in_a_snapshot_see_one_state_while_another_process_writes(
    store: Store, tmp_path: Path
) -> None:
    before = store.chunk_count(SPEC.key)
    with store.snapshot():
        assert store.chunk_count(SPEC.key) == before
        with Store.open(tmp_path / "index.sqlite") as other, other.batch():
            _put(other, "c/new.py", "def new():\n    return 0\n")
        assert store.chunk_count(SPEC.key) == before  # the other's commit is not seen yet
        listed = ChunkList.load(store, SPEC.key)  # files and spans of that one state
        assert len(listed) == before
    assert store.chunk_count(SPEC.key) == before + 1
