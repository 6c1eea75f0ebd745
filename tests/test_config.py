"""Settings precedence: defaults < config file < repository file < CODERAG_* < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.records import ChunkingSpec
from coderag_tui.settings import load_settings


def test_precedence(tmp_path: Path) -> None:
    user_file = tmp_path / "config.toml"
    user_file.write_text("budget = 4000\nchunk_lines = 32\nrerank = true\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".coderag.toml").write_text("[coderag]\nchunk_lines = 48\n")
    settings = load_settings(
        {"repo": repo, "budget": None, "k": 7},
        environ={"CODERAG_BUDGET": "16000"},
        config_file=user_file,
    )
    assert settings.budget == 16000  # environment beats the file; a None flag is ignored
    assert settings.chunk_lines == 48  # the repository file beats the user file
    assert settings.rerank is True
    assert settings.k == 7
    assert settings.chunking_spec == ChunkingSpec("lines", 48, 0)


def test_bad_value_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="CODERAG_BUDGET: budget must be a whole number"):
        load_settings(
            {"repo": tmp_path},
            environ={"CODERAG_BUDGET": "lots"},
            config_file=tmp_path / "none.toml",
        )


def test_index_path_is_per_repository(tmp_path: Path) -> None:
    a = load_settings(
        {"repo": tmp_path / "a", "index_dir": tmp_path / "ix"},
        environ={},
        config_file=tmp_path / "none.toml",
    )
    b = load_settings(
        {"repo": tmp_path / "b", "index_dir": tmp_path / "ix"},
        environ={},
        config_file=tmp_path / "none.toml",
    )
    assert a.index_path != b.index_path
    assert a.embed_cache_path == b.embed_cache_path  # embeddings are shared by every repository


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("lines", "lines:64:0"),
        ("lines:32", "lines:32:0"),
        ("lines:64:8", "lines:64:8"),
        ("ast", "ast:64"),
        ("file", "file"),
    ],
)
def test_chunking_spec_parse(text: str, key: str) -> None:
    assert ChunkingSpec.parse(text).key == key


def test_chunking_spec_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="unknown chunking"):
        ChunkingSpec.parse("words")
