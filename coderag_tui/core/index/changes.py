"""The working tree's change against a commit, read from git: what `--diff [REF]` asks with.

`working_change(settings, ref)` diffs the work tree (staged and unstaged edits, and untracked
files the index would read) against the point where REF and HEAD meet (`git merge-base`):
HEAD itself by default, so `--diff` is "my uncommitted change", and `--diff main` is
everything this branch changed since it left main, uncommitted work included.

Only files the index would read take part (the walk's rules, `vet`): a changed key file, an
ignored or binary file, or one under a link never enters a query or a prompt; they are named
in `left_out`. Deleted files have no lines left to show and are named there too. The diff
is repository text: faces mask secrets in it before it reaches a prompt, as they do a task.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from coderag_tui.core import git
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.index.walk import vet
from coderag_tui.core.records import LineSpan, SourceFile
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.settings import Settings

MAX_DIFF_BYTES = 4 * 1024 * 1024  # of `git diff` output read; the rest is left out, said
MAX_QUERY_LINES = 400  # changed lines a query takes (BM25 and the embedder gain nothing more)
MAX_UNTRACKED = 50  # untracked files shown as added
_GIT_TIMEOUT_S = 60
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")


class ChangeError(CoderagError, ValueError):
    """The change cannot be read (not a git work tree, an unknown REF); one sentence."""


@dataclass(frozen=True)
class FileChange:
    """One file's part of the change: its diff text and changed lines (new-side numbers)."""

    path: str
    diff: str
    spans: tuple[LineSpan, ...]
    added: int
    removed: int


@dataclass(frozen=True)
class Change:
    """The work tree's change against `base` (REF's merge base with HEAD)."""

    ref: str
    base: str
    files: tuple[FileChange, ...]
    left_out: tuple[tuple[str, str], ...] = ()  # (path, why) of changed files not shown
    cut: bool = False  # git's output was longer than MAX_DIFF_BYTES

    @property
    def text(self) -> str:
        """The unified diff of the files shown, as `git diff` prints it."""
        return "".join(f.diff for f in self.files)

    @property
    def spans(self) -> tuple[LineSpan, ...]:
        return tuple(span for f in self.files for span in f.spans)

    @property
    def empty(self) -> bool:
        return not self.files

    def query(self, max_lines: int = MAX_QUERY_LINES) -> tuple[str, bool]:
        """The change as a query: each file's path, each hunk's enclosing line (git's
        function context) and the changed lines, added and removed, without their marks;
        and whether it was cut at `max_lines` changed lines."""
        out: list[str] = []
        taken = 0
        for change in self.files:
            out.append(change.path)
            in_hunk = False
            for line in change.diff.splitlines()[1:]:
                hunk = _HUNK.match(line)
                if not hunk and not in_hunk:  # the header: `--- a/…`, `+++ b/…`, index …
                    continue
                if hunk:
                    in_hunk = True
                    if hunk.group(5).strip():
                        out.append(hunk.group(5).strip())
                    continue
                if line[:1] in "+-" and line[1:].strip():
                    if taken >= max_lines:
                        return "\n".join(out), True
                    out.append(line[1:])
                    taken += 1
        return "\n".join(out), False

    def describe(self) -> str:
        """`3 files (+12 −4) against main (a1b2c3d)`, as a line names the change."""
        added = sum(f.added for f in self.files)
        removed = sum(f.removed for f in self.files)
        n = len(self.files)
        against = self.ref if self.ref == "HEAD" else f"{self.ref} ({self.base[:7]})"
        return f"{n} file{'s' if n != 1 else ''} (+{added} −{removed}) against {against}"


