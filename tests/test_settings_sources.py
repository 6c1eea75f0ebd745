"""Every source of a setting is checked once: a bad value is one sentence naming the key and
its source, an unknown key is a warning naming the closest known one, and a repository's own
.coderag.toml may not point coderag at a path outside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.locations import user_config_file
from coderag_tui.settings import (
    DENSE_STRIPES_AUTO,
    SCHEMA,
    Settings,
    SettingsError,
    SettingsWarning,
    load_settings,
    read_settings,
)


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user config file the CLI reads, moved into the test's folder (XDG_CONFIG_HOME)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = user_config_file()
    if not path.is_relative_to(tmp_path):
        pytest.skip("this platform's config folder does not follow XDG_CONFIG_HOME")
    path.parent.mkdir(parents=True)
    return path


def _cli(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path, *flags: str
) -> tuple[int, str]:
    """`coderag index REPO` with flags; (exit code, stderr)."""
    code = main(["index", str(repo), "--index-dir", str(index_dir), *flags])
    return code, capsys.readouterr().err


def _one_sentence(err: str, expected: str) -> None:
    assert err == f"coderag: {expected}\n"
    assert "Traceback" not in err


# ----------------------------------------------------------------------------- bad values


def test_a_bad_value_in_the_user_file_names_the_file_and_the_key(
    user_file: Path, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_file.write_text("rrf_k = -60\n")
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 2
    _one_sentence(err, f"{user_file}: rrf_k must be ≥ 1, got -60.")


def test_a_bad_value_in_the_repository_file_is_ignored_naming_the_file_and_the_key(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Someone else's file cannot stop the user: the value is left out with one warning.
    (tiny_repo / ".coderag.toml").write_text('[coderag]\nfusion = "zzz"\nchunk_lines = 8\n')
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 0
    _one_sentence(
        err,
        f"{tiny_repo / '.coderag.toml'}: ignored fusion (must be one of rrf, weighted, got "
        "'zzz'); coderag runs without it (your own settings go in "
        f"{user_config_file()}, the environment or flags).",
    )
    loaded = read_settings({"repo": tiny_repo}, environ={})
    assert (loaded.settings.fusion, loaded.settings.chunk_lines) == ("rrf", 8)


def test_a_broken_repository_file_is_ignored_whole(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    none = tmp_path / "none.toml"
    for text, why in (
        ("budget = [", "not valid TOML"),
        ("chunk_lines = 8\nchunk_overlap = 8\n", "chunk_overlap must be below chunk_lines"),
    ):
        (repo / ".coderag.toml").write_text(text)
        loaded = read_settings({"repo": repo}, environ={}, config_file=none)
        assert loaded.settings.chunk_overlap == 0
        assert any(why in w for w in loaded.warnings), loaded.warnings


def test_a_bad_environment_value_names_the_variable(
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODERAG_CHUNKING", "words")
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 2
    _one_sentence(err, "CODERAG_CHUNKING: chunking must be one of lines, ast, file, got 'words'.")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--chunk-lines", "0"], "--chunk-lines: must be ≥ 1, got 0."),
        (["--max-file-bytes", "-1"], "--max-file-bytes: must be ≥ 1, got -1."),
        # the spelling typed is the one named, and the other flag it clashes with too
        (
            ["--chunk-lines", "8", "--overlap", "8"],
            "--overlap: must be below --chunk-lines (8) for lines chunking, got 8.",
        ),
        (
            ["--chunk-lines", "8", "--chunk-overlap", "9"],
            "--chunk-overlap: must be below --chunk-lines (8) for lines chunking, got 9.",
        ),
    ],
)
def test_a_bad_flag_value_names_the_flag(
    flags: list[str],
    expected: str,
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = _cli(capsys, tiny_repo, index_dir, *flags)
    assert code == 2
    _one_sentence(err, expected)


@pytest.mark.parametrize("command", ["search", "prompt"])
def test_a_bad_ranking_flag_names_the_flag(
    command: str, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            command,
            "refund",
            str(tiny_repo),
            "--index-dir",
            str(index_dir),
            "--no-dense",
            "--rrf-k",
            "-60",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    _one_sentence(err, "--rrf-k: must be ≥ 1, got -60.")


def test_a_flag_that_is_not_a_number_is_refused_by_the_parser(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        _cli(capsys, tiny_repo, index_dir, "--chunk-lines", "many")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --chunk-lines: must be a whole number, got 'many'" in err
    assert "Traceback" not in err


def test_an_overlap_clash_across_sources_names_both(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("chunk_overlap = 12\n")
    with pytest.raises(SettingsError) as error:
        read_settings({"repo": tmp_path, "chunk_lines": 10}, environ={}, config_file=config)
    assert str(error.value) == (
        f"{config}: chunk_overlap must be below --chunk-lines (10) for lines chunking, got 12."
    )
    # Only line windows overlap: the same numbers are fine for whole files.
    loaded = read_settings(
        {"repo": tmp_path, "chunk_lines": 10, "chunking": "file"}, environ={}, config_file=config
    )
    assert loaded.settings.chunking_spec.key == "file"


def test_an_unreadable_toml_file_is_one_sentence(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("budget = = 3\n")
    with pytest.raises(SettingsError, match=r"config\.toml: not valid TOML \(.*\); fix or remove"):
        read_settings({"repo": tmp_path}, environ={}, config_file=config)


# ----------------------------------------------------------------------------- unknown keys


def test_an_unknown_key_in_the_user_file_is_a_warning(
    user_file: Path, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_file.write_text("budget = 4000\nrrf-kk = 30\n")
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 0
    _one_sentence(err, f"{user_file}: unknown setting 'rrf-kk' (did you mean 'rrf_k'?); ignored.")


def test_an_unknown_key_in_the_repository_file_is_a_warning(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_file = tiny_repo / ".coderag.toml"
    repo_file.write_text("overlap = 8\n")
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 0
    _one_sentence(
        err, f"{repo_file}: unknown setting 'overlap' (did you mean 'chunk_overlap'?); ignored."
    )


def test_an_unknown_environment_variable_is_a_warning(
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODERAG_OVERLAP", "8")
    code, err = _cli(capsys, tiny_repo, index_dir)
    assert code == 0
    _one_sentence(
        err, "CODERAG_OVERLAP: unknown setting (did you mean CODERAG_CHUNK_OVERLAP?); ignored."
    )


def test_an_unknown_flag_is_refused_by_the_parser(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        _cli(capsys, tiny_repo, index_dir, "--overlapp", "8")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --overlapp 8" in err and "Traceback" not in err


def test_a_key_with_control_characters_is_quoted_not_sent(tmp_path: Path) -> None:
    (tmp_path / ".coderag.toml").write_text('"\\u001b[2Jwipe" = 1\n')
    loaded = read_settings({"repo": tmp_path}, environ={}, config_file=tmp_path / "none.toml")
    (warning,) = loaded.warnings
    assert "\x1b" not in warning and "'\\x1b[2Jwipe'" in warning


def test_load_settings_hands_warnings_to_the_warnings_module(tmp_path: Path) -> None:
    with pytest.warns(SettingsWarning, match="unknown setting 'budjet'"):
        settings = load_settings(
            {"repo": tmp_path},
            environ={"CODERAG_BUDGET": "900"},
            config_file=_write(tmp_path / "c.toml", "budjet = 3\n"),
        )
    assert settings.budget == 900


# ----------------------------------------------------------------------------- repository file


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('index_dir = "/tmp/elsewhere"', "index_dir"),
        ('theme_dir = "~/themes"', "theme_dir"),
        ('repo = "/"', "repo"),
        ("allow_download = true", "allow_download"),
    ],
)
def test_the_repository_file_may_not_set_paths_or_downloads(
    line: str, key: str, tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_file = tiny_repo / ".coderag.toml"
    repo_file.write_text(f"budget = 4000\n{line}\n")
    code, err = _cli(capsys, tiny_repo, index_dir)
    # Someone else's file cannot stop the user: the key is ignored with one warning line.
    assert code == 0
    (warning,) = [w for w in err.splitlines() if "ignored" in w]
    assert warning.startswith(f"coderag: {repo_file}: ignored {key} (")
    assert "coderag runs without it" in warning
    loaded = read_settings({"repo": tiny_repo}, environ={}, config_file=tiny_repo / "none")
    assert loaded.settings.budget == 4000
    assert getattr(loaded.settings, key) == getattr(Settings(repo=tiny_repo), key)


def test_the_user_file_the_environment_and_flags_may_set_paths(
    tmp_path: Path,
) -> None:
    config = _write(tmp_path / "config.toml", f'index_dir = "{tmp_path / "a"}"\n')
    assert (
        read_settings({"repo": tmp_path}, environ={}, config_file=config).settings.index_dir
        == tmp_path / "a"
    )
    env = {"CODERAG_INDEX_DIR": str(tmp_path / "b"), "CODERAG_ALLOW_DOWNLOAD": "1"}
    loaded = read_settings({"repo": tmp_path}, environ=env, config_file=config).settings
    assert loaded.index_dir == tmp_path / "b" and loaded.allow_download is True
    flagged = read_settings(
        {"repo": tmp_path, "index_dir": tmp_path / "c"}, environ=env, config_file=config
    ).settings
    assert flagged.index_dir == tmp_path / "c"


def test_a_template_outside_the_repository_is_ignored(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "prompts").mkdir(parents=True)
    (repo / "prompts" / "mine.tmpl").write_text("{context}\n{task}\n")
    (tmp_path / "outside.tmpl").write_text("{task}\n")
    none = tmp_path / "none.toml"

    def load(text: str) -> Settings:
        (repo / ".coderag.toml").write_text(text)
        return read_settings({"repo": repo}, environ={}, config_file=none).settings

    for text in (
        'template = "../outside.tmpl"',
        f'template = "{tmp_path / "outside.tmpl"}"',
    ):
        (repo / ".coderag.toml").write_text(text)
        loaded = read_settings({"repo": repo}, environ={}, config_file=none)
        name = text.split(" = ")[0]
        assert getattr(loaded.settings, name) == SCHEMA[name].default, text
        assert any(f"ignored {name} (it names a" in w and "outside" in w for w in loaded.warnings)
    # Inside the repository, a relative path is read from the repository root.
    inside = load('template = "prompts/mine.tmpl"')
    assert inside.template == str((repo / "prompts" / "mine.tmpl").resolve())
    # Names are names.
    assert load('template = "xml"').template == "xml"


def test_a_symlink_inside_the_repository_that_leads_outside_is_ignored(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "secret.tmpl").write_text("{task}\n")
    (repo / "link.tmpl").symlink_to(tmp_path / "secret.tmpl")
    (repo / ".coderag.toml").write_text('template = "link.tmpl"\n')
    loaded = read_settings({"repo": repo}, environ={}, config_file=tmp_path / "none.toml")
    assert loaded.settings.template == "markdown"
    assert any("ignored template (it names a path outside" in w for w in loaded.warnings)


# ----------------------------------------------------------------------------- values


def test_auto_is_accepted_from_every_source(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.toml", 'dense_stripes = "auto"\n')
    none = tmp_path / "none.toml"
    assert (
        read_settings({"repo": tmp_path}, environ={}, config_file=config).settings.dense_stripes
        == DENSE_STRIPES_AUTO
    )
    env = {"CODERAG_DENSE_STRIPES": "AUTO"}
    assert (
        read_settings({"repo": tmp_path}, environ=env, config_file=none).settings.dense_stripes
        == DENSE_STRIPES_AUTO
    )
    assert (
        read_settings(
            {"repo": tmp_path, "dense_stripes": "auto"}, environ={}, config_file=none
        ).settings.dense_stripes
        == DENSE_STRIPES_AUTO
    )


@pytest.mark.parametrize(
    ("var", "text", "value"),
    [
        ("CODERAG_RERANK", "yes", True),
        ("CODERAG_RERANK", "0", False),
        ("CODERAG_BM25_WEIGHT", "0.25", 0.25),
        ("CODERAG_K", " 7 ", 7),
        ("CODERAG_INDEX_DIR", "", None),
    ],
)
def test_environment_text_is_parsed_into_the_type(
    var: str, text: str, value: object, tmp_path: Path
) -> None:
    name = var.removeprefix("CODERAG_").lower()
    loaded = read_settings(
        {"repo": tmp_path}, environ={var: text}, config_file=tmp_path / "none.toml"
    )
    assert getattr(loaded.settings, name) == value and loaded.warnings == ()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_ci_run_starts_no_background_process_unless_it_asks() -> None:
    from coderag_tui.settings import read_settings

    def background(env: dict[str, str]) -> bool:
        return read_settings({}, environ=env).settings.dense_background

    assert background({}) is True
    assert background({"CI": "true"}) is False
    assert background({"CI": "0"}) is True
    assert background({"CI": "true", "CODERAG_DENSE_BACKGROUND": "1"}) is True
