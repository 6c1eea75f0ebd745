"""`coderag prompt "TASK" [PATH]`: rank the repository for the task and pack a prompt for a chat UI.

The ranking is the one `coderag search` shows (Searcher.open + run). The prompt goes to
stdout unless --copy or --out sends it elsewhere; every status line (tokens used of the
budget, included and dropped chunks, how the copy happened, chunk-size advice) goes to
stderr, so `coderag prompt "…" > prompt.md` captures only the prompt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    BACKEND_GROUP,
    BACKEND_SETTINGS,
    INDEX_SETTINGS,
    PROMPT_SETTINGS,
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
    print_json,
    read_stdin,
    say_one_time_setup,
    scope_from_args,
    settings_from_args,
    valid_text,
)
from coderag_tui.cli.render import dense_line, loading_status, say
from coderag_tui.cli.server import add_no_server_arg, ask_first
from coderag_tui.core.engine import DIFF_TASK, PromptResult
from coderag_tui.core.prompt.clipboard import CopyResult, copied_for_sure, copy_text, keep_prompt
from coderag_tui.core.prompt.pack import (
    TRIMMED,
    Advice,
    SecretAccount,
    secret_account,
)
from coderag_tui.core.prompt.tokens import TokenCounter
from coderag_tui.core.records import EVERY_FILE, Origin, PackedPrompt, Scope
from coderag_tui.core.visible import control_count, one_line, visible
from coderag_tui.settings import Settings

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine, PromptRequest


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prompt",
        help="pack the best-ranked code for a task into an LLM prompt",
        description=(
            "Rank the repository's chunks for TASK (as `coderag search` does), fit the best ones "
            "into a token budget with the most relevant first, and print the prompt (or copy it "
            "/ save it). Status lines go to stderr."
        ),
    )
    parser.add_argument(
        "task",
        metavar="TASK",
        nargs="?",
        default=None,
        help="what the model should do; also the search query ('-' reads stdin); "
        "with --from it may be left out (the code is the task)",
    )
    add_repo_args(parser)
    add_location_args(parser)
    add_diff_arg(parser)
    parser.add_argument(
        "--copy",
        action="store_true",
        help="copy the prompt to the clipboard (pyperclip, else OSC 52)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="FILE", help="write the prompt to FILE"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the prompt with its token account as one JSON object",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="PATH:A-B",
        help="put this chunk first (repeatable; keys as `coderag search` shows)",
    )
    add_scope_args(parser, exclude=False)
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB|PATH:A-B",
        help="never rank files matching GLOB, or never include the chunk PATH:A-B (repeatable)",
    )
    add_no_server_arg(parser, "pack")
    add_setting_flags(parser.add_argument_group("prompt"), PROMPT_SETTINGS)
    add_ranking_args(parser.add_argument_group("ranking (the same options as `coderag search`)"))
    add_setting_flags(parser.add_argument_group("chunking and files"), INDEX_SETTINGS)
    add_setting_flags(parser.add_argument_group(BACKEND_GROUP), BACKEND_SETTINGS)


def _task(args: argparse.Namespace) -> str | None:
    """The task as given (stdin for '-'), or None when --from or --diff alone asks (the code
    or the change is the task)."""
    if args.from_location and args.path is None and args.task and Path(args.task).is_dir():
        args.path, args.task = args.task, None  # `prompt --from FILE:LINE PATH`: that's the repo
    diff_repo_path(args, "task")
    if args.task is None and (args.from_location or args.diff is not None):
        return None
    task = read_stdin("task") if args.task == "-" else (args.task or "")
    if not task.strip():
        raise UserError(
            'the task is empty: say what the model should do, e.g. coderag prompt "why does '
            'checkout fail?".'
        )
    return task.strip()


def _status(packed: PackedPrompt, counter: TokenCounter, advice: Advice) -> list[str]:
    from coderag_tui.core.prompt.account import readable, saved, stopped

    n_chunks = sum(len(b.chunk_keys) for b in packed.blocks)
    cut = [d for d in packed.dropped if d.reason.startswith(TRIMMED)]
    approx = "" if packed.exact else "≈"
    lines = [
        f"prompt: {approx}{packed.tokens:,} of {packed.budget:,} tokens ({counter.label}); "
        f"{len(packed.blocks)} blocks from {n_chunks} chunks"
    ]
    lines.append(saved(packed))
    if (faults := readable(packed)) != "":
        lines.append(faults)
    if (why := stopped(packed)) != "":
        lines.append(why)
    lines += [f"{d.key}: {d.reason}" for d in cut]
    if counter.note:
        lines.append(counter.note)
    if packed.stopped == "":  # whole chunks: their size is what the advice is about
        lines.append(advice.text)
    return lines


def _files(found: tuple[tuple[str, int, tuple[str, ...]], ...]) -> tuple[int, str]:
    """How many chunks or blocks, and the files they come from, as a line names them."""
    return sum(n for _, n, _ in found), ", ".join(one_line(path) for path, _, _ in found)


def task_secret_line(kinds: Sequence[str], mode: str) -> str:
    """What the prompt did with suspected secrets in the task itself."""
    if mode == "allow":
        return (
            f"the task holds what looks like a secret ({', '.join(kinds)}), kept as it is "
            "because secrets is set to allow: check it before you paste it anywhere."
        )
    return (
        f"the task holds what looks like a secret ({', '.join(kinds)}): masked in the prompt "
        "as <redacted:TYPE>; --allow-secrets keeps it."
    )


def secret_lines(account: SecretAccount) -> list[str]:
    """What the prompt did with suspected secrets, in a sentence per case (none: no line)."""
    kinds = ", ".join(account.kinds)
    lines = []
    if account.held:
        count, files = _files(account.held)
        lines.append(
            f"held back {count} chunk{'s' if count != 1 else ''} of {files}: they look like "
            f"secrets ({kinds}); --allow-secrets includes them, --redact-secrets masks them."
        )
    if account.included and account.mode == "redact":
        count, files = _files(account.included)
        lines.append(
            f"masked the suspected secrets ({kinds}) in {count} block{'s' if count != 1 else ''}"
            f" of {files} as <redacted:TYPE>; the rest of those files is included."
        )
    elif account.included:
        count, files = _files(account.included)
        why = "you let them in" if account.mode == "hold" else "secrets is set to allow"
        lines.append(
            f"the prompt includes suspected secrets ({kinds}) as they are, in {count} "
            f"block{'s' if count != 1 else ''} of {files}, because {why}: "
            "check it before you paste it anywhere."
        )
    return lines


def reader_faults(packed: PackedPrompt) -> dict[str, int] | None:
    """What a reader cannot use, as numbers (None: whole chunks, not counted)."""
    account = packed.account
    if account is None:
        return None
    return {
        "bare_signatures": account.bare_signatures,
        "lone_lines": account.lone_lines,
        "outline_tokens": account.outline_tokens,
        "data_tokens": account.data_tokens,
    }


def as_json(
    packed: PackedPrompt, counter: TokenCounter, advice: Advice, copy: CopyResult | None
) -> dict[str, Any]:
    """The --json object: the prompt, its token account, and where it went."""
    from coderag_tui.core.prompt.account import saved

    return {
        "prompt": packed.text,
        "tokens": packed.tokens,
        "budget": packed.budget,
        "encoding": packed.encoding,
        "requested_encoding": counter.requested,
        "exact": packed.exact,
        "note": counter.note,
        "blocks": [
            {
                "path": b.path,
                "start_line": b.start_line,
                "end_line": b.end_line,
                "language": b.language,
                "tokens": b.tokens,
                "chunk_keys": list(b.chunk_keys),
                "best_rank": b.best_rank,
                "secrets": list(b.secrets),
                "lines": [list(part) for part in b.shown],
                "outline": b.outline,
            }
            for b in packed.blocks
        ],
        "files": list(packed.code_files),
        "files_tokens": packed.files_tokens,
        "stopped": packed.stopped,
        "account": saved(packed),
        "readable": reader_faults(packed),
        "dropped": [
            {
                "key": d.key,
                "rank": d.rank,
                "tokens": d.tokens,
                "reason": d.reason,
                "secrets": list(d.secrets),
            }
            for d in packed.dropped
        ],
        "secrets": _secrets_record(secret_account(packed)),
        "advice": advice.text,
        "copy": as_json_copy(copy),
    }


def as_json_copy(copy: CopyResult | None) -> dict[str, Any] | None:
    """Where the prompt went, for --json (None: printed, not copied or saved)."""
    if copy is None:
        return None
    return {"ok": copy.ok, "method": copy.method, "message": copy.message}


def _secrets_record(account: SecretAccount) -> dict[str, Any]:
    return {
        "mode": account.mode,
        "held_back": [
            {"path": path, "chunks": n, "kinds": list(kinds)} for path, n, kinds in account.held
        ],
        "included": [
            {"path": path, "blocks": n, "kinds": list(kinds)} for path, n, kinds in account.included
        ],
    }


def build_prompt(  # noqa: PLR0913
    settings: Settings,
    asked: PromptRequest,
    *,
    dense: bool = True,
    progress: Callable[[Any], None] | None = None,
    embed_progress: Callable[[int, int], None] | None = None,
    query: str | None = None,
    origin: Origin | None = None,
    explicit: frozenset[str] | None = None,
    scope: Scope = EVERY_FILE,
) -> tuple[PromptResult, tuple[str, ...], dict[str, object] | None]:
    """Search the repository for `query` (default: the task) and pack the prompt `asked`
    for; (the result, notes to show once, what the dense list covered). With `origin`, the
    query's own chunk is left out."""
    from coderag_tui.core.engine import Engine, PromptError, prompt_tools
    from coderag_tui.core.index.store import StoreError

    try:
        prompt_tools(settings)  # a bad template or encoding fails before indexing
    except PromptError as exc:
        raise UserError(str(exc)) from exc
    try:
        engine = Engine.open(
            settings,
            dense=dense,
            progress=progress,
            embed_progress=embed_progress,
            explicit=explicit,
            background=background_embedding(settings),
        )
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    with engine:
        packed = pack_with(engine, settings, asked, query=query, origin=origin, scope=scope)
    carry_dense_on(settings, engine)
    return packed


