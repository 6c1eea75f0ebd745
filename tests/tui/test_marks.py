"""Pins and exclusions when the chunks change: they follow their lines into the new chunks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings
from coderag_tui.tui.session import Session
from tests.tui.conftest import SIZE, AppFactory, Recorder, column, search, settle


def chunks(path: str, size: int, lines: int) -> list[Chunk]:
    return [
        Chunk(path, start, min(start + size - 1, lines), "lines", "python", "x\n")
        for start in range(1, lines + 1, size)
    ]


def session(pinned: Sequence[str], excluded: Sequence[str] = ()) -> Session:
    return Session("markdown", pinned=list(pinned), excluded=list(excluded))


@pytest.mark.parametrize(
    ("pinned", "new", "expected"),
    [
        # bigger chunks: the one holding the lines
        (["a.py:13-24"], chunks("a.py", 24, 48), ["a.py:1-24"]),
        # smaller chunks: every one holding some of the lines
        (["a.py:13-24"], chunks("a.py", 6, 48), ["a.py:13-18", "a.py:19-24"]),
        # whole files
        (["a.py:13-24", "a.py:25-36"], chunks("a.py", 48, 48), ["a.py:1-48"]),
        # the file is gone
        (["gone.py:1-12"], chunks("a.py", 12, 24), []),
    ],
)
def test_pins_move_to_the_new_chunks_of_the_same_lines(
    pinned: list[str], new: list[Chunk], expected: list[str]
) -> None:
    marks = session(pinned)
    said = marks.carry_marks([*new, *chunks("b.py", 12, 24)])
    assert marks.pinned == expected
    assert said.startswith("Chunks changed: pins and exclusions moved")
    if not expected:
        assert "gone.py:1-12" in said and "dropped" in said


def test_unchanged_marks_say_nothing_and_a_pin_wins_over_an_exclusion() -> None:
    marks = session(["a.py:1-12"], ["b.py:1-12"])
    assert marks.carry_marks([*chunks("a.py", 12, 24), *chunks("b.py", 12, 24)]) == ""
    assert marks.pinned == ["a.py:1-12"] and marks.excluded == ["b.py:1-12"]
    both = session(["a.py:1-12"], ["a.py:13-24"])
    said = both.carry_marks(chunks("a.py", 24, 48))
    assert both.pinned == ["a.py:1-24"] and both.excluded == []
    assert "1 pin → 1 chunk pinned, 1 exclusion → 0 chunks excluded" in said


async def test_a_pin_survives_a_new_chunking_and_the_user_is_told(
    tui_settings: Settings, build_app: AppFactory, recorder: Recorder
) -> None:
    app = build_app(tui_settings)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await search(pilot, "cart item total discount")
        await pilot.press("escape", "1", "p")
        await settle(pilot)
        (pinned,) = app.session.pinned
        path, lines = pinned.rsplit(":", 1)
        start, end = (int(n) for n in lines.split("-"))
        app.apply_setting("chunk_lines", 24)
        await settle(pilot)
        assert app.session.pinned, "the pin was dropped"
        for key in app.session.pinned:
            new_path, new_lines = key.rsplit(":", 1)
            new_start, new_end = (int(n) for n in new_lines.split("-"))
            assert new_path == path and new_start <= end and new_end >= start
        assert any("pins and exclusions moved" in n for n in recorder.notifications())
        packed = app.session.packed
        assert packed is not None and packed.blocks[0].chunk_keys[0] in app.session.pinned
        assert column(app, "bm25").keys  # the search ran again on the new chunks
        # Back to 12 lines: served from the saved index, whose chunks are read lazily.
        app.apply_setting("chunk_lines", 12)
        await settle(pilot)
        assert type(app.engine.lexical.chunks).__name__ == "ChunkList"  # type: ignore[union-attr]
        assert pinned in app.session.pinned
