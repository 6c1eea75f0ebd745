"""The Settings schema: typed fields with a docstring and limits each, checked on every
construction and copy, and the CLI flags generated from it, alike on every subcommand."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from coderag_tui.cli import build_parser
from coderag_tui.cli.common import UserError, settings_from_args
from coderag_tui.cli.tui_cmd import build_parser as build_tui_parser
from coderag_tui.settings import DENSE_STRIPES_AUTO, SCHEMA, Settings, SettingsError


def test_every_setting_has_a_one_sentence_docstring() -> None:
    for name, info in SCHEMA.items():
        assert info.doc.endswith(".") and info.doc[0].isupper(), name
        assert info.doc.count(". ") == 0, name


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rrf_k": -60}, "rrf_k must be ≥ 1, got -60."),
        ({"chunking": "words"}, "chunking must be one of lines, ast, file, got 'words'."),
        ({"fusion": "zzz"}, "fusion must be one of rrf, weighted, got 'zzz'."),
        (
            {"embed_backend": "torch"},
            "embed_backend must be one of auto, fastembed, sentence-transformers, model2vec, none, "
            "got 'torch'.",
        ),
        ({"bm25_weight": 1.5}, "bm25_weight must be between 0 and 1, got 1.5."),
        ({"bm25_weight": float("nan")}, "bm25_weight must be between 0 and 1, got nan."),
        ({"dense_stripes": -3}, "dense_stripes must be auto or ≥ 0, got -3."),
        ({"k": True}, "k must be a whole number, got True."),
        ({"budget": "lots"}, "budget must be a whole number, got 'lots'."),
        (
            {"chunk_lines": 8, "chunk_overlap": 8},
            "chunk_overlap must be below chunk_lines (8) for lines chunking, got 8.",
        ),
        ({"overlap": 3}, "unknown setting 'overlap' (did you mean 'chunk_overlap'?)."),
    ],
)
def test_with_checks_like_a_new_settings(changes: dict[str, object], message: str) -> None:
    base = Settings()
    with pytest.raises(SettingsError) as error:
        base.with_(**changes)
    assert str(error.value) == message
    if "overlap" not in changes:
        with pytest.raises(SettingsError):
            Settings(**changes)  # type: ignore[arg-type]


def test_values_are_normalised_and_settings_stay_values(tmp_path: Path) -> None:
    settings = Settings(repo=tmp_path, dense_stripes="auto", bm25_weight=1)  # type: ignore[arg-type]
    assert settings.dense_stripes == DENSE_STRIPES_AUTO
    assert settings.bm25_weight == 1.0 and isinstance(settings.bm25_weight, float)
    # The same overlap is fine for chunkings other than line windows.
    assert Settings(chunking="ast", chunk_lines=4, chunk_overlap=9).chunking_spec.overlap == 0
    copy = settings.with_(rrf_k=30)
    assert copy == settings.with_(rrf_k=30) and hash(copy) == hash(settings.with_(rrf_k=30))
    assert copy != settings and settings.rrf_k == 60


# ----------------------------------------------------------------------------- generated flags


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


SHARED = {
    ("search", "prompt", "index", "tui"): [
        "--index-dir",
        "--chunking",
        "--chunk-lines",
        "--chunk-overlap",
        "--overlap",
        "--max-file-bytes",
        "--max-line-chars",
    ],
    ("search", "prompt", "tui"): [
        "--rerank",
        "--no-rerank",
        "--rrf-k",
        "--depth",
        "--fusion",
        "--bm25-weight",
        "--embed-backend",
        "--embed-model",
        "--dense-stripes",
        "--allow-download",
        "--split-identifiers",
        "--no-path-in-text",
        "--rerank-candidates",
        "--rerank-keep",
    ],
    ("prompt", "tui"): ["--budget", "--template", "--encoding", "--context-last", "--trim-last"],
    ("search", "tui"): ["--k"],
    ("search", "prompt", "eval", "bench", "tui"): ["--dense-stripes"],
}


@pytest.mark.parametrize(("commands", "flags"), list(SHARED.items()))
def test_a_setting_flag_is_the_same_on_every_subcommand(
    commands: tuple[str, ...], flags: list[str]
) -> None:
    parsers = {**_subparsers(build_parser()), "tui": build_tui_parser()}
    for flag in flags:
        actions = [_flags(parsers[command]).get(flag) for command in commands]
        assert all(actions), (flag, commands)
        seen = {
            (a.dest, a.help, a.choices, a.metavar, a.type, a.nargs, type(a))
            for a in actions
            if a is not None
        }
        assert len(seen) == 1, flag


def test_flag_help_comes_from_the_schema() -> None:
    search = _flags(_subparsers(build_parser())["search"])
    assert search["--chunk-lines"].help == (
        "lines per window for lines chunking (a file's last few lines, up to an eighth of a "
        "window, join the window before), and the size limit of an ast chunk (≥ 1; default: 64)"
    )
    assert search["--chunking"].choices == ("lines", "ast", "file")
    assert search["--embed-backend"].choices == SCHEMA["embed_backend"].choices
    assert search["--overlap"] is search["--chunk-overlap"]


def test_every_old_spelling_still_parses(tiny_repo: Path, index_dir: Path) -> None:
    parser = build_parser()
    base = ["prompt", "task", str(tiny_repo), "--index-dir", str(index_dir)]
    args = parser.parse_args(
        [
            *base,
            "--overlap",
            "4",
            "--chunk-lines",
            "32",
            "--context-last",
            "--rerank",
            "--trim-last",
            "--no-split-identifiers",
            "--dense-stripes",
            "auto",
            "--budget",
            "900",
        ]
    )
    settings = settings_from_args(args)
    assert (settings.chunk_overlap, settings.chunk_lines, settings.context_first) == (4, 32, False)
    assert settings.rerank and settings.trim_last and not settings.split_identifiers
    assert (settings.dense_stripes, settings.budget) == (DENSE_STRIPES_AUTO, 900)
    undone = settings_from_args(parser.parse_args([*base, "--no-rerank", "--context-first"]))
    assert not undone.rerank and undone.context_first


def test_a_flag_left_out_keeps_the_environment(
    tiny_repo: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERAG_RRF_K", "30")
    parser = build_parser()
    base = ["search", "q", str(tiny_repo), "--index-dir", str(index_dir)]
    assert settings_from_args(parser.parse_args(base)).rrf_k == 30
    assert settings_from_args(parser.parse_args([*base, "--rrf-k", "10"])).rrf_k == 10


def test_the_tui_refuses_a_bad_value_before_it_starts(tiny_repo: Path, index_dir: Path) -> None:
    # Through the parser, not main(): were the check missing, main() would open the app.
    args = build_tui_parser().parse_args(
        [str(tiny_repo), "--index-dir", str(index_dir), "--bm25-weight", "2"]
    )
    with pytest.raises(UserError, match=r"^--bm25-weight: must be between 0 and 1, got 2\.0\.$"):
        settings_from_args(args)


def test_every_setting_names_the_stage_that_reads_it() -> None:
    """Groups of settings (what an index remembers, what a server may answer differently,
    which flags a command offers) come from the stages: a field without one would fall out of
    every group."""
    from typing import get_args

    from coderag_tui.core.index.keeper import BUILD_SETTINGS
    from coderag_tui.core.resident import DENSE_ONLY, RERANK_ONLY, SEARCH_TIME
    from coderag_tui.settings import Stage, settings_of

    missing = [name for name, info in SCHEMA.items() if info.meta.stage is None]
    assert missing == []
    assert {info.meta.stage for info in SCHEMA.values()} == set(get_args(Stage))
    assert BUILD_SETTINGS == ("max_file_bytes", "max_line_chars", "include_secret_files")
    assert {"budget", "k", "rrf_k", "signals", "theme"} <= SEARCH_TIME
    assert "chunk_lines" not in SEARCH_TIME and "embed_model" in DENSE_ONLY
    assert {"rerank_backend", "rerank_model"} == RERANK_ONLY
    assert settings_of("chunking") == ("chunking", "chunk_lines", "chunk_overlap")
