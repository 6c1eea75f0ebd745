"""A cloned repository must not write, read or steer anything outside itself (issue "Trust II").

Each test is a reproduction that passed on the attacker's side before the fix: a committed
link that `--out` wrote through, a link or path that `--from` read, a repository config that
chose a shared collection, raised a size limit or stopped coderag, and inputs with no bound.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.core.index.identity import repository_identity
from coderag_tui.core.prompt.clipboard import copy_text
from coderag_tui.core.safe_write import UnsafePath, write_atomically
from coderag_tui.settings import MAX_CONFIG_BYTES, read_settings
from tests.fixtures.cli_run import one_sentence, run_cli
from tests.fixtures.hostile_repo import BASHRC, victim_home
from tests.fixtures.tiny_repo import make_tiny_repo


def _git(repo: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True)


def _commit_all(repo: Path) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "links")


# --- 1. --out and ctrl+s never write through a committed link --------------------------------


@pytest.fixture
def linked_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository that commits `prompt.md -> ../home/.bashrc` and `out -> ../home`."""
    bashrc = victim_home(tmp_path)
    home = bashrc.parent
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / "prompt.md").symlink_to(Path("..") / "home" / ".bashrc")
    (repo / "out").symlink_to(Path("..") / "home")
    _commit_all(repo)
    return repo, home


def test_out_never_writes_through_a_committed_link(
    linked_repo: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, home = linked_repo
    monkeypatch.chdir(repo)
    ix = str(tmp_path / "ix")
    for out in ("prompt.md", "out/prompt.md", str(repo / "prompt.md")):
        code, _, err = run_cli(
            capsys, "prompt", "refund endpoint", ".", "--index-dir", ix, "--no-dense", "--out", out
        )
        assert code == 1, err
        line = one_sentence(err, "symbolic link")
        assert "never writes through a link" in line
        assert "saved to" not in err
    assert (home / ".bashrc").read_text() == BASHRC
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]
    assert (repo / "prompt.md").is_symlink()  # the link itself is left as it was
    # A plain path in the repository is written as before.
    code, _, err = run_cli(
        capsys, "prompt", "refund", ".", "--index-dir", ix, "--no-dense", "--out", "mine.md"
    )
    assert code == 0, err
    assert "## Task" in (repo / "mine.md").read_text()


def test_a_link_outside_the_repository_is_the_users_own_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    real = tmp_path / "real-notes"
    real.mkdir()
    (tmp_path / "notes").symlink_to(real)
    write_atomically(tmp_path / "notes" / "p.md", "x", guarded=repo)  # a folder of the user's
    assert (real / "p.md").read_text() == "x"
    # Reaching the repository through the user's own link still checks inside it.
    (tmp_path / "to-repo").symlink_to(repo)
    (repo / "inner").symlink_to(real)
    with pytest.raises(UnsafePath, match="inner"):
        write_atomically(tmp_path / "to-repo" / "inner" / "q.md", "y", guarded=repo)
    assert not (real / "q.md").exists()
    # The file itself is never a link, wherever it is.
    (tmp_path / "link.md").symlink_to(real / "p.md")
    with pytest.raises(UnsafePath):
        write_atomically(tmp_path / "link.md", "z")
    assert (real / "p.md").read_text() == "x"


def test_an_existing_file_keeps_its_permissions_and_a_missing_folder_is_made(
    tmp_path: Path,
) -> None:
    target = tmp_path / "a" / "b" / "p.md"
    write_atomically(target, "one", guarded=tmp_path)
    os.chmod(target, 0o600)
    write_atomically(target, "two", guarded=tmp_path)
    assert target.read_text() == "two" and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["p.md"]  # no temporary left


def test_the_tui_save_refuses_a_link_inone_sentence(linked_repo: tuple[Path, Path]) -> None:
    repo, home = linked_repo
    result = copy_text("the prompt", out=repo / "prompt.md", clipboard=False, guarded=repo)
    assert not result.ok and "symbolic link" in result.message
    assert (home / ".bashrc").read_text() == BASHRC


# --- 2. --from reads only a file the index would read ---------------------------------------


