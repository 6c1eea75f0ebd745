"""`coderag search`: JSON for scripts, the rich table, --from FILE:LINE, and one-sentence errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main


def search(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["search", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def common(tiny_repo: Path, index_dir: Path) -> list[str]:
    return [str(tiny_repo), "--index-dir", str(index_dir), "--chunk-lines", "8"]


def test_json_has_every_ranking_hits_with_ranks_timings_and_notes(
    capsys: pytest.CaptureFixture[str], common: list[str]
) -> None:
    code, out, err = search(
        capsys, "refund transaction_id", *common, "--json", "--no-dense", "--k", "3"
    )
    assert code == 0
    data = json.loads(out)
    assert data["query"] == "refund transaction_id"
    assert set(data["rankings"]) == {"bm25", "dense", "fused", "rerank"}
    bm25 = data["rankings"]["bm25"]["hits"]
    assert 1 <= len(bm25) <= 3
    assert bm25[0]["path"] == "shop/payment.py"
    assert bm25[0]["start_line"] <= 20 <= bm25[0]["end_line"]  # `def refund` is line 20
    assert bm25[0]["ranks"] == {"fused": 1}
    assert data["rankings"]["dense"]["available"] is False
    assert [t["stage"] for t in data["timings"]] == ["tokenize", "bm25", "fusion", "signals"]
    assert any(n.startswith("fused = BM25") for n in data["notes"])
    assert "dense is off" in err


def test_missing_model_says_one_sentence_and_continues_with_bm25(
    capsys: pytest.CaptureFixture[str], common: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERAG_EMBED_BACKEND", "none")
    code, out, err = search(capsys, "charge card", *common, "--k", "3")
    assert code == 0
    assert err.strip().splitlines() == [
        "coderag: fused = BM25 + signals (dense is off: embed_backend is none — "
        "set --embed-backend auto to enable it.)"
    ]
    assert "shop/payment.py:1-8" in out  # one path per line when piped
    assert "BM25" in out and "fused" in out and "stage timings" in out


def test_files_view_lists_each_file_once(
    capsys: pytest.CaptureFixture[str], common: list[str]
) -> None:
    code, out, _ = search(
        capsys, "price times quantity", *common, "--no-dense", "--files", "--json"
    )
    assert code == 0
    files = [f["path"] for f in json.loads(out)["rankings"]["bm25"]["files"]]
    assert files and len(files) == len(set(files))
    assert files[0] == "shop/cart.py"


def test_from_location_queries_with_the_lines_before(
    capsys: pytest.CaptureFixture[str], common: list[str], tiny_repo: Path
) -> None:
    lines = (tiny_repo / "shop/cart.py").read_text().splitlines()
    code, out, err = search(
        capsys, "--from", "shop/cart.py:30", "--query-lines", "5", *common, "--no-dense", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["query"] == "\n".join(lines[24:29])
    assert lines[29] not in data["query"]
    # the chunks holding lines 25-30 would trivially rank first, so they are left out
    assert "left out 1 chunk(s) of shop/cart.py" in err  # 8-line chunks: lines 25-32
    hits = data["rankings"]["bm25"]["hits"]
    assert hits
    assert all((h["path"], h["start_line"]) != ("shop/cart.py", 25) for h in hits)


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ([], ["--from", "shop/cart.py"], "--from: 'shop/cart.py' is not FILE:LINE"),
        ([], ["--from", "shop/nope.py:3"], "does not exist"),
        ([], ["--from", "shop/cart.py:1"], "no lines before"),
        (["cart"], ["--k", "0"], "--k: must be ≥ 1, got 0."),
        (["  "], [], "give a QUERY"),
    ],
)
def test_user_errors_exit_2_with_one_sentence(
    capsys: pytest.CaptureFixture[str],
    common: list[str],
    before: list[str],
    after: list[str],
    message: str,
) -> None:
    code, out, err = search(capsys, *before, *common, *after, "--no-dense")
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_query_beside_from_is_asked_with_the_code(
    capsys: pytest.CaptureFixture[str], common: list[str]
) -> None:
    # `coderag search QUERY --from FILE:LINE PATH`: QUERY is a query, not the repository.
    repo = common[0]
    code, out, err = search(
        capsys, "refund", "--from", "shop/cart.py:9", repo, *common[1:], "--no-dense", "--json"
    )
    assert code == 0, err
    query = json.loads(out)["query"]
    assert query.startswith("refund\n") and len(query.splitlines()) > 1


def test_bad_path_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = search(capsys, "cart", str(tmp_path / "missing"), "--no-dense")
    assert code == 2
    assert "does not exist" in err


def test_tokenizer_flags_reach_bm25(capsys: pytest.CaptureFixture[str], common: list[str]) -> None:
    # "declined" only occurs inside the identifier PaymentDeclined: found when it is split
    _, out, _ = search(
        capsys, "declined", *common, "--no-dense", "--json", "--no-split-identifiers"
    )
    assert json.loads(out)["rankings"]["bm25"]["hits"] == []
    _, out, _ = search(capsys, "declined", *common, "--no-dense", "--json")  # on by default
    assert json.loads(out)["rankings"]["bm25"]["hits"][0]["path"] == "shop/payment.py"
    # "inventory" is in the text of one 8-line chunk, and in the path of all three
    for flags, expected in ((["--no-path-in-text"], 1), ([], 3)):
        _, out, _ = search(
            capsys, "inventory", *common, "--no-dense", "--json", "--mode", "bm25", *flags
        )
        data = json.loads(out)
        assert data["shown"] == ["bm25"]
        hits = data["rankings"]["bm25"]["hits"]
        assert [h["path"] for h in hits] == ["shop/inventory.py"] * expected


def test_include_and_exclude_limit_every_ranking_to_the_scope(
    capsys: pytest.CaptureFixture[str], common: list[str]
) -> None:
    args = ("cart items total apply_discount", *common, "--json", "--no-dense", "--k", "10")
    code, out, _ = search(capsys, *args)
    wide = {h["path"] for r in json.loads(out)["rankings"].values() for h in r.get("hits", [])}
    assert "tests/test_cart.py" in wide
    code, out, err = search(capsys, *args, "--include", "shop,web/*", "--exclude", "payment.py")
    assert code == 0
    data = json.loads(out)
    paths = {h["path"] for r in data["rankings"].values() for h in r.get("hits", [])}
    assert paths and paths <= {
        "shop/cart.py",
        "shop/inventory.py",
        "shop/__init__.py",
        "web/app.js",
    }
    assert data["scope"] == {"include": ["shop", "web/*"], "exclude": ["payment.py"]}
    assert "ranked files in scope only (only shop, web/*; payment.py left out)" in err


@pytest.mark.parametrize("pattern", ["../elsewhere", "/etc/*.conf"])
def test_a_scope_leading_outside_the_repository_is_one_sentence(
    capsys: pytest.CaptureFixture[str], common: list[str], pattern: str
) -> None:
    code, out, err = search(capsys, "cart", *common, "--no-dense", "--include", pattern)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "inside" in err and "Traceback" not in err


def test_the_reranked_list_says_which_reranker_made_it(
    capsys: pytest.CaptureFixture[str], common: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERAG_RERANK_BACKEND", "learned")
    code, out, err = search(capsys, "charge card", *common, "--no-dense", "--rerank", "--k", "3")
    assert code == 0
    assert "(learned" in out and "cross-encoder" not in out  # the column's title
    assert "reranked by the learned model; the prompt follows the fused list" in err


def test_a_piped_search_prints_one_plain_line_per_hit_however_long_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    deep = repo / "services" / "payments_gateway_integration" / "retry_policies_and_backoff"
    deep.mkdir(parents=True)
    long_name = "exponential_backoff_for_card_charges_after_gateway_timeouts.py"
    (deep / long_name).write_text("def retry_charge(card):\n    return charge(card)\n")
    (repo / "short.py").write_text("def charge(card):\n    return card\n")
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal's width must not reach a pipe
    code, out, _ = search(
        capsys, "retry charge", str(repo), "--index-dir", str(tmp_path / "ix"), "--no-dense"
    )
    assert code == 0
    path = f"{deep.relative_to(repo)}/{long_name}:1-2"
    hits = [line for line in out.splitlines() if path in line]
    assert len(hits) == 2  # once under BM25, once under fused, each whole on its line
    assert hits[0].split() == ["1", path, hits[0].split()[-1]]
    assert not set(out) & set("│┃━─┏┗")  # no box drawing: lines for grep, cut and diff


def test_a_dash_reads_the_query_from_stdin_with_its_lines(
    capsys: pytest.CaptureFixture[str], common: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`coderag search - < issue.md`: the issue is asked whole, its lines kept."""
    import io
    import sys

    issue = "Refund fails\n\nCalling `refund` with the transaction_id raises.\n"

    class _Stdin:
        buffer = io.BytesIO(issue.encode())

    monkeypatch.setattr(sys, "stdin", _Stdin())
    code, out, _ = search(capsys, "-", *common, "--json", "--no-dense")
    assert code == 0
    data = json.loads(out)
    assert data["query"] == issue.strip()
    assert data["rankings"]["bm25"]["hits"][0]["path"] == "shop/payment.py"
