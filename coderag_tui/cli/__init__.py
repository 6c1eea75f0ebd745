"""Command line: `coderag [PATH]` opens the TUI; subcommands index, search, serve, mcp, prompt,
eval, bench, tune, status.

Each subcommand lives in its own module with `register(subparsers)` and `run(args) -> int`;
this module only dispatches.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
from collections.abc import Sequence
from importlib import import_module
from types import ModuleType

from coderag_tui import __version__
from coderag_tui.cli.common import Parser, UserError
from coderag_tui.core.echo import echo
from coderag_tui.core.visible import visible

# subcommand name -> module under coderag_tui.cli
COMMANDS: dict[str, str] = {
    "index": "index_cmd",
    "search": "search_cmd",
    "serve": "serve_cmd",
    "mcp": "mcp_cmd",
    "prompt": "prompt_cmd",
    "eval": "eval_cmd",
    "bench": "bench_cmd",
    "tune": "tune_cmd",
    "status": "status_cmd",
}


def _available_commands(only: str | None = None) -> dict[str, ModuleType]:
    """The subcommand modules (just `only`'s, when given: importing every command's module
    cost ~0.1 s of each run's start)."""
    modules: dict[str, ModuleType] = {}
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            modules[name] = import_module(f"coderag_tui.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"coderag_tui.cli.{module}":
                raise
    return modules


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with every subcommand or only `only`."""
    parser = Parser(
        prog="coderag",
        description=(
            "Rank a repository's code for a question (BM25, dense, fused, reranked) and pack "
            "the best chunks into a prompt. Without a subcommand, opens the TUI on PATH."
        ),
    )
    parser.add_argument("--version", action="version", version=f"coderag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _available_commands(only).values():
        module.register(sub)
    return parser


def command_summaries() -> list[tuple[str, str]]:
    """(name, one line) of every subcommand, as each module's parser says it."""
    sub = build_parser()._subparsers
    found: list[tuple[str, str]] = []
    for action in sub._group_actions if sub is not None else ():
        for choice in getattr(action, "_choices_actions", ()):
            found.append((choice.dest, choice.help or ""))
    return found


def _mistyped(word: str) -> str | None:
    """The sentence for a first word that is neither a command nor a folder, or None."""
    import difflib

    if word in COMMANDS or word.startswith("-") or os.path.exists(word):
        return None
    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    if not close:
        return None
    return (
        f"{visible(repr(word))} is neither a command nor a folder; did you mean "
        f"`coderag {close[0]}`?"
    )


def _parse_command(name: str, argv: list[str]) -> argparse.Namespace:
    """One subcommand's arguments, positionals allowed on either side of the options
    (`coderag search QUERY --from F:L PATH`)."""
    sub = build_parser(name)._subparsers
    choices = getattr(sub._group_actions[0], "choices", None) if sub is not None else None
    parser = choices.get(name) if isinstance(choices, dict) else None
    if not isinstance(parser, argparse.ArgumentParser):  # pragma: no cover
        raise RuntimeError(f"no parser for {name}")
    args = parser.parse_intermixed_args(argv)
    args.command = name
    return args


# What coderag creates is the user's alone (folders 0700, files 0600): an index holds the text
# of every file it read, a 0600 password file's included, and a cache or a log repeats it.
PRIVATE_UMASK = 0o077


def main(argv: Sequence[str] | None = None) -> int:
    """Run coderag with `argv` (default: the process's arguments); returns the exit code.
    Everything it creates meanwhile is private to the user (`PRIVATE_UMASK` added to the
    umask; an existing file keeps its mode); the umask is put back after."""
    before = os.umask(PRIVATE_UMASK)
    os.umask(before | PRIVATE_UMASK)
    try:
        return _main(argv)
    finally:
        os.umask(before)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and (mistyped := _mistyped(args_list[0])) is not None:
        print(f"coderag: {echo(mistyped)}", file=sys.stderr)
        return 2
    chosen = args_list[0] if args_list and args_list[0] in COMMANDS else None
    commands = _available_commands(chosen) if chosen is not None else {}
    if chosen is not None and chosen in commands:
        module = commands[chosen]
        args = _parse_command(chosen, args_list[1:])
        try:
            return int(module.run(args))
        except UserError as exc:
            print(f"coderag: {echo(str(exc))}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("coderag: interrupted; what was already indexed is kept.", file=sys.stderr)
            return 130
        except BrokenPipeError:
            # The reader went away (`coderag index | head`): nothing left to say to it. Point
            # stdout at devnull so the interpreter's final flush cannot fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
    from coderag_tui.cli.tui_cmd import run_tui

    return run_tui(args_list, command_summaries)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# Libraries whose teardown at interpreter exit is slow (onnxruntime's and torch's thread pools
# and allocators: ~0.85 s measured after quitting the TUI with the model loaded).
SLOW_TEARDOWN = ("onnxruntime", "torch")


def entry() -> None:
    """The `coderag` command: `main`, then a quick exit once its output is flushed.

    Everything coderag writes is closed by the time `main` returns (the index and caches in
    context managers), so when a model runtime is loaded the process ends without running the
    interpreter's teardown; otherwise it exits normally, with what it loaded frozen out of
    the collector: the teardown's collections re-scanning a large index's chunks took
    ~0.15 s of a later search on a 35,000-file repository.
    """
    code = main()
    gc.freeze()
    # Work the TUI left running when the user quit (see CoderagApp.exit) would be joined.
    main_thread = threading.main_thread()
    left = any(
        t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()
    )
    if not left and not any(name in sys.modules for name in SLOW_TEARDOWN):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = code or 141
    os._exit(code)