@pytest.fixture
def from_repo(tmp_path: Path) -> Path:
    repo = make_tiny_repo(tmp_path / "shop")
    secret = tmp_path / "id_rsa_copy"
    secret.write_text("line one\nPRIVATE STUFF\nline three\n")
    (repo / "settings.py").symlink_to("/proc/self/environ")
    (repo / "key.py").symlink_to(secret)
    (repo / "linked").symlink_to(tmp_path)
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "ignored.py").write_text("a = 1\nb = 2\nc = 3\n")
    (repo / "id_rsa").write_text("x\ny\nz\n")
    _commit_all(repo)
    return repo


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("settings.py:2", "symlink pointing outside the repository"),
        ("key.py:2", "symlink pointing outside the repository"),
        ("linked/id_rsa_copy:2", "a link to a folder"),
        ("/etc/passwd:10", "lies outside the repository"),
        ("../id_rsa_copy:2", "lies outside the repository"),
        ("ignored.py:2", "ignored by .gitignore"),
        ("id_rsa:2", "a key or credentials file"),
        (".git/config:2", "never indexes"),
    ],
)
def test_from_reads_only_a_file_the_index_would_read(
    from_repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    location: str,
    why: str,
) -> None:
    monkeypatch.setenv("CODERAG_CANARY", "sk-canary-value-that-must-not-leak")
    ix = str(tmp_path / "ix")
    code, out, err = run_cli(
        capsys, "prompt", "--from", location, str(from_repo), "--index-dir", ix, "--no-dense"
    )
    assert code == 2, err
    assert out == ""
    line = one_sentence(err, why)
    assert "give a file of the repository" in line or "give a source file" in line
    assert "canary" not in err and "PRIVATE STUFF" not in err


def test_from_still_reads_a_file_of_the_repository(
    from_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ix = str(tmp_path / "ix")
    code, out, err = run_cli(
        capsys, "prompt", "--from", "shop/cart.py:20", str(from_repo), "--index-dir", ix
    )
    assert code == 0, err
    assert "## Task" in out


def test_the_task_goes_through_the_secret_scan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    key = "AKIA" + "Q" * 12 + "7ABC"
    (repo / "deploy.py").write_text(
        f'"""Deploy."""\n\nimport os\n\nAWS_ACCESS_KEY_ID = "{key}"\n\nprint(os.environ)\n'
    )
    ix = str(tmp_path / "ix")
    code, out, err = run_cli(
        capsys, "prompt", "--from", "deploy.py:7", str(repo), "--index-dir", ix, "--no-dense"
    )
    assert code == 0, err
    assert key not in out
    task = out.split("## Task", 1)[1]
    assert "<redacted:AWS Access Key>" in task
    assert "the task holds what looks like a secret (AWS Access Key)" in err
    code, out, err = run_cli(
        capsys,
        "prompt",
        "--from",
        "deploy.py:7",
        str(repo),
        "--index-dir",
        ix,
        "--no-dense",
        "--allow-secrets",
    )
    assert code == 0 and key in out.split("## Task", 1)[1]
    assert "kept as it is because secrets is set to allow" in err


# --- 3. a repository config names no shared state, and collections know their repository ----


def test_a_repository_config_cannot_choose_the_collection_or_the_backend(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / ".coderag.toml").write_text(
        'backend = "qdrant"\nbackend_collection = "victims-index"\nbudget = 4000\n'
    )
    user = tmp_path / "config.toml"
    user.write_text('backend_url = "http://qdrant.example:6333"\n')
    loaded = read_settings({"repo": repo}, environ={}, config_file=user)
    assert loaded.settings.backend == "local"
    assert loaded.settings.backend_collection == ""
    assert loaded.settings.budget == 4000  # what it may tune, it still tunes
    (warning,) = [w for w in loaded.warnings if "ignored" in w]
    assert "backend (" in warning and "backend_collection (" in warning


def test_a_collection_made_from_another_repository_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("qdrant_client")
    store = tmp_path / "qdrant"
    victim = make_tiny_repo(tmp_path / "victim")
    attacker = make_tiny_repo(tmp_path / "attacker")
    (attacker / "evil.py").write_text("def refund():\n    return 'attacker'\n")
    _git(attacker, "checkout", "-q", "--orphan", "other")
    _commit_all(attacker)  # another history: another repository
    assert repository_identity(victim) != repository_identity(attacker)
    common = ["--backend", "qdrant", "--url", str(store), "--collection", "team"]
    code, _, err = run_cli(
        capsys, "index", str(victim), "--index-dir", str(tmp_path / "i1"), *common
    )
    assert code == 0, err
    code, out, err = run_cli(
        capsys, "index", str(attacker), "--index-dir", str(tmp_path / "i2"), *common
    )
    assert code != 0
    one_sentence(err, "was made from another repository")
    assert "deleted" not in out
    # The victim's collection still answers with the victim's files only.
    code, out, err = run_cli(
        capsys, "search", "refund", str(victim), "--index-dir", str(tmp_path / "i1"), *common
    )
    assert code == 0, err
    assert "evil.py" not in out


# --- 8. every input has a bound ----------------------------------------------------------------


def test_the_task_on_stdin_is_bounded(tiny_repo: Path, index_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "coderag_tui", "prompt", "-", str(tiny_repo), "--no-dense"],
        input=b"x" * (5 * 1024 * 1024),
        capture_output=True,
        timeout=120,
        env={**os.environ, "CODERAG_INDEX_DIR": str(index_dir)},
        check=False,
    )
    assert proc.returncode == 2
    err = proc.stderr.decode()
    one_sentence(err, "longer than 4 MiB")


