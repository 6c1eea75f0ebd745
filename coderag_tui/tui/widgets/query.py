"""The query input: Enter searches, Up/Down recall earlier queries, two modes (ask / code).

A paste keeps every line (an issue, a snippet): the input is one line, so each line break
shows as `LINE_BREAK` and `query_text` gives the text back with its lines. (Textual's own
input keeps a paste's first line only: an issue's title without its stack trace.)
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import Input

from coderag_tui.core.visible import visible
from coderag_tui.tui.state import HISTORY_LIMIT

ASK_PLACEHOLDER = "Ask about the code, or paste a snippet — Enter searches, ↑/↓ history"
LINE_BREAK = "⏎"  # a line break of a pasted query, as the one-line input shows it
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

    @staticmethod
    def shown(text: str) -> str:
        """A query as the input shows it: its line breaks as `LINE_BREAK`."""
        return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", LINE_BREAK)

    @staticmethod
    def query_text(value: str) -> str:
        """The query the input's `value` stands for: its `LINE_BREAK`s as line breaks."""
        return value.replace(LINE_BREAK, "\n")

    def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # Textual's `Input._on_paste` would add the first line again
        if event.text:
            text = self.shown(event.text.strip("\r\n"))
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        event.stop()

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
            if self.query_text(self.value) == self.history[-1] and len(self.history) > 1:
                self._position -= 1  # the input still shows the last query: skip it
        position = self._position + step
        if position >= len(self.history):
            self._position = None
            self.value = self._draft
        else:
            self._position = max(0, position)
            self.value = self.shown(self.history[self._position])
        self.cursor_position = len(self.value)
