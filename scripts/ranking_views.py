"""Render the real app's rankings before and after the code-aware signals, query by query.

    PYTHONPATH=. .venv/bin/python scripts/ranking_views.py [--out screenshots/ranking]
        [--index-dir DIR] [--only requests|fastapi] [--timeout 1800]

For each repository (psf/requests and fastapi/fastapi, checked out from the bare mirrors
under /work/.mirror into a temporary folder) and each query, the app runs headless at
160x44 twice: "before" with `signals=False` (plain RRF of BM25 and dense) and "after" with
the defaults. Dense search uses the offline model, and the query is searched only once the
model's own list is installed (not the static first pass), so both views rank the same
vectors. Writes `<out>/<repo>/<query-slug>/{before,after}.svg` and `<out>/README.md`, a
table of the top-3 chunks of BM25, Dense and Fused as the app's session holds them.

The index, its BM25 arrays and the embedding cache go to a private folder (a temporary one
unless --index-dir names one to keep between runs, with the checkouts in it); only the
derived models in the user cache (`~/.cache/coderag/models`) are shared. Timings come from
a deterministic clock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from coderag_tui.core.records import RankingName, SearchRun  # noqa: E402
from coderag_tui.settings import Settings  # noqa: E402
from coderag_tui.tui.app import CoderagApp, make_app  # noqa: E402
from coderag_tui.tui.clock import StepClock  # noqa: E402

SIZE = (160, 44)
MIRRORS = Path("/work/.mirror")
LISTS: tuple[RankingName, ...] = ("bm25", "dense", "fused")
TITLES = {"bm25": "BM25", "dense": "Dense", "fused": "Fused"}
TOP = 3


@dataclass(frozen=True)
class Repository:
    """A repository to check out from its bare mirror, and the questions asked of it."""

    name: str  # folder and section name
    mirror: str  # owner+name under MIRRORS
    queries: tuple[str, ...]


REPOSITORIES = (
    Repository(
        "requests",
        "psf+requests",
        (
            "how are redirects handled",  # issue 11
            "how do sessions keep cookies between requests",
            "where are retries and connection pooling configured",
            "how is basic and digest authentication done",
        ),
    ),
    Repository(
        "fastapi",
        "fastapi+fastapi",
        (
            "how are routes registered",  # issue 11
            "websocket endpoint implementation",  # issue 11
            "APIRouter",  # issue 11
            "how are dependencies resolved for a request",
        ),
    ),
)


@dataclass(frozen=True)
class View:
    """What one render showed: the query's top chunks per list and how dense was made."""

    top: dict[RankingName, tuple[str, ...]]
    dense_model: str
    first_pass: bool


