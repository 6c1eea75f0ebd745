"""Each configuration's scores per language of the rows, with bootstrap intervals.

A dev set in several languages (issue text in C, Go, Java, Rust, …) hides a weak language in
its mean; this splits the file-level scores (Acc@1/5/10, MRR) and the prompt's recall at a
budget by the rows' `language`, each score with a percentile interval from resampling that
language's rows, so twelve rows are not read as more than they are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from coderag_tui.core.eval.budget import BudgetScore

LANGUAGE_METRICS = ("acc@1", "acc@5", "acc@10", "mrr")


class Scored(Protocol):
    """What a table per language reads of one row's result (`evaluation.InstanceResult`)."""

    @property
    def config(self) -> tuple[str, str, str]: ...
    @property
    def language(self) -> str | None: ...
    @property
    def scores(self) -> Mapping[str, float]: ...
    @property
    def budgets(self) -> Mapping[int, BudgetScore] | None: ...


ALL_LANGUAGES = "all"  # the row of every language together


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean over rows and its bootstrap percentile interval."""

    mean: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {"mean": round(self.mean, 4), "low": round(self.low, 4), "high": round(self.high, 4)}


@dataclass(frozen=True, slots=True)
class LanguageScores:
    """One configuration's scores over the rows of one language (or `ALL_LANGUAGES`)."""

    config: tuple[str, str, str]
    language: str
    n: int
    scores: Mapping[str, Estimate]  # LANGUAGE_METRICS, file level
    file_recall: Mapping[int, Estimate]  # per budget: gold files with code in the prompt
    line_recall: Mapping[int, Estimate]  # per budget, over the rows that have gold lines

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.config[0],
            "chunking": self.config[1],
            "tokenizer": self.config[2],
            "language": self.language,
            "n": self.n,
            "files": {name: e.to_json() for name, e in self.scores.items()},
            "file_recall": {str(b): e.to_json() for b, e in self.file_recall.items()},
            "line_recall": {str(b): e.to_json() for b, e in self.line_recall.items()},
        }


def bootstrap_mean(
    values: Sequence[float], *, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> Estimate:
    """The mean of `values` with a percentile interval from resampling them with replacement
    (seeded, so a rerun agrees)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("a bootstrap needs at least one value")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Estimate(float(data.mean()), float(low), float(high))


def by_language(
    results: Sequence[Scored], *, resamples: int = 10_000, seed: int = 0
) -> tuple[LanguageScores, ...]:
    """Per configuration, its scores over all rows and over each language's rows; empty
    unless the rows carry two languages or more (one language: the summary says it all)."""
    languages = {r.language for r in results if r.language}
    if len(languages) < 2:
        return ()
    groups: dict[tuple[tuple[str, str, str], str], list[Scored]] = defaultdict(list)
    for r in results:
        groups[(r.config, ALL_LANGUAGES)].append(r)
        groups[(r.config, r.language or "(none)")].append(r)
    configs = list(dict.fromkeys(r.config for r in results))
    order = [ALL_LANGUAGES, *sorted({lang for _, lang in groups} - {ALL_LANGUAGES})]
    out: list[LanguageScores] = []
    for config in configs:
        for language in order:
            rows = groups.get((config, language))
            if rows:
                out.append(_scores(config, language, rows, resamples, seed))
    return tuple(out)


def _scores(
    config: tuple[str, str, str],
    language: str,
    rows: Sequence[Scored],
    resamples: int,
    seed: int,
) -> LanguageScores:
    def estimate(values: list[float]) -> Estimate:
        return bootstrap_mean(values, resamples=resamples, seed=seed)

    budgets = sorted({b for r in rows for b in r.budgets or {}})
    files: dict[int, Estimate] = {}
    lines: dict[int, Estimate] = {}
    for b in budgets:
        at = [r.budgets[b] for r in rows if r.budgets and b in r.budgets]
        files[b] = estimate([s.file_recall for s in at])
        with_lines = [s.line_recall for s in at if s.line_recall is not None]
        if with_lines:
            lines[b] = estimate(with_lines)
    return LanguageScores(
        config=config,
        language=language,
        n=len(rows),
        scores={m: estimate([r.scores[m] for r in rows]) for m in LANGUAGE_METRICS},
        file_recall=files,
        line_recall=lines,
    )
