"""Settings: one typed object with every default, read from TOML, CODERAG_* variables and flags.

Precedence, lowest first: the defaults below, the user config file
(`<user config dir>/coderag/config.toml`), a `.coderag.toml` in the repository,
`CODERAG_<FIELD>` environment variables, then command-line flags. No other module reads
the environment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

import platformdirs

from coderag_tui.core.records import ChunkingSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

APP_NAME = "coderag"


def user_config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def user_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP_NAME))


DENSE_STRIPES_AUTO = -1  # Settings.dense_stripes: pick by chunking (see `stripe_cap`)


@dataclass(frozen=True)
class Settings:
    """Every knob of coderag, with its default; the docstring of each field is in a comment."""

    # --- repository and index ---
    repo: Path = field(default_factory=Path.cwd)  # the repository to index and search
    index_dir: Path | None = None  # where the index lives; default: the user cache dir
    max_file_bytes: int = 1024 * 1024  # files larger than this are skipped
    max_line_chars: int = 1000  # a file whose longest line is longer counts as minified

    # --- chunking ---
    chunking: str = "lines"  # lines | ast | file
    chunk_lines: int = 64  # window size for `lines`, size limit for `ast`
    chunk_overlap: int = 0  # lines shared by neighbouring `lines` windows

    # --- BM25 ---
    # Both on: on the SWE-bench Lite dev split they raised BM25's MRR at every chunking
    # (README, "Retrieval quality"); --no-split-identifiers / --no-path-in-text turn them off.
    split_identifiers: bool = True  # also index getUserName as get, user, name
    path_in_text: bool = True  # index each chunk's file path with its text

    # --- dense ---
    embed_backend: str = "auto"  # auto | fastembed | sentence-transformers | none
    embed_model: str = ""  # model name or local path; empty: the backend's default
    allow_download: bool = False  # may a missing model be downloaded (in the background)?
    embed_batch_size: int = 8  # stripes per embedding batch (8 beat 16 and 32 on 2 cores)
    # Stripes (model windows) embedded per chunk: N >= 1 embeds each chunk's first N, 0 every
    # stripe (the chunk scores as its best), "auto" (-1) picks by measurement on the
    # 22-instance dev benchmark (see `stripe_cap`).
    dense_stripes: int = DENSE_STRIPES_AUTO

    # --- fusion and rerank ---
    rrf_k: int = 60  # Reciprocal Rank Fusion constant
    depth: int = 100  # how deep each list goes into fusion
    fusion: str = "rrf"  # rrf | weighted
    bm25_weight: float = 0.5  # weight of BM25 in weighted fusion (dense gets 1 - this)
    rerank: bool = False  # rerank the fused top candidates with a cross-encoder
    rerank_backend: str = "auto"  # auto | fastembed | sentence-transformers | none
    rerank_model: str = ""  # cross-encoder name or local path; empty: the default
    rerank_candidates: int = 20  # how many fused candidates the cross-encoder sees
    rerank_keep: int = 5  # how many reranked chunks are kept
    k: int = 20  # hits shown per ranking

    # --- prompt ---
    budget: int = 8000  # token budget of the whole prompt
    encoding: str = "o200k_base"  # tiktoken encoding used to count tokens
    template: str = "markdown"  # markdown | xml | path to a template file
    context_first: bool = True  # relevant context before the task (False: after)
    trim_last: bool = False  # cut the last chunk at a line boundary to fill the budget

    # --- TUI ---
    theme: str = "coderag-dark"  # a bundled theme or one from the user theme folder
    theme_dir: Path = field(default_factory=lambda: user_config_dir() / "themes")

    @property
    def chunking_spec(self) -> ChunkingSpec:
        overlap = self.chunk_overlap if self.chunking == "lines" else 0
        return ChunkingSpec(
            strategy=self.chunking,  # type: ignore[arg-type]
            lines=self.chunk_lines,
            overlap=overlap,
        )

    @property
    def repo_root(self) -> Path:
        return self.repo.resolve()

    @property
    def index_path(self) -> Path:
        """The SQLite file for this repository (one database per absolute repo path)."""
        base = self.index_dir if self.index_dir is not None else user_cache_dir() / "index"
        root = str(self.repo_root)
        digest = hashlib.sha1(root.encode()).hexdigest()[:12]
        return base / f"{self.repo_root.name or 'root'}-{digest}.sqlite"

    @property
    def embed_cache_path(self) -> Path:
        """The embedding cache shared by every repository."""
        base = self.index_dir if self.index_dir is not None else user_cache_dir() / "index"
        return base / "embeddings.sqlite"

    @property
    def stripe_cap(self) -> int:
        """Stripes embedded per chunk (0: all). "auto" embeds the first window of line windows
        and ast units and every window of whole files: dense MRR at lines:50 0.466 first vs
        0.437 every (RRF 0.631 vs 0.588; the best of many stripes favours long chunks), and
        for whole files 0.466 every vs 0.225 first (a file's head says little)."""
        if self.dense_stripes != DENSE_STRIPES_AUTO:
            return self.dense_stripes
        return 0 if self.chunking == "file" else 1

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _coerce(name: str, kind: Any, value: Any) -> Any:
    """Turn a TOML or environment value into the field's type, or say which field is wrong."""
    text = str(kind)
    try:
        if "Path" in text:
            return None if value in ("", None) else Path(str(value)).expanduser()
        if "bool" in text:
            if isinstance(value, bool):
                return value
            low = str(value).strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "int" in text:
            if name == "dense_stripes" and str(value).strip().lower() == "auto":
                return DENSE_STRIPES_AUTO
            return int(value)
        if "float" in text:
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"setting {name!r} cannot be {value!r}") from exc


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read the config file {path}: {exc}") from exc
    section = data.get("coderag", data)
    return dict(section) if isinstance(section, dict) else {}


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Build Settings from defaults, config files, CODERAG_* variables and flag overrides.

    Overrides whose value is None are ignored, so argparse namespaces can be passed as-is.
    """
    env = os.environ if environ is None else environ
    hints = get_type_hints(Settings)
    names = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None and k in names}

    repo = Path(overrides.get("repo") or env.get("CODERAG_REPO") or Path.cwd())
    sources = [
        _read_toml(config_file or (user_config_dir() / "config.toml")),
        _read_toml(repo / ".coderag.toml"),
    ]
    for source in sources:
        for key, value in source.items():
            key = key.replace("-", "_")
            if key in names:
                values[key] = _coerce(key, hints[key], value)
    for name in names:
        raw = env.get(f"CODERAG_{name.upper()}")
        if raw is not None:
            values[name] = _coerce(name, hints[name], raw)
    for key, value in overrides.items():
        values[key] = _coerce(key, hints[key], value) if isinstance(value, str) else value
    if "repo" in values and values["repo"] is None:
        del values["repo"]
    if values.get("dense_stripes", 0) < DENSE_STRIPES_AUTO:
        raise ValueError(
            f"dense_stripes cannot be {values['dense_stripes']}: use auto, 0 to embed every "
            "stripe of a chunk or N >= 1 to embed only its first N (--dense-stripes N)."
        )
    return Settings(**values)


def settings_fields() -> tuple[dataclasses.Field[Any], ...]:
    return fields(Settings)