def working_change(settings: Settings, ref: str = "HEAD") -> Change:
    """The work tree's change against REF's merge base with HEAD (see the module docstring);
    ChangeError in one sentence when there is none to read."""
    root = str(settings.repo_root)
    ref = ref.strip() or "HEAD"
    try:
        git.revision(ref)
    except git.BadRevision:
        said = one_line(repr(ref), 80)
        raise ChangeError(
            f"{said} is not a commit: give a branch, tag or commit after --diff."
        ) from None
    if _git(root, "rev-parse", "--is-inside-work-tree") is None:
        raise ChangeError(
            f"{settings.repo_root} is not a git work tree: --diff compares your files with a "
            "commit of one."
        )
    target = _git(root, "rev-parse", "--verify", "--quiet", revisions=[f"{ref}^{{commit}}"])
    if target is None:
        if ref == "HEAD":
            raise ChangeError(
                "this repository has no commit yet: --diff compares your files with one."
            )
        raise ChangeError(
            f"{one_line(repr(ref), 80)} is not a commit of this repository: give a branch, tag "
            "or commit (git branch -a lists them)."
        )
    base = target.strip()
    if ref != "HEAD":
        meet = _git(root, "merge-base", revisions=[base, "HEAD"])
        if meet:
            base = meet.strip()
    raw = _git_bytes(
        root,
        "diff",
        "--no-color",
        "--no-renames",
        "--unified=3",
        "--src-prefix=a/",  # whatever the repository's diff.noprefix or mnemonicPrefix say
        "--dst-prefix=b/",
        "--relative",  # a repository inside a larger work tree: its own files, its own paths
        revisions=[base],
        paths=(),
    )
    if raw is None:
        raise ChangeError(f"git could not diff the work tree against {ref}.")
    cut = len(raw) > MAX_DIFF_BYTES
    text = raw[:MAX_DIFF_BYTES].decode("utf-8", errors="replace")
    shown: list[FileChange] = []
    left_out: list[tuple[str, str]] = []
    for section in sections(text):
        path, deleted = _path_of(section)
        if path is None:
            continue
        why = _why_not(settings, path, deleted=deleted)
        if why:
            left_out.append((path, why))
            continue
        shown.append(_file_change(path, section))
    listed = {f.path for f in shown} | {p for p, _ in left_out}
    shown += _untracked(settings, listed, left_out)
    return Change(ref, base, tuple(shown), tuple(left_out), cut)


def sections(text: str) -> list[str]:
    """The diff cut into one section per file (each starts with `diff --git`)."""
    starts = [m.start() for m in re.finditer(r"^diff --git ", text, flags=re.MULTILINE)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]


def paths_of(section: str) -> tuple[str | None, str | None]:
    """The `--- ` and `+++ ` names of a file's section (`a/…`, `b/…` or /dev/null), read in
    its header only (a content line may look like one)."""
    new = old = None
    for line in section.splitlines()[:8]:
        if line.startswith("@@"):  # the header ends here: below are the file's own lines
            break
        if line.startswith("+++ ") and new is None:
            new = line[4:]
        elif line.startswith("--- ") and old is None:
            old = line[4:]
    return old, new


def _path_of(section: str) -> tuple[str | None, bool]:
    """The file's repository path and whether it was deleted; None for a quoted (unusual)
    name, which is left out rather than guessed."""
    old, new = paths_of(section)
    if new == "/dev/null" and old is not None and old.startswith("a/"):
        return old[2:], True
    if new is not None and new.startswith("b/"):
        return new[2:].rstrip("\t"), False
    return None, False  # a binary file, a mode change or a quoted name: no lines to show


def _why_not(settings: Settings, path: str, *, deleted: bool) -> str:
    """Why a changed file does not take part ("" when it does): the walk's rules."""
    from coderag_tui.core.index.indexer import index_excludes

    if deleted:
        return "deleted"
    vetted = vet(
        settings.repo_root,
        path,
        max_file_bytes=settings.max_file_bytes,
        exclude=index_excludes(settings),
        include_secret_files=settings.include_secret_files,
    )
    if isinstance(vetted, SourceFile):
        return ""
    if vetted is None:
        return "not in the work tree"
    return f"{vetted.reason.value}: {vetted.detail}" if vetted.detail else vetted.reason.value


def _file_change(path: str, section: str) -> FileChange:
    """A file's diff and its changed lines (new-side numbers, see `changed_spans`)."""
    spans, added, removed = changed_spans(path, section, side="new")
    return FileChange(path, section, spans, added, removed)


