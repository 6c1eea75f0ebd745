"""Incremental indexing: nothing re-read when unchanged, one edit re-chunks one file, resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core.index import chunk, indexer
from coderag_tui.core.index.indexer import (
    IndexInterrupted,
    IndexProgress,
    IndexReport,
    build_index,
    open_index,
)
from coderag_tui.core.index.store import Store
from coderag_tui.settings import Settings
from tests.fixtures.hostile_repo import (
    EXPECTED_FILES,
    EXPECTED_SKIPS,
    EXPECTED_SKIPS_GIT_ONLY,
    INVALID_UTF8_FILES,
    make_hostile_repo,
)
from tests.fixtures.tiny_repo import FILES, make_tiny_repo

ChunkRow = tuple[str, int, int, str, str]


def snapshot(store: Store, spec_key: str) -> list[ChunkRow]:
    return [(c.path, c.start_line, c.end_line, c.kind, c.text) for c in store.chunks(spec_key)]


def ticking_clock() -> Callable[[], float]:
    """A clock that advances one second per call, so every progress update gets through."""
    ticks: Iterator[int] = iter(range(10**9))
    return lambda: float(next(ticks))


@pytest.fixture
def settings(tiny_repo: Path, index_dir: Path) -> Settings:
    return Settings(repo=tiny_repo, index_dir=index_dir, chunk_lines=8)


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    opened = Store.open(settings.index_path)
    yield opened
    opened.close()


def test_first_run_indexes_every_file(settings: Settings, store: Store) -> None:
    report = build_index(settings, store)
    assert report.files_total == len(FILES)
    assert report.files_indexed == len(FILES)
    assert report.files_read == len(FILES)
    assert report.bytes_read == sum(len(t.encode()) for t in FILES.values())
    assert not report.cancelled and report.skipped == ()
    chunks = store.chunks(settings.chunking_spec.key)
    assert report.chunks == len(chunks) > len(FILES)
    assert {c.path for c in chunks} == set(FILES)
    # Line windows of 8 reassemble each file exactly.
    for path, text in FILES.items():
        joined = "\n".join(c.text for c in chunks if c.path == path)
        assert joined.rstrip("\n") == text.rstrip("\n")
    assert set(report.stage_seconds) == {"walk", "read", "scan", "chunk", "store"}


def test_second_run_reads_no_file(settings: Settings, store: Store) -> None:
    build_index(settings, store)
    before = snapshot(store, settings.chunking_spec.key)
    gen = store.generation(settings.chunking_spec.key)
    again = build_index(settings, store)
    assert again.files_unchanged == again.files_total == len(FILES)
    assert (again.files_indexed, again.files_read, again.bytes_read) == (0, 0, 0)
    assert again.stage_seconds["read"] == 0.0
    assert snapshot(store, settings.chunking_spec.key) == before
    assert store.generation(settings.chunking_spec.key) == gen


def test_same_size_and_mtime_means_not_read(settings: Settings, store: Store) -> None:
    build_index(settings, store)
    path = settings.repo_root / "shop/payment.py"
    st = path.stat()
    old = path.read_text()
    path.write_text(old.replace("retry", "RETRY"))  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    report = build_index(settings, store)
    assert report.files_read == 0
    texts = "".join(
        c.text for c in store.chunks(settings.chunking_spec.key) if c.path == "shop/payment.py"
    )
    assert "RETRY" not in texts and "retry" in texts


def test_edited_file_is_the_only_one_rechunked(settings: Settings, store: Store) -> None:
    build_index(settings, store)
    key = settings.chunking_spec.key
    others = [row for row in snapshot(store, key) if row[0] != "shop/cart.py"]
    with (settings.repo_root / "shop/cart.py").open("a") as handle:
        handle.write("\n\ndef checkout_total(cart):\n    return cart.total_cents()\n")
    report = build_index(settings, store)
    assert (report.files_indexed, report.files_read) == (1, 1)
    assert report.files_unchanged == len(FILES) - 1
    assert [row for row in snapshot(store, key) if row[0] != "shop/cart.py"] == others
    cart = "".join(c.text for c in store.chunks(key) if c.path == "shop/cart.py")
    assert "def checkout_total" in cart


def test_touched_file_with_same_content_is_read_but_not_rechunked(
    settings: Settings, store: Store
) -> None:
    build_index(settings, store)
    path = settings.repo_root / "web/app.js"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    touched = build_index(settings, store)
    assert (touched.files_read, touched.files_indexed) == (1, 0)
    assert touched.files_unchanged == len(FILES)
    assert build_index(settings, store).files_read == 0  # the new stat was remembered


def test_deleted_file_disappears(settings: Settings, store: Store) -> None:
    build_index(settings, store)
    (settings.repo_root / "shop/inventory.py").unlink()
    report = build_index(settings, store)
    assert report.files_removed == 1
    assert "shop/inventory.py" not in store.file_states()
    assert all(c.path != "shop/inventory.py" for c in store.chunks(settings.chunking_spec.key))


def test_switching_chunking_rechunks_stored_text_without_reading(
    settings: Settings, store: Store
) -> None:
    build_index(settings, store)
    whole = settings.with_(chunking="file")
    report = build_index(whole, store)
    assert report.files_read == 0
    assert report.files_indexed == len(FILES)
    chunks = store.chunks("file")
    assert {c.path: c.text for c in chunks} == {p: t.rstrip("\n") for p, t in FILES.items()}
    assert build_index(settings, store).files_indexed == 0  # the line chunks are still there


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_hostile_repo_skips_carry_reasons(tmp_path: Path, git: bool) -> None:
    repo = make_hostile_repo(tmp_path / "hostile", git=git)
    settings = Settings(repo=repo, index_dir=tmp_path / "index", chunk_lines=16)
    store, report = open_index(settings)
    with store:
        skips = {s.path: s.reason for s in report.skipped}
        expected = dict(EXPECTED_SKIPS, **(EXPECTED_SKIPS_GIT_ONLY if git else {}))
        for path, reason in expected.items():
            assert skips.get(path) == reason, path
        indexed = {p for p, s in store.file_states().items() if s.skip_reason is None}
        assert indexed == EXPECTED_FILES
        assert set(report.invalid_utf8) == INVALID_UTF8_FILES
        chunked = {c.path for c in store.chunks(settings.chunking_spec.key)}
        assert chunked == EXPECTED_FILES - {"src/empty.py"}
        latin = "".join(
            c.text for c in store.chunks(settings.chunking_spec.key) if c.path == "src/latin1.py"
        )
        assert "caf\ufffd" in latin

        again = build_index(settings, store)
        assert again.files_read == 0
        assert again.files_unchanged == again.files_total
        assert {s.path: s.reason for s in again.skipped} == skips
        assert set(again.invalid_utf8) == INVALID_UTF8_FILES


@pytest.mark.parametrize("where", [".coderag", "."], ids=["subfolder", "repo-root"])
def test_index_inside_the_repo_never_indexes_itself(tiny_repo: Path, where: str) -> None:
    settings = Settings(repo=tiny_repo, index_dir=tiny_repo / where)
    store, first = open_index(settings)
    with store:
        again = build_index(settings, store)
        listed = set(store.file_states()) | {s.path for s in again.skipped}
        assert listed == set(FILES)
        assert again.files_unchanged == again.files_total == first.files_total == len(FILES)


def test_corrupt_index_is_rebuilt_with_a_notice(settings: Settings) -> None:
    settings.index_path.parent.mkdir(parents=True, exist_ok=True)
    settings.index_path.write_bytes(os.urandom(4096))
    store, report = open_index(settings)
    with store:
        assert report.notice is not None and "moved it to" in report.notice
        assert report.files_indexed == len(FILES)
    assert list(settings.index_path.parent.glob("*.corrupt-*"))


def make_many_files(root: Path, n: int) -> Path:
    for i in range(n):
        path = root / f"pkg{i % 7}" / f"mod_{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(12))
        path.write_text(f'"""Module {i}."""\n\n{body}')
    return root


def clean_index(repo: Path, tmp_path: Path, **kw: Any) -> list[ChunkRow]:
    settings = Settings(repo=repo, index_dir=tmp_path / "clean", **kw)
    store, _ = open_index(settings)
    with store:
        return snapshot(store, settings.chunking_spec.key)


def cut_by_an_older_chunker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunk as coderag did before short last windows joined the window before them."""
    monkeypatch.setattr(chunk, "TAIL_DIVISOR", 10**9)
    monkeypatch.setattr(indexer, "CHUNKER_VERSION", "1")


