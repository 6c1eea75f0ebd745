"""Pilot tests of lists deeper than a screen: every ranked hit can be scrolled to."""

from __future__ import annotations

from coderag_tui.settings import Settings
from tests.tui.conftest import AppFactory, column, search, settle, text_of, with_dense


async def test_scrolling_reaches_every_hit_the_status_line_can_name(
    nested_settings: Settings, build_app: AppFactory
) -> None:
    """The ranks line names ranks such as `Dense #66`: that row is in the list to scroll to."""
    app = with_dense(build_app(nested_settings.with_(chunk_lines=12)))
    async with app.run_test(size=(120, 30)) as pilot:
        await search(pilot, "session request cookie")
        run = app.session.last_run
        assert run is not None
        for name in ("bm25", "dense", "fused"):
            hits = run.rankings[name].hits
            assert len(hits) > 20
            assert column(app, name).table.row_count == len(hits)
            assert column(app, name).border_subtitle == f"{len(hits)} hits"
        dense_hits = run.rankings["dense"].hits
        await pilot.press("escape", "2", "end")
        await settle(pilot)
        last = dense_hits[-1].chunk.key
        assert app.session.selected_key == last
        assert text_of(app, "#ranks").split(" · ")[1] == f"Dense #{len(dense_hits)}"
        table = column(app, "dense").table
        bottom = table.render_line(table.size.height - 1).text
        assert last.rsplit("/", 1)[-1] in bottom  # the last hit is drawn, in view
        # Paging up goes back through the list a screen at a time, past row 20.
        await pilot.press("pageup")
        await settle(pilot)
        assert 20 < table.cursor_row < len(dense_hits) - 1
        # The other lists follow the chunk to its row, however deep.
        fused_rank = run.rankings["fused"].rank_of(app.session.selected_key or "")
        assert fused_rank is not None
        assert column(app, "fused").table.cursor_row == fused_rank - 1


async def test_a_deep_list_draws_only_the_rows_in_view(
    nested_settings: Settings, build_app: AppFactory
) -> None:
    """At a 128k budget the engine ranks 1,280 deep; the lists hold every hit (here every
    chunk with a word of the query) but format only what is drawn."""
    settings = nested_settings.with_(chunk_lines=2, budget=128_000)
    app = build_app(settings)
    async with app.run_test(size=(120, 30)) as pilot:
        await search(pilot, "session request cookie")
        run = app.session.last_run
        assert run is not None and run.depth >= 1280
        table = column(app, "bm25").table
        assert table.row_count == len(run.rankings["bm25"].hits) > 500
        await pilot.press("escape", "1")  # the list scrolls to the selected chunk
        await settle(pilot)
        drawn = len(table.rows._rows)  # type: ignore[attr-defined]
        assert drawn <= 2 * table.size.height  # its first screen, and the chunk's
        await pilot.press("end")
        await settle(pilot)
        assert app.session.selected_key == run.rankings["bm25"].hits[-1].chunk.key
        assert len(table.rows._rows) <= drawn + table.size.height  # type: ignore[attr-defined]
