"""`coderag tune`: fit the learned reranker to a repository's own history.

The pairs are the repository's own commits (`core.learn.history`), searched in a copy that
follows the history beside the index (`Settings.tuned_model_path`'s folder), with the user's
own settings, so the features are those their searches compute. The latest commits are held
back (the model never sees them); the tuned model is fitted on the older ones (its early
stopping and file penalty on the latest of those) and kept beside the index, and searches use
it only when it beats the shipped model on the held-back commits (higher file MRR, NDCG@10
with files counted once no lower), which the JSON beside it records and `resolve_learned`
reads.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.core.errors import CoderagError
from coderag_tui.core.eval.datasets import DatasetError, is_git_dir
from coderag_tui.core.learn.build import BuildProgress, QueryGroup, build_groups
from coderag_tui.core.learn.fit import (
    Scores,
    bootstrap,
    choose_penalty,
    fit,
    measure,
    paired_gain,
)
from coderag_tui.core.learn.history import HistoryOptions, HistoryPair, git, history_pairs
from coderag_tui.core.rank.learned import MODEL_FORMAT, LearnedModel, LearnedReranker

if TYPE_CHECKING:
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.settings import Settings

MIN_PAIRS = 20  # fewer usable commits than this teach nothing worth keeping


class TuneError(CoderagError):
    """Tuning cannot run as asked; the message is one sentence with the fix."""


@dataclass(frozen=True)
class TuneOptions:
    """How much history to read and how much of it to hold back."""

    pairs: int = 200
    scan: int = 2000
    held_back: float = 0.2
    seed: int = 0
    threads: int = 2


@dataclass(frozen=True)
class TuneProgress:
    """Where tuning is: `stage` (history, search, fit), `done` of `total` steps."""

    stage: str
    done: int
    total: int


@dataclass(frozen=True)
class TuneReport:
    """What tuning measured on the held-back commits and where the model went."""

    pairs: int
    train_queries: int
    held_back_commits: int
    held_back_queries: int
    fused: Scores
    shipped: Scores
    tuned: Scores
    mrr_interval: tuple[float, float]  # tuned minus shipped, 95% paired bootstrap
    beats_shipped: bool
    model_path: Path
    seconds: dict[str, float]

    def line(self) -> str:
        """The verdict in one sentence."""
        t, s = self.tuned, self.shipped
        scores = (
            f"file MRR {t.mrr:.3f} vs {s.mrr:.3f}, NDCG@10 {t.file_ndcg10:.3f} vs "
            f"{s.file_ndcg10:.3f} "
            f"on the latest {self.held_back_commits} commits, held back"
        )
        if self.beats_shipped:
            return f"the tuned model beats the shipped one ({scores}): searches here use it."
        return (
            f"the tuned model does not beat the shipped one ({scores}): searches here keep "
            "the shipped model."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs,
            "train_queries": self.train_queries,
            "held_back_commits": self.held_back_commits,
            "held_back_queries": self.held_back_queries,
            "fused": self.fused.to_json(),
            "shipped": self.shipped.to_json(),
            "tuned": self.tuned.to_json(),
            "mrr_tuned_minus_shipped_95": [round(v, 4) for v in self.mrr_interval],
            "beats_shipped": self.beats_shipped,
            "model": str(self.model_path),
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "verdict": self.line(),
        }


def work_folder(settings: Settings) -> Path:
    """Where tuning keeps its copy of the history and that copy's index, beside the index."""
    return settings.tuned_model_path.with_suffix(".work")


