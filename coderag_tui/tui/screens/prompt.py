"""The prompt view: the assembled prompt, tokens against the budget, what went in and what not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TextArea

from coderag_tui.core.prompt.account import readable, saved, stopped
from coderag_tui.core.records import DroppedChunk
from coderag_tui.core.visible import one_line, visible
from coderag_tui.tui.protocol import CoderagHost, host_of
from coderag_tui.tui.screens.layout import BUDGET_KEYS, HEIGHT_BREAKPOINTS, WIDTH_BREAKPOINTS
from coderag_tui.tui.session import plural
from coderag_tui.tui.widgets.chunk_table import ChunkRow, ChunkTable
from coderag_tui.tui.widgets.latency import fitting, meter
from coderag_tui.tui.widgets.path_label import distinct_parts, split_label


def dropped_tally(dropped: Sequence[DroppedChunk]) -> str:
    """`67 chunks: 66 over budget · 1 excluded`, so the reasons show where their column
    gave way to the paths."""
    if not dropped:
        return "nothing dropped: all fit"
    reasons = Counter("secret" if d.secrets else d.reason for d in dropped)
    tally = " · ".join(f"{n} {reason}" for reason, n in reasons.most_common())
    return f"{len(dropped)} chunks: {tally}"


class PromptScreen(Screen[None]):
    """Read, trim and copy the prompt: pin what must go first, exclude what must not go in."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to the rankings"),
        Binding("p", "pin", "Pin", tooltip="Pin the chunk under the cursor: it goes first"),
        Binding("x", "exclude", "Exclude", tooltip="Exclude (or include again) the chunk"),
        Binding(
            "a",
            "admit",
            "Let in",
            show=False,
            tooltip="Let a chunk held back for a secret in (or hold it back again)",
        ),
        Binding(
            "left_square_bracket",
            "app.budget_step(-1)",
            "Budget −",
            key_display="[",
            group=BUDGET_KEYS,
            tooltip="Smaller token budget",
        ),
        Binding(
            "right_square_bracket",
            "app.budget_step(1)",
            "Budget +",
            key_display="]",
            group=BUDGET_KEYS,
            tooltip="Larger token budget",
        ),
    ]
    HORIZONTAL_BREAKPOINTS = WIDTH_BREAKPOINTS
    VERTICAL_BREAKPOINTS = HEIGHT_BREAKPOINTS

    @property
    def host(self) -> CoderagHost:
        return host_of(self.app)

    def compose(self) -> ComposeResult:
        # The lines above the prompt (height auto): the header, and room for more of the
        # prompt's account.
        with Vertical(id="prompt-top"):
            yield Static("", id="prompt-header")
            yield Static("", id="prompt-account")
        with Horizontal(id="prompt-body"):
            # A read-only TextArea draws only the visible lines (a 128k-token prompt stays
            # instant) and lets the user select and copy a part of it.
            yield TextArea("", id="prompt-text", read_only=True, soft_wrap=True)
            with Vertical(id="prompt-side"):
                yield ChunkTable(("", "#", "block", "tokens"), path=2, right=(1, 3), id="included")
                # The path before the reason: the reason gives way first in a narrow panel.
                yield ChunkTable(
                    ("#", "chunk", "tokens", "why"), path=1, right=(0, 2), text=3, id="dropped"
                )
        yield Footer()

    def on_mount(self) -> None:
        included = self.query_one("#included", ChunkTable)
        included.border_title = "Included — most relevant first"
        dropped = self.query_one("#dropped", ChunkTable)
        dropped.border_title = "Dropped"
        text = self.query_one("#prompt-text", TextArea)
        text.border_title = "Prompt"
        text.border_subtitle = "select text with shift+arrows, ctrl+c copies a part"
        if self.app.is_headless:
            text.cursor_blink = False  # stable snapshots
        self.refresh_prompt()
        included.focus()

    def refresh_prompt(self) -> None:
        """Render the app's current packed prompt (called after every re-pack)."""
        session = self.host.session
        packed = session.packed
        header = self.query_one("#prompt-header", Static)
        rendered = self.query_one("#prompt-text", TextArea)
        included = self.query_one("#included", ChunkTable)
        dropped = self.query_one("#dropped", ChunkTable)
        if packed is None:
            included.show([])
            dropped.show([])
            header.update(
                Content.assemble(
                    (" Prompt ", "bold reverse $primary"),
                    " ",
                    (
                        session.pack_error
                        or "run a search first: the prompt is packed from its final ranking",
                        "$warning" if session.pack_error else "$text-muted",
                    ),
                )
            )
            rendered.load_text("")
            self.query_one("#prompt-account", Static).update("")
            return
        fraction = packed.tokens / max(packed.budget, 1)
        encoding = packed.encoding.replace("_offline", " (offline)")
        counting = encoding if packed.exact else f"{encoding} (estimate)"
        template = one_line(session.template_name)
        blocks = f"{plural(len(packed.blocks), 'block')} in, {len(packed.dropped)} dropped"

        def head(bar: int) -> Content:
            return Content.assemble(
                (" Prompt ", "bold reverse $primary"),
                " ",
                (f"{packed.tokens:,} / {packed.budget:,} tokens ", "bold"),
                meter(fraction, bar),
                f" {fraction:.0%}",
            )

        # As much as the width holds: the meter narrows, then the words go, then the encoding.
        account = f" · {counting} · template {template} · {blocks}"
        variants = [
            head(20) + Content.styled(account, "$text-muted"),
            head(12) + Content.styled(account, "$text-muted"),
            head(8) + Content.styled(f" · {counting} · {template} · {blocks}", "$text-muted"),
            head(8) + Content.styled(f" · {template} · {blocks}", "$text-muted"),
            head(8) + Content.styled(f" · {blocks}", "$text-muted"),
        ]
        header.update(fitting(variants, self.size.width))
        # What the prompt saves, and why packing stopped (the CLI and MCP say the same).
        why = f"  ·  {stopped(packed)}" if packed.stopped else ""
        faults = f"  ·  {readable(packed)}" if packed.account is not None else ""
        self.query_one("#prompt-account", Static).update(
            Content.assemble(" ", (saved(packed), "bold"), (faults + why, "$text-muted"))
        )
        shown = visible(packed.text)  # the copy keeps the exact text; the screen shows escapes
        if rendered.text != shown:
            rendered.load_text(shown)
        kept = [
            ChunkRow(
                block.chunk_keys[0],
                (
                    ("📌" if any(k in session.pinned for k in block.chunk_keys) else "")
                    + ("⚠" if block.secrets else "")
                    # ≡: signatures only (an outline); ⋮: lines between its parts left out
                    + ("≡" if block.outline else "⋮" if block.parts else ""),
                    str(block.best_rank),
                    f"{one_line(block.path)}:{block.start_line}-{block.end_line}",
                    f"{block.tokens:,}",
                ),
            )
            for block in packed.blocks
        ]
        left = [
            ChunkRow(
                drop.key,
                (
                    str(drop.rank or "—"),
                    one_line(drop.key),
                    f"{drop.tokens:,}",
                    drop.reason + (f" ({', '.join(drop.secrets)})" if drop.secrets else ""),
                ),
            )
            for drop in packed.dropped
        ]
        # One path never reads like another on this screen, in either table.
        paths = [split_label(row.cells[i])[0] for rows, i in ((kept, 2), (left, 1)) for row in rows]
        parts = distinct_parts(paths)
        included.show(kept, parts)
        dropped.show(left, parts)
        included.border_subtitle = f"{len(packed.blocks)} blocks"
        dropped.border_subtitle = dropped_tally(packed.dropped)

    def on_resize(self) -> None:
        self.refresh_prompt()

    def _selected_keys(self) -> list[str]:
        """Chunk keys under the cursor of the focused table (a block may hold several)."""
        table = self.focused if isinstance(self.focused, DataTable) else None
        if table is None or table.row_count == 0:
            return []
        row_key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if row_key is None:
            return []
        packed = self.host.session.packed
        if table.id == "included" and packed is not None:
            for block in packed.blocks:
                if block.chunk_keys[0] == row_key:
                    return list(block.chunk_keys)
        return [row_key]

    def action_pin(self) -> None:
        keys = self._selected_keys()
        if keys:
            self.host.toggle_pin(keys[0])

    def action_exclude(self) -> None:
        for key in self._selected_keys():
            self.host.toggle_exclude(key)

    def action_admit(self) -> None:
        for key in self._selected_keys():
            self.host.toggle_admit(key)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
