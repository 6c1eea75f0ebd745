"""A small dialog asking where to save the prompt, and the file name it suggests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from coderag_tui.core.prompt.clipboard import SUFFIXES, file_stem
from coderag_tui.core.visible import one_line


def suggested_path(folder: Path, repo_name: str, template: str) -> Path:
    """`<folder>/<repo>-prompt.md` (`.xml` for the xml template, `.txt` for one's own), the
    first of `-2`, `-3` … that is free: a suggestion never replaces the last save."""
    stem = file_stem(repo_name)
    suffix = SUFFIXES.get(template, ".txt")
    path = folder / f"{stem}-prompt{suffix}"
    number = 1
    while os.path.lexists(path):
        number += 1
        path = folder / f"{stem}-prompt-{number}{suffix}"
    return path


class SaveScreen(ModalScreen[Path | None]):
    """Enter saves to the typed path (a file that exists only after a second Enter, which
    replaces it); Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self._default = default
        self._replace: Path | None = None  # the existing file a second Enter replaces

    def compose(self) -> ComposeResult:
        with Vertical(id="save-dialog") as dialog:
            dialog.border_title = "Save the prompt"
            dialog.border_subtitle = "enter saves · esc cancels"
            yield Label("File:")
            yield Input(str(self._default), id="save-path")
            yield Label("", id="save-warning")

    def on_mount(self) -> None:
        self.query_one("#save-warning", Label).display = False

    @on(Input.Changed)
    def _changed(self) -> None:
        self._warn(None)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.dismiss(None)
            return
        path = Path(text).expanduser()
        if os.path.lexists(path) and path != self._replace:
            self._warn(path)
            return
        self.dismiss(path)

    def _warn(self, path: Path | None) -> None:
        """Say that the file exists and what a second Enter does (or take that back)."""
        self._replace = path
        warning = self.query_one("#save-warning", Label)
        if path is not None:
            warning.update(Content(f"{one_line(path.name)} exists: enter again replaces it."))
        warning.display = path is not None

    def action_cancel(self) -> None:
        self.dismiss(None)
