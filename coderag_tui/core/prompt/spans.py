"""The spans of a file that carry a ranked chunk's match: what a prompt packs of it.

Ranking and packing need not share a granularity. A chunk is ranked as a line window (or a
syntax unit, or a file), but what a model needs of it is the code that matches, at the depth
the budget allows. A chunk's match is shown at these depths, each a `Span` of its file:

- `glimpse_span`: the signatures above its best line and the statement that line is part of
  (a call with its arguments, a `raise` with its message, a short `if` with its branch);
- `compact_span`: its definition whole when that is small, else the signatures and the
  statements of its best lines, best first, within a cap;
- `lean_span`: its definition's signature, first lines (a docstring, the fields), every matched
  statement and its end; outside definitions, every matched statement of the chunk;
- `unit_span`: its definition whole, with its doc comment and the signatures around it;
- `chunk_span`: the ranked chunk itself.

Every span keeps the signatures of the definitions around what it shows (a method shows its
class's first line), no span shows a signature without any of its body (a run that ends in
one stops above it), and no span shows a line on its own: a lone line is widened to its
statement, or to the code right around it (`settle`).

A `Span` is a file's line ranges, sorted and apart. Gaps of at most `GAP_FILL` lines between
its runs are filled (cheaper than saying they were left out), longer gaps are shown as one
`ELISION` line, and `forbidden` lines (held-back secrets, excluded chunks) are never shown.
A span's price is counted from its lines' tokens (each file priced once, as running sums; a
blank line after a blank line is free, as the tokenizer merges them), so spans are priced
without rendering them.

A line's match is the set of the query's words it holds (the words BM25 ranks with), each
worth its idf: a chunk's *anchor* is its best line, its matched lines those worth at least
`MATCH_SHARE` of the anchor, and a definition *covers* the match when it holds `COVER` of the
idf of the words the chunk holds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coderag_tui.core.index.outline import (
    NO_STATEMENTS,
    STATEMENT_LINES,
    Statements,
    Unit,
    enclosing,
    file_structure,
)
from coderag_tui.core.prompt.preamble import SCANNED, licence_preamble

ELISION = "⋮"  # one line standing for the lines a block leaves out
GAP_FILL = 2  # a gap of this many lines or fewer is shown rather than elided
CONTEXT = 1  # lines shown around a matched line that is no statement of its own
BRANCH = 6  # lines shown after the head of a long statement (an `if` and its branch)
COVER = 0.75  # share of a chunk's matched idf a definition must hold to stand for the chunk
MATCH_SHARE = 0.3  # a line matches when it holds this share of the chunk's best line's weight
PROLOGUE = 8  # lines after a large definition's signature shown before its matches
MAX_MATCHED = 24  # matched lines a chunk's spans widen at most (its best)

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


def span_lines(span: Span) -> int:
    """How many lines a span shows."""
    return sum(b - a + 1 for a, b in span)


@dataclass(frozen=True)
class QueryMatch:
    """The query's words with their weights (idf), and how a line is cut into words; what a
    file's lines hold of them is kept (`terms_at`), so prompts of one query at several
    budgets read each line once."""

    weights: Mapping[str, float]
    words: Callable[[str], Iterable[str]]
    _seen: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict, compare=False)
    _foci: dict[tuple[str, int, int], Focus] = field(default_factory=dict, compare=False)

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
        # fsum: exact whatever the order, and a frozenset's order follows the process's
        # string hashing (a 2k prompt differed by 61 tokens between two runs of one query).
        return math.fsum(self.weights.get(t, 0.0) for t in terms)


PRICE_BLOCK = 32  # lines priced together: a span's price is a few differences of sums


@dataclass
class FileFacts:
    """What packing keeps of a file between prompts: its definitions and statements, and its
    lines' tokens as running sums per block of `PRICE_BLOCK` lines (`sums[b][i]`: the
    block's first i lines, each with its newline), each block priced when a span first
    reaches it."""

    units: tuple[Unit, ...]
    statements: Statements = NO_STATEMENTS
    preamble: int = 0  # the last line of its licence preamble (`core.prompt.preamble`)
    sums: dict[int, list[int]] = field(default_factory=dict)
    _heads: dict[int, list[Unit]] | None = None
    _enclosing: dict[int, list[Unit]] = field(default_factory=dict)

    def enclosing(self, line: int) -> list[Unit]:
        """The definitions holding `line`, innermost first (kept per line)."""
        found = self._enclosing.get(line)
        if found is None:
            found = self._enclosing[line] = enclosing(self.units, line)
        return found

    def heads_at(self, line: int) -> list[Unit]:
        """The definitions whose signature holds `line` (built on first use)."""
        if self._heads is None:
            self._heads = {}
            for unit in self.units:
                if unit.head_end < unit.end:
                    for n in range(unit.start, unit.head_end + 1):
                        self._heads.setdefault(n, []).append(unit)
        return self._heads.get(line, [])


def file_facts(text: str, language: str | None) -> FileFacts:
    """What packing knows of a file from its text: its definitions, statements and licence
    preamble."""
    structure = file_structure(text, language)
    head = text.split("\n", SCANNED + 1)  # the preamble reads the first lines only
    return FileFacts(structure.units, structure.statements, licence_preamble(head, language))


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
        if line <= self.facts.preamble:  # a licence notice matches no question
            return frozenset()
        return self.match.terms_at(self.path, line, self.lines[line - 1])

    def weight(self, line: int) -> float:
        return self.match.weight(self.terms(line))

    def _block(self, index: int) -> list[int]:
        sums = self.facts.sums.get(index)
        if sums is None:
            first = index * PRICE_BLOCK
            lines = self.lines[first : first + PRICE_BLOCK]
            counts = self.count([line + "\n" for line in lines])
            before = self.lines[first - 1] if first > 0 else "x"
            for i, line in enumerate(lines):  # a blank run costs about one newline
                if not line.strip() and not (lines[i - 1] if i else before).strip():
                    counts[i] = 0
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


def statement(view: FileView, line: int) -> tuple[int, int]:
    """The lines to show for a matched `line`: the statement it is part of when that is at
    most `STATEMENT_LINES` long; the head of a long statement with the first `BRANCH` lines
    after it; else the line with `CONTEXT` lines either side. A statement that ends in a
    definition's signature goes on into the first `BRANCH` lines of its body."""
    found = view.facts.statements.around(line, STATEMENT_LINES)
    if found is None:
        head_end = view.facts.statements.heads(line)
        if head_end > line:
            found = (line, min(head_end, line + BRANCH))
        else:
            found = (line - CONTEXT, line + CONTEXT)
    start, end = max(1, found[0]), min(view.n_lines, found[1])
    for unit in view.facts.heads_at(end):
        end = max(end, min(unit.end, unit.head_end + BRANCH))
    return (start, end)


