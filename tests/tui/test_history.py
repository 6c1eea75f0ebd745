"""Query history persists per repository in the state file, and a bad state file never hurts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from textual import events

from coderag_tui.settings import Settings
from coderag_tui.tui.state import (
    HISTORY_LIMIT,
    REPOSITORY_LIMIT,
    SAVED_QUERY_CHARS,
    read_history,
    read_saved_theme,
    save_history,
    save_theme,
    write_state,
)
from coderag_tui.tui.widgets.query import LINE_BREAK, QueryInput
from tests.fixtures.tiny_repo import make_tiny_repo
from tests.tui.conftest import SIZE, AppFactory, Recorder, search, settle


async def recall(app: Any, pilot: Any) -> str:
    """Focus the query input, press Up once and return what it shows."""
    field = app.main.query_one(QueryInput)
    field.focus()
    await pilot.press("up")
    return str(field.value)


# ------------------------------------------------------------------ the app, across runs
async def test_a_query_searched_in_one_run_is_recalled_with_up_in_the_next(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path
) -> None:
    state = tmp_path / "config" / "tui-state.json"
    first = build_app(tui_settings, state_path=state)
    async with first.run_test(size=SIZE) as pilot:
        await search(pilot, "cart total", typed=True)
        await search(pilot, "refund payment")
        assert first.session.last_run is not None  # the search ran; saving did not get in its way

    second = build_app(tui_settings, state_path=state)
    async with second.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await recall(second, pilot) == "refund payment"
        await pilot.press("up")
        assert second.main.query_one(QueryInput).value == "cart total"


async def test_another_repository_does_not_see_the_history(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path
) -> None:
    state = tmp_path / "tui-state.json"
    assert save_history(state, tui_settings.repo_root, ["inventory reserve"]) is None
    other = make_tiny_repo(tmp_path / "other-shop", git=False)
    app = build_app(tui_settings.with_(repo=other), state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.history == []
        assert await recall(app, pilot) == ""
    assert read_history(state, tui_settings.repo_root) == ["inventory reserve"]


def _garbage(path: Path) -> None:
    path.write_bytes(b"\xff\xfe\x00{not json at all")


def _json_list(path: Path) -> None:
    path.write_text('["theme", "history"]')


def _directory(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize(
    "spoil", [_garbage, _json_list, _directory], ids=["garbage-bytes", "json-list", "directory"]
)
async def test_a_corrupt_state_file_gives_an_empty_history_and_the_app_still_works(
    tui_settings: Settings,
    build_app: AppFactory,
    tmp_path: Path,
    recorder: Recorder,
    spoil: Any,
) -> None:
    state = tmp_path / "tui-state.json"
    spoil(state)
    app = build_app(tui_settings, state_path=state)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        assert app.history == []
        assert await recall(app, pilot) == ""
        await search(pilot, "apply discount")
        await search(pilot, "refund")
        assert app.session.last_run is not None and app.session.last_run.query == "refund"
        # This session's history still works (Up skips "refund": the input still shows it).
        assert await recall(app, pilot) == "apply discount"
        problems = [n for n in recorder.notifications() if "query history" in n]
    if state.is_dir():  # cannot be replaced: said once, not on every Enter
        assert len(problems) == 1
        assert str(state) in problems[0]
    else:  # a readable-but-broken file is replaced by a good one
        assert problems == []
        assert read_history(state, tui_settings.repo_root) == ["apply discount", "refund"]


async def test_theme_and_history_both_survive_saving_the_other(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path
) -> None:
    state = tmp_path / "tui-state.json"
    app = build_app(tui_settings, state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = "coderag-light"
        await pilot.pause()
        await search(pilot, "charge card")
        app.theme = "coderag-high-contrast"
        await pilot.pause()
    assert read_saved_theme(state) == "coderag-high-contrast"
    assert read_history(state, tui_settings.repo_root) == ["charge card"]


# ------------------------------------------------------------------ the state file itself
def test_saving_one_key_keeps_the_others(tmp_path: Path) -> None:
    state = tmp_path / "deep" / "config" / "tui-state.json"
    repo = tmp_path / "repo"
    assert save_theme(state, "coderag-light") is None
    assert save_history(state, repo, ["one", "two"]) is None
    assert save_theme(state, "coderag-dark") is None
    assert read_saved_theme(state) == "coderag-dark"
    assert read_history(state, repo) == ["one", "two"]


def test_history_is_keyed_by_the_resolved_repository(tmp_path: Path) -> None:
    state = tmp_path / "tui-state.json"
    (tmp_path / "repo").mkdir()
    assert save_history(state, tmp_path / "repo" / ".." / "repo", ["cart"]) is None
    assert read_history(state, tmp_path / "repo") == ["cart"]
    assert read_history(state, tmp_path / "elsewhere") == []


def test_each_repository_keeps_only_its_latest_queries(tmp_path: Path) -> None:
    state = tmp_path / "tui-state.json"
    queries = [f"query {i}" for i in range(HISTORY_LIMIT + 30)]
    huge = "x" * (SAVED_QUERY_CHARS + 1)  # a pasted file: kept in the session, not on disk
    assert save_history(state, tmp_path, [*queries, huge]) is None
    assert read_history(state, tmp_path) == queries[-HISTORY_LIMIT:]


def test_the_least_recently_used_repositories_are_dropped(tmp_path: Path) -> None:
    state = tmp_path / "tui-state.json"
    repos = [tmp_path / f"repo-{i}" for i in range(REPOSITORY_LIMIT + 1)]
    for repo in repos[:REPOSITORY_LIMIT]:
        assert save_history(state, repo, [repo.name]) is None
    assert save_history(state, repos[0], ["used again"]) is None  # repo-0 is now the newest
    assert save_history(state, repos[-1], ["newcomer"]) is None
    assert read_history(state, repos[1]) == []  # the least recently used went
    assert read_history(state, repos[0]) == ["used again"]
    assert read_history(state, repos[-1]) == ["newcomer"]
    assert read_history(state, repos[2]) == ["repo-2"]


@pytest.mark.parametrize(
    "content",
    [
        '{"theme": 7, "history": ["cart"]}',
        '{"history": {"REPO": "cart"}}',
        '{"history": {"REPO": ["cart", 3, null, "", "  ", ["nested"]]}}',
        "[" * 100_000,  # deep enough to exhaust the parser's recursion
        "",
    ],
    ids=["history-not-a-mapping", "string-not-list", "mixed-items", "deep-nesting", "empty-file"],
)
def test_foreign_shapes_read_as_what_is_usable(tmp_path: Path, content: str) -> None:
    state = tmp_path / "tui-state.json"
    state.write_text(content.replace("REPO", str(tmp_path.resolve())))
    history = read_history(state, tmp_path)
    assert history in ([], ["cart"])
    assert all(isinstance(q, str) and q.strip() for q in history)
    assert read_saved_theme(state) is None


def test_a_fifo_named_like_the_state_file_reads_as_empty_without_blocking(tmp_path: Path) -> None:
    state = tmp_path / "tui-state.json"
    os.mkfifo(state)
    assert read_history(state, tmp_path) == []
    assert read_saved_theme(state) is None


def test_an_interrupted_write_leaves_the_previous_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "tui-state.json"
    assert save_history(state, tmp_path, ["kept"]) is None

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # the process dies after writing the temp file, before replace

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        write_state(state, {"history": {str(tmp_path.resolve()): ["lost"]}})
    monkeypatch.undo()
    assert read_history(state, tmp_path) == ["kept"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tui-state.json"]  # no temp left


def test_a_failed_save_names_the_file_and_the_fix(tmp_path: Path) -> None:
    state = tmp_path / "tui-state.json"
    state.mkdir()
    problem = save_history(state, tmp_path, ["cart"])
    assert problem is not None
    assert str(state) in problem and "writable" in problem
    assert [p.name for p in tmp_path.iterdir()] == ["tui-state.json"]  # no temp left behind


ISSUE = (
    "Refund fails for a partial payment\n"
    'Traceback (most recent call last):\r\n  File "shop/payment.py", line 12, in refund\n'
    "ValueError: amount exceeds the payment\n"
)


async def test_a_pasted_issue_keeps_every_line_and_is_searched_whole(
    tui_settings: Settings, build_app: AppFactory, tmp_path: Path
) -> None:
    """Textual's input keeps a paste's first line; an issue pasted here keeps its stack
    trace: the input shows each line break as a mark, and the search gets the lines back."""
    app = build_app(tui_settings, state_path=tmp_path / "tui-state.json")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        field = app.main.query_one(QueryInput)
        field.focus()
        field.post_message(events.Paste(ISSUE))
        await pilot.pause()
        assert "\n" not in field.value and field.value.count(LINE_BREAK) == 3
        assert field.value.endswith("ValueError: amount exceeds the payment")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.last_run is not None
        assert app.session.last_run.query == ISSUE.replace("\r\n", "\n").strip()
        field.value = ""
        assert await recall(app, pilot) == field.shown(app.session.last_run.query)
