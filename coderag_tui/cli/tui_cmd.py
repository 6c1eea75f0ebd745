"""`coderag [PATH] [options]`: parse the TUI's flags, build Settings and run the app."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coderag_tui.cli.common import (
    UserError,
    add_bm25_args,
    add_chunking_args,
    add_dense_stripes_arg,
    add_repo_args,
    settings_from_args,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coderag",
        description=(
            "Open the coderag TUI on a repository: rankings side by side (BM25, dense, fused, "
            "reranked), per-stage latency, and a prompt packed into a token budget. "
            "Subcommands: index, search, prompt, eval, bench (coderag COMMAND --help)."
        ),
    )
    add_repo_args(parser)
    add_chunking_args(parser)
    parser.add_argument(
        "--theme",
        default=None,
        metavar="NAME",
        help="coderag-dark (default), coderag-light, coderag-high-contrast, "
        "or a theme from your theme folder; remembered when chosen in the app",
    )
    parser.add_argument(
        "--theme-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder of your own YAML themes (same schema as the bundled ones)",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help="token budget of the prompt (default: 8000)",
    )
    parser.add_argument(
        "--template",
        default=None,
        metavar="NAME|FILE",
        help="prompt template: markdown, xml or a template file",
    )
    parser.add_argument(
        "--rerank",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rerank the fused top candidates with a cross-encoder",
    )
    parser.add_argument(
        "--embed-backend",
        default=None,
        choices=["auto", "fastembed", "sentence-transformers", "none"],
        help="dense embedding backend (none: BM25 only)",
    )
    parser.add_argument(
        "--embed-model",
        default=None,
        metavar="NAME|PATH",
        help="embedding model name or local folder",
    )
    add_dense_stripes_arg(parser)
    parser.add_argument(
        "--allow-download",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="allow downloading a missing model in the background",
    )
    add_bm25_args(parser)
    return parser


def run_tui(argv: list[str]) -> int:
    """Run the TUI with these arguments; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except UserError as exc:
        print(f"coderag: {exc}", file=sys.stderr)
        return exc.exit_code
    from coderag_tui.tui.app import default_state_path, make_app
    from coderag_tui.tui.state import read_saved_theme

    state_path = default_state_path()
    if args.theme is None:
        saved = read_saved_theme(state_path)
        if saved:
            settings = settings.with_(theme=saved)
    make_app(settings, state_path=state_path).run()
    return 0
