"""Datasets: JSONL rows, locating repositories, trees at a commit, rows from git history."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from coderag_tui.core.eval.datasets import (
    CandidateFilter,
    DatasetError,
    EvalRow,
    find_repository,
    from_git_history,
    is_test_path,
    load_dataset,
    materialise_tree,
    missing_files,
    rows_to_jsonl,
)
from coderag_tui.core.eval.metrics import GoldChunk, Target

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [*GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = {
        "c0": commit(repo, "initial", {"a.py": "a = 1\n", "b.py": "b = 1\n", "README.md": "r\n"}),
        "c1": commit(repo, "Fix the a constant", {"a.py": "a = 2\n"}),
        "c2": commit(repo, "Docs only", {"README.md": "readme v2\n"}),
        "c3": commit(repo, "Add c", {"c.py": "c = 1\n"}),
        "c4": commit(
            repo,
            "Touch a and b\n\nWith a body.",
            {
                "a.py": "a = 3\n",
                "b.py": "b = 3\n",
                "d.py": "new\n",
            },
        ),
        "c5": commit(repo, "Too many files", {f"m{i}.py": f"m = {i}\n" for i in range(6)}),
        "c6": commit(repo, "Touch all six", {f"m{i}.py": f"m = {i + 10}\n" for i in range(6)}),
    }
    # a merge commit that modifies a.py must be skipped
    git(repo, "checkout", "-q", "-b", "side", shas["c4"])
    commit(repo, "side change", {"b.py": "b = 4\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    return repo, shas


def test_load_dataset_accepts_both_field_spellings(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps(
            {
                "instance_id": "x-1",
                "problem_statement": "why",
                "gold_files": ["a.py"],
                "repo": "o/n",
                "base_commit": "abc",
            }
        )
        + "\n\n"
        + json.dumps(
            {
                "id": "2",
                "query": "how",
                "gold_files": ["/b.py"],
                "gold_chunks": [{"path": "b.py", "start_line": 3, "end_line": 9}],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    rows = load_dataset(path)
    assert rows == [
        EvalRow("x-1", "why", ("a.py",), repo="o/n", base_commit="abc"),
        EvalRow("2", "how", ("b.py",), gold_chunks=(GoldChunk("b.py", 3, 9),)),
    ]
    assert load_dataset(_write(tmp_path / "again.jsonl", rows_to_jsonl(rows))) == rows


SEMBLE_ROW = {
    "id": "fastapi-15",
    "query": "Depends",
    "gold_files": ["fastapi/params.py"],
    "gold_chunks": [{"path": "fastapi/params.py", "start_line": 746, "end_line": 749}],
    "secondary_files": ["fastapi/param_functions.py"],
    "category": "symbol",
    "repo": "fastapi/fastapi",
    "base_commit": "c3c9dd6b1a08",
    "language": "python",
    "benchmark_root": "fastapi/",
}


def test_semble_rows_keep_category_language_scope_and_targets(tmp_path: Path) -> None:
    plain = {
        **SEMBLE_ROW,
        "id": "fastapi-0",
        "query": "how does dependency injection work",
        "gold_files": ["fastapi/dependencies/utils.py"],
        "gold_chunks": [],
        "secondary_files": ["fastapi/dependencies/models.py", "fastapi/params.py"],
        "category": "architecture",
        "benchmark_root": None,
    }
    path = _write(tmp_path / "nl.jsonl", json.dumps(SEMBLE_ROW) + "\n" + json.dumps(plain) + "\n")
    symbol, architecture = load_dataset(path)
    assert symbol.semble and architecture.semble
    assert (symbol.category, symbol.language, symbol.benchmark_root) == (
        "symbol",
        "python",
        "fastapi",
    )
    assert architecture.benchmark_root is None
    # the range's file is listed in gold_files for file-level metrics; semble's target is the
    # range alone, then the secondary file
    assert symbol.targets == (
        Target("fastapi/params.py", 746, 749),
        Target("fastapi/param_functions.py"),
    )
    assert architecture.targets == (
        Target("fastapi/dependencies/utils.py"),
        Target("fastapi/dependencies/models.py"),
        Target("fastapi/params.py"),
    )
    again = load_dataset(_write(tmp_path / "again.jsonl", rows_to_jsonl([symbol, architecture])))
    assert again == [symbol, architecture]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("secondary_files", "a.py", "`secondary_files` that is not a list"),
        ("benchmark_root", ["src"], "`benchmark_root` that is not a folder path"),
    ],
)
def test_bad_semble_fields_name_the_line(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = _write(tmp_path / "d.jsonl", json.dumps({**SEMBLE_ROW, field: value}) + "\n")
    with pytest.raises(DatasetError, match=f"line 1 has a {message}"):
        load_dataset(path)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q", "gold_files": ["a"]}', "line 2 has no `id`"),
        ('{"id": "1", "gold_files": ["a"]}', "line 2 has no `query`"),
        ('{"id": "1", "query": "q", "gold_files": []}', "line 2 needs `gold_files`"),
        ("{not json", "line 2 is not valid JSON"),
    ],
)
def test_bad_rows_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    good = '{"id": "0", "query": "q", "gold_files": ["a.py"]}'
    path = _write(tmp_path / "d.jsonl", good + "\n" + line + "\n")
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_candidate_filter_include_and_tests() -> None:
    only_src = CandidateFilter(include=("*.py",), exclude_tests=True)
    assert only_src.accepts("pkg/core.py")
    assert not only_src.accepts("pkg/core.js")
    assert not only_src.accepts("pkg/tests/test_core.py")
    assert not only_src.accepts("test/helpers.py")
    assert not only_src.accepts("conftest.py")
    assert not only_src.accepts("pkg/core_test.py")
    assert only_src.accepts("pkg/testing_utils.py")  # a module name, not a tests folder
    assert CandidateFilter().accepts("anything.md")
    assert not CandidateFilter().active
    assert is_test_path("src/pkg/test_x.py")


def test_exclude_tests_leaves_out_tests_in_every_language_not_only_pythons() -> None:
    """`--exclude-tests` once kept foo.test.ts, FooTest.java, __tests__/ and x_spec.rb."""
    only_src = CandidateFilter(exclude_tests=True)
    for test in (
        "src/router.test.ts",
        "src/main/java/com/x/ReaderTest.java",
        "lib/__tests__/parse.js",
        "lib/x_spec.rb",
        "pkg/server_test.go",
        "src/format.tests.cpp",
        "tests.py",
    ):
        assert not only_src.accepts(test), test
    for source in ("src/router.ts", "src/main/java/com/x/Latest.java", "lib/contest.rb"):
        assert only_src.accepts(source), source


def test_candidate_filter_under_a_benchmark_root() -> None:
    scoped = CandidateFilter(include=("*.py",)).under("src/click/")
    assert scoped.accepts("src/click/core.py")
    assert not scoped.accepts("src/click/core.txt")  # the include still holds
    assert not scoped.accepts("src/clicker/core.py")  # a folder, not a name prefix
    assert not scoped.accepts("docs/conf.py")
    assert CandidateFilter().under(None) == CandidateFilter()  # no root: unchanged
    assert CandidateFilter().under("lib").active
    assert CandidateFilter().under("lib").key == "under-lib"


def test_find_repository_layouts(tmp_path: Path, history_repo: tuple[Path, dict[str, str]]) -> None:
    repo, _ = history_repo
    repos = tmp_path / "repos"
    (repos / "acme").mkdir(parents=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(repo), str(repos / "acme+widget" / "repo")], check=True
    )
    subprocess.run(["git", "clone", "-q", str(repo), str(repos / "acme" / "tool")], check=True)
    assert find_repository(repos, "acme/widget") == repos / "acme+widget" / "repo"
    assert find_repository(repos, "acme/tool") == repos / "acme" / "tool"
    assert find_repository(repos, "acme/absent") is None


def test_tree_at_base_commit_has_no_later_files(
    tmp_path: Path, history_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = history_repo
    cache = tmp_path / "trees"
    tree = materialise_tree(repo, shas["c1"], cache_dir=cache, label="proj")
    assert (tree / "a.py").read_text() == "a = 2\n"  # as of c1, not c4's "a = 3"
    assert not (tree / "c.py").exists()  # added later
    assert (repo / "a.py").read_text() == "a = 3\n"  # the working tree is untouched
    assert git(repo, "status", "--porcelain") == ""
    # a later run reuses the folder instead of extracting again
    (tree / "marker").write_text("kept")
    assert materialise_tree(repo, shas["c1"][:8], cache_dir=cache, label="proj") == tree
    assert (tree / "marker").exists()
    assert [p.name for p in cache.iterdir() if p.name.endswith(".partial")] == []


def test_tree_from_a_bare_repository_with_a_candidate_filter(
    tmp_path: Path, history_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = history_repo
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    only_py = CandidateFilter(include=("*.py",))
    tree = materialise_tree(bare, shas["c0"], cache_dir=tmp_path / "t", candidates=only_py)
    assert sorted(p.name for p in tree.iterdir()) == ["a.py", "b.py"]
    full = materialise_tree(bare, shas["c0"], cache_dir=tmp_path / "t")
    assert full != tree
    assert (full / "README.md").exists()


def test_tree_under_a_root_holds_only_that_folder(tmp_path: Path) -> None:
    repo = tmp_path / "scoped"
    repo.mkdir()
    git(repo, "init", "-q")
    sha = commit(
        repo,
        "init",
        {"lib/a.rb": "a\n", "lib/x/b.rb": "b\n", "spec/a_spec.rb": "s\n", "README.md": "r\n"},
    )
    tree = materialise_tree(
        repo, sha, cache_dir=tmp_path / "t", candidates=CandidateFilter().under("lib")
    )
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == [
        "lib/a.rb",
        "lib/x/b.rb",
    ]
    assert tree.name.endswith("-under-lib")


def test_missing_commit_says_so_and_leaves_nothing(
    tmp_path: Path, history_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, _ = history_repo
    cache = tmp_path / "trees"
    with pytest.raises(DatasetError, match="commit 0123abcd is not in"):
        materialise_tree(repo, "0123abcd", cache_dir=cache)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_from_git_history_builds_the_expected_rows(
    history_repo: tuple[Path, dict[str, str]],
) -> None:
    repo, shas = history_repo
    rows = from_git_history(repo, 10)
    # newest first; skipped: the merge, the side commit's parent chain is included (it is a
    # normal commit modifying b.py), 6-file commits, docs-only, add-only and the root commit
    side = git(repo, "rev-parse", "side")
    assert [(r.id, r.gold_files, r.base_commit) for r in rows] == [
        (side[:12], ("b.py",), shas["c4"]),
        (shas["c4"][:12], ("a.py", "b.py"), shas["c3"]),
        (shas["c1"][:12], ("a.py",), shas["c0"]),
    ]
    assert rows[1].query == "Touch a and b\n\nWith a body."
    assert all(r.repo is None for r in rows)
    assert len(from_git_history(repo, 1)) == 1


def test_from_git_history_outside_git_says_so(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not a git repository"):
        from_git_history(tmp_path, 3)


def test_absent_blob_is_left_out_and_listed(
    tmp_path: Path, history_repo: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = history_repo
    blob = git(repo, "rev-parse", f"{shas['c0']}:README.md")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # like a mirror without big files
    tree = materialise_tree(repo, shas["c0"], cache_dir=tmp_path / "trees")
    assert sorted(p.name for p in tree.iterdir()) == ["a.py", "b.py"]
    assert (tree / "a.py").read_text() == "a = 1\n"
    assert missing_files(tree) == ["README.md"]
