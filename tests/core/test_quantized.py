"""The int8 copy of an exported ONNX embedder, and tokenizing long corpora in slices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.rank import dense
from coderag_tui.core.rank.dense import split_stripes
from coderag_tui.core.rank.embed import (
    OFFLINE_INT8_KEY,
    OFFLINE_KEY,
    FastembedEmbedder,
    quantize_onnx,
)
from coderag_tui.core.rank.embedders import load_offline_package
from coderag_tui.core.rank.onnx_embed import OnnxEmbedder
from tests.fixtures.tiny_models import tiny_fastembed_embedder, tiny_models_dir

__all__ = ["tiny_fastembed_embedder", "tiny_models_dir"]

TEXTS = [
    "def read_file(path):\n    with open(path) as handle:\n        return handle.read()",
    "class Cart:\n    def total(self):\n        return sum(item.price for item in self.items)",
    "the apple and the banana sat in a fruit bowl with a pear",
    "for token in tokens:\n    if token in index:\n        yield index[token]",
]


def test_the_int8_copy_embeds_like_the_fp32_model_and_is_made_once(
    tiny_fastembed_embedder: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    target = quantize_onnx(tiny_fastembed_embedder, tmp_path / "int8")
    assert target == tmp_path / "int8"
    # The tokenizer and pooling files come along; only the weights change.
    for name in ("tokenizer.json", "config.json", "tokenizer_config.json"):
        assert (target / name).read_bytes() == (tiny_fastembed_embedder / name).read_bytes()
    weights = (target / "model.onnx").stat().st_size
    assert weights < (tiny_fastembed_embedder / "model.onnx").stat().st_size
    assert [p.name for p in tmp_path.iterdir()] == ["int8"]  # no temporary folder left behind
    assert "pre-processing" not in capfd.readouterr().err  # nothing written over a TUI

    fp32 = FastembedEmbedder.load("fp32", folder=tiny_fastembed_embedder)
    int8 = FastembedEmbedder.load("int8", folder=target)
    assert int8.window == fp32.window
    cosines = np.sum(fp32.embed_documents(TEXTS) * int8.embed_documents(TEXTS), axis=1)
    assert cosines.min() > 0.95
    assert float(fp32.embed_query("read a file") @ int8.embed_query("read a file")) > 0.95

    stamp = (target / "model.onnx").stat().st_mtime_ns
    assert quantize_onnx(tiny_fastembed_embedder, target) == target
    assert (target / "model.onnx").stat().st_mtime_ns == stamp


def test_a_folder_without_onnx_weights_is_not_quantized(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=r"src has no model\.onnx"):
        quantize_onnx(tmp_path / "src", tmp_path / "int8")
    assert not (tmp_path / "int8").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["src"]


@pytest.mark.parametrize("max_stripes", [0, 1, 2])
def test_stripes_cut_in_tokenizer_slices_equal_one_call(
    tiny_fastembed_embedder: Path, monkeypatch: pytest.MonkeyPatch, max_stripes: int
) -> None:
    tokenizer = FastembedEmbedder.load("tiny", folder=tiny_fastembed_embedder).tokenizer
    texts = [" ".join(TEXTS[: 1 + i % 4]) * (1 + i % 5) for i in range(23)]
    whole = split_stripes(texts, tokenizer, 24, 6, max_stripes)
    monkeypatch.setattr(dense, "TOKENIZE_SLICE", 4)
    sliced = split_stripes(texts, tokenizer, 24, 6, max_stripes)
    assert sliced.texts == whole.texts
    assert sliced.tokens == whole.tokens
    np.testing.assert_array_equal(sliced.chunk_of, whole.chunk_of)
    assert set(sliced.chunk_of.tolist()) == set(range(len(texts)))


@pytest.mark.slow
def test_the_offline_minilm_runs_int8_under_its_own_cache_key(tmp_path: Path) -> None:
    int8 = load_offline_package(tmp_path / "models")
    fp32 = load_offline_package(tmp_path / "models", quantized=False)
    assert isinstance(int8, OnnxEmbedder) and isinstance(fp32, OnnxEmbedder)
    assert (int8.name, fp32.name) == (OFFLINE_INT8_KEY, OFFLINE_KEY)
    assert (int8.max_tokens, int8.window) == (fp32.max_tokens, fp32.window)
    relevant = TEXTS[0]
    unrelated = "The cat sat on the warm mat and purred at the afternoon sun."
    docs = int8.embed_documents([unrelated, relevant, *TEXTS])
    cosines = np.sum(docs * fp32.embed_documents([unrelated, relevant, *TEXTS]), axis=1)
    assert cosines.min() > 0.97
    scores = docs @ int8.embed_query("how do I read the contents of a file")
    assert scores[1] > scores[0] + 0.1


def test_onnxruntime_alone_embeds_as_fastembed_does(tiny_fastembed_embedder: Path) -> None:
    """A fresh process's search runs the ONNX copy without importing fastembed: its vectors
    must be fastembed's, since both share the embedding cache's entries."""
    ours = OnnxEmbedder(tiny_fastembed_embedder, "tiny")
    theirs = FastembedEmbedder.load("tiny", folder=tiny_fastembed_embedder)
    assert (ours.max_tokens, ours.window) == (theirs.max_tokens, theirs.window)
    # Texts longer than the window are truncated alike; a batch is padded to its longest.
    texts = [*TEXTS, " ".join(TEXTS) * 8, "x"]
    np.testing.assert_allclose(
        ours.embed_documents(texts), theirs.embed_documents(texts), atol=1e-5
    )
    for query in ("read a file", " ".join(TEXTS) * 4):
        np.testing.assert_allclose(ours.embed_query(query), theirs.embed_query(query), atol=1e-5)
