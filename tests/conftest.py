"""Shared fixtures: a tiny real repository, and an index directory inside the test's tmp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures.tiny_repo import make_tiny_repo

# Tests never reach a model hub or a tokenizer download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    return make_tiny_repo(tmp_path / "shop")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "index"
    path.mkdir()
    return path
