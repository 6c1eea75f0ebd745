"""`coderag eval` over the seed paper's grid on the tiny repository: the line and bpe
splitters, the IoU scorer, and the structure-aware lists on a code-to-code row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main


def _dataset(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval(tiny_repo: Path, tmp_path: Path, data: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            str(data),
            "--repo",
            str(tiny_repo),
            "--chunking",
            "lines:8",
            "--index-dir",
            str(tmp_path / "index"),
            "--tree-cache",
            str(tmp_path / "trees"),
            "--embed-backend",
            "none",
            *extra,
        ]
    )


QUESTION: dict[str, object] = {
    "id": "pay",
    "query": "charge a card and retry when the gateway times out",
    "gold_files": ["shop/payment.py"],
}


def test_eval_crosses_splitters_and_scorers(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "d.jsonl", [QUESTION])
    code = _eval(
        tiny_repo,
        tmp_path,
        data,
        "--modes",
        "bm25",
        "--tokenizer",
        "default,line,bpe",
        "--scorer",
        "bm25,iou",
        "--json",
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    configs = {c["tokenizer"]: c for c in out["configs"]}
    assert list(configs) == ["default", "default/iou", "line", "line/iou", "bpe", "bpe/iou"]
    # words and BPE pieces find the payment file first; no line of the question is a code line
    for name in ("default", "default/iou", "bpe", "bpe/iou"):
        assert configs[name]["files"]["acc@1"] == 1.0, name
    assert configs["line"]["files"]["acc@10"] == 0.0
    top = {i["tokenizer"]: i["top_files"] for i in out["instances"]}
    assert top["line"] == []


def test_eval_table_names_each_lexical_list(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "d.jsonl", [QUESTION])
    code = _eval(
        tiny_repo, tmp_path, data, "--modes", "bm25", "--tokenizer", "bpe", "--scorer", "iou,bm25"
    )
    out = capsys.readouterr().out
    assert code == 0
    rows = [line for line in out.splitlines() if "lines:8" in line]
    assert [r.split("│")[3].strip() for r in rows] == ["bpe/iou", "bpe"]


def test_an_unknown_scorer_is_one_sentence(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "d.jsonl", [QUESTION])
    code = _eval(tiny_repo, tmp_path, data, "--scorer", "bm25,tfidf")
    err = capsys.readouterr().err
    assert code != 0
    assert "unknown scorer 'tfidf': use bm25, iou." in err
    assert "Traceback" not in err


def test_structure_lists_on_a_code_row_and_a_note_on_a_question(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a file that imports the payment module, queried from the lines about the cart's total:
    # BM25 finds the cart, the import list puts the imported payment module first
    (tiny_repo / "shop" / "checkout.py").write_text(
        "from shop.payment import charge_card\n\n\n"
        "def place_order(cart, gateway, token):\n"
        "    total = cart.total_cents()\n"
        "    items = cart.items\n"
        "    return charge_card(gateway, token, total)\n",
        encoding="utf-8",
    )
    code_row: dict[str, object] = {
        "id": "complete-checkout",
        "query": "def place_order(cart, gateway, token):\n    total = cart.total_cents()",
        "gold_files": ["shop/payment.py"],
        "origin": {"path": "shop/checkout.py", "start_line": 4, "end_line": 5},
    }
    data = _dataset(tmp_path / "d.jsonl", [code_row, QUESTION])
    code = _eval(
        tiny_repo,
        tmp_path,
        data,
        "--chunking",
        "lines:4",
        "--modes",
        "bm25,path-distance,imports",
        "--json",
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    by_mode = {(i["id"], i["mode"]): i for i in out["instances"]}
    assert by_mode[("complete-checkout", "bm25")]["top_files"][0] == "shop/cart.py"
    assert by_mode[("complete-checkout", "imports")]["top_files"][0] == "shop/payment.py"
    assert by_mode[("complete-checkout", "imports")]["gold_rank"] == 1
    # the package's files (BM25's order among them, the unranked one after), then the root's
    # README one folder step up, then the lexical rest; never the query's own file
    near = by_mode[("complete-checkout", "path-distance")]["top_files"]
    assert near == [
        "shop/cart.py",
        "shop/payment.py",
        "shop/inventory.py",
        "shop/__init__.py",
        "README.md",
        "tests/test_cart.py",
        "web/app.js",
    ]
    # the question has no origin file: no structure-aware list, and the notes say why
    assert ("pay", "imports") not in by_mode and ("pay", "bm25") in by_mode
    assert any(
        n.startswith("imports is unavailable: it needs a query with an origin file")
        for n in out["notes"]
    )
    assert any(n.startswith("imports: ") and "files read" in n for n in out["notes"])


def test_a_server_index_refuses_the_local_only_axes_before_connecting(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset(tmp_path / "d.jsonl", [QUESTION])
    # port 9 (discard) on the loopback: the refusal comes before any connection is tried
    code = _eval(
        tiny_repo,
        tmp_path,
        data,
        "--backend",
        "qdrant",
        "--backend-url",
        "http://127.0.0.1:9",
        "--scorer",
        "iou",
    )
    err = capsys.readouterr().err
    assert code != 0
    assert "the iou scorer are built over a local index" in err
    assert "run them with --backend local." in err
