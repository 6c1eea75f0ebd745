"""A crash report: what a worker that failed unexpectedly was doing, with its traceback.

A failure coderag expects (`CoderagError`) is said in one sentence where it happens; any
other is a bug. The app stays up, says so in one sentence, and writes this report to the
user's state folder for a bug report. It holds no settings, environment or repository text
beyond what the traceback itself names.
"""

from __future__ import annotations

import platform
import sys
import time
import traceback
from pathlib import Path

from coderag_tui import __version__
from coderag_tui.core.safe_write import write_atomically
from coderag_tui.locations import user_state_dir


def write_crash_report(error: BaseException, doing: str, folder: Path | None = None) -> Path:
    """Write a report of `error` (raised while `doing`) and return where it is."""
    folder = folder if folder is not None else user_state_dir() / "crashes"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"crash-{stamp}-{time.monotonic_ns() % 1_000_000:06d}.txt"
    lines = [
        f"coderag {__version__} crash report, {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        f"python {sys.version.split()[0]} on {platform.platform()}",
        f"while: {doing}",
        "",
        *traceback.format_exception(type(error), error, error.__traceback__),
    ]
    write_atomically(path, "\n".join(line.rstrip("\n") for line in lines) + "\n")
    return path
