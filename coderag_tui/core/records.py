"""Values that flow between the stages: files, chunks, rankings, timings, prompts.

Every stage returns one of these frozen values, so the TUI, the CLI and the evaluator
can show or compare any intermediate result without re-running a stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

ChunkStrategy = Literal["lines", "ast", "file"]
CHUNK_STRATEGIES: dict[str, ChunkStrategy] = {"lines": "lines", "ast": "ast", "file": "file"}
RankingName = Literal["bm25", "dense", "fused", "rerank"]
RANKING_NAMES: tuple[RankingName, ...] = ("bm25", "dense", "fused", "rerank")


class SkipReason(str, Enum):
    """Why a file was left out of the index; the value is what the user reads."""

    # What was found goes in the detail (a NUL byte, a file type, a long line, a name).
    BINARY = "binary"
    TOO_LARGE = "larger than the size limit"
    MINIFIED = "minified or generated"
    LOCKFILE = "lock file"
    VENDORED = "vendored folder"
    UNREADABLE = "unreadable"
    NOT_A_FILE = "not a regular file"
    SYMLINK_OUTSIDE = "symlink pointing outside the repository"
    SYMLINK_LOOP = "symlink loop"
    SECRET_FILE = "a key or credentials file"


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A file chosen for indexing; `path` is repository-relative with forward slashes.

    `device` and `inode` identify the file the walk vetted (a link's target), so reading it
    later can refuse anything swapped in meanwhile; 0 means unknown (not checked).
    """

    path: str
    size: int
    mtime_ns: int
    language: str | None
    device: int = 0
    inode: int = 0


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file left out, with the reason and an optional detail (e.g. the OS error)."""

    path: str
    reason: SkipReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A suspected secret in a file: from `line`:`col` to `end_line`:`end_col` (lines 1-based,
    columns 0-based character offsets, the end excluded) and its kind (`AWS Access Key`)."""

    line: int
    col: int
    end_line: int
    end_col: int
    kind: str


@dataclass(frozen=True, slots=True)
class ChunkingSpec:
    """How files are cut into chunks; `key` names the setting in the store."""

    strategy: ChunkStrategy = "lines"
    lines: int = 64
    overlap: int = 0

    @property
    def key(self) -> str:
        if self.strategy == "file":
            return "file"
        if self.strategy == "ast":
            return f"ast:{self.lines}"
        return f"lines:{self.lines}:{self.overlap}"

    @classmethod
    def parse(cls, text: str) -> ChunkingSpec:
        """Parse `lines`, `lines:64`, `lines:64:8`, `ast`, `ast:80` or `file`."""
        parts = text.strip().split(":")
        strategy = CHUNK_STRATEGIES.get(parts[0])
        if strategy is None:
            raise ValueError(f"unknown chunking {text!r}: use lines[:N[:OVERLAP]], ast[:N] or file")
        lines = int(parts[1]) if len(parts) > 1 else 64
        overlap = int(parts[2]) if len(parts) > 2 else 0
        if lines < 1 or overlap < 0 or overlap >= lines:
            raise ValueError(f"bad chunking {text!r}: need N >= 1 and 0 <= OVERLAP < N")
        return cls(strategy=strategy, lines=lines, overlap=overlap)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of one file: 1-based inclusive line range, kind (`lines`, `function`, …)."""

    path: str
    start_line: int
    end_line: int
    kind: str
    language: str | None
    text: str

    @property
    def key(self) -> str:
        """Identity of the chunk within one chunking setting: `path:start-end`."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def n_lines(self) -> int:
        return self.end_line - self.start_line + 1


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk in one ranking; `rank` is 1-based. `why` (fused hits with code signals) holds
    each contribution to the score, which they sum to: the base (`bm25`, `rrf`) and one per
    signal (`definition: APIRouter`, `path`, `role: test` …)."""

    chunk: Chunk
    score: float
    rank: int
    why: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Ranking:
    """An ordered list of hits from one method, or the reason the method is unavailable."""

    name: RankingName
    hits: tuple[Hit, ...] = ()
    available: bool = True
    reason: str = ""
    by: str = ""  # what made the list, when the name does not say (`learned`, a model's name)

    def rank_of(self, key: str) -> int | None:
        for hit in self.hits:
            if hit.chunk.key == key:
                return hit.rank
        return None


@dataclass(frozen=True, slots=True)
class StageTiming:
    """Wall time of one stage of a search, in milliseconds."""

    stage: str
    ms: float


@dataclass(frozen=True, slots=True)
class FileHit:
    """A file ranked by its best chunk (for "which files" questions)."""

    path: str
    score: float
    rank: int
    best_chunk: Chunk


@dataclass(frozen=True, slots=True)
class LineSpan:
    """Lines `start_line`..`end_line` (1-based, inclusive) of one repository file."""

    path: str  # repository-relative, forward slashes (as the index names files)
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a code-to-code query came from: the chunks holding any of these lines rank in no
    list. A --from location is one span; a diff has one per changed hunk, in several files."""

    spans: tuple[LineSpan, ...]

    @classmethod
    def at(cls, path: str, start_line: int, end_line: int) -> Origin:
        """The origin of one range of one file (a --from location)."""
        return cls((LineSpan(path, start_line, end_line),))

    @property
    def paths(self) -> tuple[str, ...]:
        """The files the query came from, each once, in span order."""
        return tuple(dict.fromkeys(span.path for span in self.spans))

    def describe(self) -> str:
        """The files as a sentence names them: `cart.py`, or `cart.py and 2 other files`."""
        paths = self.paths
        if len(paths) <= 1:
            return paths[0] if paths else "no file"
        others = len(paths) - 1
        return f"{paths[0]} and {others} other file{'s' if others != 1 else ''}"


