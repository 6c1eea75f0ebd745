"""The lines of the original files that a change touched: the gold lines of a fix or a commit.

A unified diff (SWE-bench's `patch`, or `git diff` of a commit against its parent) names the
lines of the *original* file that the change removed or rewrote. A line the change only adds
has no original line of its own, so the original lines on either side of the insertion stand
for it: that is where a reader of the original file had to look. These lines are what a prompt
must carry for the model to see the code that the fix changed (`core.eval.budget`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from coderag_tui.core.eval.metrics import GoldChunk
from coderag_tui.core.prompt.spans import runs

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_OLD_FILE = re.compile(r"^--- (?:a/)?(.+?)\s*$")
NO_FILE = "/dev/null"


def changed_lines(patch: str) -> tuple[GoldChunk, ...]:
    """The original-file line ranges a unified diff changes, per file, in file order.

    Removed lines count as themselves (lines added in their place count no further); a pure
    insertion counts as the original lines just above and below it (only the line below
    when it inserts at the top). Files the diff creates (`--- /dev/null`) have no original
    lines and give none. A hunk ends when its header's counts are used up, so a removed line
    reading `-- x` is never taken for a file header.
    """
    touched: dict[str, set[int]] = {}
    path: str | None = None
    old = 0  # the original line the next context or removed line has
    left_old = left_new = 0  # lines of the current hunk not yet read
    replacing = False  # the current run of changes removed lines: its additions replace them
    for line in patch.splitlines():
        if left_old > 0 or left_new > 0:
            lines = touched.setdefault(path, set()) if path is not None else set()
            if line.startswith("-"):
                lines.add(old)
                old, left_old, replacing = old + 1, left_old - 1, True
            elif line.startswith("+"):
                if not replacing:  # a pure insertion: the lines around it
                    lines.update(n for n in (old - 1, old) if n >= 1)
                left_new -= 1
            elif line.startswith("\\"):  # "\ No newline at end of file"
                pass
            else:  # context (a blank context line may have lost its space)
                old, left_old, left_new = old + 1, left_old - 1, left_new - 1
                replacing = False
            continue
        match = _OLD_FILE.match(line)
        if match is not None:
            name = match.group(1)
            path = None if name == NO_FILE else name
            continue
        hunk = _HUNK.match(line)
        if hunk is not None:
            start, count = int(hunk.group(1)), int(hunk.group(2) or "1")
            left_old, left_new = count, int(hunk.group(3) or "1")
            # `-a,0` inserts after line a; otherwise line a is the hunk's first original line.
            old = start + 1 if count == 0 else start
            replacing = False
    return tuple(
        GoldChunk(p, start, end)
        for p, lines in touched.items()
        for start, end in runs(lines)
        if lines
    )


def line_sets(ranges: Iterable[GoldChunk]) -> dict[str, frozenset[int]]:
    """Gold line ranges as each file's set of line numbers."""
    out: dict[str, set[int]] = {}
    for r in ranges:
        out.setdefault(r.path, set()).update(range(r.start_line, r.end_line + 1))
    return {path: frozenset(lines) for path, lines in out.items()}
