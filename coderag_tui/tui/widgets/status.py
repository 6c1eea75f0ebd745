"""The top bar (repository, counts, index and dense state) and the background-work progress row."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Label, ProgressBar, Static

from coderag_tui.core.records import ChunkingSpec
from coderag_tui.core.visible import one_line


@dataclass(frozen=True)
class IndexState:
    """What the top bar says about the repository and its indexes."""

    repo: str
    files: int | None = None
    chunks: int | None = None
    chunking: str = ""
    index: str = "opening"  # opening | indexing | checking | ready | failed
    # waiting | loading model | embedding | first pass (the static table answers) | ready | off
    dense: str = "waiting"
    dense_detail: str = ""
    # "parsing" while a background process parses the definitions the code signals read
    definitions: str = ""


STATE_STYLE = {
    "ready": "$success",
    "indexing": "$warning",
    "checking": "$success",
    "embedding": "$warning",
    "first pass": "$accent",
    "loading model": "$warning",
    "opening": "$text-muted",
    "waiting": "$text-muted",
    "failed": "$error",
    "off": "$text-muted",
}


def chunking_label(key: str) -> str:
    """How the top bar names a chunking: `64-line chunks`, not the settings key `lines:64:0`."""
    try:
        spec = ChunkingSpec.parse(key)
    except ValueError:
        return key
    if spec.strategy == "file":
        return "whole files"
    if spec.strategy == "ast":
        return f"ast chunks ≤ {spec.lines} lines"
    overlap = f", {spec.overlap} overlap" if spec.overlap else ""
    return f"{spec.lines}-line chunks{overlap}"


def top_bar_content(state: IndexState, *, compact: bool = False) -> Content:
    """`coderag  shop · 7 files · 9 chunks · 64-line chunks · ● index ready · ● dense ready`;
    `compact` leaves out the files and the chunking, so the states fit a narrow terminal."""
    parts: list[Content] = [
        Content.styled(" coderag ", "bold reverse $primary"),
        Content(" "),
        Content.styled(one_line(state.repo), "bold"),  # a folder's name is someone else's text
    ]
    if state.files is not None and not compact:
        parts.append(Content(f" · {state.files:,} files"))
    if state.chunks is not None:
        parts.append(Content(f" · {state.chunks:,} chunks"))
    if state.chunking and not compact:
        parts.append(Content.styled(f" · {chunking_label(state.chunking)}", "$text-muted"))
    parts.append(Content("  "))
    parts.append(Content.styled("●", STATE_STYLE.get(state.index, "")))
    parts.append(Content(f" index {state.index}  "))
    if state.definitions:
        parts.append(Content.styled("●", "$warning"))
        parts.append(Content(f" definitions {state.definitions}  "))
    parts.append(Content.styled("●", STATE_STYLE.get(state.dense, "")))
    dense = f" dense {state.dense}"
    detail = state.dense_detail.rsplit(" · ", 1)[-1] if compact else state.dense_detail
    if detail:  # compact: the model's progress, not what the first pass is
        dense += f" ({one_line(detail)})"  # a model's name can come from a config file
    parts.append(Content(dense))
    return Content("").join(parts)


class TopBar(Static):
    """One line naming the repository and what is ready to search."""

    state: IndexState | None = None

    def show(self, state: IndexState) -> None:
        self.state = state
        content = top_bar_content(state)
        if self.size.width and content.cell_length > self.size.width:
            content = top_bar_content(state, compact=True)
        self.update(content)

    def on_resize(self) -> None:
        if self.state is not None:
            self.show(self.state)


class WorkProgress(Horizontal):
    """A labelled progress bar for one kind of background work; hidden while idle."""

    def __init__(self, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="work-progress")
        self._title = title

    def compose(self) -> ComposeResult:
        yield Label(self._title, classes="work-title")
        yield ProgressBar(show_eta=False, show_percentage=True)
        yield Label("", classes="work-detail")

    def on_mount(self) -> None:
        self.display = False

    def advance_to(self, done: int, total: int, detail: str) -> None:
        self.display = True
        bar = self.query_one(ProgressBar)
        bar.update(total=max(total, 1), progress=done)
        self.query_one(".work-detail", Label).update(detail)

    def finish(self) -> None:
        self.display = False
