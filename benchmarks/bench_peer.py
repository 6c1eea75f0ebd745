"""coderag and semble side by side: the same repositories, the same questions, one scoring code.

    python benchmarks/bench_peer.py --mirrors /path/to/mirrors            # requests, click, coderag
    python benchmarks/bench_peer.py --repos click --calls 5 --json out.json

Each tool is run as its users run it, as a command in a fresh process:

- cold index: coderag `index` (BM25 ready) against semble's `SembleIndex.from_path` (BM25 and
  its static vectors), each into an empty cache; wall and CPU seconds;
- first answer: the first `search` of an unindexed repository, default flags;
- per call: later `search` calls with default flags (coderag once the background process has
  finished the model's list, whose time is reported too), the two tools in turn on each
  question: each one's median wall seconds and the median ratio, call by call;
- resident: coderag `search` answered by `coderag serve` (semble's MCP process is not timed);
- quality: semble's NDCG@10 (`core.eval.metrics.semble_ndcg`, the targets of each row) and
  recall at 2k tokens (the share of gold files with a chunk among the ranked chunks whose
  cl100k tokens fit in 2,000), both from each tool's top 30 chunks (coderag's fused list).

semble (`pip install semble` in a scratch venv, never a dependency of coderag) runs offline
on coderag's own static table (SEMBLE_MODEL_NAME=coderag_tui/core/rank/static_minilm, the
model2vec table distilled from the MiniLM coderag ships), since the hub cannot be reached; it
is skipped when its command is not found. Questions: the NL dev set's rows of psf/requests
and pallets/click (../shared/bench/nl_dev.jsonl, each at its base commit, from bare mirrors
under --mirrors as OWNER+NAME/repo), and benchmarks/peer_questions.jsonl for this repository
at HEAD. Prints a table per repository with the load average at its start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from coderag_tui.core import git  # noqa: E402
from coderag_tui.core.eval.datasets import EvalRow, load_dataset  # noqa: E402
from coderag_tui.core.eval.metrics import semble_ndcg  # noqa: E402
from coderag_tui.core.prompt.tokens import token_counter  # noqa: E402
from coderag_tui.core.rank.static import SHIPPED_TABLE  # noqa: E402

TOP = 30  # chunks asked of each tool for the quality figures
BUDGET = 2000  # tokens of the recall figure
NL_DEV = ROOT.parent / "shared" / "bench" / "nl_dev.jsonl"
REPOS = {"requests": "psf/requests", "click": "pallets/click", "coderag": "coderag"}


@dataclass
class Timed:
    wall: float
    cpu: float
    out: str
    err: str
    code: int


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> Timed:
    """One command to its end: wall seconds and the CPU seconds of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=900
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, done.stdout, done.stderr, done.returncode)


def _git(place: Path, *argv: str, paths: tuple[str, ...] = ()) -> None:
    """git through coderag's one safe way to run it (no configured programs, `--` before
    paths); RuntimeError when it fails."""
    done = git.run(place, *argv, paths=paths, timeout=600)
    if done is None or done.returncode != 0:
        raise RuntimeError(f"git {' '.join(argv)} failed in {place}")


def checkout(name: str, rows: list[EvalRow], mirrors: Path | None, scratch: Path) -> Path:
    """The repository at its questions' base commit (this one at HEAD), in `scratch`."""
    target = scratch / name
    # A local clone (coderag's own git refuses every transport, so this one is run here).
    source = ROOT if name == "coderag" else None
    if source is None:
        assert mirrors is not None
        source = mirrors / REPOS[name].replace("/", "+") / "repo"
    subprocess.run(["git", "clone", "-q", "--", str(source), str(target)], check=True)
    if name == "coderag":
        return target
    commit = rows[0].base_commit
    if commit:
        # checkout takes no --end-of-options: the commit checked (git.revision), then `--`
        _git(target, "checkout", "-q", git.revision(commit), paths=())
    return target


def questions(name: str) -> list[EvalRow]:
    if name == "coderag":
        return load_dataset(HERE / "peer_questions.jsonl")
    return [row for row in load_dataset(NL_DEV) if row.repo == REPOS[name]]


@dataclass
class Tool:
    """How to run one tool's commands on one repository, with caches in `home`."""

    name: str
    repo: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)

    def index(self) -> list[str]:
        raise NotImplementedError

    def search(self, query: str, *, top: int | None = None) -> list[str]:
        raise NotImplementedError

    def run(self, argv: list[str]) -> Timed:
        """A command of this tool, from its home folder (never from a source checkout, whose
        package `python -m` would import instead of the one asked for)."""
        return run(argv, self.env, self.home)

    def chunks(self, out: str) -> list[tuple[str, int, int]]:
        raise NotImplementedError


