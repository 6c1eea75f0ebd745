"""`coderag tune` end to end: the held-back table and the one-line verdict, JSON, and the
sentence for a repository without enough history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main
from tests.core.test_learn import _repo

pytestmark = pytest.mark.timeout(300)


def test_tune_prints_the_held_back_scores_and_its_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path / "shop", commits=30)
    index = tmp_path / "index"
    assert main(["tune", str(repo), "--index-dir", str(index), "--commits", "30"]) == 0
    out = capsys.readouterr().out
    assert "held back: the latest 6 commits" in out
    assert "fused (hand-weighted signals)" in out and "learned, tuned here" in out
    assert "coderag tune: the tuned model " in out
    assert main(["tune", str(repo), "--index-dir", str(index), "--commits", "30", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["held_back_commits"] == 6 and report["pairs"] == 30
    assert report["verdict"].startswith("the tuned model ")
    assert Path(report["model"]).is_file()


def test_tune_without_enough_history_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path / "shop", commits=4)
    assert main(["tune", str(repo), "--index-dir", str(tmp_path / "index")]) != 0
    err = capsys.readouterr().err
    assert "make usable questions" in err and "--scan" in err


def test_tune_outside_git_names_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["tune", str(plain), "--index-dir", str(tmp_path / "index")]) != 0
    assert "is not a git repository" in capsys.readouterr().err
