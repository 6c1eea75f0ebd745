"""The commands' progress bar shows repository text as text: eval's rows and tune's stages
name paths, and a path is someone else's text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from coderag_tui.cli.progress import StepBar
from tests.fixtures.tiny_repo import FILES, make_tiny_repo

HOSTILE = "src/[bold red]boom[/].py:3 [link=http://evil.example]x[/link] \x1b]0;PWNED\x07"


def test_a_description_is_shown_as_itself_never_as_markup_or_escapes() -> None:
    out = io.StringIO()
    bar = StepBar("eval")
    bar.console = Console(file=out, force_terminal=True, width=200, color_system=None)
    bar.live = True
    with bar:
        bar.show(1, 2, HOSTILE, finished=True)
        bar._progress.refresh()
    shown = out.getvalue()
    assert "src/[bold red]boom[/].py:3" in shown
    assert "[link=http://evil.example]x[/link]" in shown
    assert "\x1b]0;" not in shown and "PWNED\x07" not in shown


def test_off_a_terminal_finished_steps_print_one_plain_line(capsys: object) -> None:
    bar = StepBar("eval", lines=True)
    bar.live, bar.lines = False, True
    with bar:
        bar.show(1, 2, "a.py indexing", finished=False)
        bar.show(2, 2, HOSTILE, finished=True)
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert err.startswith("[2/2] src/[bold red]boom[/].py:3")
    assert err.count("\n") == 1 and "\x1b" not in err


def test_off_a_terminal_a_long_index_or_embedding_says_how_far_it_got(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe or a log gets a line every few seconds of a long build, never a silence."""
    from coderag_tui.cli import render
    from coderag_tui.core.index.indexer import IndexProgress

    monkeypatch.setattr(render, "QUIET_SECONDS", 0.0)
    with render.loading_status(interactive=False) as (index, embed):
        assert index is not None
        index(IndexProgress("read", 120, 900, 480, 0, 3.0))
        embed(0, 4000)
        embed(2000, 4000)
    err = capsys.readouterr().err
    assert "indexing (read): 120/900 files, 480 chunks so far." in err
    assert "embedding 4,000 windows…" in err
    assert "embedding 2,000/4,000 windows (50%, about" in err


def test_off_a_terminal_a_later_search_of_a_folder_says_it_checked_never_that_it_indexes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder without git is walked when a stat it watched changed; a walk that finds
    nothing to read is a check, not an index ("indexing (index): 17,258/17,258 files, 0
    chunks so far." read like a re-index). An unchanged folder is not walked at all."""
    from coderag_tui.cli import main, render

    repo = make_tiny_repo(tmp_path / "shop", git=False)
    monkeypatch.setenv("CODERAG_EMBED_BACKEND", "none")
    where = ["--index-dir", str(tmp_path / "index")]
    assert main(["index", str(repo), *where]) == 0
    capsys.readouterr()
    monkeypatch.setattr(render, "QUIET_SECONDS", 0.0)
    assert main(["search", "checkout total", str(repo), *where]) == 0
    err = capsys.readouterr().err
    assert "indexing" not in err and "checked" not in err  # no walk: the stat check said so
    (repo / "scratch.tmp").write_text("x", encoding="utf-8")  # the folder's mtime moves,
    (repo / "scratch.tmp").unlink()  # and no file changed
    assert main(["search", "checkout total", str(repo), *where]) == 0
    err = capsys.readouterr().err
    assert f"checked {len(FILES)} files for changes." in err
    assert "indexing" not in err


def test_the_index_bar_says_what_its_last_phase_waits_for_with_a_running_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the files are read, BM25 (and the code signals' definitions) can take as long
    again on a big repository: the bar said `0/100 files · 0.0 MB/s` with its clock stopped,
    which reads as a hang. It now says what it waits for."""
    import rich.console

    from coderag_tui.cli import index_cmd
    from coderag_tui.core.index.indexer import IndexProgress

    out = io.StringIO()

    def console(**_: object) -> Console:
        return Console(file=out, force_terminal=True, width=160, color_system=None)

    monkeypatch.setattr(rich.console, "Console", console)
    with index_cmd._progress_bar(enabled=True) as update:
        assert update is not None
        update(IndexProgress("index", 50, 100, 120, 5_000_000, 1.0))
        update(IndexProgress("done", 100, 100, 300, 9_000_000, 2.0))
        update(IndexProgress("bm25", 0, 0, 300, 0, 2.0))
    frames = out.getvalue()
    last = frames[frames.rindex("making BM25") - 60 :]
    assert "making BM25 ready for 300 chunks." in last
    assert "0/100 files" not in frames and "0.0 MB/s" not in frames
