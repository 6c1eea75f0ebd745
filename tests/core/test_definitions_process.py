"""The definitions built by a second process while BM25 builds: the same lookups as built
in-process, and every way the child can go wrong (killed, stopped, failed, the chunks
changed) ends with the definitions built in-process and nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
from coderag_tui.core.index.indexer import build_index
from coderag_tui.core.index.store import Store
from coderag_tui.core.rank import definitions_process
from coderag_tui.core.rank.definitions import (
    Definitions,
    definitions_dir,
    load_or_build_definitions,
    saved_generation,
)
from coderag_tui.core.rank.lexical import load_or_build_bm25
from coderag_tui.settings import Settings
from tests.fixtures.classes_repo import make_classes_repo

WAIT_S = 120.0  # a bound for a child that should finish in well under a second


@pytest.fixture
def indexed(tmp_path: Path, index_dir: Path) -> tuple[Settings, Store]:
    settings = Settings(
        repo=make_classes_repo(tmp_path / "repo"), index_dir=index_dir, chunk_lines=8
    )
    store = Store.open(settings.index_path)
    build_index(settings, store)
    return settings, store


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second process for any corpus on any machine (the thresholds are about speed)."""
    monkeypatch.setattr(definitions_process, "MIN_CHUNKS", 0)
    monkeypatch.setattr(definitions_process, "MIN_CORES", 1)


def _lookups(definitions: Definitions) -> dict[str, tuple[object, ...]]:
    keys = list(definitions._raw)
    assert len(keys) > 50
    return {key: definitions.lookup(key) for key in keys}


def _in_process(settings: Settings, store: Store) -> Definitions:
    """The definitions built in this process (not saved)."""
    return Definitions.build(store.chunks(settings.chunking_spec.key))


def _leftovers(settings: Settings) -> list[str]:
    folder = definitions_dir(settings).parent
    return sorted(p.name for p in folder.glob("*tmp*")) if folder.exists() else []


def test_a_second_process_builds_what_this_one_would(
    indexed: tuple[Settings, Store], any_size: None
) -> None:
    settings, store = indexed
    key = settings.chunking_spec.key
    chunks = ChunkList.load(store, key, chunk_list_dir(settings.index_path, key))
    index = load_or_build_bm25(store, settings, chunks)
    assert definitions_process.last_outcome.startswith("built and saved by a second process")
    assert saved_generation(definitions_dir(settings)) == store.generation(key)
    assert index.definitions is not None
    assert _lookups(index.definitions) == _lookups(_in_process(settings, store))
    assert _leftovers(settings) == []
    store.close()


def test_a_small_corpus_stays_in_process(indexed: tuple[Settings, Store]) -> None:
    settings, store = indexed
    chunks = store.chunks(settings.chunking_spec.key)
    assert len(chunks) < definitions_process.MIN_CHUNKS
    index = load_or_build_bm25(store, settings, chunks)
    assert definitions_process.last_outcome.startswith("built in-process")
    assert index.definitions is not None and index.definitions.lookup("store000") != ()
    store.close()


def _start(
    settings: Settings, store: Store, generation: str | None = None
) -> definitions_process.Child:
    key = settings.chunking_spec.key
    child = definitions_process.start(
        store,
        settings,
        len(store.chunks(key)),
        generation if generation is not None else store.generation(key),
        0.2,
    )
    assert child is not None
    return child


def test_a_killed_child_leaves_the_build_to_this_process(
    indexed: tuple[Settings, Store], any_size: None
) -> None:
    settings, store = indexed
    child = _start(settings, store)
    child.process.kill()
    assert not child.finish(WAIT_S)
    assert "failed" in definitions_process.last_outcome
    assert saved_generation(definitions_dir(settings)) is None
    built = load_or_build_definitions(store, settings, store.chunks(settings.chunking_spec.key))
    assert _lookups(built) == _lookups(_in_process(settings, store))
    store.close()


def test_a_stopped_child_ends_and_leaves_nothing_half_written(
    indexed: tuple[Settings, Store], any_size: None
) -> None:
    """What an interrupted parent (Ctrl-C) does: the child is asked to stop and waited for."""
    settings, store = indexed
    child = _start(settings, store)
    child.stop()
    assert child.process.returncode is not None
    assert _leftovers(settings) == []
    folder = definitions_dir(settings)
    if saved_generation(folder) is not None:  # it finished first: then the folder is whole
        assert Definitions.load(folder).lookup("store000") != ()
    store.close()


def test_a_child_seeing_other_chunks_saves_nothing(
    indexed: tuple[Settings, Store], any_size: None
) -> None:
    settings, store = indexed
    child = _start(settings, store, generation="not-the-store's")
    assert not child.finish(WAIT_S)
    assert "changed" in definitions_process.last_outcome
    assert saved_generation(definitions_dir(settings)) is None
    store.close()


def test_a_failing_child_says_why_in_one_sentence(
    indexed: tuple[Settings, Store], any_size: None, tmp_path: Path
) -> None:
    settings, store = indexed
    gone = Settings(repo=settings.repo, index_dir=tmp_path / "gone", chunk_lines=8)
    other = Store.open(gone.index_path)
    build_index(gone, other)
    n_chunks = len(other.chunks(gone.chunking_spec.key))
    generation = other.generation(gone.chunking_spec.key)
    other.close()
    gone.index_path.unlink()  # the child cannot open it
    child = definitions_process.start(other, gone, n_chunks, generation, 0.2)
    assert child is not None
    assert not child.finish(WAIT_S)
    outcome = definitions_process.last_outcome
    assert "failed" in outcome and "IndexNotWritable" in outcome and "\n" not in outcome
    assert saved_generation(definitions_dir(gone)) is None
    store.close()
