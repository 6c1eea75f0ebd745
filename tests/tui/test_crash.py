"""A bug in a worker never takes the app down or vanishes: one sentence names it and where its
crash report is, the report holds the traceback, and the next search works."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle


async def test_a_failing_worker_writes_a_crash_report_and_the_app_goes_on(
    tui_settings: Settings,
    build_app: AppFactory,
    recorder: Recorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    real_search = Engine.search
    calls = {"n": 0}

    def search_with_a_bug(self: Engine, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 1:  # the first search meets a bug; the next ones do not
            raise RuntimeError("a deliberate bug in the search")
        return real_search(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Engine, "search", search_with_a_bug)
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        await settle(pilot)
        (said,) = [n for n in recorder.notifications() if "Something went wrong" in n]
        assert "RuntimeError: a deliberate bug in the search" in said
        reports = list((tmp_path / "state").rglob("crash-*.txt"))
        assert len(reports) == 1 and str(reports[0]) in said
        text = reports[0].read_text()
        assert "Traceback" in text and "search_with_a_bug" in text
        assert app.is_running and app.session.asking is None
        await search(pilot, "refund payment")  # the app is still usable
        await settle(pilot)
        run = app.session.last_run
        assert run is not None and run.final.hits
