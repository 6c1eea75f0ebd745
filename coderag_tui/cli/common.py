"""Arguments and helpers shared by the subcommands: repository path, index location, output."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from coderag_tui.settings import DENSE_STRIPES_AUTO, Settings, load_settings


class UserError(Exception):
    """A problem the user can fix; the message is one sentence naming the thing and the fix."""

    exit_code = 2


def add_repo_args(parser: argparse.ArgumentParser, *, path_positional: bool = True) -> None:
    """PATH (default: current directory) and --index-dir, common to every subcommand."""
    if path_positional:
        parser.add_argument(
            "path", nargs="?", default=None, metavar="PATH",
            help="repository to index (default: the current directory)",
        )
    parser.add_argument(
        "--index-dir", type=Path, default=None,
        help="where to keep the index (default: the user cache directory)",
    )


def add_chunking_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunking", choices=["lines", "ast", "file"], default=None,
                        help="how files are cut into chunks (default: lines)")
    parser.add_argument("--chunk-lines", type=int, default=None, metavar="N",
                        help="lines per window for `lines`, size limit for `ast` (default: 64)")
    parser.add_argument("--overlap", dest="chunk_overlap", type=int, default=None, metavar="N",
                        help="lines shared by neighbouring windows (default: 0)")


def add_bm25_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The BM25 tokenizer switches; both are on by default (measured in the README)."""
    parser.add_argument(
        "--split-identifiers", action=argparse.BooleanOptionalAction, default=None,
        help="BM25 also indexes getUserName as get, user, name (default: on)",
    )
    parser.add_argument(
        "--path-in-text", action=argparse.BooleanOptionalAction, default=None,
        help="BM25 also indexes each chunk's file path (default: on)",
    )


def add_dense_stripes_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--dense-stripes N, for every command that builds a dense index (speed vs coverage)."""
    parser.add_argument(
        "--dense-stripes", type=_stripes, default=None, metavar="auto|N",
        help="embed each chunk's first N model windows; 0 embeds every window and scores the "
        "best (default: auto, the first window of line and ast chunks, every window of whole "
        "files: what ranked best on the dev benchmark)",
    )


def _stripes(text: str) -> int:
    """`auto` or a whole number (checked by load_settings)."""
    if text.strip().lower() == "auto":
        return DENSE_STRIPES_AUTO
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not auto or a whole number") from None


def add_ranking_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The options of the ranking stages, shared by `search` and `prompt`."""
    parser.add_argument("--no-dense", dest="dense", action="store_false", default=True,
                        help="rank with BM25 only (no embedding model is loaded)")
    parser.add_argument("--rerank", action="store_true", default=None,
                        help="rerank the fused top candidates with a cross-encoder")
    parser.add_argument("--embed-model", default=None, metavar="M",
                        help="embedding model name or local folder")
    add_dense_stripes_arg(parser)
    parser.add_argument("--embed-backend", default=None,
                        choices=["auto", "fastembed", "sentence-transformers", "none"],
                        help="which library runs the embedding model (default: auto)")
    parser.add_argument("--rerank-model", default=None, metavar="M",
                        help="cross-encoder name or local folder")
    parser.add_argument("--allow-download", action=argparse.BooleanOptionalAction, default=None,
                        help="may a missing model be downloaded (default: no, offline-first)")
    parser.add_argument("--fusion", choices=["rrf", "weighted"], default=None,
                        help="how BM25 and dense are fused (default: rrf)")
    parser.add_argument("--depth", type=int, default=None, metavar="N",
                        help="how deep each ranking goes into fusion (default: 100)")
    add_bm25_args(parser)


def resolve_repo(path: str | None) -> Path:
    """The repository directory, or a UserError in one sentence."""
    repo = Path(path if path is not None else ".").expanduser()
    if not repo.exists():
        raise UserError(f"{repo} does not exist: pass the path of a repository folder.")
    if not repo.is_dir():
        raise UserError(f"{repo} is not a folder: pass the path of a repository folder.")
    return repo.resolve()


def settings_from_args(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings from config files and environment, overridden by the flags that were given."""
    values = dict(vars(args))
    values.pop("command", None)
    repo = resolve_repo(values.pop("path", None))
    values.update(extra)
    values["repo"] = repo
    try:
        return load_settings(values)
    except ValueError as exc:
        raise UserError(str(exc)) from exc


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def fail(message: str, code: int = 2) -> int:
    print(f"coderag: {message}", file=sys.stderr)
    return code
