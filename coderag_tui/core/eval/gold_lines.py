"""The lines of the original files that a change touched: the gold lines of a fix or a commit.

A unified diff (SWE-bench's `patch`, or `git diff` of a commit against its parent) names the
lines of the *original* file that the change removed or rewrote. A line the change only adds
has no original line of its own, so the original lines on either side of the insertion stand
for it: that is where a reader of the original file had to look. These lines are what a prompt
must carry for the model to see the code that the fix changed (`core.eval.budget`).
"""

from __future__ import annotations

from collections.abc import Iterable

from coderag_tui.core.eval.metrics import GoldChunk
from coderag_tui.core.index.changes import changed_spans, paths_of, sections

NO_FILE = "/dev/null"


def changed_lines(patch: str) -> tuple[GoldChunk, ...]:
    """The original-file line ranges a unified diff changes, per file, in file order: the
    old side of `core.index.changes.changed_spans`.

    Removed lines count as themselves (lines added in their place count no further); a pure
    insertion counts as the original lines just above and below it (only the line below
    when it inserts at the top). Files the diff creates (`--- /dev/null`) have no original
    lines and give none. A diff without `diff --git` lines is read as one file's.
    """
    found: list[GoldChunk] = []
    for section in sections(patch) or [patch]:
        old, _ = paths_of(section)
        if old is None or old == NO_FILE:
            continue
        path = old.removeprefix("a/").rstrip("\t")
        spans, _, _ = changed_spans(path, section, side="old")
        found += [GoldChunk(path, s.start_line, s.end_line) for s in spans]
    return tuple(found)


def line_sets(ranges: Iterable[GoldChunk]) -> dict[str, frozenset[int]]:
    """Gold line ranges as each file's set of line numbers."""
    out: dict[str, set[int]] = {}
    for r in ranges:
        out.setdefault(r.path, set()).update(range(r.start_line, r.end_line + 1))
    return {path: frozenset(lines) for path, lines in out.items()}
