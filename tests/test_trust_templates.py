"""A template makes a prompt of bounded size (issue "Trust IV", item 3; case 6).

What an attacker did against main before the fix: a repository's template whose block part
holds `{code}` ten thousand times (60 KB). Blocks were priced with empty code and rendered in
full afterwards: span packing took 90 s and more, chunk packing 25 s and 1.27 GB. A
placeholder now appears once in each part, and a template whose own text leaves no room for
code within the budget is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.cli_run import one_sentence, run_cli
from tests.fixtures.tiny_repo import make_tiny_repo

REPEATED = "{context}\n{task}\n=== chunk ===\n" + "{code}\n" * 10_000


@pytest.mark.parametrize("packing", ["spans", "chunks"])
def test_a_repository_template_repeating_a_placeholder_is_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], packing: str
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / "prompt.tpl").write_text(REPEATED)
    (repo / ".coderag.toml").write_text(f'template = "prompt.tpl"\npacking = "{packing}"\n')
    code, out, err = run_cli(capsys, "prompt", "how is the cart total made?", str(repo),
                             "--no-dense", "--index-dir", str(tmp_path / "ix"))  # fmt: skip
    assert code == 0, err
    assert "## Task" in out and "def " in out  # the markdown template, with code
    assert out.count("def ") < 100
    line = one_sentence(err, "ignored template")
    assert "its template cannot be used: it repeats {code}" in line


def test_your_own_template_repeating_a_placeholder_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    mine = tmp_path / "mine.tpl"
    mine.write_text("{context}\n{task}\n{task}\n")
    ix = str(tmp_path / "ix")
    code, _, err = run_cli(
        capsys, "prompt", "cart total", str(repo), "--no-dense", "--template", str(mine),
        "--index-dir", ix,
    )  # fmt: skip
    assert code == 2
    one_sentence(err, "repeats {task}", "each placeholder may appear once")


def test_a_template_leaving_no_room_for_code_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    mine = tmp_path / "wordy.tpl"
    mine.write_text("{context}\n{task}\n=== chunk ===\n" + "frame words " * 2000 + "{code}\n")
    ix = str(tmp_path / "ix")
    code, _, err = run_cli(
        capsys, "prompt", "cart total", str(repo), "--no-dense", "--template", str(mine),
        "--budget", "1000", "--index-dir", ix,
    )  # fmt: skip
    assert code == 2
    one_sentence(err, "with one empty block, more than the budget of 1,000")
