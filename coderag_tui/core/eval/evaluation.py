"""Evaluation runs: every dataset row against a grid of chunkings, tokenizers and modes.

For each row (grouped by repository and ordered along its history) and each chunking, the
tree at the row's commit is indexed into its own store, one Engine search yields every
ranking at once, and the file-level (and, with gold line ranges, chunk-level) metrics of
each mode are recorded with the run's stage timings. Embeddings go through the shared
content-hash cache, so neighbouring commits and repeated runs embed only what changed.

Rows in semble's annotation format are also scored by semble's chunk-level NDCG@10 and
summarised as semble does (a repository's score is the mean over its queries, the overall
score the plain mean over repositories), and every configuration is compared with a
baseline by a paired bootstrap of queries, so a difference can be told from chance.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.core.eval.budget import (
    BUDGETS,
    BudgetScore,
    BudgetSummary,
    WholeFiles,
    prompt_recall,
    read_whole,
    summarise_budgets,
)
from coderag_tui.core.eval.by_language import LanguageScores, by_language
from coderag_tui.core.eval.datasets import (
    CandidateFilter,
    DatasetError,
    EvalRow,
    commit_time,
    find_repository,
    materialise_tree,
    missing_files,
)
from coderag_tui.core.eval.gold_lines import line_sets
from coderag_tui.core.eval.lexical_axes import LexicalVariant, check_scorers, lexical_variants
from coderag_tui.core.eval.metrics import (
    SEMBLE_K,
    SEMBLE_NDCG,
    BootstrapInterval,
    metric_names,
    paired_bootstrap,
    score_chunks,
    score_files,
    semble_ndcg,
    target_ranks,
)
from coderag_tui.core.eval.structure_lists import STRUCTURE_LISTS, StructureLists
from coderag_tui.core.rank.fusion import rrf
from coderag_tui.core.records import RANKING_NAMES, ChunkingSpec, Origin, Ranking, SearchRun
from coderag_tui.settings import DENSE_STRIPES_AUTO, Settings

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine, Lexical
    from coderag_tui.core.index.imports import ImportGraph
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.rank.learned import LearnedReranker
    from coderag_tui.core.rank.rerank import Reranker

# An evaluation-only mode: RRF of the BM25 and dense *file* rankings (each file scored by its
# best chunk first), to compare with the pipeline's fusion of chunk rankings.
FILE_RRF = "fused-files"
# The seed paper's structure-aware lists (code-to-code rows only): `core.rank.structure`.
EVAL_MODES: tuple[str, ...] = (*RANKING_NAMES, FILE_RRF, *STRUCTURE_LISTS)
# Tokenizer option name -> (split_identifiers, path_in_text); `line` and `bpe` are the seed
# paper's other splitters (`core.eval.lexical_axes`), the rest split words.
TOKENIZERS: dict[str, tuple[bool, bool]] = {
    "default": (False, False),
    "split": (True, False),
    "path": (False, True),
    "split+path": (True, True),
    "line": (False, False),
    "bpe": (False, False),
}
# The stages whose time a mode's answer costs (a mode's latency is their sum).
MODE_STAGES: dict[str, tuple[str, ...]] = {
    "bm25": ("tokenize", "bm25"),
    "dense": ("embed query", "vector search"),
    "fused": ("tokenize", "bm25", "embed query", "vector search", "fusion", "signals"),
    "rerank": (
        "tokenize",
        "bm25",
        "embed query",
        "vector search",
        "fusion",
        "signals",
        "rerank",
    ),
    FILE_RRF: ("tokenize", "bm25", "embed query", "vector search"),
    **{name: ("tokenize", "bm25") for name in STRUCTURE_LISTS},
}
NEEDS_DENSE = frozenset({"dense", "fused", "rerank", FILE_RRF})
CHUNK_MODES = frozenset(RANKING_NAMES)  # the modes that rank chunks, so pack a prompt
ANY_TOKENIZER = "-"  # dense rankings do not depend on the BM25 tokenizer


def mode_label(mode: str, dense_stripes: int) -> str:
    """The mode as results show it: a mode using dense names a stripe setting other than the
    default (auto), so runs differ."""
    if dense_stripes == DENSE_STRIPES_AUTO or mode not in NEEDS_DENSE:
        return mode
    if dense_stripes <= 0:
        return f"{mode} (all stripes)"
    return f"{mode} (first {dense_stripes} stripes)"


@dataclass(frozen=True, slots=True)
class Grid:
    """What one evaluation run compares: modes x chunkings x tokenizers, at cut-off k."""

    modes: tuple[str, ...] = ("bm25",)
    chunkings: tuple[str, ...] = ("lines:64",)
    tokenizers: tuple[str, ...] = ("default",)
    scorers: tuple[str, ...] = ("bm25",)  # the lexical list's scorer: bm25, iou
    k: int = 10
    depth: int = 300  # chunk hits kept per ranking, so the file list is deep enough for MRR
    candidates: CandidateFilter = field(default_factory=CandidateFilter)
    # Prompt sizes (tokens) at which each chunk ranking is packed and scored (recall at a
    # budget, `core.eval.budget`); empty: none.
    budgets: tuple[int, ...] = BUDGETS

    def validate(self) -> None:
        """Raise ValueError naming the first unknown mode, chunking or tokenizer."""
        for mode in self.modes:
            if mode not in EVAL_MODES:
                raise ValueError(f"unknown mode {mode!r}: use {', '.join(EVAL_MODES)}")
        for tok in self.tokenizers:
            if tok not in TOKENIZERS:
                raise ValueError(f"unknown tokenizer {tok!r}: use {', '.join(TOKENIZERS)}")
        check_scorers(self.scorers)
        for text in self.chunkings:
            ChunkingSpec.parse(text)
        if self.k < 1:
            raise ValueError("k must be at least 1")

    @property
    def lexicals(self) -> tuple[LexicalVariant, ...]:
        """Each (tokenizer x scorer) the run builds a lexical list for, labelled."""
        return lexical_variants(self.tokenizers, self.scorers)


@dataclass(frozen=True, slots=True)
class EvalProgress:
    """Where a run is: steps are (row, chunking) pairs; detail says what the step is doing."""

    done: int
    total: int
    label: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class InstanceResult:
    """One row under one configuration: its metrics, the gold's rank and the stage times."""

    id: str
    repo: str
    mode: str
    chunking: str
    tokenizer: str
    scores: Mapping[str, float]
    chunk_scores: Mapping[str, float] | None
    gold_rank: int | None
    top_files: tuple[str, ...]
    stage_ms: Mapping[str, float]
    search_ms: float
    prepare_s: float  # index + BM25 (+ dense) preparation for this row and chunking
    ndcg10_semble: float | None = None  # rows in semble's format only
    target_ranks: tuple[int | None, ...] = ()  # per target of the row, its rank in the top 10
    category: str | None = None
    language: str | None = None
    # completion rows: per budget (tokens), whether the packed prompt holds the definition
    packed: Mapping[int, bool] | None = None
    # per budget (tokens), what the prompt packed from this mode's ranking carries
    budgets: Mapping[int, BudgetScore] | None = None
    # the row's grep-and-read baseline (the same for every mode of the row)
    whole: WholeFiles | None = None

    @property
    def config(self) -> tuple[str, str, str]:
        return (self.mode, self.chunking, self.tokenizer)


