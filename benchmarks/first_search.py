"""A fresh home folder's first search: its time, what it printed, and its longest silence.

    python benchmarks/first_search.py REPO "where are blueprints registered"
    python benchmarks/first_search.py REPO QUESTION --home ~  # your own caches instead
    python benchmarks/first_search.py REPO QUESTION --calls 3 # and the calls after it

Runs `coderag search QUESTION REPO` with HOME set to a new empty folder and the XDG folders
unset (nothing cached: no index, no model copies), its stderr on a pseudo-terminal as a
user's would be (so the progress bar draws), and notes when each piece of stderr came. The
longest silence is the longest time with nothing new on stderr, the start and the end
included. Calls follow each other at once, as a user's would; then the home folder is
removed (a background embedding process the searches started sees its index go, and ends).
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def one_search(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, the longest silence on stderr (seconds) and stderr's last text."""
    leader, follower = pty.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    last, longest, chunks = started, 0.0, []
    while True:
        ready, _, _ = select.select([leader], [], [], 0.05)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                data = b""
            if not data:
                break
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait()
    end = time.perf_counter()
    os.close(leader)
    longest = max(longest, end - last)
    text = ANSI.sub("\n", b"".join(chunks).decode("utf-8", "replace"))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = "\n".join(line for line in lines if line.startswith("coderag:"))
    return end - started, longest, said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("question")
    parser.add_argument("--home", type=Path, help="use this home folder (default: a new one)")
    parser.add_argument("--calls", type=int, default=1, help="searches in a row")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="coderag-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CODERAG_"))}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    argv = [sys.executable, "-m", "coderag_tui", "search", args.question, str(args.repo)]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the start: {load}")
    try:
        for call in range(1, args.calls + 1):
            wall, silence, said = one_search(argv, env)
            print(f"\ncall {call}: {wall:.2f} s, longest silence on stderr {silence:.2f} s")
            print(said)
    finally:
        if args.home is None:
            # A background embedding process the searches started sees its index go and ends.
            time.sleep(1.0)
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