def spans(store: Store, key: str, path: str) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in store.chunks(key) if c.path == path]


def test_an_index_cut_by_an_older_chunker_is_cut_again_from_its_stored_text(
    settings: Settings, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = settings.repo_root
    steps = "".join(f"    step_{i}()\n" for i in range(6))
    (repo / "shop/cli.py").write_text(f"def main():\n{steps}\nmain()\n")  # 9 lines
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(repo), *env, "commit", "-q", "-m", "cli"], check=True)
    key = settings.chunking_spec.key
    cut_by_an_older_chunker(monkeypatch)
    build_index(settings, store)
    assert spans(store, key, "shop/cli.py") == [(1, 8), (9, 9)]  # a lone `main()` chunk

    monkeypatch.undo()
    report = build_index(settings, store)
    assert report.files_read == 0  # nothing read again: the stored text is cut again
    assert report.files_indexed == report.files_total == len(FILES) + 1
    assert spans(store, key, "shop/cli.py") == [(1, 9)]
    assert snapshot(store, key) == clean_index(repo, tmp_path, chunk_lines=8)
    again = build_index(settings, store)  # once: the next build finds nothing to do
    assert (again.files_read, again.files_indexed) == (0, 0)


def test_a_recut_cancelled_half_way_is_finished_by_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_many_files(tmp_path / "repo", 60)  # 38 lines each: 18 + 18 + 2 at 18 a window
    settings = Settings(repo=repo, index_dir=tmp_path / "index", chunk_lines=18)
    key = settings.chunking_spec.key
    cancel = threading.Event()

    def progress(p: IndexProgress) -> None:
        if p.files_done >= 23:
            cancel.set()

    with Store.open(settings.index_path) as store:
        cut_by_an_older_chunker(monkeypatch)
        build_index(settings, store)
        monkeypatch.undo()
        half = build_index(
            settings,
            store,
            progress=progress,
            cancel=cancel,
            batch_files=10,
            workers=1,
            clock=ticking_clock(),
        )
        assert half.cancelled and half.files_read == 0
        assert spans(store, key, "pkg0/mod_0000.py") == [(1, 18), (19, 38)]
        assert spans(store, key, "pkg6/mod_0055.py") == [(1, 18), (19, 36), (37, 38)]
        rest = build_index(settings, store)
        assert not rest.cancelled and rest.files_read == 0
        assert snapshot(store, key) == clean_index(repo, tmp_path, chunk_lines=18)


