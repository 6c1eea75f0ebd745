"""The smallest span of a file that carries a ranked chunk's match: what a prompt packs of it.

Ranking and packing need not share a granularity. A chunk is ranked as a line window (or a
syntax unit, or a file), but what a model needs of it is the code that matches: the
definition enclosing the matched lines when it is small enough, else that definition's
signature, its first lines (a docstring, the fields) and the matched lines below it, then
the signatures of what it defines. Every span keeps the signatures of the definitions around
it (a method shows its class's first line), so the model sees where the code lives.

A `Span` is a file's line ranges, sorted and apart. Gaps of at most `GAP_FILL` lines between
its runs are filled (cheaper than saying they were left out), longer gaps are shown as one
`ELISION` line, and `forbidden` lines (held-back secrets, excluded chunks) are never shown.
A span's price is counted from its lines' tokens (each file priced once, as running sums),
so spans are priced without rendering them.

A line's match is the set of the query's words it holds (the words BM25 ranks with), each
worth its idf: a chunk's *anchor* is its best line, its matched lines those worth at least
`MATCH_SHARE` of the anchor, and a definition *covers* the match when it holds `COVER` of the
idf of the words the chunk holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coderag_tui.core.index.outline import Unit, enclosing

ELISION = "⋮"  # one line standing for the lines a block leaves out
GAP_FILL = 2  # a gap of this many lines or fewer is shown rather than elided
CONTEXT = 1  # lines shown around a matched line when only the matched lines are packed
COVER = 0.75  # share of a chunk's matched idf a definition must hold to stand for the chunk
MATCH_SHARE = 0.3  # a line matches when it holds this share of the chunk's best line's weight
PROLOGUE = 12  # lines after a large definition's signature shown before its matches

Span = tuple[tuple[int, int], ...]
"""Line ranges of one file: 1-based, inclusive, sorted, neither overlapping nor touching."""

EMPTY: Span = ()


def span_of(ranges: Iterable[tuple[int, int]]) -> Span:
    """Ranges (in any order, overlapping or not) as a `Span`."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[0] <= r[1]):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def runs(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Line numbers as inclusive (start, end) runs."""
    return list(span_of((n, n) for n in lines))


@dataclass(frozen=True)
class QueryMatch:
    """The query's words with their weights (idf), and how a line is cut into words; what a
    file's lines hold of them is kept (`terms_at`), so prompts of one query at several
    budgets read each line once."""

    weights: Mapping[str, float]
    words: Callable[[str], Iterable[str]]
    _seen: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict, compare=False)

    def terms(self, line: str) -> frozenset[str]:
        if not self.weights:
            return frozenset()
        return frozenset(w for w in self.words(line) if w in self.weights)

    def terms_at(self, path: str, number: int, line: str) -> frozenset[str]:
        found = self._seen.get((path, number))
        if found is None:
            found = self._seen[(path, number)] = self.terms(line)
        return found

    def weight(self, terms: Iterable[str]) -> float:
        return sum(self.weights.get(t, 0.0) for t in terms)


PRICE_BLOCK = 32  # lines priced together: a span's price is a few differences of sums


