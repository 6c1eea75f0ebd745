"""Commit history as (query, answer) pairs, and a folder that follows a repository's history.

A commit's message is the query; the repository at its parent commit is the corpus; the
source files the commit modified (tests, vendored and generated files left out) are the
answer, the lines its hunks touched (in the parent's numbering) above the rest of each file.
Commits that say little about where code lives are left out: merges, bots, version bumps and
releases, reverts, formatting, dependency and CI changes, and commits touching more than a
few files. Everything is read with git from the repository's own object store, so nobody's
working tree is ever touched.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.core.eval.datasets import (
    DatasetError,
    feed_lines,
    git_output,
    is_source_path,
    is_test_path,
    start_git,
)
from coderag_tui.core.index.languages import language_for
from coderag_tui.core.rank.roles import path_roles

MAX_FILES = 8  # a commit touching more files than this (of any kind) says little about each
MAX_GOLD = 3  # source files a commit may modify to count
MIN_SUBJECT_WORDS = 3
MAX_QUERY_WORDS = 250  # a message's body beyond this is cut (issue-length queries)
MAX_BLOB_BYTES = 1024 * 1024  # larger files are left out of the followed tree (the index would)

_BOT = re.compile(
    r"\[bot\]|dependabot|renovate|github-actions|pre-commit-ci|greenkeeper|snyk|mergify"
    r"|allcontributors|semantic-release|release-please|weblate|transifex",
    re.IGNORECASE,
)
# Subjects that name no place in the code: releases, bumps, merges, reverts, housekeeping.
_SKIP_SUBJECT = re.compile(
    r"^\s*(?:merge\b|revert\b|release\b|prepare\b.*\brelease|bump\b|version\b|v?\d+\.\d+"
    r"|update (?:changelog|version|deps|dependencies)|changelog|typo|fix typo|wip\b"
    r"|(?:chore|build|ci|deps|docs|style|test|tests)(?:\([^)]*\))?!?:)",
    re.IGNORECASE,
)
_NOISE = re.compile(
    r"\b(?:typos?|formatting|reformat|whitespace|lint(?:ing)?|prettier|rustfmt|gofmt"
    r"|clang-format|copyright year)\b",
    re.IGNORECASE,
)
_TRAILER_NAMES = re.compile(
    r"^(?:signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|"
    r"suggested-by|helped-by|change-id|cc|fixes|closes|resolves|refs?|see|pr-url|"
    r"pr-close|reviewed-on|bug|issue|link)\s*:",
    re.IGNORECASE,
)
_PR_REF = re.compile(r"\s*\((?:#\d+|[\w.-]+/[\w.-]+#\d+)(?:,\s*#\d+)*\)|\[skip ci\]|\[ci skip\]")
_WORDS = re.compile(r"\S+")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)
# Files that answer no question about the code: tests and their fixtures, vendored, generated,
# examples, docs and benchmarks; build scripts; shell and SQL (glue more than code).
_NO_GOLD_ROLES = frozenset({"test", "vendored", "generated", "example", "docs", "benchmark"})
_NO_GOLD_LANGUAGES = frozenset({"shell", "bash", "sql", "powershell"})
_NO_GOLD_DIRS = frozenset({"regress", "regression", "fixtures", "testdata", "scripts", "tools"})
_BUILD_FILE = re.compile(
    r"^(?:(?:build|settings)\.gradle(?:\.kts)?|setup\.py|noxfile\.py|fabfile\.py|build\.rs"
    r"|package\.swift|(?:webpack|rollup|vite|vitest|jest|babel|eslint|tsup|gulpfile|gruntfile)"
    r"(?:\.[\w-]+)*\.(?:js|cjs|mjs|ts)|rakefile|gemfile|[\w.-]+\.gemspec)$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPair:
    """One commit as a question: its queries (the subject, and the whole message when it has
    a body), the parent it is asked at, and the lines each answering file's hunks touched."""

    sha: str
    parent: str
    time: int
    queries: tuple[str, ...]
    gold: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (path, ((start, end), …))

    @property
    def gold_files(self) -> tuple[str, ...]:
        return tuple(path for path, _ in self.gold)


@dataclass(frozen=True, slots=True)
class HistoryOptions:
    """Which commits are read (`scan` back from `commit`) and how many become pairs."""

    commit: str = "HEAD"
    scan: int = 600
    limit: int = 40
    seed: int = 0
    max_files: int = MAX_FILES
    max_gold: int = MAX_GOLD


