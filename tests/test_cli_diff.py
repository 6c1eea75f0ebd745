"""`--diff [REF]`: the work tree's change is the query; its own chunks rank nowhere; the prompt
holds the change as a section within the budget."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.core.index.changes import working_change
from coderag_tui.core.records import LineSpan
from coderag_tui.settings import Settings
from tests.fixtures.secrets_repo import AWS_SECRET

CHECKOUT = '''"""Checkout: price the cart, take the discount code, charge the card."""

from shop.cart import Cart, apply_discount
from shop.payment import charge_card


def checkout(cart: Cart, gateway, card_token: str, percent: int) -> str:
    """Charge the cart's total after the discount and return the transaction id."""
    due = apply_discount(cart.total_cents(), percent)
    return charge_card(gateway, card_token, due)
'''
OTHER = '''"""Reports: sales per day for the shop's owner."""


def daily_totals(orders):
    """Sum the orders of each day."""
    days = {}
    for order in orders:
        days[order.day] = days.get(order.day, 0) + order.total
    return days
'''


def git(repo: Path, *argv: str) -> str:
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    done = subprocess.run(["git", *env, "-C", str(repo), *argv], check=True, capture_output=True)
    return done.stdout.decode()


@pytest.fixture
def shop(tiny_repo: Path) -> Path:
    (tiny_repo / "shop" / "checkout.py").write_text(CHECKOUT)
    (tiny_repo / "shop" / "reports.py").write_text(OTHER)
    git(tiny_repo, "add", "-A")
    git(tiny_repo, "commit", "-q", "-m", "checkout and reports")
    return tiny_repo


def edit_discount(repo: Path) -> None:
    """An unstaged edit inside apply_discount (shop/cart.py lines 30-34)."""
    cart = repo / "shop" / "cart.py"
    text = cart.read_text()
    old = "    return max(0, total_cents - total_cents * percent // 100)\n"
    new = (
        "    discounted = total_cents - total_cents * percent // 100\n"
        "    return max(0, round(discounted))\n"
    )
    assert old in text
    cart.write_text(text.replace(old, new))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unstaged_edit_finds_its_caller_in_another_file(
    shop: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_discount(shop)
    common = ["--index-dir", str(index_dir), "--no-dense", "--chunk-lines", "12", "--json"]
    code, out, err = run(capsys, "search", "--diff", str(shop), *common)
    assert code == 0, err
    data = json.loads(out)
    fused = [h["path"] for h in data["rankings"]["fused"]["hits"][:3]]
    assert "shop/checkout.py" in fused
    for ranking in data["rankings"].values():
        for hit in ranking.get("hits", []):  # the changed lines' own chunks rank nowhere
            changed = hit["path"] == "shop/cart.py" and hit["start_line"] <= 35
            assert not (changed and hit["end_line"] >= 30), hit
    assert "query: the change, 1 file (+2 −1) against HEAD" in err
    assert "that hold the changed lines" in err


def test_the_change_reads_staged_unstaged_and_new_files_against_the_branch_point(
    shop: Path, index_dir: Path
) -> None:
    settings = Settings(repo=shop, index_dir=index_dir)
    git(shop, "checkout", "-q", "-b", "feature")
    (shop / "shop" / "reports.py").write_text(OTHER + "\n\ndef weekly():\n    return 7\n")
    git(shop, "commit", "-q", "-am", "weekly")
    edit_discount(shop)
    git(shop, "add", "shop/cart.py")  # staged
    (shop / "shop" / "new.py").write_text("def fresh():\n    return 1\n")  # untracked
    (shop / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n")  # never indexed
    mine = working_change(settings)
    assert [f.path for f in mine.files] == ["shop/cart.py", "shop/new.py"]
    assert mine.files[0].spans == (LineSpan("shop/cart.py", 34, 35),)
    assert mine.files[1].spans == (LineSpan("shop/new.py", 1, 2),)
    assert (".env", "a key or credentials file") in [(p, w.split(":")[0]) for p, w in mine.left_out]
    branch = working_change(settings, "master" if "master" in git(shop, "branch") else "main")
    assert [f.path for f in branch.files] == ["shop/cart.py", "shop/reports.py", "shop/new.py"]
    assert AWS_SECRET not in mine.text + branch.text


def test_the_prompt_holds_the_change_as_a_section_within_the_budget(
    shop: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_discount(shop)
    cart = shop / "shop" / "cart.py"
    cart.write_text(cart.read_text() + f'\nAWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"\n')
    common = [str(shop), "--index-dir", str(index_dir), "--no-dense", "--json"]
    code, out, err = run(capsys, "prompt", "--diff", *common, "--budget", "1500")
    assert code == 0, err
    data = json.loads(out)
    prompt = data["prompt"]
    assert data["tokens"] <= 1500
    assert "## The change\n\n```diff\n" in prompt and "+    discounted = " in prompt
    assert prompt.index("## Relevant context") < prompt.index("## The change")
    assert prompt.index("## The change") < prompt.index("## Task")
    assert "Review this change" in prompt
    assert AWS_SECRET not in prompt and "<redacted:" in prompt
    assert "the change is in the prompt: " in err and "the change holds what looks like" in err
    code, out, err = run(capsys, "prompt", "--diff", *common, "--budget", "300")
    assert code == 0, err
    assert json.loads(out)["tokens"] <= 300
    assert "more lines of the change left out" in json.loads(out)["prompt"]
    assert "(cut to fit half the budget)" in err


@pytest.mark.parametrize(
    ("setup", "ref", "said"),
    [
        ("clean", "HEAD", "nothing changed against HEAD"),
        ("edit", "no-such-branch", "'no-such-branch' is not a commit of this repository"),
        ("plain", "HEAD", "is not a git work tree"),
    ],
)
def test_a_diff_that_cannot_be_read_is_one_sentence(
    shop: Path,
    index_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    ref: str,
    said: str,
) -> None:
    repo = shop
    if setup == "edit":
        edit_discount(shop)
    if setup == "plain":
        repo = tmp_path / "plain"
        repo.mkdir()
        (repo / "a.py").write_text("x = 1\n")
    code, out, err = run(capsys, "search", str(repo), "--diff", ref, "--index-dir", str(index_dir))
    assert code == 2 and out == ""
    assert said in err and err.count("\n") == 1
