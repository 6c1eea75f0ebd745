"""The SQLite store: chunks replace (never duplicate), bad files move aside, cache round-trips."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.store import (
    INDEX_APP_ID,
    EmbeddingCache,
    FileState,
    Store,
    StoreError,
)
from coderag_tui.core.records import Chunk


def _state(path: str, content_hash: str = "h1", *, skip: str | None = None) -> FileState:
    return FileState(
        path=path,
        size=10,
        mtime_ns=1_000,
        content_hash=content_hash,
        language="python",
        skip_reason=skip,
    )


def _chunks(path: str, n: int, lines: int = 3) -> list[Chunk]:
    return [
        Chunk(path, i * lines + 1, (i + 1) * lines, "lines", "python", f"{path} part {i}\n")
        for i in range(n)
    ]


def test_chunks_round_trip_in_path_and_line_order(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    with store.batch():
        for path in ("b.py", "a.py"):
            store.put_file(_state(path), "text of " + path)
            store.put_chunks("lines:3:0", path, list(reversed(_chunks(path, 3))))
    store.close()

    store = Store.open(tmp_path / "idx.sqlite")
    got = store.chunks("lines:3:0")
    assert [(c.path, c.start_line) for c in got] == [
        ("a.py", 1),
        ("a.py", 4),
        ("a.py", 7),
        ("b.py", 1),
        ("b.py", 4),
        ("b.py", 7),
    ]
    assert got[0] == _chunks("a.py", 1)[0]
    assert store.file_text("a.py") == "text of a.py"
    assert store.file_text("missing.py") is None
    assert store.chunked_paths("lines:3:0") == {"a.py", "b.py"}
    assert store.chunks("ast:64") == []
    assert store.notice is None


def test_put_chunks_replaces_a_files_chunks_and_bumps_generation(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    gen0 = store.generation("lines:3:0")
    store.put_chunks("ast:64", "z.py", _chunks("z.py", 1))
    ast_gen = store.generation("ast:64")
    store.put_file(_state("a.py"), "x")
    store.put_chunks("lines:3:0", "a.py", _chunks("a.py", 3))
    gen1 = store.generation("lines:3:0")
    store.put_chunks("lines:3:0", "a.py", _chunks("a.py", 2))
    gen2 = store.generation("lines:3:0")
    assert len(store.chunks("lines:3:0")) == 2
    assert len({gen0, gen1, gen2}) == 3
    # Another setting's generation is untouched by this one's changes.
    assert store.generation("ast:64") == ast_gen
    store.set_meta("unrelated", "1")
    assert store.generation("lines:3:0") == gen2


def test_empty_file_counts_as_chunked_with_no_chunks(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    store.put_file(_state("empty.py"), "")
    store.put_chunks("lines:3:0", "empty.py", [])
    assert store.chunked_paths("lines:3:0") == {"empty.py"}
    assert store.chunks("lines:3:0") == []


def test_new_content_drops_chunks_of_every_setting(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    with store.batch():
        store.put_file(_state("a.py"), "old")
        store.put_chunks("lines:3:0", "a.py", _chunks("a.py", 2))
        store.put_chunks("ast:64", "a.py", _chunks("a.py", 1))
    ast_gen = store.generation("ast:64")
    store.put_file(_state("a.py", "h2"), "new")
    assert store.chunks("lines:3:0") == []
    assert store.chunks("ast:64") == []
    assert store.chunked_paths("ast:64") == set()
    assert store.generation("ast:64") != ast_gen
    assert store.file_text("a.py") == "new"


def test_delete_files_removes_files_and_chunks_of_all_settings(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    with store.batch():
        for path in ("a.py", "b.py"):
            store.put_file(_state(path), path)
            store.put_chunks("lines:3:0", path, _chunks(path, 2))
            store.put_chunks("file", path, _chunks(path, 1))
    store.delete_files(["a.py"])
    assert set(store.file_states()) == {"b.py"}
    assert {c.path for c in store.chunks("lines:3:0")} == {"b.py"}
    assert {c.path for c in store.chunks("file")} == {"b.py"}
    assert store.chunked_paths("file") == {"b.py"}


def test_file_states_keep_stat_hash_and_skip_reason(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    binary = FileState(
        path="bin.dat",
        size=5,
        mtime_ns=7,
        content_hash="",
        language=None,
        skip_reason="BINARY",
        skip_detail="NUL at 3",
    )
    store.put_file(binary, None)
    bad = FileState(
        path="bad.py",
        size=9,
        mtime_ns=8,
        content_hash="abc",
        language="python",
        skip_reason=None,
        invalid_utf8=True,
    )
    store.put_file(bad, "t")
    store.update_stat("bad.py", 11, 12)
    states = store.file_states()
    assert states["bin.dat"] == binary
    assert states["bad.py"] == dataclasses.replace(bad, size=11, mtime_ns=12)


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
def test_batch_rolls_back_on_any_exception(tmp_path: Path, exc_type: type[BaseException]) -> None:
    store = Store.open(tmp_path / "idx.sqlite")
    store.put_file(_state("kept.py"), "k")
    gen = store.generation("lines:3:0")
    with pytest.raises(exc_type), store.batch():
        store.put_file(_state("lost.py"), "l")
        store.put_chunks("lines:3:0", "lost.py", _chunks("lost.py", 2))
        raise exc_type()
    assert set(store.file_states()) == {"kept.py"}
    assert store.chunks("lines:3:0") == []
    assert store.generation("lines:3:0") == gen
    store.put_file(_state("after.py"), "a")  # the store is still usable
    assert set(store.file_states()) == {"kept.py", "after.py"}


def test_content_hashes_follow_every_commit_ours_and_another_processes(tmp_path: Path) -> None:
    """Kept between reads, so each of these must show through: our own put and delete, a
    rolled-back batch (nothing), and a commit by another connection (another process)."""
    store = Store.open(tmp_path / "idx.sqlite")
    store.put_files([(_state("a.py", "ha"), "a"), (_state("b.py", "hb"), "b")])
    assert dict(store.content_hashes()) == {"a.py": "ha", "b.py": "hb"}
    store.put_file(_state("a.py", "ha2"), "a2")
    store.delete_files(["b.py"])
    assert dict(store.content_hashes()) == {"a.py": "ha2"}
    with pytest.raises(RuntimeError), store.batch():
        store.put_file(_state("c.py", "hc"), "c")
        raise RuntimeError
    assert dict(store.content_hashes()) == {"a.py": "ha2"}
    other = Store.open(tmp_path / "idx.sqlite")
    other.put_file(_state("d.py", "hd"), "d")
    other.put_file(_state("a.py", "ha3"), "a3")
    other.close()
    assert dict(store.content_hashes()) == {"a.py": "ha3", "d.py": "hd"}
    store.close()


def _aside(tmp_path: Path, label: str) -> list[Path]:
    return sorted(tmp_path.glob(f"idx.sqlite.{label}-*"))


def test_corrupt_file_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    path.write_bytes(b"this is not a database at all, just garbage bytes\x00\x01" * 100)
    store = Store.open(path)
    moved = _aside(tmp_path, "corrupt")
    assert len(moved) == 1
    assert moved[0].read_bytes().startswith(b"this is not a database")
    assert store.notice is not None
    assert str(path) in store.notice and moved[0].name in store.notice
    store.put_file(_state("a.py"), "a")
    assert set(store.file_states()) == {"a.py"}
    store.close()
    assert Store.open(path).notice is None  # the rebuilt index is accepted next time


def test_foreign_sqlite_database_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE files (name TEXT, owner TEXT)")
    conn.execute("INSERT INTO files VALUES ('x', 'someone else')")
    conn.commit()
    conn.close()
    store = Store.open(path)
    moved = _aside(tmp_path, "foreign")
    assert len(moved) == 1
    assert store.notice is not None and "not made by coderag" in store.notice
    assert store.file_states() == {}
    other = sqlite3.connect(moved[0])
    assert other.execute("SELECT owner FROM files").fetchone() == ("someone else",)
    other.close()


def test_other_schema_version_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id={INDEX_APP_ID}")
    conn.execute("PRAGMA user_version=99")
    conn.execute("CREATE TABLE files (path TEXT)")
    conn.commit()
    conn.close()
    store = Store.open(path)
    assert len(_aside(tmp_path, "old-schema")) == 1
    assert store.notice is not None and "schema version 99" in store.notice
    store.put_file(_state("a.py"), "a")


def test_rebuilt_index_never_reuses_a_generation(tmp_path: Path) -> None:
    path = tmp_path / "idx.sqlite"
    store = Store.open(path)
    store.put_chunks("file", "a.py", _chunks("a.py", 1))
    before = store.generation("file")
    store.close()
    path.unlink()
    store = Store.open(path)
    store.put_chunks("file", "b.py", _chunks("b.py", 1))
    assert store.generation("file") != before


def test_index_path_that_is_a_folder_gives_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "idx.sqlite").mkdir()
    with pytest.raises(StoreError, match=r"is not a file: remove it or pass --index-dir\.$"):
        Store.open(tmp_path / "idx.sqlite")


def test_embedding_cache_round_trip_beyond_one_query(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    rng = np.random.default_rng(0)
    vectors = {f"h{i}": rng.standard_normal(8).astype(np.float32) for i in range(1200)}
    with EmbeddingCache.open(path) as cache:
        cache.put_many("model-a", vectors.items())
        cache.put_many("model-b", [("h0", np.ones(4, dtype=np.float64))])
    with EmbeddingCache.open(path) as cache:  # a second repository opens the same file
        got = cache.get_many("model-a", [*vectors, "missing"])
        assert set(got) == set(vectors)
        assert all(
            np.array_equal(got[k], v) and got[k].dtype == np.float32 for k, v in vectors.items()
        )
        other = cache.get_many("model-b", ["h0", "h1"])
        assert list(other) == ["h0"] and other["h0"].tolist() == [1.0] * 4
        assert cache.count("model-a") == 1200


def test_corrupt_embedding_cache_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    path.write_bytes(b"\xff" * 5000)
    with EmbeddingCache.open(path) as cache:
        assert cache.notice is not None and "embedding cache" in cache.notice
        assert cache.get_many("m", ["x"]) == {}
    assert len(list(tmp_path.glob("emb.sqlite.corrupt-*"))) == 1


def test_batched_writes_match_single_writes(tmp_path: Path) -> None:
    single = Store.open(tmp_path / "one.sqlite")
    many = Store.open(tmp_path / "many.sqlite")
    files = {p: _chunks(p, 3) for p in ("x.py", "y.py")}
    for path, chunks in files.items():
        single.put_file(_state(path), path)
        single.put_chunks("lines:3:0", path, chunks)
    with many.batch():
        many.put_files([(_state(p), p) for p in files])
        many.put_chunks_many(
            "lines:3:0",
            [(p, c, [text_hash(x.text) for x in c]) for p, c in files.items()],
        )
    assert many.chunks("lines:3:0") == single.chunks("lines:3:0")
    assert many.chunk_hashes("lines:3:0") == [text_hash(c.text) for c in many.chunks("lines:3:0")]
    assert many.file_states() == single.file_states()