def git(
    git_dir: Path,
    *args: str,
    revisions: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    check: bool = True,
) -> str:
    """git's output in `git_dir` (`core.git`'s way: none of the repository's programs, the
    revisions after `--end-of-options`); a DatasetError when it fails, or "" unless `check`."""
    try:
        return git_output(git_dir, *args, revisions=revisions, paths=paths)
    except DatasetError:
        if check:
            raise
        return ""


def clean_message(message: str) -> tuple[str, str]:
    """A commit message's subject and body without trailers, pull-request numbers and CI tags."""
    lines = [line.rstrip() for line in message.strip().splitlines()]
    kept = [line for line in lines if not _TRAILER_NAMES.match(line.strip())]
    subject = _PR_REF.sub("", kept[0] if kept else "").strip()
    body = _PR_REF.sub("", "\n".join(kept[1:])).strip()
    return subject, body


def queries_of(message: str) -> tuple[str, ...]:
    """The queries a commit message gives: its subject, and subject and body together when
    the body says something (8 words or more), cut to `MAX_QUERY_WORDS` words."""
    subject, body = clean_message(message)
    if len(_WORDS.findall(subject)) < MIN_SUBJECT_WORDS:
        return ()
    out = [subject]
    if len(_WORDS.findall(body)) >= 8:
        words = body.split(" ")
        text = " ".join(words[:MAX_QUERY_WORDS]) if len(words) > MAX_QUERY_WORDS else body
        out.append(f"{subject}\n\n{text}")
    return tuple(out)


def says_where(subject: str) -> bool:
    """Whether a subject may name a place in the code (not a release, bump or clean-up)."""
    return not _SKIP_SUBJECT.match(subject) and not _NOISE.search(subject)


def is_gold_path(path: str) -> bool:
    """A modified file that counts as an answer: source code, and none of the files that
    answer no question about it (see `_NO_GOLD_ROLES`)."""
    language = language_for(path)
    if not is_source_path(path) or is_test_path(path) or language in _NO_GOLD_LANGUAGES:
        return False
    parts = path.lower().split("/")
    if _BUILD_FILE.match(parts[-1]) or any(part in _NO_GOLD_DIRS for part in parts[:-1]):
        return False
    return not (path_roles(path, language) & _NO_GOLD_ROLES)


def hunks(git_dir: Path, parent: str, sha: str, path: str) -> tuple[tuple[int, int], ...]:
    """The parent's lines each hunk of `path` replaced; an insertion marks the lines around."""
    diff = git(
        git_dir, "diff", "-U0", "--no-renames", "--no-color", revisions=[parent, sha], paths=[path]
    )
    spans: list[tuple[int, int]] = []
    for match in _HUNK.finditer(diff):
        start = int(match.group(1))
        count = int(match.group(2)) if match.group(2) is not None else 1
        if count == 0:  # lines added after `start`: the lines around the insertion
            spans.append((max(start, 1), start + 1))
        else:
            spans.append((start, start + count - 1))
    return tuple(spans)


def history_pairs(git_dir: Path, options: HistoryOptions = HistoryOptions()) -> list[HistoryPair]:
    """Up to `limit` pairs drawn (seeded) from the eligible commits among the `scan` latest
    non-merge commits before `options.commit`, oldest first."""
    eligible: list[tuple[str, str, int, tuple[str, ...], list[str]]] = []
    position: dict[str, int] = {}  # in the log, newest first: the order of the history
    for sha, parents, name, email, when, message, changed in _log(git_dir, options):
        position[sha] = len(position)
        if len(parents.split()) != 1 or _BOT.search(name) or _BOT.search(email):
            continue
        subject, _ = clean_message(message)
        if not says_where(subject):
            continue
        queries = queries_of(message)
        if not queries:
            continue
        if not changed or len(changed) > options.max_files:
            continue
        gold = [path for kind, path in changed if kind == "M" and is_gold_path(path)]
        if not 1 <= len(gold) <= options.max_gold:
            continue
        eligible.append((sha, parents.strip(), int(when or 0), queries, gold))
    rng = random.Random(options.seed)
    chosen = eligible if len(eligible) <= options.limit else rng.sample(eligible, options.limit)
    pairs = []
    for sha, parent, at, queries, gold in chosen:
        spans = tuple((path, hunks(git_dir, parent, sha, path)) for path in sorted(gold))
        pairs.append(HistoryPair(sha=sha, parent=parent, time=at, queries=queries, gold=spans))
    pairs.sort(key=lambda p: -position[p.sha])
    return pairs


