"""The one way coderag runs git on a repository: never its configured programs or its options.

A repository can arrive with its `.git` (a tarball, a shared disk, a CI cache), and its
`.git/config` can name programs git runs on its own: `core.fsmonitor` on every listing,
`filter.<name>.clean` whenever a changed file is compared, `diff.external` and textconv
drivers in a diff, `gpg.program` in a log, hooks. A plain clone can also carry a folder laid
out as a git dir (`HEAD`, `config`, `objects/`, `refs/`), which git would take for a bare
repository with its own config when asked inside it. So every git that coderag runs:

- has those programs switched off on its command line (`SAFE_CONFIG`, which outranks any
  file), and every clean, smudge or process filter the repository's config names emptied
  (`_filter_overrides`: git runs no filter whose command is empty). A driver's name can hold
  any character but a newline, `=` and `.` among them, and git splits a `-c` entry at its
  first `=` (`-c filter.x=y.clean=` sets `filter.x`), so these go in the environment as
  `GIT_CONFIG_KEY_n` and `GIT_CONFIG_VALUE_n`, where a key is a key whatever it holds; a
  repository whose filters cannot be read is not given to git at all;
- finds its repository as git finds a work tree's for the user, through a `.git` at or above
  the folder, never a bare-looking folder inside the tree (`safe.bareRepository=explicit`);
  a bare repository the user named themselves (a mirror under `eval --repos`) is passed with
  `--git-dir`;
- gets the revisions and paths that came from outside (a dataset's `base_commit`, `--diff
  REF`) after `--end-of-options` and `--`, each checked by `revision` first, so none is ever
  read as an option (`--output=~/.bashrc`);
- runs with no terminal on stdin, no pager, no optional lock on the user's index
  (`GIT_OPTIONAL_LOCKS=0`), a time limit, and the user's environment less `GIT_DIR` and
  `GIT_WORK_TREE` (a hook's leftovers must not point it at another repository).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from coderag_tui.core.errors import CoderagError
from coderag_tui.core.visible import one_line

TIMEOUT_S = 120.0
MAX_REVISION_CHARS = 256

# Configuration that outranks the repository's files: no program of theirs runs.
SAFE_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    "core.pager=cat",
    "diff.external=",
    "log.showSignature=false",
    "safe.bareRepository=explicit",
    "protocol.allow=never",
    "submodule.recurse=false",
    "core.quotePath=false",  # not a program: paths come back as they are, for coderag to show
)
# Porcelain that would run an external diff or a textconv driver of the repository's.
_DIFF_PORCELAIN = frozenset({"diff", "log", "show"})
_NO_PROGRAMS = ("--no-ext-diff", "--no-textconv")
_DROPPED_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF")

# The environment's own command-line configuration: `GIT_CONFIG_COUNT` pairs (coderag's are
# appended after the user's), and `GIT_CONFIG_PARAMETERS`, where `-c` entries go.
_COUNT, _KEY, _VALUE = "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"

_filters: dict[tuple[str, bool], tuple[tuple[str, str], ...]] = {}
_filters_lock = threading.Lock()


class BadRevision(CoderagError, ValueError):
    """A revision from outside that git must not be given; one sentence."""


class UnreadableConfig(OSError):
    """git could not list the repository's filters, so it is not run there (a filter that
    cannot be named cannot be switched off)."""


def revision(text: str, what: str = "revision") -> str:
    """`text` when it can only be read as a revision by git (no option, no space, no control
    character, bounded), else BadRevision naming `what`."""
    if (
        not text
        or text.startswith("-")
        or len(text) > MAX_REVISION_CHARS
        or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)
    ):
        raise BadRevision(
            f"{what} {one_line(repr(text), 80)} is not a commit name: give a commit, branch or tag."
        )
    return text


def _environment(overrides: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The user's environment for git, less what could point it elsewhere, with `overrides`
    (key, value) as command-line configuration after any the user's environment holds."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # never take (or refresh) the user's git index
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_PAGER"] = "cat"
    if overrides:
        given = env.get(_COUNT, "0").strip()
        start = int(given) if given.isdigit() else 0
        if not given.isdigit():  # git refuses a bogus count: the user's pairs cannot apply
            for name in [k for k in env if k == _COUNT or k.startswith((_KEY, _VALUE))]:
                del env[name]
        for n, (key, value) in enumerate(overrides, start=start):
            env[f"{_KEY}{n}"], env[f"{_VALUE}{n}"] = key, value
        env[_COUNT] = str(start + len(overrides))
    return env


def _where(place: str | Path, *, git_dir: bool) -> list[str]:
    return [f"--git-dir={place}"] if git_dir else ["-C", str(place)]


def _config_args(entries: Sequence[str]) -> list[str]:
    return [arg for entry in entries for arg in ("-c", entry)]


def _filter_overrides(place: str | Path, *, git_dir: bool) -> tuple[tuple[str, str], ...]:
    """(key, value) pairs emptying every filter driver the repository's config names (read
    once per repository and process: reading config runs nothing); UnreadableConfig when git
    cannot list them."""
    key = (os.path.realpath(place), git_dir)
    with _filters_lock:
        known = _filters.get(key)
    if known is not None:
        return known
    argv = [
        "git",
        *_config_args(SAFE_CONFIG),
        *_where(place, git_dir=git_dir),
        "config",
        "-z",
        "--get-regexp",
        r"^filter\.",
    ]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=_environment(),
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UnreadableConfig(f"git config could not run ({exc})") from None
    # 1: no filter at all. Anything else (a config git cannot parse, a folder that is no
    # repository) leaves the filters unknown; git would fail there as well.
    if proc.returncode not in (0, 1):
        raise UnreadableConfig(proc.stderr.decode("utf-8", "replace").strip())
    names: set[str] = set()
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        name = record.split("\n", 1)[0]  # a key never holds a newline; its value may
        if name.count(".") >= 2:  # filter.<driver>.<key>; a driver's name may hold dots
            names.add(name[len("filter.") : name.rindex(".")])
    overrides = tuple(
        (f"filter.{name}.{key}", value)
        for name in sorted(names)
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    )
    with _filters_lock:
        _filters[key] = overrides
    return overrides


def command(
    place: str | Path,
    *argv: str,
    revisions: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    git_dir: bool = False,
) -> list[str]:
    """The full command line: `git` with `SAFE_CONFIG`, in `place` (a folder in a work tree,
    or with `git_dir` a git dir the user named), then `argv` (coderag's own words), then
    `--end-of-options` and `revisions`, then `--` and `paths` when given (`paths=()` still
    ends with `--`). It runs with `environment(place)`, which empties the filters."""
    line = ["git", "--no-pager", *_config_args(SAFE_CONFIG)]
    line += _where(place, git_dir=git_dir)
    if argv:
        sub, *rest = argv
        line += [sub, *(_NO_PROGRAMS if sub in _DIFF_PORCELAIN else ()), *rest]
    if revisions:
        line += ["--end-of-options", *(revision(r) for r in revisions)]
    if paths is not None:
        line += ["--", *paths]
    return line


def environment(place: str | Path, *, git_dir: bool = False) -> dict[str, str]:
    """The environment git runs with in `place`: every filter its config names emptied
    (UnreadableConfig, an OSError, when they cannot be listed)."""
    return _environment(_filter_overrides(place, git_dir=git_dir))


def run(
    place: str | Path,
    *argv: str,
    revisions: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    git_dir: bool = False,
    input: bytes | None = None,
    timeout: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[bytes] | None:
    """Run git (see `command`) and return what it did, or None when it could not run (its
    filters unknown among the reasons) or took longer than `timeout`."""
    try:
        return subprocess.run(
            command(place, *argv, revisions=revisions, paths=paths, git_dir=git_dir),
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=environment(place, git_dir=git_dir),
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def output(
    place: str | Path,
    *argv: str,
    revisions: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    git_dir: bool = False,
    timeout: float = TIMEOUT_S,
) -> bytes | None:
    """git's standard output when it succeeded, else None."""
    done = run(place, *argv, revisions=revisions, paths=paths, git_dir=git_dir, timeout=timeout)
    return done.stdout if done is not None and done.returncode == 0 else None


def start(
    place: str | Path,
    *argv: str,
    revisions: Sequence[str] = (),
    paths: Sequence[str] | None = None,
    git_dir: bool = False,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """A running git (see `command`) with its stdout piped and stderr dropped; OSError when it
    cannot start (or its filters cannot be listed)."""
    return subprocess.Popen(
        command(place, *argv, revisions=revisions, paths=paths, git_dir=git_dir),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment(place, git_dir=git_dir),
    )


__all__ = [
    "SAFE_CONFIG",
    "BadRevision",
    "UnreadableConfig",
    "command",
    "environment",
    "output",
    "revision",
    "run",
    "start",
]