def changed_spans(  # noqa: C901
    path: str, section: str, *, side: Literal["new", "old"]
) -> tuple[tuple[LineSpan, ...], int, int]:
    """One file's section of a unified diff read on one side: the changed lines in that
    side's numbers, and how many lines were added and removed.

    On the new side each run of added lines is a span and a deletion with nothing added is
    the lines either side of it; the old side (the original file, `side="old"`) is the
    mirror: each run of removed lines, and the lines either side of a pure insertion. A hunk
    of no lines on that side (`@@ -20,0 …`) sits after its line, so the next line follows.
    """
    ours, theirs = ("+", "-") if side == "new" else ("-", "+")
    start_group = 3 if side == "new" else 1
    spans: list[LineSpan] = []
    added = removed = 0
    line_no = 0
    run_start: int | None = None
    gap: int | None = None  # lines were changed on the other side before this line, none here

    def close(end: int) -> None:
        nonlocal run_start, gap
        if run_start is not None:
            spans.append(LineSpan(path, run_start, end))
        elif gap is not None:  # only changed on the other side: the lines either side
            spans.append(LineSpan(path, max(1, gap - 1), gap))
        run_start = gap = None

    for line in section.splitlines():
        hunk = _HUNK.match(line)
        if hunk:
            close(line_no - 1)
            start, count = int(hunk.group(start_group)), hunk.group(start_group + 1)
            line_no = start + 1 if count == "0" else start
            continue
        if not line_no:  # the header (`+++ b/…` below a hunk is an added `++ b/…` line)
            continue
        mark = line[:1]
        added += mark == "+"
        removed += mark == "-"
        if mark == ours:
            if run_start is None:
                run_start = line_no
            line_no += 1
        elif mark == theirs:
            if run_start is None and gap is None:
                gap = line_no
        elif mark == " ":
            close(line_no - 1)
            line_no += 1
        # "\ No newline at end of file" and the like: no line of the file
    close(line_no - 1)
    merged: list[LineSpan] = []
    for span in sorted(spans, key=lambda s: (s.start_line, s.end_line)):
        if merged and span.start_line <= merged[-1].end_line + 1:
            last = merged[-1]
            merged[-1] = LineSpan(path, last.start_line, max(last.end_line, span.end_line))
        else:
            merged.append(span)
    return tuple(merged), added, removed


def _untracked(
    settings: Settings, listed: set[str], left_out: list[tuple[str, str]]
) -> list[FileChange]:
    """Untracked files the index reads, each shown as added whole (git diff leaves them out)."""
    from coderag_tui.core.index.indexer import read_indexable

    root = str(settings.repo_root)
    raw = _git_bytes(root, "ls-files", "-z", "--others", "--exclude-standard", paths=())
    names = [n for n in (raw or b"").decode("utf-8", "surrogateescape").split("\0") if n]
    found: list[FileChange] = []
    for path in sorted(names):
        if path in listed or path.endswith("/"):
            continue
        text = read_indexable(settings, path)
        if not isinstance(text, str):
            why = "not a file coderag indexes" if text is None else text.reason.value
            left_out.append((path, why))
            continue
        if len(found) >= MAX_UNTRACKED:
            left_out.append((path, f"more than {MAX_UNTRACKED} untracked files"))
            continue
        lines = text.splitlines()
        body = "".join(f"+{line}\n" for line in lines)
        diff = (
            f"diff --git a/{path} b/{path}\nnew file (untracked)\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}"
        )
        spans = (LineSpan(path, 1, max(1, len(lines))),)
        found.append(FileChange(path, diff, spans, len(lines), 0))
    return found


def _git_bytes(
    root: str, *argv: str, revisions: Sequence[str] = (), paths: Sequence[str] | None = None
) -> bytes | None:
    return git.output(root, *argv, revisions=revisions, paths=paths, timeout=_GIT_TIMEOUT_S)


def _git(root: str, *argv: str, revisions: Sequence[str] = ()) -> str | None:
    out = _git_bytes(root, *argv, revisions=revisions)
    return None if out is None else out.decode("utf-8", errors="replace")
