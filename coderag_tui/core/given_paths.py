"""Paths a user gives: FILE:LINE for `--from`, and the globs of `--include`/`--exclude` (and
of an MCP tool's `paths`), as repository paths that never lead outside the repository.

Kept apart from ranking so a command that only reads its arguments (a `coderag search`
that a server answers) does not import numpy and the rankers to do so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.core.errors import CoderagError
from coderag_tui.core.records import SkippedFile

if TYPE_CHECKING:
    from coderag_tui.settings import Settings


class LocationError(CoderagError, ValueError):
    """A --from FILE:LINE that cannot give a query; the message names the problem and the fix."""


def parse_location(text: str) -> tuple[str, int]:
    """`path/to/file.py:120` -> ("path/to/file.py", 120), or LocationError in one sentence:
    the one reading of FILE:LINE for every face."""
    path, sep, line = text.strip().rpartition(":")
    if not sep or not path.strip() or not line.strip().isdigit() or int(line) < 1:
        raise LocationError(
            f"{text.strip()!r} is not FILE:LINE: give a repository path, a colon and a line "
            "number, e.g. shop/cart.py:25."
        )
    return path.strip(), int(line)


def location_path(root: Path, file: str) -> str:
    """The repository path (forward slashes) that FILE of --from FILE:LINE names: relative
    to the repository root, or absolute inside it; LocationError when it leads outside."""
    root_real = os.path.realpath(root)
    given = Path(file)
    absolute = os.path.normpath(given if given.is_absolute() else Path(root_real) / given)
    if not _within(absolute, root_real) and given.is_absolute():
        # Reached through a link of the user's own outside the repository (~/link/repo/x.py).
        absolute = os.path.join(os.path.realpath(os.path.dirname(absolute)), given.name)
    if absolute == root_real or not _within(absolute, root_real):
        raise LocationError(
            f"{file} lies outside the repository {root}: give a file of the repository."
        )
    return os.path.relpath(absolute, root_real).replace(os.sep, "/")


def scope_pattern(root: Path, pattern: str) -> str:
    """A scope pattern (--include, --exclude, an MCP tool's `paths`) as a repository path:
    relative to the root, or absolute inside it; its literal part (up to the first glob
    character's folder) may not climb out with `..` or lead out through a link
    (LocationError). The root itself comes back as ".", which takes every file."""
    text = pattern.strip().replace(os.sep, "/")
    if not text:
        raise LocationError("an empty path was given: give a path or glob inside the repository.")
    if ".." in text.split("/"):
        raise LocationError(
            f"{pattern} climbs out with `..`: give a path or glob inside the repository {root}."
        )
    glob_at = min((text.find(c) for c in "*?[" if c in text), default=len(text))
    cut = text.rfind("/", 0, glob_at) + 1 if glob_at < len(text) else len(text)
    literal, rest = text[:cut], text[cut:]
    root_real = os.path.realpath(root)
    if literal.startswith("~"):
        literal = os.path.expanduser(literal)
    absolute = literal if os.path.isabs(literal) else os.path.join(root_real, literal or ".")
    real = os.path.realpath(absolute)  # a link on the way is followed: one leading out is refused
    if not _within(real, root_real):
        raise LocationError(
            f"{pattern} leads outside the repository {root}: give a path or glob inside it."
        )
    rel = os.path.relpath(real, root_real).replace(os.sep, "/")
    if rel == ".":
        return rest or "."
    return f"{rel}/{rest}" if rest or literal.endswith("/") else rel


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def query_from_location(settings: Settings, file: str, line: int, n_lines: int) -> str:
    """The N lines before LINE of FILE (LINE excluded), as code completion sees the cursor.

    FILE must be a file the index would read (inside the repository, reached through no
    link, not ignored, not a key file, not binary): a repository's link to
    `/proc/self/environ` or `~/.ssh/id_rsa` never becomes a query.
    """
    from coderag_tui.core.index.indexer import read_indexable

    root = settings.repo_root
    text = read_indexable(settings, location_path(root, file))
    if text is None:
        raise LocationError(f"{file} does not exist under {root}: give a path in the repository.")
    if isinstance(text, SkippedFile):
        why = f"{text.reason.value}: {text.detail}" if text.detail else text.reason.value
        raise LocationError(
            f"{file} is not a file coderag indexes ({why}): give a source file of the repository."
        )
    lines = text.splitlines()
    if n_lines < 1:
        raise LocationError(f"--query-lines must be at least 1, not {n_lines}.")
    if line < 2 or line > len(lines) + 1:
        raise LocationError(
            f"{file} has {len(lines)} lines, so line {line} has no lines before it to query with: "
            f"give a line from 2 to {len(lines) + 1}."
        )
    query = "\n".join(lines[max(0, line - 1 - n_lines) : line - 1])
    if not query.strip():
        raise LocationError(
            f"the {n_lines} lines before {file}:{line} are blank: give a later line or more lines."
        )
    return query
