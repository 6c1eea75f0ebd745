"""Pilot tests of the staged dense list: the static first pass answers within seconds, the
model's own list replaces it when complete, and re-indexing never makes the layout jump."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot

from coderag_tui.core.engine import Dense, Engine
from coderag_tui.core.rank import static
from coderag_tui.settings import Settings
from coderag_tui.tui import app as app_module
from coderag_tui.tui.app import CoderagApp
from coderag_tui.tui.messages import (
    EmbeddingProgressed,
    EmbeddingsReady,
    FirstPassReady,
    SearchFinished,
)
from coderag_tui.tui.widgets.query import QueryInput
from coderag_tui.tui.widgets.status import TopBar
from tests.tui.conftest import (
    SIZE,
    AppFactory,
    Recorder,
    column,
    search,
    settle,
    text_of,
    with_dense,
)

QUERY = "charge the card and retry on timeout"


async def until(pilot: Pilot[Any], check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Let the app run until `check()` holds (workers may be blocked: no settle here)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the app did not get there in time"
        await pilot.pause(0.05)


def hold_open_dense(engine: Engine, gate: threading.Event) -> None:
    """Make the model's embedding wait for `gate` (its look at the vectors it already has,
    and the first pass, which embeds through the same method, do not)."""
    open_dense = engine.open_dense

    def held(*args: Any, **kw: Any) -> Dense:
        if kw.get("embed_missing", True) and not kw.get("first_pass", False):
            gate.wait(30)
        return open_dense(*args, **kw)

    engine.open_dense = held  # type: ignore[method-assign]


def top_bar(app: CoderagApp) -> str:
    return str(app.main.query_one(TopBar).render())


async def ask(pilot: Pilot[Any], app: CoderagApp, query: str) -> None:
    """Search without waiting for every worker (a held one would never finish)."""
    serial = app.session.serial
    field = app.main.query_one(QueryInput)
    field.focus()
    field.value = query
    await pilot.press("enter")
    await until(pilot, lambda: app.session.serial > serial and app.session.asking is None)
    await pilot.pause()


async def test_the_first_pass_answers_while_the_model_embeds_then_the_model_takes_over(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder, tiny_st_embedder: Path
) -> None:
    # The static table that ships with coderag makes the first pass (nothing is distilled);
    # a tiny model built for the tests stands for the model that takes over.
    settings = tui_settings.with_(
        embed_backend="sentence-transformers", embed_model=str(tiny_st_embedder)
    )
    app = build_app(settings)
    app.quick_embed_chunks = 0  # the tiny repository gets a first pass too
    gate = threading.Event()
    hold_open_dense(app.engine, gate)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await until(pilot, lambda: app.engine.dense is not None and app.engine.dense.first_pass)
        await ask(pilot, app, QUERY)
        run = app.session.last_run
        assert run is not None and run.rankings["dense"].available
        dense = column(app, "dense")
        assert str(dense.border_title) == "Dense · static MiniLM · first pass"
        assert "st 0%" in str(dense.border_subtitle)  # the model has embedded nothing yet
        assert "dense first pass (static MiniLM · st 0%)" in top_bar(app)
        assert "first pass" in text_of(app, "#index-stats")
        assert "Fused off" not in text_of(app, "#board-note")

        gate.set()
        await settle(pilot)
        assert app.engine.dense is not None and not app.engine.dense.first_pass
        assert app.engine.dense.coverage == 1.0
        assert str(dense.border_title) == "Dense · st-embedder"
        assert "dense ready (st-embedder)" in top_bar(app)
        stats = text_of(app, "#index-stats")
        assert "first pass" in stats and "full model" in stats and "st-embedder" in stats
        # The search ran again with the model's list; the column never went off.
        finished = recorder.of(SearchFinished)
        assert len(finished) == 2 and all(m.run.rankings["dense"].available for m in finished)


async def test_without_the_offline_extra_the_first_pass_is_off_and_says_why(
    tui_settings: Settings,
    build_app: AppFactory,
    tiny_st_embedder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(static, "load_distilled", lambda folder: None)
    monkeypatch.setattr(static, "can_distill", lambda: False)
    settings = tui_settings.with_(
        embed_backend="sentence-transformers", embed_model=str(tiny_st_embedder)
    )
    app = build_app(settings)
    app.quick_embed_chunks = 0
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, QUERY)
        assert app.engine.dense is not None and app.engine.dense.available
        assert not app.engine.dense.first_pass
        assert "coderag-tui[offline]" in text_of(app, "#index-stats")
        assert "dense ready" in top_bar(app)


class LayoutWatch(Recorder):
    """Records, as each dense stage arrives, whether the last results were kept on screen
    (marked refreshing) and whether the Dense column had collapsed."""

    def __init__(self) -> None:
        super().__init__()
        self.app: CoderagApp | None = None
        self.seen: list[tuple[bool, bool]] = []  # (refreshing, dense column off)

    def __call__(self, message: Message) -> None:
        super().__call__(message)
        if isinstance(message, EmbeddingsReady | FirstPassReady) and self.app is not None:
            board = self.app.main.board
            self.seen.append((board.refreshing, column(self.app, "dense").has_class("off")))


@pytest.mark.parametrize(
    "change",
    [
        "edit a file, ctrl+r",
        "chunking in Tuning",
        pytest.param("chunking, first pass", marks=pytest.mark.slow),
    ],
)
async def test_reindexing_keeps_the_last_rankings_until_dense_is_ready(
    tui_settings: Settings,
    build_app: AppFactory,
    tiny_st_embedder: Path,
    change: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The wait's bound (the search runs anyway after REFRESH_WAIT_S) is not what this test
    # measures: on busy cores the first pass of the new chunks can take longer than it.
    monkeypatch.setattr(app_module, "REFRESH_WAIT_S", 120.0)
    first_pass = change == "chunking, first pass"
    settings = tui_settings.with_(
        embed_backend="sentence-transformers",
        embed_model=str(tiny_st_embedder),
        dense_first_pass="static" if first_pass else "off",
    )
    app = build_app(settings)
    if first_pass:
        app.quick_embed_chunks = 0  # the new chunks get a first pass, then the model
    watch = LayoutWatch()
    watch.app = app
    async with app.run_test(size=SIZE, message_hook=watch) as pilot:
        await search(pilot, QUERY)
        assert column(app, "fused").keys and column(app, "dense").keys
        searches = len(watch.of(SearchFinished))
        watch.seen.clear()
        if change.startswith("chunking"):
            app.action_set_chunking("file")
        else:
            payment = settings.repo_root / "shop" / "payment.py"
            payment.write_text(payment.read_text() + "\n\ndef void(gateway):\n    pass\n")
            await pilot.press("ctrl+r")
        await settle(pilot)
        await asyncio.sleep(0)
        # While the new chunks were embedded, the old rankings stayed, marked refreshing.
        assert watch.seen and watch.seen[0] == (True, False)
        later = watch.of(SearchFinished)[searches:]
        assert later, "the search did not run again with the new chunks"
        # No search in between showed Dense off or a BM25-only fusion.
        assert all(m.run.rankings["dense"].available for m in later)
        assert not app.main.board.refreshing
        assert not column(app, "dense").has_class("off")
        if first_pass:  # the first pass answered, then the model's list replaced it
            assert len(later) == 2 and app.engine.dense is not None
            assert not app.engine.dense.first_pass


async def test_while_the_model_embeds_the_ranks_line_says_dense_is_pending_not_off(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = with_dense(build_app(tui_settings))
    gate = threading.Event()
    hold_open_dense(app.engine, gate)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "dense embedding" in top_bar(app))
        await ask(pilot, app, QUERY)
        assert app.dense_pending
        ranks = text_of(app, "#ranks")
        assert "Dense pending" in ranks and "Dense off" not in ranks
        gate.set()
        await settle(pilot)
        assert text_of(app, "#ranks").split(" · ")[1].startswith("Dense #")


def hold_first_pass(engine: Engine, gate: threading.Event) -> None:
    """Make the static first pass wait for `gate` after it reported its first progress."""
    open_dense = engine.open_dense

    def held(*args: Any, **kw: Any) -> Dense:
        report = kw.get("progress")
        if kw.get("first_pass", False) and report is not None:

            def progress(done: int, total: int) -> None:
                report(done, total)
                gate.wait(30)

            kw["progress"] = progress
        return open_dense(*args, **kw)

    engine.open_dense = held  # type: ignore[method-assign]


async def test_while_the_first_pass_is_made_the_top_bar_and_work_row_say_so(
    tui_settings: Settings, build_app: AppFactory, tiny_st_embedder: Path
) -> None:
    settings = tui_settings.with_(
        embed_backend="sentence-transformers", embed_model=str(tiny_st_embedder)
    )
    app = build_app(settings)
    app.quick_embed_chunks = 0  # the tiny repository gets a first pass
    gate = threading.Event()
    hold_first_pass(app.engine, gate)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "static first pass" in top_bar(app))
        bar = top_bar(app)
        # No model is loading while the first pass is made: the bar says what is embedding.
        assert "dense embedding (static first pass " in bar and "loading model" not in bar
        work = app.main.embed_progress
        assert work.display
        assert "windows (static first pass)" in str(work.query_one(".work-detail").render())
        gate.set()
        await settle(pilot)
        assert app.engine.dense is not None and app.engine.dense.available


async def test_above_the_background_limit_the_first_pass_stays_and_the_model_is_not_started(
    tui_settings: Settings, build_app: AppFactory, tiny_st_embedder: Path, recorder: Recorder
) -> None:
    settings = tui_settings.with_(
        embed_backend="sentence-transformers",
        embed_model=str(tiny_st_embedder),
        dense_background_limit=1,  # the tiny repository counts as a large one
    )
    app = build_app(settings)
    app.quick_embed_chunks = 0  # its chunks get a first pass
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, QUERY)
        assert app.engine.dense is not None and app.engine.dense.first_pass
        progress = recorder.of(EmbeddingProgressed)
        assert progress and all(m.first_pass for m in progress)  # the model embedded nothing
        said = " ".join(recorder.notifications())
        assert "dense_background_limit" in said and "coderag index --dense" in said
        bar = top_bar(app)
        assert "dense first pass (static MiniLM)" in bar and "%" not in bar
        assert column(app, "dense").keys  # the first pass ranks
