"""The code-completion task built from the repository itself (`coderag eval --completion N`).

Each row is one target line that uses (calls, or reaches into with a dot) a class or function
defined in exactly one *other* file of the repository; the query is the `query_lines` lines
before it, searched as a code-to-code query (the chunks holding the query's own lines rank in
no list, as `--from FILE:LINE` does), and the gold is the file that defines the name. Names and
where they are defined come from the definitions extractor the index uses
(`core.rank.definitions.file_definitions`: tree-sitter, or the Python scan), so every language
coderag chunks takes part.

Besides the file-level metrics every eval prints, each row says whether the definition's line
is in the prompt that coderag's own packer fills from the mode's ranking within each budget
(128 to 16k tokens, counted with the prompt's encoding). This is the retrieval side of the
exact-match metric of "Practical Code RAG at Scale": offline there is no generator, so the
question is whether the code a model would need reached its prompt.

Rows are drawn with a seeded generator, a file at a time in turn, so one large file does not
fill the task, and the same repository and seed always give the same rows.
"""

from __future__ import annotations

import builtins
import random
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from coderag_tui.core.eval.datasets import CandidateFilter, EvalRow
from coderag_tui.core.eval.evaluation import (
    ANY_TOKENIZER,
    CHUNK_MODES,
    EvalProgress,
    EvalReport,
    Grid,
    InstanceResult,
    Models,
    _embed_progress,
    _Prompts,
    _ranking,
    _score,
    chunking_settings,
    finished,
    opened,
    use_variant,
)
from coderag_tui.core.eval.metrics import GoldChunk
from coderag_tui.core.eval.structure_lists import STRUCTURE_LISTS, StructureLists
from coderag_tui.core.records import Hit, Origin, SearchRun

if TYPE_CHECKING:
    from pathlib import Path

    from coderag_tui.core.index.imports import ImportGraph
    from coderag_tui.core.prompt.render import Template
    from coderag_tui.core.prompt.tokens import TokenCounter
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.settings import Settings

# The budgets of the paper's sweep, in tokens of the prompt's encoding.
BUDGETS: tuple[int, ...] = (128, 1000, 4000, 8000, 16000)
# Kinds of definition a target may use: classes and functions (methods too), not constants.
USED_KINDS = frozenset({"type", "function"})
MIN_NAME = 3  # shorter names (`f`, `id`) are too common to say which definition a line uses
# A method named like a builtin (`next`, `open`) is not what a call of the builtin uses.
_BUILTINS = frozenset(dir(builtins))
# A use: a function called, a class called or reached into (`Config.load`), not a mention.
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_USE_AFTER = {"function": ("(",), "type": ("(", ".")}
# Lines that only bring a name in, or talk about it: no completion a model would be asked for.
_NOT_CODE = (
    "import ",
    "from ",
    "#include",
    "#",
    "//",
    "/*",
    "*",
    "use ",
    "using ",
    "require ",
    '"""',
    "'''",
)


@dataclass(frozen=True, slots=True)
class CompletionRow:
    """One target line: where it is, the name it uses, where that name is defined, the query."""

    path: str
    line: int
    name: str
    kind: str  # of the definition: type or function
    gold: str  # the file that defines the name
    gold_line: int  # the line of the definition's name there
    query: str  # the `query_lines` lines before the target (the target excluded)
    query_start: int  # the first line of the query
    language: str | None

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def origin(self) -> Origin:
        """The query's lines and the target's: the chunks holding them rank in no list."""
        return Origin.at(self.path, self.query_start, self.line)

    def eval_row(self) -> EvalRow:
        """The row as the file metrics and recall at a budget read it: the defining file is
        the gold file, the defining line the gold line."""
        return EvalRow(
            id=self.id,
            query=self.query,
            gold_files=(self.gold,),
            category=self.kind,
            language=self.language,
            changed=(GoldChunk(self.gold, self.gold_line, self.gold_line),),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "path": self.path,
            "line": self.line,
            "name": self.name,
            "kind": self.kind,
            "gold": self.gold,
            "gold_line": self.gold_line,
            "language": self.language,
            "query": self.query,
        }