@dataclass(frozen=True, slots=True)
class Scope:
    """Which files a ranking may show: glob patterns to include (empty: every file) and to
    exclude, matched against repository paths (`*` crosses folders, as in eval's --include;
    a pattern without a glob character also names a folder or file and what lies under it).
    A ranking is filtered, never the index: widening the scope needs no re-index."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # A second list a file must also match: a request's paths inside a face's own --include.
    within: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.include or self.exclude or self.within)

    def accepts(self, path: str) -> bool:
        for patterns in (self.include, self.within):
            if patterns and not any(_path_matches(path, p) for p in patterns):
                return False
        return not any(_path_matches(path, p) for p in self.exclude)

    def narrowed(self, paths: tuple[str, ...]) -> Scope:
        """This scope, further limited to files matching any of `paths` (none: unchanged)."""
        return Scope(self.include, self.exclude, paths) if paths else self

    def describe(self) -> str:
        """`only src/*, tests/** left out`, as a note names the scope ("" when inactive)."""
        parts = []
        if self.include:
            parts.append(f"only {', '.join(self.include)}")
        if self.within:
            parts.append(f"within {', '.join(self.within)}")
        if self.exclude:
            parts.append(f"{', '.join(self.exclude)} left out")
        return "; ".join(parts)


EVERY_FILE = Scope()  # the scope of a search that names none
_GLOB_CHARS = frozenset("*?[")


def _path_matches(path: str, pattern: str) -> bool:
    """Does a repository path match a scope pattern (see `Scope`)?"""
    from fnmatch import fnmatchcase

    pattern = pattern.strip().lstrip("/") if pattern.strip() != "/" else ""
    if not pattern or pattern == ".":
        return True
    folder = pattern.rstrip("/")
    if not _GLOB_CHARS & set(pattern):
        return path == folder or path.startswith(folder + "/")
    if fnmatchcase(path, pattern):
        return True
    # `src/*/` or `*.py` given for a folder: what lies under a matching folder matches too
    return any(fnmatchcase(path[:at], folder) for at in range(len(path)) if path[at] == "/") or (
        "/" not in pattern and fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    )


@dataclass(frozen=True, slots=True)
class SearchRun:
    """Everything one search produced: every ranking, every stage's time, notes for the user.

    `depth` is how deep the lists went, `origin` where a code-to-code query came from and
    `left_out` how many chunks holding its lines were kept out of the rankings; `scope` the
    files the rankings were limited to and `out_of_scope` how many chunks that left out;
    `fused_from` what the fused list was made of ("bm25", "rrf" or "weighted"; "" unknown).
    """

    query: str
    rankings: Mapping[RankingName, Ranking]
    timings: tuple[StageTiming, ...]
    notes: tuple[str, ...] = ()
    depth: int = 0
    origin: Origin | None = None
    left_out: int = 0
    scope: Scope = EVERY_FILE
    out_of_scope: int = 0
    fused_from: str = ""

    @property
    def total_ms(self) -> float:
        return sum(t.ms for t in self.timings)

    @property
    def final(self) -> Ranking:
        """The best available ranking: reranked, else fused, else BM25."""
        for name in ("rerank", "fused", "bm25"):
            ranking = self.rankings.get(name)
            if ranking is not None and ranking.available and ranking.hits:
                return ranking
        return self.rankings.get("bm25", Ranking("bm25"))

    def ranks_of(self, key: str) -> dict[RankingName, int | None]:
        """The chunk's rank in every available list (None where it is absent)."""
        return {
            name: ranking.rank_of(key)
            for name, ranking in self.rankings.items()
            if ranking.available
        }

    def files(self, name: RankingName | None = None) -> tuple[FileHit, ...]:
        """Aggregate a ranking's chunk hits to files, each scored by its best chunk."""
        ranking = self.final if name is None else self.rankings[name]
        best: dict[str, Hit] = {}
        for hit in ranking.hits:
            if hit.chunk.path not in best:
                best[hit.chunk.path] = hit  # hits are in rank order: first is best
        return tuple(
            FileHit(path=path, score=hit.score, rank=i, best_chunk=hit.chunk)
            for i, (path, hit) in enumerate(best.items(), start=1)
        )