@dataclass(frozen=True, slots=True)
class GroupScore:
    """semble's NDCG@10 of a group of queries: the mean over repositories of each
    repository's mean over its queries in the group."""

    ndcg10: float
    queries: int
    repos: int


@dataclass(frozen=True, slots=True)
class SembleSummary:
    """semble's NDCG@10 of one configuration: overall, per repository, category, language."""

    overall: GroupScore
    by_repo: Mapping[str, GroupScore]
    by_category: Mapping[str, GroupScore]
    by_language: Mapping[str, GroupScore]

    def to_json(self) -> dict[str, Any]:
        def group(scores: Mapping[str, GroupScore]) -> dict[str, Any]:
            return {name: _group_json(g) for name, g in scores.items()}

        return {
            SEMBLE_NDCG: round(self.overall.ndcg10, 4),
            "queries": self.overall.queries,
            "repos": self.overall.repos,
            "by_repo": group(self.by_repo),
            "by_category": group(self.by_category),
            "by_language": group(self.by_language),
        }


def _group_json(g: GroupScore) -> dict[str, Any]:
    return {SEMBLE_NDCG: round(g.ndcg10, 4), "queries": g.queries, "repos": g.repos}


def semble_group(items: Sequence[InstanceResult]) -> GroupScore | None:
    """semble's aggregate of some queries: mean per repository, then plain mean over those."""
    per_repo: dict[str, list[float]] = defaultdict(list)
    for r in items:
        if r.ndcg10_semble is not None:
            per_repo[r.repo].append(r.ndcg10_semble)
    if not per_repo:
        return None
    return GroupScore(
        ndcg10=statistics.fmean(statistics.fmean(v) for v in per_repo.values()),
        queries=sum(len(v) for v in per_repo.values()),
        repos=len(per_repo),
    )


def summarise_semble(items: Sequence[InstanceResult]) -> SembleSummary | None:
    """semble's NDCG@10 of one configuration's results, or None when no row is in its format."""
    overall = semble_group(items)
    if overall is None:
        return None

    def by(key: Callable[[InstanceResult], str | None]) -> dict[str, GroupScore]:
        groups: dict[str, list[InstanceResult]] = defaultdict(list)
        for r in items:
            groups[key(r) or "(none)"].append(r)
        out = {name: semble_group(group) for name, group in sorted(groups.items())}
        return {name: g for name, g in out.items() if g is not None}

    return SembleSummary(
        overall=overall,
        by_repo=by(lambda r: r.repo),
        by_category=by(lambda r: r.category),
        by_language=by(lambda r: r.language),
    )


@dataclass(frozen=True, slots=True)
class ConfigSummary:
    """Mean metrics and median latencies of one (mode, chunking, tokenizer) over its rows."""

    mode: str
    chunking: str
    tokenizer: str
    n: int
    scores: Mapping[str, float]
    chunk_scores: Mapping[str, float] | None
    stage_ms: Mapping[str, float]  # median per stage
    search_ms: float  # median of the mode's stage sum
    prepare_s: float  # median preparation seconds per row
    semble: SembleSummary | None = None
    packed: Mapping[int, float] | None = None  # completion: share of rows packed, per budget
    budgets: Mapping[int, BudgetSummary] | None = None  # recall at each budget

    @property
    def config(self) -> tuple[str, str, str]:
        return (self.mode, self.chunking, self.tokenizer)


