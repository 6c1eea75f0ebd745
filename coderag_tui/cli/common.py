"""Arguments and helpers shared by the subcommands: settings flags, repository path, output."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from coderag_tui.core.records import Origin
from coderag_tui.core.visible import one_line, visible
from coderag_tui.settings import SCHEMA, SettingInfo, Settings, SettingsError, read_settings


class UserError(Exception):
    """A problem the user can fix; the message is one sentence naming the thing and the fix."""

    exit_code = 2


class Parser(argparse.ArgumentParser):
    """argparse with a usage error in one line and a hint, not the whole usage first."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"coderag: {one_line(message)}; `{self.prog} --help` lists the options.\n")


def add_repo_args(parser: argparse.ArgumentParser, *, path_positional: bool = True) -> None:
    """PATH (default: current directory) and --index-dir, common to every subcommand."""
    if path_positional:
        parser.add_argument(
            "path",
            nargs="?",
            default=None,
            metavar="PATH",
            help="repository to index (default: the current directory)",
        )
    add_setting_flags(parser, ["index_dir"])


# The settings each face offers as flags, grouped by stage; every flag is generated from the
# schema (`add_setting_flags`), so a setting has one spelling, type, limit and help everywhere.
INDEX_SETTINGS = (
    "chunking", "chunk_lines", "chunk_overlap", "max_file_bytes", "max_line_chars",
    "include_secret_files",
)  # fmt: skip
LEXICAL_SETTINGS = ("split_identifiers", "path_in_text")
DENSE_SETTINGS = (
    "embed_backend",
    "embed_model",
    "dense_stripes",
    "embed_batch_size",
    "allow_download",
    "dense_first_pass",
    "dense_wait",
)
FUSION_SETTINGS = ("fusion", "rrf_k", "dense_weight", "bm25_weight", "depth")
SIGNAL_SETTINGS = (
    "signals", "signal_definitions", "signal_forms", "signal_path", "signal_coherence",
    "signal_roles", "signal_issue_terms",
)  # fmt: skip
RERANK_SETTINGS = (
    "rerank", "rerank_backend", "rerank_model", "rerank_candidates", "learned_candidates",
    "rerank_keep",
)  # fmt: skip
RANKING_SETTINGS = (
    *LEXICAL_SETTINGS, *DENSE_SETTINGS, *FUSION_SETTINGS, *SIGNAL_SETTINGS, *RERANK_SETTINGS,
)  # fmt: skip
PROMPT_SETTINGS = ("budget", "template", "encoding", "context_first", "trim_last", "secrets")
BACKEND_SETTINGS = ("backend", "backend_url", "backend_collection")
BACKEND_GROUP = "a shared index on a server (Qdrant)"

# Older spellings that keep working, and flags that set a boolean setting to False.
FLAG_ALIASES: dict[str, tuple[str, ...]] = {
    "chunk_overlap": ("--overlap",),
    "backend_url": ("--url",),
    "backend_collection": ("--collection",),
}
INVERSE_FLAGS: dict[str, tuple[str, str]] = {
    "context_first": ("--context-last", "put the task before the code context"),
}
# Flags that set a setting to one of its values: (flag, value, help).
VALUE_FLAGS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "dense_wait": (
        (
            "--wait",
            "all",
            "wait, with progress, until the model has embedded every chunk; same as "
            "--dense-wait all",
        ),
        (
            "--no-wait",
            "0",
            "answer at once from the dense vectors that exist (the static first pass); the note "
            "says how much the model covers; same as --dense-wait 0",
        ),
    ),
    "secrets": (
        (
            "--allow-secrets",
            "allow",
            "include chunks with suspected secrets as they are (still said on stderr); "
            "same as --secrets allow",
        ),
        (
            "--redact-secrets",
            "redact",
            "include chunks with suspected secrets, each secret replaced by <redacted:TYPE>; "
            "same as --secrets redact",
        ),
    ),
}
FLAG_SPELLINGS = "_setting_flags"  # Namespace attribute: setting -> the flag spelling used


