"""The help screen: every key, read from the bindings themselves so it never goes stale."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from coderag_tui.tui.screens.layout import HEIGHT_BREAKPOINTS, WIDTH_BREAKPOINTS

INTRO = (
    "coderag ranks this repository's code for your question four ways and packs the best "
    "chunks into a prompt. Type a question, press Enter, move through any ranking to see the "
    "same chunk's rank in the others, then open the prompt, trim it and copy it."
)
KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "esc",
}


def key_label(binding: Binding) -> str:
    """How the key is written on the help screen (`ctrl+o`, `/`, `[`)."""
    if binding.key_display:
        return binding.key_display
    return ", ".join(KEY_NAMES.get(k, k) for k in binding.key.split(","))


def binding_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    """(key, what it does) for every described binding; the tooltip is the longer text."""
    return [
        (key_label(item), item.tooltip or item.description)
        for item in bindings
        if isinstance(item, Binding) and item.description
    ]


def key_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    """The help's sections, in the order a new user needs them."""
    from coderag_tui.tui.keys import APP_BINDINGS
    from coderag_tui.tui.screens.main import MainScreen
    from coderag_tui.tui.screens.prompt import PromptScreen
    from coderag_tui.tui.widgets.query import QueryInput
    from coderag_tui.tui.widgets.tuning import TuningPanel

    return [
        (
            "Everywhere",
            [
                *binding_rows(APP_BINDINGS),
                ("ctrl+p", "Command palette: every action, budgets, themes"),
                ("ctrl+q", "Quit"),
            ],
        ),
        (
            "Query",
            [
                ("enter", "Search (a new query cancels the running one)"),
                *binding_rows(QueryInput.BINDINGS),
            ],
        ),
        (
            "Rankings",
            [
                ("↑ ↓", "Move; the other lists mark the same chunk (↓#48: below their view)"),
                ("pgup pgdn", "A page; home, end: the first and last hit"),
                ("tab", "Next list or panel (shift+tab: back)"),
            ],
        ),
        ("Main view", binding_rows(MainScreen.BINDINGS)),
        (
            "Tuning (t)",
            [
                ("enter, tab", "Apply the number typed"),
                *binding_rows(TuningPanel.BINDINGS),
            ],
        ),
        ("Prompt view", binding_rows(PromptScreen.BINDINGS)),
    ]


def section(title: str, rows: list[tuple[str, str]]) -> Content:
    width = max((len(k) for k, _ in rows), default=0) + 2
    lines = [Content.styled(title, "bold $accent")]
    lines += [Content.assemble((f" {key:<{width}}", "bold $primary"), text) for key, text in rows]
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    """Keys grouped by where they work; Escape, F1, ? or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q,question_mark", "app.pop_screen", "Close")
    ]
    HORIZONTAL_BREAKPOINTS = WIDTH_BREAKPOINTS
    VERTICAL_BREAKPOINTS = HEIGHT_BREAKPOINTS

    def compose(self) -> ComposeResult:
        groups = key_groups()
        left = [section(t, rows) for t, rows in groups[:3]]
        right = [section(t, rows) for t, rows in groups[3:]]
        # It scrolls (↑ ↓, pgup pgdn) where the terminal is too short for every key.
        with VerticalScroll(id="help-body") as body:
            body.border_title = "coderag — keys"
            body.border_subtitle = "↑ ↓ scroll · esc closes"
            yield Static(Content.styled(INTRO, "$text-muted"), id="help-intro")
            with Horizontal(id="help-columns"):
                yield Static(Content("\n\n").join(left), classes="help-column")
                yield Static(Content("\n\n").join(right), classes="help-column")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()
