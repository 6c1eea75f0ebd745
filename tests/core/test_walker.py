"""The walker lists what a user expects indexed and says why everything else was left out."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.walk import WalkResult, read_source, vet, walk
from coderag_tui.core.records import SkippedFile, SkipReason, SourceFile
from tests.fixtures.hostile_repo import (
    EXPECTED_ABSENT,
    EXPECTED_FILES,
    EXPECTED_SKIPS,
    EXPECTED_SKIPS_GIT_ONLY,
    INVALID_UTF8_FILES,
    make_hostile_repo,
)

pytestmark = pytest.mark.timeout(30)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def _read_all(
    root: Path, result: WalkResult
) -> tuple[dict[str, tuple[str, bool]], list[SkippedFile]]:
    texts: dict[str, tuple[str, bool]] = {}
    skipped = list(result.skipped)
    for file in result.files:
        out = read_source(root, file)
        if isinstance(out, SkippedFile):
            skipped.append(out)
        else:
            texts[file.path] = out
    return texts, skipped


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_hostile_repo_every_skip_has_its_reason(tmp_path: Path, git: bool) -> None:
    root = make_hostile_repo(tmp_path / "repo", git=git)
    result = walk(root)
    assert result.is_git is git
    texts, skipped = _read_all(root, result)

    reasons = {s.path: s.reason for s in skipped}
    expected = dict(EXPECTED_SKIPS)
    if git:
        expected.update(EXPECTED_SKIPS_GIT_ONLY)
    assert reasons == expected
    assert set(texts) == EXPECTED_FILES
    listed = {f.path for f in result.files} | set(reasons)
    assert not listed & EXPECTED_ABSENT
    assert [f.path for f in result.files] == sorted(f.path for f in result.files)
    assert [s.path for s in result.skipped] == sorted(s.path for s in result.skipped)


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_invalid_utf8_is_decoded_with_replacement_and_flagged(tmp_path: Path, git: bool) -> None:
    root = make_hostile_repo(tmp_path / "repo", git=git)
    texts, _ = _read_all(root, walk(root))
    flagged = {path for path, (_, invalid) in texts.items() if invalid}
    assert flagged == INVALID_UTF8_FILES
    text, _ = texts["src/latin1.py"]
    assert text == "# caf\ufffd au lait\nname = 'Jos\ufffd'\n"
    assert texts["src/empty.py"] == ("", False)


def test_skip_details_name_the_problem(tmp_path: Path) -> None:
    root = make_hostile_repo(tmp_path / "repo", git=True)
    details = {s.path: s.detail for s in walk(root).skipped}
    assert "5,2" in details["big.py"] and "limit 1,048,576" in details["big.py"]
    assert details["node_modules"] == "2 files"
    assert "FIFO" in details["pipe.txt"]
    assert str(tmp_path / "outside_secret.py") in details["outside_link.py"]
    assert details["assets/logo.png"] == "file type .png"


def test_reading_a_fifo_or_a_directory_named_like_a_file_never_blocks(tmp_path: Path) -> None:
    root = make_hostile_repo(tmp_path / "repo", git=False)
    for rel, words in (("pipe.txt", "FIFO"), ("weird.py", "directory")):
        out = read_source(root, SourceFile(path=rel, size=0, mtime_ns=0, language=None))
        assert isinstance(out, SkippedFile)
        assert out.reason is SkipReason.UNREADABLE
        assert words in out.detail


def test_a_file_deleted_after_the_walk_is_unreadable_with_the_os_error(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    path = _write(root, "gone.py", "x = 1\n")
    (file,) = walk(root).files
    path.unlink()
    out = read_source(root, file)
    assert isinstance(out, SkippedFile)
    assert out.reason is SkipReason.UNREADABLE
    assert "No such file" in out.detail


def test_tracked_but_deleted_files_are_dropped_and_untracked_ones_listed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "kept.py", "a = 1\n")
    _write(root, "deleted.py", "b = 2\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    (root / "deleted.py").unlink()
    _write(root, "new.py", "c = 3\n")
    result = walk(root)
    assert result.is_git
    assert [f.path for f in result.files] == ["kept.py", "new.py"]
    assert result.skipped == ()


def test_plain_walk_honours_nested_gitignore_directory_patterns(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "src/.gitignore", "build/\n/local.py\n")
    _write(root, "src/build/out.py", "generated = True\n")
    _write(root, "src/local.py", "anchored to src/\n")
    _write(root, "src/deeper/local.py", "not matched by an anchored pattern\n")
    _write(root, "build/top.py", "src/.gitignore does not reach here\n")
    paths = [f.path for f in walk(root).files]
    assert paths == ["build/top.py", "src/.gitignore", "src/deeper/local.py"]


@pytest.mark.parametrize("git", [False, True])
def test_ignoring_everything_then_taking_back_folders_and_dotted_names_walks_as_git(
    tmp_path: Path, git: bool
) -> None:
    root = tmp_path / "repo"
    _write(root, ".gitignore", "*\n!*.*\n!*/\n")
    _write(root, "core/timer/wheel.go", "package timer\n")
    _write(root, "core/timer/NOTES", "no dot: ignored\n")
    _write(root, "BUILD", "no dot: ignored\n")
    if git:
        _git(root, "init", "-q")
    paths = [f.path for f in walk(root).files]
    assert paths == [".gitignore", "core/timer/wheel.go"]


def test_a_gitignore_line_git_cannot_read_is_skipped_as_git_skips_it(tmp_path: Path) -> None:
    # psf/black's test data holds such a file on purpose; the walk stopped with an error on it.
    root = tmp_path / "repo"
    _write(root, "data/.gitignore", "!\n*.log\n")
    _write(root, "data/kept.py", "kept = True\n")
    _write(root, "data/run.log", "ignored\n")
    assert [f.path for f in walk(root).files] == ["data/.gitignore", "data/kept.py"]


def test_exclude_keeps_the_index_directory_out(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "main.py", "print('hi')\n")
    _write(root, ".coderag/index.sqlite-wal", "not source\n")
    assert {f.path for f in walk(root).files} == {"main.py", ".coderag/index.sqlite-wal"}
    assert [f.path for f in walk(root, exclude=[root / ".coderag"]).files] == ["main.py"]


def test_size_limit_is_inclusive_and_configurable(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "at_limit.py", "x" * 99 + "\n")
    _write(root, "over_limit.py", "x" * 100 + "\n")
    result = walk(root, max_file_bytes=100)
    assert [f.path for f in result.files] == ["at_limit.py"]
    assert [(s.path, s.reason) for s in result.skipped] == [("over_limit.py", SkipReason.TOO_LARGE)]


def test_virtualenvs_are_vendored_by_marker_not_by_name(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "env/pyvenv.cfg", "home = /usr/bin\n")
    _write(root, "env/lib/site.py", "installed = True\n")
    _write(root, "venv/__init__.py", "# a package that happens to be called venv\n")
    result = walk(root)
    assert [f.path for f in result.files] == ["venv/__init__.py"]
    assert [(s.path, s.reason) for s in result.skipped] == [("env", SkipReason.VENDORED)]


def test_symlinked_directory_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "real/mod.py", "x = 1\n")
    os.symlink("real", root / "alias")
    result = walk(root)
    assert [f.path for f in result.files] == ["real/mod.py"]
    assert [(s.path, s.reason) for s in result.skipped] == [("alias", SkipReason.NOT_A_FILE)]


def test_nested_git_repository_is_reported_not_entered(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "main.py", "x = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    inner = root / "inner"
    _write(inner, "lib.py", "y = 2\n")
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    _git(inner, "add", "-A")
    _git(inner, "commit", "-q", "-m", "inner")
    result = walk(root)
    assert [f.path for f in result.files] == ["main.py"]
    assert [(s.path, s.reason) for s in result.skipped] == [("inner", SkipReason.NOT_A_FILE)]


def test_a_folder_its_repository_ignores_is_still_walked(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, ".gitignore", "build/\n")
    _write(root, "build/gen.py", "z = 3\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = walk(root / "build")
    assert not result.is_git
    assert [f.path for f in result.files] == ["gen.py"]


def test_long_lines_count_characters_not_bytes(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root, "accents.py", "s = '" + "é" * 990 + "'\n")  # 995 characters, 1985 bytes
    _write(root, "long.py", "s = '" + "a" * 1000 + "'\n")
    files = {f.path: f for f in walk(root).files}
    assert isinstance(read_source(root, files["accents.py"]), tuple)
    out = read_source(root, files["long.py"])
    assert isinstance(out, SkippedFile) and out.reason is SkipReason.MINIFIED
    assert "1,006 characters" in out.detail


def test_nul_byte_means_binary_and_crlf_and_bom_are_normalised(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "data.dat").write_bytes(b"header\x00\x01\x02")
    (root / "win.py").write_bytes(b"\xef\xbb\xbfa = 1\r\nb = 2\r\n")
    files = {f.path: f for f in walk(root).files}
    out = read_source(root, files["data.dat"])
    assert isinstance(out, SkippedFile) and out.reason is SkipReason.BINARY
    assert read_source(root, files["win.py"]) == ("a = 1\nb = 2\n", False)


def test_content_hash_is_sha1_of_utf8_text() -> None:
    assert text_hash("héllo") == hashlib.sha1("héllo".encode()).hexdigest()
    assert text_hash("a") != text_hash("b")


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_file_name_that_is_not_utf8_is_skipped_not_crashed_on(tmp_path: Path, git: bool) -> None:
    root = tmp_path / "repo"
    _write(root, "ok.py", "x = 1\n")
    (root / os.fsdecode(b"caf\xe9.py")).write_text("y = 2\n", encoding="utf-8")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = walk(root)
    assert [f.path for f in result.files] == ["ok.py"]
    (skip,) = result.skipped
    assert skip.reason is SkipReason.UNREADABLE and "UTF-8" in skip.detail
    skip.path.encode("utf-8")  # safe to store and print


def test_a_link_swapped_in_after_the_walk_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.py").write_text("print('mine')\n")
    secret = tmp_path / "outside-notes.py"
    secret.write_text("TOKEN = 'not for the index'\n")
    result = walk(root)
    [listed] = result.files
    (root / "notes.py").unlink()
    (root / "notes.py").symlink_to(secret)  # swapped in between the walk and the read
    skipped = read_source(root, listed)
    assert isinstance(skipped, SkippedFile)
    assert skipped.reason is SkipReason.UNREADABLE
    assert "replaced while indexing" in skipped.detail
    # The next walk vets the link itself: it points outside the repository.
    again = walk(root)
    assert not again.files
    assert [s.reason for s in again.skipped] == [SkipReason.SYMLINK_OUTSIDE]


_TRICKY_NAMES = [
    "a.py", "A.PY", "x.min.js", "X.MIN.JS", "foo.js.map", "a.min.mjs", "pkg.min.css", ".env",
    ".env.local", ".env.example", ".envrc", ".envfoo", "prod.env", "prod.example.env", "y.ENV",
    "id_rsa", "ID_RSA", "key.pem", "a.PEM", "x.key", "Makefile", "Dockerfile.dev", "dockerfile",
    "foo.DockerFile", "CMakeLists.txt", "yarn.lock", "Cargo.lock", "go.sum", "img.png", "x.PNG",
    "..x", "...", "foo.", ".bashrc", ".py", "a..py", "..a.py", "credentials.json", ".netrc",
    "x.tar.gz", "readme", "README.md", "a.b.c.ts", "Gemfile", "Gemfile.lock", "x.sqlite3",
    "a.h++", "a.C", "build.gradle", "SConstruct", "x.d.ts", "noext", "a.unknownext",
]  # fmt: skip


@pytest.mark.parametrize("include_secret_files", [False, True])
def test_walk_decides_by_extension_exactly_as_by_the_whole_name(
    include_secret_files: bool,
) -> None:
    """The per-extension shortcut gives every name the verdict its full rules give, in any order."""
    from coderag_tui.core.index import walk as walk_module

    for order in (_TRICKY_NAMES, _TRICKY_NAMES[::-1]):
        collector = walk_module._Collector(
            "/nowhere", 1 << 20, include_secret_files=include_secret_files
        )
        for name in order:
            verdict = collector._by_name(name, name)
            full = collector._name_verdict(name.lower())
            if full.skip is None:
                assert verdict == full, name
            else:
                assert verdict is None and collector.skipped[-1] == SkippedFile(
                    name, full.skip, full.detail
                ), name
        assert walk_module._extension(".x.y") == os.path.splitext(".x.y")[1]
    for name in _TRICKY_NAMES:
        low = name.lower()
        assert walk_module._extension(low) == os.path.splitext(low)[1], name


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_coderagignore_leaves_out_more_at_the_root_and_nested(tmp_path: Path, git: bool) -> None:
    root = tmp_path / "repo"
    _write(root, ".gitignore", "*.log\n")
    _write(root, ".coderagignore", "fixtures/\n*.snap\n!keep.snap\n")
    _write(root, "src/.coderagignore", "generated_*.py\n")
    _write(root, "src/app.py", "x = 1\n")
    _write(root, "src/generated_api.py", "y = 2\n")
    _write(root, "lib/generated_ok.py", "the nested file reaches only its own folder\n")
    _write(root, "fixtures/big.py", "z = 3\n")
    _write(root, "tests/a.snap", "snapshot\n")
    _write(root, "tests/keep.snap", "re-included by the same file\n")
    _write(root, "debug.log", "ignored by git, not re-included by coderag's !pattern\n")
    _write(root, "keep.log", "x\n")
    _write(root, ".coderagignore.bak", "y\n")
    _write(root, ".coderagignore2", "!debug.log\n")
    if git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
    paths = [f.path for f in walk(root).files]
    assert "src/app.py" in paths and "lib/generated_ok.py" in paths
    assert "tests/keep.snap" in paths
    for gone in ("src/generated_api.py", "fixtures/big.py", "tests/a.snap", "debug.log"):
        assert gone not in paths, gone


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_vet_names_the_ignore_file_that_leaves_a_path_out(tmp_path: Path, git: bool) -> None:
    root = tmp_path / "repo"
    _write(root, ".gitignore", "*.log\n")
    _write(root, ".coderagignore", "secret_plans/\n")
    _write(root, "pkg/.coderagignore", "old_*.py\n")
    _write(root, "secret_plans/p.py", "x = 1\n")
    _write(root, "pkg/old_api.py", "x = 1\n")
    _write(root, "pkg/new_api.py", "x = 1\n")
    _write(root, "run.log", "x\n")
    if git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
    for rel, by in (
        ("secret_plans/p.py", ".coderagignore"),
        ("pkg/old_api.py", ".coderagignore"),
        ("run.log", ".gitignore"),
    ):
        found = vet(root, rel)
        assert isinstance(found, SkippedFile) and found.detail == f"ignored by {by}", rel
    assert isinstance(vet(root, "pkg/new_api.py"), SourceFile)
