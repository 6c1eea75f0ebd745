"""Rerankers: both cross-encoder backends through their real libraries, stripes, resolution."""

# Fixtures are imported from tests/fixtures (conftest.py is shared), so arguments shadow them.
# ruff: noqa: F811

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.rank.dense import split_stripes
from coderag_tui.core.rank.learned import LearnedReranker
from coderag_tui.core.rank.rerank import (
    FastembedReranker,
    RerankerChoice,
    SentenceTransformerReranker,
    resolve_reranker,
)
from coderag_tui.settings import Settings
from tests.fixtures.tiny_models import (  # noqa: F401 - pytest fixtures
    no_cached_models,
    tiny_fastembed_cross_encoder,
    tiny_models_dir,
    tiny_st_cross_encoder,
)

QUERY = "parse config"
TEXTS = ["def parse config file", "apple banana cherry", "return total price", "def load"]


def _resolve(tmp_path: Path, **changes: object) -> RerankerChoice:
    return resolve_reranker(Settings(repo=tmp_path).with_(**changes))


def test_sentence_transformers_cross_encoder_scores_every_text(
    tiny_st_cross_encoder: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, rerank_model=str(tiny_st_cross_encoder))
    reranker = choice.reranker
    assert isinstance(reranker, SentenceTransformerReranker), choice.reason
    scores = reranker.score(QUERY, TEXTS)
    assert len(scores) == len(TEXTS) and all(isinstance(s, float) for s in scores)
    # Short texts fit the window: the scores are the library's own.
    direct = reranker.model.predict([(QUERY, t) for t in TEXTS], show_progress_bar=False)
    np.testing.assert_allclose(scores, direct, rtol=1e-5)
    assert len(set(scores)) > 1
    assert reranker.score(QUERY, []) == []


def test_fastembed_cross_encoder_scores_every_text(
    tiny_fastembed_cross_encoder: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, rerank_model=str(tiny_fastembed_cross_encoder))
    reranker = choice.reranker
    assert isinstance(reranker, FastembedReranker), choice.reason
    scores = reranker.score(QUERY, TEXTS)
    direct = list(reranker.model.rerank(QUERY, TEXTS))
    np.testing.assert_allclose(scores, direct, rtol=1e-5)
    assert len(set(scores)) > 1
    again = _resolve(tmp_path, rerank_model=str(tiny_fastembed_cross_encoder))
    assert isinstance(again.reranker, FastembedReranker)


def test_a_long_text_scores_as_its_best_stripe(
    tiny_fastembed_cross_encoder: Path, tmp_path: Path
) -> None:
    reranker = _resolve(tmp_path, rerank_model=str(tiny_fastembed_cross_encoder)).reranker
    assert isinstance(reranker, FastembedReranker)
    long_text = "\n".join(["apple banana cherry grape lemon mango"] * 30 + ["def parse config"])
    [score] = reranker.score(QUERY, [long_text])
    query_tokens = len(reranker.tokenizer.encode(QUERY, add_special_tokens=False).ids)
    room = reranker.max_tokens - query_tokens - 3 - 4
    stripes = split_stripes([long_text], reranker.tokenizer, room, 32).texts
    assert len(stripes) > 1
    assert "def parse config" in stripes[-1]  # the end of the text is seen, not cut off
    per_stripe = reranker.score(QUERY, stripes)
    assert score == pytest.approx(max(per_stripe), rel=1e-5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["fastembed", "sentence-transformers"])
def test_no_cross_encoder_offline_says_why_and_how_to_fix_it(
    no_cached_models: Path, tmp_path: Path, backend: str
) -> None:
    choice = _resolve(tmp_path, rerank_backend=backend)
    assert choice.reranker is None
    assert choice.reason == (
        "reranking is off: no cross-encoder is available offline (the shipped MiniLM is a "
        "bi-encoder, and as a reranker it ranked worse than the fused list) — use the "
        "shipped learned reranker (--rerank-backend learned, which needs nothing more), pass "
        "--rerank-model PATH to a local cross-encoder, or allow a one-time download of "
        "Xenova/ms-marco-MiniLM-L-6-v2 (--allow-download or CODERAG_ALLOW_DOWNLOAD=1)."
    )


@pytest.mark.timeout(60)
def test_auto_without_a_cross_encoder_offline_reranks_with_the_learned_model(
    no_cached_models: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path)
    assert isinstance(choice.reranker, LearnedReranker), choice.reason
    assert choice.reranker.model.source == "shipped"


@pytest.mark.timeout(60)
def test_a_named_cross_encoder_missing_from_the_cache_is_reported_by_name(
    no_cached_models: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, rerank_model="BAAI/bge-reranker-base")
    assert choice.reranker is None
    assert choice.reason.startswith(
        "reranking is off: the rerank model BAAI/bge-reranker-base is not in the local cache "
        "and downloads are off — "
    )


def test_rerank_backend_none_turns_reranking_off(
    tiny_st_cross_encoder: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, rerank_model=str(tiny_st_cross_encoder), rerank_backend="none")
    assert choice.reranker is None
    assert choice.reason == (
        "reranking is off: rerank_backend is none — set rerank_backend = auto in the config "
        "(or CODERAG_RERANK_BACKEND=auto) to enable it."
    )