def pack_with(
    engine: Engine,
    settings: Settings,
    asked: PromptRequest,
    *,
    query: str | None = None,
    origin: Origin | None = None,
    scope: Scope = EVERY_FILE,
) -> tuple[PromptResult, tuple[str, ...], dict[str, object] | None]:
    """`build_prompt` with an open engine (a resident server's); `asked.change` (a diff) is
    the prompt's "The change" section."""
    from coderag_tui.core.engine import PromptError
    from coderag_tui.core.index.store import StoreError

    try:  # a chunk's text is read when packed; a server answers each query
        run = engine.search(asked.task if query is None else query, settings, origin, scope)
        result = engine.prompt(run, asked, settings)
    except (PromptError, StoreError) as exc:
        raise UserError(str(exc)) from exc
    notes = tuple(dict.fromkeys((*engine.notices, *result.run.notes)))  # each note once
    if scope.active:
        left = result.run.out_of_scope
        notes = (
            *notes,
            f"ranked files in scope only ({scope.describe()}): {left} chunk(s) left out.",
        )
    return result, notes, engine.dense.describe() if engine.dense is not None else None


@dataclass(frozen=True)
class Composed:
    """A packed prompt as the command shows it, before it goes anywhere: its text, the --json
    record (without the copy, which `deliver` adds) and the status lines for stderr."""

    text: str
    record: dict[str, Any]
    lines: list[str]


