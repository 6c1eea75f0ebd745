"""Prompts and suspected secrets: held back, masked or allowed, and said so (engine and packer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core.engine import Engine, PromptRequest, PromptResult
from coderag_tui.core.prompt.pack import SECRET, secret_account
from coderag_tui.settings import Settings
from tests.fixtures.secrets_repo import (
    GITHUB_TOKEN,
    SECRET_VALUES,
    STRIPE_KEY,
    TASK,
    make_secrets_repo,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_secrets_repo(tmp_path / "repo")


def _prompt(repo: Path, tmp_path: Path, **extra: Any) -> tuple[Engine, PromptResult]:
    settings = Settings(repo=repo, index_dir=tmp_path / "index", **extra)
    engine = Engine.open(settings, dense=False)
    run = engine.search(TASK, settings)
    return engine, engine.prompt(run, PromptRequest(TASK), settings)


def test_chunks_with_secrets_are_held_back_with_their_kinds(repo: Path, tmp_path: Path) -> None:
    engine, result = _prompt(repo, tmp_path)
    engine.close()
    packed = result.packed
    assert not any(value in packed.text for value in SECRET_VALUES)
    assert [b.path for b in packed.blocks] == ["app/db.py"]
    (held,) = [d for d in packed.dropped if d.reason == SECRET]
    assert held.key.startswith("settings.py:")
    assert {"AWS Access Key", "GitHub Token", "Stripe Access Key"} <= set(held.secrets)
    account = secret_account(packed)
    assert account.mode == "hold" and account.included == ()
    assert [(path, n) for path, n, _ in account.held] == [("settings.py", 1)]


def test_a_pinned_chunk_with_a_secret_is_still_held_back(repo: Path, tmp_path: Path) -> None:
    settings = Settings(repo=repo, index_dir=tmp_path / "index")
    with Engine.open(settings, dense=False) as engine:
        run = engine.search(TASK, settings)
        key = next(h.chunk.key for h in run.final.hits if h.chunk.path == "settings.py")
        packed = engine.prompt(run, PromptRequest(TASK, pinned=(key,)), settings).packed
    assert GITHUB_TOKEN not in packed.text
    assert any(d.key == key and d.reason == SECRET for d in packed.dropped)


@pytest.mark.parametrize("packing", ["spans", "chunks"])
def test_redact_masks_each_secret_and_keeps_the_rest(
    repo: Path, tmp_path: Path, packing: str
) -> None:
    engine, result = _prompt(repo, tmp_path, secrets="redact", packing=packing)
    engine.close()
    packed = result.packed
    assert not any(value in packed.text for value in SECRET_VALUES)
    assert 'STRIPE_API_KEY = "<redacted:Stripe Access Key>"' in packed.text
    if packing == "chunks":  # the whole chunk; spans carry the matched lines alone
        assert "DEBUG = False" in packed.text
    block = next(b for b in packed.blocks if b.path == "settings.py")
    assert "GitHub Token" in block.secrets
    assert secret_account(packed).mode == "redact"
    assert not [d for d in packed.dropped if d.reason == SECRET]


def test_allow_lets_them_in_and_still_names_them(repo: Path, tmp_path: Path) -> None:
    engine, result = _prompt(repo, tmp_path, secrets="allow")
    engine.close()
    packed = result.packed
    assert STRIPE_KEY in packed.text and GITHUB_TOKEN in packed.text
    account = secret_account(packed)
    assert account.mode == "allow" and account.included[0][0] == "settings.py"


def test_search_marks_hits_and_without_an_open_index_the_chunks_are_scanned(
    repo: Path, tmp_path: Path
) -> None:
    settings = Settings(repo=repo, index_dir=tmp_path / "index")
    engine = Engine.open(settings, dense=False)
    run = engine.search(TASK, settings)
    chunks = [h.chunk for h in run.final.hits]
    marks = engine.secret_kinds(chunks)
    assert {key.rsplit(":", 1)[0] for key in marks} == {"settings.py"}
    engine.close()  # the stages stay usable; the store is gone
    assert engine.secret_kinds(chunks) == marks
    packed = engine.prompt(run, PromptRequest(TASK), settings).packed
    assert not any(value in packed.text for value in SECRET_VALUES)


def test_a_chunk_the_user_let_in_goes_in_and_still_names_its_secrets(
    repo: Path, tmp_path: Path
) -> None:
    settings = Settings(repo=repo, index_dir=tmp_path / "index")
    with Engine.open(settings, dense=False) as engine:
        run = engine.search(TASK, settings)
        key = next(h.chunk.key for h in run.final.hits if h.chunk.path == "settings.py")
        packed = engine.prompt(run, PromptRequest(TASK, admitted=(key,)), settings).packed
    assert GITHUB_TOKEN in packed.text
    assert not [d for d in packed.dropped if d.reason == SECRET]
    block = next(b for b in packed.blocks if key in b.chunk_keys)
    assert "GitHub Token" in block.secrets
    account = secret_account(packed)
    assert account.mode == "hold" and account.included[0][0] == "settings.py"
