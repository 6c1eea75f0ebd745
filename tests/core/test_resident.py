"""The resident engine behind `coderag serve`: it answers from memory while nothing changed,
re-checks when a file did (before answering, or in the background once changes settle), and
refuses requests that need another index or model."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core import resident as resident_module
from coderag_tui.core.engine import Engine
from coderag_tui.core.rank.segments import _TABLE as TABLE_NAME
from coderag_tui.core.rank.segments import FileTable
from coderag_tui.core.resident import Resident, differs
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import HashingEmbedder


def open_with_hashing(settings: Settings, *, dense: bool, **kw: Any) -> Engine:
    """Engine.open's stages, with a tiny real embedder in place of a model."""
    engine = Engine(settings, explicit=kw.get("explicit"))
    lexical = engine.update_index(settings)
    engine.use(lexical)
    if dense:
        engine.use(engine.open_dense(settings, lexical, embedder=HashingEmbedder()))
    return engine


@pytest.fixture
def settings(tiny_repo: Path, index_dir: Path) -> Settings:
    return Settings(repo=tiny_repo, index_dir=index_dir, chunk_lines=8, embed_backend="none")


@pytest.fixture
def resident(settings: Settings, tmp_path: Path) -> Iterator[Resident]:
    made, note = Resident.open(settings, tmp_path / "cookies", open_engine=open_with_hashing)
    assert note == ""
    with made:
        yield made


def top_paths(resident: Resident, settings: Settings, query: str, *, dense: bool) -> list[str]:
    with resident.serving(settings, dense=dense, rerank=False) as engine:
        run = engine.search(query, settings)
    return [hit.chunk.path for hit in run.rankings["fused"].hits[:3]]


def test_unchanged_files_are_trusted_and_an_edit_is_checked_before_the_answer(
    resident: Resident, settings: Settings, tiny_repo: Path
) -> None:
    assert top_paths(resident, settings, "refund transaction", dense=False)[0] == "shop/payment.py"
    assert top_paths(resident, settings, "refund transaction", dense=False)[0] == "shop/payment.py"
    assert resident.checks.trusted == 2 and resident.checks.checked == 0

    (tiny_repo / "shop" / "ledger.py").write_text(
        "def reconcile_ledger_entries(entries):\n    return sorted(entries)\n"
    )
    # asked at once: the cookie guarantees the edit is seen, the background thread or not
    paths = top_paths(resident, settings, "reconcile ledger entries", dense=False)
    assert paths[0] == "shop/ledger.py"


def test_changes_are_taken_in_in_the_background_once_they_settle(
    resident: Resident, settings: Settings, tiny_repo: Path
) -> None:
    (tiny_repo / "shop" / "ledger.py").write_text("def settle_books():\n    return 0\n")
    deadline = time.monotonic() + 20.0
    while resident.checks.background == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert resident.checks.background == 1
    assert top_paths(resident, settings, "settle books", dense=False)[0] == "shop/ledger.py"
    assert resident.checks.checked == 0  # the answer needed no check of its own


def test_freshness_a_file_edited_after_a_dense_off_answer_is_embedded_for_the_next(
    resident: Resident, settings: Settings, tiny_repo: Path
) -> None:
    with resident.serving(settings, dense=False, rerank=False) as engine:
        run = engine.search("charge card", settings)
        assert not run.rankings["dense"].available
        assert "turned off for this run" in run.rankings["dense"].reason
    (tiny_repo / "shop" / "ledger.py").write_text("def zebra_quagga_okapi():\n    return 0\n")
    with resident.serving(settings, dense=True, rerank=False) as engine:
        run = engine.search("zebra quagga okapi", settings)
        dense = run.rankings["dense"]
        assert dense.available
        assert dense.hits[0].chunk.path == "shop/ledger.py"  # the edit is embedded too


