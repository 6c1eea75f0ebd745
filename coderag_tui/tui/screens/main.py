"""The main view: query, rankings side by side, the selected chunk, latency and tuning."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Static, TabbedContent, TabPane

from coderag_tui.core.rank.words import tokenize
from coderag_tui.core.records import RANKING_NAMES, RankingName, SearchRun
from coderag_tui.core.visible import one_line
from coderag_tui.tui.messages import EmbeddingProgressed, IndexProgressed
from coderag_tui.tui.protocol import CoderagHost, host_of
from coderag_tui.tui.screens.layout import (
    BUDGET_KEYS,
    HEIGHT_BREAKPOINTS,
    LIST_KEYS,
    WIDTH_BREAKPOINTS,
)
from coderag_tui.tui.session import Ask, dense_title, fused_labels, short_model, why_line
from coderag_tui.tui.widgets.latency import LatencyPanel, fitting, meter
from coderag_tui.tui.widgets.preview import ChunkPreview, chunk_lines
from coderag_tui.tui.widgets.query import QueryInput
from coderag_tui.tui.widgets.ranking_table import RankingTable
from coderag_tui.tui.widgets.rankings import TITLES, RankingColumn, RankingsBoard, ranks_line
from coderag_tui.tui.widgets.status import IndexState, TopBar, WorkProgress
from coderag_tui.tui.widgets.tuning import TuningPanel

if TYPE_CHECKING:
    from coderag_tui.core.engine import Dense

# What indexing is doing, by progress stage: "done" means the files, not the index (BM25
# and the chunk list still load after it, and the top bar says "indexing" until then).
INDEX_STAGES = {
    "wait": "waiting for another coderag indexing this repository",
    "walk": "listing files",
    "index": "reading files",
    "done": "files read, loading BM25…",
    "bm25": "building BM25…",
}

# What the prompt does with a chunk that holds a suspected secret, by `secrets` setting.
SECRET_FATE = {
    "hold": ": held back from the prompt",
    "redact": ": masked in the prompt",
    "allow": ": in the prompt as it is",
}


def hit_why(run: SearchRun | None, key: str | None, name: RankingName = "fused") -> str:
    """`why: rrf 0.82 · definition: Cart +0.40 · …` for the chunk's hit in the fused list (or
    in the reranked one: the learned model's largest parts), "" if none."""
    if run is None or key is None or name not in run.rankings:
        return ""
    for hit in run.rankings[name].hits:
        if hit.chunk.key == key:
            return one_line(why_line(hit.why))  # labels name repository identifiers
    return ""


