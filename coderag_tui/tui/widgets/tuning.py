"""Tuning: chunking, chunk size, token budget, RRF k, depth and rerank, each one line tall.

The panel only reports what the user chose (`TuningChanged`); the app decides what to
re-run (re-chunk, re-search or just re-pack).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Label, Select, Static, Switch

from coderag_tui.settings import Settings

BUDGET_PRESETS: tuple[tuple[str, int], ...] = (
    ("2k", 2_000),
    ("4k", 4_000),
    ("8k", 8_000),
    ("16k", 16_000),
    ("32k", 32_000),
    ("128k", 128_000),
)
CUSTOM = -1
SettingValue = str | int | bool  # what the panel sets: a chunking, a number or a switch


def budget_choice(budget: int) -> int:
    """The preset value matching a budget, or CUSTOM."""
    return budget if budget in {v for _, v in BUDGET_PRESETS} else CUSTOM


def step_budget(budget: int, direction: int) -> int:
    """The next preset above (direction 1) or below (-1) a budget, clamped to the presets."""
    values = [v for _, v in BUDGET_PRESETS]
    if direction > 0:
        return next((v for v in values if v > budget), values[-1])
    return next((v for v in reversed(values) if v < budget), values[0])


def on_off(value: bool) -> str:  # noqa: FBT001
    """A switch's state in a word, for terminals and eyes without colour."""
    return "on" if value else "off"


NUMBER_FIELDS = ("chunk_lines", "budget", "rrf_k", "depth", "rerank_keep")


class TuningPanel(VerticalScroll):
    """Controls for the knobs that change rankings or the prompt, and the chunk-size advice.

    A number takes effect with Enter or when its field is left (Tab, a click); Esc drops
    what was typed and goes back to the lists.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "screen.leave_tuning",
            "Lists",
            show=False,
            tooltip="Back to the lists, undoing an edit",
        ),
    ]

    @dataclass
    class TuningChanged(Message):
        """The user set a Settings field (name) to a new value."""

        field: str
        value: SettingValue

    def __init__(self, settings: Settings, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._settings = settings

    def compose(self) -> ComposeResult:
        s = self._settings
        with Horizontal(classes="tuning-row"):
            yield Label("chunking", classes="tuning-label")
            yield Select(
                [("lines", "lines"), ("ast", "ast"), ("file", "file")],
                value=s.chunking,
                allow_blank=False,
                compact=True,
                id="tune-chunking",
            )
        with Horizontal(classes="tuning-row"):
            yield Label("chunk lines", classes="tuning-label")
            yield Input(str(s.chunk_lines), type="integer", compact=True, id="tune-chunk_lines")
        with Horizontal(classes="tuning-row"):
            yield Label("budget", classes="tuning-label")
            yield Select(
                [*BUDGET_PRESETS, ("custom", CUSTOM)],
                value=budget_choice(s.budget),
                allow_blank=False,
                compact=True,
                id="tune-budget-preset",
            )
        with Horizontal(classes="tuning-row", id="custom-budget-row"):
            yield Label("custom budget", classes="tuning-label")
            yield Input(str(s.budget), type="integer", compact=True, id="tune-budget")
        with Horizontal(classes="tuning-row"):
            yield Label("RRF k", classes="tuning-label")
            yield Input(str(s.rrf_k), type="integer", compact=True, id="tune-rrf_k")
        with Horizontal(classes="tuning-row"):
            yield Label("depth", classes="tuning-label")
            yield Input(str(s.depth), type="integer", compact=True, id="tune-depth")
        with Horizontal(classes="tuning-row"):
            yield Label("rerank", classes="tuning-label")
            yield Switch(value=s.rerank, id="tune-rerank")
            # The switch says on or off by colour alone: say it in a word too.
            yield Label(on_off(s.rerank), id="tune-rerank-state")
        with Horizontal(classes="tuning-row"):
            yield Label("rerank keep", classes="tuning-label")
            yield Input(str(s.rerank_keep), type="integer", compact=True, id="tune-rerank_keep")
        yield Static("", id="advice")

    def on_mount(self) -> None:
        self.query_one("#custom-budget-row").display = (
            budget_choice(self._settings.budget) == CUSTOM
        )

    def sync(self, settings: Settings) -> None:
        """Show settings changed elsewhere (keys, command palette) without echoing them back.

        The controls' Changed messages are prevented, not ignored for a while: a flag held
        until the next refresh also swallowed an Enter typed meanwhile.
        """
        self._settings = settings
        with self.prevent(Select.Changed, Switch.Changed):
            self.query_one("#tune-chunking", Select).value = settings.chunking
            self.query_one("#tune-budget-preset", Select).value = budget_choice(settings.budget)
            self.query_one("#custom-budget-row").display = budget_choice(settings.budget) == CUSTOM
            self.query_one("#tune-rerank", Switch).value = settings.rerank
        self.query_one("#tune-rerank-state", Label).update(on_off(settings.rerank))
        for name in NUMBER_FIELDS:
            field_input = self.query_one(f"#tune-{name}", Input)
            if not field_input.has_focus:
                field_input.value = str(getattr(settings, name))

    def revert(self) -> None:
        """Put back the setting in a number field the user typed in but did not enter."""
        for name in NUMBER_FIELDS:
            field_input = self.query_one(f"#tune-{name}", Input)
            setting = str(getattr(self._settings, name))
            if field_input.value != setting:
                field_input.value = setting

    def show_advice(self, text: str) -> None:
        self.query_one("#advice", Static).update(text)

    def _report(self, name: str, value: SettingValue) -> None:
        if getattr(self._settings, name) == value:
            return
        self.post_message(self.TuningChanged(name, value))

    @on(Select.Changed, "#tune-chunking")
    def _chunking(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self._report("chunking", event.value)

    @on(Select.Changed, "#tune-budget-preset")
    def _budget_preset(self, event: Select.Changed) -> None:
        custom = event.value == CUSTOM
        self.query_one("#custom-budget-row").display = custom
        if not custom and isinstance(event.value, int):
            self._report("budget", event.value)

    @on(Switch.Changed, "#tune-rerank")
    def _rerank(self, event: Switch.Changed) -> None:
        self.query_one("#tune-rerank-state", Label).update(on_off(event.value))
        self._report("rerank", event.value)

    @on(Input.Submitted)
    @on(Input.Blurred)
    def _number(self, event: Input.Submitted | Input.Blurred) -> None:
        name = (event.input.id or "").removeprefix("tune-")
        try:
            value = int(event.value)
        except ValueError:
            return
        minimum = {"chunk_lines": 1, "budget": 100, "rrf_k": 1, "depth": 1, "rerank_keep": 1}
        if name not in minimum:
            return
        if value < minimum[name]:
            self.notify(
                f"{name.replace('_', ' ')} must be at least {minimum[name]}.", severity="warning"
            )
            return
        self._report(name, value)
