"""Settings: one typed schema with every default, read from TOML, CODERAG_* variables and flags.

Precedence, lowest first: the defaults below, the user config file
(`<user config dir>/coderag/config.toml`), a `.coderag.toml` in the repository,
`CODERAG_<FIELD>` environment variables, then command-line flags. No other module reads
the environment.

Every value is checked once, where it comes from: a wrong one raises `SettingsError` with one
sentence naming the key and its source (`/repo/.coderag.toml: rrf_k must be ≥ 1, got -60.`,
`--rrf-k: must be ≥ 1, got -60.`); an unknown key is a warning that names the closest known
one. A repository's own `.coderag.toml` is someone else's text: it may tune retrieval and
prompts, never point coderag at a path outside the repository or allow a download.

The schema is a frozen dataclass whose fields carry their docstring and limits
(`SCHEMA[name]`), not a pydantic model: pydantic made importing this module measurably
slower (benchmarks/README.md, "Settings without pydantic"), and the TUI
imports it at start-up; these checks cost microseconds per `Settings`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

from coderag_tui.core.capped import read_capped
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.placeholders import split_template, template_problem
from coderag_tui.core.records import ChunkingSpec, ChunkStrategy
from coderag_tui.locations import (
    temporary_runtime_dirs,
    user_cache_dir,
    user_config_dir,
    user_config_file,
    user_models_dir,
    user_runtime_dir,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENV_PREFIX = "CODERAG_"
_NOT_CI = ("", "0", "false", "no")  # values of the CI variable that do not mean a CI run
REPO_FILE = ".coderag.toml"


# The longest socket path, in bytes, that fits every kernel's sockaddr_un with its NUL
# (108 bytes on Linux, 104 on macOS), with the `.sock` a server adds (see `server_path`).
SOCKET_PATH_MAX = 103 - len(".sock")


DENSE_STRIPES_AUTO = -1  # Settings.dense_stripes: pick by chunking (see `stripe_cap`)
DENSE_WAIT_ALL = -1  # Settings.dense_wait: until the model has embedded every chunk

ModelBackend = Literal["auto", "fastembed", "sentence-transformers", "model2vec", "none"]
RerankBackend = Literal["auto", "learned", "fastembed", "sentence-transformers", "none"]
Fusion = Literal["rrf", "weighted"]
FirstPass = Literal["static", "off"]
# One setting with three values rather than two switches: "allow" and "redact" exclude each
# other, and a single key is one thing to refuse in a repository's .coderag.toml.
SecretMode = Literal["hold", "redact", "allow"]
# How ranked chunks become a prompt: the smallest span carrying each match, or whole chunks.
Packing = Literal["spans", "chunks"]
# Which list orders the prompt: the fused list, or the reranker's top and then the fused list.
PromptOrder = Literal["fused", "reranked"]
# Where the ranked index lives: this machine's SQLite and numpy files, or a Qdrant collection
# (a server shared by a team, or Qdrant's embedded mode in a folder).
Backend = Literal["local", "qdrant"]


class SettingsError(CoderagError, ValueError):
    """A setting cannot be used; the message is one sentence naming the key and its source."""


class SettingsWarning(UserWarning):
    """A setting was ignored (an unknown key); the message names the source and a close key."""


# Which stage reads a setting, so every group of settings (what an index remembers, what a
# resident server may answer with another value, which flags a command offers) is derived
# from the schema instead of listed by hand. In flow order: where the index lives, which
# files it reads, where it is served from, how they are cut, BM25's words, the dense model,
# fusion, the code signals, rerank and its model, how many hits show, the prompt, logging and
# the TUI's looks.
Stage = Literal[
    "location", "files", "backend", "chunking", "lexical", "dense", "fusion", "signals",
    "rerank", "rerank model", "results", "prompt", "diagnostics", "tui",
]  # fmt: skip
# Read when ranking or packing, never when indexing or loading a model: a request may set
# them apart from an open engine's (`core.resident`).
SEARCH_STAGES: frozenset[Stage] = frozenset(
    {"fusion", "signals", "rerank", "results", "prompt", "diagnostics", "tui"}
)

# What a repository's own .coderag.toml may do with a key (see `_from_repo_file`): set it,
# not at all, only to a usable template file inside the repository, or only lower than it
# would be otherwise (a resource limit: a repository may ask for less memory and time).
RepoFilePolicy = Literal["free", "refused", "inside", "lower"]


@dataclass(frozen=True, slots=True)
class _Meta:
    """The schema facts a type annotation cannot hold; stored in each field's metadata."""

    doc: str
    ge: int | None = None
    le: int | None = None
    auto: int | None = None  # a whole number that also takes `auto_word`, stored as this value
    auto_word: str = "auto"
    from_bool: tuple[int, int] | None = None  # (false, true) as a whole number: older files
    limits: str = ""  # the limits in words, when `ge`/`le` do not say it all
    names: tuple[str, ...] = ()  # values that are names, not paths (the template's)
    metavar: str | None = None
    shown_default: str | None = None
    repo_file: RepoFilePolicy = "free"
    why_refused: str = ""
    pattern: str = ""  # a regular expression the whole text must match ("" takes any text)
    stage: Stage | None = None  # which stage reads it (every field has one: a test checks)


def _about(doc: str, **facts: Any) -> dict[str, _Meta]:
    """A Settings field's metadata: its one-sentence docstring and limits (see `_Meta`)."""
    return {"coderag": _Meta(doc=doc, **facts)}


