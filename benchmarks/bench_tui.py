"""TUI benchmark on the standard library: start-up to interactive, and Enter to rendered results.

The index of the stdlib is built first (not timed) in a temporary index folder; then the real
app is driven with Pilot (headless, 140x44):

  start-up    each run in a fresh Python process, as a user starts `coderag`: from launching
              the process -> the main screen painted, and -> BM25 searchable (chunks and BM25
              loaded; the check for changed files goes on after). Also from make_app, i.e.
              without the interpreter and import time. Target: <= 1.5 s.
  search      Enter in the query input -> the screen refreshed with the results (BM25, dense
              and fused columns, ranks line, preview, latency). The prompt is packed right
              after, in the same worker, and shows up a moment later. Target: <= 100 ms.

Dense embedding is off (embed_backend none), so "fused" is RRF over BM25 alone: embedding
the whole stdlib is bench_search.py's job, not the UI's.

  input       with --input-latency: a key typed into the query input -> the screen refreshed
              with it, while the full embedding model (the offline all-MiniLM-L6-v2) embeds a
              repository of a few hundred chunks from an empty embedding cache (keys 0.15 s
              apart), and again once embedding is done, for comparison.

Run: PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_tui.py [--runs 3]
     PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_tui.py --input-latency
It prints numbers and asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.settings import Settings

if TYPE_CHECKING:  # imported where used: a start-up child imports them as the CLI does
    from coderag_tui.tui.app import CoderagApp
    from coderag_tui.tui.messages import SearchFinished

QUERIES = [
    "parse a date string into a datetime",
    "open a gzip file and read lines",
    "HTTP request headers parsing",
    "thread pool executor shutdown wait",
    "json encoder for custom objects",
    "retry on connection reset",
    "walk a directory tree recursively",
    "compile a regular expression with flags",
    "temporary directory cleanup",
    "subprocess run with timeout",
    "base64 encode bytes",
    "socket connect with timeout",
]
SIZE = (140, 44)


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


async def wait_until(check: object, timeout: float = 120.0) -> None:
    """Poll a condition every millisecond (no Pilot pause, which would add its own waiting)."""
    deadline = time.perf_counter() + timeout
    while not check():  # type: ignore[operator]
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(0.001)


async def startup(settings: Settings) -> tuple[float, float, float, CoderagApp]:
    """From make_app: seconds to painted and to BM25-searchable, and CPU seconds by then."""
    from coderag_tui.tui.app import make_app

    start = time.perf_counter()
    cpu = time.process_time()
    app = make_app(settings, system_clipboard=False)
    painted = 0.0
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: len(app.screen_stack) > 0 and app.screen.is_mounted)
        await pilot.pause(0)
        painted = time.perf_counter() - start
        await wait_until(lambda: app.engine.ready)
        ready = time.perf_counter() - start
        ready_cpu = time.process_time() - cpu
        await app.workers.wait_for_complete()
    return painted, ready, ready_cpu, app


def stamp_rendered_results(stamps: dict[int, float]) -> None:
    """Record, per search, when the screen has been refreshed with its rankings."""
    from coderag_tui.tui.app import CoderagApp

    handler = CoderagApp.on_search_finished

    def timed(self: CoderagApp, message: SearchFinished) -> None:
        handler(self, message)
        self.call_after_refresh(lambda: stamps.setdefault(message.serial, time.perf_counter()))

    CoderagApp.on_search_finished = timed  # type: ignore[method-assign]


async def searches(settings: Settings) -> tuple[list[float], list[float]]:
    stamps: dict[int, float] = {}
    stamp_rendered_results(stamps)
    from coderag_tui.tui.app import make_app

    app = make_app(settings, system_clipboard=False)
    times: list[float] = []
    cpu_times: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: app.engine.ready)
        await app.workers.wait_for_complete()
        await pilot.pause()
        field = app.main.query_one("#query")
        field.focus()
        for i, query in enumerate(QUERIES):
            field.value = query  # type: ignore[attr-defined]
            await pilot.pause()
            serial = app.session.serial + 1
            start = time.perf_counter()
            cpu = time.process_time()
            await pilot.press("enter")
            await wait_until(lambda s=serial: s in stamps)  # type: ignore[misc]
            elapsed = stamps[serial] - start
            cpu_used = time.process_time() - cpu
            await app.workers.wait_for_complete()  # the prompt is packed before the next query
            await pilot.pause()
            if i > 0:  # the first query also pays for first-use costs
                times.append(elapsed)
                cpu_times.append(cpu_used)
            else:
                print(f"  first query: {fmt(elapsed)}")
    return times, cpu_times


# --repo: another repository (e.g. bench_scale.py's stdlib x30), passed to the start-up
# children through the environment.
REPO_ENV = "CODERAG_BENCH_TUI_REPO"


def bench_settings(tmp: Path) -> Settings:
    return Settings(
        repo=Path(os.environ.get(REPO_ENV) or sysconfig.get_paths()["stdlib"]),
        index_dir=tmp / "index",
        embed_backend="none",
        theme_dir=tmp / "themes",
    )


def child_startup(tmp: Path) -> None:
    """One start-up in this fresh process, importing the app as `coderag` does; prints
    wall-clock stamps and CPU time as JSON."""
    import coderag_tui.tui.app  # noqa: F401

    imported = time.time()  # make_app follows the imports at once
    painted, ready, cpu, _app = asyncio.run(startup(bench_settings(tmp)))
    stamps = {"imported": imported, "painted": imported + painted, "ready": imported + ready}
    print(json.dumps({**stamps, "from_app_ready": ready, "cpu": cpu}))


def fresh_startup(tmp: Path) -> dict[str, float]:
    """Launch a fresh interpreter that starts the app once; seconds from the launch."""
    spawned = time.time()
    out = subprocess.run(
        [sys.executable, __file__, "--child-startup", str(tmp)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    ).stdout
    stamps = json.loads(out.strip().splitlines()[-1])
    return {
        "painted": stamps["painted"] - spawned,
        "ready": stamps["ready"] - spawned,
        "imports": stamps["imported"] - spawned,
        "from_app_ready": stamps["from_app_ready"],
        "cpu": stamps["cpu"],
    }


LATENCY_REPO = "asyncio"  # a stdlib package of a few hundred chunks
KEY_GAP_S = 0.15  # between two keys, as a person types


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def key_to_screen(app: CoderagApp, key: str) -> float:
    """Send one key as the terminal driver does; seconds until the query input shows it and
    the screen has been refreshed after that."""
    from textual import events

    from coderag_tui.tui.widgets.query import QueryInput

    field = app.main.query_one(QueryInput)
    before = field.value
    stamps: list[float] = []
    start = time.perf_counter()
    assert app._driver is not None
    app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    await wait_until(lambda: field.value != before, timeout=30)
    app.call_after_refresh(lambda: stamps.append(time.perf_counter()))
    await wait_until(lambda: bool(stamps), timeout=30)
    return stamps[0] - start


async def typing_while_embedding(settings: Settings) -> tuple[dict[str, list[float]], int]:
    """Key-to-screen seconds from BM25-searchable until the model has embedded every chunk,
    by what the top bar said about dense when the key was sent, then 20 keys after; and the
    number of chunks."""
    from coderag_tui.tui.app import make_app
    from coderag_tui.tui.widgets.query import QueryInput

    app = make_app(settings, system_clipboard=False)
    phases: dict[str, list[float]] = {}
    keys = ["x", "backspace"]
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: app.engine.ready)
        app.main.query_one(QueryInput).focus()
        await pilot.pause()
        n = 0
        while app.index_state.dense not in ("ready", "off"):
            phase = app.index_state.dense
            phases.setdefault(phase, []).append(await key_to_screen(app, keys[n % 2]))
            n += 1
            await asyncio.sleep(KEY_GAP_S)
        await app.workers.wait_for_complete()
        await pilot.pause()
        for i in range(20):
            phases.setdefault("after (idle)", []).append(await key_to_screen(app, keys[i % 2]))
            await asyncio.sleep(KEY_GAP_S)
        lexical = app.engine.lexical
        chunks = len(lexical.chunks) if lexical is not None else 0
    return phases, chunks


def input_latency(tmp: Path) -> None:
    repo = Path(sysconfig.get_paths()["stdlib"]) / LATENCY_REPO
    settings = Settings(repo=repo, index_dir=tmp / "index", theme_dir=tmp / "themes")
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    phases, chunks = asyncio.run(typing_while_embedding(settings))
    print(f"key -> screen while the model embeds {repo} ({chunks:,} chunks), by dense state:")
    for name, values in phases.items():
        if values:
            print(
                f"  {name:16} median {fmt(statistics.median(values))}   "
                f"p95 {fmt(percentile(values, 0.95))}   max {fmt(max(values))}   "
                f"({len(values)} keys)"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description="TUI start-up and search latency")
    parser.add_argument("--runs", type=int, default=5, help="start-ups to time (default 5)")
    parser.add_argument("--child-startup", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help="the repository to start in (default: stdlib)")
    parser.add_argument(
        "--start-only", action="store_true", help="only the start-up, not the search latency"
    )
    parser.add_argument(
        "--input-latency",
        action="store_true",
        help="only: key-to-screen latency while the full model embeds",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.input_latency:
        with tempfile.TemporaryDirectory() as tmp:
            input_latency(Path(tmp))
        return 0
    if args.child_startup is not None:
        child_startup(args.child_startup)
        return 0
    if args.repo is not None:
        os.environ[REPO_ENV] = str(args.repo.resolve())
    stdlib = Path(os.environ.get(REPO_ENV) or sysconfig.get_paths()["stdlib"])
    with tempfile.TemporaryDirectory() as tmp:
        settings = bench_settings(Path(tmp))
        t = time.perf_counter()
        from coderag_tui.core.index.indexer import open_index

        store, report = open_index(settings)
        store.close()
        print(
            f"stdlib at {stdlib}: {report.files_total:,} files, {report.chunks:,} chunks "
            f"({settings.chunking_spec.key}); index built in {time.perf_counter() - t:.1f} s "
            "(not part of the numbers below)"
        )
        print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        runs = [fresh_startup(Path(tmp)) for _ in range(args.runs)]

        def med(name: str) -> float:
            return statistics.median(r[name] for r in runs)

        print(f"start-up, existing index ({args.runs} fresh processes, median):")
        print(f"  interpreter + imports {fmt(med('imports'))}")
        print(f"  screen painted        {fmt(med('painted'))}")
        print(f"  BM25 searchable       {fmt(med('ready'))}   (target <= 1500 ms)")
        print(f"    of which after make_app {fmt(med('from_app_ready'))}")
        print(f"  CPU from make_app to searchable {fmt(med('cpu'))}   (all threads)")
        if args.start_only:
            return 0
        times, cpu_times = asyncio.run(searches(settings))
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"Enter -> rendered results, BM25 + fused ({len(times)} queries):")
        print(f"  median {fmt(statistics.median(times))}   p95 {fmt(p95)}   (target <= 100 ms)")
        print(f"  CPU used, median {fmt(statistics.median(cpu_times))}   (all threads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
