"""One request, one answer: the CLI (--json) and the TUI (driven with Pilot) give the same
rankings and the same packed prompt, for a question and a code-mode location, at 2k, 16k and
128k budgets, with a real (tiny, locally built) embedding model so all lists are live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from coderag_tui.core.records import RANKING_NAMES, SearchRun
from coderag_tui.settings import Settings
from tests.tui.conftest import SIZE, AppFactory, search, settle

QUESTION = "charge the card for the cart total"
LOCATION = "shop/cart.py:25"
BUDGETS = (2000, 16_000, 128_000)


def cli_flags(settings: Settings) -> list[str]:
    return [
        str(settings.repo),
        "--index-dir",
        str(settings.index_dir),
        "--chunk-lines",
        str(settings.chunk_lines),
        "--embed-backend",
        settings.embed_backend,
        "--embed-model",
        settings.embed_model,
        "--budget",
        str(settings.budget),
    ]


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def tui_rankings(run: SearchRun, k: int) -> dict[str, list[tuple[str, int, int]]]:
    return {
        name: [(h.chunk.path, h.chunk.start_line, h.chunk.end_line) for h in ranking.hits[:k]]
        for name, ranking in run.rankings.items()
        if ranking.available
    }


def cli_rankings(data: dict[str, Any]) -> dict[str, list[tuple[str, int, int]]]:
    return {
        name: [(h["path"], h["start_line"], h["end_line"]) for h in entry["hits"]]
        for name, entry in data["rankings"].items()
        if entry["available"]
    }


@pytest.mark.slow
async def test_the_cli_and_the_tui_answer_alike(
    tui_settings: Settings,
    build_app: AppFactory,
    tiny_st_embedder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))
    # Enough related code that 2k, 16k and 128k budgets pack different prompts.
    (tui_settings.repo / "shop" / "reports.py").write_text(
        "".join(
            f'def charge_report_{i}(cart, card):\n    """Charge report {i}: the cart total."""\n'
            f"    return cart.total_cents() * {i} + len(card)\n\n\n"
            for i in range(1200)
        )
    )
    settings = tui_settings.with_(
        embed_backend="sentence-transformers", embed_model=str(tiny_st_embedder)
    )
    app = build_app(settings)
    seen: list[tuple[Settings, bool, dict[str, list[tuple[str, int, int]]], str, int]] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for budget in BUDGETS:
            app.apply_setting("budget", budget)
            for location in (False, True):
                if location != app.session.code_mode:
                    await pilot.press("ctrl+g")
                await search(pilot, LOCATION if location else QUESTION)
                await settle(pilot)
                run, result = app.session.last_run, app.session.prompt
                assert run is not None and result is not None
                assert run.rankings["dense"].available, run.rankings["dense"].reason
                if location:
                    assert run.left_out >= 1
                shown = tui_rankings(run, app.settings.k)
                seen.append(
                    (app.settings, location, shown, result.packed.text, result.packed.tokens)
                )
    # The CLI runs after the app has stopped (a running Textual app captures stdout).
    for now, location, shown, prompt, tokens in seen:
        asked = ["--from", LOCATION] if location else [QUESTION]
        searched = cli_json(capsys, "search", *asked, *cli_flags(now), "--json")
        assert cli_rankings(searched) == shown
        assert set(shown) == {"bm25", "dense", "fused"}
        prompted = cli_json(capsys, "prompt", *asked, *cli_flags(now), "--json")
        assert prompted["prompt"] == prompt
        assert prompted["tokens"] == tokens <= now.budget
        if location:  # the query's own chunk is in no list of either face
            for name in RANKING_NAMES:
                for hit in searched["rankings"][name]["hits"]:
                    assert not (
                        hit["path"] == "shop/cart.py"
                        and hit["start_line"] <= 25
                        and hit["end_line"] >= 5
                    )
    assert len(seen) == len(BUDGETS) * 2
    sizes = [tokens for _, location, _, _, tokens in seen if not location]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]  # a larger budget packs more