@dataclass(frozen=True, slots=True)
class Comparison:
    """One configuration against the baseline on the main metric, over their shared queries."""

    baseline: tuple[str, str, str]
    candidate: tuple[str, str, str]
    metric: str  # SEMBLE_NDCG (averaged over repositories) or "mrr" (over queries)
    baseline_score: float
    candidate_score: float
    interval: BootstrapInterval

    def to_json(self) -> dict[str, Any]:
        i = self.interval
        return {
            "baseline": _config_json(self.baseline),
            "candidate": _config_json(self.candidate),
            "metric": self.metric,
            "n": i.n,
            "resamples": i.resamples,
            "confidence": i.confidence,
            "baseline_score": round(self.baseline_score, 4),
            "candidate_score": round(self.candidate_score, 4),
            "mean_diff": round(i.mean_diff, 4),
            "low": round(i.low, 4),
            "high": round(i.high, 4),
            "verdict": i.verdict,
        }


def _config_json(config: tuple[str, str, str]) -> dict[str, str]:
    return dict(zip(("mode", "chunking", "tokenizer"), config, strict=True))


@dataclass(frozen=True)
class EvalReport:
    """Everything a run measured, plus notes (skipped rows, unavailable modes)."""

    k: int
    summaries: tuple[ConfigSummary, ...]
    instances: tuple[InstanceResult, ...]
    notes: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (row id, reason)
    wall_s: float
    cancelled: bool = False
    comparisons: tuple[Comparison, ...] = ()
    languages: tuple[LanguageScores, ...] = ()  # per configuration and language (`by_language`)

    @property
    def metric_names(self) -> tuple[str, ...]:
        return metric_names(self.k)

    @property
    def whole_files(self) -> tuple[dict[int, BudgetSummary], float | None, int] | None:
        """The grep-and-read baseline over the run's rows (once per row and chunking): the
        means at each budget, the median tokens read until the gold (rows that got there)
        and how many rows got there; None when no row has one."""
        seen: dict[tuple[str, str], WholeFiles] = {}
        for r in self.instances:
            if r.whole is not None:
                seen.setdefault((r.id, r.chunking), r.whole)
        if not seen:
            return None
        reached = [w.tokens_to_gold for w in seen.values() if w.tokens_to_gold is not None]
        median = statistics.median(reached) if reached else None
        return summarise_budgets([w.at for w in seen.values()]), median, len(reached)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: summaries, per-instance results, notes and skipped rows.

        semble's NDCG@10 (`semble` per configuration, `ndcg10_semble` per instance) and the
        bootstrap `comparisons` appear only when there is something to say.
        """
        configs = []
        for s in self.summaries:
            config: dict[str, Any] = {
                "mode": s.mode,
                "chunking": s.chunking,
                "tokenizer": s.tokenizer,
                "n": s.n,
                "files": dict(s.scores),
                "chunks": dict(s.chunk_scores) if s.chunk_scores is not None else None,
                "median_ms": {k: round(v, 3) for k, v in s.stage_ms.items()},
                "search_ms": round(s.search_ms, 3),
                "prepare_s": round(s.prepare_s, 3),
            }
            if s.semble is not None:
                config["semble"] = s.semble.to_json()
            if s.packed is not None:
                config["packed"] = {str(b): round(v, 4) for b, v in s.packed.items()}
            if s.budgets:
                config["budgets"] = {str(b): v.to_json() for b, v in s.budgets.items()}
            configs.append(config)
        instances = []
        for r in self.instances:
            instance: dict[str, Any] = {
                "id": r.id,
                "repo": r.repo,
                "mode": r.mode,
                "chunking": r.chunking,
                "tokenizer": r.tokenizer,
                "files": dict(r.scores),
                "chunks": dict(r.chunk_scores) if r.chunk_scores is not None else None,
                "gold_rank": r.gold_rank,
                "top_files": list(r.top_files),
                "stage_ms": {k: round(v, 3) for k, v in r.stage_ms.items()},
                "search_ms": round(r.search_ms, 3),
            }
            if r.language:
                instance["language"] = r.language
            if r.ndcg10_semble is not None:
                instance.update(
                    {
                        SEMBLE_NDCG: round(r.ndcg10_semble, 4),
                        "target_ranks": list(r.target_ranks),
                        "category": r.category,
                        "language": r.language,
                    }
                )
            if r.packed is not None:
                instance.update(
                    {
                        "packed": {str(b): v for b, v in r.packed.items()},
                        "category": r.category,
                        "language": r.language,
                    }
                )
            if r.budgets:
                instance["budgets"] = {str(b): v.to_json() for b, v in r.budgets.items()}
            instances.append(instance)
        out: dict[str, Any] = {
            "k": self.k,
            "wall_s": round(self.wall_s, 3),
            "cancelled": self.cancelled,
            "configs": configs,
            "instances": instances,
            "notes": list(self.notes),
            "skipped": [{"id": i, "reason": why} for i, why in self.skipped],
        }
        if self.comparisons:
            out["comparisons"] = [c.to_json() for c in self.comparisons]
        if self.languages:
            out["by_language"] = [s.to_json() for s in self.languages]
        whole = self.whole_files
        if whole is not None:
            at, median, reached = whole
            out["read_whole_files"] = {
                "budgets": {str(b): v.to_json() for b, v in at.items()},
                "median_tokens_to_gold": median,
                "rows_reaching_gold": reached,
            }
        return out

    def csv_rows(self) -> list[dict[str, Any]]:
        """One flat row per configuration (metrics, then median milliseconds per stage)."""
        stages = sorted({st for s in self.summaries for st in s.stage_ms})
        rows = []
        for s in self.summaries:
            row: dict[str, Any] = {
                "mode": s.mode,
                "chunking": s.chunking,
                "tokenizer": s.tokenizer,
                "n": s.n,
            }
            row.update({name: round(s.scores.get(name, 0.0), 4) for name in self.metric_names})
            if s.chunk_scores is not None:
                row.update({f"chunk_{k}": round(v, 4) for k, v in s.chunk_scores.items()})
            if s.semble is not None:
                row[SEMBLE_NDCG] = round(s.semble.overall.ndcg10, 4)
            if s.packed is not None:
                row.update({f"packed@{b}": round(v, 4) for b, v in s.packed.items()})
            for b, v in (s.budgets or {}).items():
                row[f"file_recall@{b}"] = round(v.file_recall, 4)
                if v.line_recall is not None:
                    row[f"line_recall@{b}"] = round(v.line_recall, 4)
                row[f"tokens@{b}"] = round(v.tokens, 1)
                row[f"files@{b}"] = round(v.files, 2)
            row["search_ms_median"] = round(s.search_ms, 3)
            row["prepare_s_median"] = round(s.prepare_s, 3)
            row.update(
                {f"{st}_ms": round(s.stage_ms[st], 3) if st in s.stage_ms else "" for st in stages}
            )
            rows.append(row)
        return rows


@dataclass
class _Work:
    """A row with the tree it is evaluated on (or why it cannot be)."""

    row: EvalRow
    repo_label: str
    git_dir: Path | None
    order: tuple[str, int]


def _plan(
    rows: Sequence[EvalRow], settings: Settings, repos_dir: Path | None
) -> tuple[list[_Work], list[tuple[str, str]]]:
    """Locate each row's repository and order rows by repository, then commit time."""
    work: list[_Work] = []
    skipped: list[tuple[str, str]] = []
    found: dict[str, Path | None] = {}
    for row in rows:
        git_dir: Path = settings.repo_root
        label = row.repo or settings.repo_root.name
        if row.repo and repos_dir is not None:
            if row.repo not in found:
                found[row.repo] = find_repository(repos_dir, row.repo)
            located = found[row.repo]
            if located is None:
                skipped.append((row.id, f"{row.repo} is not under {repos_dir}"))
                continue
            git_dir = located
        when = commit_time(git_dir, row.base_commit) if row.base_commit else 0
        work.append(_Work(row, label, git_dir, (label, when)))
    work.sort(key=lambda w: w.order)
    return work, skipped


