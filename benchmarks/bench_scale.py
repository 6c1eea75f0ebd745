"""How indexing and a warm search scale: many small files, and the standard library copied K times.

Usage: PYTHONPATH=. python benchmarks/bench_scale.py [--files N] [--stdlib-copies K] [--git]
                                                     [--runs R] [--no-plain] [--only NAME]
                                                     [--serve]

Corpora are built in a temporary folder: `small-git`, N small Python files (default 50,000,
a few lines each) committed to a git repository so the index lists them with git; `small-plain`,
the same files without git (walked with os.scandir; --no-plain leaves it out); `stdlib-xK`,
the interpreter's standard library (without site-packages and __pycache__) copied K times
(default 5; the issue's full target is 30) into separate folders; with --git it is committed to
a git repository too (`stdlib-xK-git`), so a warm search takes git's fingerprint path instead of
walking the folder.

For each corpus it prints, every number from `coderag` run as a fresh process the way a shell
runs it: how the index finds changed files (`fresh`: "git" for git's file list and fingerprint,
"walk" for a folder walk that stats every file); the cold `coderag index` wall time and its
peak RSS; the first search after it (which may still build BM25); the warm `coderag search
QUERY --no-dense` wall time (median of --runs, nothing changed since the last run); BM25's own
time inside that process (median of the stage timings the JSON reports); the search right
after editing one file (re-indexes it); and the index's size on disk per million lines of the
corpus.
With --serve it then starts `coderag serve` on the corpus (`serve s`: seconds until it
answers, with the index already built) and measures the same warm search and edit -> search
answered by it (`srv warm`, `srv edit`: still a fresh `coderag search` process each, which
asks the server), and the server's peak RSS. Each answer is checked to have come from the
server (its log line).
Target: a warm search at most 300 ms of wall time (with --serve, the served one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

QUERY = "parse the configuration value"
WARM_TARGET_S = 0.300
SMALL_TEMPLATE = '''"""Module {i}: helpers for {word} records."""


def {word}_value_{i}(config, key):
    """Return the {word} value of key {i} parsed from the configuration."""
    return config.get(key, {i}) + {j}
'''
WORDS = ("parse", "render", "fetch", "store", "match", "merge", "index", "token", "cache", "queue")


@dataclass
class Row:
    name: str
    files: int
    lines: int
    fresh: str = "?"
    cold_s: float = 0.0
    cold_rss_mb: float = 0.0
    first_s: float = 0.0
    warm_s: float = 0.0
    warm_min_s: float = 0.0
    serve_start_s: float = float("nan")
    served_warm_s: float = float("nan")
    served_edit_s: float = float("nan")
    serve_rss_mb: float = float("nan")
    bm25_ms: float = 0.0
    edit_s: float = 0.0
    mb_per_mloc: float = 0.0


def make_small(root: Path, n: int, *, git: bool) -> tuple[int, int]:
    """N small Python files in folders of 500; committed to a new git repository when `git`."""
    root.mkdir(parents=True)
    lines = 0
    for i in range(n):
        folder = root / f"pkg{i // 500:03d}"
        if i % 500 == 0:
            folder.mkdir()
        text = SMALL_TEMPLATE.format(i=i, j=i % 7, word=WORDS[i % len(WORDS)])
        (folder / f"mod{i:05d}.py").write_text(text, encoding="utf-8")
        lines += text.count("\n")
    if git:
        _commit_all(root)
    return n, lines


def _commit_all(root: Path) -> None:
    """Make `root` a new git repository with every file committed."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )

    def git_run(*argv: str) -> None:
        subprocess.run(["git", "-C", str(root), *argv], env=env, check=True, capture_output=True)

    git_run("init", "-q")
    git_run("add", "-A")
    git_run("commit", "-q", "-m", "corpus")


