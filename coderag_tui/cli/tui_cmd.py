"""`coderag [PATH] [options]`: parse the TUI's flags, build Settings and run the app."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable

from coderag_tui.cli.common import (
    BACKEND_GROUP,
    BACKEND_SETTINGS,
    INDEX_SETTINGS,
    PROMPT_SETTINGS,
    RANKING_SETTINGS,
    Parser,
    UserError,
    add_repo_args,
    add_scope_args,
    add_setting_flags,
    scope_from_args,
    settings_from_args,
)
from coderag_tui.core.echo import echo


def build_parser(
    *, commands: Callable[[], list[tuple[str, str]]] | None = None
) -> argparse.ArgumentParser:
    """The TUI's parser; `commands` gives the subcommands' (name, one line) to list in its
    help (that imports every command's module, so only `--help` asks for it)."""
    description = textwrap.fill(
        "Open the coderag TUI on a repository: rankings side by side (BM25, dense, fused, "
        "reranked), per-stage latency, and a prompt packed into a token budget.",
        width=79,
    )
    if commands is not None:
        summaries = commands()
        width = max(len(name) for name, _ in summaries)
        lines = [f"  {name.ljust(width)}  {text}" for name, text in summaries]
        description += "\n\ncommands (coderag COMMAND --help for each):\n" + "\n".join(lines)
    parser = Parser(
        prog="coderag",
        usage="coderag [PATH] [options]  or  coderag COMMAND [...]",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_repo_args(parser)
    add_setting_flags(parser, ["theme", "theme_dir", "k"])
    add_scope_args(parser)
    add_setting_flags(parser.add_argument_group("prompt"), PROMPT_SETTINGS)
    add_setting_flags(parser.add_argument_group("ranking"), RANKING_SETTINGS)
    add_setting_flags(parser.add_argument_group("chunking and files"), INDEX_SETTINGS)
    add_setting_flags(parser.add_argument_group(BACKEND_GROUP), BACKEND_SETTINGS)
    return parser


def run_tui(argv: list[str], commands: Callable[[], list[tuple[str, str]]] | None = None) -> int:
    """Run the TUI with these arguments; returns the process exit code. `commands`: the
    subcommands its `--help` lists (the command line passes them: this module is below it)."""
    wants_help = any(arg in ("-h", "--help") for arg in argv)
    args = build_parser(commands=commands if wants_help else None).parse_args(argv)
    warnings: list[str] = []
    try:
        # Warnings (unknown keys …) are shown in the app: stderr is hidden behind its screen.
        settings = settings_from_args(args, warnings=warnings)
        scope, _ = scope_from_args(args, settings.repo_root)
    except UserError as exc:
        print(f"coderag: {echo(str(exc))}", file=sys.stderr)
        return exc.exit_code
    from coderag_tui.tui.app import default_state_path, make_app
    from coderag_tui.tui.state import read_saved_theme

    state_path = default_state_path()
    if args.theme is None:
        saved = read_saved_theme(state_path)
        if saved:
            settings = settings.with_(theme=saved)
    make_app(settings, state_path=state_path, notices=warnings, scope=scope).run()
    return 0