def _tree_for(
    item: _Work,
    settings: Settings,
    candidates: CandidateFilter,
    tree_cache: Path | None,
    repos_dir: Path | None,
) -> Path:
    if item.row.base_commit is None or item.git_dir is None:
        return settings.repo_root
    try:
        return materialise_tree(
            item.git_dir,
            item.row.base_commit,
            cache_dir=tree_cache,
            label=item.repo_label.replace("/", "+"),
            candidates=candidates,
        )
    except DatasetError as exc:
        if item.row.repo and repos_dir is None:
            raise DatasetError(
                f"{exc} Row {item.row.id} names {item.row.repo}: pass --repos DIR holding it."
            ) from exc
        raise


def _mode_ms(run: SearchRun, mode: str) -> tuple[dict[str, float], float]:
    stages = MODE_STAGES.get(mode, ())
    per_stage: dict[str, float] = {}
    for timing in run.timings:
        if timing.stage in stages:
            per_stage[timing.stage] = per_stage.get(timing.stage, 0.0) + timing.ms
    return per_stage, sum(per_stage.values())


def chunking_settings(
    settings: Settings, tree: Path, chunking: str, grid: Grid, reranked: bool
) -> Settings:
    """The settings one chunking of the grid is searched with on `tree`: lists deep enough for
    the grid's file metrics, the reranker on when the grid asks for it and one loaded, and a
    first index that waits for the definitions (every query is ranked as a later search is)."""
    spec = ChunkingSpec.parse(chunking)
    return settings.with_(
        repo=tree,
        definitions_background=False,
        chunking=spec.strategy,
        chunk_lines=spec.lines,
        chunk_overlap=spec.overlap,
        k=max(settings.k, grid.depth),
        depth=max(settings.depth, grid.depth),
        rerank="rerank" in grid.modes and reranked,
        rerank_keep=max(settings.rerank_keep, settings.rerank_candidates),
    )


