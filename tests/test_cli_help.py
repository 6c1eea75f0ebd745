"""What a person meets when they ask for help or mistype: every command listed, one line
and a hint for a bad option, and the command they meant."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from coderag_tui.cli import COMMANDS, main


def test_help_lists_every_command_first(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    listed = out.split("positional arguments:")[0]  # before the TUI's own options
    for name in COMMANDS:
        assert f"\n  {name} " in listed, name
    assert "serve" in listed


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "x", "--mode", "foo"], "invalid choice: 'foo'"),
        (["index", "--chunk-lines", "abc"], "must be a whole number, got 'abc'"),
        (["prompt", "x", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        # A prefix of a longer option is not that option (it was `--no-dense-background`).
        ([".", "--no-dense"], "unrecognized arguments: --no-dense"),
        (["prompt", "x", "--budg", "900"], "unrecognized arguments: --budg"),
    ],
)
def test_a_bad_option_is_one_line_with_a_hint(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err
    command = "" if argv[0] == "." else f" {argv[0]}"
    assert expected in err and f"`coderag{command} --help` lists the options." in err


def test_a_mistyped_command_is_named_with_the_one_meant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(str(tmp_path))
    assert main(["serach", "retry payment"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "coderag: 'serach' is neither a command nor a folder; did you mean `coderag search`?\n"
    )


def test_log_file_records_the_fallbacks_taken(
    tiny_repo: Path, index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "coderag.log"
    flags = ["--index-dir", str(index_dir), "--embed-backend", "none", "--log-file", str(log)]
    code = main(["search", "refund", str(tiny_repo), *flags])
    assert code == 0, capsys.readouterr().err
    text = log.read_text()
    assert "coderag_tui.core.engine DEBUG dense stage off: dense search is off" in text
    package = logging.getLogger("coderag_tui")
    for handler in list(package.handlers):  # this test's file only, not the next test's
        package.removeHandler(handler)
        handler.close()
    # A log file that cannot be written is one sentence, not a traceback.
    code = main(["index", str(tiny_repo), "--log-file", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "is a folder, and coderag writes only regular files" in err and "Traceback" not in err
