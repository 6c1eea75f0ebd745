"""What `coderag mcp`'s tools answer: search, context, related and status as JSON-ready data.

The MCP protocol lives in `mcp_cmd`; this module never imports the SDK, so the answers can be
read and tested as plain values. Every answer comes from one `core.resident.Resident` (the
engine `coderag serve` keeps open, fresh through the file watch), one request at a time.

Repository text is someone else's, and the asking program is a model acting on it:
- every path an agent passes (`related`'s path, `search`'s paths) is a repository path that
  the index would read or a glob inside the repository: `..`, absolute paths outside it and
  links leading out are refused in one sentence (`scope_pattern`, `code_query`);
- a chunk touching a suspected secret has its text held back, masked or let in exactly as a
  prompt would (`secrets` setting), and the answer says which;
- texts are data in JSON strings, never markup, and every answer is bounded: at most `MAX_K`
  hits a page, `MAX_HIT_CHARS` characters of text a hit, `MAX_ANSWER_CHARS` characters in all,
  `MAX_BUDGET` tokens a prompt; whatever is cut is said in the answer, with the next page;
- what an answer repeats is bounded and masked too: the query it was ranked for (for
  `related`, a file's own lines) has its secrets masked as a prompt's task has them (unless
  `secrets` is allow), and a refusal quotes an argument on one line, cut at 80 characters;
- every argument is checked here, its type included, so a wrong one gets one sentence;
- `related` reads only a file inside the scope the server was started with (`--include`,
  `--exclude`), as `search` ranks only those.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from coderag_tui import __version__
from coderag_tui.core.echo import echoed_query
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.records import EVERY_FILE, Hit, RankingName, Scope, SearchRun

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.core.resident import Resident
    from coderag_tui.settings import Settings

Mode = Literal["fused", "bm25", "dense", "rerank"]
MODES: tuple[Mode, ...] = ("fused", "bm25", "dense", "rerank")
MAX_K = 50  # hits a page
MAX_OFFSET = 200  # how deep paging reaches
MAX_HIT_CHARS = 4000  # characters of one hit's text
MAX_ANSWER_CHARS = 60_000  # characters of all the texts of one answer
MAX_BUDGET = 32_000  # tokens of a `context` prompt
MAX_QUERY_CHARS = 20_000  # characters of a query or task
MAX_PATHS = 20  # patterns in `search`'s paths
MAX_PATH_CHARS = 1024  # characters of one path or pattern an agent passes
MAX_QUERY_ECHO = 500  # characters of the query an answer repeats
OPEN_WAIT_S = 20.0  # how long a tool waits for the index to open before saying so
# How long a call waits for another call's answer (one at a time on the engine), and how long
# one answer may work before the agent is told: a prompt over a hostile file took minutes
# while every other call waited. `status` waits for neither.
BUSY_WAIT_S = 10.0
MAX_ANSWER_S = 60.0


class ToolFailure(CoderagError):
    """A request the tool cannot answer; the message is one sentence the agent can act on."""


@dataclass
class _Opening:
    """How far opening the index has come, for `status` and tools asked meanwhile."""

    progress: IndexProgress | None = None
    embedded: tuple[int, int] | None = None
    failure: str = ""
    done: threading.Event = field(default_factory=threading.Event)


class Tools:
    """The MCP tools over one resident engine, opened in the background by `open_in_background`
    (an agent's handshake must not wait for a first index build)."""

    def __init__(self, settings: Settings, scope: Scope = EVERY_FILE, *, dense: bool = True):
        self.settings = settings
        self.scope = scope
        self.dense = dense
        self.resident: Resident | None = None
        self.watch_note = ""
        self._opening = _Opening()

    # ---------------------------------------------------------------- opening
    def open_in_background(self, open_resident: Callable[..., tuple[Resident, str]]) -> None:
        """Open the resident engine in a daemon thread with `open_resident(progress=...,
        embed_progress=...)`; tools wait for it (at most `OPEN_WAIT_S` each)."""
        opening = self._opening

        def progress(step: IndexProgress) -> None:
            opening.progress = step

        def embedded(done: int, total: int) -> None:
            opening.embedded = (done, total)

        def run() -> None:
            try:
                self.resident, self.watch_note = open_resident(
                    progress=progress, embed_progress=embedded
                )
            except Exception as exc:  # said by every tool from now on
                opening.failure = str(exc).rstrip(".") or type(exc).__name__
            finally:
                opening.done.set()

        threading.Thread(target=run, name="coderag-mcp-open", daemon=True).start()

    def use(self, resident: Resident) -> None:
        """Answer from an already open resident engine."""
        self.resident = resident
        self._opening.done.set()

    def _ready(self) -> Resident:
        opening = self._opening
        opening.done.wait(OPEN_WAIT_S)
        if opening.failure:
            raise ToolFailure(f"the index could not be opened: {opening.failure}.")
        if self.resident is None:
            raise ToolFailure(f"{self._opening_text()}: ask again in a minute (status shows it).")
        return self.resident

    def _opening_text(self) -> str:
        step, embedded = self._opening.progress, self._opening.embedded
        if embedded is not None:
            return f"the model is embedding the chunks ({embedded[0]:,} of {embedded[1]:,})"
        if step is None:
            return "the index is being opened"
        seconds = f"{step.elapsed_s:.0f} s so far"
        if step.stage == "wait":
            return "another coderag is building this repository's index; waiting for it"
        if step.stage == "bm25":
            return f"the BM25 index of {step.chunks:,} chunks is being built ({seconds})"
        if step.stage == "walk" or not step.files_total:
            return f"the repository's files are being listed ({seconds})"
        return (
            f"the index is being built ({step.files_done:,} of {step.files_total:,} files, "
            f"{seconds})"
        )

    @contextmanager
    def _engine(self, settings: Settings, *, rerank: bool = False) -> Iterator[Engine]:
        """The resident engine, fresh, for one request; index failures are one sentence."""
        from coderag_tui.core.index.store import StoreError
        from coderag_tui.core.resident import Busy

        resident = self._ready()
        try:
            with resident.serving(
                settings, dense=self.dense, rerank=rerank, wait=BUSY_WAIT_S
            ) as engine:
                yield engine
        except (StoreError, Busy) as exc:
            raise ToolFailure(f"{str(exc).rstrip('.')}.") from exc

    # ---------------------------------------------------------------- tools
    def search(
        self,
        query: str,
        k: int = 10,
        mode: Mode = "fused",
        paths: Sequence[str] = (),
        offset: int = 0,
    ) -> dict[str, Any]:
        """Ranked chunks for a question, a page at a time (see `mcp_cmd` for the contract)."""
        query = _text(query, "query")
        k, offset = _bounded(k, 1, MAX_K, "k"), _bounded(offset, 0, MAX_OFFSET, "offset")
        if not isinstance(mode, str) or mode not in MODES:
            raise ToolFailure(f"mode must be one of {', '.join(MODES)}, not {_quoted(mode)}.")
        scope = self.scope.narrowed(self._patterns(paths))
        settings = self.settings.with_(k=offset + k, rerank=mode == "rerank")
        with self._engine(settings, rerank=mode == "rerank") as engine:
            run = engine.search(query, settings, scope=scope)
            return self._page(engine, run, mode, k, offset)

    def related(self, path: str, line: int, k: int = 10) -> dict[str, Any]:
        """Code like the code at PATH:LINE, the chunk that code comes from left out."""
        from coderag_tui.core.engine import code_query
        from coderag_tui.core.given_paths import LocationError

        k = _bounded(k, 1, MAX_K, "k")
        line = _bounded(line, 1, 10_000_000, "line")
        path = _path(path, "path")
        settings = self.settings.with_(k=k, rerank=False)
        try:
            # the lines ending at LINE (included): the code an agent points at
            query, origin = code_query(settings, path, line + 1, settings.query_lines)
        except LocationError as exc:
            raise ToolFailure(str(exc)) from exc
        span = origin.spans[0]
        if not self.scope.accepts(span.path):
            raise ToolFailure(
                f"{_quoted(span.path)} is outside the files this server answers for "
                f"({self.scope.describe()}): give a file inside them."
            )
        with self._engine(settings) as engine:
            run = engine.search(query, settings, origin, self.scope)
            answer = self._page(engine, run, "fused", k, 0)
        answer["origin"] = {
            "path": span.path,
            "start_line": span.start_line,
            "end_line": span.end_line,
            "left_out": run.left_out,
        }
        return answer

    def context(self, task: str, budget: int = 8000) -> dict[str, Any]:
        """The packed prompt for a task within a token budget, and what went in and what not."""
        from coderag_tui.core.engine import PromptError, PromptRequest
        from coderag_tui.core.prompt.account import readable, saved
        from coderag_tui.core.prompt.pack import secret_account

        task = _text(task, "task")
        budget = _bounded(budget, 256, MAX_BUDGET, "budget")
        settings = self.settings.with_(budget=budget, rerank=False)
        with self._engine(settings) as engine:
            try:
                run = engine.search(task, settings, scope=self.scope)
                result = engine.prompt(run, PromptRequest(task), settings)
            except PromptError as exc:
                raise ToolFailure(str(exc)) from exc
            notes = self._notes(engine, result.run)
        packed = result.packed
        account = secret_account(packed)
        if account.held:
            files = ", ".join(path for path, _, _ in account.held)
            notes.append(
                f"held back chunks of {files}: they look like secrets ({', '.join(account.kinds)})."
            )
        if result.task_secrets:
            kept = packed.secret_mode == "allow"
            notes.append(
                f"the task holds what looks like a secret ({', '.join(result.task_secrets)}): "
                + ("kept as it is (secrets = allow)." if kept else "masked as <redacted:TYPE>.")
            )
        return {
            "prompt": packed.text,
            "tokens": packed.tokens,
            "budget": packed.budget,
            "encoding": packed.encoding,
            "blocks": [
                {
                    "path": b.path,
                    "start_line": b.start_line,
                    "end_line": b.end_line,
                    "tokens": b.tokens,
                    "best_rank": b.best_rank,
                    "lines": [list(part) for part in b.shown],
                    "outline": b.outline,
                }
                for b in packed.blocks
            ],
            "saved": saved(packed),
            "readable": readable(packed),
            "stopped": packed.stopped,
            "dropped": _dropped(packed.dropped),
            "secrets": {
                "mode": packed.secret_mode,
                "held_back": [{"path": p, "chunks": n} for p, n, _ in account.held],
                "kinds": list(account.kinds),
            },
            "notes": notes,
        }

    def status(self) -> dict[str, Any]:
        """The index, the dense stage and its coverage, without waiting for anything."""
        settings = self.settings
        answer: dict[str, Any] = {
            "version": __version__,
            "repository": str(settings.repo_root),
            "chunking": settings.chunking_spec.key,
            "scope": _scope_record(self.scope),
            "limits": {
                "k": MAX_K,
                "offset": MAX_OFFSET,
                "hit_chars": MAX_HIT_CHARS,
                "answer_chars": MAX_ANSWER_CHARS,
                "budget": MAX_BUDGET,
                "answer_seconds": MAX_ANSWER_S,
            },
        }
        opening = self._opening
        resident = self.resident
        if resident is None:
            answer["ready"] = False
            answer["state"] = (
                f"the index could not be opened: {opening.failure}."
                if opening.failure
                else f"{self._opening_text()}."
            )
            return answer
        engine = resident.engine
        lexical, dense, rerank = engine.lexical, engine.dense, engine.rerank
        checks = resident.checks
        answer["ready"] = True
        answer["index"] = {
            "chunks": len(lexical.chunks) if lexical is not None else 0,
            "files": lexical.files if lexical is not None else 0,
            "generation": lexical.generation if lexical is not None else "",
            "watch": resident.watch_note() or self.watch_note or "watching the files",
            "checks": {
                "trusted": checks.trusted,
                "checked": checks.checked,
                "background": checks.background,
            },
        }
        described: dict[str, Any] = dense.describe() if dense is not None else {}
        described["reason"] = dense.reason if dense is not None else "dense search is off."
        if not self.dense:
            described["reason"] = "dense search is off: coderag mcp was started with --no-dense."
        from coderag_tui.core.rank.embedding_status import read_status

        background = read_status(settings.index_path) if resident.background else None
        # What the background process is doing now, with its time left (None: none runs).
        described["background"] = None if background is None else background.describe()
        answer["dense"] = described
        answer["rerank"] = {
            "available": rerank is not None and rerank.reranker is not None,
            "reason": rerank.reason if rerank is not None else "loaded on a first rerank search",
        }
        answer["notes"] = list(engine.notices)
        return answer

    # ---------------------------------------------------------------- shaping answers
    def _patterns(self, paths: Sequence[str]) -> tuple[str, ...]:
        from coderag_tui.core.given_paths import LocationError, scope_pattern

        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, (list, tuple)):
            raise ToolFailure(f"paths must be a list of paths or globs, not {_quoted(paths)}.")
        if len(paths) > MAX_PATHS:
            raise ToolFailure(f"paths takes at most {MAX_PATHS} paths or globs, not {len(paths)}.")
        checked = [_path(p, "each of paths") for p in paths]
        try:
            return tuple(scope_pattern(self.settings.repo_root, p) for p in checked)
        except LocationError as exc:
            raise ToolFailure(str(exc)) from exc

    def _notes(self, engine: Engine, run: SearchRun) -> list[str]:
        notes = list(dict.fromkeys((*engine.notices, *run.notes)))
        if run.scope.active:
            notes.append(
                f"ranked files in scope only ({run.scope.describe()}): "
                f"{run.out_of_scope} chunk(s) left out."
            )
        return notes

    def _page(
        self, engine: Engine, run: SearchRun, mode: Mode, k: int, offset: int
    ) -> dict[str, Any]:
        notes = self._notes(engine, run)
        name: RankingName = mode
        ranking = run.rankings.get(name)
        if ranking is None or not ranking.available:
            reason = ranking.reason if ranking is not None else f"{mode} is unavailable."
            notes.append(f"showing the {run.final.name} ranking: {reason}")
            ranking = run.final
        hits = list(ranking.hits[offset : offset + k])
        texts = engine.held_texts([h.chunk for h in hits], self.settings.secrets)
        shown: list[dict[str, Any]] = []
        room = MAX_ANSWER_CHARS
        cut = ""
        for hit, (text, kinds) in zip(hits, texts, strict=True):
            record = _hit_record(hit, text, kinds, self.settings.secrets)
            size = len(record.get("text") or "")
            if shown and size > room:
                cut = (
                    f"the answer reached its size bound ({MAX_ANSWER_CHARS:,} characters of "
                    f"text) after {len(shown)} hits: ask again with offset "
                    f"{offset + len(shown)} for the rest."
                )
                break
            room -= size
            shown.append(record)
        more = len(ranking.hits) > offset + len(shown)
        answer: dict[str, Any] = {
            "query": echoed_query(run.query, self.settings.secrets, MAX_QUERY_ECHO),
            "ranking": ranking.name,
            "offset": offset,
            "hits": shown,
            "next_offset": offset + len(shown)
            if more and offset + len(shown) <= MAX_OFFSET
            else None,
            "notes": notes,
        }
        if cut:
            answer["cut"] = cut
        return answer


