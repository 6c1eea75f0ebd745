"""`coderag eval` end to end on the tiny repository: JSON, CSV, git history, bad input, and
semble's annotation format with its per-repository tables and bootstrap comparisons."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from coderag_tui.cli import main
from tests.fixtures.completion_repo import make_repo
from tests.fixtures.semble import make_semble_fixture

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _dataset(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_json_bm25_runs_end_to_end(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = _head(tiny_repo)
    data = _dataset(
        tmp_path / "d.jsonl",
        [
            {
                "id": "pay",
                "query": "charge a card and retry when the gateway times out",
                "gold_files": ["shop/payment.py"],
                "base_commit": head,
            },
            {
                "instance_id": "stock",
                "problem_statement": "reserve items out of stock for an order",
                "gold_files": ["shop/inventory.py"],
                "gold_chunks": [{"path": "shop/inventory.py", "start_line": 15, "end_line": 20}],
            },
        ],
    )
    code = main(
        [
            "eval",
            str(data),
            "--repo",
            str(tiny_repo),
            "--modes",
            "bm25",
            "--chunking",
            "lines:8,file",
            "--tokenizer",
            "default,split",
            "--index-dir",
            str(tmp_path / "index"),
            "--tree-cache",
            str(tmp_path / "trees"),
            "--json",
            "--csv",
            str(tmp_path / "out.csv"),
            "--markdown",
            str(tmp_path / "out.md"),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    configs = {(c["mode"], c["chunking"], c["tokenizer"]): c for c in out["configs"]}
    assert set(configs) == {
        ("bm25", ch, tok) for ch in ("lines:8", "file") for tok in ("default", "split")
    }
    file_default = configs[("bm25", "file", "default")]
    assert file_default["n"] == 2
    assert file_default["files"]["acc@1"] == 1.0  # both questions find their file first
    assert file_default["files"]["mrr"] == 1.0
    # chunk-level metrics appear because one row has gold line ranges
    assert configs[("bm25", "lines:8", "default")]["chunks"]["acc@10"] == 1.0
    assert {i["id"] for i in out["instances"]} == {"pay", "stock"}
    assert set(file_default["median_ms"]) == {"tokenize", "bm25"}
    with (tmp_path / "out.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and float(rows[0]["acc@1"]) >= 0.5
    markdown = (tmp_path / "out.md").read_text().splitlines()
    assert markdown[0].startswith("| mode | chunking | tokenizer | n | acc@1 |")
    assert "| bm25 | file | default | 2 | 100.0 |" in "\n".join(markdown)


def test_eval_table_from_git_history(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cart = tiny_repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n\ndef clear_cart(cart):\n    cart.items.clear()\n")
    subprocess.run(
        [*GIT, "-C", str(tiny_repo), "commit", "-qam", "Let a shopping cart be cleared"], check=True
    )
    saved = tmp_path / "history.jsonl"
    code = main(
        [
            "eval",
            "--from-git-history",
            "5",
            "--repo",
            str(tiny_repo),
            "--modes",
            "bm25",
            "--chunking",
            "file",
            "--index-dir",
            str(tmp_path / "index"),
            "--tree-cache",
            str(tmp_path / "trees"),
            "--save-dataset",
            str(saved),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "file-level retrieval" in out and "bm25" in out
    row = json.loads(saved.read_text())
    assert row["gold_files"] == ["shop/cart.py"]
    assert row["query"] == "Let a shopping cart be cleared"
    # the commit appended after the file's last line (34): the lines around the insertion
    assert row["changed_lines"] == [{"path": "shop/cart.py", "start_line": 34, "end_line": 35}]
    assert "gold lines shown in the prompt" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a DATASET.jsonl, --from-git-history N or --completion N"),
        (["missing.jsonl"], "cannot read the dataset"),
        (["DATA", "--modes", "bm25,sparkle"], "unknown mode 'sparkle'"),
        (["DATA", "--chunking", "lines:0"], "bad chunking"),
        (["DATA", "--repos", "nowhere"], "nowhere is not a folder"),
    ],
)
def test_bad_input_is_one_sentence(
    tiny_repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    data = _dataset(tmp_path / "d.jsonl", [{"id": "1", "query": "q", "gold_files": ["a.py"]}])
    argv = [
        str(data) if a == "DATA" else str(tmp_path / a) if a.endswith(".jsonl") else a for a in args
    ]
    if "--repos" in argv:
        argv[argv.index("--repos") + 1] = str(tmp_path / "nowhere")
    code = main(["eval", *argv, "--repo", str(tiny_repo), "--index-dir", str(tmp_path / "i")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1


def test_eval_semble_format_reports_ndcg_per_repository_category_language(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos, dataset = make_semble_fixture(tmp_path)
    common = [
        "eval",
        str(dataset),
        "--repos",
        str(repos),
        "--modes",
        "bm25",
        "--index-dir",
        str(tmp_path / "index"),
        "--tree-cache",
        str(tmp_path / "trees"),
    ]
    code = main(
        [
            *common,
            "--chunking",
            "file,lines:8",
            "--tokenizer",
            "split+path",
            "--json",
            "--markdown",
            str(tmp_path / "out.md"),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    file_config = out["configs"][0]
    assert file_config["chunking"] == "file"
    semble = file_config["semble"]
    assert semble["ndcg10_semble"] == pytest.approx(0.6934, abs=1e-4)  # mean of 1.0 and 0.387
    assert set(semble["by_repo"]) == {"acme/tiny", "acme/other"}
    assert set(semble["by_category"]) == {"semantic", "symbol", "architecture"}
    assert semble["by_language"]["python"]["repos"] == 2
    assert all(
        not f.startswith(("docs/", "tests/")) for i in out["instances"] for f in i["top_files"]
    )
    [comparison] = out["comparisons"]
    assert comparison["metric"] == "ndcg10_semble"
    assert comparison["baseline"]["chunking"] == "file"
    assert comparison["low"] <= comparison["mean_diff"] <= comparison["high"]
    markdown = (tmp_path / "out.md").read_text()
    assert "| ndcg10_semble |" not in markdown and "NDCG@10 (semble) |" in markdown
    assert "**NDCG@10 (semble) per category**" in markdown
    assert "**paired bootstrap vs file:" in markdown

    code = main(
        [
            *common,
            "--chunking",
            "file,lines:8",
            "--tokenizer",
            "split+path",
            "--baseline",
            "lines:8",
            "--report",
            str(tmp_path / "report.html"),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    # a dataset with categories: Acc@5 against chunk size per category, with its intervals
    assert "file Acc@5 per category</figcaption>" in page
    assert (
        "bm25 split+path · architecture at lines:8: " in page
    )  # a point's title: value, interval, n
    assert "Definition packed" not in page  # no completion rows, no packing figure
    for title in (
        "NDCG@10 (semble) per repository",
        "NDCG@10 (semble) per category",
        "NDCG@10 (semble) per language",
        "paired bootstrap vs lines:8",
    ):
        assert title in text
    assert "acme/other" in text and "architecture" in text


def test_a_baseline_outside_the_grid_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos, dataset = make_semble_fixture(tmp_path)
    code = main(
        [
            "eval",
            str(dataset),
            "--repos",
            str(repos),
            "--modes",
            "bm25",
            "--chunking",
            "file",
            "--baseline",
            "fused",
            "--index-dir",
            str(tmp_path / "i"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "'fused' is not a mode, chunking or tokenizer of this run" in err
    assert err.count("\n") == 1


def test_a_swe_bench_grid_compares_on_mrr_and_has_no_semble_scores(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(
        tmp_path / "d.jsonl",
        [
            {
                "instance_id": "pay",
                "problem_statement": "charge a card, retry on gateway timeout",
                "gold_files": ["shop/payment.py"],
            },
        ],
    )
    code = main(
        [
            "eval",
            str(data),
            "--repo",
            str(tiny_repo),
            "--modes",
            "bm25",
            "--chunking",
            "lines:8,file",
            "--index-dir",
            str(tmp_path / "index"),
            "--tree-cache",
            str(tmp_path / "trees"),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert all("semble" not in c for c in out["configs"])
    assert all("ndcg10_semble" not in i for i in out["instances"])
    assert [c["metric"] for c in out["comparisons"]] == ["mrr"]


def test_eval_completion_prints_the_task_the_table_and_the_packing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo")
    argv = [
        "eval",
        "--completion",
        "5",
        "--seed",
        "3",
        "--repo",
        str(repo),
        "--modes",
        "bm25",
        "--chunking",
        "lines:8,lines:16",
        "--index-dir",
        str(tmp_path / "index"),
    ]
    code = main([*argv, "--report", str(tmp_path / "report.html"), "--plot"])
    out = capsys.readouterr().out
    assert code == 0
    assert "completion task on repo: 3 rows (seed 3) of 3 target lines in 2 files" in out
    assert "sample row app/main.py:15: uses type Circle, defined in geometry/shapes.py:6" in out
    assert "definition packed in the prompt within each budget" in out
    assert "Definition packed in the prompt, by budget: bm25" in out  # the terminal plot
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 4
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["gold"] for r in data["completion"]["rows"]] == [
        "geometry/shapes.py",
        "geometry/shapes.py",
        "web/widgets.js",
    ]
    packed = {(c["chunking"]): c["packed"] for c in data["configs"]}
    assert packed["lines:8"]["16000"] == 1.0
    # and recall at a budget, from the prompt `coderag prompt` packs: the defining line
    budgets = {(c["chunking"]): c["budgets"] for c in data["configs"]}
    assert budgets["lines:8"]["16000"]["file_recall"] == 1.0
    assert budgets["lines:8"]["16000"]["line_recall"] == 1.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--completion", "0"], "--completion needs N >= 1."),
        (["--completion", "2", "--from-git-history", "2"], "one of the three"),
    ],
)
def test_bad_completion_input_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    code = main(["eval", *extra, "--repo", str(repo), "--index-dir", str(tmp_path / "i")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1


def test_a_repository_without_uses_across_files_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "alone"
    repo.mkdir()
    (repo / "one.py").write_text("def alone():\n    return alone()\n", encoding="utf-8")
    code = main(["eval", "--completion", "3", "--repo", str(repo), "--index-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "uses a class or function defined in another of its files" in err


def test_eval_reports_recall_at_each_budget_beside_reading_whole_files(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fix rewrites the retry sleep in charge_card (line 16 of shop/payment.py).
    patch = (
        "diff --git a/shop/payment.py b/shop/payment.py\n--- a/shop/payment.py\n"
        "+++ b/shop/payment.py\n@@ -16 +16 @@\n-            time.sleep(2 ** attempt)\n"
        "+            time.sleep(min(30, 2 ** attempt))\n"
    )
    data = _dataset(
        tmp_path / "d.jsonl",
        [
            {
                "instance_id": "retry",
                "problem_statement": "charge card retry sleeps too long when the gateway times out",
                "gold_files": ["shop/payment.py"],
                "patch": patch,
            }
        ],
    )
    common = ["eval", str(data), "--repo", str(tiny_repo), "--modes", "bm25,fused"]
    common += ["--chunking", "lines:8", "--index-dir", str(tmp_path / "index")]
    common += ["--embed-backend", "none"]  # fused = BM25 + signals: no model to load
    report = tmp_path / "report.html"
    outputs = ["--markdown", str(tmp_path / "o.md"), "--report", str(report)]
    code = main([*common, "--budgets", "150,2k", "--json", *outputs])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    bm25 = next(c for c in out["configs"] if c["mode"] == "bm25")
    assert set(bm25["budgets"]) == {"150", "2000"}
    at_2k = bm25["budgets"]["2000"]
    # the whole repository is far below 2k tokens: the prompt holds the fix's file and line
    assert at_2k["file_recall"] == 1.0 and at_2k["line_recall"] == 1.0
    assert 0 < at_2k["tokens"] <= 2000 and at_2k["files"] >= 1
    assert bm25["budgets"]["150"]["tokens"] <= 150
    whole = out["read_whole_files"]
    assert whole["budgets"]["2000"]["file_recall"] == 1.0
    assert whole["median_tokens_to_gold"] > 0
    markdown = (tmp_path / "o.md").read_text(encoding="utf-8")
    assert "gold files with code in the prompt, by budget" in markdown
    assert "gold lines shown in the prompt" in markdown
    assert "read whole files (BM25 order)" in markdown
    page = report.read_text(encoding="utf-8")  # recall against tokens, the baseline dashed
    assert "Gold files in the prompt, by budget" in page and 'stroke-dasharray="6 4"' in page

    assert main([*common, "--budgets", "none", "--json"]) == 0
    quiet = json.loads(capsys.readouterr().out)
    assert all("budgets" not in c for c in quiet["configs"])
    assert main([*common, "--budgets", "lots"]) != 0
    assert "--budgets: budget 'lots' is not a number of tokens" in capsys.readouterr().err
