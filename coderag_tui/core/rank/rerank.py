"""Cross-encoder rerankers (fastembed and sentence-transformers) and the offline-first choice.

A cross-encoder reads the query and a candidate together, which ranks better than comparing
two vectors but costs a forward pass per candidate, so it only sees the top fused
candidates. Like the embedder, a candidate longer than the model's window is scored as
stripes and keeps its best stripe's score instead of being silently truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.dense import split_stripes
from coderag_tui.core.rank.embed import MAX_WINDOW, plain_tokenizer
from coderag_tui.core.rank.learned import LearnedModel, LearnedReranker, ModelError
from coderag_tui.core.rank.models import quiet_progress_bars

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from coderag_tui.settings import Settings

DEFAULT_FASTEMBED_RERANKER = "Xenova/ms-marco-MiniLM-L-6-v2"
DEFAULT_ST_RERANKER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
RERANK_OVERLAP = 32


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, text) pairs: one float per text, higher means more relevant."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


@dataclass(frozen=True)
class RerankerChoice:
    """The reranker to use, or None with one sentence saying why and how to enable reranking;
    `reason` beside a reranker is a note for the user (which learned model, and why)."""

    reranker: Reranker | LearnedReranker | None
    reason: str

    @property
    def available(self) -> bool:
        return self.reranker is not None


class StripedReranker:
    """Shared behaviour of the backends: split long candidates, keep each one's best stripe."""

    name: str
    backend: str
    max_tokens: int
    tokenizer: Tokenizer

    def _setup(self, name: str, tokenizer: Tokenizer, max_tokens: int) -> None:
        self.name = name
        self.tokenizer = plain_tokenizer(tokenizer)
        self.max_tokens = max(16, min(int(max_tokens), MAX_WINDOW))

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        raise NotImplementedError

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, higher is better; a long text scores as its best stripe."""
        if not texts:
            return []
        query_tokens = len(self.tokenizer.encode(query, add_special_tokens=False).ids)
        # [CLS] query [SEP] text [SEP]; a very long query keeps at most half the window.
        room = self.max_tokens - min(query_tokens, self.max_tokens // 2) - 3 - mr.TOKEN_MARGIN
        stripes = split_stripes(texts, self.tokenizer, max(16, room), RERANK_OVERLAP)
        raw = np.asarray(self._predict([(query, s) for s in stripes.texts]), dtype=np.float64)
        best = np.full(len(texts), -np.inf)
        np.maximum.at(best, stripes.chunk_of, raw.reshape(-1))
        return [float(x) for x in best]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class SentenceTransformerReranker(StripedReranker):
    """A sentence-transformers CrossEncoder on the CPU."""

    backend = mr.SENTENCE_TRANSFORMERS

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        tokenizer = model.tokenizer.backend_tokenizer
        max_tokens = int(getattr(model, "max_seq_length", None) or 512)
        self._setup(name, tokenizer, max_tokens)

    @classmethod
    def load(
        cls, name_or_path: str, *, allow_download: bool = False
    ) -> SentenceTransformerReranker:
        """Load by hub name or local folder; only a download-allowed call may reach the hub."""
        quiet_progress_bars()
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(
            str(name_or_path),
            device="cpu",
            cache_folder=mr.cache_folder("huggingface"),
            local_files_only=not allow_download,
        )
        return cls(model, f"{mr.SENTENCE_TRANSFORMERS}:{name_or_path}")

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        scores = self.model.predict(
            pairs, batch_size=32, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(scores, dtype=np.float64)


class FastembedReranker(StripedReranker):
    """A fastembed (onnxruntime) TextCrossEncoder."""

    backend = mr.FASTEMBED

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        inner = getattr(model, "model", model)
        if getattr(inner, "tokenizer", None) is None and hasattr(inner, "_ensure_tokenizer"):
            inner._ensure_tokenizer()
        tokenizer = inner.tokenizer
        truncation = tokenizer.truncation or {}
        self._setup(name, tokenizer, int(truncation.get("max_length") or 512))

    @classmethod
    def load(
        cls, name: str, *, allow_download: bool = False, folder: Path | None = None
    ) -> FastembedReranker:
        """Load by fastembed registry name, or a local ONNX folder registered under its path."""
        quiet_progress_bars()
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        cache = mr.cache_folder("fastembed")  # never fastembed's default in a shared /tmp
        if folder is None:
            model = TextCrossEncoder(name, cache_dir=cache, local_files_only=not allow_download)
            return cls(model, f"{mr.FASTEMBED}:{name}")
        model_id = _register_fastembed_folder(folder)
        model = TextCrossEncoder(
            model_id, cache_dir=cache, specific_model_path=str(folder), local_files_only=True
        )
        return cls(model, f"{mr.FASTEMBED}:{folder}")

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return np.asarray(list(self.model.rerank_pairs(pairs, batch_size=32)), dtype=np.float64)


def _register_fastembed_folder(folder: Path) -> str:
    """Make a local ONNX cross-encoder folder known to fastembed's registry."""
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    model_id = mr.local_model_id("rerank", folder)
    if mr.fastembed_description(TextCrossEncoder.list_supported_models(), model_id) is None:
        model_file = mr.onnx_file(folder)
        if model_file is None:
            raise ValueError(f"{folder} has no model.onnx")
        TextCrossEncoder.add_custom_model(
            model=model_id, sources=ModelSource(hf=model_id), model_file=model_file
        )
    return model_id


