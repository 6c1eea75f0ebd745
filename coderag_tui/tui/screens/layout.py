"""Breakpoints and footer groups shared by the screens; app.tcss lays them out by size class.

Below 110 columns the screen gets `-narrow` (one pane beside another is too cramped), below
32 rows `-short` (borders and spacing give way so rankings, preview and prompt line fit).
"""

from __future__ import annotations

from textual.binding import Binding

WIDTH_BREAKPOINTS: list[tuple[int, str]] = [(0, "-narrow"), (110, "-wide")]
HEIGHT_BREAKPOINTS: list[tuple[int, str]] = [(0, "-short"), (32, "-tall")]

# Keys that share one footer entry (`[ ] Budget`, `1 2 3 4 Lists`) so a narrow footer still
# reaches `^q Quit`.
BUDGET_KEYS = Binding.Group("Budget", compact=True)
LIST_KEYS = Binding.Group("Lists", compact=True)