@dataclass(frozen=True, slots=True)
class _Defined:
    path: str
    line: int
    kind: str
    nested: bool  # indented: a method (or a function inside one), reached through a receiver


def _definitions(
    texts: dict[str, tuple[str, str | None]],
) -> dict[str, _Defined]:
    """Class and function names defined in exactly one file, with where (the first spelling)."""
    from coderag_tui.core.rank.definitions import file_definitions

    where: dict[str, dict[str, _Defined]] = defaultdict(dict)
    for path, (text, language) in texts.items():
        lines = text.splitlines()
        for line, name, kind in file_definitions(text.encode("utf-8"), language):
            if kind not in USED_KINDS or len(name) < MIN_NAME or name.startswith("__"):
                continue
            if name in _BUILTINS:
                continue
            nested = line <= len(lines) and lines[line - 1][:1].isspace()
            where[name].setdefault(path, _Defined(path, line, kind, nested))
    return {name: next(iter(files.values())) for name, files in where.items() if len(files) == 1}


def _uses(line_text: str, defined: dict[str, _Defined], path: str) -> str | None:
    """The first name on the line that is used as code and defined in another file."""
    stripped = line_text.lstrip()
    if not stripped or stripped.startswith(_NOT_CODE):
        return None
    for match in _IDENT.finditer(line_text):
        name = match.group()
        found = defined.get(name)
        if found is None or found.path == path:
            continue
        if line_text[match.end() : match.end() + 1] in _USE_AFTER[found.kind]:
            before = line_text[: match.start()].rstrip()
            if before.endswith(("def", "class", "function", "fn", "func")):
                continue  # a definition of its own, not a use
            if before.endswith(".") and not _reaches(before[:-1], found):
                continue  # `text.split(`: a method of something else with the same name
            if not before.endswith(".") and found.nested:
                continue  # `setup()` calls no method `setup` (a test's, say): an import's
            return name
    return None


def _reaches(before: str, found: _Defined) -> bool:
    """Whether `receiver.name` reaches the definition: through its module (the file's stem)
    or a class. Not through `self` or `this`: what they are is not written on the line (in
    `this.get(` of an Express app, `get` is not the response's)."""
    receiver = re.search(r"[\w$]+$", before)
    if receiver is None:
        return False
    word = receiver.group()
    stem = found.path.rsplit("/", 1)[-1].split(".", 1)[0]
    # `Widget.render`: a class; `ALLOWED.update`: a constant, which is no class of the repository
    return word == stem or (word[:1].isupper() and not word.isupper())


@dataclass(frozen=True, slots=True)
class CompletionTask:
    """The rows drawn from one repository, and how many target lines it had to draw from."""

    repo: str
    seed: int
    query_lines: int
    available: int  # target lines found in the repository
    files: int  # files holding at least one
    rows: tuple[CompletionRow, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "seed": self.seed,
            "query_lines": self.query_lines,
            "available": self.available,
            "files": self.files,
            "rows": [r.to_json() for r in self.rows],
        }


def completion_rows(
    settings: Settings,
    n: int,
    *,
    seed: int = 0,
    query_lines: int | None = None,
    candidates: CandidateFilter | None = None,
) -> list[CompletionRow]:
    """N completion rows of the repository at `settings.repo_root`, the same for the same seed."""
    task = completion_task(settings, n, seed=seed, query_lines=query_lines, candidates=candidates)
    return list(task.rows)


