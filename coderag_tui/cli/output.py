"""Where a command's output goes and how it looks there: two streams and their terminal facts.

A command renders to the `Output` it is handed, never to `sys.stdout` or `sys.stderr` on its
own. In a plain run that is this process's streams (`Output.standard`); a resident server
(`coderag serve`) hands each request an `Output` of its own that writes to buffers and looks
like the asking client's terminal (`Output.buffered`), so one server answers two terminals
of different widths and colours without touching its own environment or streams.
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Mapping
from typing import Any, Literal, TextIO, TypeGuard

from rich.console import Console

from coderag_tui.core.echo import echo

ColorSystem = Literal["standard", "256", "truecolor", "windows"]  # rich's names
COLOR_SYSTEMS: dict[str, ColorSystem] = {
    "standard": "standard",
    "256": "256",
    "truecolor": "truecolor",
    "windows": "windows",
}
PLAIN_WIDTH = 80  # a stream whose facts did not arrive: rich's width off a terminal
PLAIN_HEIGHT = 25


@dataclasses.dataclass(frozen=True, kw_only=True)
class TerminalFacts:
    """How one output stream shows text: is it a terminal, its size, its colours, its encoding.

    These are what rich decides a rendering from (TERM, COLORTERM, NO_COLOR, FORCE_COLOR,
    COLUMNS and LINES, resolved once by rich in the process that owns the stream).
    """

    terminal: bool = False
    width: int = PLAIN_WIDTH
    height: int = PLAIN_HEIGHT
    color_system: ColorSystem | None = None  # None: no colour
    no_color: bool = False
    encoding: str = "utf-8"

    @classmethod
    def of(cls, stream: TextIO) -> TerminalFacts:
        """The facts of `stream` in this process, as rich reads them from its environment."""
        console = Console(file=stream)
        return cls(
            terminal=console.is_terminal,
            width=console.width,
            height=console.height,
            color_system=COLOR_SYSTEMS.get(console.color_system or ""),
            no_color=console.no_color,
            encoding=console.encoding,
        )

    @classmethod
    def from_wire(cls, wire: Any) -> TerminalFacts:
        """Facts sent by a client (`wire`); whatever does not read as one keeps its default."""
        if not isinstance(wire, Mapping):
            return cls()
        plain = cls()
        width, height = wire.get("width"), wire.get("height")
        color = wire.get("color_system")
        encoding = wire.get("encoding")
        return cls(
            terminal=wire.get("terminal") is True,
            width=width if _size(width) else plain.width,
            height=height if _size(height) else plain.height,
            color_system=COLOR_SYSTEMS.get(color) if isinstance(color, str) else None,
            no_color=wire.get("no_color") is True,
            encoding=encoding if isinstance(encoding, str) and encoding.isascii() else "utf-8",
        )

    def wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def console(self, file: TextIO, *, width: int | None = None) -> Console:
        """A rich console that renders to `file` as these facts say (`width` overrides)."""
        return Console(
            file=file,
            force_terminal=self.terminal,
            force_interactive=False,
            force_jupyter=False,
            width=self.width if width is None else width,
            height=self.height,
            color_system=self.color_system,
            no_color=self.no_color,
            legacy_windows=False,
        )


def _size(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 10_000


class _Buffer(io.StringIO):
    """Captured output that reports the encoding of the stream it stands for."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:
        return self._encoding

    @encoding.setter
    def encoding(self, value: str) -> None:
        self._encoding = value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Output:
    """A command's two streams (`out` for results, `err` for `coderag: …` lines) and how each
    looks (`out_facts`, `err_facts`)."""

    out: TextIO
    err: TextIO
    out_facts: TerminalFacts
    err_facts: TerminalFacts

    @classmethod
    def standard(cls) -> Output:
        """This process's stdout and stderr, as they are now."""
        return cls(
            out=sys.stdout,
            err=sys.stderr,
            out_facts=TerminalFacts.of(sys.stdout),
            err_facts=TerminalFacts.of(sys.stderr),
        )

    @classmethod
    def buffered(cls, out_facts: TerminalFacts, err_facts: TerminalFacts) -> Output:
        """Buffers that render as streams with these facts would (`text` reads them back)."""
        return cls(
            out=_Buffer(out_facts.encoding),
            err=_Buffer(err_facts.encoding),
            out_facts=out_facts,
            err_facts=err_facts,
        )

    def console(self, *, width: int | None = None) -> Console:
        """A rich console on `out` (`width` overrides the stream's)."""
        return self.out_facts.console(self.out, width=width)

    def say(self, message: str) -> None:
        """One status line on `err`, `coderag: …` (`render.say`'s rules: `core.echo`)."""
        self.err.write(f"coderag: {echo(message)}\n")
        self.err.flush()

    def print_json(self, data: Any) -> None:
        json.dump(data, self.out, indent=2, ensure_ascii=False, default=str)
        self.out.write("\n")

    def text(self) -> tuple[str, str]:
        """What was written to `out` and `err`, when they are buffers; else empty."""
        out = self.out.getvalue() if isinstance(self.out, io.StringIO) else ""
        err = self.err.getvalue() if isinstance(self.err, io.StringIO) else ""
        return out, err
