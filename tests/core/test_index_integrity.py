"""A damaged index is found, moved aside and rebuilt; two builders never double the work.

The damage is the issue's reproduction: 8 KiB of random bytes written at 1/3, 1/2 and 2/3 of
an index of a few thousand chunks. Before, `coderag index` read the file table, found every
file unchanged, and searches served whatever the damaged pages now said.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.core.index.indexer import IndexProgress
from coderag_tui.core.index.store import IndexDamaged, Store
from coderag_tui.settings import Settings
from tests.fixtures.safety import damage_pages, make_many_files_repo

N_FILES = 600


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_many_files_repo(tmp_path_factory.mktemp("many") / "repo", N_FILES)


def _settings(repo: Path, tmp_path: Path) -> Settings:
    return Settings(repo=repo, index_dir=tmp_path / "ix", chunk_lines=8)


def _built(settings: Settings) -> list[object]:
    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
    assert lexical.report is not None and lexical.report.files_indexed == N_FILES
    assert len(lexical.chunks) >= 3000
    return list(lexical.chunks)


def _aside(db: Path) -> list[Path]:
    """The damaged files moved aside (without their WAL and shared-memory side files)."""
    return [
        p
        for p in db.parent.glob(db.name + ".corrupt-*")
        if not p.name.endswith(("-wal", "-shm", "-journal"))
    ]


def _printable(text: str) -> bool:
    return all(ch.isprintable() for ch in text) and "\ufffd" not in text


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_pages_damaged_in_the_middle_are_found_and_the_index_rebuilt(
    many_files: Path, tmp_path: Path, seed: int
) -> None:
    settings = _settings(many_files, tmp_path)
    before = _built(settings)
    db = settings.index_path
    damage_pages(db, seed)

    with Engine(settings) as engine:
        lexical = engine.update_index(settings)

    assert lexical.report is not None
    assert lexical.report.files_indexed == N_FILES  # rebuilt, not "0 indexed, 600 unchanged"
    assert lexical.chunks == before
    moved = _aside(db)
    assert len(moved) == 1
    (notice,) = [n for n in lexical.notices if "damaged" in n]
    assert str(db) in notice and moved[0].name in notice and _printable(notice)
    with Store.open(db) as store:  # the new index is sound
        assert store.damage() is None


def _undecodable(db: Path, word: bytes) -> None:
    """Turn one byte of `word` into 0xFF wherever it is stored: the pages stay well-formed."""
    data = db.read_bytes()
    assert word in data
    broken = word[:-1] + b"\xff"
    db.write_bytes(data.replace(word, broken))


def test_text_that_no_longer_decodes_is_damage_said_without_the_bytes(
    many_files: Path, tmp_path: Path
) -> None:
    settings = _settings(many_files, tmp_path)
    before = _built(settings)
    db = settings.index_path
    _undecodable(db, b"unit123_widget")
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)  # pages look fine
    conn.close()

    with Engine(settings) as engine:
        # The TUI's first paint serves the saved index before any check: never damaged text.
        assert engine.saved_lexical(settings) is None
        lexical = engine.update_index(settings)

    assert lexical.chunks == before
    assert lexical.report is not None and lexical.report.files_indexed == N_FILES
    (notice,) = [n for n in lexical.notices if "damaged" in n]
    assert _printable(notice) and "decode" not in notice
    assert len(_aside(db)) == 1


def test_reading_damaged_text_raises_index_damaged_in_one_clean_sentence(
    many_files: Path, tmp_path: Path
) -> None:
    settings = _settings(many_files, tmp_path)
    _built(settings)
    _undecodable(settings.index_path, b"unit77_widget")
    with Store.open(settings.index_path) as store, pytest.raises(IndexDamaged) as caught:
        store.chunks(settings.chunking_spec.key)
    message = str(caught.value)
    assert _printable(message) and message.endswith(".") and "coderag index" in message


def test_two_builders_at_once_never_double_the_work(tiny_repo: Path, tmp_path: Path) -> None:
    settings = Settings(repo=tiny_repo, index_dir=tmp_path / "ix")
    started = threading.Event()
    stages: dict[str, list[str]] = {"first": [], "second": []}
    reports = {}

    def slow(name: str) -> object:
        def progress(p: IndexProgress) -> None:
            stages[name].append(p.stage)
            if p.stage == "index":
                started.set()
            time.sleep(0.05)

        return progress

    def build(name: str) -> None:
        with Engine(settings) as engine:
            lexical = engine.update_index(settings, progress=slow(name))  # type: ignore[arg-type]
            reports[name] = lexical

    first = threading.Thread(target=build, args=("first",))
    first.start()
    assert started.wait(10)
    build("second")
    first.join()
    a, b = reports["first"].report, reports["second"].report
    assert a is not None and b is not None
    assert a.files_indexed > 0 and b.files_indexed == 0
    assert b.files_unchanged == a.files_indexed
    assert stages["second"][0] == "wait"
    assert any("another coderag run" in n for n in reports["second"].notices)
