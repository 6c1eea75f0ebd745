"""Arguments and helpers shared by the subcommands: settings flags, repository path, output."""

from __future__ import annotations

import argparse
import functools
import io
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from coderag_tui.core.echo import echo
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.records import Origin, Scope
from coderag_tui.core.visible import one_line
from coderag_tui.settings import (
    SCHEMA,
    SettingInfo,
    Settings,
    SettingsError,
    read_settings,
    settings_of,
)

if TYPE_CHECKING:
    from coderag_tui.core.engine import Engine
    from coderag_tui.core.index.changes import Change


class UserError(CoderagError):
    """A problem the user can fix; the message is one sentence naming the thing and the fix."""

    exit_code = 2


class Parser(argparse.ArgumentParser):
    """argparse with a usage error in one line and a hint, not the whole usage first, and no
    abbreviated options (`coderag . --no-dense` would silently mean `--no-dense-background`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"coderag: {one_line(message)}; `{self.prog} --help` lists the options.\n")


def add_repo_args(parser: argparse.ArgumentParser, *, path_positional: bool = True) -> None:
    """PATH (default: current directory), --index-dir and --log-file, common to every
    subcommand."""
    if path_positional:
        parser.add_argument(
            "path",
            nargs="?",
            default=None,
            metavar="PATH",
            help="repository to index (default: the current directory)",
        )
    add_setting_flags(parser, ["index_dir", "log_file"])


class _LogFile(logging.StreamHandler):  # type: ignore[type-arg]
    """coderag's debug log in a file the user named: each record one line, bounded and with
    its secrets masked (`core.echo`: a record may repeat a repository's value), opened the
    one way a named file is written (`core.safe_write.open_for_append`). A write that fails
    later (a full disk) is said once, and the log stops there."""

    def __init__(self, path: str, guarded: Path | None) -> None:
        from coderag_tui.core.safe_write import open_for_append

        binary = open_for_append(Path(path), guarded=guarded)
        text = io.TextIOWrapper(binary, encoding="utf-8", errors="backslashreplace")
        super().__init__(text)
        self.baseFilename = path
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))

    def format(self, record: logging.LogRecord) -> str:
        return echo(super().format(record), MAX_LOG_LINE_CHARS)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        why = getattr(error, "strerror", None) or type(error).__name__
        logging.getLogger("coderag_tui").removeHandler(self)
        print(
            f"coderag: {echo(f'could not write the log file {self.baseFilename} ({why})')}; "
            "the log stops here.",
            file=sys.stderr,
        )


MAX_LOG_LINE_CHARS = 4000


def start_log(path: Path | None, guarded: Path | None = None) -> None:
    """Append coderag's debug log to `path` (once per file and process), never through a link
    inside `guarded` (the repository) or into anything but a regular file; or a UserError."""
    if path is None:
        return
    from coderag_tui.core.safe_write import UnsafePath

    target = os.path.abspath(path)
    package = logging.getLogger("coderag_tui")
    if any(getattr(h, "baseFilename", None) == target for h in package.handlers):
        return
    try:
        handler = _LogFile(target, guarded)
    except UnsafePath as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:
        raise UserError(
            f"cannot write the log file {path} ({exc.strerror}): give --log-file a writable path."
        ) from exc
    package.addHandler(handler)
    package.setLevel(logging.DEBUG)
    package.propagate = False  # into the file only: a library's root handler prints to stderr


# The settings each face offers as flags, grouped by stage; every flag is generated from the
# schema (`add_setting_flags`), so a setting has one spelling, type, limit and help everywhere.
INDEX_SETTINGS = settings_of("chunking", "files")
LEXICAL_SETTINGS = settings_of("lexical")
DENSE_SETTINGS = settings_of("dense")
FUSION_SETTINGS = settings_of("fusion")
SIGNAL_SETTINGS = settings_of("signals")
RERANK_SETTINGS = settings_of("rerank", "rerank model")
RANKING_SETTINGS = (
    *LEXICAL_SETTINGS, *DENSE_SETTINGS, *FUSION_SETTINGS, *SIGNAL_SETTINGS, *RERANK_SETTINGS,
)  # fmt: skip
PROMPT_SETTINGS = settings_of("prompt")
BACKEND_SETTINGS = settings_of("backend")
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
    add_setting_flags(parser, ["query_lines"])


def add_scope_args(parser: argparse._ActionsContainer, *, exclude: bool = True) -> None:
    """--include GLOB and --exclude GLOB: which files the rankings may show (the index keeps
    every file). `exclude` false: the command declares --exclude itself (prompt's also
    takes chunk keys)."""
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="only rank files matching GLOB (repeatable or comma-separated; `*` crosses "
        "folders, a name without / matches at any depth, a folder takes what lies under it)",
    )
    if exclude:
        parser.add_argument(
            "--exclude",
            action="append",
            default=[],
            metavar="GLOB",
            help="never rank files matching GLOB (repeatable or comma-separated)",
        )


CHUNK_KEY = re.compile(r".+:\d+-\d+")  # PATH:A-B, a chunk as `coderag search` names it


def scope_from_args(args: argparse.Namespace, root: Path) -> tuple[Scope, list[str]]:
    """The scope --include/--exclude give, as repository paths, and the chunk keys among the
    --exclude values (`prompt --exclude PATH:A-B` leaves one chunk out; any other value is a
    glob); a pattern leading outside the repository is a UserError."""
    from coderag_tui.core.given_paths import LocationError, scope_pattern

    include = [p for given in args.include for p in given.split(",") if p.strip()]
    globs: list[str] = []
    keys: list[str] = []
    for given in getattr(args, "exclude", None) or []:
        if CHUNK_KEY.fullmatch(given.strip()):
            keys.append(given.strip())
        else:
            globs += [p for p in given.split(",") if p.strip()]
    try:
        scope = Scope(
            tuple(scope_pattern(root, p) for p in include),
            tuple(scope_pattern(root, p) for p in globs),
        )
    except LocationError as exc:
        raise UserError(str(exc)) from exc
    return scope, keys


def add_diff_arg(parser: argparse._ActionsContainer) -> None:
    """--diff [REF]: ask with the work tree's change against REF."""
    parser.add_argument(
        "--diff",
        nargs="?",
        const="HEAD",
        default=None,
        metavar="REF",
        help="ask with the work tree's change against REF (default HEAD: your staged and "
        "unstaged edits and new files; `--diff main`: what this branch changed since it left "
        "main); the changed lines' own chunks are left out of every ranking",
    )


def diff_query_from(settings: Settings, args: argparse.Namespace) -> tuple[str, Origin, Change]:
    """The query, origin and change that --diff [REF] gives (said on stderr), or a UserError
    in one sentence."""
    from coderag_tui.core.engine import diff_query
    from coderag_tui.core.index.changes import ChangeError

    try:
        query, origin, change = diff_query(settings, args.diff)
    except ChangeError as exc:
        raise UserError(str(exc)) from exc
    said = f"query: the change, {change.describe()}"
    if change.cut:
        said += " (git's diff was longer than 4 MiB: its start is used)"
    print(f"coderag: {echo(said)}.", file=sys.stderr)
    if change.left_out:
        shown = ", ".join(f"{path} ({why})" for path, why in change.left_out[:5])
        more = len(change.left_out) - 5
        extra = f" and {more} more" if more > 0 else ""
        print(f"coderag: not part of it: {echo(shown)}{extra}.", file=sys.stderr)
    return query, origin, change


def diff_repo_path(args: argparse.Namespace, positional: str) -> None:
    """`--diff PATH`: a path where REF would be (absolute, or starting with . or ~) is the
    repository, and the REF is HEAD; likewise a lone positional folder beside --diff."""
    ref = args.diff
    looks_like_path = ref is not None and ref.startswith(("/", ".", "~"))
    if looks_like_path and args.path is None and Path(ref).expanduser().is_dir():
        args.path, args.diff = ref, "HEAD"
    given = getattr(args, positional)
    if args.diff is not None and given is not None and args.path is None and Path(given).is_dir():
        args.path = given
        setattr(args, positional, None)


def location_query(settings: Settings, args: argparse.Namespace) -> tuple[str, Origin]:
    """The query and origin that --from FILE:LINE gives, or a UserError in one sentence."""
    from coderag_tui.core.engine import code_query
    from coderag_tui.core.given_paths import LocationError, parse_location

    try:
        file, line = parse_location(args.from_location)
        return code_query(settings, file, line, settings.query_lines)
    except LocationError as exc:
        raise UserError(f"--from: {exc}") from exc


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
            print(f"coderag: {echo(str(warning))}", file=sys.stderr)
    start_log(loaded.settings.log_file, guarded=loaded.settings.repo_root)
    return loaded.settings


def background_embedding(settings: Settings) -> bool:
    """Does a command leave the model's missing chunks to the background process? Where the
    setting is on and the index is this machine's (a server's collection is filled by
    `coderag index --dense`, which pushes)."""
    return settings.dense_background and settings.backend == "local"


def carry_dense_on(settings: Settings, engine: Engine) -> None:
    """When the dense list a command answered from is not the model's complete one, leave the
    model's missing chunks to the background process (`core.refine`; `dense_background`), so
    the next command has more of the model. Said by the dense notice, not here."""
    dense = engine.dense
    if dense is None or not background_embedding(settings):
        return
    complete = dense.index is not None and dense.index.complete
    if dense.available and not dense.first_pass and complete:
        return
    if not dense.available and not dense.pending:
        return  # dense is off (no model, or turned off): nothing to carry on
    from coderag_tui.core.engine import model_started

    index = dense.index
    if dense.first_pass and index is not None and not model_started(settings, index.n_chunks):
        return  # over dense_background_limit: the first pass is all that runs on its own
    from coderag_tui.core.refine import start

    start(settings)


def say_one_time_setup(settings: Settings) -> None:
    """Before a command waits on the model: say so when that makes its one-time copy first
    (no wait on a one-time setup goes unsaid)."""
    from coderag_tui.core.rank.embedders import ONE_TIME_COPY, copy_pending

    if copy_pending(settings):
        print(f"coderag: {ONE_TIME_COPY}", file=sys.stderr)


# A query or task longer than this on standard input is refused: it is more than any budget
# holds (about a million tokens), and `coderag prompt - </dev/zero` must not fill the memory.
MAX_STDIN_BYTES = 4 * 1024 * 1024


def read_stdin(what: str) -> str:
    """Standard input as text (`what` it is: "task", "query"); bytes that are not UTF-8 come
    back as lone surrogates (as in argv), for `valid_text` to replace and report, instead of a
    decoding traceback. More than MAX_STDIN_BYTES is a UserError."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        text = sys.stdin.read(MAX_STDIN_BYTES + 1)
        too_long = len(text) > MAX_STDIN_BYTES
    else:
        data = bytes(buffer.read(MAX_STDIN_BYTES + 1))
        too_long = len(data) > MAX_STDIN_BYTES
        text = data.decode("utf-8", "surrogateescape")
    if too_long:
        raise UserError(
            f"the {what} on standard input is longer than {MAX_STDIN_BYTES // (1024 * 1024)} "
            "MiB: give the part that matters."
        )
    return text


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
    print(f"coderag: {echo(message)}", file=sys.stderr)
    return code
