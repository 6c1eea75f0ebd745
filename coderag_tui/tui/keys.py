"""The keys that work everywhere in the app (the help screen lists them from here)."""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_BINDINGS: list[BindingType] = [
    Binding("f1", "help", "Help", tooltip="This list of keys"),
    Binding("ctrl+o", "prompt", "Prompt", tooltip="Open the assembled prompt"),
    Binding("ctrl+y", "copy_prompt", "Copy", tooltip="Copy the prompt (OSC 52 + system tool)"),
    Binding("ctrl+s", "save_prompt", "Save", tooltip="Save the prompt to a file"),
    Binding("ctrl+t", "next_template", "Template", tooltip="Switch template: markdown / xml"),
    Binding(
        "ctrl+g",
        "toggle_code_mode",
        "Code mode",
        tooltip="Query from FILE:LINE (the lines before it)",
    ),
    Binding(
        "ctrl+n",
        "related_to_change",
        "My change",
        tooltip="Related to my change: the uncommitted diff is the query",
    ),
    Binding(
        "ctrl+r",
        "reindex",
        "Re-index",
        show=False,
        tooltip="Re-read changed files, keep the rest",
    ),
]
