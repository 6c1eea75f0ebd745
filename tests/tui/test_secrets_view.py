"""Suspected secrets in the TUI: marked in the rankings, said on the selection line, held back
from the prompt and counted on the prompt line; the prompt text never holds them."""

from __future__ import annotations

from coderag_tui.core.prompt.pack import SECRET
from coderag_tui.settings import Settings
from tests.fixtures.secrets_repo import SECRET_VALUES, TASK
from tests.tui.conftest import SIZE, AppFactory, column, search, settle, text_of


async def test_secrets_are_marked_and_held_back(
    secrets_settings: Settings, build_app: AppFactory
) -> None:
    settings = secrets_settings
    app = build_app(settings)
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, TASK)
        await settle(pilot)
        labels = [row.mark + row.label for row in column(app, "bm25").table.rows]
        assert any(label.startswith("⚠ settings.py:") for label in labels), labels
        assert any(label.startswith("app/db.py:") for label in labels), labels
        key = next(k for k in app.session.secrets if k.startswith("settings.py"))
        app.select(key)
        app.main.show_selection()
        ranks = text_of(app, "#ranks")
        assert "suspected secret" in ranks and "held back from the prompt" in ranks
        packed = app.session.packed
        assert packed is not None
        assert any(d.reason == SECRET for d in packed.dropped)
        assert not any(value in packed.text for value in SECRET_VALUES)
        assert "held back (secrets)" in text_of(app, "#prompt-line")