@pytest.mark.parametrize("workers", [1, 2], ids=["inline", "threads"])
def test_cancel_then_rerun_equals_a_clean_index(tmp_path: Path, workers: int) -> None:
    repo = make_many_files(tmp_path / "repo", 60)
    settings = Settings(repo=repo, index_dir=tmp_path / "index", chunk_lines=10)
    cancel = threading.Event()

    def progress(p: IndexProgress) -> None:
        if p.files_done >= 23:
            cancel.set()

    with Store.open(settings.index_path) as store:
        report = build_index(
            settings,
            store,
            progress=progress,
            cancel=cancel,
            batch_files=10,
            workers=workers,
            clock=ticking_clock(),
        )
        assert report.cancelled and report.files_indexed == 23 and report.files_left == 37
        assert store.file_count() == 23  # cancel commits the open batch
        rest = build_index(settings, store)
        assert (rest.files_indexed, rest.files_unchanged, rest.cancelled) == (37, 23, False)
        assert snapshot(store, settings.chunking_spec.key) == clean_index(
            repo, tmp_path, chunk_lines=10
        )


def test_ctrl_c_keeps_finished_files_and_rerun_has_no_duplicates(tmp_path: Path) -> None:
    repo = make_many_files(tmp_path / "repo", 60)
    settings = Settings(repo=repo, index_dir=tmp_path / "index", chunk_lines=10)

    def progress(p: IndexProgress) -> None:
        if p.files_done >= 17:
            raise KeyboardInterrupt

    with Store.open(settings.index_path) as store:
        with pytest.raises(IndexInterrupted) as stop:
            build_index(settings, store, progress=progress, batch_files=10, clock=ticking_clock())
        kept: IndexReport = stop.value.report
        assert kept.cancelled and kept.files_indexed == 17
        assert store.file_count() == 17
        rest = build_index(settings, store)
        assert rest.files_indexed == 60 - 17
        assert snapshot(store, settings.chunking_spec.key) == clean_index(
            repo, tmp_path, chunk_lines=10
        )