def make_stdlib(root: Path, copies: int, *, git: bool = False) -> tuple[int, int]:
    """The standard library copied `copies` times into root/copyNN (modification times kept);
    committed to a new git repository when `git`."""
    source = Path(sysconfig.get_paths()["stdlib"])
    ignore = shutil.ignore_patterns("site-packages", "__pycache__")
    root.mkdir(parents=True)
    for c in range(copies):
        shutil.copytree(source, root / f"copy{c:02d}", symlinks=True, ignore=ignore)
    files = lines = 0
    for path in (root / "copy00").rglob("*"):
        if path.is_file() and not path.is_symlink():
            files += 1
            with path.open("rb") as handle:
                lines += sum(
                    chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b"")
                )
    if git:
        _commit_all(root)
    return files * copies, lines * copies


def _coderag(argv: list[str], index_dir: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB, from wait4's rusage of this child alone) and stdout."""
    cmd = [sys.executable, "-m", "coderag_tui", *argv, "--index-dir", str(index_dir)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        if proc.returncode != 0:
            err.seek(0)
            shown = err.read().decode(errors="replace")[-600:]
            raise SystemExit(f"coderag {argv[0]} failed: {shown}")
    return seconds, usage.ru_maxrss / 1024, out.decode()


def _search(repo: Path, index_dir: Path) -> tuple[float, float]:
    """Wall seconds of one fresh `coderag search --no-dense --json` and BM25's ms inside it."""
    seconds, _, out = _coderag(
        ["search", QUERY, str(repo), "--no-dense", "--mode", "bm25", "--json"], index_dir
    )
    record = json.loads(out)
    bm25 = [t["ms"] for t in record.get("timings", []) if t["stage"].lower().startswith("bm25")]
    return seconds, bm25[0] if bm25 else float("nan")


def start_server(
    repo: Path, index_dir: Path, *, dense: bool = False
) -> tuple[subprocess.Popen[str], Callable[[], str]]:
    """`coderag serve REPO --no-dense --verbose` (with dense: without `--no-dense`), once it
    serves, and a reader of its log's next line (SystemExit when the server stopped)."""
    flags = [] if dense else ["--no-dense"]
    cmd = [sys.executable, "-m", "coderag_tui", "serve", str(repo), *flags, "--verbose"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.Popen(
        [*cmd, "--index-dir", str(index_dir)], env=env, stderr=subprocess.PIPE, text=True
    )
    log: list[str] = []

    def next_line() -> str:
        line = proc.stderr.readline() if proc.stderr is not None else ""
        if not line:
            raise SystemExit(f"coderag serve stopped: {log[-3:]}")
        log.append(line.rstrip())
        return line

    while "serving" not in next_line():
        pass
    return proc, next_line


def _served(repo: Path, index_dir: Path, row: Row, runs: int) -> None:
    """Start `coderag serve`, time warm searches and one edit -> search through it."""
    started = time.perf_counter()
    proc, next_line = start_server(repo, index_dir)
    row.serve_start_s = time.perf_counter() - started

    def served_search() -> float:
        seconds, _ = _search(repo, index_dir)
        said = next_line()
        if "search " not in said:
            raise SystemExit(f"the server did not answer: {said}")
        return seconds

    served_search()  # the first answer of a server may still touch cold pages
    row.served_warm_s = statistics.median(served_search() for _ in range(runs))
    edited = sorted(p for p in repo.rglob("*.py") if ".git" not in p.parts)[1]
    with edited.open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef edited_while_served():\n    return 'configuration'\n")
    row.served_edit_s = served_search()
    proc.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(proc.pid, 0)
    row.serve_rss_mb = usage.ru_maxrss / 1024


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def measure(
    name: str, repo: Path, files: int, lines: int, index_dir: Path, runs: int, *, serve: bool
) -> Row:
    row = Row(name, files, lines)
    print(f"[{name}] cold index of {files:,} files ...", file=sys.stderr, flush=True)
    row.cold_s, row.cold_rss_mb, out = _coderag(["index", str(repo), "--json"], index_dir)
    row.fresh = "git" if json.loads(out).get("is_git") else "walk"
    row.first_s, _ = _search(repo, index_dir)
    warm = [_search(repo, index_dir) for _ in range(runs)]
    row.warm_s = statistics.median(s for s, _ in warm)
    row.warm_min_s = min(s for s, _ in warm)
    row.bm25_ms = statistics.median(ms for _, ms in warm)
    edited = next(p for p in sorted(repo.rglob("*.py")) if ".git" not in p.parts)
    with edited.open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef edited_by_bench_scale():\n    return 'configuration'\n")
    row.edit_s, _ = _search(repo, index_dir)
    row.mb_per_mloc = _size(index_dir) / 1e6 / (lines / 1e6) if lines else float("nan")
    if serve:
        print(f"[{name}] coderag serve ...", file=sys.stderr, flush=True)
        _served(repo, index_dir, row, runs)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50_000, help="small files (default 50,000)")
    parser.add_argument(
        "--stdlib-copies", type=int, default=5, help="copies of the stdlib (default 5; 0: skip)"
    )
    parser.add_argument(
        "--git", action="store_true", help="commit the stdlib corpus to a git repository"
    )
    parser.add_argument("--runs", type=int, default=5, help="warm searches per corpus (median)")
    parser.add_argument("--no-plain", action="store_true", help="skip the non-git small corpus")
    parser.add_argument("--only", choices=("small-git", "small-plain", "stdlib"), default=None)
    parser.add_argument(
        "--serve", action="store_true", help="also measure searches answered by coderag serve"
    )
    parser.add_argument("--keep", type=Path, default=None, help="build corpora here and keep them")
    args = parser.parse_args()

    scratch = args.keep or Path(tempfile.mkdtemp(prefix="coderag-scale-"))
    scratch.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    try:
        plan = []
        if args.files > 0:
            plan.append(("small-git", lambda p: make_small(p, args.files, git=True)))
            if not args.no_plain:
                plan.append(("small-plain", lambda p: make_small(p, args.files, git=False)))
        if args.stdlib_copies > 0:
            name = f"stdlib-x{args.stdlib_copies}" + ("-git" if args.git else "")
            plan.append((name, lambda p: make_stdlib(p, args.stdlib_copies, git=args.git)))
        for name, make in plan:
            if args.only is not None and not name.startswith(args.only):
                continue
            repo, index_dir = scratch / name, scratch / f"{name}-index"
            shutil.rmtree(repo, ignore_errors=True)
            shutil.rmtree(index_dir, ignore_errors=True)
            print(f"[{name}] building the corpus ...", file=sys.stderr, flush=True)
            files, lines = make(repo)
            rows.append(measure(name, repo, files, lines, index_dir, args.runs, serve=args.serve))
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)

    header = (
        f"{'corpus':<14} {'fresh':<5} {'files':>8} {'lines':>10} {'cold s':>7} {'peak MB':>8} "
        f"{'1st s':>6} {'warm s':>7} {'(min)':>6} {'bm25 ms':>8} {'edit s':>7} {'MB/Mloc':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.name:<14} {r.fresh:<5} {r.files:>8,} {r.lines:>10,} {r.cold_s:>7.2f} "
            f"{r.cold_rss_mb:>8.0f} "
            f"{r.first_s:>6.2f} {r.warm_s:>7.3f} {r.warm_min_s:>6.3f} {r.bm25_ms:>8.2f} "
            f"{r.edit_s:>7.2f} {r.mb_per_mloc:>8.1f}"
        )
    if args.serve:
        print()
        print(f"{'corpus':<14} {'serve s':>8} {'srv warm s':>10} {'srv edit s':>10} {'srv MB':>7}")
        for r in rows:
            print(
                f"{r.name:<14} {r.serve_start_s:>8.2f} {r.served_warm_s:>10.3f} "
                f"{r.served_edit_s:>10.2f} {r.serve_rss_mb:>7.0f}"
            )
    slow = [r.name for r in rows if (r.served_warm_s if args.serve else r.warm_s) > WARM_TARGET_S]
    print(
        f"warm search target <= {WARM_TARGET_S * 1000:.0f} ms: "
        + ("met" if not slow else "missed on " + ", ".join(slow))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
