"""What the background embedding of one index is doing, in a small file beside the index.

`coderag search` leaves the model's embedding of the chunks it has not embedded yet to a
detached process (`core/refine.py`); that process writes how far it got here (at most once a
second), and a later search reads it to say what is still coming. The file names the process,
so a reader can tell a live one from what a killed one left behind; the process's lock file
sits beside it (one process per index).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class EmbeddingStatus:
    """One background process's progress: loading (or first copying) the model, then
    embedding windows."""

    pid: int
    stage: str  # "loading", "preparing" (the model's one-time copy) or "embedding"
    done: int = 0  # windows embedded so far this run
    total: int = 0  # windows this run embeds
    started: float = 0.0  # time.time() when the process started
    model: str = ""

    def describe(self) -> str:
        """A few words for a note: what the process is doing now."""
        if self.stage == "preparing":
            return "now making its one-time copy of the model"
        if self.stage == "loading" or self.total <= 0:
            return "now loading the model"
        return f"{self.done:,} of {self.total:,} windows so far"


def status_path(index_path: Path) -> Path:
    return index_path.with_suffix(".embedding.json")


def lock_path(index_path: Path) -> Path:
    return index_path.with_suffix(".embedding.lock")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def read_status(index_path: Path) -> EmbeddingStatus | None:
    """The live background process's progress, or None (none runs, or the file is stale or
    unreadable: it is only ever a hint)."""
    try:
        data = json.loads(status_path(index_path).read_text(encoding="utf-8"))
        status = EmbeddingStatus(
            pid=int(data["pid"]),
            stage=str(data["stage"]),
            done=int(data.get("done", 0)),
            total=int(data.get("total", 0)),
            started=float(data.get("started", 0.0)),
            model=str(data.get("model", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return status if status.pid > 0 and _alive(status.pid) else None


def write_status(index_path: Path, status: EmbeddingStatus) -> None:
    """Replace the status file (a rename, so a reader never sees half of one)."""
    path = status_path(index_path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(asdict(status)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a hint only: a full or read-only disk must not stop the embedding
        tmp.unlink(missing_ok=True)


def clear_status(index_path: Path) -> None:
    status_path(index_path).unlink(missing_ok=True)