def _is_head(view: FileView, line: int, shown: Span) -> bool:
    """Whether `line` is the one-line signature of a definition other shown lines are in."""
    for unit in view.units:
        if unit.start > line:
            break
        if unit.start == line and unit.head_end == line:
            return any(a <= unit.end and b >= line + 1 for a, b in shown)
    return False


def _lone(view: FileView, start: int, end: int, shown: Span) -> bool:
    """Whether the run start..end is a line on its own: one line, not the signature of code
    shown below it, in a file of more than that line."""
    if start != end or _is_head(view, start, shown):
        return False
    return any(not view.blank(n) for n in range(1, view.n_lines + 1) if n != start)


def _context(view: FileView, line: int) -> tuple[int, int]:
    """A lone line with the code right around it: its statement, else the nearest lines that
    are not blank on either side (blank lines in between are free); with nothing to show
    above it (the file's top, or lines it may not show), the statement below it whole."""

    def shown(n: int) -> bool:
        return not view.blank(n) and not _touches(view.forbidden, n, n)

    start, end = statement(view, line)
    if end > start and sum(shown(n) for n in range(start, end + 1)) > 1:
        return (start, end)
    lo, hi = line - 1, line + 1
    while lo >= 1 and view.blank(lo):
        lo -= 1
    while hi <= view.n_lines and view.blank(hi):
        hi += 1
    if (lo < 1 or not shown(lo)) and hi <= view.n_lines:
        hi = statement(view, hi)[1]
    return (max(1, min(lo, line)), min(view.n_lines, max(hi, line)))


def settle(view: FileView, ranges: Iterable[tuple[int, int]]) -> Span:
    """A span as shown: within the file, never forbidden, short gaps filled, blank lines at
    the edges of each run dropped, no signature without any of its body (a run that ends in
    one stops above it), and no line alone unless it is the signature of code shown below
    it (a lone line takes its statement or the lines around it)."""
    span = _shown(view, _whole_statements(view, _shown(view, ranges)))
    for _ in range(2):  # widening a lone line may leave a signature bare, and cutting one a line
        lone = [a for a, b in span if _lone(view, a, b, span)]
        if lone:
            span = _shown(view, [*span, *(_context(view, n) for n in lone)])
        cut = _headless(view, span)
        if cut == span:
            break
        span = cut
    return span


