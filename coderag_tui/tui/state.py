"""The TUI's state file, `tui-state.json`: the chosen theme and each repository's query history.

One JSON object read forgivingly (missing, unreadable, corrupt or foreign-shaped state
reads as empty, never an exception) and written atomically (a temporary file in the same
folder, then `os.replace`), so a crash mid-write leaves the old file, not a broken one.
Every save reads the file again and changes only its own key, so theme and history never
overwrite each other.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

STATE_FILE = "tui-state.json"
THEME_KEY = "theme"
HISTORY_KEY = "history"
HISTORY_LIMIT = 200  # queries remembered per repository (and kept in the query input)
REPOSITORY_LIMIT = 50  # repositories with a history; the least recently used go first
SAVED_QUERY_CHARS = 2_000  # longer queries (pasted files) stay in the session, not the file


def read_state(state_path: Path | None) -> dict[str, Any]:
    """The state file's object, or {} when there is none or it cannot be used."""
    # is_file() first: a directory or a FIFO named like the file must read as empty, not block.
    if state_path is None or not state_path.is_file():
        return {}
    try:
        data = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return {}
    return data if isinstance(data, dict) else {}


def write_state(state_path: Path, data: dict[str, Any]) -> None:
    """Replace the state file with `data` atomically; raises OSError when it cannot."""
    state_path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(
        dir=state_path.parent, prefix=f".{state_path.name}.", suffix=".tmp"
    )
    try:
        # One line: without `indent` json uses its C encoder, several times faster on big histories.
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        os.replace(temp_name, state_path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _update(state_path: Path, what: str, change: Callable[[dict[str, Any]], None]) -> str | None:
    """Apply `change` to the file's object, keeping its other keys; a problem sentence or None."""
    data = read_state(state_path)
    change(data)
    try:
        write_state(state_path, data)
    except OSError as exc:
        return (
            f"Could not remember the {what} in {state_path} ({exc.strerror or exc}): "
            "make that folder writable, or remove whatever has that name."
        )
    return None


def read_saved_theme(state_path: Path | None) -> str | None:
    """The theme the user last picked in the app, if it was remembered."""
    theme = read_state(state_path).get(THEME_KEY)
    return theme if isinstance(theme, str) and theme else None


def save_theme(state_path: Path, theme: str) -> str | None:
    """Remember the chosen theme; returns a one-sentence problem, or None when saved."""

    def change(data: dict[str, Any]) -> None:
        data[THEME_KEY] = theme

    return _update(state_path, "theme", change)


def _repository_key(repo: Path) -> str:
    return str(repo.resolve())


def _histories(data: dict[str, Any]) -> dict[str, Any]:
    histories = data.get(HISTORY_KEY)
    return histories if isinstance(histories, dict) else {}


def read_history(state_path: Path | None, repo: Path) -> list[str]:
    """The queries remembered for this repository, oldest first ([] when there are none)."""
    queries = _histories(read_state(state_path)).get(_repository_key(repo))
    if not isinstance(queries, list):
        return []
    kept = [q for q in queries if isinstance(q, str) and q.strip()]
    return kept[-HISTORY_LIMIT:]


def save_history(state_path: Path, repo: Path, history: Sequence[str]) -> str | None:
    """Remember this repository's queries (it becomes the most recently used); problem or None."""
    key = _repository_key(repo)
    queries = [q for q in history if len(q) <= SAVED_QUERY_CHARS][-HISTORY_LIMIT:]

    def change(data: dict[str, Any]) -> None:
        histories = _histories(data)
        histories.pop(key, None)  # re-inserted last: dict order is least to most recently used
        histories[key] = queries
        for stale in list(histories)[:-REPOSITORY_LIMIT]:
            del histories[stale]
        data[HISTORY_KEY] = histories

    return _update(state_path, "query history", change)
