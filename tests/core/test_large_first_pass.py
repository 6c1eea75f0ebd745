"""A large repository's first answer does not wait on dense: BM25 answers, the background
process makes the static first pass (and, under `dense_background_limit`, the model), and a
later search ranks with it. Says what is still coming, with the time left."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from coderag_tui.core import engine as engine_module
from coderag_tui.core import refine
from coderag_tui.core.engine import Engine
from coderag_tui.core.rank.embedding_status import EmbeddingStatus, duration
from coderag_tui.settings import Settings

pytestmark = pytest.mark.slow  # runs the shipped static table over a repository


def test_a_large_first_pass_is_left_to_the_background_and_a_later_search_has_it(
    tiny_repo: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "FIRST_PASS_AT_ONCE", 2)  # the tiny repository is "large"
    settings = Settings(repo=tiny_repo, index_dir=index_dir, dense_background_limit=3)
    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
        assert len(lexical.chunks) > 3
        dense = engine.open_dense_now(settings, lexical, background=True)
        engine.use(lexical)
        engine.use(dense)
        run = engine.search("refund a card payment", settings)
    # BM25 answered; dense says what is coming, and that the model is capped, and how to finish
    assert not dense.available and dense.pending
    assert run.rankings["bm25"].hits
    assert "a background process at low priority makes the static first pass" in dense.reason
    assert "is not started on its own above 3 chunks" in dense.reason
    assert "`coderag index --dense` embeds them all" in dense.reason

    refine._embed(settings, threading.Event())  # the process's work, here in this process

    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
        dense = engine.open_dense_now(settings, lexical, background=True)
    assert dense.available and dense.first_pass and dense.index is not None
    assert dense.index.complete
    assert "is not started on its own above 3 chunks" in " ".join(dense.notices)


def test_a_small_repository_still_gets_its_first_pass_at_once(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = Settings(repo=tiny_repo, index_dir=index_dir)
    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
        dense = engine.open_dense_now(settings, lexical, background=True)
    assert dense.available and dense.first_pass


def test_the_background_status_says_the_time_left() -> None:
    now = time.time()
    status = EmbeddingStatus(1, "embedding", 100, 1100, now - 60, "m", since=now - 10)
    assert status.eta_s(now) == pytest.approx(100.0)
    assert status.describe(now) == "100 of 1,100 windows so far, about 2 min left"
    first = EmbeddingStatus(1, "first pass", 0, 500, now, "static", since=now)
    assert first.describe(now) == "first pass: 0 of 500 windows so far"
    assert [duration(s) for s in (5, 600, 3 * 3600 + 600)] == ["5 s", "10 min", "3 h 10 min"]
