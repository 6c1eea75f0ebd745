"""`coderag [PATH]`: flags reach Settings, and a bad path ends in one sentence, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.cli.tui_cmd import build_parser, run_tui


def test_a_missing_repository_is_one_clear_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_tui([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "does not exist: pass the path of a repository folder." in err
    assert "Traceback" not in err


def test_flags_parse_into_setting_names(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            str(tmp_path),
            "--theme",
            "coderag-light",
            "--chunking",
            "ast",
            "--budget",
            "4000",
            "--rerank",
            "--embed-backend",
            "none",
        ]
    )
    assert (args.theme, args.chunking, args.budget, args.rerank, args.embed_backend) == (
        "coderag-light",
        "ast",
        4000,
        True,
        "none",
    )
