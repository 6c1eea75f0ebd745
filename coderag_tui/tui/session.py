"""The session: what the user is looking at — the last search, the prompt packed from it, the
selected chunk, pins, exclusions and template — and the small rules between them.

The app owns one and changes it only in message handlers and actions; screens read it.
Nothing here imports Textual.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coderag_tui.core.engine import (
    DIFF_TASK,
    Dense,
    PromptRequest,
    PromptResult,
    Rerank,
    model_label,
    search_depth,
)
from coderag_tui.core.records import Chunk, Origin, PackedPrompt, RankingName, SearchRun
from coderag_tui.settings import Settings

TEMPLATES = ("markdown", "xml")
DENSE_BUILDING = "the dense index is being built — BM25 and fusion work meanwhile."
RERANK_LOADING = "the reranker is loading — the column fills in when ready."


@dataclass(frozen=True)
class Ask:
    """A search to run: a query (with where its lines come from, for code-to-code), or with
    `location` a FILE:LINE typed in code mode whose lines are read first."""

    text: str
    origin: Origin | None = None
    location: bool = False
    fresh: bool = True  # asked by the user (False: the same search run again)
    diff: str | None = None  # a REF: the work tree's change against it is the query
    change: str = ""  # the diff a run again keeps for its prompt

    def same_question(self, other: Ask | None) -> bool:
        """Does this ask the question `other` asked (the same words, FILE:LINE or change)?"""
        return other is not None and (self.text, self.location, self.diff) == (
            other.text,
            other.location,
            other.diff,
        )


@dataclass
class Session:
    """The last search and its prompt, and what the user chose to do with them."""

    template_name: str
    code_mode: bool = False
    serial: int = 0  # of the latest search: results and prompts of older ones are dropped
    pending: Ask | None = None  # asked before the index was ready
    asking: Ask | None = None  # the search running now
    ranked: Ask | None = None  # the search whose rankings are shown (last_run's)
    last_run: SearchRun | None = None
    prompt: PromptResult | None = None
    pack_error: str = ""
    advice: str = ""
    selected_key: str | None = None
    secrets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # kinds by chunk key
    pinned: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    admitted: list[str] = field(default_factory=list)  # let in despite a suspected secret
    change: str = ""  # the diff of the last search when it asked with a change (its prompt's)

    @property
    def packed(self) -> PackedPrompt | None:
        return self.prompt.packed if self.prompt is not None else None

    def start(self, ask: Ask) -> int:
        """A search starts: its serial (the one later messages must carry to count)."""
        self.serial += 1
        self.asking = ask
        return self.serial

    def new_question(self, ask: Ask) -> str:
        """A search the user asked: when it asks another question than the one shown, the
        pins, exclusions and secrets let in of that one are dropped (they were chosen for
        it); what to tell the user ("" when nothing was dropped)."""
        if not ask.fresh or ask.same_question(self.ranked):
            return ""
        dropped = [
            plural(len(marks), word)
            for marks, word in (
                (self.pinned, "pin"),
                (self.excluded, "exclusion"),
                (self.admitted, "secret let in"),
            )
            if marks
        ]
        self.pinned, self.excluded, self.admitted = [], [], []
        if not dropped:
            return ""
        return f"A new question: the {', '.join(dropped)} of the last one no longer apply."

    def again(self) -> Ask | None:
        """The search to repeat after a new stage or setting: the running one, else the last
        that ran (as it ran: a code-mode input that failed is never repeated as a query; a
        change is read again, so a change reverted meanwhile is not reviewed any more)."""
        if self.asking is not None:
            return self.asking
        if self.ranked is not None and self.ranked.diff is not None:
            return Ask("", diff=self.ranked.diff, fresh=False)
        if self.last_run is not None:
            return Ask(self.last_run.query, self.last_run.origin, fresh=False, change=self.change)
        return None

    def forget_run(self) -> None:
        """The rankings shown answer a question that is gone (a change reverted): drop them,
        their prompt and what was chosen for them."""
        self.ranked = self.last_run = self.prompt = None
        self.pack_error, self.change, self.selected_key = "", "", None
        self.pinned, self.excluded, self.admitted = [], [], []

    def finished(
        self, run: SearchRun, focused: RankingName | None = None, change: str = ""
    ) -> None:
        """A search's rankings arrived (`change`: the diff it asked with). A new question
        selects the #1 of the focused list (else of the final one); the same search run again
        keeps the selection it still lists."""
        fresh = self.asking is None or self.asking.fresh
        self.change = change
        if self.asking is not None and (self.asking.fresh or self.ranked is None):
            self.ranked = self.asking  # a run again answers the question the user asked
        self.asking = None
        self.last_run = run
        self.prompt = None  # until its prompt is packed
        self.pack_error = ""
        keys = {h.chunk.key for r in run.rankings.values() for h in r.hits}
        if fresh or self.selected_key not in keys:
            ranking = run.rankings.get(focused) if focused is not None else None
            usable = ranking is not None and ranking.available and bool(ranking.hits)
            hits = ranking.hits if ranking is not None and usable else run.final.hits
            self.selected_key = hits[0].chunk.key if hits else None

    def request(self, task: str) -> PromptRequest:
        """What to pack for the last search: with a change, the review task and the diff."""
        return PromptRequest(
            DIFF_TASK if self.change else task,
            tuple(self.pinned),
            tuple(self.excluded),
            self.template_name,
            admitted=tuple(self.admitted),
            change=self.change,
        )

    def run_to_pack(self, settings: Settings) -> SearchRun | None:
        """The shallowest run deep enough for the budget: the search shown, or the deeper one
        the last prompt needed (else the shown one, and the engine searches deeper)."""
        last = self.last_run
        runs = [r for r in (last, self.prompt.run if self.prompt else None) if r is not None]
        deep = [r for r in runs if r.depth >= search_depth(settings)]
        return min(deep, key=lambda r: r.depth, default=last)

    def toggle_pin(self, key: str) -> str:
        """Pin a chunk so it goes first in the prompt (or unpin it); what to tell the user."""
        if key in self.pinned:
            self.pinned.remove(key)
            return f"Unpinned {key}"
        self.pinned.append(key)
        if key in self.excluded:
            self.excluded.remove(key)
        return f"Pinned {key}: it goes first in the prompt."

    def toggle_exclude(self, key: str) -> str:
        """Keep a chunk out of the prompt (or let it in again); what to tell the user."""
        if key in self.excluded:
            self.excluded.remove(key)
            return f"{key} may be included again."
        self.excluded.append(key)
        if key in self.pinned:
            self.pinned.remove(key)
        return f"Excluded {key}: it never goes into the prompt."

    def toggle_admit(self, key: str) -> str:
        """Let a chunk with a suspected secret into the prompt as it is (or hold it back
        again); what to tell the user."""
        kinds = ", ".join(self.secrets.get(key, ()))
        if key in self.admitted:
            self.admitted.remove(key)
            return f"{key} is held back again ({kinds})."
        if not kinds:
            return f"{key} holds no suspected secret: nothing to let in."
        self.admitted.append(key)
        return f"Let {key} in as it is: it holds a suspected secret ({kinds})."

    def carry_marks(self, chunks: Sequence[Chunk]) -> str:
        """The chunks changed (another chunking, a re-index): every pin and exclusion moves
        to the new chunks that hold any of its lines, so what the user marked stays marked;
        where a new chunk holds lines of both, the pin wins. What to tell the user ("" when
        every mark kept its chunk)."""
        marks = {key: parse_key(key) for key in (*self.pinned, *self.excluded)}
        paths = {mark[0] for mark in marks.values() if mark is not None}
        spans = file_spans(chunks, paths)

        def moved(keys: list[str]) -> tuple[list[str], list[str]]:
            """(the new keys, in the marks' order; the marks no chunk holds lines of now)."""
            new: dict[str, None] = {}
            gone = []
            for key in keys:
                mark = marks[key]
                found = [] if mark is None else covering(spans.get(mark[0], ()), mark)
                new.update(dict.fromkeys(found))
                if not found:
                    gone.append(key)
            return list(new), gone

        pinned, pins_gone = moved(self.pinned)
        excluded, exclusions_gone = moved(self.excluded)
        excluded = [key for key in excluded if key not in pinned]
        if (pinned, excluded) == (self.pinned, self.excluded):
            return ""
        counts = []
        for old, new, word, verb in (
            (self.pinned, pinned, "pin", "pinned"),
            (self.excluded, excluded, "exclusion", "excluded"),
        ):
            if old:
                counts.append(f"{plural(len(old), word)} → {plural(len(new), 'chunk')} {verb}")
        self.pinned, self.excluded = pinned, excluded
        text = (
            "Chunks changed: pins and exclusions moved to the new chunks of the same lines "
            f"({', '.join(counts)})."
        )
        gone = pins_gone + exclusions_gone
        if gone:
            text += f" No chunk holds the lines of {', '.join(gone)} now: dropped."
        return text

    def next_template(self, own: str) -> str:
        """Switch to the next template (the bundled ones, then the user's own file)."""
        names = list(TEMPLATES)
        if own not in names:
            names.append(own)
        current = names.index(self.template_name) if self.template_name in names else -1
        self.template_name = names[(current + 1) % len(names)]
        return self.template_name

    def chunk_for(self, key: str | None) -> Chunk | None:
        """The chunk with this key in the last search (any ranking)."""
        if key is None or self.last_run is None:
            return None
        for ranking in self.last_run.rankings.values():
            for hit in ranking.hits:
                if hit.chunk.key == key:
                    return hit.chunk
        return None


Mark = tuple[str, int, int]  # the file and first and last line of a marked chunk


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def parse_key(key: str) -> Mark | None:
    """`shop/cart.py:13-24` -> ("shop/cart.py", 13, 24); None for anything else."""
    path, _, lines = key.rpartition(":")
    start, _, end = lines.partition("-")
    if not path or not start.isdigit() or not end.isdigit():
        return None
    return path, int(start), int(end)


def file_spans(chunks: Sequence[Chunk], paths: Collection[str]) -> dict[str, list[Mark]]:
    """The chunks of these files as (path, start, end), in file order, read without their
    texts (a ChunkList knows every chunk's lines without asking the store)."""
    from coderag_tui.core.index.chunk_list import ChunkList

    spans: dict[str, list[Mark]] = {path: [] for path in paths}
    if isinstance(chunks, ChunkList):
        for path in paths:
            if path not in chunks.paths:
                continue
            fid = chunks.paths.index(path)
            first, last = int(chunks.file_starts[fid]), int(chunks.file_starts[fid + 1])
            for i in range(first, last):
                spans[path].append((path, int(chunks.starts[i]), int(chunks.ends[i])))
        return spans
    for chunk in chunks:
        if chunk.path in spans:
            spans[chunk.path].append((chunk.path, chunk.start_line, chunk.end_line))
    return spans


def covering(spans: Iterable[Mark], mark: Mark) -> list[str]:
    """The keys of the chunks that hold any line of the marked chunk."""
    _, start, end = mark
    return [f"{path}:{s}-{e}" for path, s, e in spans if s <= end and e >= start]


def model_title(name: str) -> str:
    """What people call an embedding model, from its key: `all-MiniLM-L6-v2` for the
    packaged model in every runtime and precision, `static MiniLM` for the first pass."""
    return model_label(name, variant=False)


def dense_title(dense: Dense) -> str:
    """The model of a dense stage as the Dense column and the top bar name it ("" if none)."""
    return model_title(dense.embedder.name) if dense.embedder is not None else ""


def short_model(label: str) -> str:
    """What people call a model in a progress figure: `all-MiniLM-L6-v2` -> `MiniLM`."""
    parts = [p for p in label.split("-") if p and p.lower() not in ("all", "paraphrase")]
    return parts[0] if parts else label


def why_line(why: tuple[tuple[str, float], ...]) -> str:
    """A fused hit's score as the sum it is: `why: rrf 0.82 · definition: Cart +0.40 · role:
    test -0.41` (the base score first, then each signal's signed contribution)."""
    if not why:
        return ""
    (base, score), *signals = why
    parts = [f"{base} {score:.2f}", *(f"{label} {value:+.2f}" for label, value in signals)]
    return "why: " + " · ".join(parts)


def column_hints(
    dense: Dense | None, rerank: Rerank | None, *, ready: bool
) -> dict[RankingName, str]:
    """What each ranking column says before the first search, or why its stage is off."""
    hint = "type a question and press Enter" if ready else "indexing… BM25 is ready in a moment"
    dense_hint = (
        hint
        if dense is not None and dense.available
        else (dense.reason if dense is not None else DENSE_BUILDING)
    )
    rerank_hint = (
        hint
        if rerank is not None and rerank.reranker is not None
        else (rerank.reason if rerank is not None else "the reranker is loading.")
    )
    return {"bm25": hint, "dense": dense_hint, "fused": hint, "rerank": rerank_hint}


_FUSED_FROM = {"bm25": "BM25", "rrf": "RRF", "weighted": "weighted"}  # SearchRun.fused_from


def fused_labels(run: SearchRun, settings: Settings) -> tuple[str, ...]:
    """What the fused list of `run` is made of, longest first: `RRF + signals`, `RRF`."""
    from coderag_tui.core.rank.signals import signals_on

    dense = run.rankings.get("dense")
    if run.fused_from in _FUSED_FROM:  # issue text is fused without dense (`issue_dense_weight`)
        base = _FUSED_FROM[run.fused_from]
    elif dense is None or not dense.available:
        base = "BM25"
    elif settings.fusion == "weighted":
        base = "weighted"
    else:
        base = "RRF"
    if signals_on(settings) and run.query.strip():
        return (f"{base} + signals", base)
    return (base,)