def slug(query: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-")[:60]


def checkout(repo: Repository, into: Path) -> tuple[Path, str]:
    """Extract the mirror's HEAD into `into/<name>` (the mirror is only read); its commit."""
    git_dir = MIRRORS / repo.mirror / "repo"
    commit = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    target = into / repo.name
    if not target.is_dir():
        archive = subprocess.run(
            ["git", "--git-dir", str(git_dir), "archive", "--format=tar", "HEAD"],
            check=True,
            capture_output=True,
        ).stdout
        target.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
    return target, commit


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until no worker runs (a worker replaced by a newer one ends cancelled)."""
    for _ in range(3):
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def model_dense_ready(app: CoderagApp) -> bool:
    """Is the model's own dense list installed (or dense off for good)?"""
    dense = app.engine.dense
    if dense is None or app.dense_pending:
        return False
    return not dense.available or (app.model_installed and not dense.first_pass)


async def wait_for_dense(pilot: Pilot[Any], timeout: float) -> None:
    """Wait until the index is searchable and the model's dense list is installed."""
    app = pilot.app
    assert isinstance(app, CoderagApp)
    deadline = time.monotonic() + timeout
    while True:
        await settle(pilot)
        if app.engine.ready and model_dense_ready(app):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the model's dense list was not ready after {timeout:.0f} s")
        await asyncio.sleep(0.5)


async def search_when_dense_ready(pilot: Pilot[Any], query: str, timeout: float) -> None:
    app = pilot.app
    assert isinstance(app, CoderagApp)
    await wait_for_dense(pilot, timeout)
    field = app.main.query_one("#query")
    field.value = query  # type: ignore[attr-defined]
    field.focus()
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("escape")  # the board has focus, as after a user's search
    await settle(pilot)


def view_of(app: CoderagApp, query: str) -> View:
    run: SearchRun | None = app.session.last_run
    if run is None or run.query != query:
        raise SystemExit(f"the app shows no search for {query!r}")
    dense = app.engine.dense
    top = {
        name: tuple(h.chunk.key for h in run.rankings[name].hits[:TOP])
        if run.rankings[name].available
        else (f"(off: {run.rankings[name].reason})",)
        for name in LISTS
    }
    model = dense.model if dense is not None and dense.available else "off"
    return View(top, model, bool(dense is not None and dense.first_pass))


def warm_up(settings: Settings, timeout: float) -> None:
    """Build the index and the model's vectors once, so every screen shows a warm start
    (no static first pass, "unchanged" files) whether or not the index folder was new."""
    app = make_app(settings, clock=StepClock(), system_clipboard=False)

    async def auto_pilot(pilot: Pilot[Any]) -> None:
        await wait_for_dense(pilot, timeout)
        app.exit()

    app.run(headless=True, size=SIZE, auto_pilot=auto_pilot)


def render(settings: Settings, query: str, path: Path, timeout: float) -> View:
    """Run the app headless, search `query` once dense is ready, save the screen as SVG."""
    app = make_app(settings, clock=StepClock(), system_clipboard=False)
    shown: list[View] = []

    async def auto_pilot(pilot: Pilot[Any]) -> None:
        await search_when_dense_ready(pilot, query, timeout)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        shown.append(view_of(app, query))
        app.exit(app.export_screenshot(title=f"coderag — {query} ({path.stem})"))

    svg = app.run(headless=True, size=SIZE, auto_pilot=auto_pilot)
    if not isinstance(svg, str) or not shown:
        raise SystemExit(f"the app did not produce a screenshot for {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(svg, encoding="utf-8")
    print(f"wrote {path} ({len(svg) // 1024} KB)", flush=True)
    return shown[0]


def cell(keys: tuple[str, ...]) -> str:
    return "<br>".join(f"`{k}`" for k in keys) or "—"


def readme(rows: list[tuple[Repository, str, str, View, View]]) -> str:
    lines = [
        "# Rankings before and after the code-aware signals",
        "",
        "Written by `scripts/ranking_views.py`: the real app rendered headless at "
        f"{SIZE[0]}x{SIZE[1]}, each query searched once the model's dense list was in. "
        '"Before" is `signals=False` (plain RRF of BM25 and dense); "after" is the '
        "defaults. BM25 and Dense do not change between the two (the signals re-score only "
        "the fused list), so they are listed once. Cells are the top-3 chunks "
        "(`path:start-end`) as the app's session held them for the screenshot.",
        "",
    ]
    for repo, commit, _, _, _ in rows:
        line = f"- {repo.mirror.replace('+', '/')} at `{commit[:12]}`"
        if line not in lines:
            lines.append(line)
    lines += [
        "",
        "| query | BM25 | Dense | Fused before | Fused after | screens |",
        "|---|---|---|---|---|---|",
    ]
    for repo, _, query, before, after in rows:
        for name in ("bm25", "dense"):
            if before.top[name] != after.top[name]:
                raise SystemExit(f"{name} differs before/after for {query!r}: not comparable")
        folder = f"{repo.name}/{slug(query)}"
        screens = " · ".join(f"[{stem}]({folder}/{stem}.svg)" for stem in ("before", "after"))
        lines.append(
            f"| {repo.name}: {query} | {cell(after.top['bm25'])} | {cell(after.top['dense'])} "
            f"| {cell(before.top['fused'])} | {cell(after.top['fused'])} | {screens} |"
        )
    models = {v.dense_model for *_, b, a in rows for v in (b, a)}
    lines += ["", f"Dense model: {', '.join(sorted(models))}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots" / "ranking")
    parser.add_argument(
        "--index-dir", type=Path, help="private index folder to keep (default: a temporary one)"
    )
    parser.add_argument("--only", choices=[r.name for r in REPOSITORIES], action="append")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds to wait for the model's dense list"
    )
    args = parser.parse_args(argv)
    rows: list[tuple[Repository, str, str, View, View]] = []
    with tempfile.TemporaryDirectory(prefix="ranking-views-") as tmp:
        base = Path(tmp)
        index_dir = args.index_dir or base / "index"
        # Beside a kept index, so a second run finds the same paths and reuses its vectors.
        checkouts = args.index_dir / "checkouts" if args.index_dir else base / "repos"
        for repo in REPOSITORIES:
            if args.only and repo.name not in args.only:
                continue
            root, commit = checkout(repo, checkouts)
            settings = Settings(
                repo=root,
                index_dir=index_dir,
                theme_dir=base / "no-user-themes",
            )
            warm_up(settings, args.timeout)
            for query in repo.queries:
                folder = args.out / repo.name / slug(query)
                before = render(
                    settings.with_(signals=False), query, folder / "before.svg", args.timeout
                )
                after = render(settings, query, folder / "after.svg", args.timeout)
                rows.append((repo, commit, query, before, after))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "README.md").write_text(readme(rows), encoding="utf-8")
    print(f"wrote {args.out / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