@dataclass(frozen=True, slots=True)
class PackedBlock:
    """One file's code in the prompt, under one header: start_line..end_line, or only the
    line ranges in `parts` when lines between them were left out (each gap shown as one
    elision line in `text`)."""

    path: str
    start_line: int
    end_line: int
    language: str | None
    text: str
    tokens: int
    chunk_keys: tuple[str, ...]
    best_rank: int
    secrets: tuple[str, ...] = ()  # kinds of the secrets in it, masked or let in (see mode)
    parts: tuple[tuple[int, int], ...] = ()  # empty: the whole of start_line..end_line
    outline: bool = False  # signatures only: where a ranked file's code is, not the code

    @property
    def shown(self) -> tuple[tuple[int, int], ...]:
        """The line ranges whose text the block holds (1-based, inclusive)."""
        return self.parts or ((self.start_line, self.end_line),)


@dataclass(frozen=True, slots=True)
class DroppedChunk:
    """A ranked chunk that did not fit (or was excluded or held back as a secret), with why;
    `secrets` names the kinds of secret that held it back."""

    key: str
    rank: int
    tokens: int
    reason: str
    secrets: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PackAccount:
    """What a reader of a packed prompt cannot use, counted so that a regression shows in
    numbers: signatures shown without any of the body that held the match, runs of one line
    that are not the signature of code shown below them, and the tokens spent on outlines
    (signatures only) and on data files (JSON, YAML, lock files, snapshots, fixtures)."""

    bare_signatures: int = 0
    lone_lines: int = 0
    outline_tokens: int = 0
    data_tokens: int = 0


@dataclass(frozen=True, slots=True)
class PackedPrompt:
    """The assembled prompt and an account of what went in and what did not.

    `secret_mode` is how chunks with suspected secrets were treated: "hold" (left out, as
    `dropped` entries with reason "secret"), "redact" (included, each secret masked) or
    "allow" (included as they are); blocks name the kinds they hold either way.
    """

    text: str
    tokens: int
    budget: int
    encoding: str
    exact: bool
    blocks: tuple[PackedBlock, ...]
    dropped: tuple[DroppedChunk, ...] = field(default=())
    secret_mode: str = "hold"
    # Why packing stopped (`core.prompt.pack_spans`: the budget was full, or relevance ended),
    # and the tokens the files in the prompt hold whole (what the prompt saved reading them).
    stopped: str = ""
    files_tokens: int | None = None
    account: PackAccount | None = None  # None: packed whole chunks (`pack.pack`)

    @property
    def code_files(self) -> tuple[str, ...]:
        """The files with code in the prompt (outline blocks aside), in prompt order."""
        return tuple(dict.fromkeys(b.path for b in self.blocks if not b.outline))
