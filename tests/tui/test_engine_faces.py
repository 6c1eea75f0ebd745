"""Pilot tests of the TUI as a face over the engine: code mode leaves the query's own chunk
out, a large budget packs from a deeper list, and the TUI's prompt is the core's prompt."""

from __future__ import annotations

from coderag_tui.core.engine import Dense, Lexical, PromptRequest, PromptResult, search_depth
from coderag_tui.core.records import Origin, Scope, SearchRun
from coderag_tui.settings import Settings
from coderag_tui.tui.messages import (
    EmbeddingsReady,
    IndexBuilt,
    IndexChecked,
    PromptPacked,
    SearchFinished,
)
from coderag_tui.tui.widgets.status import TopBar
from tests.tui.conftest import SIZE, AppFactory, Recorder, column, search, settle

CART = "shop/cart.py"


def overlaps_origin(path: str, start: int, end: int, origin: Origin) -> bool:
    return any(path == s.path and start <= s.end_line and end >= s.start_line for s in origin.spans)


async def test_code_mode_leaves_the_query_s_own_chunk_out_of_every_list(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+g")
        await search(pilot, f"{CART}:25", typed=True)
        run = app.session.last_run
        assert run is not None and run.origin == Origin.at(CART, 5, 25)
        assert "def add(self, item: Item) -> None:" in run.query
        assert run.left_out >= 1
        for name, ranking in run.rankings.items():
            for hit in ranking.hits:
                c = hit.chunk
                assert not overlaps_origin(c.path, c.start_line, c.end_line, run.origin), name
        # On screen too: no column lists a chunk holding the query's lines.
        for name in ("bm25", "fused"):
            rows = column(app, name).table.rows
            assert rows, name
            assert not any(row.label.startswith(f"{CART}:") for row in rows), name


async def test_a_failed_code_mode_input_is_never_searched_again(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        await pilot.press("ctrl+g")
        await search(pilot, CART)  # no line number: the search fails with one sentence
        assert any("FILE:LINE" in n for n in recorder.notifications())
        await pilot.press("ctrl+g")  # back to questions
        app.apply_setting("k", 10)  # a ranking setting runs the current search again
        await settle(pilot)
        queries = [m.run.query for m in recorder.of(SearchFinished)]
        assert queries == ["charge card", "charge card"]
        assert app.session.last_run is not None and app.session.last_run.query == "charge card"


async def test_a_128k_budget_repacks_from_a_deeper_list(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    (tui_settings.repo / "shop" / "reports.py").write_text(
        "".join(
            f"def report_{i}(cart, card):\n    '''Charge report {i} for the cart total.'''\n"
            f"    return cart.total_cents() * {i} + len(card)\n\n\n"
            for i in range(300)
        )
    )
    app = build_app(tui_settings.with_(packing="chunks"))  # whole chunks fill the budget
    async with app.run_test(size=SIZE) as pilot:
        await search(pilot, "charge report cart total")
        shown = app.session.last_run
        assert shown is not None and shown.depth == search_depth(app.settings) == 100
        await pilot.press("escape")  # leave the input so the palette action is not typed
        app.action_set_budget(128_000)
        await settle(pilot)
        prompt = app.session.prompt
        assert prompt is not None and prompt.packed.budget == 128_000
        assert prompt.run.query == shown.query and prompt.run.depth == 1280
        chunks_in = sum(len(b.chunk_keys) for b in prompt.packed.blocks)
        assert chunks_in > shown.depth  # more than a 100-deep list could have given
        assert not [d for d in prompt.packed.dropped if d.reason == "over budget"]


async def test_the_tui_prompt_is_the_engine_s_prompt_and_arrives_as_typed_messages(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    query = "cart item total discount"
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, query)
        built = recorder.of(IndexBuilt)
        assert built and all(isinstance(m.lexical, Lexical) for m in built)
        assert all(isinstance(m.dense, Dense) for m in recorder.of(EmbeddingsReady))
        finished = recorder.of(SearchFinished)[-1]
        packed = recorder.of(PromptPacked)[-1]
        assert isinstance(finished.run, SearchRun) and isinstance(packed.result, PromptResult)
        assert packed.serial == finished.serial == app.session.serial
        engine, settings = app.engine, app.settings
        expected = engine.prompt(engine.search(query, settings), PromptRequest(query), settings)
        assert app.session.packed is not None
        assert app.session.packed.text == expected.packed.text
        assert app.session.packed.blocks == expected.packed.blocks
        assert app.session.packed.dropped == expected.packed.dropped
        keys = [h.chunk.key for h in finished.run.final.hits]
        assert keys == [h.chunk.key for h in expected.run.final.hits]


async def test_reindexing_an_unchanged_repository_keeps_the_stages_and_the_search(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "charge card")
        app.toggle_pin(app.session.selected_key)
        await settle(pilot)
        searches = len(recorder.of(SearchFinished))
        app.action_reindex()
        await settle(pilot)
        assert len(recorder.of(IndexChecked)) == 1 and len(recorder.of(IndexBuilt)) == 1
        top = str(app.main.query_one(TopBar).render())
        assert "index ready" in top and "dense off" in top
        assert len(recorder.of(SearchFinished)) == searches  # nothing changed: no new search
        assert app.session.pinned  # and the pin stays


async def test_ctrl_n_asks_with_my_change_and_the_prompt_reviews_it(
    tui_settings: Settings, build_app: AppFactory
) -> None:
    cart = tui_settings.repo_root / CART
    text = cart.read_text()
    old = "        self.items.append(item)\n"
    assert old in text
    cart.write_text(text.replace(old, "        self.items.append(item)  # keep order\n"))
    app = build_app(tui_settings, scope=Scope(exclude=("tests/",)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        run = app.session.last_run
        assert run is not None and run.origin is not None
        assert [s.path for s in run.origin.spans] == [CART] and run.left_out >= 1
        for ranking in run.rankings.values():
            for hit in ranking.hits:
                c = hit.chunk
                assert not overlaps_origin(c.path, c.start_line, c.end_line, run.origin)
                assert not c.path.startswith("tests/")
        packed = app.session.packed
        assert packed is not None and "## The change" in packed.text
        assert "# keep order" in packed.text and "Review this change" in packed.text
        await pilot.press("right_square_bracket")  # a new budget packs again: the change stays
        await settle(pilot)
        assert app.session.packed is not None and "## The change" in app.session.packed.text
