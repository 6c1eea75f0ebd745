"""The TUI as a user feels it in a real terminal: the template switch and quitting.

Runs `python -m coderag_tui REPO` inside tmux (a private server, `-L coderag-bench`, so no
one else's sessions are touched), 120x40, and reads the screen back:

  template    ctrl+t -> the prompt line shows the re-packed prompt's new token count
              (markdown and xml differ by a few tokens), after one search.
  quit        ctrl+q -> the process is gone. `--fresh` gives every run a new index folder,
              so the keys arrive while the first index, the static first pass and the
              model's embedding run in the background (what a new user meets); `--after S`
              is how long after start.

Run: PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_tui_keys.py REPO \\
         [--fresh] [--after 3] [--runs 4]
It needs tmux, prints numbers and asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOCKET = ["tmux", "-L", "coderag-bench"]
SESSION = "bench"
QUERY = "where are blueprints registered"
TOKENS = re.compile(r"^ Prompt ([\d,]+) / [\d,]+ ", re.MULTILINE)


def tmux(*args: str) -> str:
    done = subprocess.run([*SOCKET, *args], capture_output=True, text=True, check=False)
    return done.stdout


def start(repo: Path, index_dir: Path | None) -> None:
    env = f"HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH={shlex.quote(os.getcwd())}"
    if index_dir is not None:
        env += f" CODERAG_INDEX_DIR={shlex.quote(str(index_dir))}"
    python = shlex.quote(sys.executable)
    command = f"cd {shlex.quote(str(repo))} && {env} {python} -m coderag_tui .; sleep 600"
    tmux("kill-session", "-t", SESSION)
    tmux("new-session", "-d", "-s", SESSION, "-x", "120", "-y", "40", command)


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_for(check: object, timeout: float = 30.0) -> float:
    """Seconds until `check()` is true (polled every 10 ms), or the timeout."""
    begin = time.perf_counter()
    while time.perf_counter() - begin < timeout:
        if check():  # type: ignore[operator]
            break
        time.sleep(0.01)
    return time.perf_counter() - begin


def tokens() -> str | None:
    found = TOKENS.search(screen())
    return found.group(1) if found else None


def template_switch(repo: Path, runs: int) -> list[float]:
    start(repo, None)
    wait_for(lambda: "index ready" in screen(), 120)
    tmux("send-keys", "-t", SESSION, QUERY, "Enter")
    wait_for(lambda: tokens() is not None, 60)
    tmux("send-keys", "-t", SESSION, "Escape")
    time.sleep(1.0)
    times = []
    for _ in range(runs):
        before = tokens()
        tmux("send-keys", "-t", SESSION, "C-t")
        times.append(wait_for(lambda before=before: tokens() not in (None, before), 10))
        time.sleep(0.5)
    tmux("kill-session", "-t", SESSION)
    return times


def quit_time(repo: Path, after: float, *, fresh: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start(repo, Path(tmp) / "index" if fresh else None)
        time.sleep(after)
        tmux("send-keys", "-t", SESSION, "C-q")
        took = wait_for(
            lambda: (
                tmux("list-panes", "-t", SESSION, "-F", "#{pane_current_command}").strip()
                == "sleep"
            ),
            30,
        )
        tmux("kill-session", "-t", SESSION)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--fresh", action="store_true")
    args = parser.parse_args()
    repo = args.repo.resolve()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    switch = template_switch(repo, args.runs)
    print("ctrl+t to the new token count: " + ", ".join(f"{t:.2f} s" for t in switch))
    quits = [quit_time(repo, args.after, fresh=args.fresh) for _ in range(args.runs)]
    where = "a fresh index" if args.fresh else "the saved index"
    print(
        f"ctrl+q {args.after:g} s after start ({where}) to the process gone: "
        + ", ".join(f"{t:.2f} s" for t in quits)
    )
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
