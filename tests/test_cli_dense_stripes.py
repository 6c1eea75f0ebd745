"""--dense-stripes N on every command that builds a dense index, CODERAG_DENSE_STRIPES, and -1."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.cli import build_parser, main, tui_cmd
from coderag_tui.cli.common import UserError, settings_from_args
from coderag_tui.config import load_settings


def _argv(command: str, repo: Path, index_dir: Path) -> list[str]:
    """A command line for `command` on the tiny repository, ready for more flags."""
    common = ["--index-dir", str(index_dir)]
    return {
        "search": ["search", "refund", str(repo), "--no-dense", *common],
        "prompt": ["prompt", "refund a card", str(repo), "--no-dense", *common],
        "eval": ["eval", "--repo", str(repo), *common],
        "bench": ["bench", str(repo), *common],
        "tui": [str(repo), *common],
    }[command]


@pytest.mark.parametrize("command", ["search", "prompt", "tui"])
def test_the_flag_reaches_settings(command: str, tiny_repo: Path, index_dir: Path) -> None:
    argv = [*_argv(command, tiny_repo, index_dir), "--dense-stripes", "2"]
    parser = tui_cmd.build_parser() if command == "tui" else build_parser()
    assert settings_from_args(parser.parse_args(argv)).dense_stripes == 2
    unset = _argv(command, tiny_repo, index_dir)
    assert settings_from_args(parser.parse_args(unset)).dense_stripes == 1  # the first window


@pytest.mark.parametrize("command", ["search", "prompt", "eval", "bench"])
def test_a_negative_cap_is_refused_with_one_sentence(
    command: str, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*_argv(command, tiny_repo, index_dir), "--dense-stripes", "-1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "dense_stripes cannot be -1" in err and "--dense-stripes N" in err
    assert len(err.strip().splitlines()) == 1


def test_the_tui_refuses_a_negative_cap_before_it_starts(tiny_repo: Path, index_dir: Path) -> None:
    # Through the parser, not main(): were the check missing, main() would open the app.
    args = tui_cmd.build_parser().parse_args(
        [*_argv("tui", tiny_repo, index_dir), "--dense-stripes", "-1"]
    )
    with pytest.raises(UserError, match="dense_stripes cannot be -1"):
        settings_from_args(args)


def test_the_environment_and_the_config_file_set_the_cap(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("dense_stripes = 1\n")
    assert load_settings({"repo": tmp_path}, environ={}, config_file=config).dense_stripes == 1
    env = {"CODERAG_DENSE_STRIPES": "3"}
    assert load_settings({"repo": tmp_path}, environ=env, config_file=config).dense_stripes == 3
    with pytest.raises(ValueError, match="dense_stripes cannot be -2"):
        load_settings(
            {"repo": tmp_path}, environ={"CODERAG_DENSE_STRIPES": "-2"}, config_file=config
        )