def test_a_huge_template_or_config_is_refused_unread(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tiny_repo / "bigtpl.txt"
    with big.open("wb") as handle:  # sparse: 3 GB that take no disk
        handle.truncate(3 * 1024**3)
    (tiny_repo / ".coderag.toml").write_text('template = "bigtpl.txt"\n')
    code, out, err = run_cli(
        capsys, "prompt", "refund", str(tiny_repo), "--index-dir", str(index_dir), "--no-dense"
    )
    assert code == 0 and "## Task" in out  # someone else's template never stops a prompt
    one_sentence(err, "ignored template", "larger than 256 KiB")
    # The user's own is the user's to fix: it stops the prompt with one sentence.
    code, _, err = run_cli(
        capsys, "prompt", "refund", str(tiny_repo), "--index-dir", str(index_dir), "--no-dense",
        "--template", str(big),
    )  # fmt: skip
    assert code == 2
    one_sentence(err, "coderag: the template file", "larger than 256 KiB")
    # A config file past its bound is not read at all: one warning, and coderag runs.
    (tiny_repo / ".coderag.toml").write_text("a = 1\n" * (MAX_CONFIG_BYTES // 6 + 1))
    code, _, err = run_cli(capsys, "index", str(tiny_repo), "--index-dir", str(index_dir))
    assert code == 0
    one_sentence(err, "larger than 256 KiB, so it was not read; its settings were ignored.")


def test_a_repository_may_lower_size_limits_but_not_raise_them(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    none = tmp_path / "none.toml"
    (repo / ".coderag.toml").write_text("max_file_bytes = 1000000000\nmax_line_chars = 500\n")
    loaded = read_settings({"repo": repo}, environ={}, config_file=none)
    assert loaded.settings.max_file_bytes == 1024 * 1024
    assert loaded.settings.max_line_chars == 500
    (warning,) = [w for w in loaded.warnings if "ignored" in w]
    assert "max_file_bytes (it may lower this limit (1048576) but not raise it)" in warning
    # The user may raise it.
    env = {"CODERAG_MAX_FILE_BYTES": "5000000"}
    assert read_settings({"repo": repo}, environ=env, config_file=none).settings.max_file_bytes == (
        5_000_000
    )


def test_thousands_of_unknown_keys_are_summarised(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    (repo / ".coderag.toml").write_text("".join(f"key{i} = 1\n" for i in range(10_000)))
    loaded = read_settings({"repo": repo}, environ={}, config_file=tmp_path / "none.toml")
    assert len(loaded.warnings) == 6
    assert loaded.warnings[-1].endswith("9,995 more unknown settings; ignored.")


# --- 10. someone else's config never stops the user --------------------------------------------


def test_a_refused_key_is_one_warning_and_coderag_runs(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiny_repo / ".coderag.toml").write_text(
        'secrets = "allow"\nindex_dir = "/tmp/elsewhere"\nchunk_lines = 32\n'
    )
    code, out, err = run_cli(capsys, "index", str(tiny_repo), "--index-dir", str(index_dir))
    assert code == 0, err
    line = one_sentence(err, "ignored secrets (")
    assert "index_dir (" in line
    assert "32-line" in out or "lines:32" in out


def test_a_config_file_that_links_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("budget = 1234\n")
    (repo / ".coderag.toml").symlink_to(outside)
    loaded = read_settings({"repo": repo}, environ={}, config_file=tmp_path / "none.toml")
    assert loaded.settings.budget == 8000
    assert any("a link out of the repository, so it was not read" in w for w in loaded.warnings)


def test_stdin_text_reads_fine_under_the_bound(
    tiny_repo: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coderag_tui.cli.common import read_stdin

    class _Stdin:
        buffer = io.BytesIO("why does refund fail? ✓".encode())

    monkeypatch.setattr(sys, "stdin", _Stdin())
    assert read_stdin("task") == "why does refund fail? ✓"


def test_an_index_inside_the_repository_is_never_written_through_its_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".index").symlink_to(elsewhere)
    code, _, err = run_cli(capsys, "index", str(repo), "--index-dir", str(repo / ".index"))
    assert code == 2
    one_sentence(err, "never writes through a link")
    assert list(elsewhere.iterdir()) == []


def test_a_very_long_folder_name_still_gets_an_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_tiny_repo(tmp_path / ("r" * 250))
    code, _, err = run_cli(capsys, "index", str(repo), "--index-dir", str(tmp_path / "ix"))
    assert code == 0, err
