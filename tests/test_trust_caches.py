# ruff: noqa: F811
"""The caches coderag reads models and tables from are its own (issue "Trust IV", item 5 and
case 11; issue 44, item 3).

fastembed's default cache is `$TMPDIR/fastembed_cache` and tiktoken's `$TMPDIR/data-gym-cache`:
on most machines one `/tmp` that every user shares. Before the fix, a model another user
planted there was loaded for any repository, a table planted there was counted with, and a
`data-gym-cache` another user made private ended `coderag prompt` in a traceback.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from coderag_tui.core.prompt.tokens import PUBLIC_TABLES
from coderag_tui.core.rank.embedders import resolve_embedder
from coderag_tui.locations import library_cache_dir
from coderag_tui.settings import Settings
from tests.core.test_tokens import offline_table
from tests.fixtures.safety import NOBODY, nobody_can_run, public_folder, run_cli
from tests.fixtures.tiny_models import (  # noqa: F401 (fixtures)
    tiny_fastembed_embedder,
    tiny_models_dir,
)
from tests.fixtures.tiny_repo import make_tiny_repo

# fastembed's entry for this name downloads `model_optimized.onnx` from this hub repository.
PLANTED_NAME = "BAAI/bge-small-en-v1.5"
PLANTED_REPO = "Qdrant/bge-small-en-v1.5-onnx-Q"
REVISION = "0" * 40


def plant_fastembed_model(cache: Path, model: Path) -> None:
    """`model` laid out in `cache` as fastembed's download of PLANTED_NAME would be."""
    entry = cache / f"models--{PLANTED_REPO.replace('/', '--')}"
    snapshot = entry / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for file in model.iterdir():
        if file.is_file():
            shutil.copy(file, snapshot / file.name)
    shutil.copy(model / "model.onnx", snapshot / "model_optimized.onnx")
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(REVISION)


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder that stands for the machine's shared /tmp, as this process's."""
    folder = tmp_path / "shared-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() asks TMPDIR again
    return folder


def test_a_model_planted_in_the_shared_fastembed_cache_is_never_loaded(
    tiny_repo: Path, tmp_path: Path, shared_tmp: Path, tiny_fastembed_embedder: Path
) -> None:
    settings = Settings(repo=tiny_repo, index_dir=tmp_path / "ix", embed_backend="fastembed")
    plant_fastembed_model(shared_tmp / "fastembed_cache", tiny_fastembed_embedder)

    choice = resolve_embedder(settings, offline_package=lambda: None)
    assert choice.embedder is None, choice.embedder.name
    assert "no embedding model is available offline" in choice.reason

    # The same files in coderag's own cache are a model the user fetched: that one loads.
    plant_fastembed_model(library_cache_dir("fastembed", make=True), tiny_fastembed_embedder)
    choice = resolve_embedder(settings, offline_package=lambda: None)
    assert choice.embedder is not None
    assert choice.embedder.name == f"fastembed:{PLANTED_NAME}"


def test_a_token_table_planted_in_the_shared_tiktoken_cache_is_never_read(tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    planted = shared / "data-gym-cache"
    planted.mkdir(parents=True)
    (url,) = PUBLIC_TABLES["cl100k_base"]
    table = planted / hashlib.sha1(url.encode()).hexdigest()
    shutil.copy(offline_table(), table)
    repo = make_tiny_repo(tmp_path / "repo", git=False)
    env = {"TMPDIR": str(shared), "HOME": str(tmp_path / "home")}

    done = run_cli("prompt", "how is a refund made?", str(repo), "--no-dense", env=env)
    assert done.returncode == 0, done.stderr
    # Counted with the table coderag ships, not with the one found in the shared folder.
    assert "tokens (cl100k_base (offline))" in done.stderr
    assert [p.name for p in planted.iterdir()] == [table.name]  # and nothing copied there


needs_nobody = pytest.mark.skipif(
    not nobody_can_run(), reason="needs root and setpriv to run the CLI as another user"
)


@needs_nobody
def test_a_prompt_answers_when_the_shared_tiktoken_cache_is_another_users() -> None:
    with public_folder() as pub:
        shared = pub / "tmp"
        shared.mkdir()
        shared.chmod(0o1777)
        (shared / "data-gym-cache").mkdir(mode=0o700)  # root's, as another user left it
        home = pub / "home"
        home.mkdir()
        home.chmod(0o777)
        repo = make_tiny_repo(pub / "repo", git=False)
        subprocess.run(["chmod", "-R", "go+rX", str(repo)], check=True)
        env = {"TMPDIR": str(shared), "HOME": str(home)}

        done = run_cli(
            "prompt", "how is a refund made?", str(repo), "--no-dense",
            env=env, prefix=NOBODY, cwd=pub,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert "### [shop/payment.py" in done.stdout


def test_the_caches_coderag_makes_for_its_libraries_are_private_to_the_user() -> None:
    for library in ("fastembed", "huggingface", "tiktoken"):
        folder = library_cache_dir(library, make=True)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert folder.stat().st_uid == os.getuid()
        assert tempfile.gettempdir() not in str(folder)