_CHILD = """
import sys, time
from pathlib import Path
from coderag_tui.settings import Settings
from coderag_tui.core.index.indexer import build_index
from coderag_tui.core.index.store import Store

settings = Settings(repo=Path(sys.argv[1]), index_dir=Path(sys.argv[2]), chunk_lines=10)
store = Store.open(settings.index_path)
ticks = iter(range(10**9))
stop_at = int(sys.argv[3])

def progress(p):
    print(p.files_done, flush=True)
    if p.files_done >= stop_at:
        time.sleep(120)  # the parent kills us here, in the middle of an open batch

build_index(settings, store, progress=progress, batch_files=25,
            clock=lambda: float(next(ticks)))
"""


def test_sigkill_mid_batch_then_rerun_equals_a_clean_index(tmp_path: Path) -> None:
    repo = make_many_files(tmp_path / "repo", 300)
    index = tmp_path / "index"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(repo), str(index), "110"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if int(line) >= 110:
                break
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    settings = Settings(repo=repo, index_dir=index, chunk_lines=10)
    with Store.open(settings.index_path) as store:
        assert store.notice is None  # a valid database, not moved aside
        assert store.file_count() == 100  # four committed batches of 25; the open one is lost
        rest = build_index(settings, store)
        assert (rest.files_indexed, rest.files_unchanged) == (200, 100)
        assert snapshot(store, settings.chunking_spec.key) == clean_index(
            repo, tmp_path, chunk_lines=10
        )


def test_progress_reports_walk_index_and_done(settings: Settings, store: Store) -> None:
    seen: list[IndexProgress] = []
    build_index(settings, store, progress=seen.append, clock=ticking_clock())
    assert seen[0].stage == "walk" and seen[-1].stage == "done"
    assert seen[-1].files_done == seen[-1].files_total == len(FILES)
    assert [p.files_done for p in seen] == sorted(p.files_done for p in seen)


def test_plain_folder_without_git_is_indexed(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "plain", git=False)
    store, report = open_index(Settings(repo=repo, index_dir=tmp_path / "index"))
    store.close()
    assert not report.is_git
    assert report.files_indexed == len(FILES)
    assert report.skipped_by_reason() == {}


def test_progress_is_throttled_between_forced_updates(settings: Settings, store: Store) -> None:
    seen: list[IndexProgress] = []
    build_index(settings, store, progress=seen.append, clock=lambda: 0.0)  # time stands still
    assert [p.stage for p in seen] == ["walk", "index", "done"]
