"""A damaged index is found, moved aside and rebuilt; two builders never double the work.

The damage is the issue's reproduction: 8 KiB of random bytes written at 1/3, 1/2 and 2/3 of
an index of a few thousand chunks. Before, `coderag index` read the file table, found every
file unchanged, and searches served whatever the damaged pages now said.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.core.index import identity_record
from coderag_tui.core.index.indexer import IndexProgress, IndexReport
from coderag_tui.core.index.store import IndexDamaged, Store
from coderag_tui.core.records import Chunk
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


class _Run(NamedTuple):
    report: IndexReport | None
    notices: tuple[str, ...]
    chunks: list[Chunk]
    page_checks: int


def _run(settings: Settings) -> _Run:
    """One run as the CLI makes it: what it reported and how many page checks it ran."""
    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
        checks = engine.store(settings).page_checks
        return _Run(lexical.report, lexical.notices, list(lexical.chunks), checks)


def test_an_index_untouched_since_the_last_run_is_not_page_checked(
    many_files: Path, tmp_path: Path
) -> None:
    settings = _settings(many_files, tmp_path)
    assert _run(settings).page_checks == 0  # made by this run: nothing else has written it
    for _ in range(2):
        run = _run(settings)
        assert run.page_checks == 0
        assert run.report is not None and run.report.files_unchanged == N_FILES
    identity_record.record_path(settings.index_path).unlink()  # no record: checked once, then not
    assert _run(settings).page_checks == 1
    assert _run(settings).page_checks == 0


def test_an_index_in_the_repositorys_top_folder_keeps_its_record_out_of_the_index(
    tiny_repo: Path,
) -> None:
    settings = Settings(repo=tiny_repo, index_dir=tiny_repo)
    first = _run(settings)
    assert identity_record.record_path(settings.index_path).exists()
    again = _run(settings)
    assert again.page_checks == 0  # matched by the record, as anywhere else
    assert again.report is not None and again.report.files_indexed == 0
    indexed = {c.path for c in again.chunks}
    assert indexed == {c.path for c in first.chunks}
    assert not any(path.endswith(".sound") for path in indexed)


_CHANGE_BEHIND_OUR_BACK = {
    # Random bytes in the middle, then the size and modification time put back as they were:
    # only the change time (which no program can set back) tells.
    "pages-rewritten-mtime-restored": (
        "import os, random, sys; p = sys.argv[1]; st = os.stat(p); f = open(p, 'r+b');"
        "[(f.seek(int(st.st_size * x)), f.write(random.Random(3).randbytes(8192)))"
        " for x in (0.3, 0.5, 0.7)]; f.close(); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))"
    ),
    "truncated": "import os, sys; p = sys.argv[1]; os.truncate(p, os.stat(p).st_size // 2)",
    "overwritten-with-garbage": (
        "import os, sys; p = sys.argv[1]; data = os.urandom(os.stat(p).st_size);"
        "open(p, 'wb').write(data)"
    ),
}


@pytest.mark.parametrize("change", sorted(_CHANGE_BEHIND_OUR_BACK))
def test_an_index_changed_by_another_process_is_still_found_and_moved_aside(
    many_files: Path, tmp_path: Path, change: str
) -> None:
    settings = _settings(many_files, tmp_path)
    before = _run(settings).chunks
    assert _run(settings).page_checks == 0  # matched by its record
    db = settings.index_path
    subprocess.run([sys.executable, "-c", _CHANGE_BEHIND_OUR_BACK[change], str(db)], check=True)

    run = _run(settings)

    assert run.report is not None and run.report.files_indexed == N_FILES
    assert run.chunks == before
    moved = _aside(db)
    assert len(moved) == 1
    (notice,) = [n for n in run.notices if "moved it to" in n]
    assert str(db) in notice and moved[0].name in notice and _printable(notice)
    assert notice.endswith(".") and notice.count(". ") == 0  # one sentence
    assert _run(settings).page_checks == 0  # the rebuilt index is matched by its record again
