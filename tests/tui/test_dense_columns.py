"""Pilot test with tiny locally built embedding and cross-encoder models: all four columns."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.core.records import RANKING_NAMES
from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.rankings import RankingColumn
from coderag_tui.tui.widgets.status import TopBar
from tests.tui.conftest import SIZE, AppFactory, search, settle


async def test_all_four_columns_with_dense_and_rerank(
    tui_settings: Settings,
    build_app: AppFactory,
    tiny_st_embedder: Path,
    tiny_st_cross_encoder: Path,
) -> None:
    settings = tui_settings.with_(
        embed_backend="sentence-transformers",
        embed_model=str(tiny_st_embedder),
        rerank=True,
        rerank_backend="sentence-transformers",
        rerank_model=str(tiny_st_cross_encoder),
    )
    app = build_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        await search(pilot, "cart total price")
        run = app.session.last_run
        assert run is not None
        for name in RANKING_NAMES:
            ranking = run.rankings[name]
            assert ranking.available, ranking.reason
            col = app.main.query_one(f"#column-{name}", RankingColumn)
            table = col.table
            assert col.display
            assert table.row_count == len(ranking.hits) > 0
        assert "dense ready" in str(app.main.query_one(TopBar).render())
