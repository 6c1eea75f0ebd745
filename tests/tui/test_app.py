"""Pilot tests: press keys in the real app on the tiny repository and check what the user sees."""

from __future__ import annotations

from textual.widgets import Static

from coderag_tui.settings import Settings
from coderag_tui.tui.messages import IndexBuilt, IndexChecked, IndexProgressed, SearchFinished
from coderag_tui.tui.widgets.query import QueryInput
from coderag_tui.tui.widgets.status import TopBar
from tests.fixtures.secrets_repo import GITHUB_TOKEN, TASK
from tests.tui.conftest import SIZE, AppFactory, Recorder, column, search, settle, text_of


async def test_indexing_progress_appears_and_completes(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        progress = recorder.of(IndexProgressed)
        assert progress, "the indexer reported no progress"
        assert progress[-1].files_done == progress[-1].files_total == 7
        built = recorder.of(IndexBuilt)
        assert len(built) == 1 and built[0].files == 7
        # The progress row showed the files and is hidden once the index is ready.
        row = app.main.index_progress
        assert "7/7 files" in str(row.query_one(".work-detail", Static).render())
        assert not row.display
        top = str(app.main.query_one(TopBar).render())
        assert "7 files" in top and "index ready" in top and "12-line chunks" in top


async def test_search_fills_every_available_column_and_explains_the_others(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        run = app.session.last_run
        assert run is not None
        for name in ("bm25", "fused"):
            table = column(app, name).table
            assert table.row_count == len(run.rankings[name].hits) > 0
        first = column(app, "bm25").table.rows[0]
        assert first.rank == "1" and first.label.startswith("shop/payment.py:")
        dense = column(app, "dense")
        assert dense.has_class("off")
        assert "--embed-backend auto" in str(dense.query_one(".unavailable", Static).render())
        assert not column(app, "rerank").display  # rerank is off: no column at all


async def test_moving_the_cursor_syncs_the_ranks_line_and_the_other_columns(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "cart item total discount")
        run = app.session.last_run
        assert run is not None and len(run.rankings["bm25"].hits) >= 3
        top = run.rankings["bm25"].rank_of(run.final.hits[0].chunk.key)  # the answer's top
        assert top is not None and len(run.rankings["bm25"].hits) >= top + 2
        assert text_of(app, "#ranks").startswith(f"BM25 #{top} · Dense off · Fused #1")
        await pilot.press("escape", "1", "down", "down")  # BM25's cursor starts on it
        await pilot.pause()
        moved = run.rankings["bm25"].hits[top + 1].chunk.key
        assert app.session.selected_key == moved
        fused_rank = run.rankings["fused"].rank_of(moved)
        assert text_of(app, "#ranks").startswith(
            f"BM25 #{top + 2} · Dense off · Fused #{fused_rank}"
        )
        fused_table = column(app, "fused").table
        assert fused_table.cursor_row == (fused_rank or 0) - 1
        assert app.main.query_one("#preview").border_title == moved


async def test_history_and_a_new_query_replacing_the_old(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "cart", typed=True)
        await search(pilot, "payment", typed=True)
        query = app.main.query_one(QueryInput)
        assert query.value == "payment"  # the last query stays, ready to edit
        await pilot.press("up")
        assert query.value == "cart"
        await pilot.press("down")
        assert query.value == "payment"
        assert [m.run.query for m in recorder.of(SearchFinished)][-2:] == ["cart", "payment"]


async def test_code_to_code_mode_queries_with_the_lines_before(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+g")
        assert "Code" in str(app.main.query_one("#mode-label", Static).render())
        await search(pilot, "shop/cart.py:25")
        assert app.session.last_run is not None
        assert "def add(self, item: Item) -> None:" in app.session.last_run.query
        assert "def total_cents" not in app.session.last_run.query  # line 25 and after are excluded
        await search(pilot, "shop/cart.py")
        assert any("FILE:LINE" in n for n in recorder.notifications())


async def test_changing_the_chunking_rechunks_and_searches_again(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "inventory reserve")
        app.action_set_chunking("file")
        await settle(pilot)
        built = recorder.of(IndexBuilt)
        assert len(built) == 2 and len(built[-1].chunks) == 7  # one chunk per file
        assert (
            app.session.last_run is not None and app.session.last_run.query == "inventory reserve"
        )
        hit = app.session.last_run.rankings["bm25"].hits[0].chunk
        assert hit.path == "shop/inventory.py" and hit.kind == "file"
        assert "· whole files" in str(app.main.query_one(TopBar).render())


async def test_help_lists_the_keys(tui_settings: Settings, build_app: AppFactory) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        for key in ("ctrl+o", "ctrl+y", "ctrl+g", "ctrl+p", "enter"):
            assert key in text
        await pilot.press("escape")
        assert app.screen is app.main


async def test_an_existing_index_is_searchable_before_the_check_for_changes(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    first = build_app(tui_settings)
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
    (tui_settings.repo / "shop" / "refunds.py").write_text(
        'def reimburse(order):\n    """Reimburse the order."""\n'
    )
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        built = recorder.of(IndexBuilt)
        # First the stored index (no report yet), then the rebuilt one with the new file.
        assert [b.report is None for b in built] == [True, False]
        assert built[0].files == 7 and built[1].files == 8
        await search(pilot, "reimburse")
        assert app.session.last_run is not None
        assert app.session.last_run.rankings["bm25"].hits[0].chunk.path == "shop/refunds.py"
    unchanged = build_app(tui_settings)
    checks = Recorder()
    async with unchanged.run_test(size=SIZE, message_hook=checks) as pilot:
        await settle(pilot)
        assert len(checks.of(IndexBuilt)) == 1 and len(checks.of(IndexChecked)) == 1
        assert "index ready" in str(unchanged.main.query_one(TopBar).render())


async def test_a_lets_the_selected_held_back_chunk_in_and_keeps_its_warning(
    secrets_settings: Settings, build_app: AppFactory
) -> None:
    settings = secrets_settings
    app = build_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, TASK)
        await settle(pilot)
        await pilot.press("escape", "1")  # the BM25 list; its cursor is on the selected chunk
        rows = column(app, "bm25").table.rows
        held = next(i for i, row in enumerate(rows) if row.key in app.session.secrets)
        for _ in range(held - column(app, "bm25").table.cursor_row):
            await pilot.press("down")
        key = rows[held].key
        await pilot.press("a")
        await settle(pilot)
        packed = app.session.packed
        assert packed is not None and app.session.admitted == [key]
        assert not any(d.key == key for d in packed.dropped)
        block = next(b for b in packed.blocks if key in b.chunk_keys)
        assert "GitHub Token" in block.secrets  # the prompt still names what it holds
        assert GITHUB_TOKEN in packed.text
        assert "⚠ 1 let in with secrets" in text_of(app, "#prompt-line")
        assert "let in by you" in text_of(app, "#ranks")
        await pilot.press("a")  # and held back again
        await settle(pilot)
        packed = app.session.packed
        assert packed is not None and GITHUB_TOKEN not in packed.text
        assert "held back (secrets)" in text_of(app, "#prompt-line")
