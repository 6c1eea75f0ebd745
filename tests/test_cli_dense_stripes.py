"""--dense-stripes auto|N on every command that builds a dense index, CODERAG_DENSE_STRIPES,
a negative cap refused, and what auto picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.cli import build_parser, main, tui_cmd
from coderag_tui.cli.common import UserError, settings_from_args
from coderag_tui.settings import DENSE_STRIPES_AUTO, Settings, load_settings


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
    unset = settings_from_args(parser.parse_args(_argv(command, tiny_repo, index_dir)))
    assert unset.dense_stripes == DENSE_STRIPES_AUTO and unset.stripe_cap == 1
    auto = [*_argv(command, tiny_repo, index_dir), "--dense-stripes", "auto"]
    assert settings_from_args(parser.parse_args(auto)).dense_stripes == DENSE_STRIPES_AUTO


@pytest.mark.parametrize("command", ["search", "prompt", "eval", "bench"])
def test_a_negative_cap_is_refused_with_one_sentence(
    command: str, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*_argv(command, tiny_repo, index_dir), "--dense-stripes", "-3"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "--dense-stripes: must be auto or ≥ 0, got -3." in err
    assert len(err.strip().splitlines()) == 1


def test_the_tui_refuses_a_negative_cap_before_it_starts(tiny_repo: Path, index_dir: Path) -> None:
    # Through the parser, not main(): were the check missing, main() would open the app.
    args = tui_cmd.build_parser().parse_args(
        [*_argv("tui", tiny_repo, index_dir), "--dense-stripes", "-3"]
    )
    with pytest.raises(UserError, match="--dense-stripes: must be auto or ≥ 0, got -3"):
        settings_from_args(args)


def test_the_environment_and_the_config_file_set_the_cap(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("dense_stripes = 1\n")
    assert load_settings({"repo": tmp_path}, environ={}, config_file=config).dense_stripes == 1
    env = {"CODERAG_DENSE_STRIPES": "3"}
    assert load_settings({"repo": tmp_path}, environ=env, config_file=config).dense_stripes == 3
    with pytest.raises(ValueError, match="CODERAG_DENSE_STRIPES: dense_stripes must be auto"):
        load_settings(
            {"repo": tmp_path}, environ={"CODERAG_DENSE_STRIPES": "-2"}, config_file=config
        )


def test_auto_embeds_the_first_window_of_line_and_ast_chunks_and_all_of_whole_files(
    tmp_path: Path,
) -> None:
    base = Settings(repo=tmp_path)
    assert base.dense_stripes == DENSE_STRIPES_AUTO
    assert base.with_(chunking="lines").stripe_cap == 1
    assert base.with_(chunking="ast").stripe_cap == 1
    assert base.with_(chunking="file").stripe_cap == 0
    assert base.with_(chunking="file", dense_stripes=2).stripe_cap == 2  # a set cap wins
    config = tmp_path / "config.toml"
    config.write_text('dense_stripes = "auto"\n')
    loaded = load_settings({"repo": tmp_path}, environ={}, config_file=config)
    assert loaded.dense_stripes == DENSE_STRIPES_AUTO
