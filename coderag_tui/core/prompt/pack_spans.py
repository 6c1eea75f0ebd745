"""Packing by meaning: the smallest span that carries each ranked match, most relevant first,
more files before more of one file, and nothing below the relevance floor.

`pack_spans` turns ranked hits into offers and takes them in order while they fit:

1. each relevant hit offers its *compact* span (`spans.compact_span`: its definition when
   small, else the signatures and matched lines, within `compact_cap` tokens) at its file's
   place (the order in which files first appear in the ranking);
2. each relevant hit offers its *full* span (`spans.full_span`: the whole definition, or its
   signature, first lines and matched windows within a third of the budget) `breadth`
   places later, so the first `breadth` files are in before any block grows; a second hit
   of a file already in waits `breadth` places too;
3. each relevant hit offers its whole chunk (with its full span) `2 * breadth` places
   later: what was ranked, when the budget has room for it;
4. a pinned hit offers its whole chunk first.

One file's spans are one block under one header (lines left out shown as one elision line).
A hit that no ranking lists in its top `floor_rank`, or whose score is below `floor_share` of
the best, is never packed: packing stops where relevance ends instead of filling the budget.
What room is left when an offer no longer fits goes to an outline: the signatures of the
definitions in the next relevant files, so the model sees where their code is.

Secrets and the user's choices are kept as in `pack.pack`: a hit touching a suspected secret
is held back (reason "secret") unless admitted, and in "hold" mode the secret's lines are
never shown by any other hit's span; excluded hits' lines are never shown either.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

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
    compact_span,
    cost,
    focus,
    full_span,
    outline_span,
    prefix_span,
    settle,
    span_of,
    text_of,
    without,
)
from coderag_tui.core.prompt.tokens import TokenCounter
from coderag_tui.core.records import (
    Chunk,
    DroppedChunk,
    Hit,
    PackedBlock,
    PackedPrompt,
    Ranking,
    SearchRun,
    SecretFinding,
)

BELOW_FLOOR = "below the relevance floor"
OUTLINED = "outline only: its signatures are in"
STOP_BUDGET = "the budget is full"
STOP_RELEVANCE = "relevance ended"
STOP_HITS = "no more hits"
MIN_COMPACT = 60  # tokens: a compact span smaller than this says too little
MAX_COMPACT = 300  # tokens: beyond this a compact span is a full one
FULL_SHARE = 3  # a full span takes at most 1/FULL_SHARE of the room


@dataclass(frozen=True, kw_only=True)
class SpanInputs:
    """What packing by meaning needs beyond `PackInputs`: the query's words (to find each
    chunk's match), what is known of a file (`facts(path, text, language)`: its definitions
    and line prices, kept between prompts by the caller), which hits are relevant enough to
    pack (`relevant`: chunk keys; None: every hit) and how many files come in before any
    block grows (`breadth`)."""

    match: QueryMatch
    facts: Callable[[str, str | None, str | None], FileFacts]
    relevant: frozenset[str] | None = None
    breadth: int = 10


@dataclass
class _File:
    """One file's place in the prompt: the lines shown, the hits that put them there, and
    the rank of its first accepted offer (files are shown in that order)."""

    view: FileView
    lines: Span = EMPTY
    members: list[Candidate] = field(default_factory=list)
    order: int = 0
    outline: bool = False


class _Views:
    """Each file's `FileView`, built once: its lines (secrets masked in "redact" mode), its
    definitions, the query's match, and the lines it may never show."""

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
        view = FileView(
            path=chunk.path,
            language=chunk.language,
            lines=lines,
            facts=self.how.facts(chunk.path, text, chunk.language),
            match=self.how.match,
            count=self.inputs.counter.count_each,
            forbidden=self.forbidden.get(chunk.path, EMPTY),
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


def pack_spans(hits: Sequence[Hit], inputs: PackInputs, how: SpanInputs) -> PackedPrompt:  # noqa: C901
    """The prompt for `inputs.task`: the relevant hits' spans, most relevant first, within
    the budget (see the module docstring). Raises BudgetTooSmall when the template and the
    task alone exceed the budget."""
    budget, counter, template = inputs.budget, inputs.counter, inputs.template
    secret_mode = inputs.secret_mode
    fixed = fixed_tokens(inputs)
    findings = {path: found for path, found in (inputs.secrets or {}).items() if found}
    cands, dropped = order_hits(hits, inputs.pinned)
    excluded, admitted, pinned = set(inputs.excluded), set(inputs.admitted), set(inputs.pinned)
    held = held_back(cands, findings, excluded, inputs.admitted) if secret_mode == "hold" else {}
    views = _Views(
        inputs, how, findings, _forbidden(cands, findings, excluded, admitted, secret_mode)
    )
    separator = max(1, counter.count("\n\n"))
    elision = counter.count(ELISION + "\n")
    room = budget - fixed

    headers: dict[str, int] = {}

    def header(view: FileView) -> int:
        found = headers.get(view.path)
        if found is None:
            empty = template.render_block(
                path=view.path, start=1, end=1, language=view.language, code=""
            )
            found = headers[view.path] = counter.count(empty) + separator
        return found

    packable, left_out = _sort_out(cands, excluded, held, how.relevant, pinned)

    compact_cap = max(MIN_COMPACT, min(MAX_COMPACT, room // max(1, how.breadth)))
    full_cap = max(compact_cap, room // FULL_SHARE)
    files: dict[str, _File] = {}
    focused: dict[str, Focus] = {}
    accepted: set[str] = set()
    # Offers in a heap of (place, rank order, kind order, kind). A file's place is the order
    # of its first appearance: its first hit's compact span comes at that place, its other
    # hits and every full span `breadth` places later, so more files come in first.
    file_place: dict[str, int] = {}
    offers: list[tuple[int, int, int, str]] = []
    for i, cand in enumerate(packable):
        first = cand.chunk.path not in file_place
        place = file_place.setdefault(cand.chunk.path, len(file_place))
        if cand.key in pinned:
            offers.append((-len(packable), i, 0, "pin"))
        else:
            offers.append((place if first else place + how.breadth, i, 0, "compact"))
            offers.append((place + how.breadth, i, 1, "full"))
            offers.append((place + 2 * how.breadth, i, 2, "chunk"))
    heapq.heapify(offers)
    skipped = 0
    while offers:
        place, i, _, kind = heapq.heappop(offers)
        cand = packable[i]
        chunk = cand.chunk
        view = views.of(cand)
        entry = files.get(chunk.path)
        found = focused.get(cand.key)
        if found is None:
            found = focused[cand.key] = focus(view, chunk.start_line, chunk.end_line)
        current = entry.lines if entry is not None else EMPTY
        base = cost(view, current, elision) + (header(view) if current else 0)
        if kind == "pin":
            cap = max(0, room - header(view))
        elif kind == "compact":
            cap = min(compact_cap, max(0, room - (0 if current else header(view))))
        else:
            cap = full_cap
        span = _offer_span(kind, view, chunk, found, cap, elision)
        merged = settle(view, [*current, *span])
        if merged == current:
            accepted.add(cand.key)
            if entry is not None and cand not in entry.members:
                entry.members.append(cand)
            continue
        delta = cost(view, merged, elision) + header(view) - base
        if delta > room:
            skipped += 1
            continue
        room -= delta
        if entry is None:
            order = place if kind == "pin" else file_place[chunk.path]
            entry = files[chunk.path] = _File(view, order=order)
        entry.lines = merged
        if cand not in entry.members:
            entry.members.append(cand)
        accepted.add(cand.key)

    # What room is left: the signatures of the next relevant files that did not get in.
    for i, cand in enumerate(packable):
        if cand.key in accepted or cand.chunk.path in files:
            continue
        view = views.of(cand)
        lines = outline_span(view, cand.chunk.start_line, cand.chunk.end_line)
        if not lines:
            continue
        delta = cost(view, lines, elision) + header(view)
        if delta <= room:
            room -= delta
            files[cand.chunk.path] = _File(view, lines, [cand], len(packable) + i, outline=True)

    stopped = STOP_BUDGET if skipped else STOP_RELEVANCE if how.relevant is not None else STOP_HITS
    ordered = sorted(files.values(), key=lambda f: f.order)
    blocks, text, total = _render(ordered, inputs, findings)
    while total > budget and ordered:  # per-line prices are estimates: the text must fit
        ordered.pop()
        stopped = STOP_BUDGET
        blocks, text, total = _render(ordered, inputs, findings)
    shown = {m.key for f in ordered for m in f.members}
    outlined = {f.view.path for f in ordered if f.outline}
    for cand in packable:
        if cand.key not in shown:
            reason = OUTLINED if cand.chunk.path in outlined else OVER_BUDGET
            left_out.append((cand, reason, ()))
    dropped += _dropped(left_out, counter)
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
        secret_mode=secret_mode,
        stopped=stopped,
        files_tokens=sum(whole),
    )


def _sort_out(
    cands: Sequence[Candidate],
    excluded: set[str],
    held: Mapping[str, tuple[str, ...]],
    relevant: frozenset[str] | None,
    pinned: set[str],
) -> tuple[list[Candidate], list[tuple[Candidate, str, tuple[str, ...]]]]:
    """The hits that may be packed, and the others with why (and the kinds of secret that
    held one back): excluded, a suspected secret, or below the relevance floor."""
    packable: list[Candidate] = []
    left_out: list[tuple[Candidate, str, tuple[str, ...]]] = []
    for cand in cands:
        if cand.key in excluded:
            left_out.append((cand, EXCLUDED, ()))
        elif cand.key in held:
            left_out.append((cand, SECRET, held[cand.key]))
        elif relevant is not None and cand.key not in relevant and cand.key not in pinned:
            left_out.append((cand, BELOW_FLOOR, ()))
        else:
            packable.append(cand)
    return packable, left_out


def _offer_span(
    kind: str, view: FileView, chunk: Chunk, found: Focus, cap: int, elision: int
) -> Span:
    """The span an offer of `kind` puts in for `chunk`, within `cap` tokens (see the module
    docstring; a chunk offer is the ranked chunk itself with its full span)."""
    start, end = chunk.start_line, chunk.end_line
    if kind == "pin":
        return prefix_span(view, start, end, cap, elision)
    if kind == "compact":
        return compact_span(view, start, end, found, cap, elision)
    span = full_span(view, start, end, found, cap, elision)
    return span if kind == "full" else settle(view, [*span, (start, end)])


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
    name = source if source not in (None, "rerank") else "fused"
    ranking: Ranking | None = run.rankings.get(name)  # type: ignore[call-overload]
    if ranking is None or not ranking.available or not ranking.hits:
        ranking = run.rankings.get("bm25")
    if ranking is None or not ranking.hits or floor_share <= 0:
        return frozenset(near_top)
    top = max(h.score for h in ranking.hits)
    low = {h.chunk.key for h in ranking.hits if top > 0 and h.score < floor_share * top}
    return frozenset(near_top - low)