def _whole_statements(view: FileView, span: Span) -> list[tuple[int, int]]:
    """Each run of `span` opened where the short statement its first line is part of opens,
    so a run never starts on the `)` of a call begun above it; a run that starts on the last
    line of a long one starts below it."""
    statements = view.facts.statements
    out = []
    for a, b in span:
        first = statements.around(a, STATEMENT_LINES)
        if first:
            a = min(a, first[0])
        elif a < b and statements.closes(a):
            a += 1
        out.append((a, b))
    return out


def _headless(view: FileView, span: Span) -> Span:
    """`span` without the signatures (and their doc comments) that end one of its runs while
    none of their body is shown (again while cutting one leaves an outer one bare)."""
    for _ in range(len(span)):
        out = list(span)
        changed = False
        for i, (a, b) in enumerate(out):
            for unit in view.facts.heads_at(b):
                body = any(x <= unit.end and y > unit.head_end for x, y in out)
                if a > unit.head_end or body:
                    continue
                b = min(b, unit.first - 1)
                changed = True
            out[i] = (a, b)
        if not changed:
            break
        span = _shown(view, [(a, b) for a, b in out if a <= b])
    return span


def _shown(view: FileView, ranges: Iterable[tuple[int, int]]) -> Span:
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
    return [(u.start, u.head_end) for u in view.facts.enclosing(line)]


@dataclass(frozen=True)
class Focus:
    """What a chunk's match is made of in its file: its matched lines (best first, at most
    `MAX_MATCHED`), the anchor (the best line, None when no line matches), and the
    definition that stands for the chunk (None: code outside any definition, or a language
    without them)."""

    matched: tuple[int, ...]
    anchor: int | None
    unit: Unit | None


def focus(view: FileView, start: int, end: int) -> Focus:
    """The match of the chunk spanning start..end (see `Focus`), kept with the query's
    match so prompts of one query at several budgets find it once."""
    key = (view.path, start, end)
    found = view.match._foci.get(key)
    if found is None:
        found = view.match._foci[key] = _focus(view, start, end)
    return found


def _focus(view: FileView, start: int, end: int) -> Focus:
    end = min(end, view.n_lines)
    weights = {n: view.weight(n) for n in range(start, end + 1) if view.terms(n)}
    matched = sorted(weights, key=lambda n: (-weights[n], n))
    if matched:
        least = MATCH_SHARE * weights[matched[0]]
        matched = [n for n in matched if weights[n] >= least][:MAX_MATCHED]
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
    chain = view.facts.enclosing(anchor)
    for unit in chain:  # innermost first
        inside = frozenset().union(*(view.terms(n) for n in matched if unit.holds(n)))
        if view.match.weight(inside) >= COVER * total:
            return Focus(tuple(matched), anchor, unit)
    return Focus(tuple(matched), anchor, chain[-1] if chain else None)


def _statements_of(
    view: FileView, matched: Sequence[int], lo: int, hi: int
) -> list[list[tuple[int, int]]]:
    """Each matched line (best first) within lo..hi as its statement (clipped to lo..hi),
    with the signatures above it."""
    out = []
    for n in matched:
        if lo <= n <= hi:
            start, end = statement(view, n)
            out.append([(max(lo, start), min(hi, end)), *heads(view, n)])
    return out


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


def _around(view: FileView, unit: Unit) -> list[tuple[int, int]]:
    """The signatures of the definitions enclosing `unit`."""
    return [r for r in heads(view, unit.start) if r[0] < unit.start]


def unit_span(view: FileView, unit: Unit) -> Span:
    """A definition whole, with its doc comment and the signatures around it."""
    return settle(view, [*_around(view, unit), (unit.first, unit.end)])


def chunk_span(view: FileView, start: int, end: int) -> Span:
    """The ranked chunk's own lines."""
    return settle(view, [(start, min(end, view.n_lines))])


def _prologue(view: FileView, unit: Unit) -> tuple[int, int]:
    """The first lines after a definition's signature and before what it defines (a
    docstring, a class's fields), at most `PROLOGUE`."""
    inner = [u.start for u in view.units if u.start > unit.head_end and u.end <= unit.end]
    stop = min([*inner, unit.end + 1])
    return (unit.head_end + 1, min(stop - 1, unit.head_end + PROLOGUE))


def _end(view: FileView, unit: Unit) -> tuple[int, int]:
    """A definition's last statement (its `return`, its closing line)."""
    last = unit.end
    while last > unit.head_end + 1 and len(view.lines[last - 1].strip()) <= 2:
        last -= 1  # a closing bracket: show the statement above it too
    start, _ = statement(view, last)
    return (max(unit.head_end + 1, start), unit.end)


