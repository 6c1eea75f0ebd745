"""The learned reranker: LightGBM's trees walked in numpy, the features of a search, the seam
in the Searcher, which model is chosen, and the shipped model itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.rank.learned import (
    BIAS,
    FEATURE_NAMES,
    FEATURES,
    NOT_RERANKED,
    OTHERS,
    LearnedModel,
    LearnedReranker,
    ModelError,
    TreeEnsemble,
    explain,
)
from coderag_tui.core.rank.lexical import BM25Index
from coderag_tui.core.rank.rerank import resolve_reranker
from coderag_tui.core.rank.search import Searcher
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings

lgb = pytest.importorskip("lightgbm")

F = len(FEATURE_NAMES)


def _random_model(seed: int, *, with_nan: bool, zero_missing: bool = False) -> tuple[str, object]:
    """A small lambdarank model on random rows (NaNs and zeros in some columns)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(600, F))
    x[rng.random(x.shape) < 0.2] = 0.0
    if with_nan:
        x[rng.random(x.shape) < 0.1] = np.nan
    y = (np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 7]) > 0.5).astype(int) + (
        np.nan_to_num(x[:, 17]) > 1
    ).astype(int)
    data = lgb.Dataset(x, y, group=[30] * 20, feature_name=list(FEATURE_NAMES))
    params = {
        "objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5, "verbosity": -1,
        "seed": seed, "deterministic": True, "num_threads": 1, "zero_as_missing": zero_missing,
    }  # fmt: skip
    booster = lgb.train(params, data, num_boost_round=25)
    return booster.model_to_string(), booster


@pytest.mark.parametrize(
    ("with_nan", "zero_missing"), [(False, False), (True, False), (True, True)]
)
def test_the_trees_score_every_row_as_lightgbm_does(with_nan: bool, zero_missing: bool) -> None:
    text, booster = _random_model(1, with_nan=with_nan, zero_missing=zero_missing)
    trees = TreeEnsemble.from_text(text)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, F))
    x[rng.random(x.shape) < 0.2] = 0.0
    x[rng.random(x.shape) < 0.1] = np.nan
    expected = booster.predict(x)  # type: ignore[attr-defined]
    np.testing.assert_allclose(trees.predict(x), expected, rtol=1e-9, atol=1e-9)
    assert trees.feature_names == FEATURE_NAMES


def test_a_rows_contributions_sum_to_its_score() -> None:
    text, _ = _random_model(3, with_nan=False)
    trees = TreeEnsemble.from_text(text)
    x = np.random.default_rng(4).normal(size=(50, F))
    parts = trees.contributions(x)
    np.testing.assert_allclose(trees.expected() + parts.sum(axis=1), trees.predict(x), atol=1e-9)
    assert (parts[:, 1:7] == 0).all() or parts.any()  # features without splits add nothing


def test_why_names_the_biggest_parts_and_sums_to_the_score() -> None:
    contrib = np.zeros(F)
    contrib[[3, 9, 20, 30]] = [0.5, -0.9, 0.1, 0.05]
    score = 1.0 + contrib.sum()
    why = explain(score, 1.0, contrib)
    assert why[0] == (BIAS, 1.0)
    labels = [FEATURES[n][1] for n in (9, 3, 20)]  # by size: -0.9, 0.5, 0.1
    assert [label for label, _ in why[1:4]] == labels
    assert why[4] == (OTHERS, pytest.approx(0.05))
    assert sum(v for _, v in why) == pytest.approx(score)


def test_a_model_for_other_features_is_refused_with_the_fix(tmp_path: Path) -> None:
    text, _ = _random_model(5, with_nan=False)
    other = text.replace("feature_names=q_words", "feature_names=something_else", 1)
    path = tmp_path / "model.txt"
    path.write_text(other, encoding="utf-8")
    with pytest.raises(ModelError, match="coderag tune"):
        LearnedModel.load(path)
    path.write_text("not a model", encoding="utf-8")
    with pytest.raises(ModelError, match="not a usable LightGBM ranking model"):
        LearnedModel.load(path)


def test_the_shipped_model_loads_and_is_a_reviewable_size() -> None:
    model = LearnedModel.shipped()
    assert model.trees.feature_names == FEATURE_NAMES
    assert model.source == "shipped"
    from importlib import resources

    text = resources.files("coderag_tui.core.rank").joinpath("learned_ranker.txt").read_text()
    assert len(text.encode()) < 400_000
    assert model.meta.get("trained_by") == "training/train_ranker.py"


# --- in a search --------------------------------------------------------------------------------

CHUNKS = [
    Chunk(
        "app/router.py",
        1,
        40,
        "lines",
        "python",
        "class Router:\n    def add_route(self, path): ...",
    ),
    Chunk("app/router.py", 41, 80, "lines", "python", "def match(path): return routes"),
    Chunk("tests/test_router.py", 1, 30, "lines", "python", "def test_add_route(): Router()"),
    Chunk("docs/routing.md", 1, 20, "lines", "markdown", "How routes are registered: add_route"),
    Chunk("app/server.py", 1, 60, "lines", "python", "def serve(router): router.match(path)"),
]


def _searcher(model: LearnedModel) -> Searcher:
    bm25 = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=True)
    return Searcher(CHUNKS, bm25, reranker=LearnedReranker(model))


