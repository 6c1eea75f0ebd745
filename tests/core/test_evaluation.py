"""Evaluation runs on tiny git repositories: the right commit, the grid, the candidates."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from coderag_tui.core.eval.datasets import CandidateFilter, EvalRow
from coderag_tui.core.eval.evaluation import ANY_TOKENIZER, Grid, run_eval
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import WordHashEmbedder

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]

PAYMENT_V1 = '''"""Payment: charge a card through the gateway."""


def charge_card(gateway, card_token, amount_cents):
    """Charge a card and return the transaction id."""
    return gateway.charge(card_token, amount_cents)


def refund(gateway, transaction_id):
    """Refund a whole transaction."""
    gateway.refund(transaction_id)
'''

CART = '''"""Shopping cart: items, totals and discounts."""


def total_cents(items):
    """Sum of price times quantity over all items."""
    return sum(price * quantity for price, quantity in items)


def apply_discount(total, percent):
    """Reduce a total by a percentage, never below zero."""
    return max(0, total - total * percent // 100)
'''

# Added later: mentions refunds far more often, so it would win if it leaked into the tree.
REFUNDS = '''"""Refunds: refund a card transaction, partial refund, refund status."""


def refund_card_transaction(gateway, transaction_id):
    """Refund a card transaction (refund the whole transaction)."""
    return gateway.refund(transaction_id)


def partial_refund(gateway, transaction_id, amount):
    """Refund part of a card transaction."""
    return gateway.refund(transaction_id, amount)
'''

TEST_PAYMENT = '''from shop.payment import refund


def test_refund_card_transaction_refunds():
    """refund card transaction refund refund"""
    refund(None, "t")
'''


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [*GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose first commit has payment + cart and whose second adds refunds."""
    repo = tmp_path / "shop"
    repo.mkdir()
    _git(repo, "init", "-q")
    first = _commit(
        repo,
        "initial",
        {
            "shop/payment.py": PAYMENT_V1,
            "shop/cart.py": CART,
            "tests/test_payment.py": TEST_PAYMENT,
        },
    )
    _commit(repo, "add refunds", {"shop/refunds.py": REFUNDS})
    return repo, first


QUERY = "refund a card transaction"


def _settings(repo: Path, tmp_path: Path) -> Settings:
    return Settings(repo=repo, index_dir=tmp_path / "index")


def test_row_is_evaluated_at_its_base_commit(shop: tuple[Path, str], tmp_path: Path) -> None:
    repo, first = shop
    rows = [
        EvalRow("at-base", QUERY, ("shop/payment.py",), base_commit=first),
        EvalRow("working-tree", QUERY, ("shop/payment.py",)),
    ]
    report = run_eval(
        rows, _settings(repo, tmp_path), Grid(chunkings=("file",)), tree_cache=tmp_path / "trees"
    )
    by_id = {r.id: r for r in report.instances}
    at_base = by_id["at-base"]
    # refunds.py did not exist at the base commit: the gold file is first and nothing leaks in
    assert "shop/refunds.py" not in at_base.top_files
    assert at_base.gold_rank == 1
    assert at_base.scores["acc@1"] == 1.0
    # the same question on the working tree ranks the later file first
    assert by_id["working-tree"].top_files[0] == "shop/refunds.py"
    assert by_id["working-tree"].scores["acc@1"] == 0.0
    summary = report.summaries[0]
    assert (summary.mode, summary.chunking, summary.n) == ("bm25", "file", 2)
    assert summary.scores["acc@1"] == 0.5
    assert summary.scores["mrr"] == pytest.approx((1.0 + 0.5) / 2)
    assert set(summary.stage_ms) == {"tokenize", "bm25"}


def test_grid_gives_one_summary_per_configuration(shop: tuple[Path, str], tmp_path: Path) -> None:
    repo, first = shop
    rows = [EvalRow("r", QUERY, ("shop/payment.py",), base_commit=first)]
    grid = Grid(chunkings=("lines:4", "file"), tokenizers=("default", "split+path"))
    report = run_eval(rows, _settings(repo, tmp_path), grid, tree_cache=tmp_path / "trees")
    assert [(s.mode, s.chunking, s.tokenizer) for s in report.summaries] == [
        ("bm25", "lines:4", "default"),
        ("bm25", "lines:4", "split+path"),
        ("bm25", "file", "default"),
        ("bm25", "file", "split+path"),
    ]
    assert report.to_json()["configs"][2]["files"]["acc@1"] == 1.0  # file, default
    assert {row["chunking"] for row in report.csv_rows()} == {"lines:4", "file"}