def _remember(namespace: argparse.Namespace, dest: str, option_string: str | None) -> None:
    """Note which spelling set `dest`, so an error about its value names the flag as typed."""
    if option_string:
        spelled = dict(getattr(namespace, FLAG_SPELLINGS, None) or {})
        spelled[dest] = option_string
        setattr(namespace, FLAG_SPELLINGS, spelled)


class _SettingFlag(argparse.Action):
    """Store a setting's value (or `const` for a flag without one) and remember the spelling."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        _remember(namespace, self.dest, option_string)


class _SettingSwitch(argparse.BooleanOptionalAction):
    """--x / --no-x for a boolean setting, remembering the spelling."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option_string)
        _remember(namespace, self.dest, option_string)


@functools.cache
def _flag_type(info: SettingInfo) -> Callable[[str], Any]:
    """The argparse type of a setting: parses the text; limits are checked by the schema.

    One function per setting, shared by every subcommand's flag.
    """
    if info.kind is Path:
        return Path
    if info.kind not in (int, float):
        return str
    what = {int: "a whole number", float: "a number"}[info.kind]
    word = info.meta.auto_word
    if info.meta.auto is not None:
        what = f"{word} or {what}"

    def parse(text: str) -> Any:
        if info.meta.auto is not None and text.strip().lower() == word:
            return info.meta.auto
        try:
            return info.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None

    return parse


def setting_help(info: SettingInfo) -> str:
    """A flag's help: the setting's docstring, its limits and its default.

    Written like the other flags' help: no final period, and a lower-case first word unless
    it is a name such as BM25.
    """
    doc = info.doc.rstrip(".")
    first = doc.split(" ", 1)[0]
    if first[1:].islower():
        doc = doc[0].lower() + doc[1:]
    facts = [info.limits] if info.limits else []
    facts.append(f"default: {info.shown_default}")
    return f"{doc} ({'; '.join(facts)})".replace("%", "%%")  # argparse formats help with %


def add_setting_flags(parser: argparse._ActionsContainer, names: Sequence[str]) -> None:
    """One flag per setting, generated from the schema: `--chunk-lines N`, `--rerank/--no-rerank`.

    The type and choices come from the field's annotation, the help from its docstring, with
    its limits and default; a flag left out is None, so config files and CODERAG_* keep their
    say. Values are checked by the schema, so a bad one reads `--rrf-k: must be ≥ 1, got -60.`.
    """
    for name in names:
        info = SCHEMA[name]
        spellings = (info.flag, *FLAG_ALIASES.get(name, ()))
        if info.kind is bool:
            parser.add_argument(
                *spellings,
                dest=name,
                action=_SettingSwitch,
                default=None,
                help=setting_help(info),
            )
        else:
            parser.add_argument(
                *spellings,
                dest=name,
                action=_SettingFlag,
                default=None,
                type=_flag_type(info),
                choices=info.choices or None,
                metavar=None if info.choices else (info.meta.metavar or "N"),
                help=setting_help(info),
            )
        if name in INVERSE_FLAGS:
            flag, help_text = INVERSE_FLAGS[name]
            parser.add_argument(
                flag,
                dest=name,
                action=_SettingFlag,
                nargs=0,
                const=False,
                default=None,
                help=help_text,
            )
        for flag, value, help_text in VALUE_FLAGS.get(name, ()):
            parser.add_argument(
                flag,
                dest=name,
                action=_SettingFlag,
                nargs=0,
                const=value,
                default=None,
                help=help_text,
            )


def add_ranking_args(parser: argparse._ActionsContainer) -> None:
    """The options of the ranking stages, shared by `search` and `prompt`."""
    parser.add_argument(
        "--no-dense",
        dest="dense",
        action="store_false",
        default=True,
        help="rank with BM25 only (no embedding model is loaded)",
    )
    add_setting_flags(parser, RANKING_SETTINGS)


DEFAULT_QUERY_LINES = 20  # lines before FILE:LINE that make a code-to-code query (as the TUI)


