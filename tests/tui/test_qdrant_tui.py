"""The TUI over a shared index: the same app, its lexical stage answered by a Qdrant collection."""

from __future__ import annotations

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings
from tests.tui.conftest import SIZE, AppFactory, column, search

pytest.importorskip("qdrant_client")


async def test_the_tui_searches_a_pushed_collection(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    from coderag_tui.core.backends.qdrant_rank import RemoteLexical

    local = tui_settings
    shared = local.with_(backend="qdrant", backend_url=str(local.index_path.parent / "qdrant"))
    with Engine(local) as engine:
        engine.push(shared, engine.update_index(local))
    app = build_app(shared)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge card retry")
        assert app.engine.lexical is not None
        assert isinstance(app.engine.lexical.bm25, RemoteLexical)
        first = column(app, "bm25").table.rows[0]
        assert first.rank == "1" and first.label.startswith("shop/payment.py:")
