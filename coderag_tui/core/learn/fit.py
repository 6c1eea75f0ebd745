"""Fitting the learned reranker's model (LightGBM lambdarank) and measuring it on query groups.

Why LightGBM's lambdarank rather than XGBoost's rank:ndcg: both fit gradient-boosted trees to
NDCG over query groups; LightGBM's wheel is ~4 MB with numpy and scipy (XGBoost's Linux wheel
is ~100-300 MB and pulls an NVIDIA NCCL wheel), and its text dump is plain `key=value` lines
per tree that `core.rank.learned` evaluates with numpy, so the runtime never imports either
library. Only fitting (`coderag tune`, training/train_ranker.py) imports LightGBM.

What the model is taught (`ranking_labels`): a file counts once, as semble's NDCG counts a
file target once, by its first chunk. A chunk the commit's hunks touched is a target of its
own (2); a changed file's first chunk in the fused order stands for the file (1); the file's
other chunks count for nothing. Taught to value every chunk of a changed file, a model
learnt to stack the top file's chunks and pushed every other file out of the top 10.

Measures, per group (a group's candidates are the fused top N, in fused order): NDCG@10 over
the chunks with those labels (gains 2^label - 1), and the reciprocal rank of the first
answering file when candidates are read as files (each file at its best chunk). A group whose
answer is not among the candidates scores 0 either way; that is reported as the candidates'
recall.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coderag_tui.core.learn.build import QueryGroup
from coderag_tui.core.rank.learned import FEATURE_NAMES, TreeEnsemble, spread

# LightGBM's parameters: small trees, so the shipped text stays a reviewable size and a
# query's rerank stays a few milliseconds.
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [10],
    "label_gain": [0.0, 1.0, 3.0],
    "lambdarank_truncation_level": 20,
    "num_leaves": 15,
    "max_depth": 6,
    "learning_rate": 0.05,
    "min_data_in_leaf": 50,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
}
ROUNDS = 400
EARLY_STOP = 40


@dataclass(frozen=True, kw_only=True)
class Scores:
    """NDCG@10 (chunk labels, and files once), file MRR and Acc@1 of some groups, with how
    many groups and how many have an answer among the candidates."""

    ndcg10: float
    mrr: float
    acc1: float
    groups: int
    answerable: int
    file_ndcg10: float = 0.0

    def to_json(self) -> dict[str, float | int]:
        return {
            "ndcg@10": round(self.ndcg10, 4),
            "file_ndcg@10": round(self.file_ndcg10, 4),
            "mrr": round(self.mrr, 4),
            "acc@1": round(self.acc1, 4),
            "groups": self.groups,
            "answerable": self.answerable,
        }


def ranking_labels(group: QueryGroup) -> np.ndarray:
    """The labels taught and measured (see the module docstring): hunk chunks 2, each
    changed file's first candidate 1 (unless it is a hunk chunk), its other chunks 0."""
    y = group.y.astype(np.int64)
    out = np.where(y >= 2, 2, 0)
    seen: set[int] = set()
    for row in np.flatnonzero(y > 0).tolist():
        fid = int(group.files[row])
        if fid not in seen:
            seen.add(fid)
            out[row] = max(out[row], 1)
    return out


def _dcg(gains: np.ndarray) -> float:
    return float(np.sum(gains / np.log2(np.arange(2, gains.size + 2))))


def file_ndcg(group: QueryGroup, order: np.ndarray, k: int = 10) -> float:
    """NDCG@k with each changed file a target found by its first chunk in `order`, as
    semble's NDCG counts a file target (a file's later chunks gain nothing)."""
    gold = {int(f) for f in group.files[group.y > 0].tolist()}
    if not gold:
        return 0.0
    seen: set[int] = set()
    dcg = 0.0
    for rank, row in enumerate(order[:k].tolist(), start=1):
        fid = int(group.files[row])
        if fid in gold and fid not in seen:
            seen.add(fid)
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


def group_scores(group: QueryGroup, order: np.ndarray) -> tuple[float, float, float]:
    """(NDCG@10, file reciprocal rank, file Acc@1) of one group's candidates in `order`."""
    y = ranking_labels(group).astype(np.float64)
    gains = 2.0**y - 1.0
    ideal = _dcg(np.sort(gains)[::-1][:10])
    ndcg = _dcg(gains[order][:10]) / ideal if ideal > 0 else 0.0
    seen: set[int] = set()
    rr = 0.0
    for row in order.tolist():
        fid = int(group.files[row])
        if fid in seen:
            continue
        seen.add(fid)
        if group.y[row] > 0:
            rr = 1.0 / len(seen)
            break
    return ndcg, rr, float(rr == 1.0)


def ordered(
    group: QueryGroup, score: Callable[[np.ndarray], np.ndarray] | None, penalty: float = 0.0
) -> np.ndarray:
    """The group's rows in fused order (`score` None) or by `score` (ties keep the fused
    order), each file's later chunks lowered by `penalty` (see `learned.spread`)."""
    n = group.y.size
    if score is None:
        return np.arange(n)
    scores = score(group.x.astype(np.float64))
    scores = scores + spread(scores, group.files, penalty)
    return np.lexsort((np.arange(n), -scores))


