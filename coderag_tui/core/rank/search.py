"""One query through the ready stages: BM25, dense, fusion, code signals and rerank, every
stage timed.

BM25 and dense stay raw (the debugging view); the fused list is the answer: their fusion (or
BM25 alone while dense is off) re-scored by the code signals (`core.rank.signals`), each hit
saying why. A Searcher ranks a fixed list of chunks with the parts it is given; the Engine
(`coderag_tui.core.engine`) opens those parts and builds the Searcher, and faces ask the
Engine, never a Searcher.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.rank.definitions import definitions_wanted
from coderag_tui.core.rank.fusion import rrf, weighted
from coderag_tui.core.rank.learned import Candidates, LearnedReranker
from coderag_tui.core.rank.lexical import LexicalIndex
from coderag_tui.core.rank.query_terms import analyse, is_issue_text
from coderag_tui.core.rank.signals import (
    SIGNAL_NAMES,
    CodeFacts,
    Weights,
    rescore,
    signals_on,
)
from coderag_tui.core.rank.templates import is_template, template_lines, without_template_lines
from coderag_tui.core.records import (
    Chunk,
    Hit,
    Ranking,
    RankingName,
    Scope,
    SearchRun,
    StageTiming,
)

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import Definitions
    from coderag_tui.core.rank.dense import DenseRanker
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.core.rank.rerank import Reranker
    from coderag_tui.settings import Settings

RERANK_OFF = "rerank is off: turn it on with --rerank (or rerank = true in the config)."
DENSE_OFF = "dense search is off: no embedding model was loaded."
DEFINITIONS_PENDING = (
    "the code signals ranked without the definitions for now: a background process is still "
    "parsing them after the first index; later searches use them."
)
_DENSE_PREFIX = "dense search is off: "
_DENSE_PREFIX_FOR_NOW = "dense search is off for now: "
# Issue text ranks better without dense on the dev sets (benchmarks/README.md, issue 41).
ISSUE_DENSE_OFF = (
    "dense is left out of the fused list for issue text: issue_dense_weight is 0; "
    "the dense column shows its own list"
)


LEARNED = "learned model"  # what made a list the learned reranker reordered


def _rerank_note(by: str, settings: Settings) -> str:
    """Which reranker made the Reranked list, and which list the prompt follows."""
    follows = (
        "the prompt follows it (prompt_order = reranked)"
        if settings.prompt_order == "reranked"
        else "the prompt follows the fused list (prompt_order = fused)"
    )
    return f"reranked by the {by}; {follows}."


def dense_length_prior(n_lines: int, short: int) -> float:
    """The share of its dense score a chunk of `n_lines` keeps: 1 from `short` lines up,
    sliding to half at one line."""
    if short <= 1 or n_lines >= short:
        return 1.0
    return 0.5 + 0.5 * (max(1, n_lines) - 1) / (short - 1)


def _dense_off(reason: str) -> str:
    """`dense search is off[ for now]: X` -> `dense is off[ for now]: X`, said once."""
    low = reason.lower()
    for prefix, said in (
        (_DENSE_PREFIX, "dense is off: "),
        (_DENSE_PREFIX_FOR_NOW, "dense is off for now: "),
    ):
        if low.startswith(prefix):
            return said + reason[len(prefix) :]
    return f"dense is off: {reason}"


class Searcher:
    """Ranks a fixed list of chunks for queries; holds the BM25 index and optional models."""

    def __init__(  # noqa: PLR0913
        self,
        chunks: Sequence[Chunk],
        bm25: LexicalIndex,
        dense: DenseRanker | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | LearnedReranker | None = None,
        dense_reason: str = "",
        rerank_reason: str = "",
        clock: Callable[[], float] = time.perf_counter,
        definitions: Definitions | None = None,
    ) -> None:
        # A ChunkList reads texts when a hit needs one; any other sequence is copied.
        self.chunks = chunks if isinstance(chunks, ChunkList) else list(chunks)
        self.bm25 = bm25
        # Given, or the lexical stage's (built and saved with BM25), or built on first use.
        self.definitions = definitions if definitions is not None else bm25.definitions
        self._facts: CodeFacts | None = None
        self._templates: frozenset[str] | None = None
        self.dense = dense
        self.embedder = embedder
        self.reranker = reranker
        self.dense_reason = dense_reason
        self.rerank_reason = rerank_reason
        self.clock = clock

    @property
    def dense_available(self) -> bool:
        return self.dense is not None and self.embedder is not None

    def _hits(self, scored: Sequence[tuple[int, float]], limit: int) -> tuple[Hit, ...]:
        return tuple(
            Hit(chunk=self.chunks[i], score=float(s), rank=r)
            for r, (i, s) in enumerate(scored[:limit], start=1)
        )

    def _length_prior(self, scored: list[tuple[int, float]], short: int) -> list[tuple[int, float]]:
        """Dense scores with chunks of fewer than `short` lines scaled by
        `dense_length_prior`, best first (a vector alone says little about a line)."""
        if short <= 1 or not scored:
            return scored
        chunks = self.chunks
        if isinstance(chunks, ChunkList):
            lines = [int(chunks.ends[i]) - int(chunks.starts[i]) + 1 for i, _ in scored]
        else:
            lines = [chunks[i].n_lines for i, _ in scored]
        rescored = [
            (i, s * dense_length_prior(n, short)) for (i, s), n in zip(scored, lines, strict=True)
        ]
        rescored.sort(key=lambda item: (-item[1], item[0]))
        return rescored

    def template_lines(self) -> frozenset[str]:
        """The lines of the repository's issue and pull-request templates, read once."""
        if self._templates is None:
            chunks = self.chunks
            if isinstance(chunks, ChunkList):
                starts = chunks.file_starts
                ids = [
                    i
                    for fid, path in enumerate(chunks.paths)
                    if is_template(path)
                    for i in range(int(starts[fid]), int(starts[fid + 1]))
                ]
            else:
                ids = [i for i, c in enumerate(chunks) if is_template(c.path)]
            self._templates = template_lines(chunks[i].text for i in ids)
        return self._templates

    def facts(self, weights: Weights) -> CodeFacts:
        """What the code signals read about the chunks (files, roles and, when a signal with
        these weights reads them, definitions), computed once."""
        wanted = bool(weights.definitions or weights.forms or weights.issue_terms or weights.tests)
        if wanted and self.definitions is None:
            later = self.bm25.definitions_later
            if later is not None:  # a child builds them in the background: used once done
                self.definitions = later()
            else:  # not built with the lexical stage: now
                from coderag_tui.core.rank.definitions import Definitions

                self.definitions = Definitions.build(self.chunks)
            if self.definitions is not None:
                self.bm25.definitions = self.definitions
                self._facts = None
        if self._facts is None:
            self._facts = CodeFacts(self.chunks, self.definitions)
        return self._facts

    def share_facts(self, other: Searcher) -> None:
        """Take the definitions and code facts `other` computed over the same chunks."""
        if other.definitions is not None:
            self.definitions = other.definitions
        self._facts = other._facts

    def overlapping(self, path: str, start_line: int, end_line: int) -> frozenset[int]:
        """Indexes of the chunks of `path` that share a line with start_line..end_line."""
        chunks = self.chunks
        if isinstance(chunks, ChunkList):
            if path not in chunks.paths:
                return frozenset()
            fid = chunks.paths.index(path)
            run = range(int(chunks.file_starts[fid]), int(chunks.file_starts[fid + 1]))
            return frozenset(
                i for i in run if chunks.starts[i] <= end_line and chunks.ends[i] >= start_line
            )
        return frozenset(
            i
            for i, c in enumerate(self.chunks)
            if c.path == path and c.start_line <= end_line and c.end_line >= start_line
        )

    def outside(self, scope: Scope) -> frozenset[int]:
        """Indexes of the chunks whose file lies outside `scope` (decided once per file)."""
        chunks = self.chunks
        if isinstance(chunks, ChunkList):
            starts = chunks.file_starts
            out: set[int] = set()
            for fid, path in enumerate(chunks.paths):
                if not scope.accepts(path):
                    out.update(range(int(starts[fid]), int(starts[fid + 1])))
            return frozenset(out)
        verdicts: dict[str, bool] = {}
        for c in chunks:
            if c.path not in verdicts:
                verdicts[c.path] = scope.accepts(c.path)
        return frozenset(i for i, c in enumerate(chunks) if not verdicts[c.path])

    def run(  # noqa: C901
        self, query: str, settings: Settings, *, exclude: AbstractSet[int] = frozenset()
    ) -> SearchRun:
        """Rank the chunks for `query` with every available method; see the module docstring.

        Chunks whose index is in `exclude` are left out of every ranking (code-to-code queries
        leave out the chunk the query lines come from, which would trivially rank first).
        An issue's lines that repeat the repository's issue template are left out of what is
        ranked (`core.rank.templates`); the run keeps the query as given.
        """
        given = query
        if "\n" in query:  # a template's line comes with others: a one-line query has none
            query = without_template_lines(query, self.template_lines())
        clock = self.clock
        depth = max(settings.depth, settings.k, 1)

        def keep(scored: list[tuple[int, float]]) -> list[tuple[int, float]]:
            return [(i, s) for i, s in scored if i not in exclude][:depth] if exclude else scored

        timings: list[StageTiming] = []
        notes: list[str] = []
        rankings: dict[RankingName, Ranking] = {}

        def timed(stage: str, start: float) -> float:
            now = clock()
            timings.append(StageTiming(stage, (now - start) * 1000.0))
            return now

        t = clock()
        tokens = self.bm25.tokenize_query(query)
        t = timed("tokenize", t)
        bm25_scored = keep(self.bm25.search_tokens(tokens, depth + len(exclude)))
        t = timed("bm25", t)
        rankings["bm25"] = Ranking("bm25", self._hits(bm25_scored, depth))
        if not tokens and query.strip():
            notes.append(
                "BM25 found no indexable words in the query (single digits alone are ignored)."
            )

        dense_scored: list[tuple[int, float]] | None = None
        if self.dense is not None and self.embedder is not None and query.strip():
            vector = self.embedder.embed_query(query)
            t = timed("embed query", t)
            short = settings.dense_short_lines
            wanted = depth + len(exclude)
            found = self.dense.search(vector, wanted * 2 if short > 1 else wanted)
            dense_scored = keep(self._length_prior(found, short)[:wanted])
            t = timed("vector search", t)
            rankings["dense"] = Ranking("dense", self._hits(dense_scored, depth))
        else:
            reason = self.dense_reason or DENSE_OFF
            if self.dense_available:
                reason = "dense search needs a non-empty query."
            rankings["dense"] = Ranking("dense", available=False, reason=reason)

        signals = signals_on(settings)
        with_signals = ""
        if signals:  # "signals" alone: every one of them (`SIGNAL_NAMES`)
            some = len(signals) < len(SIGNAL_NAMES)
            with_signals = f" + signals: {', '.join(signals)}" if some else " + signals"
        issue = dense_scored is not None and is_issue_text(query)
        dense_weight = settings.issue_dense_weight if issue else settings.dense_weight
        if dense_scored is None:
            fused, base = bm25_scored, "bm25"
            notes.append(f"fused = BM25{with_signals} ({_dense_off(rankings['dense'].reason)})")
        elif issue and not dense_weight:
            fused, base = bm25_scored, "bm25"
            notes.append(f"fused = BM25{with_signals} ({ISSUE_DENSE_OFF})")
        elif settings.fusion == "weighted":
            w = min(max(settings.bm25_weight, 0.0), 1.0)
            fused, base = weighted([bm25_scored, dense_scored], [w, 1.0 - w]), "weighted"
        else:
            lists = [[i for i, _ in bm25_scored], [i for i, _ in dense_scored]]
            fused, base = rrf(lists, settings.rrf_k, [1.0, dense_weight]), "rrf"
        t = timed("fusion", t)
        weights = Weights.from_settings(settings)
        terms = analyse(query) if signals and query.strip() else None
        scored = None  # the fused list with each chunk's reasons, when signals made it
        if signals and query.strip():
            scored = rescore(
                query,
                fused,
                self.facts(weights),
                weights,
                base=base,
                bm25=self.bm25,
                depth=depth,
                exclude=exclude,
                terms=terms,
            )
            hits = tuple(
                Hit(chunk=self.chunks[i], score=float(s), rank=r, why=why)
                for r, (i, s, why) in enumerate(scored[:depth], start=1)
            )
            rankings["fused"] = Ranking("fused", hits)
            fused = [(i, s) for i, s, _ in scored]  # what rerank takes its candidates from
            if base != "bm25":
                blend = "RRF" if base == "rrf" else "a weighted blend"
                notes.append(f"fused = {blend} of BM25 and dense{with_signals}")
            t = timed("signals", t)
            if self.definitions is None and definitions_wanted(settings):  # still being built
                notes.append(DEFINITIONS_PENDING)
        else:
            rankings["fused"] = Ranking("fused", self._hits(fused, depth))

        reranker = self.reranker
        if not settings.rerank:
            rankings["rerank"] = Ranking("rerank", available=False, reason=RERANK_OFF)
        elif reranker is None:
            reason = self.rerank_reason or "rerank is off: no reranker is available."
            rankings["rerank"] = Ranking("rerank", available=False, reason=reason)
            notes.append(reason)
        elif isinstance(reranker, LearnedReranker):
            if scored is None:  # no signals: the fused scores, each with its one reason
                top = max((s for _, s in fused), default=0.0) or 1.0
                scored = [(i, s, ((base, s / top),)) for i, s in fused]
            candidates = Candidates(
                query=query,
                terms=terms if terms is not None else analyse(query),
                tokens=tokens,
                bm25=bm25_scored,
                dense=dense_scored,
                fused=scored,
                facts=self.facts(weights),
                chunks=self.chunks,
                lexical=self.bm25,
            )
            reranked = reranker.rerank(candidates, settings.learned_candidates)
            timed("rerank", t)
            rankings["rerank"] = Ranking(
                "rerank",
                tuple(
                    Hit(chunk=self.chunks[i], score=s, rank=r, why=why)
                    for r, (i, s, why) in enumerate(reranked[:depth], start=1)
                ),
                by=LEARNED,
            )
            notes.append(_rerank_note(LEARNED, settings))
        else:
            pool = [i for i, _ in fused[: max(settings.rerank_candidates, 0)]]
            scores = reranker.score(query, [self.chunks[i].text for i in pool])
            order = sorted(range(len(pool)), key=lambda j: -scores[j])
            by_model = [(pool[j], float(scores[j])) for j in order]
            timed("rerank", t)
            by = f"cross-encoder {getattr(reranker, 'name', '')}".strip()
            hits = self._hits(by_model, settings.rerank_keep)
            rankings["rerank"] = Ranking("rerank", hits, by=by)
            notes.append(_rerank_note(by, settings))

        return SearchRun(
            query=given,
            rankings=rankings,
            timings=tuple(timings),
            notes=tuple(notes),
            fused_from=base,
        )