@dataclass
class FileFacts:
    """What packing keeps of a file between prompts: its definitions, and its lines' tokens
    as running sums per block of `PRICE_BLOCK` lines (`sums[b][i]`: the block's first i
    lines, each with its newline), each block priced when a span first reaches it."""

    units: tuple[Unit, ...]
    sums: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class FileView:
    """One file as the packer sees it: its lines, definitions and the query's match per line;
    `forbidden` lines are never shown."""

    path: str
    language: str | None
    lines: Sequence[str]
    facts: FileFacts
    match: QueryMatch
    count: Callable[[Sequence[str]], list[int]]
    forbidden: Span = EMPTY

    @property
    def units(self) -> tuple[Unit, ...]:
        return self.facts.units

    @property
    def n_lines(self) -> int:
        return len(self.lines)

    def terms(self, line: int) -> frozenset[str]:
        return self.match.terms_at(self.path, line, self.lines[line - 1])

    def weight(self, line: int) -> float:
        return self.match.weight(self.terms(line))

    def _block(self, index: int) -> list[int]:
        sums = self.facts.sums.get(index)
        if sums is None:
            lines = self.lines[index * PRICE_BLOCK : (index + 1) * PRICE_BLOCK]
            counts = self.count([line + "\n" for line in lines])
            sums = self.facts.sums[index] = [0, *itertools.accumulate(counts)]
        return sums

    def tokens(self, start: int, end: int) -> int:
        """Tokens of lines start..end (each with its newline)."""
        total = 0
        for index in range((start - 1) // PRICE_BLOCK, (end - 1) // PRICE_BLOCK + 1):
            sums = self._block(index)
            base = index * PRICE_BLOCK
            lo = max(start - base, 1)
            hi = min(end - base, len(sums) - 1)
            total += sums[hi] - sums[lo - 1]
        return total

    def blank(self, line: int) -> bool:
        return not self.lines[line - 1].strip()


def without(span: Span, holes: Span) -> Span:
    """`span` with the lines of `holes` taken out."""
    if not holes:
        return span
    out: list[tuple[int, int]] = []
    for start, end in span:
        for h_start, h_end in holes:
            if h_end < start or h_start > end:
                continue
            if h_start > start:
                out.append((start, h_start - 1))
            start = h_end + 1
            if start > end:
                break
        if start <= end:
            out.append((start, end))
    return tuple(out)


def _touches(span: Span, start: int, end: int) -> bool:
    return any(a <= end and b >= start for a, b in span)


def settle(view: FileView, ranges: Iterable[tuple[int, int]]) -> Span:
    """A span as shown: within the file, never forbidden, short gaps filled, blank lines at
    the edges of each run dropped."""
    n = view.n_lines
    span = without(span_of((max(1, a), min(n, b)) for a, b in ranges), view.forbidden)
    filled: list[tuple[int, int]] = []
    for start, end in span:
        if filled:
            gap = start - filled[-1][1] - 1
            if gap <= GAP_FILL and not _touches(view.forbidden, filled[-1][1] + 1, start - 1):
                filled[-1] = (filled[-1][0], end)
                continue
        filled.append((start, end))
    out: list[tuple[int, int]] = []
    for start, end in filled:
        while start <= end and view.blank(start):
            start += 1
        while end >= start and view.blank(end):
            end -= 1
        if start <= end:
            out.append((start, end))
    return tuple(out)


def cost(view: FileView, span: Span, elision_tokens: int) -> int:
    """Tokens of a settled span's code: its lines, and one elision line per gap."""
    if not span:
        return 0
    return sum(view.tokens(a, b) for a, b in span) + (len(span) - 1) * elision_tokens


def heads(view: FileView, line: int) -> list[tuple[int, int]]:
    """The signatures of every definition enclosing `line` (outer ones included)."""
    return [(u.start, u.head_end) for u in enclosing(view.units, line)]


@dataclass(frozen=True)
class Focus:
    """What a chunk's match is made of in its file: its matched lines (best first), the anchor
    (the best line, None when no line matches), and the definition that stands for the chunk
    (None: code outside any definition, or a language without them)."""

    matched: tuple[int, ...]
    anchor: int | None
    unit: Unit | None


def focus(view: FileView, start: int, end: int) -> Focus:
    """The match of the chunk spanning start..end (see `Focus`)."""
    end = min(end, view.n_lines)
    lines = range(start, end + 1)
    matched = sorted((n for n in lines if view.terms(n)), key=lambda n: (-view.weight(n), n))
    if matched:
        least = MATCH_SHARE * view.weight(matched[0])
        matched = [n for n in matched if view.weight(n) >= least]
    if not matched:
        # No word of the query (a dense hit): the definition holding most of the chunk.
        best: Unit | None = None
        share = 0
        for unit in view.units:
            overlap = min(unit.end, end) - max(unit.start, start) + 1
            if overlap * 2 >= end - start + 1 and overlap > share:
                best, share = unit, overlap
        return Focus((), None, best)
    anchor = matched[0]
    every = frozenset().union(*(view.terms(n) for n in matched))
    total = view.match.weight(every)
    chain = enclosing(view.units, anchor)
    for unit in chain:  # innermost first
        inside = frozenset().union(*(view.terms(n) for n in matched if unit.holds(n)))
        if view.match.weight(inside) >= COVER * total:
            return Focus(tuple(matched), anchor, unit)
    return Focus(tuple(matched), anchor, chain[-1] if chain else None)


def _windows(
    view: FileView, matched: Sequence[int], lo: int, hi: int
) -> list[list[tuple[int, int]]]:
    """Around each matched line (best first) within lo..hi: the line and `CONTEXT` lines
    either side, with the signatures above it."""
    return [
        [(max(lo, n - CONTEXT), min(hi, n + CONTEXT)), *heads(view, n)]
        for n in matched
        if lo <= n <= hi
    ]


def _greedy(
    view: FileView,
    base: list[tuple[int, int]],
    pieces: Iterable[list[tuple[int, int]]],
    cap: int,
    elision: int,
) -> Span:
    """`base`, then each piece in order while the span stays within `cap` tokens."""
    span = settle(view, base)
    for piece in pieces:
        trial = settle(view, [*span, *piece])
        if cost(view, trial, elision) <= cap:
            span = trial
    return span


def _inner_heads(view: FileView, unit: Unit) -> list[tuple[int, int]]:
    """The signatures of the definitions directly inside `unit` (its methods, for a class)."""
    return [
        (u.start, u.head_end)
        for u in view.units
        if u.depth == unit.depth + 1 and unit.start <= u.start and u.end <= unit.end
    ]


def _prologues(view: FileView, unit: Unit) -> list[list[tuple[int, int]]]:
    """The lines after a definition's signature and before what it defines (a docstring, a
    class's fields): all of them, then (for when they do not fit) the first `PROLOGUE`."""
    inner = [u.start for u in view.units if u.start > unit.head_end and u.end <= unit.end]
    stop = min([*inner, unit.end + 1])
    whole = (unit.head_end + 1, stop - 1)
    short = (unit.head_end + 1, min(stop - 1, unit.head_end + PROLOGUE))
    return [[whole], [short]] if short != whole else [[whole]]


def full_span(view: FileView, start: int, end: int, found: Focus, cap: int, elision: int) -> Span:
    """The chunk's match shown whole: its definition (with the signatures around it) when it
    fits `cap`; else its signature, first lines, as many matched windows as fit and the
    signatures of what it defines; outside definitions, the chunk's lines from the first to
    the last match (all of them with no match)."""
    end = min(end, view.n_lines)
    unit = found.unit
    if unit is not None:
        around = [r for r in heads(view, unit.start) if r[0] < unit.start]
        whole = settle(view, [*around, (unit.first, unit.end)])
        if cost(view, whole, elision) <= cap:
            return whole
        bare = settle(view, [*around, (unit.start, unit.end)])  # without its doc comment
        if cost(view, bare, elision) <= cap:
            return bare
        base = [*around, (unit.start, unit.head_end)]
        lo, hi = max(unit.start, start), min(unit.end, end)
        pieces = [
            *_prologues(view, unit),
            *_windows(view, found.matched, lo, hi),
            _inner_heads(view, unit),
        ]
        return _greedy(view, base, pieces, cap, elision)
    if found.matched:
        lo, hi = max(start, min(found.matched) - CONTEXT), min(end, max(found.matched) + CONTEXT)
    else:
        lo, hi = start, end
    region = settle(view, [(lo, hi)])
    if cost(view, region, elision) <= cap:
        return region
    if found.matched:
        return _greedy(view, [], _windows(view, found.matched, lo, hi), cap, elision)
    return prefix_span(view, lo, hi, cap, elision)


def compact_span(
    view: FileView, start: int, end: int, found: Focus, cap: int, elision: int
) -> Span:
    """The chunk's match in at most `cap` tokens: the full span when it fits, else the
    signatures above the best lines and those lines, best first; with no match, the first
    lines of its definition (or of the chunk)."""
    whole = full_span(view, start, end, found, cap, elision)
    if whole and cost(view, whole, elision) <= cap:
        return whole
    if not found.matched:
        unit = found.unit
        lo, hi = (unit.start, unit.end) if unit is not None else (start, min(end, view.n_lines))
        return prefix_span(view, lo, hi, cap, elision)
    lo, hi = start, min(end, view.n_lines)
    if found.unit is not None:
        lo, hi = max(lo, found.unit.start), min(hi, found.unit.end)
    span = _greedy(view, [], _windows(view, found.matched, lo, hi), cap, elision)
    if span:
        return span
    anchor = found.anchor if found.anchor is not None else start
    return settle(view, [(anchor, anchor)])  # the best line alone, even over the cap


def prefix_span(view: FileView, lo: int, hi: int, cap: int, elision: int) -> Span:
    """The first lines of lo..hi that fit in `cap` tokens (at least one)."""
    last = lo
    while last < hi and cost(view, settle(view, [(lo, last + 1)]), elision) <= cap:
        last += 1
    return settle(view, [(lo, last)])


def outline_span(view: FileView, start: int, end: int) -> Span:
    """The signatures of the definitions a chunk holds: where its code is, without its code."""
    found = [(u.start, u.head_end) for u in view.units if u.start <= end and u.end >= start]
    return settle(view, found) if found else EMPTY


def text_of(view: FileView, span: Span) -> str:
    """A settled span's code with an `ELISION` line in each gap."""
    out: list[str] = []
    for i, (a, b) in enumerate(span):
        if i > 0:
            out.append(ELISION)
        out.extend(view.lines[a - 1 : b])
    return "\n".join(out)