_PATH_REFUSED = "it names a path, and a repository may not point coderag outside itself"
_SECRETS_REFUSED = "a repository's own config may not decide that its secrets go into prompts"
_SERVER_REFUSED = (
    "it decides where the repository's code and your queries are sent, which is your choice"
)
_SHARED_REFUSED = "it names a collection on a server, shared state that only you may choose"
# A model is code-like: a graph a runtime runs, a tree a loop walks, files opened as weights.
_MODEL_REFUSED = "it chooses a model, which only you may do"


@dataclass(frozen=True)
class Settings:
    """Every knob of coderag with its default, type, limits and a docstring (`SCHEMA[name].doc`).

    Constructing or copying one (`with_`) checks every value, so a Settings is always usable.
    """

    # --- repository and index ---
    repo: Path = field(
        default_factory=Path.cwd,
        metadata=_about(
            "The repository to index and search.",
            metavar="PATH",
            shown_default="the current folder",
            repo_file="refused",
            why_refused=_PATH_REFUSED,
            stage="location",
        ),
    )
    index_dir: Path | None = field(
        default=None,
        metadata=_about(
            "Where the index lives, outside the repository unless you say otherwise.",
            metavar="DIR",
            shown_default="the user cache directory",
            repo_file="refused",
            why_refused=_PATH_REFUSED,
            stage="location",
        ),
    )
    max_file_bytes: int = field(
        default=1024 * 1024,
        metadata=_about(
            "Files larger than this many bytes are skipped.",
            ge=1,
            shown_default="1048576 = 1 MiB",
            repo_file="lower",
            stage="files",
        ),
    )
    max_line_chars: int = field(
        default=1000,
        metadata=_about(
            "A file whose longest line is longer than this counts as minified and is skipped.",
            ge=1,
            repo_file="lower",
            stage="files",
        ),
    )
    include_secret_files: bool = field(
        default=False,
        metadata=_about(
            "Index key and credentials files (id_rsa, *.pem, *.key, .env, .netrc …), which are "
            "otherwise skipped; secrets found in them are still held back from prompts.",
            repo_file="refused",
            why_refused=_SECRETS_REFUSED,
            stage="files",
        ),
    )

    # --- a shared index on a server (core/backends/qdrant.py) ---
    backend: Backend = field(
        default="local",
        metadata=_about(
            "Where searches rank: this machine's index (local) or a Qdrant collection that "
            "`coderag index --backend qdrant` pushes to (qdrant).",
            repo_file="refused",
            why_refused=_SERVER_REFUSED,
            stage="backend",
        ),
    )
    backend_url: str = field(
        default="",
        metadata=_about(
            "The Qdrant server (http://host:6333) or a folder for Qdrant's embedded mode.",
            metavar="URL|DIR",
            shown_default="empty",
            limits="an http:// or https:// URL, or a folder",
            pattern=r"(?:(?!.*://).*)|https?://[^\s]+",
            repo_file="refused",
            why_refused=_SERVER_REFUSED,
            stage="backend",
        ),
    )
    backend_collection: str = field(
        default="",
        metadata=_about(
            "The Qdrant collection; empty derives one from the repository's path and the chunking.",
            metavar="NAME",
            shown_default="empty",
            limits="letters, digits, '-', '_' or '.', at most 200",
            pattern=r"[A-Za-z0-9_.-]{0,200}",
            repo_file="refused",
            why_refused=_SHARED_REFUSED,
            stage="backend",
        ),
    )

    # --- chunking ---
    chunking: ChunkStrategy = field(
        default="lines",
        metadata=_about(
            "How files are cut into chunks: line windows, syntax units (ast) or whole files.",
            stage="chunking",
        ),
    )
    chunk_lines: int = field(
        default=64,
        metadata=_about(
            "Lines per window for lines chunking (a file's last few lines, up to an eighth of "
            "a window, join the window before), and the size limit of an ast chunk.",
            ge=1,
            stage="chunking",
        ),
    )
    chunk_overlap: int = field(
        default=0,
        metadata=_about(
            "Lines shared by neighbouring windows of lines chunking.",
            ge=0,
            limits="≥ 0 and below chunk_lines",
            stage="chunking",
        ),
    )

    # --- BM25 ---
    # Both on: on the SWE-bench Lite dev split they raised BM25's MRR at every chunking
    # (benchmarks/README.md, "Retrieval quality").
    split_identifiers: bool = field(
        default=True,
        metadata=_about(
            "BM25 also indexes identifiers split into words: getUserName as get, user, name.",
            stage="lexical",
        ),
    )
    path_in_text: bool = field(
        default=True,
        metadata=_about("BM25 also indexes each chunk's file path with its text.", stage="lexical"),
    )

    # --- dense ---
    embed_backend: ModelBackend = field(
        default="auto",
        metadata=_about(
            "Which library runs the embedding model; none turns dense search off.", stage="dense"
        ),
    )
    embed_model: str = field(
        default="",
        metadata=_about(
            "Embedding model: a name or a local folder; empty picks the backend's default.",
            metavar="NAME|DIR",
            shown_default="empty",
            repo_file="refused",
            why_refused=_MODEL_REFUSED,
            stage="dense",
        ),
    )
    allow_download: bool = field(
        default=False,
        metadata=_about(
            "Whether a missing model may be downloaded in the background; off stays offline.",
            repo_file="refused",
            why_refused="downloads are the user's choice",
            stage="dense",
        ),
    )
    embed_batch_size: int = field(
        default=8,
        metadata=_about(
            "Stripes per embedding batch; 8 beat 16 and 32 on 2 cores.",
            ge=1,
            repo_file="lower",
            stage="dense",
        ),
    )
    # Measured on the 22-instance dev benchmark, see `stripe_cap`.
    dense_stripes: int = field(
        default=DENSE_STRIPES_AUTO,
        metadata=_about(
            "Model windows embedded per chunk: the first N, 0 for every window (the chunk "
            "scores as its best), or auto to pick by chunking.",
            ge=0,
            auto=DENSE_STRIPES_AUTO,
            metavar="auto|N",
            shown_default="auto",
            stage="dense",
        ),
    )

    dense_first_pass: FirstPass = field(
        default="static",
        metadata=_about(
            "A dense list that covers every chunk in seconds while the model embeds: static "
            "(a token table distilled once from the shipped all-MiniLM-L6-v2) or off.",
            stage="dense",
        ),
    )
    dense_wait: int = field(
        default=0,
        metadata=_about(
            "Seconds search and prompt wait, with progress, for the model to embed the chunks "
            "before they answer from the static first pass (the model's work so far is kept); "
            "0 answers at once (the background process carries the model on), all waits "
            "until every chunk is embedded.",
            ge=0,
            auto=DENSE_WAIT_ALL,
            auto_word="all",
            from_bool=(0, DENSE_WAIT_ALL),
            metavar="SECONDS|all",
            stage="dense",
        ),
    )

    dense_background: bool = field(
        default=True,
        metadata=_about(
            "Whether search and prompt leave the model's embedding of the chunks it has not "
            "embedded yet to a background process at low priority (one per index, ending when "
            "done); off by default where the CI variable is set.",
            repo_file="refused",
            why_refused="it starts processes on your machine, which is your choice",
            stage="dense",
        ),
    )
    dense_background_limit: int = field(
        default=50_000,
        metadata=_about(
            "Chunks above which the background process makes the static first pass but does "
            "not start the model on its own (on 2 cores it embeds at most ~60 chunks a "
            "second, so hours); `coderag index --dense` still embeds every chunk; 0 sets no "
            "limit.",
            ge=0,
            repo_file="refused",
            why_refused="it starts hours of work on your machine, which is your choice",
            stage="dense",
        ),
    )

    # --- fusion and rerank ---
    rrf_k: int = field(
        default=60,
        metadata=_about(
            "The constant k of Reciprocal Rank Fusion, score = sum of 1 / (k + rank).",
            ge=1,
            stage="fusion",
        ),
    )
    depth: int = field(
        default=100,
        metadata=_about("How deep each ranking goes into fusion.", ge=1, stage="fusion"),
    )
    fusion: Fusion = field(
        default="rrf",
        metadata=_about(
            "How BM25 and dense are fused: reciprocal ranks (rrf) or weighted scores.",
            stage="fusion",
        ),
    )
    dense_short_lines: int = field(
        default=8,
        metadata=_about(
            "A chunk of fewer lines than this has its dense score scaled down by its share "
            "of them (half its score for one line, all of it at this many), so one-line and "
            "near-empty chunks cannot rank on a vector alone; 0 or 1 turns it off.",
            ge=0,
            le=200,
            stage="fusion",
        ),
    )
    dense_weight: float = field(
        default=1.0,
        metadata=_about(
            "Weight of the dense list's reciprocal ranks in RRF fusion; BM25's count 1.",
            ge=0,
            le=4,
            metavar="W",
            stage="fusion",
        ),
    )
    issue_dense_weight: float = field(
        default=0.0,
        metadata=_about(
            "Weight of the dense list's reciprocal ranks in RRF fusion when the query is issue "
            "text (more than 30 words); 0 leaves dense out of the fused list for it, in either "
            "fusion, and BM25 and the code signals rank it (the dense column still shows its "
            "own list).",
            ge=0,
            le=4,
            metavar="W",
            stage="fusion",
        ),
    )
    bm25_weight: float = field(
        default=0.5,
        metadata=_about(
            "Weight of BM25 in weighted fusion; dense gets 1 minus this.",
            ge=0,
            le=1,
            metavar="W",
            stage="fusion",
        ),
    )

    # --- code signals (core/rank/signals.py): weights on the scale where the best fused
    # candidate scores 1, chosen on the two dev sets with dense off (benchmarks/
    # run_dev_benchmark.sh signals: each one helps where it applies and hurts neither) ---
    signals: bool = field(
        default=True,
        metadata=_about(
            "Re-score the fused list with code-aware signals (BM25 and dense stay raw).",
            stage="signals",
        ),
    )
    signal_definitions: float = field(
        default=1.0,
        metadata=_about(
            "Weight of a chunk defining a name the query writes as code (APIRouter, "
            "parse_config, a.b.c); 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_forms: float = field(
        default=0.5,
        metadata=_about(
            "Weight of a chunk defining a name made of the query's words (parse config -> "
            "parseConfig, parse_config, ConfigParser); 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_path: float = field(
        default=1.0,
        metadata=_about(
            "Weight of the share of query words found in a file's name or its folder's "
            "name; 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_coherence: float = field(
        default=0.2,
        metadata=_about(
            "Weight by which a file with several matching chunks lifts its best chunk; 0 "
            "turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_roles: float = field(
        default=0.5,
        metadata=_about(
            "Score multiplier for tests, examples, docs, changelogs, benchmarks, vendored, "
            "generated, migration and legacy code unless the query asks for them, once per "
            "role a file plays; 1 turns it off.",
            ge=0,
            le=1,
            metavar="X",
            stage="signals",
        ),
    )
    signal_same_file: float = field(
        default=0.8,
        metadata=_about(
            "Score multiplier for each chunk of a file below that file's best in the fused "
            "list (the second once, the third twice, ...), so the top covers more files; 1 "
            "turns it off.",
            ge=0,
            le=1,
            metavar="X",
            stage="signals",
        ),
    )
    signal_issue_terms: float = field(
        default=0.5,
        metadata=_about(
            "Weight of the code terms of a long query (identifiers, paths, stack frames of any "
            "language, exception names) searched apart from its prose; 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_messages: float = field(
        default=1.0,
        metadata=_about(
            "Weight of a chunk holding a message the query quotes (an error's text) as a "
            "string literal; 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_flags: float = field(
        default=1.0,
        metadata=_about(
            "Weight of a chunk naming a command-line flag or config key the query writes "
            "(--max-depth, maxmemory-policy) as a string literal; 0 turns it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    signal_packages: float = field(
        default=0.5,
        metadata=_about(
            "Weight of a file a module path in the query names (com.acme.core.Json, "
            "krate::module, an import path), half for a file in the folder it names; 0 turns "
            "it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )
    definitions_background: bool = field(
        default=True,
        metadata=_about(
            "Whether a repository's first index is searchable once BM25 is ready, while the "
            "definitions the code signals read are still being parsed (a process finishes them "
            "in the background; searches until then rank without them and say so); off, the "
            "first index, and a run that finds them still being parsed, waits for them.",
            stage="signals",
        ),
    )
    signal_title: float = field(
        default=2.0,
        metadata=_about(
            "How many times a name written as code in an issue's title counts for the "
            "definitions signal, against one only in its body (the title names the subject; "
            "the body's example code names its set-up); 1 turns it off.",
            ge=1,
            metavar="X",
            stage="signals",
        ),
    )
    signal_tests: float = field(
        default=0.5,
        metadata=_about(
            "Weight of the source file beside a test file the query names (foo.test.ts -> "
            "foo.ts), and of the definition a test's name points at (TestFoo -> Foo); 0 turns "
            "it off.",
            ge=0,
            metavar="W",
            stage="signals",
        ),
    )

    rerank: bool = field(
        default=False,
        metadata=_about(
            "Rerank the fused top candidates (the Reranked column): with the learned model or "
            "a cross-encoder, as rerank_backend says.",
            stage="rerank",
        ),
    )
    rerank_backend: RerankBackend = field(
        default="auto",
        metadata=_about(
            "What reranks: learned (the shipped learning-to-rank model, or this repository's "
            "own from `coderag tune` where it won), a cross-encoder library (fastembed, "
            "sentence-transformers), auto (a cross-encoder found on this machine, else "
            "learned) or none.",
            stage="rerank model",
        ),
    )
    rerank_model: str = field(
        default="",
        metadata=_about(
            "Cross-encoder: a name or a local folder; with rerank_backend = learned, a model "
            "file written by `coderag tune`; empty picks the default.",
            metavar="NAME|DIR",
            shown_default="empty",
            repo_file="refused",
            why_refused=_MODEL_REFUSED,
            stage="rerank model",
        ),
    )
    rerank_candidates: int = field(
        default=20,
        metadata=_about("How many fused candidates the cross-encoder sees.", ge=1, stage="rerank"),
    )
    learned_candidates: int = field(
        default=100,
        metadata=_about(
            "How many fused candidates the learned reranker reorders.", ge=1, stage="rerank"
        ),
    )
    rerank_keep: int = field(
        default=5,
        metadata=_about(
            "How many chunks a cross-encoder's reranked list keeps (the learned one keeps "
            "every candidate).",
            ge=1,
            stage="rerank",
        ),
    )
    k: int = field(default=20, metadata=_about("Hits shown per ranking.", ge=1, stage="results"))
    query_lines: int = field(
        default=20,
        metadata=_about(
            "Lines before FILE:LINE that make a code-to-code query (--from, the TUI's code mode, "
            "MCP's related).",
            ge=1,
            stage="results",
        ),
    )

    # --- prompt ---
    budget: int = field(
        default=8000,
        metadata=_about(
            "Token budget of the whole prompt.", ge=1, metavar="TOKENS", stage="prompt"
        ),
    )
    encoding: str = field(
        default="cl100k_base",
        metadata=_about(
            "The tiktoken encoding that counts tokens (cl100k_base ships with the offline "
            "extra; o200k_base needs its table cached once, with downloads allowed).",
            metavar="NAME",
            stage="prompt",
        ),
    )
    template: str = field(
        default="markdown",
        metadata=_about(
            "Prompt layout: markdown, xml or the path of a template file.",
            names=("markdown", "md", "xml"),
            metavar="markdown|xml|FILE",
            repo_file="inside",
            stage="prompt",
        ),
    )
    context_first: bool = field(
        default=True,
        metadata=_about(
            "Put the code context before the task (models attend best to the start).",
            stage="prompt",
        ),
    )
    trim_last: bool = field(
        default=False,
        metadata=_about(
            "With packing = chunks, cut the last chunk at a line boundary to fill the budget.",
            stage="prompt",
        ),
    )
    packing: Packing = field(
        default="spans",
        metadata=_about(
            "How ranked chunks become the prompt: spans packs the smallest span carrying each "
            "match (its definition, or the matched lines under their signatures), more files "
            "before more of one file, and stops where relevance ends; chunks packs whole "
            "chunks until the budget is full.",
            stage="prompt",
        ),
    )
    pack_floor_rank: int = field(
        default=50,
        metadata=_about(
            "With packing = spans: a chunk is packed only if some list (BM25, dense, fused or "
            "reranked) ranks it this high or higher; pinned chunks always are.",
            ge=1,
            stage="prompt",
        ),
    )
    pack_floor_share: float = field(
        default=0.1,
        metadata=_about(
            "With packing = spans: a chunk is packed only if its score is at least this share "
            "of the best score in the list the prompt is packed from.",
            ge=0,
            le=1,
            metavar="X",
            stage="prompt",
        ),
    )
    prompt_order: PromptOrder = field(
        default="fused",
        metadata=_about(
            "Which list orders the prompt when rerank is on: the fused list, or the reranked "
            "top and then the fused list (no reranker has yet beaten the fused list on both "
            "development sets).",
            stage="prompt",
        ),
    )
    secrets: SecretMode = field(
        default="hold",
        metadata=_about(
            "Chunks with suspected secrets (keys, tokens, passwords): hold them back from the "
            "prompt, redact each secret as <redacted:TYPE>, or allow them as they are.",
            repo_file="refused",
            why_refused=_SECRETS_REFUSED,
            stage="prompt",
        ),
    )

    # --- diagnostics ---
    log_file: Path | None = field(
        default=None,
        metadata=_about(
            "A file coderag appends its debug log to: every fallback it takes (a model it could "
            "not load, a grammar it lacks) with the reason; empty logs nothing.",
            metavar="FILE",
            shown_default="none",
            repo_file="refused",
            why_refused=_PATH_REFUSED,
            stage="diagnostics",
        ),
    )

    # --- TUI ---
    theme: str = field(
        default="coderag-dark",
        metadata=_about(
            "A bundled theme (coderag-dark, coderag-light, coderag-high-contrast) "
            "or one from the theme folder.",
            metavar="NAME",
            stage="tui",
        ),
    )
    theme_dir: Path = field(
        default_factory=lambda: user_config_dir() / "themes",
        metadata=_about(
            "Folder of your own YAML themes (the same schema as the bundled ones).",
            metavar="DIR",
            shown_default="themes in the user config folder",
            repo_file="refused",
            why_refused=_PATH_REFUSED,
            stage="tui",
        ),
    )

    def __post_init__(self) -> None:
        for info in _SCHEMA_ORDER:
            value = getattr(self, info.name)
            try:
                fixed = info.check(value)
            except _Invalid as exc:
                raise SettingsError(f"{info.name} {exc.reason}.") from None
            if fixed is not value:
                object.__setattr__(self, info.name, fixed)
        problem = _overlap_problem(self.chunking, self.chunk_lines, self.chunk_overlap)
        if problem:
            raise SettingsError(f"chunk_overlap {problem}.")

    @property
    def chunking_spec(self) -> ChunkingSpec:
        overlap = self.chunk_overlap if self.chunking == "lines" else 0
        return ChunkingSpec(strategy=self.chunking, lines=self.chunk_lines, overlap=overlap)

    @property
    def repo_root(self) -> Path:
        return self.repo.resolve()

    @property
    def index_path(self) -> Path:
        """The SQLite file for this repository (one database per absolute repo path)."""
        base = self.index_dir if self.index_dir is not None else user_cache_dir() / "index"
        root = str(self.repo_root)
        digest = hashlib.sha1(root.encode()).hexdigest()[:12]
        # The folder's name only makes the file easy to tell apart: plain characters, short
        # (a 250-character name must not make the file name too long for the file system).
        stem = re.sub(r"[^\w.-]", "_", self.repo_root.name, flags=re.ASCII)[:48].lstrip(".")
        return base / f"{stem or 'root'}-{digest}.sqlite"

    @property
    def server_path(self) -> Path:
        """The resident server of this index: its socket is this path with `.sock` added,
        its watch's cookie folder with `.sync` (one server per index file and runtime folder).

        In the runtime folder when the socket's path fits a socket address
        (`SOCKET_PATH_MAX`); else in a short temporary one, named by a hash of the runtime
        folder too, so a session with another runtime folder still has its own servers."""
        index = str(self.index_path)
        runtime = user_runtime_dir()
        path = runtime / hashlib.sha1(index.encode()).hexdigest()[:16]
        if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
            return path
        digest = hashlib.sha1(os.fsencode(runtime) + b"\0" + os.fsencode(index)).hexdigest()[:16]
        for folder in temporary_runtime_dirs():
            path = folder / digest
            if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
                break
        return path

    @property
    def tuned_model_path(self) -> Path:
        """This repository's learned ranking model from `coderag tune`, beside its index
        (with a `.json` of the same name saying whether it beat the shipped model)."""
        return self.index_path.with_suffix(".ranker.txt")

    @property
    def embed_cache_path(self) -> Path:
        """The embedding cache shared by every repository."""
        base = self.index_dir if self.index_dir is not None else user_cache_dir() / "index"
        return base / "embeddings.sqlite"

    @property
    def models_path(self) -> Path:
        """Models coderag derives from installed packages (an ONNX export, the static table):
        one folder per machine, whatever the index folder, since they depend on no repository."""
        return user_models_dir()

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
        """A copy with `changes`, checked like any new Settings (SettingsError if one is wrong)."""
        for name in changes:
            if name not in SCHEMA:
                raise SettingsError(f"unknown setting {name!r}{_did_you_mean(name)}.")
        return replace(self, **changes)


# ----------------------------------------------------------------------------- the schema


class _Invalid(Exception):
    """A value that does not fit its setting; `reason` reads after the name ("must be ≥ 1 …")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _shown(value: Any) -> str:
    """A value as an error message quotes it: repr (control characters escaped), kept short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


@dataclass(frozen=True, slots=True)
class SettingInfo:
    """What the schema says about one setting: type, choices, limits, default and docstring."""

    name: str
    kind: type  # bool, int, float, str or Path
    choices: tuple[str, ...]  # the values of a Literal; empty for free values
    optional: bool  # None is allowed (and means "not set")
    default: Any  # the default value, or MISSING when a factory makes it
    meta: _Meta

    @property
    def doc(self) -> str:
        return self.meta.doc

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def limits(self) -> str:
        """The limits in words ("≥ 1", "between 0 and 1", "auto or ≥ 0"); empty if none."""
        meta = self.meta
        if meta.limits:
            return meta.limits
        if meta.ge is not None and meta.le is not None:
            return f"between {meta.ge} and {meta.le}"
        if meta.ge is not None:
            return f"{meta.auto_word} or ≥ {meta.ge}" if meta.auto is not None else f"≥ {meta.ge}"
        return ""

    @property
    def shown_default(self) -> str:
        """The default in words, as help texts show it."""
        if self.meta.shown_default is not None:
            return self.meta.shown_default
        if self.kind is bool:
            return "on" if self.default else "off"
        return str(self.default)

    def check(self, value: Any) -> Any:
        """The value in the setting's type (text is parsed), or _Invalid saying why not."""
        if self.choices:
            text = value.strip() if isinstance(value, str) else value
            if text in self.choices:
                return text
            raise _Invalid(f"must be one of {', '.join(self.choices)}, got {_shown(value)}")
        kind = self.kind
        if kind is bool:
            return self._boolean(value)
        if kind is int:
            return self._whole(value)
        if kind is float:
            return self._number(value)
        if kind is str:
            if not isinstance(value, str):
                raise _Invalid(f"must be text, got {_shown(value)}")
            if self.meta.pattern and not re.fullmatch(self.meta.pattern, value.strip()):
                raise _Invalid(f"must be {self.limits}, got {_shown(value)}")
            return value.strip() if self.meta.pattern else value
        return self._path(value)

    def _boolean(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            low = value.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
        raise _Invalid(f"must be true or false, got {_shown(value)}")

    def _whole(self, value: Any) -> int:
        auto, word = self.meta.auto, self.meta.auto_word
        if isinstance(value, bool) and self.meta.from_bool is not None:
            return self.meta.from_bool[value]
        if isinstance(value, str):
            if auto is not None and value.strip().lower() == word:
                return auto
            low = value.strip().lower()
            if self.meta.from_bool is not None and low.isalpha() and low in _TRUE | _FALSE:
                return self.meta.from_bool[low in _TRUE]  # "true", not "1": that is a number
            with contextlib.suppress(ValueError):
                value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int):
            what = f"{word} or a whole number" if auto is not None else "a whole number"
            raise _Invalid(f"must be {what}, got {_shown(value)}")
        if value != auto:
            self._within(value)
        return value

    def _number(self, value: Any) -> float:
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = float(value.strip())
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"must be a number, got {_shown(value)}")
        number = float(value)
        self._within(number)
        return number

    def _within(self, value: float) -> None:
        ge, le = self.meta.ge, self.meta.le
        # Written so that NaN is out of every range.
        if not ((ge is None or value >= ge) and (le is None or value <= le)):
            raise _Invalid(f"must be {self.limits}, got {_shown(value)}")

    def _path(self, value: Any) -> Path | None:
        if isinstance(value, Path):
            return value
        if value is None and self.optional:
            return None
        if isinstance(value, str):
            if value.strip():
                return Path(value).expanduser()
            if self.optional:
                return None
        elif isinstance(value, os.PathLike):
            return Path(value)
        raise _Invalid(f"must be a path, got {_shown(value)}")


def _build_schema() -> dict[str, SettingInfo]:
    hints = get_type_hints(Settings)
    schema: dict[str, SettingInfo] = {}
    for f in fields(Settings):
        kind: Any = hints[f.name]
        optional = False
        if get_origin(kind) in (Union, types.UnionType):
            parts = [a for a in get_args(kind) if a is not type(None)]
            optional = len(parts) < len(get_args(kind))
            (kind,) = parts
        choices: tuple[str, ...] = ()
        if get_origin(kind) is Literal:
            choices = tuple(get_args(kind))
            kind = str
        schema[f.name] = SettingInfo(
            name=f.name,
            kind=kind,
            choices=choices,
            optional=optional,
            default=f.default,
            meta=f.metadata["coderag"],
        )
    return schema


SCHEMA: Mapping[str, SettingInfo] = _build_schema()
"""Every setting by name, in declaration order: its type, limits, default and docstring."""
_SCHEMA_ORDER = tuple(SCHEMA.values())


def settings_of(*stages: Stage) -> tuple[str, ...]:
    """The settings the given stages read, in the schema's order."""
    return tuple(name for name, info in SCHEMA.items() if info.meta.stage in stages)


def _overlap_problem(
    chunking: str, chunk_lines: int, chunk_overlap: int, lines_named: str = "chunk_lines"
) -> str:
    """Why chunk_overlap does not fit chunk_lines (it only matters for line windows), or ''."""
    if chunking == "lines" and chunk_overlap >= chunk_lines:
        return (
            f"must be below {lines_named} ({chunk_lines}) for lines chunking, got {chunk_overlap}"
        )
    return ""


def _did_you_mean(key: str, spell: Callable[[str], str] = repr) -> str:
    """' (did you mean 'chunk_overlap'?)' for the known setting closest to `key`, or ''."""
    import difflib  # only when a key is unknown: it is not needed to start

    names = list(SCHEMA)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if not close:
        close = [name for name in names if len(key) >= 3 and key in name][:1]
    return f" (did you mean {spell(close[0])}?)" if close else ""


# ----------------------------------------------------------------------------- loading


class LoadedSettings(NamedTuple):
    """Settings read from every source, the warnings a face should show (unknown keys), and
    the settings some source gave (a file, a variable or a flag; the rest are defaults)."""

    settings: Settings
    warnings: tuple[str, ...]
    explicit: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Source:
    """Where values come from, as messages name it: a file, an environment variable, a flag."""

    label: str
    is_flag: bool = False

    def error(self, name: str, reason: str) -> SettingsError:
        if self.is_flag:  # the flag names the setting already
            return SettingsError(f"{self.label}: {reason}.")
        return SettingsError(f"{self.label}: {name} {reason}.")


# A config file larger than this is not read: settings take a few hundred bytes, and a
# repository's file is someone else's (a sparse 3 GB file must not cost minutes).
MAX_TEMPLATE_BYTES = 256 * 1024  # a template file's bound (`core.prompt.render` reads it)
MAX_CONFIG_BYTES = 256 * 1024
# Unknown keys of one file named one by one; the rest are counted in one line.
UNKNOWN_NAMED = 5


class _FileProblem(Exception):
    """A config file that cannot be used as a whole; the message says why in a few words."""


def _read_toml(path: Path, *, inside: Path | None = None) -> dict[str, Any]:
    """The settings table of a TOML file ({} when there is none), or _FileProblem. With
    `inside`, a file that is a link leading out of that folder is not read (a repository's
    file is its own text)."""
    try:
        if not path.is_file():
            return {}
        if inside is not None and path.is_symlink() and not _inside(path.resolve(), inside):
            raise _FileProblem("a link out of the repository, so it was not read")
        raw = read_capped(path, MAX_CONFIG_BYTES)
        if raw is None:
            raise _FileProblem(f"larger than {MAX_CONFIG_BYTES // 1024} KiB, so it was not read")
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise _FileProblem(f"not valid TOML ({why})") from exc
    except OSError as exc:  # a folder on the way that this user may not enter, or the file
        raise _FileProblem(f"cannot be read ({exc.strerror})") from exc
    section = data.get("coderag", data)
    return dict(section) if isinstance(section, dict) else {}


def _file_items(
    path: Path, source: _Source, notes: list[str], *, inside: Path | None = None
) -> Iterator[tuple[str, Any]]:
    """The known settings of a TOML file (dashes read as underscores); unknown keys noted,
    the first few by name and the rest counted."""
    unknown = 0
    for key, value in _read_toml(path, inside=inside).items():
        name = key.replace("-", "_")
        if name in SCHEMA:
            yield name, value
            continue
        unknown += 1
        if unknown <= UNKNOWN_NAMED:
            notes.append(
                f"{source.label}: unknown setting {_shown(key)}{_did_you_mean(name)}; ignored."
            )
    if unknown > UNKNOWN_NAMED:
        more = unknown - UNKNOWN_NAMED
        notes.append(f"{source.label}: {more:,} more unknown settings; ignored.")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class _Ignored(Exception):
    """A repository's own .coderag.toml set a key it may not set (said in one warning)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _from_repo_file(info: SettingInfo, value: Any, repo: Path, current: Any) -> Any:
    """A value from the repository's own .coderag.toml, or _Ignored when it may not set it.

    Paths a repository names are read inside it: a relative one is taken from the repository
    root (not the current folder), and one that leads outside it is ignored. A resource
    limit may be lowered below `current` (what applies without the repository's file), never
    raised.
    """
    policy = info.meta.repo_file
    if policy == "refused":
        raise _Ignored(info.meta.why_refused)
    if policy == "lower":
        if isinstance(value, int) and not isinstance(value, bool) and value > current:
            raise _Ignored(f"it may lower this limit ({_shown(current)}) but not raise it")
        return value
    if policy == "free" or not isinstance(value, str) or not value.strip():
        return value
    if value.strip().lower() in info.meta.names:
        return value
    root = repo.resolve()
    raw = Path(value).expanduser()
    resolved = (raw if raw.is_absolute() else root / raw).resolve()
    if not _inside(resolved, root):
        raise _Ignored("it names a path outside the repository")
    _check_repo_template(resolved)  # someone else's file that cannot be used is ignored
    return str(resolved)


def _check_repo_template(path: Path) -> None:
    """_Ignored when the repository's template file cannot be used (a FIFO or a folder, larger
    than a template may be, not UTF-8, its placeholders missing or repeated): someone else's
    file never stops a prompt. (Read with the template's own bound, parsed as
    `core.prompt.render` parses it.)"""

    def unusable(why: str) -> _Ignored:
        return _Ignored(f"its template cannot be used: {why}")

    if not path.is_file():  # a FIFO is never opened
        raise unusable("it is not a readable file")
    try:
        data = read_capped(path, MAX_TEMPLATE_BYTES)
    except OSError as exc:
        raise unusable(f"it cannot be read ({exc.strerror})") from None
    if data is None:
        raise unusable(f"it is larger than {MAX_TEMPLATE_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise unusable("it is not UTF-8 text") from None
    problem = template_problem(*split_template(text))
    if problem:  # missing or repeated placeholders
        raise unusable(f"it {problem.split(':', 1)[0]}")


def _ignored_note(label: str, ignored: Mapping[str, str], user_file: Path) -> str:
    """One warning for every key of a repository's own file that was not used, and why."""
    keys = ", ".join(f"{name} ({why})" for name, why in ignored.items())
    return (
        f"{label}: ignored {keys}; coderag runs without {'them' if len(ignored) > 1 else 'it'} "
        f"(your own settings go in {user_file}, the environment or flags)."
    )


def read_settings(  # noqa: C901
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, str] | None = None,
) -> LoadedSettings:
    """Settings from defaults, config files, CODERAG_* variables and flag overrides, checked.

    Overrides whose value is None are ignored and so are keys that are not settings, so
    argparse namespaces can be passed as-is; `flags` names the flag each override came from
    (default: `--<name>`). A wrong value raises SettingsError naming the key and its source;
    unknown keys in a file and unknown CODERAG_* variables become warnings.
    """
    env = os.environ if environ is None else environ
    given = {k: v for k, v in (overrides or {}).items() if v is not None and k in SCHEMA}
    user_file = config_file or user_config_file()
    values: dict[str, Any] = {}
    origin: dict[str, _Source] = {}
    notes: list[str] = []

    def put(name: str, value: Any, source: _Source) -> None:
        try:
            values[name] = SCHEMA[name].check(value)
        except _Invalid as exc:
            raise source.error(name, exc.reason) from None
        origin[name] = source

    user_source = _Source(str(user_file))
    try:
        user_items = list(_file_items(user_file, user_source, notes))
    except _FileProblem as exc:
        raise SettingsError(f"{user_file}: {exc}; fix or remove it.") from None
    for name, value in user_items:
        put(name, value, user_source)

    env_source = {name: _Source(info.env_var) for name, info in SCHEMA.items()}
    if "repo" in given:
        put("repo", given["repo"], _Source((flags or {}).get("repo", "--repo"), is_flag=True))
    elif SCHEMA["repo"].env_var in env:
        put("repo", env[SCHEMA["repo"].env_var], env_source["repo"])
    repo = values.get("repo") or Path.cwd()

    repo_file = repo / REPO_FILE
    repo_source = _Source(str(repo_file))
    # Someone else's file never stops coderag: what it may not set, or sets wrongly, is
    # ignored with one warning (the user cannot fix a file that is not theirs).
    ignored: dict[str, str] = {}
    try:
        repo_items = list(_file_items(repo_file, repo_source, notes, inside=repo.resolve()))
    except _FileProblem as exc:
        notes.append(f"{repo_file}: {exc}; its settings were ignored.")
        repo_items = []
    before, origin_before = dict(values), dict(origin)
    for name, value in repo_items:
        info = SCHEMA[name]
        try:
            current = values.get(name, info.default)
            checked = info.check(value) if info.meta.repo_file == "lower" else value
            kept = _from_repo_file(info, checked, repo, current)
            values[name], origin[name] = info.check(kept), repo_source
        except _Ignored as exc:
            ignored[name] = exc.why
        except _Invalid as exc:
            ignored[name] = exc.reason
    if _overlap_problem(
        values.get("chunking", SCHEMA["chunking"].default),
        values.get("chunk_lines", SCHEMA["chunk_lines"].default),
        values.get("chunk_overlap", SCHEMA["chunk_overlap"].default),
    ):
        for name in ("chunk_overlap", "chunk_lines", "chunking"):
            if origin.get(name) == repo_source:
                ignored[name] = "chunk_overlap must be below chunk_lines"
                if name in before:
                    values[name], origin[name] = before[name], origin_before[name]
                else:
                    values.pop(name, None)
                    origin.pop(name, None)
    if ignored:
        notes.append(_ignored_note(repo_source.label, ignored, user_file))

    for var in sorted(k for k in env if k.startswith(ENV_PREFIX)):
        name = var[len(ENV_PREFIX) :].lower()
        if name in SCHEMA:
            put(name, env[var], env_source[name])
        else:
            hint = _did_you_mean(name, lambda known: ENV_PREFIX + known.upper())
            notes.append(f"{var}: unknown setting{hint}; ignored.")

    for name, value in given.items():
        label = (flags or {}).get(name) or SCHEMA[name].flag
        put(name, value, _Source(label, is_flag=True))
    if "dense_background" not in origin and env.get("CI", "").strip().lower() not in _NOT_CI:
        # A CI run starts no process that outlives its command unless it asks for one.
        values["dense_background"] = False

    # The one check across settings, said by chunk_overlap's source; chunk_lines is named as
    # its own source spells it (`--chunk-lines`) when that is another one.
    overlap_from = origin.get("chunk_overlap", _Source("the default"))
    lines_from = origin.get("chunk_lines", overlap_from)
    lines_named = "chunk_lines"
    if lines_from.is_flag:
        lines_named = lines_from.label
    elif lines_from != overlap_from:
        lines_named = f"chunk_lines (from {lines_from.label})"
    problem = _overlap_problem(
        values.get("chunking", SCHEMA["chunking"].default),
        values.get("chunk_lines", SCHEMA["chunk_lines"].default),
        values.get("chunk_overlap", SCHEMA["chunk_overlap"].default),
        lines_named,
    )
    if problem:
        raise overlap_from.error("chunk_overlap", problem)
    return LoadedSettings(Settings(**values), tuple(notes), frozenset(origin))


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """`read_settings` for callers with no face of their own: warnings go to `warnings.warn`."""
    loaded = read_settings(overrides, environ=environ, config_file=config_file)
    for message in loaded.warnings:
        warnings.warn(message, SettingsWarning, stacklevel=2)
    return loaded.settings
