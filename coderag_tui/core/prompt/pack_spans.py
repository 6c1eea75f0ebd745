"""Packing by evidence: at each step, the span that adds the most expected answer per token,
whether that deepens a file already in or brings in the next one; nothing below the
relevance floor.

Every relevant hit offers its match at six depths (`core.prompt.spans`): a glimpse, a compact
span, its anchor's innermost definition, a lean span, the definition that stands for the
chunk, and the chunk whole (the deeper ones once the glimpse is taken, or all at once when the
glimpse shows nothing). An offer is worth what it adds:

- the file's first code in the prompt is worth `FILE_VALUE` (a prompt should name the right
  files);
- each line it adds is worth that line's share of the evidence of its file: each of the
  file's relevant hits spreads `UNIT_VALUE` over the innermost definitions of its matched
  lines, `CHUNK_VALUE` over its chunk and `MATCH_VALUE` over its matched statements (a
  file's second hit counting half as much as its first, its third a third, and so on); the
  lines the query points at (`SpanInputs.pointed`: a stack frame's line, a quoted message)
  spread `POINTED_VALUE`, and the lines above the first definition `HEADER_VALUE`;

times the file's chance of being an answer (a logistic of where its score lies between the
best file's and the `CHANCE_FILES`-th). The best file comes in whole first when that takes at
most `WHOLE_SHARE` of the room (a small file is read whole, not in glimpses). Offers are then
taken by worth per token (a new block priced `BLOCK_COST` tokens more) while they fit; a new
file worth less per token than `RELEVANCE_ENDS` of the best offer taken stays out, whatever
room is left. So the best file is deepened where its definitions matched while a glimpse of
the next file is worth less per token; every budget follows the same rule.

One file's spans are one block under one header (lines left out shown as one elision line).
A hit that no ranking lists in its top `floor_rank`, or whose score is below `floor_share` of
the best, is never packed; a data file (JSON, YAML, a lock file, a snapshot, a fixture) only
when two lists rank it near the top (`data_keys`). What room is left at the end, up to
`OUTLINE_SHARE` of the budget, goes to an outline: the signatures of the matched definitions
of the next relevant files, so the model sees where their code is. Lines are priced one by
one and the text as a whole: a text over the budget is packed again in less room.

Secrets and the user's choices are kept as in `pack.pack`: a hit touching a suspected secret
is held back (reason "secret") unless admitted, and in "hold" mode the secret's lines are
never shown by any other hit's span; excluded hits' lines are never shown either.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from coderag_tui.core.index.languages import is_data_file
from coderag_tui.core.index.outline import Unit
from coderag_tui.core.index.secret_scan import kinds_in, redact_lines
from coderag_tui.core.prompt.pack import (
    EXCLUDED,
    OVER_BUDGET,
    SECRET,
    Candidate,
    PackInputs,
    fixed_tokens,
    held_back,
    order_hits,
    split_lines,
)
from coderag_tui.core.prompt.spans import (
    ELISION,
    EMPTY,
    FileFacts,
    FileView,
    Focus,
    QueryMatch,
    Span,
    chunk_span,
    compact_span,
    cost,
    focus,
    glimpse_span,
    lean_span,
    outline_span,
    prefix_span,
    readability,
    settle,
    span_lines,
    span_of,
    statement,
    text_of,
    unit_span,
    without,
)
from coderag_tui.core.prompt.tokens import TokenCounter
from coderag_tui.core.records import (
    DroppedChunk,
    Hit,
    PackAccount,
    PackedBlock,
    PackedPrompt,
    Ranking,
    RankingName,
    SearchRun,
    SecretFinding,
)

BELOW_FLOOR = "below the relevance floor"
PAST_RELEVANCE = "worth too little beside the best"  # a new file RELEVANCE_ENDS kept out
DATA_ALONE = "a data file only one list ranks near the top"
OUTLINED = "outline only: its signatures are in"
STOP_BUDGET = "the budget is full"
STOP_RELEVANCE = "relevance ended"
STOP_HITS = "no more hits"

FILE_VALUE = 3.0  # a file's first code in the prompt
UNIT_VALUE = 0.6  # spread over the definition holding a hit's match
CHUNK_VALUE = 0.2  # spread over a hit's chunk
MATCH_VALUE = 0.3  # spread over a hit's matched statements
HEADER_VALUE = 0.05  # spread over a file's lines above its first definition
POINTED_VALUE = 1.0  # spread over the statements and definitions the query points at
CHANCE_BASE = -4.5  # a file's chance of being an answer: logistic of CHANCE_BASE + ...
CHANCE_SLOPE = 4.6  # ... CHANCE_SLOPE * its score's place between the best and the floor
CHANCE_FILES = 30  # the floor: the best score of the CHANCE_FILES-th file
RELEVANCE_ENDS = (
    0.02  # a new file worth less per token than this share of the first offer stays out
)
BLOCK_COST = 60  # tokens of a reader's attention a new block costs on top of its own
REPACKS = 2  # times a prompt whose text is over the budget is packed again in less room
REPACK_MARGIN = 8  # tokens less room than the text was over, each time
GLIMPSE_CAP = 120  # tokens a glimpse takes at most
WHOLE_SHARE = 0.4  # the best file is shown whole first when that takes at most this of the room
COMPACT_SHARE = 8  # a compact span takes at most 1/COMPACT_SHARE of the room ...
MIN_COMPACT = 60  # ... but never less than this
MAX_COMPACT = 300  # ... nor more than this
OUTLINE_SHARE = 0.05  # of the budget the outline may take at most
DATA_RANK = 10  # a data file needs two lists that rank it this high ...
DATA_RANK_ALONE = 3  # ... or, with one list, the packed list ranking it this high
MAX_POINTED = 12  # lines the query points at that a file's spans widen at most
KINDS = ("glimpse", "compact", "inner", "lean", "unit", "chunk")


@dataclass(frozen=True, kw_only=True)
class SpanInputs:
    """What packing by evidence needs beyond `PackInputs`: the query's words (to find each
    chunk's match), what is known of a file (`facts(path, text, language)`: its definitions,
    statements and line prices, kept between prompts by the caller) and which hits may be
    packed (`relevant`: chunk keys above the relevance floor, None: every hit; `data`: the
    data files' chunks two lists rank near the top, None: every one). `pointed(path, lines,
    language)` gives the lines of a file the query points at (a stack frame's line, a quoted
    message's string literal, a named definition) with their weights."""

    match: QueryMatch
    facts: Callable[[str, str | None, str | None], FileFacts]
    relevant: frozenset[str] | None = None
    data: frozenset[str] | None = None
    pointed: Callable[[str, Sequence[str], str | None], Mapping[int, float]] | None = None


@dataclass
class _File:
    """One file's place in the prompt: its relevant hits (in rank order) and their matches,
    the evidence per line (prefix sums), the lines shown, the hits that put them there."""

    view: FileView
    rank: int
    weight: float
    hits: list[Candidate]
    foci: list[Focus]
    evidence: list[float]
    lines: Span = EMPTY
    members: list[Candidate] = field(default_factory=list)
    outline: bool = False

    def worth(self, span: Span) -> float:
        """The evidence `span`'s lines carry."""
        ev = self.evidence
        return sum(ev[b] - ev[a - 1] for a, b in span)


class _Views:
    """Each file's `FileView`, built once: its lines (secrets masked in "redact" mode), its
    definitions, the query's match, and the lines it may never show (its licence preamble
    among them)."""

    def __init__(
        self,
        inputs: PackInputs,
        how: SpanInputs,
        findings: Mapping[str, Sequence[SecretFinding]],
        forbidden: Mapping[str, Span],
    ) -> None:
        self.inputs, self.how, self.findings, self.forbidden = inputs, how, findings, forbidden
        self.views: dict[str, FileView] = {}

    def of(self, cand: Candidate) -> FileView:
        chunk = cand.chunk
        view = self.views.get(chunk.path)
        if view is not None:
            return view
        file_text = self.inputs.file_text
        text = file_text(chunk.path) if file_text is not None else None
        if text is None or chunk.end_line > len(lines := split_lines(text)):
            # The file is not readable as indexed: the chunk's own text stands for it.
            lines = [""] * (chunk.start_line - 1) + split_lines(chunk.text)
            text = None
        if self.inputs.secret_mode == "redact" and chunk.path in self.findings:
            lines = redact_lines(lines, 1, self.findings[chunk.path])
        facts = self.how.facts(chunk.path, text, chunk.language)
        forbidden = self.forbidden.get(chunk.path, EMPTY)
        if facts.preamble:  # a licence notice is never shown
            forbidden = span_of([*forbidden, (1, facts.preamble)])
        view = FileView(
            path=chunk.path,
            language=chunk.language,
            lines=lines,
            facts=facts,
            match=self.how.match,
            count=self.inputs.counter.count_each,
            forbidden=forbidden,
        )
        self.views[chunk.path] = view
        return view


def _forbidden(
    cands: Sequence[Candidate],
    findings: Mapping[str, Sequence[SecretFinding]],
    excluded: set[str],
    admitted: set[str],
    secret_mode: str,
) -> dict[str, Span]:
    """Per file, the lines no span may show: excluded chunks', and in "hold" mode every
    suspected secret's lines outside the chunks the user let in."""

    def chunks_of(keys: set[str]) -> dict[str, list[tuple[int, int]]]:
        out: dict[str, list[tuple[int, int]]] = {}
        for cand in cands:
            if cand.key in keys:
                out.setdefault(cand.chunk.path, []).append(
                    (cand.chunk.start_line, cand.chunk.end_line)
                )
        return out

    ranges = chunks_of(excluded)
    if secret_mode == "hold":
        let_in = chunks_of(admitted)
        for path, found in findings.items():
            secret = without(
                span_of((f.line, f.end_line) for f in found), span_of(let_in.get(path, ()))
            )
            ranges.setdefault(path, []).extend(secret)
    return {path: span_of(found) for path, found in ranges.items()}


def _chances(packable: Sequence[Candidate], hits: Sequence[Hit]) -> dict[str, float]:
    """Each file's chance of being an answer, from where its best score lies between the best
    file's and the `CHANCE_FILES`-th file's (a logistic fitted on the dev sets: rank adds
    little once the score's place is known)."""
    score = {h.chunk.key: h.score for h in hits}
    best: dict[str, float] = {}
    for cand in packable:
        best.setdefault(cand.chunk.path, score.get(cand.key, 0.0))
    values = list(best.values())
    if len(values) < 2:
        return {path: 1.0 for path in best}
    top, floor = values[0], min(values[:CHANCE_FILES])
    span = top - floor

    def chance(score: float) -> float:
        place = (score - floor) / span if span > 0 else 1.0
        return 1.0 / (1.0 + math.exp(-(CHANCE_BASE + CHANCE_SLOPE * place)))

    return {path: chance(s) for path, s in best.items()}


def _point(f: _File, pointed: Mapping[int, float]) -> None:
    """Give the file a hit of its own for each place the query points at: its best hit with
    that place's lines as its match (so it offers their statements and definitions like any
    hit). A place is the innermost definition holding the lines (outside any, their
    statement), so two frames or links into two functions of one file are two hits, each
    offered on its own; the best place comes first."""
    lines = sorted(pointed, key=lambda n: (-pointed[n], n))[:MAX_POINTED]
    places: dict[tuple[int, int], tuple[Unit | None, list[int]]] = {}
    for line in lines:
        inner = f.view.facts.enclosing(line)
        unit = inner[0] if inner else None
        where = (unit.first, unit.end) if unit is not None else statement(f.view, line)
        places.setdefault(where, (unit, []))[1].append(line)
    best = f.hits[0]
    hits, foci = [], []
    for (start, end), (unit, matched) in places.items():
        hits.append(replace(best, chunk=replace(best.chunk, start_line=start, end_line=end)))
        foci.append(Focus(tuple(matched), matched[0], unit))
    f.hits[:0] = hits
    f.foci[:0] = foci


def _evidence(
    view: FileView,
    hits: Sequence[Candidate],
    foci: Sequence[Focus],
    pointed: Mapping[int, float],
) -> list[float]:
    """Prefix sums of the evidence per line of a file (see the module docstring)."""
    n = view.n_lines
    delta = [0.0] * (n + 2)

    def spread(ranges: Sequence[tuple[int, int]], value: float) -> None:
        ranges = [(max(1, a), min(n, b)) for a, b in ranges if a <= n and b >= 1]
        total = sum(b - a + 1 for a, b in ranges if a <= b)
        if total <= 0:
            return
        each = value / total
        for a, b in ranges:
            if a <= b:
                delta[a] += each
                delta[b + 1] -= each

    for k, (cand, found) in enumerate(zip(hits, foci, strict=True), start=1):
        share = 1.0 / k
        start, end = cand.chunk.start_line, min(cand.chunk.end_line, n)
        spread([(start, end)], share * CHUNK_VALUE)
        if not found.matched:
            unit = found.unit
            region = (unit.first, unit.end) if unit is not None else (start, end)
            spread([region], share * UNIT_VALUE)
            continue
        # The definitions that hold the matched lines, each by the weight of its lines.
        weights = [view.weight(m) for m in found.matched]
        total = sum(weights) or 1.0
        for m, weight in zip(found.matched, weights, strict=True):
            inner = view.facts.enclosing(m)
            region = (inner[0].first, inner[0].end) if inner else statement(view, m)
            spread([region], share * UNIT_VALUE * weight / total)
        spread(span_of(statement(view, m) for m in found.matched), share * MATCH_VALUE)
    total = sum(pointed.values())
    for line, weight in pointed.items():
        inner = view.facts.enclosing(line)
        spread([statement(view, line)], POINTED_VALUE * weight / total)
        if inner:
            spread([(inner[0].first, inner[0].end)], POINTED_VALUE * weight / total)
    first_unit = min((u.first for u in view.units), default=1)
    if first_unit > view.facts.preamble + 1:  # the imports and declarations above the first one
        spread([(view.facts.preamble + 1, first_unit - 1)], HEADER_VALUE)
    out = [0.0] * (n + 1)
    level = 0.0
    for line in range(1, n + 1):
        level += delta[line]
        out[line] = out[line - 1] + level
    return out


def _offer_span(kind: str, f: _File, i: int, cap: int, elision: int) -> Span:
    """The span offer `kind` of the file's `i`-th hit puts in (see `core.prompt.spans`)."""
    view, chunk, found = f.view, f.hits[i].chunk, f.foci[i]
    start, end = chunk.start_line, chunk.end_line
    if kind == "glimpse":
        return glimpse_span(view, start, end, found, min(cap, GLIMPSE_CAP), elision)
    if kind == "compact":
        return compact_span(view, start, end, found, cap, elision)
    if kind == "inner":
        inner = view.facts.enclosing(found.anchor) if found.anchor is not None else []
        return unit_span(view, inner[0]) if inner and inner[0] != found.unit else EMPTY
    if kind == "lean":
        return lean_span(view, start, end, found)
    if kind == "unit":
        return unit_span(view, found.unit) if found.unit is not None else EMPTY
    return chunk_span(view, start, end)


def pack_spans(hits: Sequence[Hit], inputs: PackInputs, how: SpanInputs) -> PackedPrompt:
    """The prompt for `inputs.task`: the relevant hits' spans, by worth per token, within
    the budget (see the module docstring). Raises BudgetTooSmall when the template and the
    task alone exceed the budget."""
    budget, counter = inputs.budget, inputs.counter
    fixed = fixed_tokens(inputs)
    packing = _Packing(hits, inputs, how)
    # Lines are priced one by one, the text as a whole: when the rendered text is over the
    # budget, pack again in less room (by what it was over) rather than drop a whole block.
    room = budget - fixed
    for _ in range(REPACKS + 1):
        ordered, stopped = packing.fill(room)
        blocks, text, total = _render(ordered, inputs, packing.findings)
        if total <= budget:
            break
        room -= total - budget + REPACK_MARGIN
        stopped = STOP_BUDGET
    while total > budget and ordered:  # the last resort: the text must fit
        ordered.pop()
        blocks, text, total = _render(ordered, inputs, packing.findings)
    left_out = list(packing.left_out)
    in_prompt = {m.key for f in ordered if not f.outline for m in f.members}
    outlined = {f.view.path for f in ordered if f.outline}
    shown_paths = {f.view.path for f in ordered}
    for cand in packing.packable:
        if cand.key not in in_prompt:
            path = cand.chunk.path
            if path in outlined:
                reason = OUTLINED
            elif path in packing.ended and path not in shown_paths:
                reason = PAST_RELEVANCE
            else:
                reason = OVER_BUDGET
            left_out.append((cand, reason, ()))
    dropped = [*packing.missing, *_dropped(left_out, counter)]
    dropped.sort(key=lambda d: (d.reason != EXCLUDED, d.rank, d.key))
    code_files = [f for f in ordered if not f.outline]
    whole = counter.count_many(["\n".join(f.view.lines) for f in code_files])
    return PackedPrompt(
        text=text,
        tokens=total,
        budget=budget,
        encoding=counter.encoding,
        exact=counter.exact,
        blocks=blocks,
        dropped=tuple(dropped),
        secret_mode=inputs.secret_mode,
        stopped=stopped,
        files_tokens=sum(whole),
        account=_account(ordered, blocks),
    )


class _Packing:
    """One prompt's packing: the hits that may be packed, each file's view, evidence and
    hits, and `fill(room)`, which packs them into that many tokens of code."""

    def __init__(self, hits: Sequence[Hit], inputs: PackInputs, how: SpanInputs) -> None:
        self.inputs, self.how = inputs, how
        counter = inputs.counter
        self.findings = {path: found for path, found in (inputs.secrets or {}).items() if found}
        cands, self.missing = order_hits(hits, inputs.pinned)
        excluded, admitted = set(inputs.excluded), set(inputs.admitted)
        self.pinned = set(inputs.pinned)
        held = (
            held_back(cands, self.findings, excluded, inputs.admitted)
            if inputs.secret_mode == "hold"
            else {}
        )
        forbidden = _forbidden(cands, self.findings, excluded, admitted, inputs.secret_mode)
        self.views = _Views(inputs, how, self.findings, forbidden)
        self.separator = max(1, counter.count("\n\n"))
        self.elision = counter.count(ELISION + "\n")
        self.headers: dict[str, int] = {}
        self.packable, self.left_out = _sort_out(cands, excluded, held, how, self.pinned)
        self.files: dict[str, _File] = {}
        self.ended: set[str] = set()  # files whose first block was worth too little
        chance = _chances([c for c in self.packable if c.key not in self.pinned], hits)
        for cand in self.packable:
            if cand.key in self.pinned:
                continue
            f = self.files.get(cand.chunk.path)
            if f is None:
                rank = len(self.files) + 1
                weight = chance[cand.chunk.path]
                f = self.files[cand.chunk.path] = _File(
                    self.views.of(cand), rank, weight, [], [], []
                )
            f.hits.append(cand)
            f.foci.append(focus(f.view, cand.chunk.start_line, cand.chunk.end_line))
        for f in self.files.values():
            view = f.view
            pointed = how.pointed(view.path, view.lines, view.language) if how.pointed else {}
            f.evidence = _evidence(view, f.hits, f.foci, pointed)
            if pointed:
                _point(f, pointed)
        self.by_rank = {f.rank: f for f in self.files.values()}

    def header(self, view: FileView) -> int:
        """Tokens a block of this file adds besides its code: its header, fences, separator."""
        found = self.headers.get(view.path)
        if found is None:
            empty = self.inputs.template.render_block(
                path=view.path, start=1, end=1, language=view.language, code=""
            )
            found = self.headers[view.path] = self.inputs.counter.count(empty) + self.separator
        return found

    def worth(self, f: _File, span: Span) -> tuple[float, int, Span]:
        """What adding `span` to `f` is worth and costs now, and the merged span."""
        merged = settle(f.view, [*f.lines, *span])
        if merged == f.lines:
            return 0.0, 0, merged
        new = without(merged, f.lines)
        value = f.worth(new) + (FILE_VALUE if not f.lines else 0.0)
        delta = cost(f.view, merged, self.elision) - cost(f.view, f.lines, self.elision)
        delta += self.header(f.view) if not f.lines else 0
        return f.weight * value, max(1, delta), merged

    def fill(self, room: int) -> tuple[list[_File], str]:
        """Pack `room` tokens of code: the user's pins first, then offers by worth per token,
        then an outline with what room is left. The files shown (in prompt order) and why
        packing stopped."""
        for f in self.files.values():
            f.lines, f.members, f.outline = EMPTY, [], False
        self.ended = set()
        shown: dict[str, _File] = {}
        pins: dict[str, int] = {}  # the files of the user's pins, in pin order: first
        room, skipped = self._pin(room, shown, pins)
        room, full, ended = self._take(room, shown)
        self._outline(room, shown)
        # The budget stopped packing when something worth taking did not fit; else relevance.
        if skipped or full:
            stopped = STOP_BUDGET
        else:
            stopped = STOP_RELEVANCE if ended or self.how.relevant is not None else STOP_HITS
        # Pinned files first, then code by its file's rank (most relevant first), outlines.
        ordered = sorted(
            shown.values(),
            key=lambda f: (f.view.path not in pins, f.outline, pins.get(f.view.path, f.rank)),
        )
        return ordered, stopped

    def _pin(self, room: int, shown: dict[str, _File], pins: dict[str, int]) -> tuple[int, bool]:
        """The user's pins, whole as far as they fit, in their order; the room left and
        whether one did not fit."""
        skipped = False
        for cand in self.packable:
            if cand.key not in self.pinned:
                continue
            view = self.views.of(cand)
            f = shown.get(cand.chunk.path) or self.files.get(cand.chunk.path)
            if f is None:
                f = _File(view, 0, 1.0, [], [], [0.0] * (view.n_lines + 1))
            current = f.lines
            cap = max(0, room - (0 if current else self.header(view)))
            span = prefix_span(view, cand.chunk.start_line, cand.chunk.end_line, cap, self.elision)
            merged = settle(view, [*current, *span])
            delta = cost(view, merged, self.elision) - cost(view, current, self.elision)
            delta += 0 if current else self.header(view)
            if delta > room:
                skipped = True
                continue
            room -= delta
            f.lines = merged
            f.members.append(cand)
            shown[cand.chunk.path] = f
            pins.setdefault(cand.chunk.path, len(pins))
        return room, skipped

    def _take(self, room: int, shown: dict[str, _File]) -> tuple[int, bool, bool]:
        """Offers by worth per token while they fit (`_Offers`). The room left, whether an
        offer worth taking did not fit, and whether a new file fell below relevance."""
        offers = _Offers(self, max(MIN_COMPACT, min(MAX_COMPACT, room // COMPACT_SHARE)))
        for f in self.files.values():
            for i in range(len(f.hits)):
                offers.first(f, i)
        # The worth per token of the best offer taken: relevance ends far below.
        room, best = self._whole_best(room, shown, offers)
        full = ended = False
        while (popped := offers.pop()) is not None:
            f, i, k, value, delta, merged = popped
            cand = f.hits[i]
            if merged != f.lines and value > 0:
                now = offers.density(f, value, delta)
                if not f.lines and now < RELEVANCE_ENDS * best:
                    ended = True  # a new file worth this little per token is not relevant
                    self.ended.add(f.view.path)
                    continue
                if delta > room:
                    full = True  # worth taking, but it does not fit
                    continue
                best = max(best, now)
                room -= delta
                f.lines = merged
                shown[f.view.path] = f
            elif merged != f.lines:
                continue  # lines worth nothing
            if f.lines and cand not in f.members:
                f.members.append(cand)
            if k == offers.firsts[(f.rank, i)]:  # the glimpse: now its deeper kinds
                for deeper in range(k + 1, len(KINDS)):
                    offers.push(f, i, deeper)
        return room, full, ended

    def _whole_best(self, room: int, shown: dict[str, _File], offers: _Offers) -> tuple[int, float]:
        """The best file whole, when that takes at most `WHOLE_SHARE` of the room: the room
        left, and the worth per token relevance is measured from (the best offer's, as if
        it had been taken first; 0 when the file is not taken)."""
        top = self.by_rank.get(1)
        if (
            top is None
            or top.lines
            or not offers.heap
            or _longer_than(top.view, WHOLE_SHARE * room)
        ):
            return room, 0.0
        value, delta, whole = self.worth(top, ((1, top.view.n_lines),))
        if value <= 0 or delta > WHOLE_SHARE * room:
            return room, 0.0
        top.lines = whole
        top.members.extend(top.hits)
        shown[top.view.path] = top
        return room - delta, -offers.heap[0][0]

    def _outline(self, room: int, shown: dict[str, _File]) -> None:
        """What room is left, up to a share of the budget: where the next relevant files'
        matched definitions are."""
        left = min(room, int(self.inputs.budget * OUTLINE_SHARE))
        for f in sorted(self.files.values(), key=lambda f: f.rank):
            if f.view.path in shown:
                continue
            lines = span_of(
                r
                for cand in f.hits
                for r in outline_span(f.view, cand.chunk.start_line, cand.chunk.end_line)
            )
            if not lines:
                continue
            delta = cost(f.view, lines, self.elision) + self.header(f.view)
            if delta <= left:
                left -= delta
                f.lines, f.outline, f.members = lines, True, list(f.hits)
                shown[f.view.path] = f


def _longer_than(view: FileView, tokens: float) -> bool:
    """Whether the file's shown lines surely cost more than `tokens`: each line that is not
    blank costs one at least, so a long file is not priced whole (its first prompt would
    tokenize all of it) only to find it does not fit."""
    most = tokens + span_lines(view.forbidden)  # lines it may not show cost nothing
    count = 0
    for line in view.lines:
        if line.strip():
            count += 1
            if count > most:
                return True
    return False


class _Offers:
    """The offers not taken yet, in a heap by worth per token (a new block weighed
    `BLOCK_COST` tokens more than its own: it costs its reader more than its header). A
    popped offer is priced again against what is in now (an offer is never worth more than
    when it was pushed) and put back when it fell below the next one."""

    def __init__(self, packing: _Packing, compact_cap: int) -> None:
        self.packing, self.compact_cap = packing, compact_cap
        self.heap: list[tuple[float, int, int, int]] = []
        self.spans: dict[tuple[int, int, int], Span] = {}
        self.firsts: dict[tuple[int, int], int] = {}  # each hit's first kind offered

    @staticmethod
    def density(f: _File, value: float, delta: int) -> float:
        return value / (delta + (BLOCK_COST if not f.lines else 0))

    def first(self, f: _File, i: int) -> None:
        """Offer the file's `i`-th hit's glimpse; its deeper kinds are offered once it is
        taken. When the glimpse shows nothing (its match lies inside a long signature, say),
        every kind is offered at once and the densest wins."""
        if self.push(f, i, 0):
            self.firsts[(f.rank, i)] = 0
            return
        self.firsts[(f.rank, i)] = len(KINDS)
        for k in range(1, len(KINDS)):
            self.push(f, i, k)

    def push(self, f: _File, i: int, k: int) -> bool:
        """Offer the `k`-th kind of span of the file's `i`-th hit, if it adds a line."""
        span = _offer_span(KINDS[k], f, i, self.compact_cap, self.packing.elision)
        if not span:
            return False
        value, delta, merged = self.packing.worth(f, span)
        if merged == f.lines:
            return False
        self.spans[(f.rank, i, k)] = span
        heapq.heappush(self.heap, (-self.density(f, value, delta), f.rank, i, k))
        return True

    def pop(self) -> tuple[_File, int, int, float, int, Span] | None:
        """The best offer now: (file, hit, kind, worth, tokens, the merged span)."""
        while self.heap:
            _, rank, i, k = heapq.heappop(self.heap)
            f = self.packing.by_rank[rank]
            value, delta, merged = self.packing.worth(f, self.spans[(rank, i, k)])
            if merged != f.lines and value > 0:
                now = -self.density(f, value, delta)
                if self.heap and now > self.heap[0][0] + 1e-12:
                    heapq.heappush(self.heap, (now, rank, i, k))
                    continue
            return f, i, k, value, delta, merged
        return None


def _account(ordered: Sequence[_File], blocks: Sequence[PackedBlock]) -> PackAccount:
    """What a reader of the prompt cannot use, counted over its code blocks (see
    `spans.readability`), the tokens spent on outlines and on data files."""
    bare = lone = outline = data = 0
    for f, block in zip(ordered, blocks, strict=True):
        if f.outline:
            outline += block.tokens
            continue
        faults = readability(f.view, f.lines)
        bare += faults.bare_signatures
        lone += faults.lone_lines
        if is_data_file(f.view.path, f.view.language):
            data += block.tokens
    return PackAccount(
        bare_signatures=bare, lone_lines=lone, outline_tokens=outline, data_tokens=data
    )


def _sort_out(
    cands: Sequence[Candidate],
    excluded: set[str],
    held: Mapping[str, tuple[str, ...]],
    how: SpanInputs,
    pinned: set[str],
) -> tuple[list[Candidate], list[tuple[Candidate, str, tuple[str, ...]]]]:
    """The hits that may be packed, and the others with why (and the kinds of secret that
    held one back): excluded, a suspected secret, below the relevance floor, or a data file
    only one list ranks near the top."""
    packable: list[Candidate] = []
    left_out: list[tuple[Candidate, str, tuple[str, ...]]] = []
    relevant, data = how.relevant, how.data
    for cand in cands:
        if cand.key in excluded:
            left_out.append((cand, EXCLUDED, ()))
        elif cand.key in held:
            left_out.append((cand, SECRET, held[cand.key]))
        elif cand.key in pinned:
            packable.append(cand)
        elif relevant is not None and cand.key not in relevant:
            left_out.append((cand, BELOW_FLOOR, ()))
        elif (
            data is not None
            and cand.key not in data
            and is_data_file(cand.chunk.path, cand.chunk.language)
        ):
            left_out.append((cand, DATA_ALONE, ()))
        else:
            packable.append(cand)
    return packable, left_out


def _dropped(
    out: list[tuple[Candidate, str, tuple[str, ...]]], counter: TokenCounter
) -> list[DroppedChunk]:
    """The dropped hits with their chunks' tokens (what leaving each out saved), counted in
    one batch."""
    tokens = counter.count_many([cand.chunk.text for cand, _, _ in out]) if out else []
    return [
        DroppedChunk(cand.key, cand.rank, n, reason, kinds)
        for (cand, reason, kinds), n in zip(out, tokens, strict=True)
    ]


def _render(
    ordered: Sequence[_File], inputs: PackInputs, findings: Mapping[str, Sequence[SecretFinding]]
) -> tuple[tuple[PackedBlock, ...], str, int]:
    counter, template = inputs.counter, inputs.template
    rendered: list[str] = []
    blocks: list[PackedBlock] = []
    for f in ordered:
        code, parts = text_of(f.view, f.lines), f.lines
        start, end = parts[0][0], parts[-1][1]
        as_rendered = template.render_block(
            path=f.view.path,
            start=start,
            end=end,
            language=f.view.language,
            code=code,
            parts=parts,
        )
        rendered.append(as_rendered)
        found = findings.get(f.view.path, ())
        kinds = tuple(sorted({k for a, b in parts for k in kinds_in(found, a, b)})) if found else ()
        members = sorted(f.members, key=lambda m: m.order)
        blocks.append(
            PackedBlock(
                path=f.view.path,
                start_line=start,
                end_line=end,
                language=f.view.language,
                text=code,
                tokens=counter.count(as_rendered),
                chunk_keys=tuple(dict.fromkeys(m.key for m in members)),
                best_rank=min(m.rank for m in members),
                secrets=kinds,
                parts=parts if len(parts) > 1 else (),
                outline=f.outline,
            )
        )
    text = template.render(rendered, inputs.task, inputs.change)
    return tuple(blocks), text, counter.count(text)


def relevant_keys(
    run: SearchRun, source: str | None, floor_rank: int, floor_share: float
) -> frozenset[str]:
    """The chunks relevant enough to pack: ranked `floor_rank` or higher in some list of the
    run, and scoring at least `floor_share` of the best score of the list the prompt is
    packed from (`source`; by default the fused list, else BM25)."""
    near_top: set[str] = set()
    for each in run.rankings.values():
        if each.available:
            near_top.update(h.chunk.key for h in each.hits if h.rank <= floor_rank)
    ranking = _packed_list(run, source)
    if ranking is None or not ranking.hits or floor_share <= 0:
        return frozenset(near_top)
    top = max(h.score for h in ranking.hits)
    low = {h.chunk.key for h in ranking.hits if top > 0 and h.score < floor_share * top}
    return frozenset(near_top - low)


def data_keys(run: SearchRun, source: str | None) -> frozenset[str]:
    """The chunks a data file may enter the prompt with: ranked in the top `DATA_RANK` by two
    of the independent lists (BM25, dense, the reranker), or, when fewer than two of them
    are available, in the top `DATA_RANK_ALONE` of the list the prompt is packed from."""
    independent: tuple[RankingName, ...] = ("bm25", "dense", "rerank")
    lists = [r for name in independent if (r := run.rankings.get(name)) and r.available]
    if len(lists) >= 2:
        counts: dict[str, int] = {}
        for each in lists:
            for h in each.hits:
                if h.rank <= DATA_RANK:
                    counts[h.chunk.key] = counts.get(h.chunk.key, 0) + 1
        return frozenset(key for key, n in counts.items() if n >= 2)
    ranking = _packed_list(run, source)
    if ranking is None:
        return frozenset()
    return frozenset(h.chunk.key for h in ranking.hits if h.rank <= DATA_RANK_ALONE)


def _packed_list(run: SearchRun, source: str | None) -> Ranking | None:
    """The list the prompt is packed from (`source`; by default the fused list, else BM25)."""
    name = source if source not in (None, "rerank") else "fused"
    ranking: Ranking | None = run.rankings.get(name)  # type: ignore[call-overload]
    if ranking is None or not ranking.available or not ranking.hits:
        ranking = run.rankings.get("bm25")
    return ranking
