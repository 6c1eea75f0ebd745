"""The query input: Enter searches, Up/Down recall earlier queries, two modes (ask / code)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

from coderag_tui.core.visible import visible
from coderag_tui.tui.state import HISTORY_LIMIT

ASK_PLACEHOLDER = "Ask about the code, or paste a snippet — Enter searches, ↑/↓ history"
CODE_PLACEHOLDER = "path/to/file.py:120 — the lines before line 120 become the query (code-to-code)"


class QueryInput(Input):
    """An Input with query history; the history list is shared with the app (most recent last)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "up", "history(-1)", "Previous query", show=False, tooltip="Recall the previous query"
        ),
        Binding("down", "history(1)", "Next query", show=False, tooltip="Recall the next query"),
        Binding(
            "escape",
            "screen.focus_results",
            "Results",
            show=False,
            tooltip="Leave the input for the rankings",
        ),
    ]

    def __init__(self, history: list[str], *, id: str | None = None) -> None:
        super().__init__(placeholder=ASK_PLACEHOLDER, id=id)
        self.history = history
        self._position: int | None = None
        self._draft = ""

    def validate_value(self, value: str) -> str:
        """A pasted control character (an escape sequence) is written out, never echoed raw."""
        return visible(value)

    def set_code_mode(self, *, code: bool) -> None:
        self.placeholder = CODE_PLACEHOLDER if code else ASK_PLACEHOLDER

    def remember(self, query: str) -> None:
        """Add a query to the history (moving a repeat to the end) and reset the recall position."""
        if query in self.history:
            self.history.remove(query)
        self.history.append(query)
        del self.history[:-HISTORY_LIMIT]
        self._position = None

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        if self._position is None:
            if step > 0:
                return
            self._draft = self.value
            self._position = len(self.history)
            if self.value == self.history[-1] and len(self.history) > 1:
                self._position -= 1  # the input still shows the last query: skip it
        position = self._position + step
        if position >= len(self.history):
            self._position = None
            self.value = self._draft
        else:
            self._position = max(0, position)
            self.value = self.history[self._position]
        self.cursor_position = len(self.value)
