"""Shared fixtures: a tiny real repository, and an index directory inside the test's tmp."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.tiny_repo import make_tiny_repo

# Tests never reach a model hub or a tokenizer download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # should a test import onnxruntime first


@pytest.fixture(autouse=True)
def private_runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime folder of the test's own, so no test asks a `coderag serve` someone runs on
    this machine (short: a socket's path must fit in 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="cr-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    return make_tiny_repo(tmp_path / "shop")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "index"
    path.mkdir()
    return path
