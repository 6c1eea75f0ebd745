"""Add the fix's changed lines to SWE-bench dev rows that lack its `patch`, from history.

SWE-bench Lite's public rows carry the fix as `patch`, which `coderag eval` reads for gold-line
recall at each budget (`coderag_tui/core/eval/gold_lines.py`); the dev file in ../shared/bench
keeps only `gold_files`. Each instance's id ends in its pull request's number, and these
repositories squash-merge with `(#N)` in the subject, so the fix is the commit naming `#N`
that changes a gold file after `base_commit`. The lines its diff (against its own parent)
changes are moved onto the file at `base_commit` (the two texts aligned with difflib, so lines
that moved between them keep the right numbers) and written as the row's `changed_lines`.

    python benchmarks/swe_patches.py ../shared/bench/swe_bench_lite_dev.jsonl \\
        --repos /work/.mirror --out swe_patched.jsonl

Rows whose fix cannot be found are written unchanged, and said on stderr.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

from coderag_tui.core.eval.datasets import DatasetError, find_repository, git_output
from coderag_tui.core.eval.gold_lines import changed_lines


def git(
    git_dir: Path, *args: str, revisions: tuple[str, ...] = (), paths: tuple[str, ...] = ()
) -> str:
    """git's output through coderag's one safe way to run it, "" when it failed."""
    try:
        return git_output(git_dir, *args, revisions=revisions, paths=paths)
    except DatasetError:
        return ""


def fix_commit(git_dir: Path, number: str, gold: list[str], base: str) -> str | None:
    """The commit whose subject names `(#number)` and that changes a gold file after `base`."""
    grep = ("log", "--all", "--format=%H %s", "-E", f"--grep=#{number}\\b")
    for line in git(git_dir, *grep, paths=tuple(gold)).splitlines():
        sha, _, subject = line.partition(" ")
        if not re.search(rf"#{number}\b", subject):
            continue
        try:  # --is-ancestor answers by its exit code alone
            git_output(git_dir, "merge-base", "--is-ancestor", revisions=[base, sha])
        except DatasetError:
            continue
        return sha
    return None


def changed_at_base(git_dir: Path, base: str, fix: str, path: str) -> list[dict[str, object]]:
    """The lines of `path` at `base` that the fix changes, as `changed_lines` entries."""
    before = git(git_dir, "show", revisions=(f"{fix}^:{path}",)).splitlines(keepends=True)
    after = git(git_dir, "show", revisions=(f"{fix}:{path}",)).splitlines(keepends=True)
    at_base = git(git_dir, "show", revisions=(f"{base}:{path}",)).splitlines(keepends=True)
    if not before or not at_base:
        return []
    to_base: dict[int, int] = {}  # a line of the fix's parent -> the same line at base
    matcher = difflib.SequenceMatcher(a=before, b=at_base, autojunk=False)
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            to_base[block.a + i + 1] = block.b + i + 1
    diff = "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", n=0))
    lines = sorted(
        {
            to_base[n]
            for r in changed_lines(diff)
            for n in range(r.start_line, r.end_line + 1)
            if n in to_base
        }
    )
    runs: list[list[int]] = []
    for n in lines:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [{"path": path, "start_line": a, "end_line": b} for a, b in runs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    found = 0
    for row in rows:
        if row.get("patch") or row.get("changed_lines"):
            found += 1
            continue
        git_dir = find_repository(args.repos, row["repo"])
        number = row["instance_id"].rsplit("-", 1)[-1]
        fix = (
            fix_commit(git_dir, number, row["gold_files"], row["base_commit"]) if git_dir else None
        )
        if fix is None:
            print(f"{row['instance_id']}: no fix commit found", file=sys.stderr)
            continue
        assert git_dir is not None
        changed = [
            entry
            for path in row["gold_files"]
            for entry in changed_at_base(git_dir, row["base_commit"], fix, path)
        ]
        if changed:
            row["changed_lines"] = changed
            found += 1
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{found} of {len(rows)} rows have changed lines: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