def compose(
    result: PromptResult, notes: Sequence[str], dense: dict[str, object] | None
) -> Composed:
    packed, counter, advice = result.packed, result.counter, result.advice
    record = {**as_json(packed, counter, advice, None), "dense": dense}
    line = dense_line(dense, notes)
    if line is not None:
        notes = (*notes, line)
    lines = [*notes, *_status(packed, counter, advice), *secret_lines(secret_account(packed))]
    if result.task_secrets:
        lines.append(task_secret_line(result.task_secrets, packed.secret_mode))
    shown, total = result.change_lines
    if total:
        lines.append(
            f"the change is in the prompt: {shown} of its {total} lines"
            + (" (cut to fit half the budget)." if shown < total else ".")
        )
    if result.change_secrets:
        lines.append(
            task_secret_line(result.change_secrets, packed.secret_mode).replace(
                "the task holds", "the change holds"
            )
        )
    controls = control_count(packed.text)
    if controls:
        lines.append(
            f"the prompt holds {controls} control character(s) from the repository: written "
            "out (\\x1b …) on a terminal, kept as they are in files, pipes, --json and copies."
        )
    return Composed(packed.text, record, lines)


def deliver(
    args: argparse.Namespace, composed: Composed, repo: Path, template: str = "markdown"
) -> int:
    """Copy, save or print the prompt as `args` ask, then say the status lines (in this
    process: the clipboard and the files are the asking terminal's). A prompt the clipboard
    may not have taken is never lost: it is kept in a file (else printed), and said where."""
    copy: CopyResult | None = None
    kept: CopyResult | None = None
    if args.copy or args.out is not None:
        copy = copy_text(composed.text, out=args.out, clipboard=args.copy, guarded=repo)
        if args.copy and args.out is None and not copied_for_sure(copy):
            from coderag_tui.locations import user_data_dir

            kept = keep_prompt(composed.text, user_data_dir() / "prompts", repo.name, template)
    printed = copy is None or (kept is not None and not kept.ok)
    if args.json:
        went = as_json_copy(copy)
        if went is not None and kept is not None and kept.ok:
            went = {**went, "kept": kept.message.removeprefix("saved to ")}
        print_json({**composed.record, "copy": went})
    elif printed:
        # On a terminal, escape sequences from the repository are shown, not obeyed; a pipe
        # or a file gets the exact text.
        text = composed.text
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
        sys.stdout.flush()
    for line in composed.lines:
        say(line)
    if copy is not None:
        say(copy.message)
        if kept is not None:
            said = "not copied" if not copy.ok else "maybe not copied (nothing tells)"
            if kept.ok:
                where = f"the prompt is in {kept.message.removeprefix('saved to ')}"
            elif args.json:
                where = f"{kept.message}; the prompt is in the JSON's `prompt`"
            else:
                where = f"{kept.message}; the prompt is on standard output"
            say(f"{said}: {where}.")
        if not copy.ok:
            return 1
    return 0


