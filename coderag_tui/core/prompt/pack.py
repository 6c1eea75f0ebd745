"""Packing ranked chunks into a token budget, and advice on chunk size for a budget.

`pack` walks the hits in rank order (pinned ones first, excluded ones never) and takes each
chunk whole while it fits in the budget left after the template and the task; chunks of one
file that overlap or touch are merged into one block with the union line range. The rendered
prompt is counted at the end and trimmed from the tail if merging moved it over the budget, so
the returned prompt never has more tokens than the budget.

Chunks that touch a suspected secret (found when the file was indexed) are held back by
default, each as a dropped chunk with reason "secret" and the kinds of secret, unless the user
let that one chunk in (`admitted`); "redact" puts them in with every secret replaced by
`<redacted:KIND>`, "allow" as they are. Either way each block names the kinds it holds, so
every face can say what went in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from coderag_tui.core.index.secret_scan import GENERIC_KINDS, kinds_in, redact_lines
from coderag_tui.core.prompt.render import Template
from coderag_tui.core.prompt.tokens import TokenCounter
from coderag_tui.core.records import (
    Chunk,
    ChunkingSpec,
    DroppedChunk,
    Hit,
    PackedBlock,
    PackedPrompt,
    SearchRun,
    SecretFinding,
)

OVER_BUDGET = "over budget"
TRIMMED = "cut to fit the budget"  # reason prefix for the lines of a chunk that were left out
EXCLUDED = "excluded"
PINNED_MISSING = "pinned, but not in these results"
SECRET = "secret"  # held back: it touches a suspected secret (see `secret_mode`)
SECRET_MODES = ("hold", "redact", "allow")
# Tokens a block header and fence add on top of the code, used only by `advise`.
BLOCK_OVERHEAD_TOKENS = 16


class BudgetTooSmall(ValueError):
    """The template and the task alone do not fit; the message names the fix."""


def split_lines(text: str) -> list[str]:
    """Lines as editors and `git` count them (split on newline; a final newline ends a line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(frozen=True)
class Candidate:
    """A hit as both packers take it: its chunk, rank and place in packing order."""

    key: str  # the hit's own key, kept even when the chunk was trimmed
    chunk: Chunk
    rank: int
    order: int  # position in packing order: pinned first, then rank order


@dataclass(frozen=True)
class _Block:
    path: str
    start: int
    end: int
    language: str | None
    members: tuple[Candidate, ...]

    @property
    def order(self) -> int:
        return min(m.order for m in self.members)


def _merge(cands: Iterable[Candidate]) -> list[_Block]:
    """Merge one file's chunks that overlap or touch into blocks (sorted by start line)."""
    blocks: list[_Block] = []
    for cand in sorted(cands, key=lambda c: (c.chunk.start_line, c.chunk.end_line, c.order)):
        chunk = cand.chunk
        last = blocks[-1] if blocks else None
        if last is not None and chunk.start_line <= last.end + 1:
            blocks[-1] = replace(
                last,
                end=max(last.end, chunk.end_line),
                language=last.language or chunk.language,
                members=(*last.members, cand),
            )
        else:
            blocks.append(
                _Block(chunk.path, chunk.start_line, chunk.end_line, chunk.language, (cand,))
            )
    return blocks


class _Packer:
    """Holds the accepted chunks per file and prices blocks by their rendered tokens."""

    def __init__(
        self,
        counter: TokenCounter,
        template: Template,
        file_text: Callable[[str], str | None] | None,
        redact: Mapping[str, Sequence[SecretFinding]] | None = None,
    ) -> None:
        self.counter = counter
        self.template = template
        self.file_text = file_text
        self.redact = redact or {}
        self.accepted: dict[str, list[Candidate]] = {}
        self._costs: dict[tuple[str, int, int, str | None], int] = {}
        self._file_lines: dict[str, list[str] | None] = {}
        self.separator_tokens = max(1, counter.count("\n\n"))

    def _lines_of_file(self, path: str) -> list[str] | None:
        if path not in self._file_lines:
            text = self.file_text(path) if self.file_text is not None else None
            lines = split_lines(text) if text is not None else None
            if lines is not None and path in self.redact:
                lines = redact_lines(lines, 1, self.redact[path])
            self._file_lines[path] = lines
        return self._file_lines[path]

    def block_text(self, block: _Block) -> str:
        """The block's code: the file's real lines when known, else the union of chunk texts."""
        lines = self._lines_of_file(block.path)
        if lines is not None and block.end <= len(lines):
            return "\n".join(lines[block.start - 1 : block.end])
        by_line: dict[int, str] = {}
        for member in block.members:
            for i, line in enumerate(split_lines(member.chunk.text)):
                by_line.setdefault(member.chunk.start_line + i, line)
        union = [by_line.get(n, "") for n in range(block.start, block.end + 1)]
        if block.path in self.redact:
            union = redact_lines(union, block.start, self.redact[block.path])
        return "\n".join(union)

    def render_block(self, block: _Block) -> str:
        return self.template.render_block(
            path=block.path,
            start=block.start,
            end=block.end,
            language=block.language,
            code=self.block_text(block),
        )

    def block_cost(self, block: _Block) -> int:
        # A block's text is fixed by its file and line range, so its price is too.
        key = (block.path, block.start, block.end, block.language)
        cost = self._costs.get(key)
        if cost is None:
            cost = self.counter.count(self.render_block(block)) + self.separator_tokens
            self._costs[key] = cost
        return cost

    def prefetch(self, cands: Sequence[Candidate]) -> None:
        """Price every chunk as its own block in one batch call (tiktoken encodes in threads)."""
        blocks: dict[tuple[str, int, int, str | None], _Block] = {}
        for cand in cands:
            block = _Block(
                cand.chunk.path,
                cand.chunk.start_line,
                cand.chunk.end_line,
                cand.chunk.language,
                (cand,),
            )
            blocks.setdefault((block.path, block.start, block.end, block.language), block)
        todo = [(k, b) for k, b in blocks.items() if k not in self._costs]
        counts = self.counter.count_many([self.render_block(b) for _, b in todo])
        for (key, _), count in zip(todo, counts, strict=True):
            self._costs[key] = count + self.separator_tokens

    def chunk_tokens(self, chunk: Chunk) -> int:
        """Tokens of `chunk` rendered as a block of its own (what dropping it saved)."""
        alone = Candidate(chunk.key, chunk, 0, 0)
        block = _Block(chunk.path, chunk.start_line, chunk.end_line, chunk.language, (alone,))
        return self.block_cost(block) - self.separator_tokens

    def file_cost(self, cands: Iterable[Candidate]) -> int:
        return sum(self.block_cost(b) for b in _merge(cands))

    def delta(self, cand: Candidate) -> int:
        """Extra tokens the prompt needs if `cand` joins what is accepted."""
        current = self.accepted.get(cand.chunk.path, [])
        return self.file_cost([*current, cand]) - self.file_cost(current)

    def accept(self, cand: Candidate) -> None:
        self.accepted.setdefault(cand.chunk.path, []).append(cand)

    def remove(self, cand: Candidate) -> None:
        self.accepted[cand.chunk.path].remove(cand)

    def blocks(self) -> list[_Block]:
        merged = [b for cands in self.accepted.values() for b in _merge(cands)]
        return sorted(merged, key=lambda b: (b.order, b.path, b.start))

    def render(self, task: str, change: str = "") -> tuple[str, list[tuple[_Block, str]]]:
        rendered = [(b, self.render_block(b)) for b in self.blocks()]
        return self.template.render([text for _, text in rendered], task, change), rendered


def _trimmed(cand: Candidate, n_lines: int) -> Candidate:
    chunk = cand.chunk
    text = "\n".join(split_lines(chunk.text)[:n_lines])
    cut = replace(chunk, end_line=chunk.start_line + n_lines - 1, text=text)
    return replace(cand, chunk=cut)


def _cut_off(whole: Candidate, part: Candidate, counter: TokenCounter) -> DroppedChunk:
    """The lines of `whole` that trimming left out, reported like a dropped chunk."""
    first = part.chunk.end_line + 1
    rest = "\n".join(split_lines(whole.chunk.text)[part.chunk.n_lines :])
    reason = f"{TRIMMED}: lines {first}–{whole.chunk.end_line} left out"
    return DroppedChunk(whole.key, whole.rank, counter.count(rest), reason)


def _largest_fitting_prefix(packer: _Packer, cand: Candidate, room: int) -> Candidate | None:
    """The longest line prefix of `cand` whose extra tokens fit in `room` (binary search)."""
    lo, hi, best = 1, cand.chunk.n_lines - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = _trimmed(cand, mid)
        if packer.delta(trial) <= room:
            best, lo = trial, mid + 1
        else:
            hi = mid - 1
    return best


def order_hits(
    hits: Sequence[Hit], pinned: Sequence[str]
) -> tuple[list[Candidate], list[DroppedChunk]]:
    """Unique hits in packing order: pinned (in pinned order) first, then by rank."""
    unique: dict[str, Hit] = {}
    for hit in sorted(hits, key=lambda h: h.rank):
        unique.setdefault(hit.chunk.key, hit)
    ordered = [unique[k] for k in dict.fromkeys(pinned) if k in unique]
    ordered += [h for k, h in unique.items() if k not in set(pinned)]
    missing = [
        DroppedChunk(key=k, rank=0, tokens=0, reason=PINNED_MISSING)
        for k in dict.fromkeys(pinned)
        if k not in unique
    ]
    cands = [Candidate(h.chunk.key, h.chunk, h.rank, i) for i, h in enumerate(ordered)]
    return cands, missing


@dataclass(frozen=True, kw_only=True)
class PackInputs:
    """Everything `pack` packs the hits with: the budget and how tokens are counted, the
    template and the task, the user's choices of chunks, and the suspected secrets.

    `change` (a unified diff, `--diff`) is a section of its own, counted like the task: fit
    it first (`fit_change`). `secrets` holds the suspected secrets of the hits' files (by
    path); `secret_mode` says what happens to chunks that touch one: "hold" leaves them out
    (reason "secret", pinned or not), "redact" masks each secret, "allow" lets them in as
    they are. `admitted` chunk keys are let in as they are in "hold" mode too: the user chose
    them one by one. `trim_last` fills the budget with the part of the last chunk that fits.
    """

    budget: int
    counter: TokenCounter
    template: Template
    task: str
    pinned: Sequence[str] = ()
    excluded: Sequence[str] = ()
    trim_last: bool = False
    file_text: Callable[[str], str | None] | None = None
    secrets: Mapping[str, Sequence[SecretFinding]] | None = None
    secret_mode: str = "hold"
    admitted: Sequence[str] = ()
    change: str = ""


def fixed_tokens(inputs: PackInputs) -> int:
    """The tokens of the prompt without code (the template, the task and the change); raises
    BudgetTooSmall when they alone exceed the budget, ValueError for an unknown secret mode."""
    if inputs.secret_mode not in SECRET_MODES:
        modes = ", ".join(SECRET_MODES)
        raise ValueError(f"secret_mode must be one of {modes}: {inputs.secret_mode!r}")
    fixed = inputs.counter.count(inputs.template.render([], inputs.task, inputs.change))
    if fixed > inputs.budget:
        raise BudgetTooSmall(
            f"the template and the task alone take {fixed} tokens, more than the budget of "
            f"{inputs.budget}: raise the budget or shorten the task."
        )
    return fixed


def pack(hits: Sequence[Hit], inputs: PackInputs) -> PackedPrompt:
    """The prompt for `inputs.task` with as many hits as fit in its budget, most relevant
    first (see `PackInputs` for the rest). Raises BudgetTooSmall when the template and the
    task alone exceed the budget.
    """
    budget, counter, template = inputs.budget, inputs.counter, inputs.template
    task, change, secret_mode = inputs.task, inputs.change, inputs.secret_mode
    pinned, excluded, admitted = inputs.pinned, inputs.excluded, inputs.admitted
    trim_last, file_text, secrets = inputs.trim_last, inputs.file_text, inputs.secrets
    fixed = fixed_tokens(inputs)
    findings = {path: found for path, found in (secrets or {}).items() if found}
    cands, dropped = order_hits(hits, pinned)
    excluded_keys = set(excluded)
    held = held_back(cands, findings, excluded_keys, admitted) if secret_mode == "hold" else {}
    packer = _Packer(counter, template, file_text, findings if secret_mode == "redact" else None)
    room = budget - fixed
    packer.prefetch([c for c in cands if c.key not in excluded_keys and c.key not in held])
    accepted: list[Candidate] = []
    full = False
    first = next((c for c in cands if c.key not in excluded_keys and c.key not in held), None)
    for cand in cands:
        if cand.key in excluded_keys:
            tokens = packer.chunk_tokens(cand.chunk)
            dropped.append(DroppedChunk(cand.key, cand.rank, tokens, EXCLUDED))
            continue
        if cand.key in held:
            tokens = packer.chunk_tokens(cand.chunk)
            dropped.append(DroppedChunk(cand.key, cand.rank, tokens, SECRET, held[cand.key]))
            continue
        delta = 0 if full else packer.delta(cand)
        if not full and delta <= room:
            packer.accept(cand)
            accepted.append(cand)
            room -= delta
            continue
        # The best chunk is cut rather than lost when it alone is too big; any other chunk
        # only when the user asked to fill the budget with a part of the last one.
        if not full and (trim_last or cand is first):
            full = trim_last
            part = _largest_fitting_prefix(packer, cand, room)
            if part is not None:
                room -= packer.delta(part)
                packer.accept(part)
                accepted.append(part)
                dropped.append(_cut_off(cand, part, counter))
                continue
        dropped.append(
            DroppedChunk(cand.key, cand.rank, packer.chunk_tokens(cand.chunk), OVER_BUDGET)
        )

    # The per-block prices are additive estimates; the rendered prompt is what must fit.
    text, rendered = packer.render(task, change)
    total = counter.count(text)
    originals = {c.key: c.chunk for c in cands}
    while total > budget and accepted:
        last = accepted.pop()
        packer.remove(last)
        dropped = [d for d in dropped if d.key != last.key]  # forget a "cut" entry
        tokens = packer.chunk_tokens(originals[last.key])
        dropped.append(DroppedChunk(last.key, last.rank, tokens, OVER_BUDGET))
        text, rendered = packer.render(task, change)
        total = counter.count(text)

    blocks = tuple(
        PackedBlock(
            path=b.path,
            start_line=b.start,
            end_line=b.end,
            language=b.language,
            text=packer.block_text(b),
            tokens=counter.count(as_rendered),  # header and fences included
            chunk_keys=tuple(dict.fromkeys(m.key for m in sorted(b.members, key=_by_order))),
            best_rank=min(m.rank for m in b.members),
            secrets=_kinds(findings, b.path, b.start, b.end),
        )
        for b, as_rendered in rendered
    )
    dropped.sort(key=lambda d: (d.reason != EXCLUDED, d.rank, d.key))
    return PackedPrompt(
        text=text,
        tokens=total,
        budget=budget,
        encoding=counter.encoding,
        exact=counter.exact,
        blocks=blocks,
        dropped=tuple(dropped),
        secret_mode=secret_mode,
    )


def held_back(
    cands: Sequence[Candidate],
    findings: Mapping[str, Sequence[SecretFinding]],
    excluded: set[str],
    admitted: Sequence[str],
) -> dict[str, tuple[str, ...]]:
    """The candidates "hold" mode leaves out, with the kinds of secret each touches: all that
    touch one, but the excluded (they are out anyway) and the ones the user let in."""
    let_in = set(admitted)
    held: dict[str, tuple[str, ...]] = {}
    for cand in cands:
        kinds = _kinds(findings, cand.chunk.path, cand.chunk.start_line, cand.chunk.end_line)
        if kinds and cand.key not in excluded and cand.key not in let_in:
            held[cand.key] = kinds
    return held


CHANGE_SHARE = 0.5  # of the budget the change may take at most: the code needs the rest


def fit_change(diff: str, counter: TokenCounter, limit: int) -> tuple[str, int, int]:
    """The diff cut at a line so its section takes at most `limit` tokens, with a last line
    saying how many lines were left out: (text, lines shown, lines in all)."""
    from coderag_tui.core.prompt.render import change_section

    lines = split_lines(diff)
    total = len(lines)
    if counter.count(change_section(diff)) <= limit:
        return diff, total, total

    def cut(n: int) -> str:
        return "\n".join([*lines[:n], f"… ({total - n} more lines of the change left out)"])

    lo, hi, best = 0, total - 1, 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if counter.count(change_section(cut(mid))) <= limit:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return cut(best), best, total


def _kinds(
    findings: Mapping[str, Sequence[SecretFinding]], path: str, start: int, end: int
) -> tuple[str, ...]:
    found = findings.get(path)
    return kinds_in(found, start, end) if found else ()


@dataclass(frozen=True)
class SecretAccount:
    """What a prompt did with suspected secrets, file by file, for a face to say in a line.

    `held` lists (path, chunks held back, kinds); `included` lists (path, blocks, kinds) that
    went in, masked (mode "redact") or as they are (mode "allow").
    """

    mode: str
    held: tuple[tuple[str, int, tuple[str, ...]], ...]
    included: tuple[tuple[str, int, tuple[str, ...]], ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind named, specific ones before the generic ("Secret Keyword")."""
        found = {k for _, _, kinds in (*self.held, *self.included) for k in kinds}
        return tuple(sorted(found, key=lambda k: (k in GENERIC_KINDS, k)))


def secret_account(packed: PackedPrompt) -> SecretAccount:
    """The suspected secrets a packed prompt held back or let in, by file."""
    held: dict[str, tuple[int, set[str]]] = {}
    for d in packed.dropped:
        if d.reason == SECRET:
            path = d.key.rsplit(":", 1)[0]
            count, kinds = held.get(path, (0, set()))
            held[path] = (count + 1, kinds | set(d.secrets))
    included: dict[str, tuple[int, set[str]]] = {}
    for b in packed.blocks:
        if b.secrets:
            count, kinds = included.get(b.path, (0, set()))
            included[b.path] = (count + 1, kinds | set(b.secrets))

    def listed(
        found: dict[str, tuple[int, set[str]]],
    ) -> tuple[tuple[str, int, tuple[str, ...]], ...]:
        return tuple(
            (path, count, tuple(sorted(kinds, key=lambda k: (k in GENERIC_KINDS, k))))
            for path, (count, kinds) in found.items()
        )

    return SecretAccount(packed.secret_mode, listed(held), listed(included))


def packing_order(run: SearchRun, source: str | None = None) -> list[Hit]:
    """The hits a prompt packs from, renumbered from 1.

    By default the fused list (BM25 when there is none). With `source` "rerank", the
    reranker's top and then the rest of the fused list behind it (a reranker keeps only its
    top few); with another ranking's name, that list alone (empty when it is unavailable).
    """

    def listed(name: str) -> list[Hit]:
        ranking = run.rankings.get(name)  # type: ignore[call-overload]
        return list(ranking.hits) if ranking is not None and ranking.available else []

    if source is None or source == "rerank":
        base = listed("fused") or listed("bm25")
        first = listed("rerank") if source == "rerank" else []
        seen = {h.chunk.key for h in first}
        hits = first + [h for h in base if h.chunk.key not in seen]
    else:
        hits = listed(source)
    return [Hit(h.chunk, h.score, i, h.why) for i, h in enumerate(hits, start=1)]


def _by_order(cand: Candidate) -> int:
    return cand.order


@dataclass(frozen=True)
class Advice:
    """Chunk-size advice for a budget: one line for the user and the recommended setting."""

    text: str
    spec: ChunkingSpec
    recommended_lines: tuple[int, int] | None  # None: whole files
    chunks_that_fit: int


def budget_label(budget: int) -> str:
    """8000 -> `8k`, 8192 -> `8k`, 128000 -> `128k` (not 125 × 1024), 12500 -> `12.5k`,
    900 -> `900`."""
    if budget >= 1000 and budget % 1000 == 0:
        return f"{budget // 1000}k"
    if budget >= 1024 and budget % 1024 == 0:
        return f"{budget // 1024}k"
    if budget >= 1000:
        return f"{round(budget / 1000, 1):g}k"
    return str(budget)


def recommended_range(budget: int) -> tuple[int, int] | None:
    """Line-window range the research recommends for a budget; None means whole files."""
    if budget <= 4096:
        return (32, 64)
    if budget < 16_000:
        return (64, 128)
    return None


def advise(budget: int, chunk_lines: int, avg_tokens_per_line: float) -> Advice:
    """How big chunks should be for `budget` (research table) and how many current chunks fit."""
    per_chunk = max(1.0, chunk_lines * max(avg_tokens_per_line, 0.0)) + BLOCK_OVERHEAD_TOKENS
    fits = max(0, math.floor(budget / per_chunk))
    span = recommended_range(budget)
    label = budget_label(budget)
    if span is None:
        spec = ChunkingSpec(strategy="file")
        advice = f"budget {label} → whole files recommended"
    else:
        low, high = span
        lines = min(max(chunk_lines, low), high)
        spec = ChunkingSpec(strategy="lines", lines=lines)
        advice = f"budget {label} → {low}–{high}-line chunks recommended"
        if not low <= chunk_lines <= high:
            advice += f" (try {lines})"
    unit = "line" if chunk_lines == 1 else "lines"
    fit = (
        f"{fits} chunk of {chunk_lines} {unit} fits"
        if fits == 1
        else (f"{fits} chunks of {chunk_lines} {unit} fit")
    )
    text = f"{advice}; {fit}"
    return Advice(text=text, spec=spec, recommended_lines=span, chunks_that_fit=fits)
