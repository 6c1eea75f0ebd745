"""The command palette: every action of the app, plus budgets, chunkings, templates and themes.

Entries run the app's actions by name, so this module needs nothing of the app but its
settings (through the `CoderagHost` protocol) and never imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from coderag_tui.tui.protocol import CoderagHost

Command = tuple[str, Callable[[], object], str]


def app_commands(
    run_action: Callable[[str], Awaitable[object]],
    set_theme: Callable[[str], object],
    *,
    rerank: bool,
    themes: Iterable[str],
) -> Iterator[Command]:
    """(title, callback, help) for every action; budgets, chunkings and themes one per value."""
    from coderag_tui.tui.widgets.tuning import BUDGET_PRESETS

    def run(action: str) -> Callable[[], Awaitable[object]]:
        return partial(run_action, action)

    yield ("Search: focus the query", run("focus_query"), "Type a question")
    yield ("Prompt: open the prompt view", run("prompt"), "The assembled prompt (ctrl+o)")
    yield ("Prompt: copy to clipboard", run("copy_prompt"), "OSC 52 and a system tool (ctrl+y)")
    yield ("Prompt: save to a file", run("save_prompt"), "Write the prompt (ctrl+s)")
    yield ("Prompt: switch template", run("next_template"), "markdown ↔ xml (ctrl+t)")
    yield ("Prompt: pin the selected chunk", run("pin"), "It goes first in the prompt (p)")
    yield ("Prompt: exclude the selected chunk", run("exclude"), "Never included (x)")
    yield (
        "Prompt: let the selected ⚠ chunk in",
        run("admit"),
        "With its suspected secret, as it is (a)",
    )
    yield (
        "Mode: toggle code-to-code (FILE:LINE)",
        run("toggle_code_mode"),
        "Query from the lines before a line (ctrl+g)",
    )
    yield (
        "Index: re-index the repository",
        run("reindex"),
        "Read changed files again (ctrl+r)",
    )
    yield (
        "Rerank: turn on" if not rerank else "Rerank: turn off",
        run("toggle_rerank"),
        "The learned model, or a cross-encoder found on this machine; the prompt keeps "
        "the fused order",
    )
    for label, value in BUDGET_PRESETS:
        yield (
            f"Budget: {label} tokens",
            run(f"set_budget({value})"),
            f"Pack the prompt into {value:,} tokens",
        )
    for strategy, why in (
        ("lines", "fixed line windows"),
        ("ast", "functions and classes"),
        ("file", "whole files"),
    ):
        yield (
            f"Chunking: {strategy}",
            run(f"set_chunking({strategy!r})"),
            f"Re-chunk as {why} in the background",
        )
    for name in themes:
        yield (f"Theme: {name}", partial(set_theme, name), "Remembered next time")
    yield ("Help: keys", run("help"), "Every key (F1)")


class CoderagCommands(Provider):
    """Palette entries for coderag's actions; an empty query lists them all."""

    def _commands(self) -> list[Command]:
        from textual.theme import BUILTIN_THEMES

        app = self.app
        if not isinstance(app, CoderagHost):
            return []

        def set_theme(name: str) -> None:
            app.theme = name

        themes = [name for name in sorted(app.available_themes) if name not in BUILTIN_THEMES]
        rerank = app.settings.rerank
        return list(app_commands(app.run_action, set_theme, rerank=rerank, themes=themes))

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