class Coderag(Tool):
    def __init__(self, repo: Path, home: Path, python: str, source: Path | None = None) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        env.pop("CODERAG_DENSE_BACKGROUND", None)  # the default: on
        if source is not None:  # another checkout's code (a "before" run)
            env["PYTHONPATH"] = str(source)
        super().__init__("coderag", repo, home, env)
        self.base = [python, "-m", "coderag_tui"]

    def index_dir(self) -> Path:
        return self.home / "index"

    def index(self) -> list[str]:
        return [*self.base, "index", str(self.repo), "--index-dir", str(self.index_dir())]

    def search(self, query: str, *, top: int | None = None) -> list[str]:
        argv = [*self.base, "search", query, str(self.repo), "--index-dir", str(self.index_dir())]
        return [*argv, "--json", "--k", str(top)] if top else argv

    def serve(self) -> list[str]:
        return [*self.base, "serve", str(self.repo), "--index-dir", str(self.index_dir())]

    def chunks(self, out: str) -> list[tuple[str, int, int]]:
        hits = json.loads(out)["rankings"]["fused"]["hits"]
        return [(h["path"], int(h["start_line"]), int(h["end_line"])) for h in hits]

    def background_done(self, timeout: float = 900.0) -> float:
        """Seconds until the background embedding process has ended: its status file appears
        (within 15 s of the search; never when the model had every chunk) and goes away."""
        started = time.monotonic()

        def status() -> bool:
            return any(self.index_dir().glob("*.embedding.json"))

        while not status() and time.monotonic() - started < 15:
            time.sleep(0.1)
        if not status():
            return float("nan")  # no background process (the model had every chunk, or older code)
        while status() and time.monotonic() - started < timeout:
            time.sleep(0.2)
        return time.monotonic() - started

    def stage(self, out: str) -> str:
        return str(json.loads(out)["dense"]["stage"])


class Semble(Tool):
    def __init__(self, repo: Path, home: Path, command: str) -> None:
        env = dict(
            os.environ,
            HF_HUB_OFFLINE="1",
            SEMBLE_MODEL_NAME=str(SHIPPED_TABLE),
            SEMBLE_CACHE_LOCATION=str(home / "cache"),
        )
        super().__init__("semble", repo, home, env)
        self.command = command
        self.python = str(Path(command).with_name("python"))

    def index(self) -> list[str]:
        code = (
            "import sys\nfrom semble import SembleIndex\n"
            f"SembleIndex.from_path({str(self.repo)!r}, model_path={str(SHIPPED_TABLE)!r})\n"
        )
        return [self.python, "-c", code]

    def search(self, query: str, *, top: int | None = None) -> list[str]:
        argv = [self.command, "search", query, str(self.repo)]
        return [*argv, "-k", str(top), "--format", "json"] if top else argv

    def chunks(self, out: str) -> list[tuple[str, int, int]]:
        results = json.loads(out)["results"]
        return [(r["file_path"], int(r["start_line"]), int(r["end_line"])) for r in results]