# --- resolution -----------------------------------------------------------------------------

_HOW_TO = (
    "use the shipped learned reranker (--rerank-backend learned, which needs nothing "
    "more), pass --rerank-model PATH to a local cross-encoder, or allow a one-time "
    f"download of {DEFAULT_FASTEMBED_RERANKER} (--allow-download or CODERAG_ALLOW_DOWNLOAD=1)"
)


def _load(backend: str, name: str, *, allow_download: bool, folder: Path | None) -> StripedReranker:
    if backend == mr.FASTEMBED:
        return FastembedReranker.load(name, allow_download=allow_download, folder=folder)
    source = str(folder) if folder is not None else name
    return SentenceTransformerReranker.load(source, allow_download=allow_download)


def _fastembed_models() -> list[dict[str, Any]]:
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    return list(TextCrossEncoder.list_supported_models())


RERANKERS: mr.ModelKind[StripedReranker] = mr.ModelKind(
    noun="rerank model",
    load=_load,
    fastembed_models=_fastembed_models,
    st_markers=("config.json",),
    defaults=(
        (mr.FASTEMBED, DEFAULT_FASTEMBED_RERANKER),
        (mr.SENTENCE_TRANSFORMERS, DEFAULT_ST_RERANKER),
    ),
)


def resolve_reranker(settings: Settings) -> RerankerChoice:
    """Pick the reranker as DESIGN.md orders it, or say in one sentence why reranking is off.

    `learned`: the learned model (`resolve_learned`). A cross-encoder backend: the model
    settings.rerank_model names (folder or name); a default cross-encoder already in a
    backend's cache; a download only if settings.allow_download. `auto`: a cross-encoder
    found so (no offline package ships one), else the learned model.
    """
    backend = settings.rerank_backend.strip().lower()
    if backend == "learned":
        return resolve_learned(settings)
    if backend not in mr.BACKENDS or backend == mr.MODEL2VEC:
        return RerankerChoice(
            None,
            f"reranking is off: unknown rerank_backend {settings.rerank_backend!r} — "
            "use auto, learned, fastembed, sentence-transformers or none.",
        )
    if backend == "none":
        return RerankerChoice(
            None,
            "reranking is off: rerank_backend is none — set rerank_backend = auto in the config "
            "(or CODERAG_RERANK_BACKEND=auto) to enable it.",
        )
    named, problem = mr.resolve_model(
        RERANKERS,
        backend,
        settings.rerank_model,
        allow_download=settings.allow_download,
        repo=settings.repo_root,
    )
    if named is not None:
        return RerankerChoice(named, "")
    if problem:
        return RerankerChoice(None, f"reranking is off: {problem} — {_HOW_TO}.")
    if backend == "auto":
        return resolve_learned(settings)
    return RerankerChoice(
        None,
        "reranking is off: no cross-encoder is available offline (the shipped MiniLM is a "
        f"bi-encoder, and as a reranker it ranked worse than the fused list) — {_HOW_TO}.",
    )


def resolve_learned(settings: Settings) -> RerankerChoice:
    """The learned reranker: the model file rerank_model names (with rerank_backend =
    learned), else this repository's own from `coderag tune` when it beat the shipped model
    on its held-back history, else the shipped model."""
    try:
        if settings.rerank_model and settings.rerank_backend == "learned":
            path = Path(settings.rerank_model).expanduser()
            return RerankerChoice(LearnedReranker(LearnedModel.load(path, str(path))), "")
        tuned = settings.tuned_model_path
        if tuned.is_file():
            model = LearnedModel.load(tuned, "tuned")
            if model.meta.get("beats_shipped") is True:
                return RerankerChoice(LearnedReranker(model), "")
        return RerankerChoice(LearnedReranker(LearnedModel.shipped()), "")
    except ModelError as exc:
        return RerankerChoice(None, f"reranking is off: {exc}")
