"""The command palette: every action of the app, plus budgets, chunkings, templates and themes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from coderag_tui.tui.app import CoderagApp

Command = tuple[str, Callable[[], Any], str]


def app_commands(app: CoderagApp) -> Iterator[Command]:
    """(title, callback, help) for every action; budgets, chunkings and themes one per value."""
    from coderag_tui.tui.widgets.tuning import BUDGET_PRESETS

    yield ("Search: focus the query", partial(app.main.action_focus_query), "Type a question")
    yield ("Prompt: open the prompt view", app.action_prompt, "The assembled prompt (ctrl+o)")
    yield ("Prompt: copy to clipboard", app.action_copy_prompt, "OSC 52 and a system tool (ctrl+y)")
    yield ("Prompt: save to a file", app.action_save_prompt, "Write the prompt (ctrl+s)")
    yield ("Prompt: switch template", app.action_next_template, "markdown ↔ xml (ctrl+t)")
    yield ("Prompt: pin the selected chunk", app.action_pin, "It goes first in the prompt (p)")
    yield ("Prompt: exclude the selected chunk", app.action_exclude, "Never included (x)")
    yield (
        "Mode: toggle code-to-code (FILE:LINE)",
        app.action_toggle_code_mode,
        "Query from the lines before a line (ctrl+g)",
    )
    yield (
        "Index: re-index the repository",
        app.action_reindex,
        "Read changed files again (ctrl+r)",
    )
    yield (
        "Rerank: turn on" if not app.settings.rerank else "Rerank: turn off",
        app.action_toggle_rerank,
        "Cross-encoder over the fused top candidates",
    )
    for label, value in BUDGET_PRESETS:
        yield (
            f"Budget: {label} tokens",
            partial(app.action_set_budget, value),
            f"Pack the prompt into {value:,} tokens",
        )
    for strategy, why in (
        ("lines", "fixed line windows"),
        ("ast", "functions and classes"),
        ("file", "whole files"),
    ):
        yield (
            f"Chunking: {strategy}",
            partial(app.action_set_chunking, strategy),
            f"Re-chunk as {why} in the background",
        )
    from textual.theme import BUILTIN_THEMES

    for name in sorted(app.available_themes):
        if name not in BUILTIN_THEMES:
            yield (f"Theme: {name}", partial(setattr, app, "theme", name), "Remembered next time")
    yield ("Help: keys", app.action_help, "Every key (F1)")


class CoderagCommands(Provider):
    """Palette entries for coderag's actions; an empty query lists them all."""

    def _commands(self) -> list[Command]:
        from coderag_tui.tui.app import CoderagApp

        app = self.app
        return list(app_commands(app)) if isinstance(app, CoderagApp) else []

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