def tune(
    settings: Settings,
    options: TuneOptions = TuneOptions(),
    *,
    embedder: Embedder | None = None,
    progress: Callable[[TuneProgress], None] | None = None,
    cancel: threading.Event | None = None,
) -> TuneReport:
    """Fit a model to the history of `settings.repo`, measure it on the latest commits held
    back, and write it beside the index (see the module docstring)."""
    root = settings.repo_root
    if not is_git_dir(root) and git(root, "rev-parse", "--git-dir", check=False) == "":
        raise TuneError(f"{root} is not a git repository: `coderag tune` learns from its history.")
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    if progress is not None:
        progress(TuneProgress("history", 0, 1))
    try:
        pairs = history_pairs(
            root,
            HistoryOptions(
                commit="HEAD", scan=options.scan, limit=options.pairs, seed=options.seed
            ),
        )
    except DatasetError as exc:
        raise TuneError(str(exc)) from exc
    seconds["history"] = time.perf_counter() - started
    if len(pairs) < MIN_PAIRS:
        raise TuneError(
            f"only {len(pairs)} of the latest {options.scan} commits of {root} make usable "
            f"questions (a message, 1-3 source files changed; at least {MIN_PAIRS} needed): "
            "tune a repository with more history, or read further back with --scan."
        )
    n_held = max(1, math.ceil(options.held_back * len(pairs)))
    held_pairs = pairs[-n_held:]
    train_pairs = pairs[:-n_held]
    n_valid = max(1, round(0.15 * len(train_pairs)))

    work = work_folder(settings)
    searched = time.perf_counter()

    def report(p: BuildProgress) -> None:
        if progress is not None:
            progress(TuneProgress("search", p.done, p.total))

    try:
        groups = build_groups(
            root.name,
            root,
            pairs,
            settings.with_(repo=work / "tree", index_dir=work / "index"),
            embedder=embedder,
            progress=report,
            cancel=cancel,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if cancel is not None and cancel.is_set():
        raise TuneError("tuning was cancelled: nothing was written.")
    seconds["search"] = time.perf_counter() - searched

    def of(chosen: list[HistoryPair]) -> list[QueryGroup]:
        shas = {p.sha for p in chosen}
        return [g for g in groups if g.sha in shas]

    train = of(train_pairs[:-n_valid])
    valid = of(train_pairs[-n_valid:])
    held = of(held_pairs)
    if progress is not None:
        progress(TuneProgress("fit", 0, 1))
    fitting = time.perf_counter()
    shipped = LearnedModel.shipped()
    if importlib.util.find_spec("lightgbm") is None:
        raise TuneError(
            "coderag tune fits with LightGBM, which is not installed: "
            "pip install 'coderag-tui[tune]'."
        )
    try:
        fitted = fit(train, valid, seed=options.seed, threads=options.threads)
    except ValueError as exc:
        raise TuneError(
            f"no commit of {root} had its answer among the searched candidates ({exc}): "
            "there is nothing to learn from."
        ) from exc
    penalty = choose_penalty(valid, fitted.trees.predict)
    seconds["fit"] = time.perf_counter() - fitting
    shipped_penalty = LearnedReranker(shipped).file_penalty
    fused_s = measure(held)
    shipped_s = measure(held, shipped.trees.predict, shipped_penalty)
    tuned_s = measure(held, fitted.trees.predict, penalty)
    diffs = [
        a - b
        for a, b in zip(
            paired_gain(held, fitted.trees.predict, "mrr", penalty),
            paired_gain(held, shipped.trees.predict, "mrr", shipped_penalty),
            strict=True,
        )
    ]  # fmt: skip
    interval = bootstrap(diffs, seed=options.seed)
    beats = tuned_s.mrr > shipped_s.mrr and tuned_s.file_ndcg10 >= shipped_s.file_ndcg10
    seconds["total"] = time.perf_counter() - started
    path = settings.tuned_model_path
    head = git(root, "rev-parse", "HEAD", check=False).strip()
    out = TuneReport(
        pairs=len(pairs),
        train_queries=len(train) + len(valid),
        held_back_commits=len(held_pairs),
        held_back_queries=len(held),
        fused=fused_s,
        shipped=shipped_s,
        tuned=tuned_s,
        mrr_interval=interval,
        beats_shipped=beats,
        model_path=path,
        seconds=seconds,
    )
    meta = {
        "format": MODEL_FORMAT,
        "trained_by": "coderag tune",
        "repository": str(root),
        "head": head,
        "beats_shipped": beats,
        "trees": fitted.rounds,
        "file_penalty": penalty,
        **{k: v for k, v in out.to_json().items() if k not in ("model",)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(fitted.text, encoding="utf-8")
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return out
