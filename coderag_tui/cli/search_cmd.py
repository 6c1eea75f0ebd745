"""`coderag search "QUERY" [PATH]`: every ranking side by side, with each stage's time.

The index is brought up to date first (incrementally). Without an embedding model, dense is
off with one sentence on stderr and the fused ranking is BM25's. `--from FILE:LINE` asks with
the lines before LINE, as code completion would; `--json` prints one object for scripts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    BACKEND_GROUP,
    BACKEND_SETTINGS,
    INDEX_SETTINGS,
    UserError,
    add_diff_arg,
    add_location_args,
    add_ranking_args,
    add_repo_args,
    add_scope_args,
    add_setting_flags,
    background_embedding,
    carry_dense_on,
    diff_query_from,
    diff_repo_path,
    location_query,
    read_stdin,
    say_one_time_setup,
    scope_from_args,
    settings_from_args,
    valid_text,
)
from coderag_tui.cli.output import Output
from coderag_tui.cli.render import (
    dense_line,
    file_columns,
    files_table,
    loading_status,
    plain_lines,
    ranking_columns,
    rankings_table,
    run_record,
    say,
    timing_rows,
    timings_table,
    unavailable_lines,
)
from coderag_tui.cli.server import add_no_server_arg, ask_first
from coderag_tui.core.records import (
    EVERY_FILE,
    RANKING_NAMES,
    Origin,
    RankingName,
    Scope,
    SearchRun,
)
from coderag_tui.core.visible import one_line, visible

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine
    from coderag_tui.settings import Settings

MODES = ("bm25", "dense", "fused", "rerank", "all")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "search",
        help="rank the repository's code for a query (BM25, dense, fused, reranked)",
        description=(
            "Rank the chunks of a repository for QUERY with BM25, dense embeddings, their "
            "Reciprocal Rank Fusion and (with --rerank) a reranker, the shipped learned model "
            "or a cross-encoder, and print the "
            "rankings side by side with the time of every stage."
        ),
    )
    parser.add_argument(
        "query",
        nargs="?",
        default=None,
        metavar="QUERY",
        help="what to look for ('-' reads stdin: an issue, a snippet; with --from, asked "
        "together with the code before the line)",
    )
    add_repo_args(parser)
    # budget: lists go deep enough to fill it (the depth rule every face shares)
    add_setting_flags(parser, ["k", "budget"])
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="all",
        help="which ranking to show (default: all of them side by side)",
    )
    parser.add_argument(
        "--files",
        action="store_true",
        help="aggregate chunk hits to files (each file scored by its best chunk)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")
    add_scope_args(parser)
    add_location_args(parser)
    add_diff_arg(parser)
    add_no_server_arg(parser, "search")
    add_ranking_args(parser.add_argument_group("ranking"))
    add_setting_flags(parser.add_argument_group("chunking and files"), INDEX_SETTINGS)
    add_setting_flags(parser.add_argument_group(BACKEND_GROUP), BACKEND_SETTINGS)


def _shown(run: SearchRun, mode: str) -> list[RankingName]:
    """The rankings to print: all available ones, or the chosen one (else the best fallback)."""
    if mode == "all":
        return [n for n in RANKING_NAMES if run.rankings[n].available]
    chosen = [n for n in RANKING_NAMES if n == mode and run.rankings[n].available]
    return chosen or [run.final.name]


def run(args: argparse.Namespace) -> int:
    extra: dict[str, Any] = {}
    if args.mode == "rerank":
        extra["rerank"] = True
    query: str | None = args.query
    if (
        args.from_location is not None
        and query is not None
        and args.path is None
        and Path(query).is_dir()
    ):
        # `coderag search --from FILE:LINE PATH`: the one positional is the repository.
        args.path, query = query, None
    args.query = query
    diff_repo_path(args, "query")
    query = read_stdin("query").strip() if args.query == "-" else args.query
    if args.diff is not None and args.from_location is not None:
        raise UserError("give --from or --diff, not both: each is a query of its own.")
    explicit: set[str] = set()
    settings = settings_from_args(args, explicit=explicit, **extra)
    scope, _ = scope_from_args(args, settings.repo_root)
    origin = None
    if args.diff is not None:
        code, origin, _change = diff_query_from(settings, args)
        query = f"{query}\n{code}" if query is not None and query.strip() else code
    if args.from_location is not None:
        code, origin = location_query(settings, args)
        # A query beside --from asks for both: its words, and the code before the line.
        query = f"{query}\n{code}" if query is not None and query.strip() else code
    if query is None or not query.strip():
        raise UserError(
            'give a QUERY (for example coderag search "charge card"), --from FILE:LINE or --diff.'
        )
    query, undecodable = valid_text(query, "query")
    if undecodable:
        say(undecodable)

    want_dense = args.dense and args.mode != "bm25"
    reply = ask_first(args, settings, "search", request(args, query, dense=want_dense, scope=scope))
    if reply is not None:  # a resident server (`coderag serve`) answered
        return reply.emit()
    from coderag_tui.core.engine import Engine
    from coderag_tui.core.index.store import StoreError

    interactive = not args.json and sys.stderr.isatty()
    if want_dense and settings.dense_wait:  # waits on the model: say a one-time copy first
        say_one_time_setup(settings)
    try:
        with loading_status(interactive=interactive) as (progress, embed_progress):
            engine = Engine.open(
                settings,
                progress=progress,
                embed_progress=embed_progress,
                dense=want_dense,
                explicit=frozenset(explicit),
                background=background_embedding(settings),
            )
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    with engine:
        status = answer(
            args, settings, engine, query, origin=origin, scope=scope, output=Output.standard()
        )
    carry_dense_on(settings, engine)  # after the answer: the process competes for the CPU
    return status


def request(args: argparse.Namespace, query: str, *, dense: bool, scope: Scope) -> dict[str, Any]:
    """What a resident server needs, beside the settings, to answer as `answer` would."""
    return {
        "query": query,
        "mode": args.mode,
        "files": args.files,
        "json": args.json,
        "dense": dense,
        "include": list(scope.include),
        "exclude": list(scope.exclude),
    }


def answer(
    args: argparse.Namespace,
    settings: Settings,
    engine: Engine,
    query: str,
    *,
    origin: Origin | None = None,
    scope: Scope = EVERY_FILE,
    output: Output,
) -> int:
    """Search with an open engine and render the result to `output` as the command does
    (`args` gives mode, files, json and, with `origin`, the --from location; `scope` the
    files ranked)."""
    from coderag_tui.core.index.store import StoreError

    # A hit's text is read when shown, and a server answers each query: either may fail.
    try:
        result = engine.search(query, settings, origin, scope)
        # Hits are marked, not hidden: a search stays on this machine (prompts hold them
        # back).
        secrets = (
            engine.secret_kinds(
                hit.chunk
                for ranking in result.rankings.values()
                for hit in ranking.hits[: settings.k]
            )
            if args.json
            else {}
        )
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    if origin is not None and result.left_out:
        what = "changed lines" if args.diff is not None else "query lines"
        output.say(
            f"left out {result.left_out} chunk(s) of {origin.describe()} that hold the "
            f"{what} (they would trivially rank first)."
        )

    if scope.active:
        output.say(
            f"ranked files in scope only ({scope.describe()}): "
            f"{result.out_of_scope} chunk(s) left out."
        )
    dense = engine.dense.describe() if engine.dense is not None else None
    notes = list(dict.fromkeys((*engine.notices, *result.notes)))
    line = dense_line(dense, notes)
    if line is not None:
        notes.append(line)
    for note in notes:
        output.say(note)
    names = _shown(result, args.mode)
    if args.mode not in ("all", *names):
        output.say(f"showing the {names[0]} ranking, because {args.mode} is unavailable.")
    if args.json:
        record = run_record(
            result,
            list(RANKING_NAMES) if args.mode == "all" else names,
            settings.k,
            files=args.files,
            secrets=secrets,
            secret_mode=settings.secrets,
        )
        record["repo"] = str(settings.repo_root)
        record["chunking"] = settings.chunking_spec.key
        record["mode"] = args.mode
        record["dense"] = dense
        record["shown"] = list(names)
        record["scope"] = {"include": list(scope.include), "exclude": list(scope.exclude)}
        output.print_json(record)
        return 0

    _print_tables(args, settings, result, names, notes, output)
    return 0


def _print_tables(
    args: argparse.Namespace,
    settings: Settings,
    result: SearchRun,
    names: list[RankingName],
    notes: list[str],
    output: Output,
) -> None:
    """The rankings (or files) side by side, the reasons of unavailable ones not said yet
    (`notes`), and the stage timings: rich tables on a terminal, plain lines elsewhere."""
    lead: list[str] = []
    if args.from_location is not None:
        lead.append(
            f"query: the {settings.query_lines} lines before {one_line(args.from_location)}"
        )
    reasons: list[str] = []
    if args.mode == "all":
        for reason in unavailable_lines(result, list(RANKING_NAMES)):
            detail = reason.split(": ", 1)[-1]  # the why, without the "dense search is off" lead
            if not any(detail in note for note in notes):  # already said on stderr
                reasons.append(visible(reason))
    if not output.out_facts.terminal:
        _print_plain(args, settings, result, names, (lead, reasons), output)
        return
    console = output.console()
    if not result.final.hits:
        body: Any = "No chunk matched the query."
    elif args.files:
        body = files_table(result, names, settings.k)
    else:
        body = rankings_table(result, names, settings.k)
    for line in lead:
        console.print(line, style="dim", markup=False, highlight=False)
    console.print(body)
    for reason in reasons:
        console.print(reason, style="dim", soft_wrap=True, markup=False)
    console.print(timings_table(result))


def _print_plain(
    args: argparse.Namespace,
    settings: Settings,
    result: SearchRun,
    names: list[RankingName],
    lead_and_reasons: tuple[list[str], list[str]],
    output: Output,
) -> None:
    """The same as plain lines, for a pipe or a file: one line per hit, never wrapped, no
    box drawing or colour (`--json` is the interface for scripts)."""
    lead, reasons = lead_and_reasons
    lines = list(lead)
    if not result.final.hits:
        lines.append("No chunk matched the query.")
    else:
        columns = (file_columns if args.files else ranking_columns)(result, names, settings.k)
        for column in columns:
            lines += plain_lines(column.title, column.rows)
    lines += reasons
    lines += plain_lines("stage timings (ms)", timing_rows(result), right=(1,))
    output.out.write("\n".join(lines) + "\n")
    output.out.flush()