_Logged = tuple[str, str, str, str, str, str, list[tuple[str, str]]]


def _log(git_dir: Path, options: HistoryOptions) -> Iterator[_Logged]:
    """The `scan` latest non-merge commits (newest first): sha, parents, author name and
    email, time, message, and each changed path with its status (renames as delete + add),
    read with one `git log`."""
    text = git(
        git_dir, "log", "--no-merges", f"-n{options.scan}", "--no-renames", "--name-status",
        "-z", "--format=%x1e%H%x00%P%x00%an%x00%ae%x00%ct%x00%B%x00",
        revisions=[options.commit], paths=(),
    )  # fmt: skip
    for record in text.split("\x1e")[1:]:
        fields = record.split("\x00")
        if len(fields) < 6:
            continue
        sha, parents, name, email, when, message = fields[:6]
        rest = [f.strip("\n") for f in fields[6:]]
        rest = [f for f in rest if f]
        changed = list(zip(rest[0::2], rest[1::2], strict=False))
        yield sha, parents, name, email, when, message, changed


# --- a folder that follows the history -----------------------------------------------------


class FollowedTree:
    """A plain folder holding a repository's tree at one commit, moved from commit to commit
    by writing only the files that differ (so the index beside it is updated, not rebuilt)."""

    def __init__(self, git_dir: Path, folder: Path) -> None:
        self.git_dir = git_dir
        self.folder = folder
        self.commit: str | None = None

    def checkout(self, commit: str) -> None:
        """Make the folder hold the tree of `commit` (the first call writes every file)."""
        if commit == self.commit:
            return
        if self.commit is None:
            if self.folder.exists():
                shutil.rmtree(self.folder)
            self.folder.mkdir(parents=True)
            listing = git(self.git_dir, "ls-tree", "-r", "-z", "--full-tree", revisions=[commit])
            wanted: list[tuple[str, str]] = []
            for record in listing.split("\0"):
                meta, _, path = record.partition("\t")
                if not path:
                    continue
                mode, kind, obj = meta.split()
                if kind == "blob" and mode in ("100644", "100755"):
                    wanted.append((obj, path))
            self._write(wanted)
        else:
            diff = git(
                self.git_dir,
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                revisions=[self.commit, commit],
            )
            wanted = []
            fields = diff.split("\0")
            for meta, path in zip(fields[0::2], fields[1::2], strict=False):
                parts = meta.lstrip(":").split()
                if len(parts) != 5:
                    continue
                _, new_mode, _, new_obj, status = parts
                target = self.folder / path
                if status == "D" or new_mode not in ("100644", "100755"):
                    with contextlib.suppress(OSError):
                        target.unlink()
                    continue
                wanted.append((new_obj, path))
            self._write(wanted)
        self.commit = commit

    def _write(self, wanted: Sequence[tuple[str, str]]) -> None:
        root = self.folder.resolve()
        for (_, path), data in zip(
            wanted, _blobs(self.git_dir, [o for o, _ in wanted]), strict=True
        ):
            target = (self.folder / path).resolve()
            if not target.is_relative_to(root):
                continue  # a path escaping the folder: never written
            if data is None:
                with contextlib.suppress(OSError):
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            target.write_bytes(data)
            # Keep mtimes moving: the walk compares stat data, and a rewrite within the same
            # clock tick must still look changed.
            stat = target.stat()
            os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))


def _blobs(git_dir: Path, objects: Sequence[str]) -> Iterator[bytes | None]:
    """Each object's content in order (None for a missing or larger-than-`MAX_BLOB_BYTES` one)."""
    if not objects:
        return
    proc = start_git(git_dir, "cat-file", "--batch")
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(target=feed_lines, args=(proc.stdin, objects), daemon=True)
    feeder.start()
    try:
        for _ in objects:
            header = proc.stdout.readline().split()
            if len(header) != 3:
                yield None
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            yield data if size <= MAX_BLOB_BYTES else None
    finally:
        feeder.join()
        proc.stdout.close()
        proc.wait()
