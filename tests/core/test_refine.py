"""The model's work carried on between calls: a search answers at once from the static first
pass and leaves the model to one background process per index, which the next search finds
done; and a later search in a fresh process loads neither torch nor fastembed.
"""

# ruff: noqa: F811 (pytest fixtures imported by name are parameters here)
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from coderag_tui.core import refine
from coderag_tui.core.rank.embed import package_version
from coderag_tui.core.rank.embedding_status import lock_path, read_status, status_path
from coderag_tui.settings import Settings
from tests.fixtures.tiny_models import (  # noqa: F401
    no_cached_models,
    tiny_fastembed_embedder,
    tiny_models_dir,
)

pytestmark = pytest.mark.slow  # starts coderag processes, builds a tiny model


def coderag(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coderag_tui", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def machine(tmp_path: Path, tiny_fastembed_embedder: Path) -> dict[str, str]:
    """A user cache of its own whose models folder holds the tiny ONNX model where the shipped
    MiniLM's ONNX copies go, so the offline model "is ready" without exporting anything."""
    cache = tmp_path / "xdg-cache"
    models = cache / "coderag" / "models"
    version = package_version()
    for name in ("onnx", "onnx-int8"):
        shutil.copytree(tiny_fastembed_embedder, models / f"all-MiniLM-L6-v2-{name}-{version}")
    return dict(os.environ, XDG_CACHE_HOME=str(cache), CODERAG_DENSE_BACKGROUND="1")


def test_a_search_leaves_the_model_to_a_background_process_and_a_later_one_has_it(
    tiny_repo: Path, index_dir: Path, machine: dict[str, str]
) -> None:
    args = ["search", "refund a card payment", str(tiny_repo), "--index-dir", str(index_dir)]
    first = coderag(*args, "--json", env=machine)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["dense"]["stage"] == "first pass"
    assert "embeds the chunks in a background process" in first.stderr
    settings = Settings(repo=tiny_repo, index_dir=index_dir)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        later = coderag(*args, "--json", env=machine)
        if json.loads(later.stdout)["dense"]["stage"] == "model":
            break
        time.sleep(0.5)
    else:
        pytest.fail("the background process never finished the model's list")
    record = json.loads(later.stdout)
    assert record["dense"]["coverage"] == 1.0 and record["rankings"]["dense"]["hits"]
    assert "background" not in later.stderr
    # It ended when done and left no status behind (the lock file may stay: it is reused).
    deadline = time.monotonic() + 20
    while status_path(settings.index_path).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not status_path(settings.index_path).exists()
    assert read_status(settings.index_path) is None


def test_one_process_per_index_and_none_when_turned_off(
    tiny_repo: Path, index_dir: Path, machine: dict[str, str]
) -> None:
    settings = Settings(repo=tiny_repo, index_dir=index_dir)
    assert not refine.start(settings.with_(dense_background=False))
    index_dir.mkdir(exist_ok=True)
    with FileLock(str(lock_path(settings.index_path))):  # another process embeds this index
        started = time.monotonic()
        assert refine.run(settings) == 0
        assert time.monotonic() - started < 5
    assert not status_path(settings.index_path).exists()  # it did nothing and said nothing


def test_the_settings_travel_to_the_process_whole(tmp_path: Path) -> None:
    settings = Settings(repo=tmp_path, index_dir=tmp_path / "i", chunk_lines=17, rrf_k=9)
    assert refine.settings_from(refine.payload(settings)) == settings


def test_a_later_search_loads_neither_torch_nor_fastembed(
    tiny_repo: Path, index_dir: Path, machine: dict[str, str]
) -> None:
    """Once the model's list is complete, a search in a fresh process runs the ONNX copy with
    onnxruntime alone: importing torch, transformers or fastembed costs seconds."""
    env = dict(machine, CODERAG_DENSE_BACKGROUND="0")
    built = coderag("index", str(tiny_repo), "--index-dir", str(index_dir), "--dense", env=env)
    assert built.returncode == 0, built.stderr
    probe = (
        "import sys, json\n"
        "from coderag_tui.cli import main\n"
        f"code = main(['search', 'refund', {str(tiny_repo)!r}, '--index-dir', "
        f"{str(index_dir)!r}, '--json'])\n"
        "heavy = ('torch', 'transformers', 'sentence_transformers', 'fastembed', 'model2vec')\n"
        "print(json.dumps([code, sorted(m for m in heavy if m in sys.modules)]), "
        "file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    code, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert code == 0
    assert json.loads(done.stdout)["dense"]["stage"] == "model"
    assert loaded == []


def test_a_wait_on_the_models_one_time_copy_is_said_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cached_models: Path
) -> None:
    from coderag_tui.core.rank.embedders import copy_pending

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-machine"))
    settings = Settings(repo=tmp_path)
    assert copy_pending(settings)  # nothing made yet: `index --dense` and `--wait` say so
    assert not copy_pending(settings.with_(embed_model=str(tmp_path)))
    assert not copy_pending(settings.with_(embed_backend="none"))
    made = settings.models_path / f"all-MiniLM-L6-v2-onnx-int8-{package_version()}"
    made.mkdir(parents=True)
    (made / "model.onnx").write_bytes(b"")
    assert not copy_pending(settings)