def completion_task(
    settings: Settings,
    n: int,
    *,
    seed: int = 0,
    query_lines: int | None = None,
    candidates: CandidateFilter | None = None,
) -> CompletionTask:
    """N completion rows of the repository at `settings.repo_root`, the same for the same seed.

    Files are read as the index reads them; a gold file must be a candidate (`candidates`).
    Fewer than N rows come back when the repository has fewer such lines.
    """
    from coderag_tui.core.index.indexer import index_excludes
    from coderag_tui.core.index.walk import read_source, walk

    accepts = (candidates or CandidateFilter()).accepts
    lines_before = query_lines if query_lines is not None else settings.query_lines
    root = settings.repo_root
    listed = walk(
        root,
        max_file_bytes=settings.max_file_bytes,
        exclude=index_excludes(settings),
        include_secret_files=settings.include_secret_files,
    )
    texts: dict[str, tuple[str, str | None]] = {}
    for file in listed.files:
        read = read_source(
            root,
            file,
            max_line_chars=settings.max_line_chars,
            max_file_bytes=settings.max_file_bytes,
        )
        if isinstance(read, tuple):
            texts[file.path] = (read[0], file.language)
    every = _definitions(texts)
    defined = {name: where for name, where in every.items() if accepts(where.path)}
    # Targets are code: lines of languages whose files define names (not docs, not config).
    coding = {texts[where.path][1] for where in every.values()}
    per_file: dict[str, list[CompletionRow]] = {}
    for path, (text, language) in sorted(texts.items()):
        if language not in coding:
            continue
        lines = text.splitlines()
        found: list[CompletionRow] = []
        for number, line_text in enumerate(lines, start=1):
            if number < 2:
                continue
            name = _uses(line_text, defined, path)
            if name is None:
                continue
            start = max(1, number - lines_before)
            query = "\n".join(lines[start - 1 : number - 1])
            if not query.strip():
                continue
            where = defined[name]
            found.append(
                CompletionRow(
                    path=path,
                    line=number,
                    name=name,
                    kind=where.kind,
                    gold=where.path,
                    gold_line=where.line,
                    query=query,
                    query_start=start,
                    language=language,
                )
            )
        if found:
            per_file[path] = found
    return CompletionTask(
        repo=root.name,
        seed=seed,
        query_lines=lines_before,
        available=sum(len(rows) for rows in per_file.values()),
        files=len(per_file),
        rows=tuple(_draw(per_file, n, seed)),
    )


def _draw(per_file: dict[str, list[CompletionRow]], n: int, seed: int) -> list[CompletionRow]:
    """N rows, one file at a time in a seeded order, a seeded line of each; in path order."""
    rng = random.Random(seed)
    pools = {path: rows[:] for path, rows in sorted(per_file.items())}
    for rows in pools.values():
        rng.shuffle(rows)
    order = sorted(pools)
    rng.shuffle(order)
    chosen: list[CompletionRow] = []
    while len(chosen) < n and order:
        for path in list(order):
            if len(chosen) >= n:
                break
            chosen.append(pools[path].pop())
            if not pools[path]:
                order.remove(path)
    return sorted(chosen, key=lambda r: (r.path, r.line))


# --- running the task ---------------------------------------------------------------------


def packed_at(
    hits: Sequence[Hit],
    row: CompletionRow,
    budgets: Sequence[int],
    counter: TokenCounter,
    template: Template,
) -> dict[int, bool]:
    """Per budget, whether the prompt packed from `hits` holds the line defining the name.

    The prompt is the retrieved code alone (the task left empty): the budget is what the
    retrieved context may take, as in the paper's sweep.
    """
    from coderag_tui.core.prompt.pack import BudgetTooSmall, PackInputs, pack

    out: dict[int, bool] = {}
    if not any(h.chunk.path == row.gold for h in hits):
        return dict.fromkeys(budgets, False)
    for budget in budgets:
        try:
            packed = pack(
                hits, PackInputs(budget=budget, counter=counter, template=template, task="")
            )
        except BudgetTooSmall:
            out[budget] = False
            continue
        out[budget] = any(
            b.path == row.gold and b.start_line <= row.gold_line <= b.end_line
            for b in packed.blocks
        )
    return out