def run(args: argparse.Namespace) -> int:
    given = _task(args)
    if given is not None:
        given, undecodable = valid_text(given, "task")
        if undecodable:
            say(undecodable)
    explicit: set[str] = set()
    settings = settings_from_args(args, explicit=explicit)
    scope, excluded = scope_from_args(args, settings.repo_root)
    request = {
        "task": given,
        "dense": args.dense,
        "pin": args.pin,
        "exclude_chunks": excluded,
        "include": list(scope.include),
        "exclude": list(scope.exclude),
    }
    reply = ask_first(args, settings, "prompt", request)
    if reply is not None:  # a resident server (`coderag serve`) packed it
        if reply.data is None:
            return reply.emit()
        return deliver(args, Composed(**reply.data), settings.repo_root, settings.template)
    query, origin = location_query(settings, args) if args.from_location else (None, None)
    change = ""
    if args.diff is not None:
        if args.from_location:
            raise UserError("give --from or --diff, not both: each is a query of its own.")
        code, origin, changed = diff_query_from(settings, args)
        query, change = (f"{given}\n{code}" if given else code), changed.text
        given = given if given is not None else DIFF_TASK
    from coderag_tui.core.engine import PromptRequest

    task = given if given is not None else query or ""
    asked = PromptRequest(task, pinned=tuple(args.pin), excluded=tuple(excluded), change=change)
    if args.dense and settings.dense_wait:  # waits on the model: say a one-time copy first
        say_one_time_setup(settings)
    with loading_status(interactive=not args.json and sys.stderr.isatty()) as (
        progress,
        embed_progress,
    ):
        result, notes, dense = build_prompt(
            settings,
            asked,
            dense=args.dense,
            progress=progress,
            embed_progress=embed_progress,
            query=query,
            origin=origin,
            explicit=frozenset(explicit),
            scope=scope,
        )
    return deliver(args, compose(result, notes, dense), settings.repo_root, settings.template)
