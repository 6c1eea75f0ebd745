"""Pilot test: the Reranked column with the learned reranker, and the why of its hits."""

from __future__ import annotations

from coderag_tui.core.rank.learned import BIAS, LearnedReranker
from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.preview import ChunkPreview
from coderag_tui.tui.widgets.rankings import RankingColumn
from tests.tui.conftest import SIZE, AppFactory, search, settle


async def test_the_reranked_column_shows_the_learned_list_and_its_reasons(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    settings = tui_settings.with_(rerank=True, rerank_backend="learned")
    app = build_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        await search(pilot, "cart total price")
        run = app.session.last_run
        assert run is not None
        reranked = run.rankings["rerank"]
        assert reranked.available, reranked.reason
        assert isinstance(app.engine.rerank.reranker, LearnedReranker)  # type: ignore[union-attr]
        column = app.main.query_one("#column-rerank", RankingColumn)
        assert column.display and column.table.row_count == len(reranked.hits) > 0
        await pilot.press("escape", "4")
        await pilot.pause(0.1)
        preview = app.main.query_one(ChunkPreview)
        first = preview._lines[0].plain
        assert first.startswith(f"why: {BIAS} ")
        assert app.session.selected_key == reranked.hits[0].chunk.key
        await pilot.press("3")  # the fused list: its own reasons
        await pilot.pause(0.1)
        assert not preview._lines[0].plain.startswith(f"why: {BIAS}")
