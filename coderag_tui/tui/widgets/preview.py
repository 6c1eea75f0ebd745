"""The selected chunk, syntax-highlighted with real line numbers and the query's words marked."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from coderag_tui.core.prompt.render import fence_tag_for
from coderag_tui.core.records import Chunk
from coderag_tui.core.visible import one_line, visible

if TYPE_CHECKING:  # Pygments is imported on first use (warm-up), not with the first screen
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

MIN_TERM = 2  # single letters would mark half the file


def term_pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    """A case-insensitive pattern of the query words, longest first so `cart_total` beats `cart`."""
    words = sorted({t for t in terms if len(t) >= MIN_TERM}, key=len, reverse=True)
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)


@functools.lru_cache(maxsize=16)
def _lexer(alias: str) -> Lexer | None:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(alias, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@functools.lru_cache(maxsize=512)
def _token_style(theme: str, token: _TokenType) -> Style:
    """A Pygments theme's colour and weight for a token, without the theme's own background."""
    from rich.syntax import PygmentsSyntaxTheme

    style = PygmentsSyntaxTheme(theme).get_style_for_token(token)
    return Style(color=style.color, bold=style.bold, italic=style.italic)


def chunk_lines(
    chunk: Chunk,
    terms: Iterable[str],
    *,
    dark: bool,
    mark: Style,
    background: str | None = None,
) -> list[Text]:
    """The chunk's lines highlighted once, each led by its file line number, query words
    styled `mark`. Without a `background` the lines take the background of whatever draws
    them (the preview: its theme's, also after the theme changes).

    A rich `Syntax` runs Pygments on every render, and a Static preview renders twice per
    update (to measure its height, then to paint); highlighting once here, and drawing only
    the lines in view (`ChunkPreview`), keeps a new selection cheap.
    """
    theme = "monokai" if dark else "friendly"
    count = max(1, len(chunk.text.splitlines()))
    width = len(str(chunk.start_line + count - 1))
    base = Style(bgcolor=background) if background else Style()
    number = Style(color="#75715e" if dark else "#999999")

    def new_line(offset: int) -> Text:
        line = Text(style=base, no_wrap=True, end="")
        line.append(f"{chunk.start_line + offset:>{width}} ", number)
        return line

    lines = [new_line(0)]
    # The fence tag doubles as a Pygments alias; guessing from the text would load every lexer.
    lexer = _lexer(fence_tag_for(chunk.language, chunk.path) or "text")
    from pygments.token import Token

    text = visible(chunk.text)  # escape sequences in a file are shown, never sent
    tokens = lexer.get_tokens(text) if lexer is not None else [(Token.Text, text)]
    for token, value in tokens:
        style = _token_style(theme, token)
        for i, part in enumerate(value.split("\n")):
            if i:
                lines.append(new_line(len(lines)))
            if part:
                lines[-1].append(part, style)
    del lines[count:]  # the newline that ends the chunk does not start a line
    pattern = term_pattern(terms)
    if pattern is not None:
        gutter = width + 1
        for line in lines:
            for start, end in word_matches(pattern, line.plain[gutter:]):
                line.stylize(mark, gutter + start, gutter + end)
    return lines


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


class ChunkPreview(ScrollView, can_focus=True):
    """Scrollable view of one chunk; the border title names the file and line range.

    The chunk's lines are rendered to strips once per selection and drawn line by line (the
    Line API): a new chunk repaints this view alone, where a Static in a scroll container
    re-rendered its whole content to measure it and re-laid out the screen on every search.
    """

    PLACEHOLDER = "Select a chunk in any ranking to see it here."

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}  # rendered on first view
        self._key: str | None = None  # the chunk shown

    def on_mount(self) -> None:
        self.show(None)

    def show(self, chunk: Chunk | None, lines: list[Text] | None = None) -> None:
        """Show a chunk's lines (from `chunk_lines`); the same chunk again (a new theme, the
        search run again) keeps its scroll position."""
        key = chunk.key if chunk is not None and lines is not None else None
        same = key is not None and key == self._key
        self._key = key
        if chunk is None or lines is None:
            self.border_title = "Preview"
            self.border_subtitle = ""
            lines = [Text(self.PLACEHOLDER, style="dim")]
        else:
            # Content, not a str: a path like app/[slug]/page.tsx is not markup.
            label = f"{one_line(chunk.path)}:{chunk.start_line}-{chunk.end_line}"
            self.border_title = Content(label)
            kind = "" if chunk.kind == "lines" else f" · {chunk.kind}"
            self.border_subtitle = f"{chunk.n_lines} lines{kind}"
        self._lines = lines
        self._strips = {}
        width = max((line.cell_len for line in lines), default=0)
        self.virtual_size = Size(width, len(lines))
        if not same:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # a new theme: the lines go on its background

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        style = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(index)
        if strip is None:
            # The pane's own style under every segment: its background behind the text too.
            segments = self._lines[index].render(self.app.console, end="")
            strip = Strip(list(segments)).apply_style(style)
            self._strips[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, style)
