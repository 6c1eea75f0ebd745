"""The selected chunk, syntax-highlighted with real line numbers and the query's words marked."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from coderag_tui.core.models import Chunk
from coderag_tui.core.prompt import fence_tag_for

MIN_TERM = 2  # single letters would mark half the file


def term_pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive pattern of the query words, longest first so `cart_total` beats `cart`."""
    words = sorted({t for t in terms if len(t) >= MIN_TERM}, key=len, reverse=True)
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)


def chunk_syntax(
    chunk: Chunk, terms: Iterable[str], *, dark: bool, background: str, mark: Style
) -> Syntax:
    """Rich Syntax of the chunk, numbered from its first file line, query words styled `mark`."""
    # The fence tag doubles as a Pygments alias; guessing from the text would load every lexer.
    syntax = Syntax(
        chunk.text,
        fence_tag_for(chunk.language, chunk.path) or "text",
        theme="monokai" if dark else "friendly",
        line_numbers=True,
        start_line=chunk.start_line,
        background_color=background,
        word_wrap=False,
    )
    pattern = term_pattern(terms)
    if pattern is not None:
        for number, line in enumerate(chunk.text.splitlines(), start=1):
            for start, end in word_matches(pattern, line):
                syntax.stylize_range(mark, (number, start), (number, end))
    return syntax


def _starts_word(line: str, i: int) -> bool:
    """A word (or an identifier part: `_card`, `getUser`) begins at i."""
    if i == 0 or not line[i - 1].isalnum():
        return True
    return line[i - 1].islower() and line[i].isupper()


def _ends_word(line: str, i: int) -> bool:
    """A word (or an identifier part) ends just before i."""
    if i >= len(line) or not line[i].isalnum():
        return True
    return line[i - 1].islower() and line[i].isupper()


def word_matches(pattern: re.Pattern[str], line: str) -> list[tuple[int, int]]:
    """Spans of whole words or identifier parts, so `on` marks `on` but not `function`."""
    return [
        (m.start(), m.end())
        for m in pattern.finditer(line)
        if _starts_word(line, m.start()) and _ends_word(line, m.end())
    ]


class ChunkPreview(VerticalScroll):
    """Scrollable view of one chunk; the border title names the file and line range."""

    def compose(self) -> ComposeResult:
        yield Static(
            Text("Select a chunk in any ranking to see it here.", style="dim"), id="preview-body"
        )

    def show(self, chunk: Chunk | None, renderable: RenderableType | None = None) -> None:
        body = self.query_one("#preview-body", Static)
        if chunk is None or renderable is None:
            self.border_title = "Preview"
            self.border_subtitle = ""
            body.update(Text("Select a chunk in any ranking to see it here.", style="dim"))
            return
        self.border_title = f"{chunk.path}:{chunk.start_line}-{chunk.end_line}"
        kind = "" if chunk.kind == "lines" else f" · {chunk.kind}"
        self.border_subtitle = f"{chunk.n_lines} lines{kind}"
        body.update(Group(renderable))
        self.scroll_home(animate=False)
