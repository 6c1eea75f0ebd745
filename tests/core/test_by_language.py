"""Scores per language of a dev set's rows, each with its bootstrap interval."""

from __future__ import annotations

import pytest

from coderag_tui.core.eval.budget import BudgetScore
from coderag_tui.core.eval.by_language import ALL_LANGUAGES, bootstrap_mean, by_language
from coderag_tui.core.eval.evaluation import InstanceResult
from coderag_tui.core.eval.metrics import file_matches, score_matches


def result(i: int, language: str | None, rank: int | None, mode: str = "fused") -> InstanceResult:
    ranked = [f"f{r}.go" for r in range(1, 11)]
    gold = [f"f{rank}.go"] if rank else ["absent.go"]
    return InstanceResult(
        id=f"row-{i}",
        repo="o/r",
        mode=mode,
        chunking="lines:64",
        tokenizer="default",
        scores=score_matches(file_matches(ranked, gold), 1),
        chunk_scores=None,
        gold_rank=rank,
        top_files=(),
        stage_ms={},
        search_ms=1.0,
        prepare_s=0.0,
        language=language,
        budgets={2000: BudgetScore(float(rank == 1), 0.5 if rank == 1 else 0.0, 1900, 3, 3)},
    )


def test_each_language_gets_its_means_and_an_interval_around_them() -> None:
    rows = [result(i, "go", 1 if i < 2 else None) for i in range(4)]
    rows += [result(10 + i, "rust", 3) for i in range(4)]
    scores = {s.language: s for s in by_language(rows, resamples=500)}
    assert list(scores) == [ALL_LANGUAGES, "go", "rust"]
    go, rust, every = scores["go"], scores["rust"], scores[ALL_LANGUAGES]
    assert (go.n, rust.n, every.n) == (4, 4, 8)
    assert go.scores["acc@1"].mean == pytest.approx(0.5)
    assert go.scores["acc@1"].low < 0.5 < go.scores["acc@1"].high  # four rows: a wide interval
    assert rust.scores["acc@1"].mean == 0.0 and rust.scores["acc@5"].mean == 1.0
    assert rust.scores["mrr"].low == rust.scores["mrr"].high == pytest.approx(1 / 3)  # all equal
    assert go.file_recall[2000].mean == pytest.approx(0.5)
    assert go.line_recall[2000].mean == pytest.approx(0.25)
    assert every.scores["acc@5"].mean == pytest.approx(0.75)


def test_one_language_or_none_gives_no_table() -> None:
    assert by_language([result(i, "go", 1) for i in range(3)]) == ()
    assert by_language([result(i, None, 1) for i in range(3)]) == ()


def test_each_configuration_is_split_apart() -> None:
    rows = [
        result(i, lang, 1, mode) for i, lang in enumerate(["go", "c"]) for mode in ("bm25", "fused")
    ]
    scores = by_language(rows, resamples=100)
    assert [(s.config[0], s.language) for s in scores] == [
        ("bm25", ALL_LANGUAGES), ("bm25", "c"), ("bm25", "go"),
        ("fused", ALL_LANGUAGES), ("fused", "c"), ("fused", "go"),
    ]  # fmt: skip


def test_the_interval_of_a_mean_holds_it_and_narrows_with_more_rows() -> None:
    few = bootstrap_mean([0.0, 1.0] * 3, resamples=2000)
    many = bootstrap_mean([0.0, 1.0] * 100, resamples=2000)
    assert few.low < few.mean == many.mean == 0.5 < few.high
    assert many.high - many.low < few.high - few.low


def test_the_eval_report_shows_a_table_per_language_with_intervals() -> None:
    from coderag_tui.cli.eval_cmd import markdown_table
    from coderag_tui.core.eval.evaluation import Grid, finished

    rows = [result(i, "go", 1 if i % 2 else 7) for i in range(6)]
    rows += [result(10 + i, "java", 1) for i in range(6)]
    report = finished(rows, Grid(modes=("fused",)), [], [], 0.0, cancelled=False,
                      baseline=None, resamples=200)  # fmt: skip
    text = markdown_table(report)
    assert "per language" in text
    go_row = next(line for line in text.splitlines() if "| go |" in line)
    assert "| 6 | 50.0 [" in go_row  # Acc@1 and its interval
    assert "files@2k" in text and "lines@2k" in text
    assert report.to_json()["by_language"][0]["language"] == ALL_LANGUAGES
