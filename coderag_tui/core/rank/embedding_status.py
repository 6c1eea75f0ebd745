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
import time
from dataclasses import asdict, dataclass
from pathlib import Path

FIRST_PASS = "first pass"  # the stage that makes the static first pass, before the model


@dataclass(frozen=True)
class EmbeddingStatus:
    """One background process's progress: the static first pass, loading (or first copying)
    the model, then embedding windows."""

    pid: int
    stage: str  # "first pass", "loading", "preparing" (the model's one-time copy), "embedding"
    done: int = 0  # windows embedded so far in this stage
    total: int = 0  # windows this stage embeds
    started: float = 0.0  # time.time() when the process started
    model: str = ""
    since: float = 0.0  # time.time() when this stage started (0: unknown)

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds this stage still needs at its rate so far (None before a rate is known)."""
        now = time.time() if now is None else now
        spent = now - self.since
        if not self.since or self.done <= 0 or self.total <= 0 or spent <= 0:
            return None
        return max(0.0, (self.total - self.done) * spent / self.done)

    def describe(self, now: float | None = None) -> str:
        """A few words for a note: what the process is doing now, and the time left."""
        if self.stage == "preparing":
            return "now making its one-time copy of the model"
        if self.stage == "loading" or self.total <= 0:
            return "now loading the model"
        eta = self.eta_s(now)
        left = f", about {duration(eta)} left" if eta is not None else ""
        what = "first pass: " if self.stage == FIRST_PASS else ""
        return f"{what}{self.done:,} of {self.total:,} windows so far{left}"


def duration(seconds: float) -> str:
    """A time left as people say it: 40 s, 12 min, 3 h 10 min."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


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
            since=float(data.get("since", 0.0)),
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