def glimpse_span(
    view: FileView, start: int, end: int, found: Focus, cap: int, elision: int
) -> Span:
    """The least that says where the match is: the signatures above the best line and its
    statement (with no match: the definition's first lines, or the chunk's)."""
    if found.anchor is None:
        lo, hi = (found.unit.start, found.unit.end) if found.unit else (start, end)
        return prefix_span(view, lo, min(hi, view.n_lines), cap, elision)
    lo, hi = start, min(end, view.n_lines)
    if found.unit is not None:
        lo, hi = min(lo, found.unit.start), max(hi, found.unit.end)
    pieces = _statements_of(view, found.matched[:1], lo, hi)
    span = settle(view, pieces[0])
    if cost(view, span, elision) <= cap:
        return span
    return settle(view, [(found.anchor, found.anchor), *heads(view, found.anchor)])


def compact_span(
    view: FileView, start: int, end: int, found: Focus, cap: int, elision: int
) -> Span:
    """The match in at most `cap` tokens: its definition whole when that fits, else the
    signatures and the statements of its best lines, best first (at least its glimpse)."""
    unit = found.unit
    if unit is not None:
        whole = unit_span(view, unit)
        if cost(view, whole, elision) <= cap:
            return whole
    glimpse = glimpse_span(view, start, end, found, cap, elision)
    if found.anchor is None:
        return glimpse
    lo, hi = start, min(end, view.n_lines)
    if unit is not None:
        lo, hi = max(lo, unit.start), min(hi, unit.end)
    return _greedy(view, list(glimpse), _statements_of(view, found.matched, lo, hi), cap, elision)


def lean_span(view: FileView, start: int, end: int, found: Focus) -> Span:
    """The match deepened: its definition's signature, first lines, every matched statement
    and its end; outside definitions, every matched statement of the chunk (its first lines
    when nothing matched)."""
    unit = found.unit
    end = min(end, view.n_lines)
    if unit is None:
        if not found.matched:
            return chunk_span(view, start, end)
        return settle(view, [r for piece in _statements_of(view, found.matched, start, end)
                             for r in piece])  # fmt: skip
    lo, hi = max(start, unit.start), min(end, unit.end)
    ranges = [*_around(view, unit), (unit.first, unit.head_end), _prologue(view, unit)]
    for piece in _statements_of(view, found.matched, lo, hi):
        ranges.extend(piece)
    ranges.append(_end(view, unit))
    return settle(view, ranges)


def prefix_span(view: FileView, lo: int, hi: int, cap: int, elision: int) -> Span:
    """The first lines of lo..hi that fit in `cap` tokens (at least one), found in one pass
    over the lines' prices (lines it may not show at its start skipped)."""
    while lo < hi and _touches(view.forbidden, lo, lo):
        lo += 1
    last = lo
    spent = view.tokens(lo, lo)
    while last < hi:
        spent += view.tokens(last + 1, last + 1)
        if spent > cap:
            break
        last += 1
    return settle(view, [(lo, last)])


def outline_span(view: FileView, start: int, end: int) -> Span:
    """The signatures of the definitions of a chunk that hold a word of the query: where its
    matched code is, without the code."""
    found = [
        (u.start, u.head_end)
        for u in view.units
        if u.start <= end and u.end >= start
        and any(view.terms(n) for n in range(max(u.start, start), min(u.end, end) + 1))
    ]  # fmt: skip
    return _shown(view, found) if found else EMPTY


def text_of(view: FileView, span: Span) -> str:
    """A settled span's code with an `ELISION` line in each gap."""
    out: list[str] = []
    for i, (a, b) in enumerate(span):
        if i > 0:
            out.append(ELISION)
        out.extend(view.lines[a - 1 : b])
    return "\n".join(out)


@dataclass(frozen=True)
class Readability:
    """What a reader of a block cannot use: signatures shown without any of the body that
    held the match, and runs of one line that are not the signature of code shown below."""

    bare_signatures: int
    lone_lines: int


def readability(view: FileView, span: Span) -> Readability:
    """Count a code block's `Readability` faults (see there)."""
    lone = sum(1 for a, b in span if _lone(view, a, b, span))
    bare = 0
    for unit in view.units:
        if unit.head_end >= unit.end:
            continue
        head = any(a <= unit.head_end and b >= unit.start for a, b in span)
        body = any(a <= unit.end and b > unit.head_end for a, b in span)
        if head and not body:
            matched = any(view.terms(n) for n in range(unit.head_end + 1, unit.end + 1))
            bare += matched
    return Readability(bare, lone)
