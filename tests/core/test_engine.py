"""Engine: opens in stages, searches with what is installed, packs prompts by one rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core.engine import (
    Dense,
    Engine,
    PromptError,
    PromptRequest,
    code_query,
    search_depth,
)
from coderag_tui.core.records import LineSpan
from coderag_tui.settings import Settings


def settings_for(repo: Path, index_dir: Path, **kw: Any) -> Settings:
    return Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=8, **kw)


def test_open_indexes_the_repo_and_explains_missing_dense(tiny_repo: Path, index_dir: Path) -> None:
    settings = settings_for(tiny_repo, index_dir)
    with Engine.open(settings) as engine:
        lexical = engine.lexical
        assert lexical is not None and lexical.report is not None
        assert lexical.report.files_indexed >= 5
        run = engine.search("transaction_id refund", settings)
        assert run.final.hits[0].chunk.path == "shop/payment.py"
        assert not run.rankings["dense"].available
        assert "embed_backend is none" in run.rankings["dense"].reason
        note = "fused = BM25 + signals (dense is off: embed_backend is none"
        assert any(n.startswith(note) for n in run.notes)
        assert run.files()[0].path == "shop/payment.py"
    # a second open reuses the saved index and gives the same answer
    with Engine.open(settings, dense=False) as again:
        assert again.search("transaction_id refund").final.hits[0].chunk.path == ("shop/payment.py")
        assert "turned off" in again.search("refund").rankings["dense"].reason


def test_search_before_any_stage_is_refused_with_a_sentence(tmp_path: Path) -> None:
    engine = Engine(Settings(repo=tmp_path, index_dir=tmp_path / "ix"))
    assert not engine.ready
    with pytest.raises(RuntimeError, match="no lexical stage"):
        engine.search("anything")


def test_stages_open_one_by_one_and_search_uses_what_is_installed(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = settings_for(tiny_repo, index_dir)
    engine = Engine(settings)
    try:
        assert engine.saved_lexical(settings) is None  # nothing indexed yet
        first = engine.update_index(settings)
        assert first.changed and first.report is not None
        engine.use(first)
        engine.use(Dense(reason="dense search is off: the model is still loading."))
        run = engine.search("refund")
        assert run.rankings["dense"].reason == "dense search is off: the model is still loading."
        # A check that finds nothing new hands back the same chunks, marked unchanged.
        again = engine.update_index(settings, current=first)
        assert not again.changed and again.chunks is first.chunks
        # A saved index serves at once in a new engine (what the TUI shows before checking).
        fresh = Engine(settings)
        try:
            saved = fresh.saved_lexical(settings)
            assert saved is not None and saved.report is None
            assert [c.key for c in saved.chunks] == [c.key for c in first.chunks]
        finally:
            fresh.close()
    finally:
        engine.close()


def test_a_new_lexical_stage_drops_dense_built_for_other_chunks(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = settings_for(tiny_repo, index_dir)
    with Engine.open(settings) as engine:
        engine.use(Dense(reason="dense search is off: test."))
        assert engine.dense is not None
        rechunked = settings.with_(chunk_lines=16)
        engine.use(engine.update_index(rechunked))
        assert engine.dense is None


def test_code_mode_leaves_out_the_chunk_the_query_lines_come_from(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = settings_for(tiny_repo, index_dir)
    query, origin = code_query(settings, "shop/cart.py", 20, 6)
    assert origin.spans == (LineSpan("shop/cart.py", 14, 20),)
    with Engine.open(settings) as engine:
        plain = engine.search(query, settings)
        assert plain.final.hits[0].chunk.path == "shop/cart.py"  # its own lines, trivially
        run = engine.search(query, settings, origin)
        assert run.left_out >= 1 and run.origin == origin
        for ranking in run.rankings.values():
            for hit in ranking.hits:
                c = hit.chunk
                assert not (c.path == "shop/cart.py" and c.start_line <= 20 and c.end_line >= 14)
    absolute, origin2 = code_query(settings, str(tiny_repo / "shop/cart.py"), 20, 6)
    assert (absolute, origin2) == (query, origin)


def test_depth_follows_the_budget_in_every_face() -> None:
    assert search_depth(Settings(depth=100, budget=8000)) == 100
    assert search_depth(Settings(depth=100, budget=128_000)) == 1280
    assert search_depth(Settings(depth=10, k=30, budget=1000)) == 30


def test_prompt_deepens_a_shallow_run_for_a_large_budget(tiny_repo: Path, index_dir: Path) -> None:
    settings = settings_for(tiny_repo, index_dir, depth=1, k=1, budget=300)
    with Engine.open(settings) as engine:
        run = engine.search("cart total refund payment item", settings)
        assert run.depth == 3  # budget 300 // 100 > depth 1
        assert len(run.rankings["fused"].hits) == 3
        big = settings.with_(budget=128_000)
        result = engine.prompt(run, PromptRequest("cart total refund payment item"), big)
        assert result.run.depth == 1280
        packed_keys = {k for b in result.packed.blocks for k in b.chunk_keys}
        assert len(packed_keys) > 3  # the deeper search filled the budget past the first 3
        assert "budget 128k" in result.advice.text


def test_prompt_problems_are_one_sentence(tiny_repo: Path, index_dir: Path) -> None:
    settings = settings_for(tiny_repo, index_dir)
    with Engine.open(settings) as engine:
        run = engine.search("refund", settings)
        with pytest.raises(PromptError, match="template"):
            engine.prompt(run, PromptRequest("refund", template=str(tiny_repo / "nope.txt")))
        with pytest.raises(PromptError):
            engine.prompt(run, PromptRequest("refund"), settings.with_(budget=5))


def test_advice_is_the_same_for_every_face_and_follows_the_budget(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = settings_for(tiny_repo, index_dir)
    with Engine.open(settings) as engine:
        small = engine.advice(settings.with_(budget=2000))
        large = engine.advice(settings.with_(budget=32_000))
        assert "32–64-line chunks recommended" in small.text
        assert "whole files recommended" in large.text
        run = engine.search("refund", settings)
        assert engine.prompt(run, PromptRequest("refund")).advice == engine.advice(settings)
