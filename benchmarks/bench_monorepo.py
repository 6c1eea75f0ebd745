"""A monorepo of many public repositories: cold index, first answer, later calls, memory.

    python benchmarks/bench_monorepo.py --mirrors /work/.mirror --out /tmp/mono
    python benchmarks/bench_monorepo.py --mirrors DIR --out DIR --scales 0.5,1,2 --serve
    python benchmarks/bench_monorepo.py --mirrors DIR --out DIR --repos a/b,c/d --runs 5
    python benchmarks/bench_monorepo.py ... --semble /tmp/semble-venv/bin/semble

Assembles one folder (outside the project) from bare mirrors the user fetched
(`MIRRORS/OWNER+NAME/repo`): each repository's HEAD, written into `OUT/xN/OWNER+NAME`.
Scale 1 is every repository once; a scale below 1 keeps that share of each repository's files
(every other one at 0.5); a scale above 1 holds that many copies (`OWNER+NAME~2` ...), so the
growth shows. Nothing assembled is ever added to this project. With `--git` the folder
(`monorepo-git`) is made one git repository, as a monorepo's checkout is: the walk is then
git's listing. At each scale it reports, each with the peak RSS of the process (wait4's,
which covers the children it waited for):

- cold index to BM25-ready (`coderag index`, wall and CPU seconds);
- the first answer after it (`coderag search`, default flags), and what it said on stderr;
- the background embedder the first answer started: the static first pass's time when it
  makes it, then the model's windows, its rate over `--background-s` seconds and so the time
  it needs for the rest, and its peak RSS (VmHWM); then it is stopped (by its pid). Above
  `dense_background_limit` the model is not started: `--model-rate` starts it anyway (one more
  search with no limit) to time it;
- later CLI calls (default flags, `dense_background` off so none starts another) and, with
  `--serve`, calls answered by `coderag serve`;
- the index's size on disk.

Run it from outside the source tree (`python -m coderag_tui` would import a checkout in the
current folder); `PYTHONPATH=CHECKOUT` runs another checkout's code (a "before" run). The load
average is printed beside every scale: on a shared machine, compare runs made side by side.
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
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_peer import Semble  # noqa: E402
from bench_scale import _size, start_server  # noqa: E402

from coderag_tui.core import git  # noqa: E402

# The repositories of issue 43's monorepo (ktor's repository is ktorio/ktor).
REPOS = (
    "rails/rails,laravel/framework,tokio-rs/tokio,abseil/abseil-cpp,curl/curl,sympy/sympy,"
    "astropy/astropy,Kotlin/kotlinx.coroutines,ktorio/ktor,JamesNK/Newtonsoft.Json,"
    "apache/commons-lang,vitest-dev/vitest,pydantic/pydantic,aio-libs/aiohttp,redis/redis,"
    "nlohmann/json,fmtlib/fmt,serde-rs/serde,libuv/libuv,trpc/trpc"
)
QUESTIONS = (
    "where are HTTP redirects followed and the location header parsed",
    "how does the scheduler wake a task blocked on a channel",
    "validate a model field with a custom validator",
    "parse a JSON number into a floating point value",
    "retry a failed connection with backoff",
)
MB = 1024 * 1024


@dataclass
class Row:
    scale: float
    files: int = 0
    chunks: int = 0
    load_start: str = ""
    load_end: str = ""
    cold_s: float = float("nan")
    cold_cpu_s: float = float("nan")
    cold_mb: float = float("nan")
    stages: dict[str, float] = field(default_factory=dict)  # the index's own stage seconds
    first_s: float = float("nan")
    first_mb: float = float("nan")
    first_said: list[str] = field(default_factory=list)
    first_pass_s: float = float("nan")  # from the first answer until the first pass was saved
    bg_windows: int = 0
    bg_rate: float = float("nan")  # windows a second
    bg_eta_s: float = float("nan")
    bg_mb: float = float("nan")
    model_mb: float = float("nan")  # the background process while the model embeds
    later_s: float = float("nan")
    later_min_s: float = float("nan")
    later_mb: float = float("nan")
    later_said: list[str] = field(default_factory=list)
    serve_s: float = float("nan")
    serve_mb: float = float("nan")
    index_mb: float = float("nan")
    semble_first_s: float = float("nan")  # its first search builds its index
    semble_first_cpu_s: float = float("nan")
    semble_first_mb: float = float("nan")
    semble_later_s: float = float("nan")
    semble_later_mb: float = float("nan")
    semble_load: str = ""


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- the monorepo
def _archive(mirror: Path, target: Path, keep_every: int) -> int:
    """Write the mirror's HEAD files into `target` (every `keep_every`-th); files written.

    Read blob by blob (`git cat-file --batch`), not with `git archive`: a mirror may lack
    its largest blobs, which `git archive` fails on and which are left out here.
    """
    listing = git.output(mirror, "ls-tree", "-r", "-z", revisions=["HEAD"], git_dir=True)
    if listing is None:
        raise SystemExit(f"git ls-tree failed in {mirror}")
    wanted: list[tuple[str, str]] = []
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):  # no links, no submodules
            wanted.append((sha, path))
    wanted = wanted[::keep_every]
    proc = git.start(mirror, "cat-file", "--batch", git_dir=True, stdin=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    feed = "".join(f"{sha}\n" for sha, _ in wanted).encode()
    writer = threading.Thread(target=lambda: (proc.stdin.write(feed), proc.stdin.close()))
    writer.start()
    written = 0
    for _, path in wanted:
        header = proc.stdout.readline().split()
        if len(header) != 3:  # "<sha> missing": a blob the mirror does not hold
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)  # the newline after each object
        file = target / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        written += 1
    writer.join()
    proc.wait()
    return written


def assemble(mirrors: Path, repos: list[str], folder: Path, scale: float) -> int:
    """The monorepo at `scale` in `folder` (made once, kept); its file count."""
    done = folder / ".assembled"
    if done.is_file():
        return int(done.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    copies = max(1, round(scale)) if scale >= 1 else 1
    keep_every = 1 if scale >= 1 else max(1, round(1 / scale))
    files = 0
    for repo in repos:
        name = repo.replace("/", "+")
        mirror = mirrors / name / "repo"
        if not mirror.is_dir():
            raise SystemExit(f"no mirror of {repo} at {mirror}: fetch it first")
        for copy in range(1, copies + 1):
            target = folder / (name if copy == 1 else f"{name}~{copy}")
            files += _archive(mirror, target, keep_every)
    done.write_text(str(files))
    return files


def commit(folder: Path) -> None:
    """Make the assembled folder one git repository holding all of it, as a monorepo's
    checkout is (then the walk is git's listing, and an unchanged tree is seen as such)."""
    if (folder / ".git").is_dir():
        return
    who = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for args in (["init", "-q"], ["add", "-A", "."], ["commit", "-q", "-m", "monorepo"]):
        subprocess.run(["git", "-C", str(folder), *who, *args], check=True)


# --------------------------------------------------------------------------- coderag's calls
def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODERAG_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def timed(
    cmd: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[float, float, float, str, str]:
    """One command to its end: wall and CPU seconds, peak RSS (MB; wait4's, the largest of
    it and the children it waited for) and its stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {stderr[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout, stderr


def call(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, str, str]:
    """One coderag command (`timed`)."""
    return timed([sys.executable, "-m", "coderag_tui", *argv], env)


def said(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("coderag:")]


def _status(index_dir: Path) -> dict[str, object] | None:
    for path in index_dir.glob("*.embedding.json"):
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(found, dict):
            return found
    return None


def _peak_mb(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def background(index_dir: Path, row: Row, seconds: float, first_pass_limit: float) -> None:
    """Watch the background embedder the first answer started: the first pass, then the
    model's rate for `seconds`; then stop it (by its pid, from its status file)."""
    started = time.monotonic()
    status = None
    while status is None and time.monotonic() - started < 20:
        status = _status(index_dir)
        time.sleep(0.2)
    if status is None:
        print("  no background embedder started", file=sys.stderr)
        return
    pid = int(str(status["pid"]))
    peak, first_pass = 0.0, False
    while time.monotonic() - started < first_pass_limit:
        status = _status(index_dir) or {}
        peak = max(peak, _peak_mb(pid))
        first_pass = first_pass or status.get("stage") == "first pass"
        if status.get("stage") != "first pass":
            break  # the model's stages, or the process ended
        time.sleep(0.5)
    if first_pass:  # made by this process (older code made it in the first answer)
        row.first_pass_s = time.monotonic() - started
    while status.get("stage") in ("loading", "preparing"):
        status = _status(index_dir) or {}
        peak = max(peak, _peak_mb(pid))
        time.sleep(0.5)
    marks: list[tuple[float, int]] = []
    total = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        status = _status(index_dir)
        if status is None:
            break
        peak = max(peak, _peak_mb(pid))
        if status.get("stage") == "embedding":
            marks.append((time.monotonic(), int(str(status.get("done", 0)))))
            total = int(str(status.get("total", 0)))
        time.sleep(1.0)
    row.bg_mb = peak
    row.bg_windows = total
    if len(marks) >= 2 and marks[-1][0] > marks[0][0]:
        rate = (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])
        row.bg_rate = rate
        row.bg_eta_s = (total - marks[-1][1]) / rate if rate > 0 else float("inf")
    stop(index_dir, pid)


def stop(index_dir: Path, pid: int) -> None:
    """End the background embedder (by its pid) and wait for its status file to go."""
    if _status(index_dir) is not None:
        os.kill(pid, signal.SIGTERM)
    for _ in range(50):
        if _status(index_dir) is None:
            return
        time.sleep(0.2)


def served(repo: Path, index_dir: Path, runs: int, row: Row) -> None:
    """Median wall of searches (default flags) a `coderag serve` answers, and the server's
    peak RSS."""
    os.environ.update(_env(CODERAG_DENSE_BACKGROUND="false"))  # start_server's environment
    proc, next_line = start_server(repo, index_dir, dense=True)  # default flags, as the calls
    walls = []
    try:
        for i in range(runs + 1):
            wall, _, _, _, _ = call(
                ["search", QUESTIONS[i % len(QUESTIONS)], str(repo), "--index-dir", str(index_dir)],
                _env(CODERAG_DENSE_BACKGROUND="false"),
            )
            if "search " not in next_line():
                raise SystemExit("the server did not answer the search")
            if i:  # the first answer of a server may still touch cold pages
                walls.append(wall)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, _, usage = os.wait4(proc.pid, 0)
    row.serve_s = statistics.median(walls)
    row.serve_mb = usage.ru_maxrss / 1024


def measure(repo: Path, index_dir: Path, row: Row, args: argparse.Namespace) -> None:
    shutil.rmtree(index_dir, ignore_errors=True)
    where = ["--index-dir", str(index_dir)]
    row.load_start = load()
    print(f"[x{row.scale:g}] cold index ({row.files:,} files), load {row.load_start}", flush=True)
    row.cold_s, row.cold_cpu_s, row.cold_mb, out, _ = call(
        ["index", str(repo), "--json", *where], _env()
    )
    record = json.loads(out)
    row.chunks = int(record.get("chunks", 0))
    row.stages = {**record.get("stage_seconds", {}), "ready": record.get("ready_s", 0.0)}
    print(f"  cold index {row.cold_s:.1f} s (CPU {row.cold_cpu_s:.1f}), {row.cold_mb:.0f} MB")
    print(f"[x{row.scale:g}] first answer, load {load()}", flush=True)
    row.first_s, _, row.first_mb, _, err = call(["search", QUESTIONS[0], str(repo), *where], _env())
    row.first_said = said(err)
    print(f"  first answer {row.first_s:.2f} s, {row.first_mb:.0f} MB", flush=True)
    print(f"[x{row.scale:g}] background embedder, load {load()}", flush=True)
    background(index_dir, row, args.background_s, args.first_pass_limit)
    if args.model_rate and not row.bg_windows:  # capped: start the model to time it
        print(f"[x{row.scale:g}] the model, started with no limit, load {load()}", flush=True)
        call(
            ["search", QUESTIONS[0], str(repo), *where],
            _env(CODERAG_DENSE_BACKGROUND_LIMIT="0"),
        )
        model = Row(row.scale)
        background(index_dir, model, args.background_s, args.first_pass_limit)
        row.bg_windows, row.bg_rate, row.bg_eta_s = model.bg_windows, model.bg_rate, model.bg_eta_s
        row.model_mb = model.bg_mb
    print(
        f"  background: first pass {row.first_pass_s:.1f} s, {row.bg_mb:.0f} MB; model "
        f"{row.bg_windows:,} windows at {row.bg_rate:.1f}/s, {row.model_mb:.0f} MB",
        flush=True,
    )
    print(f"[x{row.scale:g}] later calls, load {load()}", flush=True)
    walls, peaks = [], []
    for i in range(args.runs):
        wall, _, peak, _, err = call(
            ["search", QUESTIONS[(i + 1) % len(QUESTIONS)], str(repo), *where],
            _env(CODERAG_DENSE_BACKGROUND="false"),
        )
        walls.append(wall)
        peaks.append(peak)
        row.later_said = said(err)
    row.later_s, row.later_min_s, row.later_mb = statistics.median(walls), min(walls), max(peaks)
    if args.serve:
        print(f"[x{row.scale:g}] coderag serve, load {load()}", flush=True)
        served(repo, index_dir, args.runs, row)
    row.index_mb = _size(index_dir) / MB
    row.load_end = load()


def semble(repo: Path, scratch: Path, command: str, row: Row) -> None:
    """semble's first search (it builds its index) and a later one, from an empty cache."""
    home = scratch / "semble-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    tool = Semble(repo, home, command)
    row.semble_load = load()
    print(f"[x{row.scale:g}] semble, load {row.semble_load}", flush=True)
    row.semble_first_s, row.semble_first_cpu_s, row.semble_first_mb, _, _ = timed(
        tool.search(QUESTIONS[0]), tool.env, home
    )
    print(f"  semble first search {row.semble_first_s:.1f} s, {row.semble_first_mb:.0f} MB")
    row.semble_later_s, _, row.semble_later_mb, _, _ = timed(
        tool.search(QUESTIONS[1]), tool.env, home
    )
    print(f"  semble later search {row.semble_later_s:.1f} s, {row.semble_later_mb:.0f} MB")
    shutil.rmtree(home, ignore_errors=True)


def table(rows: list[Row]) -> str:
    """The figures as a Markdown table: a row per step, a column per scale."""

    def f(value: float, digits: int = 1) -> str:
        return "–" if value != value else f"{value:,.{digits}f}"  # NaN: not measured

    def mb(value: float) -> str:
        return "" if value != value else f", {value:,.0f} MB"

    steps: list[tuple[str, Callable[[Row], str]]] = [
        ("files (indexed chunks)", lambda r: f"{r.files:,} ({r.chunks:,})"),
        ("load (start → end)", lambda r: f"{r.load_start} → {r.load_end}"),
        (
            "cold index to BM25-ready: wall (CPU)",
            lambda r: f"{f(r.cold_s)} s ({f(r.cold_cpu_s)} s){mb(r.cold_mb)}",
        ),
        ("the first answer after it", lambda r: f"{f(r.first_s, 2)} s{mb(r.first_mb)}"),
        ("background first pass saved after", lambda r: f"{f(r.first_pass_s)} s{mb(r.bg_mb)}"),
        (
            "the model: windows, rate, time for all",
            lambda r: (
                f"{r.bg_windows:,}, {f(r.bg_rate)}/s, {f(r.bg_eta_s / 60, 0)} min{mb(r.model_mb)}"
            ),
        ),
        (
            "a later CLI call: median (min)",
            lambda r: f"{f(r.later_s, 2)} s ({f(r.later_min_s, 2)}){mb(r.later_mb)}",
        ),
        ("a call through serve (median)", lambda r: f"{f(r.serve_s, 2)} s{mb(r.serve_mb)}"),
        ("index on disk", lambda r: f"{f(r.index_mb, 0)} MB"),
    ]
    if any(r.semble_load for r in rows):
        steps += [
            ("semble: load", lambda r: r.semble_load),
            (
                "semble: first search (builds): wall (CPU)",
                lambda r: (
                    f"{f(r.semble_first_s)} s ({f(r.semble_first_cpu_s)} s){mb(r.semble_first_mb)}"
                ),
            ),
            (
                "semble: a later search",
                lambda r: f"{f(r.semble_later_s, 2)} s{mb(r.semble_later_mb)}",
            ),
        ]
    lines = [
        "| step | " + " | ".join(f"x{r.scale:g}" for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    lines += ["| " + " | ".join([name, *(cell(r) for r in rows)]) + " |" for name, cell in steps]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="OWNER+NAME/repo mirrors")
    parser.add_argument("--out", type=Path, required=True, help="where the monorepos are made")
    parser.add_argument("--repos", default=REPOS, help="OWNER/NAME,... (default: issue 43's)")
    parser.add_argument("--scales", default="1", help="e.g. 0.5,1,2 (default 1)")
    parser.add_argument("--runs", type=int, default=5, help="later calls (median)")
    parser.add_argument("--serve", action="store_true", help="also time calls through serve")
    parser.add_argument(
        "--background-s", type=float, default=60.0, help="seconds to watch the model embed"
    )
    parser.add_argument(
        "--first-pass-limit", type=float, default=600.0, help="longest wait for the first pass"
    )
    parser.add_argument(
        "--model-rate",
        action="store_true",
        help="when dense_background_limit keeps the model off, start it anyway to time it",
    )
    parser.add_argument(
        "--git", action="store_true", help="commit the assembled folder as one git repository"
    )
    parser.add_argument("--semble", default="", help="semble's command, to time it too")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args()
    if Path.cwd().resolve() == HERE.parent.resolve():
        parser.error("run it from outside the checkout (python -m would import the cwd's copy)")
    repos = [r.strip() for r in args.repos.split(",") if r.strip()]
    rows: list[Row] = []
    for scale in (float(s) for s in args.scales.split(",")):
        name = "monorepo-git" if args.git else "monorepo"
        folder = args.out / f"x{scale:g}" / name
        print(f"[x{scale:g}] assembling {folder} ...", flush=True)
        row = Row(scale, files=assemble(args.mirrors, repos, folder, scale))
        if args.git:
            commit(folder)
        index_dir = args.out / f"x{scale:g}" / ("index-git" if args.git else "index")
        measure(folder, index_dir, row, args)
        if args.semble:
            semble(folder, args.out / f"x{scale:g}", args.semble, row)
        rows.append(row)
        print(table(rows), flush=True)
        print(f"  index stages (s): {row.stages}")
        print(f"  first answer said: {row.first_said}\n  later calls said: {row.later_said}")
        if args.json:
            args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
