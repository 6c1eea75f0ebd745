"""Learning from history: which commits become questions, their answers, the folder that
follows the history, the query groups, and `coderag tune` on a small repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.learn.build import FILE, HUNK, OTHER, build_groups, load_groups, save_groups
from coderag_tui.core.learn.fit import file_ndcg, ranking_labels
from coderag_tui.core.learn.history import (
    FollowedTree,
    HistoryOptions,
    clean_message,
    history_pairs,
    hunks,
    is_gold_path,
    queries_of,
    says_where,
)
from coderag_tui.core.rank.learned import FEATURE_NAMES
from coderag_tui.settings import Settings

pytestmark = pytest.mark.timeout(120)


def _git(root: Path, *args: str, author: str = "Dev <dev@example.com>") -> str:
    name, email = author[:-1].split(" <")
    done = subprocess.run(
        ["git", "-c", f"user.name={name}", "-c", f"user.email={email}", "-C", str(root), *args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def _commit(root: Path, files: dict[str, str], message: str, **kw: str) -> str:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message, **kw)
    return _git(root, "rev-parse", "HEAD").strip()


def _module(name: str, n: int, body: str = "pass") -> str:
    return "\n".join(f"def {name}_{i}(value):\n    {body}\n" for i in range(n))


def _repo(root: Path, commits: int = 0) -> Path:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _commit(
        root,
        {
            "src/payment.py": _module("charge", 40),
            "src/cart.py": _module("cart_total", 40),
            "src/router.py": _module("route", 40),
            "tests/test_payment.py": _module("test_charge", 5),
            "README.md": "# shop\n",
        },
        "Start the shop",
    )
    for n in range(commits):
        target = ("src/payment.py", "src/cart.py", "src/router.py")[n % 3]
        name = {"src/payment.py": "charge", "src/cart.py": "cart_total"}.get(target, "route")
        text = (
            (root / target)
            .read_text()
            .replace(
                f"def {name}_{n % 40}(value):\n    pass",
                f"def {name}_{n % 40}(value):\n    return {n}",
            )
        )
        _commit(root, {target: text}, f"Make {name} {n % 40} return a number for case {n}")
    return root


def test_messages_become_queries_without_trailers_and_pr_numbers() -> None:
    message = (
        "Retry the charge on gateway timeouts (#123)\n\nThe gateway times out under load, so "
        "the charge is retried three times before failing.\n\nSigned-off-by: A <a@b.c>\n"
        "Co-authored-by: B <b@c.d>"
    )
    subject, body = clean_message(message)
    assert subject == "Retry the charge on gateway timeouts"
    assert "Signed-off-by" not in body and "Co-authored-by" not in body
    assert queries_of(message) == (subject, f"{subject}\n\n{body}")
    assert queries_of("Fix it") == ()  # too short to say where
    assert queries_of("Retry the charge\n\ntoo short body") == ("Retry the charge",)


@pytest.mark.parametrize(
    ("subject", "kept"),
    [
        ("Retry the charge on gateway timeouts", True),
        ("Bump lodash from 4.17.20 to 4.17.21", False),
        ("Release 2.3.0", False),
        ("Merge pull request #12 from x/y", False),
        ('Revert "Retry the charge"', False),
        ("chore(deps): update actions", False),
        ("Fix typo in the cart", False),
        ("Run rustfmt over the parser", False),
        ("fix: keep the session cookie on redirects", True),
    ],
)
def test_subjects_that_name_no_place_in_the_code_are_left_out(subject: str, kept: bool) -> None:
    assert says_where(subject) is kept


@pytest.mark.parametrize(
    ("path", "gold"),
    [
        ("src/payment.py", True),
        ("lib/rack/request.rb", True),
        ("tests/test_payment.py", False),
        ("pkg/server_test.go", False),
        ("docs/conf.py", False),
        ("examples/basic.go", False),
        ("vendor/lib/x.js", False),
        ("build.gradle.kts", False),
        ("scripts/release.sh", False),
        ("README.md", False),
    ],
)
def test_answers_are_source_files_that_say_where_code_lives(path: str, gold: bool) -> None:
    assert is_gold_path(path) is gold


def test_pairs_from_history_skip_bots_and_big_commits_and_mark_the_hunks(tmp_path: Path) -> None:
    root = _repo(tmp_path / "shop", commits=6)
    cart = (root / "src/cart.py").read_text() + "\nX = 1\n"
    bot = "dependabot[bot] <bot@github.com>"
    _commit(root, {"src/cart.py": cart}, "Add a constant the cart reads later", author=bot)
    big = {f"src/extra_{i}.py": "x = 1\n" for i in range(9)}
    _commit(root, big, "Add many small modules at once for later")
    pairs = history_pairs(root, HistoryOptions(limit=50))
    assert len(pairs) == 6  # the bot's and the big commit are left out, the first has no parent
    times = [p.time for p in pairs]
    assert times == sorted(times)
    first = pairs[0]
    assert first.gold_files == ("src/payment.py",)
    assert first.queries == ("Make charge 0 return a number for case 0",)
    [(_, spans)] = first.gold
    assert spans == ((2, 2),)  # `pass` of charge_0 became `return 0`
    assert hunks(root, first.parent, first.sha, "src/payment.py") == spans
    drawn = history_pairs(root, HistoryOptions(limit=3, seed=1))
    assert len(drawn) == 3 and drawn == history_pairs(root, HistoryOptions(limit=3, seed=1))


def test_the_followed_folder_holds_each_commits_tree(tmp_path: Path) -> None:
    root = _repo(tmp_path / "shop", commits=3)
    log = _git(root, "log", "--format=%H").split()
    oldest, newest = log[-1], log[0]
    _git(root, "rm", "-q", "README.md")
    _git(root, "commit", "-q", "-m", "Drop the readme")
    gone = _git(root, "rev-parse", "HEAD").strip()
    tree = FollowedTree(root, tmp_path / "follow")
    tree.checkout(oldest)
    assert (tmp_path / "follow" / "src/payment.py").read_text() == _module("charge", 40)
    tree.checkout(newest)
    assert "return 0" in (tmp_path / "follow" / "src/payment.py").read_text()
    tree.checkout(gone)
    assert not (tmp_path / "follow" / "README.md").exists()
    tree.checkout(oldest)
    assert (tmp_path / "follow" / "README.md").exists()
    assert "return 0" not in (tmp_path / "follow" / "src/payment.py").read_text()


def test_groups_label_hunks_files_and_the_rest_and_round_trip(tmp_path: Path) -> None:
    root = _repo(tmp_path / "shop", commits=4)
    pairs = history_pairs(root, HistoryOptions(limit=10))
    settings = Settings(
        repo=tmp_path / "follow", index_dir=tmp_path / "index", embed_backend="none",
        chunking="lines", chunk_lines=16,
    )  # fmt: skip
    groups = build_groups("shop", root, pairs, settings)
    assert len(groups) == len(pairs)
    for group in groups:
        assert group.x.shape == (group.y.size, len(FEATURE_NAMES))
        assert set(group.y.tolist()) <= {HUNK, FILE, OTHER}
        assert (group.y == HUNK).sum() >= 1 and not group.dense
    saved = tmp_path / "groups.npz"
    save_groups(saved, groups, {"repo": "shop"})
    again, meta = load_groups(saved)
    assert meta["repo"] == "shop"
    assert [g.sha for g in again] == [g.sha for g in groups]
    np.testing.assert_array_equal(again[0].x, groups[0].x)


def test_a_file_counts_once() -> None:
    from coderag_tui.core.learn.build import QueryGroup

    y = np.array([1, 1, 2, 0, 1], dtype=np.int8)
    files = np.array([7, 7, 7, 3, 4], dtype=np.int32)
    group = QueryGroup(
        repo="r",
        sha="s",
        variant=0,
        dense=False,
        x=np.zeros((5, len(FEATURE_NAMES))),
        y=y,
        files=files,
        gold_files=2,
    )
    assert ranking_labels(group).tolist() == [1, 0, 2, 0, 1]
    assert file_ndcg(group, np.array([3, 0, 1, 2, 4])) < file_ndcg(group, np.arange(5))
    assert file_ndcg(group, np.array([0, 4, 1, 2, 3])) == pytest.approx(1.0)


@pytest.mark.timeout(300)
def test_tune_fits_the_history_and_keeps_the_model_beside_the_index(tmp_path: Path) -> None:
    pytest.importorskip("lightgbm")
    from coderag_tui.core.learn.tune import TuneError, TuneOptions, tune
    from coderag_tui.core.rank.rerank import resolve_reranker

    root = _repo(tmp_path / "shop", commits=36)
    settings = Settings(
        repo=root, index_dir=tmp_path / "index", embed_backend="none", chunk_lines=16,
        rerank_backend="learned",
    )  # fmt: skip
    report = tune(settings, TuneOptions(pairs=36, threads=1))
    assert report.pairs == 36 and report.held_back_commits == 8
    assert report.model_path == settings.tuned_model_path and report.model_path.is_file()
    meta = json.loads(report.model_path.with_suffix(".json").read_text())
    assert meta["beats_shipped"] is report.beats_shipped
    assert report.line().startswith("the tuned model ")
    assert ("searches here use it" in report.line()) is report.beats_shipped
    chosen = resolve_reranker(settings).reranker
    assert chosen is not None
    assert chosen.model.source == ("tuned" if report.beats_shipped else "shipped")  # type: ignore[union-attr]
    assert not (settings.tuned_model_path.with_suffix(".work")).exists()
    small = _repo(tmp_path / "small", commits=3)
    with pytest.raises(TuneError, match="tune a repository with more history"):
        tune(settings.with_(repo=small), TuneOptions(pairs=10))
