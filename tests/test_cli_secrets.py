"""The reproduction from the "Safety" issue, end to end: `coderag prompt` on a repository with
a `.env`, an SSH key and tokens in its settings must not paste any of them silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.settings import read_settings
from tests.fixtures.secrets_repo import (
    AWS_KEY_ID,
    GITHUB_TOKEN,
    SECRET_VALUES,
    STRIPE_KEY,
    TASK,
    make_secrets_repo,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_secrets_repo(tmp_path / "repo")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def prompt(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path, *extra: str
) -> tuple[int, str, str]:
    return run(
        capsys, "prompt", TASK, str(repo), "--index-dir", str(index_dir), "--no-dense", *extra
    )


def test_the_prompt_holds_secrets_back_and_says_which_and_why(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(capsys, repo, index_dir)
    assert code == 0
    assert not [value for value in SECRET_VALUES if value in out or value in err]
    assert "app/db.py" in out  # the rest of the repository still answers
    line = next(line for line in err.splitlines() if "held back" in line)
    assert line.startswith("coderag: held back 1 chunk of settings.py: they look like secrets (")
    for kind in ("AWS Access Key", "GitHub Token", "Stripe Access Key", "Basic Auth Credentials"):
        assert kind in line
    assert "--allow-secrets includes them, --redact-secrets masks them." in line


def test_json_holds_them_back_too_and_accounts_for_them(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(capsys, repo, index_dir, "--json")
    assert code == 0
    assert not [value for value in SECRET_VALUES if value in out]
    data = json.loads(out)
    held = [d for d in data["dropped"] if d["reason"] == "secret"]
    assert held and all(d["key"].startswith("settings.py:") for d in held)
    assert "GitHub Token" in held[0]["secrets"]
    assert data["secrets"]["mode"] == "hold"
    assert data["secrets"]["held_back"][0]["path"] == "settings.py"
    assert "held back 1 chunk of settings.py" in err


def test_redact_secrets_masks_the_values_and_keeps_the_rest_of_the_file(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(capsys, repo, index_dir, "--redact-secrets")
    assert code == 0
    assert not [value for value in SECRET_VALUES if value in out]
    assert 'AWS_ACCESS_KEY_ID = "<redacted:AWS Access Key>"' in out
    assert 'GITHUB_TOKEN = "<redacted:GitHub Token>"' in out
    assert "postgres://admin:<redacted:Basic Auth Credentials>@db.example.com/prod" in out
    code, out, _ = prompt(capsys, repo, index_dir, "--redact-secrets", "--packing", "chunks")
    assert "DEBUG = False" in out and 'GITHUB_TOKEN = "<redacted:GitHub Token>"' in out
    assert "coderag: masked the suspected secrets (" in err and "settings.py" in err


def test_allow_secrets_includes_them_and_still_warns(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(capsys, repo, index_dir, "--allow-secrets")
    assert code == 0
    assert GITHUB_TOKEN in out and STRIPE_KEY in out and AWS_KEY_ID in out
    warning = next(line for line in err.splitlines() if "includes suspected secrets" in line)
    assert "settings.py" in warning and "GitHub Token" in warning and "allow" in warning
    assert GITHUB_TOKEN not in err


def test_index_verbose_lists_key_files_as_skipped_and_the_flag_indexes_them(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, _ = run(capsys, "index", str(repo), "--index-dir", str(index_dir), "--verbose")
    assert code == 0
    assert (
        ".env: a key or credentials file (an environment file; --include-secret-files "
        "indexes it)" in out
    )
    assert "id_rsa: a key or credentials file (an SSH private key;" in out
    assert "settings.py: AWS Access Key" in out  # the files with suspected secrets, by kind
    code, out, _ = run(
        capsys,
        "index",
        str(repo),
        "--index-dir",
        str(index_dir),
        "--json",
        "--include-secret-files",
    )
    assert code == 0
    data = json.loads(out)
    assert not [s for s in data["skipped"] if s["reason_code"] == "SECRET_FILE"]
    secrets = {s["path"]: s["kinds"] for s in data["secrets"]}
    assert secrets["id_rsa"] == ["Private Key"] and ".env" in secrets
    # Indexed, and still held back from prompts.
    code, out, _ = prompt(capsys, repo, index_dir, "--include-secret-files")
    assert code == 0 and not [value for value in SECRET_VALUES if value in out]


def test_search_json_marks_hits_that_hold_secrets(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path
) -> None:
    code, out, _ = run(
        capsys, "search", TASK, str(repo), "--index-dir", str(index_dir), "--no-dense", "--json"
    )
    assert code == 0
    hits = json.loads(out)["rankings"]["bm25"]["hits"]
    marks = {hit["path"]: hit["secret"] for hit in hits}
    assert "GitHub Token" in marks["settings.py"]
    assert marks["app/db.py"] == []


@pytest.mark.parametrize(
    ("line", "key"),
    [('secrets = "allow"', "secrets"), ("include-secret-files = true", "include_secret_files")],
)
def test_a_repository_config_cannot_switch_it_off(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path, line: str, key: str
) -> None:
    (repo / ".coderag.toml").write_text(line + "\n")
    code, out, err = prompt(capsys, repo, index_dir)
    # The refused key is ignored with one warning naming it, and the prompt still holds back.
    assert code == 0 and out
    assert (
        f"ignored {key} (a repository's own config may not decide that its secrets go into "
        "prompts)" in err
    )
    assert "held back" in err
    loaded = read_settings({"repo": repo}, environ={})
    assert (loaded.settings.secrets, loaded.settings.include_secret_files) == ("hold", False)
    assert any(key in warning for warning in loaded.warnings)


def test_the_user_may_choose_through_the_environment(tmp_path: Path) -> None:
    loaded = read_settings(
        {}, environ={"CODERAG_SECRETS": "redact"}, config_file=tmp_path / "none.toml"
    )
    assert loaded.settings.secrets == "redact"
