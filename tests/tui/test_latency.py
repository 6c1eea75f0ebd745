"""The latency panel's history: each stage's time over the last searches, as a user sees it."""

from __future__ import annotations

from textual.widgets import Static

from coderag_tui.settings import Settings
from coderag_tui.tui.widgets.latency import TICKS, spark
from tests.tui.conftest import AppFactory, search, settle


async def test_the_latency_panel_charts_each_stage_over_the_last_searches(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    """After one search there is no history to chart; from the second, one line per stage
    with a tick per search (oldest first) and the stage's latest time."""
    from coderag_tui.tui.widgets.latency import LatencyPanel

    app = build_app(tui_settings)
    async with app.run_test(size=(160, 50)) as pilot:
        await search(pilot, "charge the card and retry on timeout")
        panel = app.main.query_one(LatencyPanel)
        chart = panel.query_one("#stage-history", Static)
        assert not chart.display
        await search(pilot, "reserve items out of stock")
        await search(pilot, "apply a discount to the cart total")
        await settle(pilot)
        assert chart.display
        lines = str(chart.render()).splitlines()
        assert lines[0] == "stage times, last 3 searches"
        stages = {line.split()[0]: line for line in lines[1:]}
        assert {"tokenize", "bm25"} <= set(stages)
        ticks = stages["bm25"].split()[1]
        assert len(ticks) == 3 and set(ticks) <= set(TICKS)
        assert "█" in ticks  # each stage is scaled to its own slowest search
        assert stages["bm25"].rstrip().endswith("ms")


def test_spark_leaves_a_blank_where_a_search_had_no_such_stage() -> None:
    assert spark([1.0, None, 4.0, 2.0], 4.0) == "▃ █▅"
    assert spark([0.0, 0.0], 0.0) == "▁▁"
