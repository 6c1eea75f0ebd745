"""The suite runs on a machine of its own: a CLI run in a test writes into the test's HOME,
never the developer's (issue 44, item 2). Before, a run of the suite left
`~/.local/share/coderag/prompts/shop-last-prompt.md` and indexes in the real home."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest

from coderag_tui.locations import user_cache_dir, user_data_dir
from tests.conftest import HOME_VARIABLES, REAL_HOME
from tests.fixtures.cli_run import run_cli
from tests.fixtures.tiny_repo import make_tiny_repo


def coderag_files(folder: Path, stem: str) -> list[Path]:
    """What coderag keeps under `folder` for a repository named `stem`."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob(f"{stem}*") if p.is_file())


def written_for(stem: str) -> list[Path]:
    """The files this run of coderag keeps for `stem`: its index and its last prompt, under
    the cache and data folders the environment names now."""
    return coderag_files(user_cache_dir(), stem) + coderag_files(user_data_dir(), stem)


def test_a_cli_run_writes_into_the_tests_home_and_never_the_real_one(
    tmp_path: Path,
    private_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stem = f"canary-{uuid.uuid4().hex[:12]}"  # a name no other run on this machine uses
    repo = make_tiny_repo(tmp_path / stem)
    code, _, err = run_cli(capsys, "search", "refund", str(repo), "--no-dense")
    assert code == 0, err
    _, _, err = run_cli(capsys, "prompt", "refund", str(repo), "--no-dense", "--copy")
    assert "not copied: the prompt is in" in err  # no clipboard here: kept in the data folder

    kept = written_for(stem)
    names = sorted(p.name for p in kept)
    assert any(n.endswith(".sqlite") for n in names), names  # the index
    assert f"{stem}-last-prompt.md" in names  # the prompt no clipboard took
    assert all(private_home in p.parents for p in kept)
    assert Path(tempfile.gettempdir()).is_relative_to(private_home.parent)

    with monkeypatch.context() as real:
        for name in HOME_VARIABLES:
            if name in REAL_HOME:
                real.setenv(name, REAL_HOME[name])
            else:
                real.delenv(name, raising=False)
        assert Path(os.environ["HOME"]) != private_home
        assert written_for(stem) == []