def measure(
    groups: Sequence[QueryGroup],
    score: Callable[[np.ndarray], np.ndarray] | None = None,
    penalty: float = 0.0,
) -> Scores:
    """The groups' mean scores in fused order (`score` None) or ordered by `score`."""
    ndcg, rr, acc, files = [], [], [], []
    for group in groups:
        order = ordered(group, score, penalty)
        a, b, c = group_scores(group, order)
        ndcg.append(a)
        rr.append(b)
        acc.append(c)
        files.append(file_ndcg(group, order))
    mean = statistics.fmean if groups else (lambda _: 0.0)
    return Scores(
        ndcg10=mean(ndcg),
        mrr=mean(rr),
        acc1=mean(acc),
        groups=len(groups),
        answerable=sum(1 for g in groups if g.useful),
        file_ndcg10=mean(files),
    )


PENALTIES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def choose_penalty(
    groups: Sequence[QueryGroup], score: Callable[[np.ndarray], np.ndarray]
) -> float:
    """The file penalty (`learned.spread`) with the best files-once NDCG@10 on `groups` (the
    early-stopping repositories: never the held-back ones); the smallest on a tie."""
    best, chosen = -1.0, 0.0
    for penalty in PENALTIES:
        value = measure(groups, score, penalty).file_ndcg10
        if value > best + 1e-9:
            best, chosen = value, penalty
    return chosen


def paired_gain(
    groups: Sequence[QueryGroup],
    score: Callable[[np.ndarray], np.ndarray],
    metric: str = "mrr",
    penalty: float = 0.0,
) -> list[float]:
    """Per group, the model's score minus the fused order's (`metric`: mrr, ndcg@10 or
    file_ndcg@10)."""
    out = []
    for group in groups:
        fused, model = ordered(group, None), ordered(group, score, penalty)
        if metric == "file_ndcg@10":
            out.append(file_ndcg(group, model) - file_ndcg(group, fused))
            continue
        pick = 1 if metric == "mrr" else 0
        out.append(group_scores(group, model)[pick] - group_scores(group, fused)[pick])
    return out


@dataclass
class Fitted:
    """A fitted model: its LightGBM text, trees, the rounds kept and the feature gains."""

    text: str
    trees: TreeEnsemble
    rounds: int
    importance: dict[str, float] = field(default_factory=dict)


def _dataset(lgb: Any, groups: Sequence[QueryGroup], reference: Any = None) -> Any:
    useful = [g for g in groups if g.useful]
    x = np.concatenate([g.x for g in useful]).astype(np.float64)
    y = np.concatenate([ranking_labels(g) for g in useful]).astype(np.float64)
    return lgb.Dataset(
        x, y, group=[g.y.size for g in useful], feature_name=list(FEATURE_NAMES),
        reference=reference, free_raw_data=False,
    )  # fmt: skip


def fit(
    train: Sequence[QueryGroup],
    valid: Sequence[QueryGroup] = (),
    *,
    seed: int = 0,
    rounds: int = ROUNDS,
    threads: int = 2,
    params: dict[str, Any] | None = None,
) -> Fitted:
    """Fit a lambdarank model on `train` (groups with no answer among their candidates teach
    nothing and are left out), stopping early on `valid` when given."""
    try:
        import lightgbm as lgb
    except ImportError as exc:  # declared in pyproject; say what to do if it went missing
        raise RuntimeError(
            "fitting the learned reranker needs LightGBM: pip install lightgbm"
        ) from exc
    if not any(g.useful for g in train):
        raise ValueError("no training query has an answer among its candidates")
    chosen = {**PARAMS, **(params or {}), "seed": seed, "num_threads": threads}
    data = _dataset(lgb, train)
    callbacks: list[Callable[..., Any]] = []
    valid_sets = []
    if any(g.useful for g in valid):
        valid_sets = [_dataset(lgb, valid, reference=data)]
        callbacks.append(lgb.early_stopping(EARLY_STOP, verbose=False))
    booster = lgb.train(
        chosen, data, num_boost_round=rounds, valid_sets=valid_sets, callbacks=callbacks
    )
    best = booster.best_iteration or booster.current_iteration()
    text = booster.model_to_string(num_iteration=best)
    gains = booster.feature_importance(importance_type="gain", iteration=best)
    total = float(np.sum(gains)) or 1.0
    importance = {
        name: round(float(g) / total, 4)
        for name, g in sorted(zip(FEATURE_NAMES, gains, strict=True), key=lambda p: -p[1])
    }
    return Fitted(text, TreeEnsemble.from_text(text), int(best), importance)


def bootstrap(diffs: Sequence[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile interval of the mean of paired differences."""
    if not diffs:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    values = np.asarray(diffs, dtype=np.float64)
    means = values[rng.integers(0, values.size, (resamples, values.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
