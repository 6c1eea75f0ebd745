"""What the screens and the command palette may ask of the app: a narrow, typed protocol.

Screens read the app's state through it and hand the user's intents back (a query, a
selected chunk, a pin); they never import the app module, so the import graph stays a tree:
app → screens → widgets, with this module (which imports no screen) beside them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from coderag_tui.core.records import RankingName
from coderag_tui.settings import Settings
from coderag_tui.tui.session import Session


@runtime_checkable
class CoderagHost(Protocol):
    """The app as its screens see it: the settings, the session, and the user's intents."""

    @property
    def settings(self) -> Settings: ...

    @property
    def history(self) -> list[str]:
        """The query history, shared with the query input (it appends to it)."""
        ...

    @property
    def session(self) -> Session:
        """The last search, its prompt, the selected chunk, pins, exclusions and template."""
        ...

    @property
    def dense_pending(self) -> bool:
        """Is the dense list of the installed chunks still being opened (not off for good)?"""
        ...

    def column_hints(self) -> dict[RankingName, str]:
        """What each ranking column says before the first search (or why it is off)."""
        ...

    def main_ready(self) -> None:
        """The main screen is composed: show the state and start indexing."""
        ...

    def search(self, text: str) -> None:
        """Search for what the user typed (a question, or FILE:LINE in code mode)."""
        ...

    def select(self, key: str | None) -> None:
        """The user moved to another chunk in a ranking."""
        ...

    def toggle_pin(self, key: str | None) -> None: ...

    def toggle_exclude(self, key: str | None) -> None: ...

    def toggle_admit(self, key: str | None) -> None: ...


def host_of(app: object) -> CoderagHost:
    """The app as a CoderagHost (every screen of coderag runs inside one)."""
    if not isinstance(app, CoderagHost):
        raise TypeError(f"{type(app).__name__} is not a coderag app")
    return app