class MainScreen(Screen[None]):
    """Everything about one query at a glance; the app fills it from core results."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: the query takes focus while the app reads this key, so the keys typed
        # right after it (a paste, a fast typist) go to the query, never to the list's keys.
        Binding("slash", "focus_query", "Query", priority=True, tooltip="Jump to the query input"),
        Binding(
            "1", "focus_column('bm25')", "BM25", group=LIST_KEYS, tooltip="Jump to the BM25 list"
        ),
        Binding(
            "2", "focus_column('dense')", "Dense", group=LIST_KEYS, tooltip="Jump to the dense list"
        ),
        Binding(
            "3", "focus_column('fused')", "Fused", group=LIST_KEYS, tooltip="Jump to the fused list"
        ),
        Binding(
            "4",
            "focus_column('rerank')",
            "Rerank",
            group=LIST_KEYS,
            tooltip="Jump to the reranked list",
        ),
        Binding("p", "app.pin", "Pin", tooltip="Pin the selected chunk: it goes first"),
        Binding(
            "x", "app.exclude", "Exclude", tooltip="Exclude the selected chunk from the prompt"
        ),
        Binding(
            "a",
            "app.admit",
            "Let in",
            show=False,
            tooltip="Let the selected ⚠ chunk into the prompt with its secret (a again: hold)",
        ),
        Binding(
            "left_square_bracket",
            "app.budget_step(-1)",
            "Budget −",
            key_display="[",
            group=BUDGET_KEYS,
            tooltip="Smaller token budget (2k … 128k)",
        ),
        Binding(
            "right_square_bracket",
            "app.budget_step(1)",
            "Budget +",
            key_display="]",
            group=BUDGET_KEYS,
            tooltip="Larger token budget",
        ),
        Binding(
            "t",
            "focus_tuning",
            "Tune",
            show=False,
            tooltip="The Tuning tab: chunking, budget, RRF k, depth, rerank (Esc: back)",
        ),
        Binding(
            "l",
            "focus_latency",
            "Latency",
            show=False,
            tooltip="The Latency tab: every stage's time, the index",
        ),
        Binding(
            "v",
            "toggle_scores",
            "Scores",
            show=False,
            tooltip="Show or hide the scores in every list",
        ),
        Binding(
            "z",
            "zoom",
            "Zoom",
            tooltip="Maximise the focused pane (z or esc restores)",
        ),
        Binding(
            "s",
            "toggle_side",
            "Side",
            show=False,
            tooltip="Show or hide the side panel (Latency, Tuning; under 110 columns, in the "
            "preview's place)",
        ),
        Binding("question_mark", "app.help", "Help", show=False, tooltip="This list of keys"),
    ]
    HORIZONTAL_BREAKPOINTS = WIDTH_BREAKPOINTS
    VERTICAL_BREAKPOINTS = HEIGHT_BREAKPOINTS

    last_list: RankingName | None = None  # focused last: a new search selects its #1
    _hinted_stages: tuple[str, str] | None = None  # the index and dense states hinted for
    _side_for_tuning = False  # `t` showed the side panel in the preview's place

    @property
    def host(self) -> CoderagHost:
        return host_of(self.app)

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        with Horizontal(id="query-bar"):
            yield Label("Ask ›", id="mode-label")
            yield QueryInput(self.host.history, id="query")
        yield WorkProgress("Indexing", id="index-progress")
        yield WorkProgress("Embedding", id="embed-progress")
        yield Static("", id="ranks")
        yield RankingsBoard(id="board")
        with Horizontal(id="bottom"):
            yield ChunkPreview(id="preview")
            with TabbedContent(id="side"):
                with TabPane("Latency", id="tab-latency"):
                    yield LatencyPanel(id="latency")
                with TabPane("Tuning", id="tab-tuning"):
                    yield TuningPanel(self.host.settings, id="tuning")
        yield Static("", id="prompt-line")
        yield Footer()

    def on_mount(self) -> None:
        query = self.query_one(QueryInput)
        if self.app.is_headless:
            query.cursor_blink = False  # stable snapshots
        query.focus()
        self.board.set_rerank_visible(visible=self.host.settings.rerank)
        self.show_hints()
        self.show_prompt_line()
        # Syntax colours and the query words' mark follow the theme: draw them again.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.show_selection())
        self.host.main_ready()

    # ------------------------------------------------------------------ parts
    @property
    def board(self) -> RankingsBoard:
        return self.query_one(RankingsBoard)

    @property
    def latency(self) -> LatencyPanel:
        return self.query_one(LatencyPanel)

    @property
    def tuning(self) -> TuningPanel:
        return self.query_one(TuningPanel)

    @property
    def index_progress(self) -> WorkProgress:
        return self.query_one("#index-progress", WorkProgress)

    @property
    def embed_progress(self) -> WorkProgress:
        return self.query_one("#embed-progress", WorkProgress)

    # ------------------------------------------------------------------ rendering
    def show_state(self, state: IndexState) -> None:
        self.query_one(TopBar).show(state)
        # The hints follow the stages, not the progress figures that change every batch.
        stages = (state.index, state.dense)
        if self.host.session.last_run is None and stages != self._hinted_stages:
            self._hinted_stages = stages
            self.show_hints()

    def show_hints(self) -> None:
        """Before the first search, each column says what it will show or why it cannot."""
        self.board.show_run(None, self.host.column_hints())

    def show_run(self, run: SearchRun) -> None:
        host = self.host
        settings = host.settings
        pending: tuple[RankingName, ...] = ("dense",) if host.dense_pending else ()
        self.board.show_run(run, {}, secrets=host.session.secrets, pending=pending)
        self.board.column("fused").set_stage(*fused_labels(run, settings))
        reranked = run.rankings.get("rerank")
        self.board.column("rerank").set_stage(reranked.by if reranked is not None else "")
        self.board.set_rerank_visible(visible=settings.rerank)
        self.latency.show_run(run)
        self.show_selection()
        self.latency.show_notes(run.notes)

    def show_dense_stage(self, dense: Dense | None, progress: str) -> None:
        """Name the dense list's model and stage in its column, with the model's progress."""
        labels: tuple[str, ...] = ()
        if dense is not None and dense.available:
            name = dense_title(dense)
            if dense.first_pass:
                labels = (f"{name} · first pass", "first pass")
            else:
                labels = (name, short_model(name))
        self.board.column("dense").set_stage(*labels, detail=progress)

    def cursor_key(self) -> str | None:
        """The chunk under the cursor of the focused list as this key is handled (its
        highlight message may still be queued), else the selected chunk."""
        focused = self.focused
        if isinstance(focused, RankingTable) and focused.show_cursor and focused.keys:
            return focused.keys[focused.cursor_row]
        return self.host.session.selected_key

    def show_selection(self) -> None:
        """Sync every column, the ranks line and the preview to the selected chunk."""
        host = self.host
        session = host.session
        key = session.selected_key
        self.board.follow(key)
        run = session.last_run
        shown: tuple[RankingName, ...] = ("bm25", "dense", "fused")
        if host.settings.rerank:
            shown += ("rerank",)
        pending: tuple[RankingName, ...] = ("dense",) if host.dense_pending else ()
        line = ranks_line(run, key, shown, pending)
        chunk = session.chunk_for(key)
        ranks = self.query_one("#ranks", Static)
        if chunk is None:
            ranks.update(Content.styled("no chunk selected", "$text-muted"), layout=False)
            self.query_one(ChunkPreview).show(None)
            return
        marks = []
        if key in session.pinned:
            marks.append(("  📌 pinned", "$success"))
        if key in session.excluded:
            marks.append(("  ✕ excluded", "$error"))
        found = session.secrets.get(chunk.key)
        if found:
            fate = SECRET_FATE.get(host.settings.secrets, "")
            if key in session.admitted and host.settings.secrets == "hold":
                fate = ": let in by you (a holds it back)"
            kinds = ", ".join(found)
            marks.append((f"  ⚠ suspected secret ({kinds}){fate}", "$warning"))
        ranks.update(
            Content.assemble((line, "bold"), ("   " + one_line(chunk.key), "$text-muted"), *marks),
            layout=False,  # one line, fixed height
        )
        theme = self.app.current_theme
        split = host.settings.split_identifiers
        terms = tokenize(run.query if run else "", split_identifiers=split)
        from rich.style import Style

        mark = Style(bgcolor=theme.accent, color=theme.background, bold=True)
        # No background: the preview draws the lines on its own (the theme's surface).
        lines = chunk_lines(chunk, terms, dark=theme.dark, mark=mark)
        why = hit_why(run, key, "rerank" if self.last_list == "rerank" else "fused")
        if why:  # above the code, in the preview's own colours
            gutter = "#75715e" if theme.dark else "#999999"  # the line numbers' colour
            first = Text(no_wrap=True, end="")
            first.append(why, Style(color=gutter, italic=True))  # a span: drawn per span
            lines.insert(0, first)
        self.query_one(ChunkPreview).show(chunk, lines)

    def show_prompt_line(self) -> None:
        """Tokens used against the budget, what went in and what did not: as much of it as
        the width holds (the advice first gives way, it is in the Tuning tab too; then the
        words), never cut in the middle of a figure."""
        session = self.host.session
        packed = session.packed
        budget = self.host.settings.budget
        line = self.query_one("#prompt-line", Static)
        width = self.size.width - 2  # the line's padding
        if packed is None:
            error = session.pack_error
            text = error or ("packing…" if session.last_run is not None else "no prompt yet")
            waiting = Content.assemble(
                ("Prompt ", "bold"),
                (f"budget {budget:,} tokens · ", "$text-muted"),
                (text, "$warning" if error else "$text-muted"),
            )
            advice = Content.styled("   " + session.advice, "$text-muted")
            variants = [waiting + advice, waiting] if session.advice else [waiting]
            line.update(fitting(variants, width), layout=False)  # one line, fixed height
            return
        fraction = packed.tokens / max(budget, 1)
        chunks_in = sum(len(b.chunk_keys) for b in packed.blocks)
        held = sum(1 for d in packed.dropped if d.secrets)  # held back: suspected secrets
        over = sum(1 for d in packed.dropped if d.reason != "excluded" and not d.secrets)
        let_in = sum(1 for b in packed.blocks if b.secrets) if packed.secret_mode == "hold" else 0
        pinned, excluded = len(session.pinned), len(session.excluded)
        template = one_line(session.template_name)  # a path a config file may name
        counts = [
            (True, f"{chunks_in} chunks in", f"{chunks_in} in"),
            (True, f"{over} dropped", f"{over} out"),
            (held, f"⚠ {held} held back (secrets)", f"⚠ {held} held"),
            (let_in, f"⚠ {let_in} let in with secrets", f"⚠ {let_in} let in"),
            (pinned, f"{pinned} pinned", f"{pinned} pinned"),
            (excluded, f"{excluded} excluded", f"{excluded} excl."),
        ]
        long = " · ".join([*(text for shown, text, _ in counts if shown), template])
        short = " · ".join(text for shown, _, text in counts if shown)

        def head(bar: int) -> Content:
            return Content.assemble(
                ("Prompt ", "bold"),
                (f"{packed.tokens:,} / {budget:,} tokens ", ""),
                meter(fraction, bar),
                (f" {fraction:.0%}", ""),
            )

        advice = Content.styled("  │  " + session.advice, "$accent")
        variants = [
            head(12) + Content.styled(" · " + long, "$text-muted"),
            head(8) + Content.styled(" · " + short + " · " + template, "$text-muted"),
            head(8) + Content.styled(" · " + short, "$text-muted"),
            Content.assemble(
                ("Prompt ", "bold"),
                f"{packed.tokens:,}/{budget:,} {fraction:.0%}",
                (" · " + short, "$text-muted"),
            ),
        ]
        if session.advice:
            variants.insert(0, variants[0] + advice)
        line.update(fitting(variants, width), layout=False)  # one line, fixed height

    def on_resize(self) -> None:
        self.show_prompt_line()

    def show_index_progress(self, p: IndexProgressed) -> None:
        stage = INDEX_STAGES.get(p.stage, p.stage)
        detail = f"{p.files_done:,}/{p.files_total:,} files · {p.chunks:,} chunks · {stage}"
        self.index_progress.advance_to(p.files_done, p.files_total, detail)

    def show_embed_progress(self, p: EmbeddingProgressed) -> None:
        # "windows", as `coderag status` and a search's note count them
        what = "static first pass" if p.first_pass else "model"
        detail = f"{p.done:,}/{p.total:,} windows ({what})"
        self.embed_progress.advance_to(p.done, p.total, detail)

    def set_code_mode(self, *, code: bool) -> None:
        self.query_one("#mode-label", Label).update("Code ›" if code else "Ask ›")
        self.query_one(QueryInput).set_code_mode(code=code)
        self.set_class(code, "code-mode")
        self.set_class(False, "change-mode")  # noqa: FBT003 (Textual's signature)
        self.query_one(QueryInput).focus()

    def show_asked(self, ask: Ask, described: str) -> None:
        """The query bar says what the rankings answer: the words asked, the FILE:LINE in
        code mode, or (`Diff ›`) the change reviewed, in words."""
        query = self.query_one(QueryInput)
        label = self.query_one("#mode-label", Label)
        review = ask.diff is not None
        self.set_class(review, "change-mode")
        if review:
            label.update("Diff ›")
            query.placeholder = f"{described} — or type a question"
            query.value = ""
            return
        code = self.host.session.code_mode
        label.update("Code ›" if code else "Ask ›")
        query.set_code_mode(code=code)
        if not query.has_focus or not query.value:  # never over what the user is typing
            query.value = query.shown(ask.text)

    # ------------------------------------------------------------------ events
    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        text = QueryInput.query_text(event.value).strip()
        if not text:
            return
        self.query_one(QueryInput).remember(text)
        if self.has_class("change-mode"):  # a question now, not the change
            self.show_asked(Ask(text, location=self.host.session.code_mode), "")
        self.host.search(text)

    @on(RankingColumn.ChunkHighlighted)
    def _chunk_highlighted(self, event: RankingColumn.ChunkHighlighted) -> None:
        if event.key == self.host.session.selected_key:
            return
        self.host.select(event.key)
        self.show_selection()

    def focused_ranking(self) -> RankingName | None:
        """The list the user is in: the one focused last (the query input may have focus now)."""
        return self.last_list

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        for name in RANKING_NAMES:
            if event.widget is self.board.column(name).table:
                was = self.last_list
                self.last_list = name
                if (was == "rerank") != (name == "rerank"):
                    self.show_selection()  # the preview's why: the reranked list's or fused

    def action_focus_query(self) -> None:
        """Focus the query at once (not after a refresh, as `focus()` does): the app hands
        the next key to whatever is focused when it reads it. In the query, `/` is typed."""
        query = self.query_one(QueryInput)
        if self.focused is query:
            raise SkipAction()
        self.tuning.revert()  # a number typed but not entered is dropped, as with Esc
        self.set_focus(query)

    def action_leave_tuning(self) -> None:
        """Esc in Tuning: drop a number not yet entered and go back to the list the user
        came from (the panel gives the preview its place back where `t` took it)."""
        self.tuning.revert()
        if self._side_for_tuning:
            self._side_for_tuning = False
            if self.side_shown:
                self.action_toggle_side()
        column = self.board.column(self.last_list) if self.last_list else None
        if column is not None and column.display and column.keys:
            self.set_focus(column.table)
        elif not self.action_focus_results():
            self.set_focus(self.query_one(QueryInput))

    def action_focus_column(self, name: RankingName) -> None:
        column = self.board.column(name)
        if column.display and column.keys:
            column.table.focus()
            return
        # Every key answers: say why this list has nothing to jump to, and how to fill it.
        run = self.host.session.last_run
        title = TITLES.get(name, name)
        if name == "rerank" and not self.host.settings.rerank:
            why = "rerank is off: turn it on in the Tuning tab or with --rerank."
        elif run is None:
            why = "no search yet: type a question and press Enter."
        else:
            why = run.rankings[name].reason or "it has no matches for this query."
        self.app.notify(f"The {title} list is empty — {why}", severity="warning", markup=False)

    def action_focus_results(self) -> bool:
        """Focus the list the prompt is packed from (reranked, else fused, else BM25); False
        when no list has rows yet."""
        for name in ("rerank", "fused", "bm25"):
            column = self.board.column(name)
            if column.display and column.keys:
                column.table.focus()
                return True
        return False

    def action_focus_tuning(self) -> None:
        self.query_one(TabbedContent).active = "tab-tuning"
        if not self.side_shown:
            self.action_toggle_side()
            self._side_for_tuning = True  # Esc gives the preview its place back
        # The panel shows after the next refresh; focus then, or focus finds it hidden.
        self.call_after_refresh(self.query_one("#tune-chunking").focus)

    def action_focus_latency(self) -> None:
        """The Latency tab, in the side panel's place where `t` put Tuning (or shown where it
        was hidden, as `t` does)."""
        self.query_one(TabbedContent).active = "tab-latency"
        if not self.side_shown:
            self.action_toggle_side()
            self._side_for_tuning = True  # Esc gives the preview its place back

    def action_toggle_scores(self) -> None:
        self.board.toggle_scores()

    @property
    def side_shown(self) -> bool:
        """Whether the latency and tuning panel is on screen: by default on wide screens only,
        `s` inverts that."""
        return self.has_class("-narrow") == self.has_class("side-toggled")

    def action_toggle_side(self) -> None:
        self._side_for_tuning = False  # the user's own choice stays
        self.toggle_class("side-toggled")

    def action_zoom(self) -> None:
        """Maximise the focused pane (a whole ranking column, the preview); again restores."""
        if self.maximized is not None:
            self.minimize()
        elif self.focused is None or not self.maximize(self.focused):
            self.app.notify(
                "Nothing to zoom: move to a ranking or the preview first (1–4, tab).",
                severity="warning",
            )