def add_location_args(parser: argparse._ActionsContainer) -> None:
    """--from FILE:LINE and --query-lines: ask with the code before a line, as completion does."""
    parser.add_argument(
        "--from",
        dest="from_location",
        default=None,
        metavar="FILE:LINE",
        help="query with the lines before LINE of FILE (LINE excluded); that "
        "code's own chunk is left out of every ranking",
    )
    parser.add_argument(
        "--query-lines",
        type=int,
        default=DEFAULT_QUERY_LINES,
        metavar="N",
        help=f"lines before LINE used by --from (default: {DEFAULT_QUERY_LINES})",
    )


def location_query(settings: Settings, args: argparse.Namespace) -> tuple[str, Origin]:
    """The query and origin that --from FILE:LINE gives, or a UserError in one sentence."""
    from coderag_tui.core.engine import code_query
    from coderag_tui.core.rank.search import LocationError

    text: str = args.from_location
    file, sep, line = text.rpartition(":")
    if not sep or not file or not line.strip().isdigit():
        raise UserError(f"--from needs FILE:LINE (for example shop/cart.py:30), not {text!r}.")
    if args.query_lines < 1:
        raise UserError(f"--query-lines must be at least 1, not {args.query_lines}.")
    try:
        return code_query(settings, file, int(line), args.query_lines)
    except LocationError as exc:
        raise UserError(str(exc)) from exc


def resolve_repo(path: str | None) -> Path:
    """The repository directory, or a UserError in one sentence."""
    repo = Path(path if path is not None else ".").expanduser()
    if not repo.exists():
        raise UserError(f"{repo} does not exist: pass the path of a repository folder.")
    if not repo.is_dir():
        raise UserError(f"{repo} is not a folder: pass the path of a repository folder.")
    try:
        with os.scandir(repo):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot read the repository folder {repo.absolute()} ({exc.strerror}): give your "
            "user read permission on it (chmod u+rx) or run coderag as a user who can read it."
        ) from exc
    return repo.resolve()


def settings_from_args(
    args: argparse.Namespace,
    *,
    warnings: list[str] | None = None,
    explicit: set[str] | None = None,
    **extra: Any,
) -> Settings:
    """Settings from config files and environment, overridden by the flags that were given.

    A wrong value becomes a UserError (one sentence naming the key and its source); warnings
    about unknown keys go to `warnings` when given (the TUI shows them), else to stderr as
    `coderag: …` lines. `explicit`, when given, receives the names of the settings the user
    gave (a file, a variable or a flag), for `Engine(explicit=…)`.
    """
    values = dict(vars(args))
    values.pop("command", None)
    spelled = values.pop(FLAG_SPELLINGS, None) or {}
    repo = resolve_repo(values.pop("path", None))
    values.update(extra)
    values["repo"] = repo
    try:
        loaded = read_settings(values, flags={"repo": "PATH", **spelled})
    except SettingsError as exc:
        raise UserError(str(exc)) from exc
    if explicit is not None:
        explicit.update(loaded.explicit)
    if warnings is not None:
        warnings.extend(str(w) for w in loaded.warnings)
    else:
        for warning in loaded.warnings:
            print(f"coderag: {visible(str(warning))}", file=sys.stderr)
    return loaded.settings


def valid_text(text: str, what: str) -> tuple[str, str | None]:
    """`text` with bytes that were not UTF-8 replaced by U+FFFD, and a sentence saying so.

    Python hands such bytes of argv and stdin over as lone surrogates, which no encoder
    writes. A replacement keeps the rest of the question usable and the sentence lets the
    user re-type it if the lost character mattered; refusing would cost a retype every time.
    """
    bad = sum(1 for ch in text if "\ud800" <= ch <= "\udfff")
    if not bad:
        return text, None
    fixed = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    held = "1 byte that is" if bad == 1 else f"{bad} bytes that are"
    return fixed, (
        f"the {what} held {held} not UTF-8, replaced by U+FFFD (\ufffd): check your "
        "terminal's encoding if that character mattered."
    )


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def fail(message: str, code: int = 2) -> int:
    print(f"coderag: {message}", file=sys.stderr)
    return code
