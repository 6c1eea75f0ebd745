"""Refresh the README's example outputs from the real commands, so they cannot go stale.

    python scripts/readme_examples.py           # rewrite the examples in README.md
    python scripts/readme_examples.py --check   # exit 1 if one differs

Each example runs a real `coderag` command in a fresh process on the small shop repository the
tests use (`tests/fixtures/tiny_repo.py`, written to a temporary folder), with a home of its
own (no user config, no cached model or table) and no model (`--no-dense`), so its output
depends on the code alone (progress lines, which depend on the machine's speed, are left
out). The README holds each example between `<!-- example NAME -->` and
`<!-- /example NAME -->`: the command line, then what it printed on stderr and on stdout.
tests/test_docs.py runs the commands too and fails when the README differs.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.tiny_repo import make_tiny_repo  # noqa: E402

README = ROOT / "README.md"
SCRIPT = "scripts/readme_examples.py"
COMMAND = f"python {SCRIPT}"
EXAMPLES: dict[str, list[str]] = {
    "prompt": [
        "prompt",
        "Why can a refund fail?",
        "--budget",
        "200",
        "--no-dense",
    ],
}
# Progress lines: whether one is printed depends on how fast the machine is, not on the code.
PROGRESS = re.compile(r"^coderag: (indexing|embedding) .*\n", re.M)
# What the run's environment keeps from the caller's: nothing that names a user's folders,
# settings (CODERAG_*) or terminal.
KEPT = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")


def run(args: list[str], machine: Path) -> tuple[str, str]:
    """`coderag ARGS` in the shop repository under `machine`: (stdout, stderr)."""
    repo = machine / "shop"
    if not repo.exists():
        make_tiny_repo(repo, git=False)
    home = machine / "home"
    env = {name: os.environ[name] for name in KEPT if name in os.environ}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(machine),
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "CODERAG_DENSE_BACKGROUND": "0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "coderag_tui", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise SystemExit(f"`coderag {shlex.join(args)}` failed:\n{done.stderr}")
    return done.stdout, PROGRESS.sub("", done.stderr)


def block(name: str, args: list[str], out: str, err: str) -> str:
    """The README's text for one example: the command, its stderr, its stdout."""
    return (
        f"<!-- example {name} -->\n"
        f"`coderag {shlex.join(args)}`, run in the small shop repository of the tests\n"
        f"by [{SCRIPT}]({SCRIPT}) (which keeps this example current), printed on stderr\n\n"
        f"```\n{err.rstrip()}\n```\n\n"
        f"and on stdout:\n\n"
        f"````\n{out.rstrip()}\n````\n"
        f"<!-- /example {name} -->"
    )


def render(readme: str) -> str:
    """`readme` with every example replaced by what its command prints now."""
    with tempfile.TemporaryDirectory(prefix="coderag-readme-") as folder:
        for name, args in EXAMPLES.items():
            pattern = re.compile(
                rf"<!-- example {re.escape(name)} -->.*?<!-- /example {re.escape(name)} -->", re.S
            )
            found = pattern.search(readme)
            if found is None:
                raise SystemExit(f"README.md has no example {name!r}")
            text = block(name, args, *run(args, Path(folder)))
            readme = readme[: found.start()] + text + readme[found.end() :]
    return readme


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs")
    check = parser.parse_args().check
    committed = README.read_text(encoding="utf-8")
    fresh = render(committed)
    if check:
        if fresh != committed:
            print(f"README.md's examples are stale: run `{COMMAND}`.", file=sys.stderr)
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