def _hit_record(hit: Hit, text: str | None, kinds: tuple[str, ...], mode: str) -> dict[str, Any]:
    chunk = hit.chunk
    record: dict[str, Any] = {
        "rank": hit.rank,
        "path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "score": round(hit.score, 6),
        "why": {name: round(value, 6) for name, value in hit.why},
    }
    if text is None:
        record["text"] = None
        record["held_back"] = (
            f"it looks like a secret ({', '.join(kinds)}); coderag's secrets setting "
            "(redact or allow) lets it through."
        )
        return record
    if len(text) > MAX_HIT_CHARS:
        kept = text[:MAX_HIT_CHARS].rsplit("\n", 1)[0]
        shown = kept.count("\n") + 1
        record["text"] = kept
        record["text_cut"] = (
            f"the first {shown} of {chunk.n_lines} lines ({MAX_HIT_CHARS:,} characters at most "
            "a hit): read the file for the rest."
        )
    else:
        record["text"] = text
    if kinds:
        how = "masked as <redacted:TYPE>" if mode == "redact" else "as it is (secrets = allow)"
        record["secrets"] = {"kinds": list(kinds), "shown": how}
    return record


def _dropped(dropped: Sequence[Any]) -> dict[str, Any]:
    reasons: dict[str, int] = {}
    for d in dropped:
        reason = d.reason.split(":", 1)[0]
        reasons[reason] = reasons.get(reason, 0) + 1
    return {"count": len(dropped), "by_reason": reasons}


def _scope_record(scope: Scope) -> dict[str, list[str]]:
    return {"include": list(scope.include), "exclude": list(scope.exclude)}


def _quoted(value: object) -> str:
    """An argument as a refusal quotes it: its repr on one line, cut at 80 characters."""
    from coderag_tui.core.echo import echo

    text = value[:200] if isinstance(value, str) else value
    return echo(repr(text), 80)


def _path(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ToolFailure(f"{what} must be a repository path as a string, not {_quoted(value)}.")
    if len(value) > MAX_PATH_CHARS:
        raise ToolFailure(
            f"{what} is {len(value):,} characters long, more than {MAX_PATH_CHARS:,}: "
            "give a repository path."
        )
    return value


def _text(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise ToolFailure(f"the {what} must be a string, not {_quoted(text)}.")
    if not text.strip():
        raise ToolFailure(f"the {what} is empty: say what to look for.")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolFailure(
            f"the {what} is {len(text):,} characters long, more than {MAX_QUERY_CHARS:,}: "
            "give the part that matters."
        )
    return text


def _bounded(value: int, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolFailure(
            f"{what} must be a whole number from {low} to {high:,}, not {_quoted(value)}."
        )
    return value
