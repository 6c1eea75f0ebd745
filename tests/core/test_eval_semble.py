"""semble's annotation format end to end: a tiny git repository cloned bare under two names,
three rows scoped by benchmark_root, scored by semble's chunk-level NDCG@10."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from coderag_tui.core.eval.datasets import EvalRow, load_dataset
from coderag_tui.core.eval.evaluation import EvalReport, Grid, run_eval
from coderag_tui.core.eval.metrics import SEMBLE_NDCG
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import WordHashEmbedder
from tests.fixtures.semble import make_semble_fixture


@pytest.fixture
def semble_set(tmp_path: Path) -> tuple[Path, list[EvalRow]]:
    repos, dataset = make_semble_fixture(tmp_path)
    return repos, load_dataset(dataset)


def _run(
    rows: list[EvalRow],
    repos: Path,
    tmp_path: Path,
    grid: Grid,
    *,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = 1000,
    embedder: WordHashEmbedder | None = None,
) -> EvalReport:
    settings = Settings(repo=tmp_path, index_dir=tmp_path / "index")
    return run_eval(
        rows,
        settings,
        grid,
        repos_dir=repos,
        tree_cache=tmp_path / "trees",
        baseline=baseline,
        resamples=resamples,
        embedder=embedder,
    )


def test_out_of_scope_files_never_appear(
    semble_set: tuple[Path, list[EvalRow]], tmp_path: Path
) -> None:
    repos, rows = semble_set
    report = _run(rows, repos, tmp_path, Grid(chunkings=("lines:8",)))
    assert {r.id for r in report.instances} == {"t-0", "t-1", "o-0"}
    for result in report.instances:
        assert all(p.startswith("src/") for p in result.top_files), result.top_files
    # the same question over the whole repository ranks the out-of-scope notes first
    unscoped = [replace(rows[0], benchmark_root=None)]
    whole = _run(unscoped, repos, tmp_path, Grid(chunkings=("lines:8",)))
    assert whole.instances[0].top_files[0] in {"docs/retry.md", "tests/test_retry.py"}
    assert report.notes == ()  # every target lies in scope


def test_semble_ndcg_by_hand_is_the_mean_over_repositories(
    semble_set: tuple[Path, list[EvalRow]], tmp_path: Path
) -> None:
    repos, rows = semble_set
    report = _run(rows, repos, tmp_path, Grid(chunkings=("file",)))
    by_id = {r.id: r for r in report.instances}
    # t-0: relevant retry.py first, secondary http.py second -> perfect
    assert by_id["t-0"].target_ranks == (1, 2)
    assert by_id["t-0"].ndcg10_semble == pytest.approx(1.0)
    assert by_id["t-1"].ndcg10_semble == pytest.approx(1.0)
    # o-0: pool.py (not a target) first, relevant http.py second, secondary config.py absent:
    # DCG 1/log2(3), IDCG over two targets 1 + 1/log2(3)
    assert by_id["o-0"].target_ranks == (2, None)
    o_0 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert by_id["o-0"].ndcg10_semble == pytest.approx(o_0)  # 0.387
    semble = report.summaries[0].semble
    assert semble is not None
    assert semble.by_repo["acme/tiny"].ndcg10 == pytest.approx(1.0)
    assert semble.by_repo["acme/other"].ndcg10 == pytest.approx(o_0)
    # overall: the plain mean over the two repositories, not over the three queries
    assert semble.overall.ndcg10 == pytest.approx((1.0 + o_0) / 2)  # 0.693, not 0.796
    assert (semble.overall.queries, semble.overall.repos) == (3, 2)
    assert set(semble.by_category) == {"semantic", "symbol", "architecture"}
    assert semble.by_category["architecture"].ndcg10 == pytest.approx(o_0)
    assert semble.by_language["python"].ndcg10 == pytest.approx((1.0 + o_0) / 2)
    data = report.to_json()
    assert data["configs"][0]["semble"][SEMBLE_NDCG] == pytest.approx((1 + o_0) / 2, abs=1e-4)
    assert data["configs"][0]["semble"]["by_category"]["symbol"][SEMBLE_NDCG] == 1.0
    assert report.csv_rows()[0][SEMBLE_NDCG] == pytest.approx((1 + o_0) / 2, abs=1e-4)
    # file-level metrics stay on gold_files alone: o-0's gold file is second
    assert by_id["o-0"].scores["mrr"] == pytest.approx(0.5)


def test_secondary_targets_count(semble_set: tuple[Path, list[EvalRow]], tmp_path: Path) -> None:
    repos, rows = semble_set
    without = [replace(rows[0], secondary_files=())]
    only_secondary = [replace(rows[0], gold_files=("src/pkg/pool.py",))]
    grid = Grid(chunkings=("file",))
    assert _run(without, repos, tmp_path, grid).instances[0].ndcg10_semble == 1.0
    # pool.py (now the relevant file) is not retrieved; the secondary http.py at rank 2 counts
    found = _run(only_secondary, repos, tmp_path, grid).instances[0]
    assert found.target_ranks == (None, 2)
    assert found.ndcg10_semble == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_a_line_range_target_needs_an_overlapping_chunk(
    semble_set: tuple[Path, list[EvalRow]], tmp_path: Path
) -> None:
    repos, rows = semble_set
    grid = Grid(chunkings=("lines:8",))  # config.py: lines 1-8, 9-16, 17-24
    hit = _run([rows[1]], repos, tmp_path, grid).instances[0]
    assert hit.ndcg10_semble == 1.0
    elsewhere = replace(
        rows[1], gold_chunks=(replace(rows[1].gold_chunks[0], start_line=1, end_line=8),)
    )
    missed = _run([elsewhere], repos, tmp_path, grid).instances[0]
    assert missed.scores["acc@1"] == 1.0  # the file is first ...
    assert missed.ndcg10_semble == 0.0  # ... but no top chunk covers lines 1-8


def test_configurations_are_compared_by_a_paired_bootstrap(
    semble_set: tuple[Path, list[EvalRow]], tmp_path: Path
) -> None:
    repos, rows = semble_set
    grid = Grid(chunkings=("file", "lines:8"), tokenizers=("default", "split+path"))
    report = _run(rows, repos, tmp_path, grid, resamples=2000)
    assert [c.candidate for c in report.comparisons] == [
        ("bm25", "file", "split+path"),
        ("bm25", "lines:8", "default"),
        ("bm25", "lines:8", "split+path"),
    ]
    first = report.comparisons[0]
    assert first.baseline == ("bm25", "file", "default")
    assert first.metric == SEMBLE_NDCG
    assert first.interval.n == 3 and first.interval.resamples == 2000
    # file chunking scores the same under both tokenizers here: no difference at all
    assert (first.interval.low, first.interval.mean_diff, first.interval.high) == (0.0, 0.0, 0.0)
    for c in report.comparisons:
        assert c.interval.low <= c.interval.mean_diff <= c.interval.high
        assert c.interval.mean_diff == pytest.approx(c.candidate_score - c.baseline_score)
    assert len(report.to_json()["comparisons"]) == 3
    chosen = _run(
        rows, repos, tmp_path, grid, resamples=500, baseline=("bm25", "lines:8", "default")
    )
    assert {c.baseline for c in chosen.comparisons} == {("bm25", "lines:8", "default")}
    assert len(chosen.comparisons) == 3


def test_a_mode_without_chunks_is_compared_on_mrr(
    semble_set: tuple[Path, list[EvalRow]], tmp_path: Path
) -> None:
    from coderag_tui.cli.eval_cmd import markdown_table

    repos, rows = semble_set
    grid = Grid(modes=("bm25", "dense", "fused-files"), chunkings=("file",))
    report = _run(rows, repos, tmp_path, grid, embedder=WordHashEmbedder())
    metrics = {c.candidate[0]: c.metric for c in report.comparisons}
    assert metrics == {"dense": SEMBLE_NDCG, "fused-files": "mrr"}  # fused-files ranks files
    assert [s.semble is not None for s in report.summaries] == [True, True, False]
    markdown = markdown_table(report)
    assert "| configuration | metric | queries |" in markdown
    assert "| fused-files default | MRR (files) | 3 |" in markdown


def test_a_swe_bench_row_keeps_todays_shape(tmp_path: Path) -> None:
    path = tmp_path / "swe.jsonl"
    path.write_text(
        json.dumps(
            {
                "instance_id": "x-1",
                "problem_statement": "it breaks",
                "gold_files": ["a.py"],
                "repo": "o/x",
                "base_commit": "abc",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    row = load_dataset(path)[0]
    assert not row.semble and row.benchmark_root is None and row.secondary_files == ()
