"""After an edit, BM25 and the definitions add a delta of the changed files to their saved base,
and rank exactly as a full rebuild would."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer
from hypothesis import given, settings
from hypothesis import strategies as st

from coderag_tui.core.index.store import Store
from coderag_tui.core.rank.definitions import (
    Definitions,
    definitions_dir,
    load_or_build_definitions,
)
from coderag_tui.core.rank.lexical import (
    BM25Index,
    bm25_dir,
    idf_of,
    length_norm,
    load_or_build_bm25,
    tfc_of,
)
from coderag_tui.core.rank.segments import FileTable, drift
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings
from tests.fixtures.stored import put_source

QUERIES = ["parse config value", "render template", "Ledger", "refund order", "zzfresh", "helper"]


def _files() -> dict[str, str]:
    """Twenty small files in three languages, each a few chunks of 4 lines."""
    files: dict[str, str] = {}
    for i in range(8):
        files[f"pkg/mod{i}.py"] = (
            f"def parse_config_{i}(value):\n    return value + {i}\n\n\n"
            f"class Ledger{i}:\n    def refund(self, order):\n        return order\n\n"
            f"HELPER_{i} = 'render template {i}'\n"
        )
    for i in range(6):
        files[f"web/view{i}.js"] = (
            f"function render{i}(template) {{\n  return template;\n}}\n\n"
            f"class View{i} {{ helper() {{ return {i}; }} }}\n"
        )
    for i in range(6):
        files[f"srv/h{i}.go"] = (
            f"package srv\n\nfunc Handle{i}(order string) string {{\n  return order\n}}\n"
        )
    return files


def _put(store: Store, settings: Settings, path: str, text: str) -> None:
    put_source(store, settings.chunking_spec, path, text)


def _edit(store: Store, settings: Settings) -> None:
    """Change one file, delete one, add one: what a working session does."""
    with store.batch():
        _put(store, settings, "pkg/mod3.py", "def zzfresh_parse(value):\n    return value\n")
        store.delete_files(["web/view2.js"])
        _put(store, settings, "new/extra.go", "package x\n\nfunc ZzfreshHelper() {}\n")


@pytest.fixture
def setup(index_dir: Path) -> tuple[Store, str, Settings]:
    settings = Settings(repo=index_dir, index_dir=index_dir, chunk_lines=4)
    key = settings.chunking_spec.key
    store = Store.open(settings.index_path)
    with store.batch():
        for path, text in _files().items():
            _put(store, settings, path, text)
    return store, key, settings


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_formulas_are_bm25s_own(method: str) -> None:
    tf = np.array([1.0, 2.0, 7.0])
    lengths = np.array([3.0, 40.0, 12.0])
    ours = tfc_of(method, tf, length_norm(lengths, 15.5, 1.5, 0.75), 1.5)
    theirs = _select_tfc_scorer(method)(tf_array=tf, l_d=lengths, l_avg=15.5, k1=1.5, b=0.75)
    np.testing.assert_allclose(ours, theirs)
    for df in (1, 5, 9, 10):
        assert math.isclose(idf_of(method, df, 10), _select_idf_scorer(method)(df, N=10))


def test_an_edit_adds_a_delta_that_ranks_like_a_rebuild(
    setup: tuple[Store, str, Settings],
) -> None:
    store, key, settings = setup
    first = load_or_build_bm25(store, settings, store.chunks(key))
    base_dir = bm25_dir(settings, first.options)
    stamp = (base_dir / "coderag-bm25.json").stat().st_mtime_ns
    _edit(store, settings)
    chunks = store.chunks(key)
    updated = load_or_build_bm25(store, settings, chunks, max_drift=0.5)
    assert updated.delta is not None  # the base was kept and the changed files added
    assert (base_dir / "coderag-bm25.json").stat().st_mtime_ns == stamp
    rebuilt = BM25Index.build(
        chunks, split_identifiers=settings.split_identifiers, path_in_text=settings.path_in_text
    )
    for query in QUERIES:
        tokens = rebuilt.tokenize_query(query)
        np.testing.assert_allclose(updated.scores(tokens), rebuilt.scores(tokens), rtol=1e-6)
        assert updated.search(query, 5) == rebuilt.search(query, 5)
    assert chunks[updated.search("zzfresh", 1)[0][0]].path in {"new/extra.go", "pkg/mod3.py"}
    assert all(chunks[i].path != "web/view2.js" for i, _ in updated.search("render2", 20))
    # The next run loads base and delta as saved, and answers the same.
    again = load_or_build_bm25(store, settings, chunks, max_drift=0.5)
    assert again.delta is not None
    assert again.search("refund order", 10) == updated.search("refund order", 10)
    store.close()


def test_a_large_drift_rebuilds_the_base(setup: tuple[Store, str, Settings]) -> None:
    store, key, settings = setup
    first = load_or_build_bm25(store, settings, store.chunks(key))
    base_dir = bm25_dir(settings, first.options)
    stamp = (base_dir / "coderag-bm25.json").stat().st_mtime_ns
    _edit(store, settings)
    updated = load_or_build_bm25(store, settings, store.chunks(key), max_drift=0.01)
    assert updated.delta is None
    assert (base_dir / "coderag-bm25.json").stat().st_mtime_ns != stamp
    assert not base_dir.with_name(base_dir.name + ".delta").exists()
    store.close()


def test_definitions_follow_the_edit_through_a_delta(
    setup: tuple[Store, str, Settings],
) -> None:
    store, key, settings = setup
    load_or_build_definitions(store, settings, store.chunks(key))
    _edit(store, settings)
    chunks = store.chunks(key)
    shifted = load_or_build_definitions(store, settings, chunks, max_drift=0.5)
    assert definitions_dir(settings).with_name(definitions_dir(settings).name + ".delta").exists()
    rebuilt = Definitions.build(chunks)
    for key_form in ("parseconfig3", "zzfreshparse", "zzfreshhelper", "view2", "ledger5", "x"):
        assert shifted.lookup(key_form) == rebuilt.lookup(key_form)
        assert (key_form in shifted) == (key_form in rebuilt)
    assert shifted.lookup("zzfreshhelper") != () and "view2" not in shifted
    again = load_or_build_definitions(store, settings, chunks, max_drift=0.5)
    assert again.lookup("ledger5") == rebuilt.lookup("ledger5") != ()
    store.close()


def test_drift_maps_unchanged_files_and_lists_changed_ones() -> None:
    def chunks(*spec: tuple[str, int]) -> list[Chunk]:
        return [Chunk(p, i, i, "lines", None, "x") for p, n in spec for i in range(n)]

    base = FileTable.of(chunks(("a", 2), ("b", 1), ("c", 3)), {"a": "1", "b": "2", "c": "3"})
    current = FileTable.of(chunks(("a", 2), ("aa", 1), ("c", 2)), {"a": "1", "aa": "9", "c": "4"})
    found = drift(base, current)
    assert found.remap.tolist() == [0, 1, -1, -1, -1, -1]  # b went, c changed
    assert found.added.tolist() == [2, 3, 4]  # aa is new, c's two chunks changed
    assert found.removed == 4 and not found.none
    assert drift(base, base).none
    # a file the store has no hash for never counts as unchanged
    unknown = FileTable.of(chunks(("a", 2)), {})
    assert drift(unknown, unknown).added.tolist() == [0, 1]


def _reference_drift(base: FileTable, current: FileTable) -> tuple[list[int], list[int]]:
    """The drift spelled out file by file: what `drift` computes with arrays."""
    starts, at = 0, {}
    for path, digest, count in zip(current.paths, current.hashes, current.counts, strict=True):
        at[path] = (starts, digest, count)
        starts += count
    remap, kept, first = [], set(), 0
    for path, digest, count in zip(base.paths, base.hashes, base.counts, strict=True):
        here = at.get(path)
        same = here is not None and digest != "" and here[1:] == (digest, count)
        for i in range(count):
            remap.append(here[0] + i if same and here is not None else -1)
            if same and here is not None:
                kept.add(here[0] + i)
        first += count
    return remap, [i for i in range(starts) if i not in kept]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("12"), st.integers(1, 3))),
    st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("12 "), st.integers(1, 3))),
)
def test_drift_agrees_with_a_file_by_file_reading(
    base_files: list[tuple[str, str, int]], current_files: list[tuple[str, str, int]]
) -> None:
    def table(files: list[tuple[str, str, int]]) -> FileTable:
        unique = {p: (h.strip(), n) for p, h, n in files}  # one row per path, in path order
        paths = sorted(unique)
        return FileTable(
            tuple(paths), tuple(unique[p][0] for p in paths), tuple(unique[p][1] for p in paths)
        )

    base, current = table(base_files), table(current_files)
    found = drift(base, current)
    remap, added = _reference_drift(base, current)
    assert found.remap.tolist() == remap and found.added.tolist() == added
    assert found.n_chunks == current.n_chunks