def prepare_engine(
    engine: Engine,
    base: Settings,
    *,
    embedder: Embedder | None,
    dense_reason: str,
    reranker: Reranker | LearnedReranker | None,
    embed_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> Lexical:
    """Index `base`'s tree into `engine` and install its stages: the lexical one, dense (or
    why it is off) and the reranker; a server backend gets this tree pushed first."""
    from coderag_tui.core.engine import Dense, Rerank

    if base.backend != "local":  # the server's copy of this tree: indexed, pushed
        local = base.with_(backend="local")
        pushed = engine.update_index(local, cancel=cancel)
        vectors = None
        if embedder is not None and pushed.chunks:
            vectors = engine.open_dense(local, pushed, embedder=embedder)
        engine.push(base, pushed, vectors, cancel=cancel)
    lexical = engine.update_index(base, cancel=cancel)
    engine.use(lexical)
    if embedder is not None and lexical.chunks:
        # `base`: the stripe cap depends on the chunking
        engine.use(
            engine.open_dense(
                base, lexical, embedder=embedder, progress=embed_progress, cancel=cancel
            )
        )
    else:
        engine.use(Dense(reason=dense_reason))
    if reranker is not None:
        engine.use(Rerank(reranker))
    return lexical


def use_variant(
    engine: Engine, base: Settings, lexical: Lexical, variant: LexicalVariant
) -> Settings:
    """Install `variant`'s lexical index (tokenizer, splitter, scorer) over `lexical`'s chunks
    in `engine`, and return the settings its searches run with."""
    split, path = TOKENIZERS[variant.tokenizer]
    settings = base.with_(split_identifiers=split, path_in_text=path)
    engine.use(
        engine.lexical_for(settings, lexical, splitter=variant.splitter, scorer=variant.scorer)
    )
    return settings


@dataclass(frozen=True)
class Models:
    """What every index of a run shares, loaded once: the embedder (or why dense is off)
    and the reranker (None: off, said in the notes)."""

    embedder: Embedder | None
    dense_reason: str
    reranker: Reranker | LearnedReranker | None

    @classmethod
    def start(
        cls, settings: Settings, grid: Grid, notes: list[str], embedder: Embedder | None
    ) -> Models:
        """The models `grid`'s modes need (`embedder`, when given, replaces the one
        `settings` would resolve); why one is missing goes to `notes`."""
        want_dense = bool(NEEDS_DENSE.intersection(grid.modes))
        embedder, dense_reason = _embedder(settings, want_dense, notes, embedder)
        return cls(embedder, dense_reason, _reranker(settings, "rerank" in grid.modes, notes))


@contextlib.contextmanager
def opened(
    base: Settings,
    models: Models,
    *,
    embed_progress: Callable[[int, int], None] | None,
    cancel: threading.Event | None,
) -> Iterator[tuple[Engine, Lexical, float]]:
    """An engine holding `base`'s index and `models` (`prepare_engine`), closed when the
    block ends, with the seconds preparing it took."""
    from coderag_tui.core.engine import Engine

    started = time.perf_counter()
    engine = Engine(base)
    try:
        lexical = prepare_engine(
            engine,
            base,
            embedder=models.embedder,
            dense_reason=models.dense_reason,
            reranker=models.reranker,
            embed_progress=embed_progress,
            cancel=cancel,
        )
        yield engine, lexical, time.perf_counter() - started
    finally:
        engine.close()


def finished(
    results: list[InstanceResult],
    grid: Grid,
    notes: list[str],
    skipped: Sequence[tuple[str, str]],
    started: float,
    *,
    cancelled: bool,
    baseline: tuple[str, str, str] | None,
    resamples: int,
) -> EvalReport:
    """The report of a run that began at `started` (perf_counter): summaries per
    configuration and their comparison with `baseline`."""
    summaries = summarise(results, grid)
    return EvalReport(
        k=grid.k,
        summaries=summaries,
        instances=tuple(results),
        notes=tuple(notes),
        skipped=tuple(skipped),
        wall_s=time.perf_counter() - started,
        cancelled=cancelled,
        comparisons=compare(results, summaries, baseline=baseline, resamples=resamples),
        languages=by_language(results, resamples=resamples),
    )


def run_eval(
    rows: Sequence[EvalRow],
    settings: Settings,
    grid: Grid,
    *,
    repos_dir: Path | None = None,
    tree_cache: Path | None = None,
    progress: Callable[[EvalProgress], None] | None = None,
    cancel: threading.Event | None = None,
    embedder: Embedder | None = None,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = 10_000,
) -> EvalReport:
    """Evaluate every row under every configuration of the grid and summarise per configuration.

    `settings` supplies everything else (index_dir, models, fusion); its repo is the
    repository used for rows without a `repo` field. `embedder` replaces the model that
    settings would resolve (e.g. one already loaded). Every other configuration is compared
    with `baseline` (default: the first) by a paired bootstrap with `resamples` draws.
    """

    grid.validate()
    started = time.perf_counter()
    notes: list[str] = []
    work, skipped = _plan(rows, settings, repos_dir)
    want_dense = bool(NEEDS_DENSE.intersection(grid.modes))
    models = Models.start(settings, grid, notes, embedder)
    reranker = models.reranker
    results: list[InstanceResult] = []
    total = len(work) * len(grid.chunkings)
    step = 0
    noted_gold: set[tuple[str, str]] = set()
    graphs: dict[Path, ImportGraph] = {}  # per tree, for the structure-aware lists
    cancelled = False
    for item in work:
        if cancel is not None and cancel.is_set():
            cancelled = True
            break
        row = item.row
        candidates = grid.candidates.under(row.benchmark_root)
        try:
            tree = _tree_for(item, settings, candidates, tree_cache, repos_dir)
        except DatasetError as exc:
            skipped.append((row.id, str(exc)))
            step += len(grid.chunkings)
            continue
        absent = missing_files(tree) if tree != settings.repo_root else []
        if absent and (item.repo_label, "") not in noted_gold:
            noted_gold.add((item.repo_label, ""))
            notes.append(
                f"{item.repo_label}: files whose content the repository copy lacks were "
                f"left out (e.g. {absent[0]} at {tree.name})."
            )
        wanted = (*row.gold_files, *row.secondary_files, *(c.path for c in row.gold_chunks))
        for gold in dict.fromkeys(wanted):
            if (row.id, gold) in noted_gold:
                continue
            noted_gold.add((row.id, gold))
            if not candidates.accepts(gold) or not (tree / gold).is_file():
                notes.append(f"{row.id}: gold file {gold} is not among the candidates.")
        for chunking in grid.chunkings:
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            label = f"{row.id} · {chunking}"
            if progress is not None:
                progress(EvalProgress(step, total, label, "indexing"))
            base = chunking_settings(settings, tree, chunking, grid, reranker is not None)
            embed_progress = _embed_progress(progress, step, total, label)
            with opened(base, models, embed_progress=embed_progress, cancel=cancel) as (
                engine,
                lexical,
                dense_prep,
            ):
                structure = StructureLists(tree, lexical.chunks, graphs, notes)
                o = row.origin
                origin = Origin.at(o.path, o.start_line, o.end_line) if o is not None else None
                for t_index, variant in enumerate(grid.lexicals):
                    tok = variant.label
                    tok_start = time.perf_counter()
                    tok_settings = use_variant(engine, base, lexical, variant)
                    prepare_s = dense_prep + time.perf_counter() - tok_start
                    run = engine.search(row.query, tok_settings, origin=origin)
                    prompts = _Prompts(engine, tok_settings, row, tree, candidates, grid.budgets)
                    whole = prompts.whole(run) if t_index == 0 else None
                    for note in run.notes if want_dense else ():
                        if note not in notes and not note.startswith("BM25 found no"):
                            notes.append(note)
                    for mode in grid.modes:
                        if mode == "dense" and t_index > 0:
                            continue  # identical for every tokenizer
                        if mode == "rerank" and reranker is None:
                            continue  # already noted why, once
                        result = _score(
                            run,
                            mode,
                            row,
                            item.repo_label,
                            chunking,
                            ANY_TOKENIZER if mode == "dense" else tok,
                            grid,
                            prepare_s,
                            dense_stripes=settings.dense_stripes,
                            candidates=candidates,
                            structure=structure,
                        )
                        if result is not None and grid.budgets:
                            result = replace(result, budgets=prompts.at(run, mode), whole=whole)
                        if result is None:
                            ranking = _ranking(run, mode)
                            reason = ranking.reason if ranking is not None else ""
                            if mode in STRUCTURE_LISTS:
                                reason = StructureLists.reason(run)
                            note = f"{mode} is unavailable: {reason or 'no ranking'}"
                            if note not in notes:
                                notes.append(note)
                            continue
                        results.append(result)
            step += 1
            if progress is not None:
                progress(EvalProgress(step, total, label, "done"))
        if cancelled:
            break
    return finished(
        results,
        grid,
        notes,
        skipped,
        started,
        cancelled=cancelled,
        baseline=baseline,
        resamples=resamples,
    )


class _Prompts:
    """Recall at each budget for one row's search: each chunk ranking packed into prompts by
    the engine (the code `coderag prompt` runs, the task left empty so the budget is the
    code's), and the grep-and-read baseline (`core.eval.budget`)."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        row: EvalRow,
        tree: Path,
        candidates: CandidateFilter,
        budgets: Sequence[int],
    ) -> None:
        self.engine, self.settings, self.row, self.tree = engine, settings, row, tree
        self.accepts = candidates.accepts
        self.budgets = tuple(budgets)
        self.gold_lines = _clipped(line_sets(row.gold_lines), tree)

    def _in_scope(self, run: SearchRun) -> SearchRun:
        rankings = {
            name: replace(r, hits=tuple(h for h in r.hits if self.accepts(h.chunk.path)))
            for name, r in run.rankings.items()
        }
        return replace(run, rankings=rankings)

    def at(self, run: SearchRun, mode: str) -> dict[int, BudgetScore] | None:
        """Per budget, what the prompt packed from `mode`'s ranking carries (None: the mode
        ranks no chunks, or is unavailable)."""
        from coderag_tui.core.engine import PromptError, PromptRequest

        ranking = _ranking(run, mode)
        if not self.budgets or ranking is None or not ranking.available:
            return None
        scoped = self._in_scope(run)
        out: dict[int, BudgetScore] = {}
        for budget in self.budgets:
            try:
                result = self.engine.prompt(
                    scoped,
                    PromptRequest(task="", source=mode),
                    self.settings.with_(budget=budget),
                )
            except PromptError:  # a budget smaller than the template: nothing fits
                continue
            out[budget] = prompt_recall(result.packed, self.row.gold_files, self.gold_lines)
        return out

    def whole(self, run: SearchRun) -> WholeFiles | None:
        """The grep-and-read baseline: whole files in BM25's file order."""
        from coderag_tui.core.engine import prompt_tools

        ranking = _ranking(run, "bm25")
        if not self.budgets or ranking is None or not ranking.available:
            return None
        _, counter = prompt_tools(self.settings)
        files = [f.path for f in run.files("bm25") if self.accepts(f.path)]

        def tokens_of(path: str) -> int | None:
            try:
                text = (self.tree / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None
            return counter.count(text)

        return read_whole(files, tokens_of, self.row.gold_files, self.gold_lines, self.budgets)


def _clipped(lines: Mapping[str, frozenset[int]], tree: Path) -> dict[str, frozenset[int]]:
    """Gold lines within their file's length at the row's commit (an insertion at the end of
    a file names the line after its last)."""
    out: dict[str, frozenset[int]] = {}
    for path, numbers in lines.items():
        try:
            data = (tree / path).read_bytes()
        except OSError:
            out[path] = numbers
            continue
        n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        kept = frozenset(x for x in numbers if x <= n)
        if kept:
            out[path] = kept
    return out


def _embedder(
    settings: Settings, wanted: bool, notes: list[str], embedder: Embedder | None
) -> tuple[Embedder | None, str]:
    """The embedder every row shares (loaded once), or the reason dense is off."""
    if not wanted:
        return None, "dense was not requested"
    if embedder is None:
        from coderag_tui.core.rank.embedders import resolve_embedder

        choice = resolve_embedder(settings)
        if choice.embedder is None:
            notes.append(choice.reason)
            return None, choice.reason
        embedder = choice.embedder
    return embedder, ""


def _reranker(
    settings: Settings, wanted: bool, notes: list[str]
) -> Reranker | LearnedReranker | None:
    """The reranker every row shares (loaded once); why it is missing goes to `notes`."""
    if not wanted:
        return None
    from coderag_tui.core.rank.rerank import resolve_reranker

    choice = resolve_reranker(settings.with_(rerank=True))
    if choice.reranker is None:
        notes.append(choice.reason)
    return choice.reranker


def _embed_progress(
    progress: Callable[[EvalProgress], None] | None, step: int, total: int, label: str
) -> Callable[[int, int], None] | None:
    if progress is None:
        return None

    def report(done: int, todo: int) -> None:
        progress(EvalProgress(step, total, label, f"embedding {done}/{todo}"))

    return report


def _ranking(run: SearchRun, mode: str) -> Ranking | None:
    """The run's ranking named `mode` (None for an eval-only mode such as fused-files)."""
    return next((r for name, r in run.rankings.items() if name == mode), None)


def _file_ranking(
    run: SearchRun,
    mode: str,
    accepts: Callable[[str], bool],
    structure: StructureLists | None = None,
) -> list[str] | None:
    """The candidate files in rank order for a mode, or None when the mode is unavailable."""
    if mode in STRUCTURE_LISTS:
        return structure.files_for(mode, run, accepts) if structure is not None else None
    if mode == FILE_RRF:
        lists = [_file_ranking(run, name, accepts) for name in ("bm25", "dense")]
        if any(ranked is None for ranked in lists):
            return None
        return [path for path, _ in rrf([ranked or [] for ranked in lists])]
    ranking = _ranking(run, mode)
    if ranking is None or not ranking.available:
        return None
    return [f.path for f in run.files(ranking.name) if accepts(f.path)]


def _score(
    run: SearchRun,
    mode: str,
    row: EvalRow,
    repo_label: str,
    chunking: str,
    tokenizer: str,
    grid: Grid,
    prepare_s: float,
    *,
    dense_stripes: int = DENSE_STRIPES_AUTO,
    candidates: CandidateFilter | None = None,
    structure: StructureLists | None = None,
) -> InstanceResult | None:
    accepts = (candidates or grid.candidates).accepts
    files = _file_ranking(run, mode, accepts, structure)
    if files is None:
        return None
    ranking = _ranking(run, mode)
    scores = score_files(files, row.gold_files, grid.k)
    gold = set(row.gold_files)
    gold_rank = next((i for i, p in enumerate(files, start=1) if p in gold), None)
    ranked = [
        (h.chunk.path, h.chunk.start_line, h.chunk.end_line)
        for h in (ranking.hits if ranking is not None else ())
        if accepts(h.chunk.path)
    ]
    chunk_scores = None
    if row.gold_chunks and ranking is not None:
        chunk_scores = score_chunks(ranked, row.gold_chunks, grid.k)
    semble: float | None = None
    ranks: tuple[int | None, ...] = ()
    if row.semble and ranking is not None:  # fused-files ranks files, not chunks
        targets = row.targets
        semble = semble_ndcg(ranked, targets, SEMBLE_K)
        ranks = target_ranks(ranked, targets, SEMBLE_K)
    stage_ms, search_ms = _mode_ms(run, mode)
    return InstanceResult(
        id=row.id,
        repo=repo_label,
        mode=mode_label(mode, dense_stripes),
        chunking=chunking,
        tokenizer=tokenizer,
        scores=scores,
        chunk_scores=chunk_scores,
        gold_rank=gold_rank,
        top_files=tuple(files[: grid.k]),
        stage_ms=stage_ms,
        search_ms=search_ms,
        prepare_s=prepare_s,
        ndcg10_semble=semble,
        target_ranks=ranks,
        category=row.category,
        language=row.language,
    )


def summarise(results: Sequence[InstanceResult], grid: Grid) -> tuple[ConfigSummary, ...]:
    """Group results by configuration (grid order) and average metrics, median latencies."""
    groups: dict[tuple[str, str, str], list[InstanceResult]] = defaultdict(list)
    for r in results:
        groups[(r.mode, r.chunking, r.tokenizer)].append(r)
    labels = [v.label for v in grid.lexicals]

    def order(key: tuple[str, str, str]) -> tuple[int, int, int]:
        mode, chunking, tok = key
        mode = mode.split(" (first ", 1)[0]  # a stripe cap's label sorts as its mode
        return (
            grid.modes.index(mode) if mode in grid.modes else 99,
            grid.chunkings.index(chunking) if chunking in grid.chunkings else 99,
            labels.index(tok) if tok in labels else -1,
        )

    out = []
    for key in sorted(groups, key=order):
        items = groups[key]
        names = metric_names(grid.k)
        scores = {n: statistics.fmean(r.scores[n] for r in items) for n in names}
        with_chunks = [r.chunk_scores for r in items if r.chunk_scores is not None]
        chunk_scores = (
            {n: statistics.fmean(c[n] for c in with_chunks) for n in names} if with_chunks else None
        )
        stages: dict[str, list[float]] = defaultdict(list)
        for r in items:
            for stage, ms in r.stage_ms.items():
                stages[stage].append(ms)
        out.append(
            ConfigSummary(
                mode=key[0],
                chunking=key[1],
                tokenizer=key[2],
                n=len(items),
                scores=scores,
                chunk_scores=chunk_scores,
                stage_ms={s: statistics.median(v) for s, v in stages.items()},
                search_ms=statistics.median(r.search_ms for r in items),
                prepare_s=statistics.median(r.prepare_s for r in items),
                semble=summarise_semble(items),
                packed=packed_shares(items),
                budgets=summarise_budgets([r.budgets for r in items if r.budgets]) or None,
            )
        )
    return tuple(out)


def packed_shares(items: Sequence[InstanceResult]) -> dict[int, float] | None:
    """The share of rows whose definition was packed, per budget (None: no completion rows)."""
    with_packing = [r.packed for r in items if r.packed is not None]
    if not with_packing:
        return None
    budgets = sorted({b for packed in with_packing for b in packed})
    return {b: statistics.fmean(float(p.get(b, False)) for p in with_packing) for b in budgets}


def main_metric(items: Sequence[InstanceResult]) -> str:
    """semble's NDCG@10 when every result has it (semble-format rows), else file-level MRR."""
    return SEMBLE_NDCG if items and all(r.ndcg10_semble is not None for r in items) else "mrr"


def _metric_value(r: InstanceResult, metric: str) -> float:
    if metric == SEMBLE_NDCG:
        return r.ndcg10_semble if r.ndcg10_semble is not None else 0.0
    return r.scores[metric]


def compare(
    results: Sequence[InstanceResult],
    summaries: Sequence[ConfigSummary],
    *,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[Comparison, ...]:
    """Every configuration against the baseline (default: the first) by a paired bootstrap.

    Queries are paired by row id (only rows both configurations answered count). On semble's
    NDCG@10 queries are resampled within their repository and the statistic is the mean over
    repositories, as the score itself is; on MRR it is the mean over queries.
    """
    if len(summaries) < 2:
        return ()
    base = baseline if baseline is not None else summaries[0].config
    by_config: dict[tuple[str, str, str], dict[str, InstanceResult]] = defaultdict(dict)
    for r in results:
        by_config[r.config][r.id] = r
    if base not in by_config:
        return ()
    out: list[Comparison] = []
    for s in summaries:
        if s.config == base:
            continue
        shared = [i for i in by_config[base] if i in by_config[s.config]]
        if not shared:
            continue
        a = [by_config[base][i] for i in shared]
        b = [by_config[s.config][i] for i in shared]
        metric = main_metric([*a, *b])
        grouped = metric == SEMBLE_NDCG
        groups = [r.repo for r in a] if grouped else None
        interval = paired_bootstrap(
            [_metric_value(r, metric) for r in a],
            [_metric_value(r, metric) for r in b],
            groups=groups,
            resamples=resamples,
            seed=seed,
        )
        a_score, b_score = (semble_group(a), semble_group(b)) if grouped else (None, None)
        out.append(
            Comparison(
                baseline=base,
                candidate=s.config,
                metric=metric,
                baseline_score=(
                    a_score.ndcg10
                    if a_score is not None
                    else statistics.fmean(_metric_value(r, metric) for r in a)
                ),
                candidate_score=(
                    b_score.ndcg10
                    if b_score is not None
                    else statistics.fmean(_metric_value(r, metric) for r in b)
                ),
                interval=interval,
            )
        )
    return tuple(out)
