"""Evaluation datasets: JSONL rows, the repository tree each row is asked against, git history.

A row names a question, the files that answer it and, optionally, the repository and commit
it was asked at. Two formats are read: SWE-bench's (`instance_id`, `problem_statement`,
`gold_files`) and semble's annotations (`query`, `gold_files`, `gold_chunks`,
`secondary_files`, `category`, `language`, `benchmark_root`), whose rows are also scored
the way semble scores them (see `EvalRow.targets`). The tree at that commit is read with git
itself (`git ls-tree` and `git cat-file`, like `git archive` but filtering first and
tolerating absent blobs) into a cache folder that later runs reuse, so nobody's working tree
is ever checked out over.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from coderag_tui.core import git
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.eval.gold_lines import changed_lines
from coderag_tui.core.eval.metrics import GoldChunk, Target
from coderag_tui.core.index.languages import language_for
from coderag_tui.core.rank.roles import path_roles
from coderag_tui.core.visible import one_line

# Fields only semble's annotation format has: a row with any of them is scored the semble way.
SEMBLE_FIELDS = ("secondary_files", "category", "benchmark_root")
# Languages whose files count as source code for --from-git-history (not docs or config).
SOURCE_LANGUAGES = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "ruby",
        "c_sharp",
        "php",
        "kotlin",
        "scala",
        "swift",
        "lua",
        "shell",
        "bash",
        "sql",
        "r",
        "perl",
        "haskell",
        "elixir",
        "erlang",
        "clojure",
        "dart",
        "julia",
        "zig",
        "ocaml",
        "objectivec",
        "objective_c",
        "groovy",
        "nim",
        "powershell",
        "vue",
        "svelte",
    }
)

MAX_ROW_BYTES = 4 << 20  # of one dataset line: a question with its answers, never a file
MISSING_SUFFIX = ".missing.txt"  # beside a tree: files whose blob the repository lacks


class DatasetError(CoderagError):
    """A dataset or repository problem the user can fix; the message is one sentence."""


@dataclass(frozen=True, slots=True)
class EvalRow:
    """One question with the files (and optionally line ranges) that answer it."""

    id: str
    query: str
    gold_files: tuple[str, ...]
    repo: str | None = None
    base_commit: str | None = None
    gold_chunks: tuple[GoldChunk, ...] = ()
    secondary_files: tuple[str, ...] = ()  # also relevant (semble's `secondary`)
    category: str | None = None  # semble: semantic / architecture / symbol
    language: str | None = None
    benchmark_root: str | None = None  # only files under this folder are candidates
    semble: bool = False  # in semble's format: scored by semble's NDCG@10 over `targets`
    # A code-to-code query's own lines (`origin` in JSONL: path, start_line, end_line): its
    # chunks rank in no list, and the structure-aware lists start from its file.
    origin: GoldChunk | None = None
    # The original lines the answer's change touched: from SWE-bench's `patch`, a commit's
    # diff (history rows) or `changed_lines` (`core.eval.gold_lines`).
    changed: tuple[GoldChunk, ...] = ()

    @property
    def gold_lines(self) -> tuple[GoldChunk, ...]:
        """The lines a prompt should carry: the gold ranges, then the changed lines."""
        return (*self.gold_chunks, *self.changed)

    @property
    def targets(self) -> tuple[Target, ...]:
        """What semble's NDCG@10 looks for: the relevant targets, then the secondary files.

        A gold line range is one target; a gold file is a target of its own only when no
        gold range names it, because the dataset lists a range's file among `gold_files` too
        (for file-level metrics) while semble's annotation has the range alone.
        """
        ranged = {chunk.path for chunk in self.gold_chunks}
        return (
            *(Target(c.path, c.start_line, c.end_line) for c in self.gold_chunks),
            *(Target(path) for path in self.gold_files if path not in ranged),
            *(Target(path) for path in self.secondary_files),
        )


def _text(row: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = row.get(name)
        if value is not None and str(value).strip():
            return str(value)
    return None


def _paths(row: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = row.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where} has a `{name}` that is not a list of paths: fix it.")
    return tuple(v.strip("/") for v in value)


def _root(row: dict[str, Any], where: str) -> str | None:
    value = row.get("benchmark_root")
    if value is None:
        return None
    if not isinstance(value, str):
        raise DatasetError(f"{where} has a `benchmark_root` that is not a folder path: fix it.")
    root = value.strip().strip("/")
    return None if root in ("", ".") else root


def parse_row(row: dict[str, Any], where: str) -> EvalRow:
    """Turn one decoded JSON object into an EvalRow, naming the line when a field is missing."""
    row_id = _text(row, "id", "instance_id")
    query = _text(row, "query", "problem_statement")
    gold = row.get("gold_files")
    if row_id is None:
        raise DatasetError(f"{where} has no `id` or `instance_id`: add one to every row.")
    if query is None:
        raise DatasetError(f"{where} has no `query` or `problem_statement`: add the question.")
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
        raise DatasetError(f"{where} needs `gold_files`, a non-empty list of paths.")
    chunks = _ranges_of(row, "gold_chunks", where)
    changed = _ranges_of(row, "changed_lines", where)
    patch = row.get("patch")
    if isinstance(patch, str):
        changed += changed_lines(patch)
    origin = None
    if row.get("origin") is not None:
        item = row["origin"]
        try:
            origin = GoldChunk(
                str(item["path"]).strip("/"), int(item["start_line"]), int(item["end_line"])
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(
                f"{where} has an origin without path/start_line/end_line: fix it."
            ) from exc
    repo = _text(row, "repo")
    base_commit = _text(row, "base_commit")
    if base_commit is not None:
        try:
            git.revision(base_commit.strip(), "base_commit")
        except git.BadRevision as exc:
            raise DatasetError(f"{where}: {exc}") from None
    return EvalRow(
        id=row_id,
        query=query,
        gold_files=tuple(g.strip("/") for g in gold),
        repo=None if repo is None else check_repo_name(repo.strip(), where),
        base_commit=None if base_commit is None else base_commit.strip(),
        gold_chunks=tuple(chunks),
        secondary_files=_paths(row, "secondary_files", where),
        category=_text(row, "category"),
        language=_text(row, "language"),
        benchmark_root=_root(row, where),
        semble=any(name in row for name in SEMBLE_FIELDS),
        origin=origin,
        changed=tuple(changed),
    )


def _ranges_of(row: dict[str, Any], name: str, where: str) -> list[GoldChunk]:
    """A row's list of line ranges (`gold_chunks`, `changed_lines`), or one sentence."""
    ranges: list[GoldChunk] = []
    for item in row.get(name) or ():
        try:
            ranges.append(
                GoldChunk(str(item["path"]), int(item["start_line"]), int(item["end_line"]))
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(
                f"{where} has a {name} entry without path/start_line/end_line: fix it."
            ) from exc
    return ranges


def _dataset_lines(handle: IO[bytes]) -> Iterator[str | None]:
    """The dataset's lines as text, None for one longer than `MAX_ROW_BYTES` (never read
    whole)."""
    while True:
        line = handle.readline(MAX_ROW_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_ROW_BYTES and not line.endswith(b"\n"):
            yield None
            return
        yield line.decode("utf-8", "replace").rstrip("\r\n")


def load_dataset(path: Path) -> list[EvalRow]:
    """Read a JSONL dataset (blank lines ignored) or say which line is wrong."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, a folder cannot be read
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"cannot read the dataset {path}: check the path ({exc}).") from exc
    with handle:
        return _rows(path, _dataset_lines(handle))


def _rows(path: Path, lines: Iterable[str | None]) -> list[EvalRow]:
    rows: list[EvalRow] = []
    for number, line in enumerate(lines, start=1):
        where = f"{one_line(path.name, 120)} line {number}"
        if line is None:
            raise DatasetError(
                f"{where} is longer than {MAX_ROW_BYTES // (1 << 20)} MiB: a row is one question."
            )
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where} is not valid JSON ({exc.msg}): fix that line.") from exc
        except RecursionError:
            raise DatasetError(
                f"{where} is nested too deeply to be a row: fix that line."
            ) from None
        if not isinstance(data, dict):
            raise DatasetError(f"{where} is not a JSON object: each line must be one row.")
        rows.append(parse_row(data, where))
    if not rows:
        raise DatasetError(f"{path} has no rows: add one JSON object per line.")
    return rows


# --- which files are candidates -------------------------------------------------------------


def is_test_path(path: str) -> bool:
    """Whether a repository path is a test in any language: what the role prior reads as a
    test (tests/, __tests__/, spec/, test_*.py, x_test.go, x.test.ts, XTest.java, x_spec.rb …,
    `core.rank.roles`), and Django's tests.py."""
    stem = PurePosixPath(path).name.rsplit(".", 1)[0]
    return stem == "tests" or "test" in path_roles(path, language_for(path))


@dataclass(frozen=True, slots=True)
class CandidateFilter:
    """Which files may be ranked: glob patterns to include (empty: all), whether tests count,
    and the folder they must lie under (empty: the whole repository)."""

    include: tuple[str, ...] = ()
    exclude_tests: bool = False
    root: str = ""

    @property
    def active(self) -> bool:
        return bool(self.include) or self.exclude_tests or bool(self.root)

    @property
    def key(self) -> str:
        """A short stable name of the filter, used in tree cache folder names."""
        if not self.active:
            return ""
        parts = [",".join(self.include) + ("-notests" if self.exclude_tests else "")]
        if self.root:
            parts.append(f"under-{self.root}")
        label = "-".join(p for p in parts if p)
        return "".join(c if c.isalnum() or c in "-_," else "_" for c in label)

    def under(self, root: str | None) -> CandidateFilter:
        """This filter, limited to files under `root` (a row's benchmark_root; None: unchanged)."""
        root = (root or "").strip("/")
        if not root or root == self.root:
            return self
        return CandidateFilter(self.include, self.exclude_tests, root)

    def accepts(self, path: str) -> bool:
        if self.root and not path.startswith(self.root + "/"):
            return False
        if self.exclude_tests and is_test_path(path):
            return False
        return not self.include or any(fnmatch.fnmatch(path, pat) for pat in self.include)


# --- repositories and trees -----------------------------------------------------------------


def is_git_dir(path: Path) -> bool:
    """A checkout (has .git) or a bare repository (HEAD + objects)."""
    return (path / ".git").exists() or _is_bare(path)


def _is_bare(path: Path) -> bool:
    """A bare repository the user keeps (HEAD + objects, no .git): git is given it with
    `--git-dir`, since it never takes a bare-looking folder it finds for itself."""
    return (
        not (path / ".git").exists() and (path / "HEAD").is_file() and (path / "objects").is_dir()
    )


def check_repo_name(repo: str, where: str) -> str:
    """A dataset's `repo`, owner/name or name: a path below `--repos`, never out of it."""
    parts = repo.replace("\\", "/").split("/")
    if repo.startswith("/") or any(part in ("", ".", "..") for part in parts) or len(repo) > 200:
        raise DatasetError(
            f"{where} has a repo {one_line(repr(repo), 80)} that is not a name like "
            "owner/name: a dataset names repositories under --repos, never a path out of it."
        )
    return repo


def find_repository(repos_dir: Path, repo: str) -> Path | None:
    """Locate owner/name under repos_dir: owner/name, name, owner+name or owner+name/repo."""
    owner, _, name = repo.rpartition("/")
    candidates = [repos_dir / repo, repos_dir / name]
    if owner:
        plus = repos_dir / f"{owner}+{name}"
        candidates += [plus, plus / "repo", repos_dir / f"{owner}__{name}"]
    root = os.path.normpath(repos_dir)
    for candidate in candidates:
        inside = os.path.normpath(candidate).startswith(root.rstrip(os.sep) + os.sep)
        if inside and candidate.is_dir() and is_git_dir(candidate):
            return candidate
    return None


def git_output(
    git_dir: Path, *args: str, revisions: Sequence[str] = (), paths: Sequence[str] | None = None
) -> str:
    """git's output in `git_dir` (a work tree or a bare repository), or a DatasetError."""
    done = git.run(git_dir, *args, revisions=revisions, paths=paths, git_dir=_is_bare(git_dir))
    if done is None or done.returncode != 0:
        err = "" if done is None else done.stderr.decode("utf-8", "replace").strip()
        raise DatasetError(f"git {' '.join(args[:2])} failed in {git_dir}: {one_line(err, 300)}")
    return done.stdout.decode("utf-8", "replace")


def start_git(git_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    """A running git in `git_dir` reading its stdin (`cat-file --batch`)."""
    return git.start(git_dir, *args, git_dir=_is_bare(git_dir), stdin=subprocess.PIPE)


def resolve_commit(git_dir: Path, commit: str) -> str:
    """The full sha of `commit` in git_dir, or a DatasetError saying it is missing."""
    try:
        out = git_output(
            git_dir, "rev-parse", "--verify", "--quiet", revisions=[f"{commit}^{{commit}}"]
        )
    except (DatasetError, git.BadRevision):
        raise DatasetError(
            f"commit {one_line(commit, 80)} is not in {git_dir}: fetch the repository's full "
            "history."
        ) from None
    return out.strip()


def commit_time(git_dir: Path, commit: str) -> int:
    """Committer time (unix seconds) of a commit, so rows can be ordered along history."""
    try:
        out = git_output(git_dir, "show", "-s", "--format=%ct", revisions=[commit], paths=())
        return int(out.strip() or 0)
    except (DatasetError, ValueError):
        return 0


def default_tree_cache() -> Path:
    from coderag_tui.locations import user_cache_dir

    return user_cache_dir() / "trees"


def materialise_tree(
    git_dir: Path,
    commit: str,
    *,
    cache_dir: Path | None = None,
    label: str = "",
    candidates: CandidateFilter = CandidateFilter(),
) -> Path:
    """The repository's tree at `commit`, extracted once with git into the cache folder.

    Only files the candidate filter accepts are written. The extraction goes to a temporary
    folder that is renamed into place when complete, so an interrupted run never leaves a
    half tree that a later run would reuse. Files whose blob the repository lacks are left
    out and listed by `missing_files(tree)`.
    """
    sha = resolve_commit(git_dir, commit)
    base = cache_dir if cache_dir is not None else default_tree_cache()
    name = label or git_dir.resolve().name
    suffix = f"-{candidates.key}" if candidates.active else ""
    final = base / f"{name}-{sha[:12]}{suffix}"
    if final.is_dir():
        return final
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=base))
    try:
        missing = _extract(git_dir, sha, tmp, candidates)
        sidecar = final.with_name(final.name + MISSING_SUFFIX)
        if missing:
            sidecar.write_text("\n".join(missing) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():  # someone else finished first: keep theirs
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _extract(git_dir: Path, sha: str, dest: Path, candidates: CandidateFilter) -> list[str]:
    """Write the accepted files of commit `sha` under dest; return paths whose blob is absent.

    Reads the tree with `git ls-tree` and the blobs with one `git cat-file --batch`, instead
    of `git archive`, because archive aborts on the first missing blob (mirrors and partial
    clones leave large data files out) and cannot filter before reading.
    """
    listing = git.run(
        git_dir, "ls-tree", "-r", "-z", "--full-tree", revisions=[sha], git_dir=_is_bare(git_dir)
    )
    if listing is None or listing.returncode != 0:
        err = "" if listing is None else listing.stderr.decode(errors="replace").strip()
        raise DatasetError(f"git ls-tree {sha[:12]} failed in {git_dir}: {one_line(err, 300)}")
    entries: list[tuple[str, str, str]] = []  # (mode, object, path)
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        path = raw_path.decode(errors="surrogateescape")
        if kind == "blob" and mode != "160000" and candidates.accepts(path):
            entries.append((mode, obj, path))
    proc = start_git(git_dir, "cat-file", "--batch")
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(
        target=feed_lines, args=(proc.stdin, [obj for _, obj, _ in entries]), daemon=True
    )
    feeder.start()
    missing: list[str] = []
    root = dest.resolve()
    try:
        for mode, _obj, path in entries:
            header = proc.stdout.readline().split()
            if len(header) != 3:  # "<obj> missing"
                missing.append(path)
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            target = (dest / path).resolve()
            if not target.is_relative_to(root):
                continue  # a path escaping the tree: never write outside the cache
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                with contextlib.suppress(OSError):
                    os.symlink(data.decode(errors="surrogateescape"), target)
            else:
                target.write_bytes(data)
    finally:
        feeder.join()
        proc.stdout.close()
        code = proc.wait()
    if code != 0:
        raise DatasetError(f"git cat-file failed in {git_dir} while reading {sha[:12]}.")
    return missing


def feed_lines(stream: IO[bytes], objects: Sequence[str]) -> None:
    """Write each object name on its own line to a `git cat-file --batch` stdin, then close
    it (a reader that stopped early is not an error)."""
    try:
        for obj in objects:
            stream.write(obj.encode() + b"\n")
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            stream.close()


def missing_files(tree: Path) -> list[str]:
    """Files of a materialised tree whose content the repository lacked (listed beside it)."""
    sidecar = tree.with_name(tree.name + MISSING_SUFFIX)
    try:
        return [line for line in sidecar.read_text(encoding="utf-8").splitlines() if line]
    except OSError:
        return []


# --- datasets from git history --------------------------------------------------------------


def is_source_path(path: str) -> bool:
    """Whether a path is source code in a known programming language."""
    return language_for(path) in SOURCE_LANGUAGES


@dataclass(frozen=True, slots=True)
class HistoryOptions:
    """Which commits make good questions: how many source files they modify, how far back."""

    min_files: int = 1
    max_files: int = 5
    max_scan: int = 0  # commits to look at; 0: 20 x N (at least 200)
    extra_source: tuple[str, ...] = field(default=())  # extra glob patterns counted as source


def from_git_history(
    repo: Path, n: int, *, options: HistoryOptions = HistoryOptions()
) -> list[EvalRow]:
    """The last n non-merge commits of HEAD that modify 1-5 existing source files, as rows.

    The commit message is the query, the parent is the base commit and the modified files
    (present at the parent) are the gold files.
    """
    if not is_git_dir(repo) and git.output(repo, "rev-parse", "--git-dir") is None:
        raise DatasetError(f"{repo} is not a git repository: --from-git-history needs one.")
    scan = options.max_scan or max(200, 20 * n)
    log = git_output(repo, "log", "--no-merges", f"-n{scan}", "--format=%H %P")
    rows: list[EvalRow] = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) != 2:  # root commit (no parent) or malformed
            continue
        sha, parent = parts
        raw = git_output(
            repo, "diff-tree", "-r", "-z", "--no-renames", "--name-status", revisions=[parent, sha]
        )
        fields_ = raw.split("\0")
        modified = [
            path
            for status, path in zip(fields_[0::2], fields_[1::2], strict=False)
            if status == "M"
            and (
                is_source_path(path)
                or any(fnmatch.fnmatch(path, pat) for pat in options.extra_source)
            )
        ]
        if not options.min_files <= len(modified) <= options.max_files:
            continue
        message = git_output(repo, "show", "-s", "--format=%B", revisions=[sha], paths=()).strip()
        if not message:
            continue
        diff = git_output(repo, "diff", "-U0", revisions=[parent, sha], paths=modified)
        rows.append(
            EvalRow(
                id=sha[:12],
                query=message,
                gold_files=tuple(sorted(modified)),
                base_commit=parent,
                changed=changed_lines(diff),
            )
        )
        if len(rows) >= n:
            break
    return rows


def rows_to_jsonl(rows: Sequence[EvalRow]) -> str:
    """Serialise rows in the dataset format (so a git-history dataset can be saved and edited)."""
    out = []
    for row in rows:
        data: dict[str, Any] = {
            "id": row.id,
            "query": row.query,
            "gold_files": list(row.gold_files),
        }
        if row.repo:
            data["repo"] = row.repo
        if row.base_commit:
            data["base_commit"] = row.base_commit
        if row.gold_chunks or row.semble:
            data["gold_chunks"] = [
                {"path": g.path, "start_line": g.start_line, "end_line": g.end_line}
                for g in row.gold_chunks
            ]
        if row.changed:
            data["changed_lines"] = [
                {"path": g.path, "start_line": g.start_line, "end_line": g.end_line}
                for g in row.changed
            ]
        if row.origin is not None:
            o = row.origin
            data["origin"] = {"path": o.path, "start_line": o.start_line, "end_line": o.end_line}
        if row.semble:
            data["secondary_files"] = list(row.secondary_files)
            data["category"] = row.category
            data["language"] = row.language
            data["benchmark_root"] = row.benchmark_root
        out.append(json.dumps(data, ensure_ascii=False))
    return "\n".join(out) + ("\n" if out else "")
