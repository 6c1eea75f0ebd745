"""`coderag bench` end to end on the tiny repository (numbers are printed, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main


def test_bench_json_with_rank_bm25_comparison(
    tiny_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "bench",
            str(tiny_repo),
            "--compare",
            "rank-bm25",
            "--queries",
            "5",
            "--chunking",
            "lines:8,file",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["chunking"] for r in out] == ["lines:8:0", "file"]
    first = out[0]
    assert first["index"]["files"] >= 6 and first["index"]["chunks"] > first["index"]["files"]
    assert {"walk", "bm25 build"} <= set(first["index"]["stage_seconds"])
    stages = {s["stage"] for s in first["latency"]}
    assert {"tokenize", "bm25", "total"} <= stages
    assert first["queries"] == 5
    assert set(first["compare_rank_bm25"]) >= {"ours_p50_ms", "rank_bm25_p50_ms", "speedup_p50"}


def test_bench_table_and_queries_file(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("charge a card\n\nreserve stock\n", encoding="utf-8")
    code = main(["bench", str(tiny_repo), "--queries-file", str(queries), "--chunking", "file"])
    out = capsys.readouterr().out
    assert code == 0
    assert "query latency over 2 queries" in out
    assert "p50 ms / M chars" in out


def test_bench_missing_queries_file_is_one_sentence(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", str(tiny_repo), "--queries-file", str(tmp_path / "none.txt")])
    assert code == 2
    assert "cannot read" in capsys.readouterr().err