def test_candidate_filter_keeps_tests_out(shop: tuple[Path, str], tmp_path: Path) -> None:
    repo, first = shop
    rows = [EvalRow("r", QUERY, ("tests/test_payment.py",), base_commit=first)]
    grid = Grid(chunkings=("file",))
    plain = run_eval(rows, _settings(repo, tmp_path), grid, tree_cache=tmp_path / "t1")
    assert "tests/test_payment.py" in plain.instances[0].top_files
    filtered = run_eval(
        rows,
        _settings(repo, tmp_path),
        Grid(chunkings=("file",), candidates=CandidateFilter(("*.py",), exclude_tests=True)),
        tree_cache=tmp_path / "t2",
    )
    assert all(not p.startswith("tests/") for p in filtered.instances[0].top_files)
    assert filtered.instances[0].gold_rank is None
    assert any("tests/test_payment.py is not among the candidates" in n for n in filtered.notes)


def test_missing_repository_and_commit_are_skipped_with_reasons(
    shop: tuple[Path, str], tmp_path: Path
) -> None:
    repo, first = shop
    repos = tmp_path / "repos"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(repo), str(repos / "acme+shop" / "repo")], check=True
    )
    rows = [
        EvalRow("ok", QUERY, ("shop/payment.py",), repo="acme/shop", base_commit=first),
        EvalRow("gone", QUERY, ("x.py",), repo="acme/absent", base_commit=first),
        EvalRow("bad-commit", QUERY, ("x.py",), repo="acme/shop", base_commit="deadbeef"),
    ]
    report = run_eval(
        rows,
        _settings(repo, tmp_path),
        Grid(chunkings=("file",)),
        repos_dir=repos,
        tree_cache=tmp_path / "trees",
    )
    assert [r.id for r in report.instances] == ["ok"]
    reasons = dict(report.skipped)
    assert "acme/absent is not under" in reasons["gone"]
    assert "commit deadbeef is not in" in reasons["bad-commit"]


def test_dense_and_fused_share_one_run_and_dense_is_listed_once(
    shop: tuple[Path, str], tmp_path: Path
) -> None:
    repo, first = shop
    rows = [EvalRow("r", QUERY, ("shop/payment.py",), base_commit=first)]
    grid = Grid(
        modes=("bm25", "dense", "fused", "fused-files"),
        chunkings=("file",),
        tokenizers=("default", "split"),
    )
    settings = _settings(repo, tmp_path).with_(signals=False)  # fused = RRF alone
    report = run_eval(
        rows, settings, grid, tree_cache=tmp_path / "trees", embedder=WordHashEmbedder()
    )
    assert [(s.mode, s.tokenizer) for s in report.summaries] == [
        ("bm25", "default"),
        ("bm25", "split"),
        ("dense", ANY_TOKENIZER),
        ("fused", "default"),
        ("fused", "split"),
        ("fused-files", "default"),
        ("fused-files", "split"),
    ]
    # with one chunk per file, fusing file rankings and fusing chunk rankings agree
    by_mode = {(r.mode, r.tokenizer): r.top_files for r in report.instances}
    assert by_mode[("fused-files", "default")] == by_mode[("fused", "default")]
    dense = next(s for s in report.summaries if s.mode == "dense")
    assert set(dense.stage_ms) == {"embed query", "vector search"}
    assert settings.embed_cache_path.is_file()  # vectors went to the shared cache


def test_a_stripe_cap_is_named_in_the_modes_that_use_dense(
    shop: tuple[Path, str], tmp_path: Path
) -> None:
    repo, first = shop
    rows = [EvalRow("r", QUERY, ("shop/payment.py",), base_commit=first)]
    grid = Grid(modes=("bm25", "dense", "fused"), chunkings=("file",))
    settings = _settings(repo, tmp_path).with_(dense_stripes=0)
    report = run_eval(
        rows, settings, grid, tree_cache=tmp_path / "trees", embedder=WordHashEmbedder()
    )
    assert [s.mode for s in report.summaries] == [
        "bm25",
        "dense (all stripes)",
        "fused (all stripes)",
    ]
    assert {r["mode"] for r in report.csv_rows()} == {s.mode for s in report.summaries}