def recall_at_budget(
    repo: Path, ranked: list[tuple[str, int, int]], gold: tuple[str, ...], count: Any
) -> float:
    """Share of gold files with a chunk among the ranked chunks that fit in BUDGET tokens."""
    used, found = 0, set()
    for path, start, end in ranked:
        try:
            lines = (repo / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        tokens = count("\n".join(lines[max(0, start - 1) : end]))
        if used + tokens > BUDGET:
            break
        used += tokens
        found.add(path.lstrip("./"))
    return len(found & set(gold)) / len(gold) if gold else 0.0


def quality(tool: Tool, rows: list[EvalRow], count: Any) -> dict[str, float]:
    ndcg, recall = [], []
    for row in rows:
        done = tool.run(tool.search(row.query, top=TOP))
        if done.code != 0:
            raise SystemExit(f"{tool.name} failed on {row.id}: {done.err[-300:]}")
        ranked = tool.chunks(done.out)
        if isinstance(tool, Coderag) and tool.stage(done.out) != "model":
            print(f"{row.id}: coderag ranked with the {tool.stage(done.out)}", file=sys.stderr)
        ndcg.append(semble_ndcg(ranked, row.targets))
        recall.append(recall_at_budget(tool.repo, ranked, row.gold_files, count))
    return {"ndcg10": statistics.mean(ndcg), "recall2k": statistics.mean(recall)}


def median_call(tool: Tool, rows: list[EvalRow], calls: int) -> float:
    walls = []
    for row in rows[:calls]:
        done = tool.run(tool.search(row.query))
        if done.code != 0:
            raise SystemExit(f"{tool.name} failed: {done.err[-300:]}")
        walls.append(done.wall)
    return statistics.median(walls)


def paired_calls(tools: list[Tool], rows: list[EvalRow], calls: int) -> dict[str, float]:
    """Later calls with default flags, the tools in turn on each question (so a change in the
    machine's load falls on both): each tool's median wall seconds, and the median of
    coderag's time over semble's, pair by pair."""
    walls: dict[str, list[float]] = {tool.name: [] for tool in tools}
    for row in rows[:calls]:
        for tool in tools:
            done = tool.run(tool.search(row.query))
            if done.code != 0:
                raise SystemExit(f"{tool.name} failed: {done.err[-300:]}")
            walls[tool.name].append(done.wall)
    figures = {name: statistics.median(values) for name, values in walls.items()}
    if len(tools) == 2:
        ratios = [a / b for a, b in zip(*walls.values(), strict=True)]
        figures["ratio"] = statistics.median(ratios)
    return figures


def resident_call(tool: Coderag, rows: list[EvalRow], calls: int) -> float:
    server = subprocess.Popen(
        tool.serve(),
        env=tool.env,
        cwd=tool.home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 120
        for line in server.stderr:
            if "serving" in line or time.monotonic() > deadline:
                break
        return median_call(tool, rows, calls)
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure(tool: Tool, rows: list[EvalRow], calls: int, count: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    cold = tool.run(tool.index())
    if cold.code != 0:
        raise SystemExit(f"{tool.name} could not index: {cold.err[-300:]}")
    figures["cold_index"] = (cold.wall, cold.cpu)
    # From nothing again: the first search builds the index itself.
    shutil.rmtree(tool.home)
    tool.home.mkdir()
    first = tool.run(tool.search(rows[0].query))
    figures["first_answer"] = first.wall
    figures["first_said"] = [line for line in first.err.splitlines() if line.strip()]
    if isinstance(tool, Coderag):
        figures["model_ready_after"] = first.wall + tool.background_done()
    if isinstance(tool, Coderag):
        figures["resident"] = resident_call(tool, rows, calls)
    figures.update(quality(tool, rows, count))
    return figures


def table(name: str, results: dict[str, dict[str, Any]], loads: tuple[str, str]) -> str:
    tools = list(results)
    lines = [
        f"### {name} (load average {loads[0]} at the start, {loads[1]} at the end)",
        "",
        "| | " + " | ".join(tools) + " |",
        "|---|" + "---|" * len(tools),
    ]

    def cell(tool: str, key: str) -> str:
        value = results[tool].get(key)
        if value is None or (isinstance(value, float) and value != value):  # none, or NaN
            return "–"
        if key == "cold_index":
            return f"{value[0]:.2f} s / {value[1]:.2f} s"
        if key in ("ndcg10", "recall2k", "per_call_ratio"):
            return f"{value:.3f}" if key != "per_call_ratio" else f"{value:.2f}×"
        return f"{value:.2f} s"

    for key, label in (
        ("cold_index", "cold index (wall / CPU)"),
        ("first_answer", "from nothing to the first answer"),
        ("model_ready_after", "... to the model's complete list (background)"),
        ("per_call", "each later CLI call, default flags (median)"),
        ("per_call_ratio", "... coderag / semble, call by call (median)"),
        ("resident", "through the resident process (`coderag serve`)"),
        ("ndcg10", "NDCG@10"),
        ("recall2k", "recall at 2k tokens"),
    ):
        lines.append(f"| {label} | " + " | ".join(cell(t, key) for t in tools) + " |")
    return "\n".join(lines)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", default="requests,click,coderag")
    parser.add_argument("--mirrors", type=Path, help="bare mirrors, as OWNER+NAME/repo")
    parser.add_argument("--semble", default=shutil.which("semble") or "", help="its command")
    parser.add_argument("--calls", type=int, default=8, help="timed later calls per tool")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    parser.add_argument(
        "--coderag-src", type=Path, help="run coderag from this checkout (e.g. main, for before)"
    )
    parser.add_argument("--no-semble", action="store_true", help="coderag alone")
    args = parser.parse_args()
    count = token_counter("cl100k_base").count
    have_semble = bool(args.semble) and Path(args.semble).is_file() and not args.no_semble
    if args.mirrors is None and set(args.repos.split(",")) - {"coderag"}:
        parser.error("--mirrors DIR is needed for requests and click")
    if not have_semble:
        print(f"semble not found at {args.semble}: coderag alone", file=sys.stderr)
    everything: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as scratch_name:
        scratch = Path(scratch_name)
        for name in args.repos.split(","):
            rows = questions(name)
            repo = checkout(name, rows, args.mirrors, scratch)
            start_load = load()
            results: dict[str, dict[str, Any]] = {}
            tools: list[Tool] = [
                Coderag(repo, scratch / f"{name}-coderag", sys.executable, args.coderag_src)
            ]
            if have_semble:
                tools.append(Semble(repo, scratch / f"{name}-semble", args.semble))
            for tool in tools:
                tool.home.mkdir()
                results[tool.name] = measure(tool, rows, args.calls, count)
            paired = paired_calls(tools, rows, args.calls)
            for tool in tools:
                results[tool.name]["per_call"] = paired[tool.name]
            if "ratio" in paired:
                results["coderag"]["per_call_ratio"] = paired["ratio"]
            print(table(f"{name}, {len(rows)} questions", results, (start_load, load())))
            print(f"\ncoderag's first answer said: {results['coderag']['first_said']}\n")
            everything[name] = {"load": [start_load, load()], **results}
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