def test_the_first_edit_finds_the_saved_bases_already_read(
    resident: Resident, settings: Settings, tiny_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resident reads the saved bases' file tables once it has opened the index, so the
    first edit's check costs what later ones do: it reads none of them itself."""
    assert resident.warmed.wait(20.0)
    reads: list[Path] = []
    read = FileTable._read.__func__  # type: ignore[attr-defined]

    def counted(cls: type[FileTable], folder: Path) -> FileTable:
        reads.append(folder)
        return read(cls, folder)  # type: ignore[no-any-return]

    monkeypatch.setattr(FileTable, "_read", classmethod(counted))
    (tiny_repo / "shop" / "ledger.py").write_text("def tally_receipts():\n    return 0\n")
    assert top_paths(resident, settings, "tally receipts", dense=False)[0] == "shop/ledger.py"
    assert resident.checks.by_path + resident.checks.background >= 1  # a check of the path
    assert reads == []


def test_a_damaged_saved_table_is_left_to_the_check_that_rebuilds_it(
    settings: Settings, tiny_repo: Path
) -> None:
    engine = open_with_hashing(settings, dense=False)
    try:
        tables = sorted(settings.index_path.with_suffix(".bm25").rglob(TABLE_NAME))
        assert tables  # the BM25 and definitions bases
        for table in tables:
            table.write_text("{not json", encoding="utf-8")
        engine.warm_for_edits(settings)  # says nothing: the check reads for itself
        (tiny_repo / "shop" / "ledger.py").write_text("def audit_vouchers():\n    return 0\n")
        lexical = engine.update_index(
            settings, current=engine.lexical, only=frozenset({"shop/ledger.py"})
        )
        engine.use(lexical)
        assert ranked(engine, settings, "audit vouchers")[0][0] == "shop/ledger.py"
    finally:
        engine.close()


def test_a_resident_without_a_watch_checks_before_every_answer(
    settings: Settings, tmp_path: Path
) -> None:
    engine = open_with_hashing(settings, dense=False)
    with Resident(engine, None, dense=False) as resident:
        top_paths(resident, settings, "charge card", dense=False)
        top_paths(resident, settings, "charge card", dense=False)
        assert resident.checks.checked == 2 and resident.checks.trusted == 0


def test_requests_may_differ_only_in_what_a_search_reads(settings: Settings) -> None:
    assert differs(settings, settings.with_(k=3, fusion="weighted", signals=False)) == ""
    assert differs(settings, settings.with_(rerank=True, budget=500)) == ""
    assert differs(settings, settings.with_(chunk_lines=9)) == "chunk_lines"
    assert differs(settings, settings.with_(embed_backend="auto")) == "embed_backend"
    assert differs(settings, settings.with_(split_identifiers=False)) == "split_identifiers"
    assert differs(settings, settings.with_(index_dir=settings.repo)) == "index_dir"
    # a request without dense search does not care which model the resident loaded
    assert differs(settings, settings.with_(embed_backend="auto"), dense=False) == ""
    assert differs(settings, settings.with_(rerank_model="other")) == ""
    assert differs(settings, settings.with_(rerank=True, rerank_model="x")) == "rerank_model"


def ranked(engine: Engine, settings: Settings, query: str) -> list[tuple[str, int, float]]:
    run = engine.search(query, settings)
    hits = run.rankings["fused"].hits
    return [(h.chunk.path, h.chunk.start_line, round(h.score, 9)) for h in hits]


def test_an_edit_is_checked_by_its_path_alone_and_ranks_as_after_a_full_check(
    resident: Resident, settings: Settings, tiny_repo: Path, tmp_path: Path
) -> None:
    top_paths(resident, settings, "charge card", dense=False)
    (tiny_repo / "shop" / "ledger.py").write_text(
        "def reconcile_ledger_entries(entries):\n    return sorted(entries)\n"
    )
    (tiny_repo / "shop" / "cart.py").unlink()
    query = "reconcile ledger entries cart total"
    with resident.serving(settings, dense=False, rerank=False) as engine:
        served = ranked(engine, settings, query)
        lexical = engine.lexical
        assert lexical is not None and lexical.report is not None
        assert lexical.report.touched == ("shop/cart.py", "shop/ledger.py")
    full = settings.with_(index_dir=tmp_path / "full-check")
    fresh = Engine(full)
    fresh.use(fresh.update_index(full))
    assert served == ranked(fresh, full, query)
    assert served[0][0] == "shop/ledger.py"
    assert all(path != "shop/cart.py" for path, _, _ in served)
    fresh.close()


def test_an_ignore_rule_changed_means_every_file_is_checked(
    resident: Resident, settings: Settings, tiny_repo: Path
) -> None:
    assert "shop/payment.py" in top_paths(resident, settings, "refund transaction", dense=False)
    (tiny_repo / ".coderagignore").write_text("shop/payment.py\n")
    paths = top_paths(resident, settings, "refund transaction", dense=False)
    assert "shop/payment.py" not in paths
    lexical = resident.engine.lexical
    assert lexical is not None and lexical.report is not None
    assert lexical.report.touched is None


def test_what_no_watched_path_says_is_taken_in_by_a_full_check_later(
    settings: Settings, tiny_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git add -f` of an ignored file changes no file the watch counts; checks of the
    changed paths alone never see it, the background's later check of every file does."""
    monkeypatch.setattr(resident_module, "FULL_CHECK_AFTER_S", 0.0)
    (tiny_repo / ".gitignore").write_text("zebra.py\n")
    (tiny_repo / "shop" / "zebra.py").write_text("def zebra_quagga_okapi():\n    pass\n")
    made, _ = Resident.open(settings, tmp_path / "cookies", open_engine=open_with_hashing)
    with made as resident:
        assert "shop/zebra.py" not in top_paths(
            resident, settings, "zebra quagga okapi", dense=False
        )
        subprocess.run(["git", "-C", str(tiny_repo), "add", "-f", "shop/zebra.py"], check=True)
        (tiny_repo / "shop" / "cart.py").write_text("def cart_total():\n    return 0\n")
        assert "shop/zebra.py" not in top_paths(
            resident, settings, "zebra quagga okapi", dense=False
        )
        assert resident.checks.by_path >= 1
        deadline = time.monotonic() + 20.0
        while resident.checks.full_after_paths == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert resident.checks.full_after_paths >= 1
        assert (
            top_paths(resident, settings, "zebra quagga okapi", dense=False)[0] == "shop/zebra.py"
        )