def run_completion(
    rows: Sequence[CompletionRow],
    settings: Settings,
    grid: Grid,
    *,
    budgets: Sequence[int] = BUDGETS,
    progress: Callable[[EvalProgress], None] | None = None,
    cancel: threading.Event | None = None,
    embedder: Embedder | None = None,
    baseline: tuple[str, str, str] | None = None,
    resamples: int = 10_000,
) -> EvalReport:
    """Every completion row under every configuration of the grid, on the repository as it
    is: one index per chunking, then one code-to-code search per row and tokenizer, scored on
    files and packed at each budget per mode."""
    from coderag_tui.core.engine import prompt_tools

    grid.validate()
    started = time.perf_counter()
    notes: list[str] = []
    models = Models.start(settings, grid, notes, embedder)
    template, counter = prompt_tools(settings)
    if counter.note:
        notes.append(counter.note)
    results: list[InstanceResult] = []
    per_chunking = len(grid.lexicals) * len(rows)
    graphs: dict[Path, ImportGraph] = {}  # the import graph, for the structure-aware lists
    total = len(grid.chunkings) * per_chunking
    label = settings.repo_root.name
    cancelled = False
    for c_index, chunking in enumerate(grid.chunkings):
        step = c_index * per_chunking
        if cancel is not None and cancel.is_set():
            cancelled = True
            break
        base = chunking_settings(
            settings, settings.repo_root, chunking, grid, models.reranker is not None
        ).with_(budget=max(budgets, default=settings.budget))
        if progress is not None:
            progress(EvalProgress(step, total, chunking, "indexing"))
        embed_progress = _embed_progress(progress, step, total, chunking)
        with opened(base, models, embed_progress=embed_progress, cancel=cancel) as (
            engine,
            lexical,
            prepare_s,
        ):
            structure = StructureLists(settings.repo_root, lexical.chunks, graphs, notes)
            for t_index, variant in enumerate(grid.lexicals):
                tok_settings = use_variant(engine, base, lexical, variant)
                for r_index, row in enumerate(rows):
                    if cancel is not None and cancel.is_set():
                        cancelled = True
                        break
                    run = engine.search(row.query, tok_settings, row.origin)
                    prompts = _Prompts(
                        engine,
                        tok_settings,
                        row.eval_row(),
                        settings.repo_root,
                        grid.candidates,
                        grid.budgets,
                    )
                    whole = prompts.whole(run) if t_index == 0 else None
                    results += [
                        replace(r, budgets=prompts.at(run, mode), whole=whole)
                        if grid.budgets and mode in CHUNK_MODES
                        else r
                        for mode, r in _row_results(
                            run,
                            row,
                            _Where(label, chunking, variant.label, t_index, prepare_s, structure),
                            grid,
                            budgets,
                            (counter, template),
                            notes,
                        )
                    ]
                    if progress is not None:
                        done = step + t_index * len(rows) + r_index + 1
                        progress(EvalProgress(done, total, f"{chunking} · {variant.label}", row.id))
                if cancelled:
                    break
        if cancelled:
            break
        if progress is not None:
            progress(EvalProgress(step + per_chunking, total, chunking, "done"))
    return finished(
        results,
        grid,
        notes,
        (),
        started,
        cancelled=cancelled,
        baseline=baseline,
        resamples=resamples,
    )


@dataclass(frozen=True, slots=True)
class _Where:
    """Which configuration a search ran under, for its results."""

    repo: str
    chunking: str
    tokenizer: str
    t_index: int
    prepare_s: float
    structure: StructureLists | None = None


def _row_results(
    run: SearchRun,
    row: CompletionRow,
    where: _Where,
    grid: Grid,
    budgets: Sequence[int],
    tools: tuple[TokenCounter, Template],
    notes: list[str],
) -> list[tuple[str, InstanceResult]]:
    """One row's results under each mode (with the mode's name): file metrics, and the
    packing of chunk rankings (the paper's sweep, with whole chunks)."""
    out: list[tuple[str, InstanceResult]] = []
    eval_row = row.eval_row()
    for mode in grid.modes:
        if mode == "dense" and where.t_index > 0:
            continue  # identical for every tokenizer
        result = _score(
            run,
            mode,
            eval_row,
            where.repo,
            where.chunking,
            ANY_TOKENIZER if mode == "dense" else where.tokenizer,
            grid,
            where.prepare_s,
            candidates=grid.candidates,
            structure=where.structure,
        )
        ranking = _ranking(run, mode)
        if result is None:
            reason = ranking.reason if ranking is not None else ""
            if mode in STRUCTURE_LISTS:
                reason = StructureLists.reason(run)
            note = f"{mode} is unavailable: {reason or 'no ranking'}"
            if note not in notes:
                notes.append(note)
            continue
        if ranking is not None:  # fused-files ranks files, so it packs no prompt
            hits = [h for h in ranking.hits if grid.candidates.accepts(h.chunk.path)]
            result = replace(result, packed=packed_at(hits, row, budgets, *tools))
        out.append((mode, result))
    return out
