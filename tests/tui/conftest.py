"""Fixtures for the TUI tests: settings on the tiny repository, an app factory, a settle helper."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerCancelled

from coderag_tui.settings import Settings
from coderag_tui.tui.app import CoderagApp, make_app
from coderag_tui.tui.clock import StepClock
from coderag_tui.tui.widgets.rankings import RankingColumn
from tests.fixtures.hashing_embedder import HashingEmbedder
from tests.fixtures.nested_repo import make_nested_repo
from tests.fixtures.tiny_models import (  # noqa: F401 (fixtures for test_dense_columns)
    tiny_models_dir,
    tiny_st_cross_encoder,
    tiny_st_embedder,
)

SIZE = (140, 44)

AppFactory = Callable[..., CoderagApp]


def text_of(app: CoderagApp, selector: str) -> str:
    """The rendered text of a Static on the current screen."""
    return str(app.screen.query_one(selector, Static).render())


def column(app: CoderagApp, name: str) -> RankingColumn:
    """The ranking column of one method (bm25, dense, fused, rerank) on the main screen."""
    return app.main.query_one(f"#column-{name}", RankingColumn)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (Pilot needs one; no plugin required)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@pytest.fixture
def tui_settings(tiny_repo: Path, index_dir: Path, tmp_path: Path) -> Settings:
    """BM25-only settings on the tiny shop repository, small chunks so rankings have depth."""
    return Settings(
        repo=tiny_repo,
        index_dir=index_dir,
        embed_backend="none",
        chunk_lines=12,
        theme_dir=tmp_path / "user-themes",
    )


@pytest.fixture
def nested_settings(index_dir: Path, tmp_path: Path) -> Settings:
    """The flask-like repository (paths three folders deep), 64-line chunks as by default."""
    return Settings(
        repo=make_nested_repo(tmp_path / "flask"),
        index_dir=index_dir,
        embed_backend="none",
        chunk_lines=64,
        theme_dir=tmp_path / "user-themes",
    )


def with_dense(app: CoderagApp) -> CoderagApp:
    """The app with a dense stage from a tiny hashing embedder (no model to load): the three
    columns BM25, Dense and Fused, as most users see them."""
    app.model_embedder = HashingEmbedder()
    return app


@pytest.fixture
def secrets_settings(tmp_path: Path, index_dir: Path) -> Settings:
    """BM25-only settings on a small repository that holds real-shaped fake secrets."""
    from tests.fixtures.secrets_repo import make_secrets_repo

    return Settings(
        repo=make_secrets_repo(tmp_path / "shop"),
        index_dir=index_dir,
        embed_backend="none",
        chunk_lines=12,
        theme_dir=tmp_path / "themes",
    )


@pytest.fixture
def build_app() -> Callable[..., CoderagApp]:
    """make_app with a deterministic clock, no remembered state and no system clipboard."""

    def build(settings: Settings, **kw: Any) -> CoderagApp:
        kw.setdefault("clock", StepClock())
        kw.setdefault("system_clipboard", False)
        return make_app(settings, **kw)

    return build


class Recorder:
    """Collects messages posted in the app (a `run_test` message hook)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def __call__(self, message: Message) -> None:
        self.messages.append(message)

    def of(self, kind: type[Message]) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]

    def notifications(self) -> list[str]:
        return [m.notification.message for m in self.of(Notify)]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until background work (indexing, search, packing) is done and rendered."""
    for _ in range(3):
        # A worker replaced by a newer one of its group (e.g. embedding after a re-index)
        # ends cancelled; that is expected here.
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def search(pilot: Pilot[Any], query: str, *, typed: bool = False) -> None:
    """Put a query in the query input (typed key by key, or pasted) and press Enter."""
    from coderag_tui.tui.widgets.query import QueryInput

    await settle(pilot)
    field = pilot.app.screen.query_one(QueryInput)
    field.focus()
    if typed:
        field.value = ""
        await pilot.press(*query)
    else:
        field.value = query
    await pilot.press("enter")
    await settle(pilot)


def burst(app: CoderagApp, *keys: str) -> None:
    """Send keys as a terminal does when they arrive together: none waits for the last."""
    driver = app._driver
    assert driver is not None
    for key in keys:
        driver.send_message(events.Key(key, key if len(key) == 1 else None))