def test_a_search_reranks_the_fused_candidates_with_reasons() -> None:
    run = _searcher(LearnedModel.shipped()).run(
        "how are routes registered", Settings(rerank=True, learned_candidates=3)
    )
    reranked = run.rankings["rerank"]
    fused = run.rankings["fused"]
    assert reranked.available
    assert [h.rank for h in reranked.hits] == list(range(1, len(reranked.hits) + 1))
    # the fused top 3 reordered, then the rest of the fused list in its order
    assert {h.chunk.key for h in reranked.hits[:3]} == {h.chunk.key for h in fused.hits[:3]}
    assert [h.chunk.key for h in reranked.hits[3:]] == [h.chunk.key for h in fused.hits[3:]]
    scores = [h.score for h in reranked.hits[:3]]
    assert scores == sorted(scores, reverse=True)
    for hit in reranked.hits[:3]:
        assert hit.why[0][0] == BIAS
        assert sum(v for _, v in hit.why) == pytest.approx(hit.score)
    assert all(h.why == ((NOT_RERANKED, h.score),) for h in reranked.hits[3:])
    assert "rerank" in [t.stage for t in run.timings]
    assert run.final is reranked


def test_the_features_read_what_the_search_computed() -> None:
    from coderag_tui.core.learn.build import FeatureRecorder

    recorder = FeatureRecorder()
    bm25 = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=True)
    searcher = Searcher(CHUNKS, bm25, reranker=recorder)
    searcher.run("Router add_route", Settings(rerank=True))
    assert recorder.last is not None
    ids, x = recorder.last
    col = {name: n for n, name in enumerate(FEATURE_NAMES)}
    assert x.shape == (ids.size, F)
    assert x[0, col["fused_rr"]] == 1.0 and x[0, col["fused_rel"]] == 1.0
    by_path = {CHUNKS[i].path: row for row, i in enumerate(ids.tolist())}
    assert x[by_path["tests/test_router.py"], col["role_test"]] == 1.0
    assert x[by_path["tests/test_router.py"], col["sig_role"]] < 0
    assert x[by_path["docs/routing.md"], col["lang_prose"]] == 1.0
    assert x[by_path["docs/routing.md"], col["lang_code"]] == 0.0
    assert x[:, col["q_dense"]].max() == 0.0
    router = ids.tolist().index(0)
    assert x[router, col["sig_definition"]] > 0  # defines add_route
    assert (
        x[router, col["chunk_cov"]] > 0
        and x[router, col["file_cov"]] >= x[router, col["chunk_cov"]]
    )
    assert x[router, col["path_depth"]] == 1.0


# --- which model ----------------------------------------------------------------------------------


def test_learned_is_chosen_by_name_and_by_auto_without_a_cross_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(repo=tmp_path, index_dir=tmp_path / "index", rerank=True)
    choice = resolve_reranker(settings.with_(rerank_backend="learned"))
    assert (
        isinstance(choice.reranker, LearnedReranker) and choice.reranker.model.source == "shipped"
    )
    import coderag_tui.core.rank.models as mr

    monkeypatch.setattr(mr, "resolve_model", lambda *a, **k: (None, ""))
    auto = resolve_reranker(settings)
    assert isinstance(auto.reranker, LearnedReranker)


def test_a_tuned_model_is_used_only_where_it_beat_the_shipped_one(tmp_path: Path) -> None:
    settings = Settings(repo=tmp_path, index_dir=tmp_path / "index", rerank_backend="learned")
    tuned = settings.tuned_model_path
    tuned.parent.mkdir(parents=True)
    text, _ = _random_model(6, with_nan=False)
    tuned.write_text(text, encoding="utf-8")
    tuned.with_suffix(".json").write_text(json.dumps({"beats_shipped": False}), encoding="utf-8")
    choice = resolve_reranker(settings)
    assert isinstance(choice.reranker, LearnedReranker)
    assert choice.reranker.model.source == "shipped"
    tuned.with_suffix(".json").write_text(json.dumps({"beats_shipped": True}), encoding="utf-8")
    choice = resolve_reranker(settings)
    assert isinstance(choice.reranker, LearnedReranker)
    assert choice.reranker.model.source == "tuned"


def test_a_broken_model_file_turns_reranking_off_with_a_sentence(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("garbage", encoding="utf-8")
    choice = resolve_reranker(
        Settings(repo=tmp_path, rerank_backend="learned", rerank_model=str(path))
    )
    assert choice.reranker is None
    assert choice.reason.startswith("reranking is off: ") and str(path) in choice.reason


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "binary", "huge"])
def test_a_model_file_a_repository_names_is_refused_without_waiting_or_reading_it_whole(
    tmp_path: Path, kind: str
) -> None:
    """A repository's config may name rerank_model inside the repository: a FIFO there must
    not hang the search, nor bytes that are not text or a file of gigabytes stop it."""
    path = tmp_path / "model.txt"
    if kind == "fifo":
        os.mkfifo(path)
        said = "not a regular file"
    elif kind == "binary":
        path.write_bytes(b"\x96\xff\x00" * 100)
        said = "not UTF-8 text"
    else:
        with path.open("wb") as handle:  # sparse: gigabytes on paper, nothing on disk
            handle.truncate(2 * 1024**3)
        said = "larger than 16 MiB"
    choice = resolve_reranker(
        Settings(repo=tmp_path, rerank_backend="learned", rerank_model=str(path))
    )
    assert choice.reranker is None
    assert choice.reason == (
        f"reranking is off: the learned model {path} is {said}: give a model file written by "
        "`coderag tune` or training/train_ranker.py."
    )
