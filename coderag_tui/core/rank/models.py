"""Where a model can come from offline: local folders, the backends' caches, model packages.

Shared by the embedder and reranker resolution, so both follow one order
(explicit path or name, the backend's local cache, a download only when allowed, an offline
package) and both stay quiet and fast when a model is absent: every check here looks at
files on disk and never calls a hub.

A model is code-like (a graph a runtime executes, a tree a loop walks), so it is only ever one
the user chose (a flag, the environment, their own config) or coderag's shipped or cached
ones; a repository's `.coderag.toml` cannot name one. Before a local folder is handed to a
library, every entry in it is checked (`vet_folder`): a regular file or folder, a link only
to one inside it, so no FIFO blocks a read and no device or link out is read as weights. A
load that takes longer than `LOAD_TIMEOUT_S` is abandoned (`bounded`), and the search goes on
without the model, saying so in one sentence.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from coderag_tui.core.bounded import TookTooLong, within
from coderag_tui.core.capped import parse_json, read_capped

FASTEMBED = "fastembed"
SENTENCE_TRANSFORMERS = "sentence-transformers"
MODEL2VEC = "model2vec"  # static embeddings: a token table, no transformer at run time
BACKENDS = ("auto", FASTEMBED, SENTENCE_TRANSFORMERS, MODEL2VEC, "none")

# Per-sequence special tokens and tokenizer drift when a stripe is re-tokenized on its own.
TOKEN_MARGIN = 4
# Seconds a model may take to load (a session made, weights read) before it is abandoned: a
# 4.9 KB graph of constant MatMuls that onnxruntime folds while opening took a search 68 s.
LOAD_TIMEOUT_S = 60.0
MAX_FOLDER_ENTRIES = 10_000  # files and folders `vet_folder` looks at in one model folder
MAX_JSON_BYTES = 16 * 1024 * 1024  # a model's JSON file (a tokenizer.json is a few MiB)

T = TypeVar("T")


class ModelTimeout(RuntimeError):
    """A model took longer than its bound to load; the message ends a sentence."""


def bounded(work: Callable[[], T], what: str, seconds: float | None = None) -> T:
    """`work()`'s result, or ModelTimeout when it takes longer than `seconds` (default
    `LOAD_TIMEOUT_S`): the load is left to end on its own, and the caller goes on without it."""
    limit = LOAD_TIMEOUT_S if seconds is None else seconds
    try:
        return within(work, limit, "coderag-model-load")
    except TookTooLong:
        raise ModelTimeout(f"{what} took longer than {limit:g} s, so it was abandoned") from None


def vet_folder(folder: Path) -> str:
    """ "" when every entry under `folder` is a regular file or a folder, a link only to one
    inside it; else a few words naming the first entry that is not (a FIFO would block a
    read, a device or a link out is not the folder's own file)."""
    root = os.path.realpath(folder)
    seen = 0
    for where, folders, files in os.walk(root, followlinks=False):
        for name in sorted(folders) + sorted(files):
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                return f"it holds more than {MAX_FOLDER_ENTRIES:,} files"
            path = os.path.join(where, name)
            shown = os.path.relpath(path, root)
            try:
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    real = os.path.realpath(path)
                    if real != root and not real.startswith(root + os.sep):
                        return f"{shown} is a link out of it"
                    mode = os.stat(path).st_mode
            except OSError:
                return f"{shown} cannot be read"
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return f"{shown} is not a regular file"
    return ""


def read_json_object(path: Path) -> dict[str, Any]:
    """A model's JSON file as an object, or {} when it is not a regular file, larger than
    `MAX_JSON_BYTES`, unreadable, not JSON or not an object (a FIFO is never opened)."""
    try:
        data = read_capped(path, MAX_JSON_BYTES) if path.is_file() else None
        loaded = parse_json(data) if data is not None else None
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def installed(module: str) -> bool:
    """Is a module importable, without importing it (heavy backends stay unloaded)?"""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def local_folder(name: str, repo: Path | None = None) -> Path | None:
    """The model folder `name` points at, when it is a path on disk rather than a hub name.

    A relative name read as a hub name would be (`org/model`: no leading `.`, `/` or `~`)
    is no folder inside `repo`, the repository being searched: run from its root, a cloned
    repository would answer the user's hub name with a model of its own (`./org/model` names
    that folder when it is meant)."""
    if not name:
        return None
    path = Path(name).expanduser()
    if not path.is_dir():
        return None
    found = path.resolve()
    if repo is not None and not name.startswith((".", "/", "~")):
        root = repo.resolve()
        if found == root or root in found.parents:
            return None
    return found


def onnx_file(folder: Path) -> str | None:
    """The ONNX weights inside a local model folder, relative to it (fastembed's layout)."""
    for candidate in (
        "model.onnx",
        "onnx/model.onnx",
        "model_optimized.onnx",
        "onnx/model_quantized.onnx",
    ):
        if (folder / candidate).is_file():
            return candidate
    return None


def backend_for_folder(folder: Path) -> str:
    """model2vec for a static model, fastembed for ONNX weights, else sentence-transformers."""
    if is_static_folder(folder):
        return MODEL2VEC
    has_torch_weights = any(
        (folder / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")
    )
    if onnx_file(folder) is not None and not has_torch_weights:
        return FASTEMBED
    return SENTENCE_TRANSFORMERS


def is_static_folder(folder: Path) -> bool:
    """Does the folder hold a model2vec static model (its config says model_type model2vec)?"""
    config = read_json_object(folder / "config.json")
    return config.get("model_type") == "model2vec" and (folder / "model.safetensors").is_file()


def local_model_id(kind: str, folder: Path) -> str:
    """A fastembed registry name for a local folder (stable per path, never a hub name)."""
    digest = hashlib.sha1(str(folder).encode()).hexdigest()[:10]
    return f"coderag-local/{kind}-{folder.name}-{digest}"


def hf_cache_dir() -> Path:
    """Where coderag has the Hugging Face libraries keep hub models: its own folder."""
    from coderag_tui.locations import library_cache_dir

    return library_cache_dir("huggingface")


def fastembed_cache_dir() -> Path:
    """Where coderag has fastembed keep its models: its own folder, never fastembed's
    default (`$TMPDIR/fastembed_cache`, shared by every user of the machine, where another
    user's model would be loaded as if it were the one asked for)."""
    from coderag_tui.locations import library_cache_dir

    return library_cache_dir("fastembed")


def cache_folder(library: str) -> str:
    """coderag's cache folder for `library` ("fastembed" or "huggingface"), made private to
    the user, for a load to pass as the library's cache folder."""
    from coderag_tui.locations import library_cache_dir

    return str(library_cache_dir(library, make=True))


def hf_cached(repo_id: str, filename: str, cache_dir: Path | None = None) -> bool:
    """Is `filename` of hub repo `repo_id` in a Hugging Face-style cache (default: coderag's
    own), with no network?"""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with both backends
        return False
    folder = hf_cache_dir() if cache_dir is None else cache_dir
    try:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=str(folder))
    except Exception:  # malformed names raise validation errors, an unreadable cache: not cached
        return False
    return isinstance(found, str)


def might_be_cached(backend: str, name: str) -> bool:
    """Could `backend`'s cache (coderag's folder for it) hold the hub-named model? False only
    when it certainly does not: fastembed's cache folder is empty or absent, or the hub cache
    has no folder for the name. Looks at folders only, so the common case (no default model
    downloaded) costs neither fastembed's import (~1 s) nor huggingface_hub's."""
    try:
        if backend == FASTEMBED:
            with os.scandir(fastembed_cache_dir()) as entries:
                return any(True for _ in entries)
        return (hf_cache_dir() / f"models--{name.replace('/', '--')}").is_dir()
    except OSError:
        return False


def fastembed_description(models: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The entry for `name` in a fastembed `list_supported_models()` table (case-insensitive)."""
    for model in models:
        if str(model.get("model", "")).lower() == name.lower():
            return model
    return None


def fastembed_is_cached(description: dict[str, Any]) -> bool:
    """Are a fastembed model's weights in coderag's fastembed cache (so loading needs no
    network)?"""
    sources = description.get("sources") or {}
    repo = sources.get("hf")
    model_file = str(description.get("model_file") or "onnx/model.onnx")
    cache_dir = fastembed_cache_dir()
    if repo and hf_cached(repo, model_file, cache_dir=cache_dir):
        return True
    # Copies unpacked from fastembed's old tar archives live in a plain folder.
    short = str(description.get("model", "")).split("/")[-1]
    try:
        for folder in (cache_dir / short, cache_dir / f"fast-{short}"):
            if folder.is_dir() and any(folder.iterdir()):
                return True
    except OSError:
        return False
    return False


def describe_error(exc: BaseException) -> str:
    """The first line of an exception, short enough to end a sentence."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200].rstrip(".")


def quiet_progress_bars() -> None:
    """Model loading prints progress bars; a terminal UI cannot have them on its stderr."""
    try:
        from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]

        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - fastembed alone does not need transformers
        pass


M = TypeVar("M")
M_co = TypeVar("M_co", covariant=True)


class Loader(Protocol[M_co]):
    """How a kind loads one model with `backend`: the hub name `name`, or the model in
    `folder`; downloading only when `allow_download`."""

    def __call__(
        self, backend: str, name: str, *, allow_download: bool, folder: Path | None
    ) -> M_co: ...


@dataclass(frozen=True)
class ModelKind(Generic[M_co]):
    """How to find and load one kind of model (an embedder or a cross-encoder) with each backend.

    `load(backend, name, allow_download=…, folder=…)` loads a hub name (folder None) or a local
    folder; `fastembed_models()` is fastembed's table of supported models for this kind;
    `st_markers` are files whose presence in the Hugging Face cache means sentence-transformers
    can load the model offline; `defaults` are (backend, name) tried in order when no model is
    named.
    """

    noun: str
    load: Loader[M_co]
    fastembed_models: Callable[[], list[dict[str, Any]]]
    st_markers: tuple[str, ...]
    defaults: tuple[tuple[str, str], ...]

    def fastembed_entry(self, name: str) -> dict[str, Any] | None:
        if not installed("fastembed"):
            return None
        return fastembed_description(self.fastembed_models(), name)

    def backends_for(self, backend: str, name: str) -> list[str]:
        """The installed backends, among those `backend` allows, that can load `name`."""
        out: list[str] = []
        if backend in ("auto", FASTEMBED) and self.fastembed_entry(name) is not None:
            out.append(FASTEMBED)
        if backend in ("auto", SENTENCE_TRANSFORMERS) and installed("sentence_transformers"):
            out.append(SENTENCE_TRANSFORMERS)
        return out

    def cached(self, backend: str, name: str) -> bool:
        """Can `backend` load the hub-named model from disk, with no network?"""
        if backend == FASTEMBED:
            entry = self.fastembed_entry(name)
            return entry is not None and fastembed_is_cached(entry)
        return any(hf_cached(name, marker) for marker in self.st_markers)


def resolve_model(
    kind: ModelKind[M], backend: str, name: str, *, allow_download: bool, repo: Path | None = None
) -> tuple[M | None, str]:
    """A model of `kind` in that order, or None and a few words on what went wrong.

    With `name` (a folder or a hub name): that model, from its folder or a backend's cache,
    downloaded only when allowed. Without: the kind's defaults already in a cache, else the
    first one downloaded when allowed. An empty problem with no model means "none found".
    Every check before loading looks at files on disk; nothing here waits on a network.
    """
    if name:
        return _named(kind, backend, name, allow_download=allow_download, repo=repo)
    defaults: Sequence[tuple[str, str]] = [
        (use, default)
        for use, default in kind.defaults
        if (allow_download or might_be_cached(use, default))
        and use in kind.backends_for(backend, default)
    ]
    for use, default in defaults:
        try:
            if kind.cached(use, default):
                return _load(kind, use, default, allow_download=False, folder=None), ""
        except Exception:  # a broken cache entry: try the next source
            continue
    if allow_download and defaults:
        use, default = defaults[0]
        try:
            return kind.load(use, default, allow_download=True, folder=None), ""
        except Exception as exc:
            return None, f"downloading {default} failed ({describe_error(exc)})"
    return None, ""


def _load(
    kind: ModelKind[M], backend: str, name: str, *, allow_download: bool, folder: Path | None
) -> M:
    """`kind.load`, abandoned (ModelTimeout) when it takes longer than `LOAD_TIMEOUT_S`; a
    download is bounded by the library's own timeouts instead."""
    if allow_download:
        return kind.load(backend, name, allow_download=True, folder=folder)
    return bounded(
        lambda: kind.load(backend, name, allow_download=False, folder=folder), "loading it"
    )


def _named(
    kind: ModelKind[M], backend: str, name: str, *, allow_download: bool, repo: Path | None
) -> tuple[M | None, str]:
    folder = local_folder(name, repo)
    try:
        if folder is not None:
            unusable = vet_folder(folder)
            if unusable:
                return None, f"the {kind.noun} folder {name} cannot be used: {unusable}"
            use = backend_for_folder(folder) if backend == "auto" else backend
            return _load(kind, use, name, allow_download=False, folder=folder), ""
        if Path(name).expanduser().exists() and local_folder(name) is None:
            return None, f"the {kind.noun} path {name} is not a folder"
        candidates = kind.backends_for(backend, name)
        if not candidates:
            return None, f"no installed backend can load the {kind.noun} {name}"
        for use in candidates:
            if kind.cached(use, name) or allow_download:
                return _load(kind, use, name, allow_download=allow_download, folder=None), ""
        return None, f"the {kind.noun} {name} is not in the local cache and downloads are off"
    except Exception as exc:  # a library error while loading: report it, never crash the search
        return None, f"the {kind.noun} {name} could not be loaded ({describe_error(exc)})"
