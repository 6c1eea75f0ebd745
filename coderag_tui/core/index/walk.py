"""Which files of a repository get indexed, and why the others do not.

`walk` only lists and stats (it never opens a file other than `.gitignore` and
`.coderagignore`), so a re-index where nothing changed reads no contents. In a git work tree
git itself lists the files (tracked plus untracked-not-ignored); elsewhere the tree is walked
with `os.scandir`, honouring every `.gitignore` through `pathspec`. Symlinked directories are
never followed, so no walk can loop. `read_source` then reads one file and applies the
content rules.

`.coderagignore` (gitignore syntax) leaves out more for coderag alone: the one at the root
always, nested ones where git lists them (in a git work tree) or the walk enters their folder.
It can only leave files out: a `!pattern` re-includes what its own patterns left out, never
a file `.gitignore` ignores.

Skipped by path, each reported once with its reason:
- vendored folders, reported once per folder: `VENDORED_DIRS` (dependency trees) and any
  folder holding a `pyvenv.cfg` (a virtualenv whatever its name; a package merely called
  `venv`, like the standard library's, is indexed). Build outputs such as `dist/` or
  `target/` are not listed: they can be real source folders and `.gitignore` covers them;
- lock files (`LOCK_FILES`) and minified or generated bundles by name (`*.min.js`, source maps);
- key and credential files by name (`secret_file_kind`: `id_rsa`, `*.pem`, `*.key`, `.env`,
  `.netrc` …) unless `include_secret_files`: a prompt could only ever hold them back;
- known binary file types by extension (`BINARY_EXTENSIONS`), saving a read;
- files larger than `max_file_bytes`; symlinks out of the repository or into a loop;
  anything that is not a regular file (FIFOs, sockets, directories where git expects a file).
Version-control and bytecode-cache folders (`ALWAYS_SKIPPED_DIRS`) are left out silently,
like `.git`, as are the `exclude` paths (the index's own directory may live in the repo).

Content rules in `read_source`: a NUL byte in the first 8 KiB means binary; a line longer
than `max_line_chars` means minified or generated. Marker comments such as "@generated" or
"DO NOT EDIT" are deliberately not a reason: generated API clients and parsers are code that
people ask about, and the harmful cases (bundles, lock files) are caught by the rules above.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import subprocess
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from coderag_tui.core import git
from coderag_tui.core.index.languages import NAMED_FILES, NAMED_PREFIXES, language_for
from coderag_tui.core.records import SkippedFile, SkipReason, SourceFile
from coderag_tui.core.visible import one_line

_log = logging.getLogger(__name__)

VENDORED_DIRS: frozenset[str] = frozenset(
    {
        "node_modules",
        "bower_components",
        "jspm_packages",
        "vendor",
        "third_party",
        "third-party",
        "thirdparty",
        "site-packages",
        "dist-packages",
        ".venv",
        ".tox",
        ".nox",
        ".eggs",
        "Pods",
        "Carthage",
    }
)

ALWAYS_SKIPPED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
    }
)

LOCK_FILES: frozenset[str] = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "bun.lock",
        "deno.lock",
        "poetry.lock",
        "pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "cargo.lock",
        "composer.lock",
        "gemfile.lock",
        "podfile.lock",
        "go.sum",
        "mix.lock",
        "pubspec.lock",
        "packages.lock.json",
        "flake.lock",
        "gradle.lockfile",
    }
)

MINIFIED_SUFFIXES: tuple[str, ...] = (
    ".min.js",
    ".min.mjs",
    ".min.cjs",
    ".min.css",
    ".js.map",
    ".mjs.map",
    ".css.map",
)

BINARY_EXTENSIONS: frozenset[str] = frozenset(
    {
        # images, audio, video
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff",
        ".psd", ".mp3", ".wav", ".ogg", ".flac", ".aac", ".mp4", ".m4a", ".mov", ".avi",
        ".mkv", ".webm",
        # archives and packages
        ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".whl", ".jar",
        ".war", ".egg", ".deb", ".rpm", ".dmg", ".iso",
        # compiled code and objects
        ".exe", ".dll", ".so", ".dylib", ".a", ".o", ".obj", ".lib", ".pyc", ".pyo", ".pyd",
        ".class", ".wasm",
        # documents, fonts, data
        ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ttf", ".otf",
        ".woff", ".woff2", ".eot", ".sqlite", ".sqlite3", ".db", ".npy", ".npz", ".pkl",
        ".pickle", ".pt", ".onnx", ".safetensors", ".h5", ".parquet",
    }
)  # fmt: skip

GITIGNORE = ".gitignore"
# Bounds of one ignore file (see `_IgnoreRules`): past either, its patterns are not read.
MAX_IGNORE_BYTES = 256 * 1024
MAX_IGNORE_PATTERNS = 2000
CODERAG_IGNORE = ".coderagignore"  # gitignore syntax: what coderag alone leaves out
BINARY_SNIFF_BYTES = 8192
VIRTUALENV_MARKER = "pyvenv.cfg"

# Files that hold keys or credentials by their very name. Templates of `.env` files
# (`.env.example`, `.env.sample`, `.env.template`, `.env.dist`) are indexed: they are meant
# to be committed, say which variables a program reads, and a real secret left in one is
# still held back from prompts by the content scan. `credentials.json` is Google's name for
# an OAuth client secret (and gcloud's for stored tokens), so it counts as one too.
SSH_KEY_NAMES: frozenset[str] = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}
)
CREDENTIAL_FILE_NAMES: frozenset[str] = frozenset(
    {".netrc", "_netrc", ".pgpass", ".git-credentials", ".pypirc", ".htpasswd",
     "credentials.json", ".envrc"}
)  # fmt: skip
KEY_FILE_EXTENSIONS: frozenset[str] = frozenset(
    {".pem", ".key", ".p12", ".pfx", ".keystore", ".jks", ".ppk", ".p8"}
)
ENV_TEMPLATE_MARKS: frozenset[str] = frozenset({"example", "sample", "template", "dist"})

# Lower-case names and prefixes for which a rule above (or the language) looks at the whole
# name; for every other name the extension alone decides, so that verdict is kept per
# extension. `.env` also covers `.env.*` and `.envrc`.
_WHOLE_NAME_RULES: frozenset[str] = LOCK_FILES | SSH_KEY_NAMES | CREDENTIAL_FILE_NAMES | NAMED_FILES
_WHOLE_NAME_PREFIXES: tuple[str, ...] = (".env", *NAMED_PREFIXES)


@dataclass(frozen=True)
class WalkResult:
    """The files to index and the ones left out (both sorted by path); `is_git`: git listed them."""

    files: tuple[SourceFile, ...]
    skipped: tuple[SkippedFile, ...]
    is_git: bool
    # A plain walk's (no git): every path whose stat decides what it listed (each folder it
    # entered, each ignore file it read, each file it stat-ed), sorted, and their digest as
    # the walk saw them; `stat_fingerprint` of the same paths later gives it again while
    # nothing changed.
    watched: tuple[str, ...] = ()
    digest: str | None = None


def walk(
    root: Path,
    *,
    max_file_bytes: int = 1 << 20,
    exclude: Sequence[Path] = (),
    include_secret_files: bool = False,
) -> WalkResult:
    """List the repository's indexable files by path and stat alone, with a reason for each skip."""
    root_real = os.path.realpath(root)
    excluded = _excluded_prefixes(root_real, exclude)
    listed = _git_ls_files(root_real)
    is_git = listed is not None
    collector = _Collector(root_real, max_file_bytes, include_secret_files=include_secret_files)
    if listed is not None:
        collector.virtualenvs = {
            rel[: -len(VIRTUALENV_MARKER) - 1]
            for rel in listed
            if rel.endswith("/" + VIRTUALENV_MARKER)
        }
        own = _OwnIgnores.from_listing(root_real, listed)
        for rel in listed:
            if not _is_excluded(rel, excluded) and not (own and own.ignored(rel)):
                collector.add_git_path(rel)
    else:
        collector.watch = []
        _walk_plain(root_real, excluded, collector)
    files = tuple(sorted(collector.files, key=lambda f: f.path))
    skipped = tuple(sorted(collector.finish_skipped(), key=lambda s: s.path))
    if collector.watch is None:
        return WalkResult(files=files, skipped=skipped, is_git=is_git)
    keys = sorted(dict(collector.watch).items())
    rules = (max_file_bytes, include_secret_files, excluded)
    return WalkResult(
        files=files,
        skipped=skipped,
        is_git=is_git,
        watched=tuple(rel for rel, _ in keys),
        digest=_stat_digest(rules, keys),
    )


def stat_fingerprint(
    root: Path,
    watched: Sequence[str],
    *,
    max_file_bytes: int = 1 << 20,
    exclude: Sequence[Path] = (),
    include_secret_files: bool = False,
) -> str:
    """The digest of a plain walk (`WalkResult.digest`) made again from the stat of each path
    it watched: equal while no folder gained, lost or renamed an entry and no watched file
    changed, so an unchanged folder without git needs no walk (35,195 files: 1.1-1.6 s of
    walk against ~0.35 s of stat). A changed digest only says "walk"."""
    root_real = os.path.realpath(root)
    rules = (max_file_bytes, include_secret_files, _excluded_prefixes(root_real, exclude))
    prefix = root_real + os.sep
    keys: list[tuple[str, tuple[object, ...]]] = []
    for rel in watched:
        path = prefix + rel
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is None or stat.S_ISLNK(st.st_mode):
            keys.append((rel, _stat_key(path)))  # the error, or the link and its target
        else:
            keys.append((rel, _entry_key(st)))
    return _stat_digest(rules, keys)


def _stat_digest(rules: tuple[object, ...], keys: Sequence[tuple[str, tuple[object, ...]]]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((FINGERPRINT_VERSION, "plain", rules)).encode())
    digest.update(repr(list(keys)).encode("utf-8", errors="surrogateescape"))
    return digest.hexdigest()


def _entry_key(st: os.stat_result) -> tuple[object, ...]:
    """`_stat_key` of a path that is no link, from a stat the walk already made."""
    return (_stat_fields(st),)


def _stat_fields(st: os.stat_result) -> tuple[int, ...]:
    """What a fingerprint reads of one stat: the walk's listing changes with no other field."""
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)


def vet(
    root: Path,
    rel: str,
    *,
    max_file_bytes: int = 1 << 20,
    exclude: Sequence[Path] = (),
    include_secret_files: bool = False,
) -> SourceFile | SkippedFile | None:
    """What `walk` would make of the one repository path `rel` (forward slashes, no `..`):
    the file to read, or why it is not indexed; None when there is no such path.

    The same rules as the walk, path by path: no folder on the way may be a link (the walk
    never follows one), a vendored, virtualenv or version-control folder, excluded, or
    ignored by git (a tracked file counts as git lists it) or by a `.coderagignore`; then
    the name and stat rules.
    """
    root_real = os.path.realpath(root)
    parts = rel.split("/")
    if not rel or any(part in ("", ".", "..") for part in parts):
        return None
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        try:
            st = os.lstat(os.path.join(root_real, folder))
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            detail = f"inside {folder}, a link to a folder, which the walk never enters"
            return SkippedFile(rel, SkipReason.NOT_A_FILE, detail)
        if os.path.exists(os.path.join(root_real, folder, VIRTUALENV_MARKER)):
            return SkippedFile(folder, SkipReason.VENDORED, "a virtualenv, not walked")
    excluded = _excluded_prefixes(root_real, exclude)
    if excluded and _is_excluded(rel, excluded):
        return SkippedFile(rel, SkipReason.NOT_A_FILE, "inside the index's own folder")
    ignored_by = _ignored_by(root_real, parts)
    if ignored_by:
        return SkippedFile(rel, SkipReason.NOT_A_FILE, f"ignored by {ignored_by}")
    collector = _Collector(root_real, max_file_bytes, include_secret_files=include_secret_files)
    collector.add_git_path(rel)
    if collector.files:
        return collector.files[0]
    if collector.skipped or collector.vendored:
        return collector.finish_skipped()[0]
    if not os.path.lexists(os.path.join(root_real, rel)):
        return None
    return SkippedFile(rel, SkipReason.NOT_A_FILE, "inside a folder coderag never indexes")


def _ignored_by(root_real: str, parts: Sequence[str]) -> str:
    """Which file makes the walk leave the path out as ignored (`.gitignore` or
    `.coderagignore`), or "": git's own answer in a work tree (a tracked file is never
    ignored), else every `.gitignore` from the root down; then the `.coderagignore` files
    the walk would read (see the module docstring)."""
    rel = "/".join(parts)
    nested = [
        "".join(part + "/" for part in parts[:depth]) + CODERAG_IGNORE
        for depth in range(1, len(parts))
    ]
    nested = [name for name in nested if _regular(os.path.join(root_real, name))]
    git = _git_check_ignore(root_real, [rel, *nested])
    if git is None:
        if _ignored_along(root_real, parts, GITIGNORE):
            return GITIGNORE
        return CODERAG_IGNORE if _ignored_along(root_real, parts, CODERAG_IGNORE) else ""
    if rel in git:
        return GITIGNORE
    own = _OwnIgnores.load(root_real, [name for name in nested if name not in git])
    return CODERAG_IGNORE if own and own.ignored(rel) else ""


def _git_check_ignore(root_real: str, rels: Sequence[str]) -> set[str] | None:
    """Which of `rels` git ignores (a tracked file never is), or None when git cannot say."""
    proc = git.run(
        root_real,
        "check-ignore",
        "-z",
        "--stdin",
        input="\0".join(rels).encode("utf-8", errors="surrogateescape") + b"\0",
        timeout=_GIT_TIMEOUT_S,
    )
    if proc is None or proc.returncode not in (0, 1):
        return None
    out = proc.stdout.decode("utf-8", errors="surrogateescape")
    return {name for name in out.split("\0") if name}


def _regular(path: str) -> bool:
    """Is `path` a regular file (not a link, FIFO or folder: a FIFO would block a read)?"""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _ignored_along(root_real: str, parts: Sequence[str], name: str) -> bool:
    """Whether the ignore files called `name` from the root down to the path ignore it (or a
    folder on the way), with git's semantics: the deepest matching pattern decides."""
    rel = "/".join(parts)
    rules: tuple[_IgnoreRules, ...] = ()
    for depth in range(len(parts)):
        base = "".join(part + "/" for part in parts[:depth])
        ignore_file = os.path.join(root_real, base, name)
        loaded = _IgnoreRules.load(ignore_file, base) if _regular(ignore_file) else None
        if loaded is not None:
            rules = (*rules, loaded)
        if depth and _ignored(rules, base.rstrip("/"), is_dir=True):
            return True
    return _ignored(rules, rel, is_dir=False)


class _OwnIgnores:
    """The `.coderagignore` files of a git listing (the root one always), matched with git's
    semantics; folder verdicts are kept, so a listing costs one check per folder and file."""

    def __init__(self, by_base: dict[str, _IgnoreRules]) -> None:
        self.by_base = by_base
        self._folders: dict[str, tuple[bool, tuple[_IgnoreRules, ...]]] = {}

    @classmethod
    def load(cls, root_real: str, nested: Sequence[str]) -> _OwnIgnores | None:
        """The root `.coderagignore` and the `nested` ones (repository paths), or None when
        none holds a pattern."""
        by_base: dict[str, _IgnoreRules] = {}
        for name in (CODERAG_IGNORE, *nested):
            path = os.path.join(root_real, name)
            base = name[: -len(CODERAG_IGNORE)]
            loaded = _IgnoreRules.load(path, base) if _regular(path) else None
            if loaded is not None:
                by_base[base] = loaded
        return cls(by_base) if by_base else None

    @classmethod
    def from_listing(cls, root_real: str, listed: Sequence[str]) -> _OwnIgnores | None:
        suffix = "/" + CODERAG_IGNORE
        return cls.load(root_real, [rel for rel in listed if rel.endswith(suffix)])

    def _folder(self, folder: str) -> tuple[bool, tuple[_IgnoreRules, ...]]:
        """(is the folder ignored, the rules that apply inside it); "" is the root."""
        known = self._folders.get(folder)
        if known is not None:
            return known
        if folder:
            parent, _, _ = folder.rpartition("/")
            ignored, rules = self._folder(parent)
            ignored = ignored or _ignored(rules, folder, is_dir=True)
        else:
            ignored, rules = False, ()
        own = self.by_base.get(folder + "/" if folder else "")
        if own is not None:
            rules = (*rules, own)
        self._folders[folder] = (ignored, rules)
        return ignored, rules

    def ignored(self, rel: str) -> bool:
        folder, _, _ = rel.rpartition("/")
        ignored, rules = self._folder(folder)
        return ignored or _ignored(rules, rel, is_dir=False)


# Bump when the rules above change which files are listed or how they are classified: a
# fingerprint recorded by an older version then no longer matches.
FINGERPRINT_VERSION = 2  # 2: .coderagignore
_GIT_TIMEOUT_S = 120
_SYMLINK_MODE = b"H 120000 "  # `git ls-files -s -v`: a cached symlink


_FINGERPRINT_COMMANDS = (
    ("ls-files", "-z", "-s", "-v", "--cached", "--others", "--exclude-standard"),
    ("diff-files", "-z", "--name-only"),
)
# Listings started ahead of `fingerprint` (`start_fingerprint`), by the work tree's real path.
_STARTED: dict[str, list[subprocess.Popen[bytes]]] = {}
_STARTED_LOCK = threading.Lock()


def start_fingerprint(root: Path) -> None:
    """Start git's listings for the next `fingerprint(root)` now, so git lists the tree while
    the caller goes on (a search's imports and loads hid ~0.1 s of `ls-files` on a
    35,000-file repository). `stop_fingerprint` ends ones that were never read."""
    root_real = os.path.realpath(root)
    if not os.path.exists(os.path.join(root_real, ".git")):
        return
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for argv in _FINGERPRINT_COMMANDS:
            procs.append(git.start(root_real, *argv))
    except OSError:
        _end(procs)
        return
    with _STARTED_LOCK:
        before = _STARTED.pop(root_real, None)
        _STARTED[root_real] = procs
    _end(before or [])


def stop_fingerprint(root: Path) -> None:
    """End the listings `start_fingerprint(root)` started if no `fingerprint` read them."""
    with _STARTED_LOCK:
        left = _STARTED.pop(os.path.realpath(root), None)
    _end(left or [])


def _end(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def fingerprint(
    root: Path,
    *,
    max_file_bytes: int = 1 << 20,
    exclude: Sequence[Path] = (),
    include_secret_files: bool = False,
) -> str | None:
    """A digest that changes whenever `walk` could list or stat a file differently, cheap
    enough to check before every search; None when git cannot vouch for the work tree.

    Git does the per-file work in C: `ls-files -s` lists every path with the blob it has
    for a tracked file, and `diff-files` names each tracked file whose stat data (or content)
    differs from git's index. A tracked file it does not name has exactly that blob's
    content, so the listing covers it; the named ones, untracked files and symlinks (whose
    targets git does not follow) are stat-ed here. Files git is told not to check
    (assume-unchanged, skip-worktree) and conflicts give None: `walk` then decides.
    """
    root_real = os.path.realpath(root)
    if not os.path.exists(os.path.join(root_real, ".git")):
        return None  # not the top of a work tree (a sub-folder, or none): walk decides
    with _STARTED_LOCK:
        started = _STARTED.pop(root_real, None)
    procs: list[subprocess.Popen[bytes]] = started or []
    try:
        if not procs:
            for argv in _FINGERPRINT_COMMANDS:
                procs.append(git.start(root_real, *argv))
        outputs = [proc.communicate(timeout=_GIT_TIMEOUT_S)[0] for proc in procs]
    except (OSError, subprocess.SubprocessError):
        _end(procs)
        return None
    listing, dirty = outputs
    if any(proc.returncode != 0 for proc in procs) or not listing:
        return None
    # Tags of `ls-files -v`: "H " a cached file, "? " an untracked one; any other (assume-
    # unchanged, skip-worktree, a conflict's "M ") is a file git does not check.
    records = listing.count(b"\0")
    tagged = listing.count(b"\0H ") + listing.count(b"\0? ") + listing.startswith((b"H ", b"? "))
    if tagged != records:
        return None
    excluded = _excluded_prefixes(root_real, exclude)
    to_stat = set(_records_after(listing, b"? "))
    to_stat.update(path.split(b"\t", 1)[1] for path in _records_after(listing, _SYMLINK_MODE))
    to_stat.update(name for name in dirty.split(b"\0") if name)
    to_stat.add(CODERAG_IGNORE.encode())  # read by the walk even when git ignores it
    stats: list[tuple[object, ...]] = []
    for raw in sorted(to_stat):
        rel = raw.decode("utf-8", errors="surrogateescape").rstrip("/")
        if _is_excluded(rel, excluded):
            continue
        stats.append((raw, *_stat_key(os.path.join(root_real, rel))))
    digest = hashlib.blake2b(digest_size=16)
    settings = (FINGERPRINT_VERSION, max_file_bytes, include_secret_files, excluded)
    digest.update(repr(settings).encode())
    digest.update(listing)
    digest.update(b"\1")
    digest.update(repr(stats).encode("utf-8", errors="surrogateescape"))
    return digest.hexdigest()


def _records_after(listing: bytes, tag: bytes) -> list[bytes]:
    """The rest of every NUL-ended record of `listing` that starts with `tag` (found with
    `bytes.find`, far faster than a regular expression over megabytes)."""
    marker = b"\0" + tag
    starts = [0] if listing.startswith(tag) else []
    at = listing.find(marker)
    while at != -1:
        starts.append(at + 1)
        at = listing.find(marker, at + 1)
    return [listing[start + len(tag) : listing.find(b"\0", start)] for start in starts]


def _stat_key(path: str) -> tuple[object, ...]:
    """What `walk` reads of one path's stat (and its target's, for a link), or the error."""
    out: list[object] = []
    for follow in (False, True):
        try:
            st = os.stat(path, follow_symlinks=follow)
        except OSError as exc:
            out.append(exc.errno)
            break
        out.append(_stat_fields(st))
        if not stat.S_ISLNK(st.st_mode):
            break
    if len(out) > 1:
        out.append(os.path.realpath(path))
    return tuple(out)


def read_source(
    root: Path,
    file: SourceFile,
    *,
    max_line_chars: int = 1000,
    max_file_bytes: int | None = None,
) -> tuple[str, bool] | SkippedFile:
    """Read one listed file: (text, had_invalid_utf8), or a SkippedFile saying why not.

    The text is UTF-8 decoded with replacement characters, without a leading BOM, and with
    CRLF line ends turned into LF so line numbers and chunk texts match what editors show.
    """
    data = _read_bytes(os.path.join(root, file.path), file, max_file_bytes)
    if isinstance(data, SkippedFile):
        return data
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return SkippedFile(file.path, SkipReason.BINARY, "a NUL byte in the first 8 KiB")
    longest = _longest_line_chars(data, max_line_chars)
    if longest > max_line_chars:
        detail = f"a line of {longest:,} characters (limit {max_line_chars:,})"
        return SkippedFile(file.path, SkipReason.MINIFIED, detail)
    invalid = False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        invalid = True
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text, invalid


# --- listing -----------------------------------------------------------------------------


def _git_ls_files(root_real: str) -> list[str] | None:
    """Tracked plus untracked-not-ignored paths under root, or None when git cannot list them.

    An empty listing also returns None, so a folder that its enclosing repository ignores
    (say a checkout inside `build/`) is still walked instead of looking empty.
    """
    proc = git.run(
        root_real, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=120
    )
    if proc is None:
        return None
    if proc.returncode != 0 or not proc.stdout:
        return None
    names = proc.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    # A path appears once per merge stage during a conflict: keep the first.
    return list(dict.fromkeys(name for name in names if name))


def _walk_plain(root_real: str, excluded: tuple[str, ...], collector: _Collector) -> None:  # noqa: C901
    """Walk the tree without git: scandir, nested .gitignore files, never into symlinked dirs."""
    # Each folder carries the .gitignore rules and the .coderagignore rules above it: a
    # path is left out when either set ignores it (one cannot re-include what the other hides).
    Rules = tuple[_IgnoreRules, ...]
    stack: list[tuple[str, Rules, Rules]] = [("", (), ())]
    add_entry = collector.add_entry
    watch = collector.watch
    while stack:
        rel_dir, rules, own = stack.pop()
        abs_dir = os.path.join(root_real, rel_dir) if rel_dir else root_real
        try:
            folder = os.lstat(abs_dir)  # before its entries: a later change shows in its mtime
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError as exc:
            collector.skip(rel_dir.rstrip("/") or ".", SkipReason.UNREADABLE, _os_error_text(exc))
            continue
        if watch is not None:
            watch.append((rel_dir, _entry_key(folder)))
        if rel_dir and any(entry.name == VIRTUALENV_MARKER for entry in entries):
            collector.skip(rel_dir.rstrip("/"), SkipReason.VENDORED, "a virtualenv, not walked")
            continue
        for entry in entries:
            if entry.name in (GITIGNORE, CODERAG_IGNORE) and entry.is_file(follow_symlinks=False):
                if watch is not None:
                    watch.append((rel_dir + entry.name, _stat_key(entry.path)))
                loaded = _IgnoreRules.load(entry.path, rel_dir)
                if loaded is None:
                    continue
                if entry.name == GITIGNORE:
                    rules = (*rules, loaded)
                else:
                    own = (*own, loaded)
        for entry in entries:
            name = entry.name
            rel = rel_dir + name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if name == ".git" or (is_dir and name in ALWAYS_SKIPPED_DIRS):  # .git: dir or file
                continue
            if rules and _ignored(rules, rel, is_dir=is_dir):
                continue
            if own and _ignored(own, rel, is_dir=is_dir):
                continue
            if excluded and _is_excluded(rel, excluded):
                continue
            if is_dir:
                if name in VENDORED_DIRS:
                    collector.skip(rel, SkipReason.VENDORED, "folder not walked")
                else:
                    stack.append((rel + "/", rules, own))
                continue
            add_entry(rel, entry)


class _IgnoreRules:
    """The patterns of one .gitignore file, matched relative to the folder that holds it.

    pathspec reads the patterns with git's semantics; each pattern's regular expression is
    then matched by RE2, whose time is linear in the path, instead of Python's backtracking
    `re` (`*a*a*a*a*a*a*a*a*ab` took Python minutes on a 48-character name). A file larger than
    `MAX_IGNORE_BYTES` or with more than `MAX_IGNORE_PATTERNS` patterns is not read at all (a
    warning says so), so one path costs at most that many linear matches.
    """

    __slots__ = ("base", "spec")

    def __init__(self, base: str, spec: object) -> None:
        self.base = base
        self.spec = spec

    @classmethod
    def load(cls, path: str, base: str) -> _IgnoreRules | None:
        lines = _ignore_lines(path)
        if not lines:
            return None
        spec, inexact = _linear_spec(lines)
        if inexact:  # a fallback taken: a debug line (the user's own patterns are common)
            _log.debug(
                "%s holds %d patterns coderag cannot match exactly as git does (brackets it "
                "reads otherwise), so it leaves out every file they could match.",
                one_line(path, 300),
                inexact,
            )
        return cls(base, spec) if spec is not None else None

    def check(self, rel: str, *, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a `!pattern`, None: no pattern matched."""
        sub = rel[len(self.base) :] + ("/" if is_dir else "")
        result: bool | None = self.spec.check_file(sub).include  # type: ignore[attr-defined]
        return result


def _ignore_lines(path: str) -> list[str]:
    """The lines of an ignore file, or none (said in a warning) when it is past its bounds."""
    from coderag_tui.core.capped import read_capped

    try:
        data = read_capped(Path(path), MAX_IGNORE_BYTES)
    except OSError:
        return []
    if data is None:
        _log.warning(
            "%s is larger than %d KiB, so its patterns were not read.",
            one_line(path, 300),
            MAX_IGNORE_BYTES // 1024,
        )
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    patterns = sum(1 for line in lines if line.strip() and not line.startswith("#"))
    if patterns > MAX_IGNORE_PATTERNS:
        _log.warning(
            "%s holds %d patterns, more than %d, so they were not read.",
            one_line(path, 300),
            patterns,
            MAX_IGNORE_PATTERNS,
        )
        return []
    return lines


# pathspec 1.1 reads `*/` and `**/` (every folder) as the unanchored `(?P<ps_d>/)`, which
# its anchored match never finds, so `*` then `!*/` (ignore everything, then take every folder
# back) hid every folder. Git's meaning: the folder itself, and nothing in it (a file in it is
# judged by the other patterns); matched as a path pattern (no `ps_d`), so a later `!*/`
# outranks an earlier `*` for a folder, as the last matching line does in git.
_ANY_FOLDER_FROM_PATHSPEC = "(?P<ps_d>/)"
_ANY_FOLDER = "^(?:.+/)?[^/]+/$"


def _linear_spec(lines: Sequence[str]) -> tuple[object | None, int]:
    """A pathspec `GitIgnoreSpec` of `lines` whose patterns RE2 matches (see `_IgnoreRules`),
    or None when no pattern is left; and how many patterns it could not match as git does.

    A line git cannot read either (a lone `!`) is skipped, as git skips it. pathspec reads a
    bracket expression otherwise than git where it holds `[` or `\\` (`[[:digit:]]` is a digit
    to git, a class and a `]` to pathspec, and RE2 refuses what pathspec makes of it) or
    where Python refuses it (`[z-a]`). Such a pattern leaves out at least what git's does
    (`_widened`: each bracket any one character), and a `!pattern` among them re-includes
    nothing: a file git ignores is never indexed, whatever the pattern. RE2 logs nothing."""
    import re

    import re2
    from pathspec import GitIgnoreSpec
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    options = re2.Options()
    options.log_errors = False  # RE2 would print the pattern to fd 2, past coderag's echo

    def compiled(line: str) -> GitIgnoreSpecPattern:
        # pathspec's own constructor would also compile the pattern with Python's `re`, which
        # costs more than the walk it serves on a tree of many ignore files: RE2 alone compiles it.
        source, include = GitIgnoreSpecPattern.pattern_to_regex(line)
        if source is None or include is None:
            return GitIgnoreSpecPattern(None)
        if source == _ANY_FOLDER_FROM_PATHSPEC:  # `*/`, `**/`: see `_ANY_FOLDER`
            source = _ANY_FOLDER
        return GitIgnoreSpecPattern(re2.compile(source, options), include)

    patterns: list[GitIgnoreSpecPattern] = []
    inexact = 0
    with warnings.catch_warnings():  # Python's `re` warns about some classes (`[[`): not ours
        warnings.simplefilter("ignore")
        for line in lines:
            if line.startswith("#") or not line.strip():
                continue  # a comment or a blank line: no pattern
            wide = _widened(line)
            if wide is None:
                try:
                    patterns.append(compiled(line))
                    continue
                except re2.error:
                    wide = _widened(line, always=True)
                except re.error:  # `[z-a]`: a range git reads as matching nothing
                    wide = _widened(line, always=True)
                except ValueError:  # a line git cannot read either
                    continue
            inexact += 1
            if line.startswith("!") or wide is None:
                continue  # lets nothing back in
            try:
                patterns.append(compiled(wide))
            except (ValueError, re.error, re2.error):  # pragma: no cover - no brackets left
                continue
    spec = GitIgnoreSpec(patterns, backend="re2")
    return (spec if any(p.include is not None for p in patterns) else None), inexact


def _widened(line: str, *, always: bool = False) -> str | None:
    """The pattern with each bracket expression (as git reads them: `\\` escapes, `[:name:]`
    classes) replaced by `?`, which matches any one character but `/` as any bracket does;
    None when it holds no bracket that pathspec reads otherwise than git (unless `always`)."""
    out: list[str] = []
    differs = always
    i, end = 0, len(line)
    while i < end:
        char = line[i]
        if char == "\\":
            out.append(line[i : i + 2])
            i += 2
            continue
        if char != "[":
            out.append(char)
            i += 1
            continue
        j = i + 1
        if j < end and line[j] in "!^":
            j += 1
        if j < end and line[j] == "]":
            j += 1
        while j < end and line[j] != "]":
            if line[j] == "\\":
                differs = True
                j += 1
            elif line[j] == "[":
                differs = True
                close = line.find(":]", j + 2) if line.startswith("[:", j) else -1
                j = close + 1 if close >= 0 else j
            j += 1
        if j >= end:  # an unclosed bracket: git's pattern matches nothing
            differs = True
        out.append("?")
        i = j + 1
    return "".join(out) if differs else None


def _ignored(rules: tuple[_IgnoreRules, ...], rel: str, *, is_dir: bool) -> bool:
    """Git semantics across files: the deepest .gitignore with a matching pattern decides."""
    for rule in reversed(rules):
        verdict = rule.check(rel, is_dir=is_dir)
        if verdict is not None:
            return verdict
    return False


def _excluded_prefixes(root_real: str, exclude: Sequence[Path]) -> tuple[str, ...]:
    """Repository-relative forms of the exclude paths that lie inside the repository."""
    prefixes = []
    for path in exclude:
        real = os.path.realpath(path)
        if real == root_real:
            continue  # excluding the whole repository would index nothing; ignore it
        if real.startswith(root_real + os.sep):
            prefixes.append(os.path.relpath(real, root_real).replace(os.sep, "/"))
    return tuple(prefixes)


def _is_excluded(rel: str, excluded: tuple[str, ...]) -> bool:
    return any(rel == p or rel.startswith(p + "/") for p in excluded)


class _NameVerdict(NamedTuple):
    """What a file name decides: a skip with its detail, or (no skip) the file's language."""

    skip: SkipReason | None
    detail: str = ""
    language: str | None = None


def _extension(name: str) -> str:
    """`os.path.splitext(name)[1]` for a bare file name, without its general path handling:
    from the last dot, unless only dots come before it (`.bashrc`, `..x` have none)."""
    dot = name.rfind(".")
    if dot <= 0 or (name[dot - 1] == "." and not name[:dot].lstrip(".")):
        return ""
    return name[dot:]


class _Collector:
    """Turns candidate paths into SourceFiles or SkippedFiles using names and stat only."""

    def __init__(
        self, root_real: str, max_file_bytes: int, *, include_secret_files: bool = False
    ) -> None:
        self.root_real = root_real
        self.max_file_bytes = max_file_bytes
        self.include_secret_files = include_secret_files
        self.files: list[SourceFile] = []
        self.skipped: list[SkippedFile] = []
        self.vendored: dict[str, int] = {}
        self.virtualenvs: set[str] = set()
        # (path, stat key) of what the plain walk stat-ed (see WalkResult.watched); None: not kept.
        self.watch: list[tuple[str, tuple[object, ...]]] | None = None
        # What a name decides, by its extension, for names no whole-name rule looks at.
        self._by_extension: dict[str, _NameVerdict] = {}

    def skip(self, rel: str, reason: SkipReason, detail: str = "") -> None:
        self.skipped.append(SkippedFile(rel, reason, detail))

    def finish_skipped(self) -> list[SkippedFile]:
        """The skips, with each vendored folder that git listed reported once with its count."""
        folded = [
            SkippedFile(folder, SkipReason.VENDORED, f"{count:,} file{'s' if count != 1 else ''}")
            for folder, count in self.vendored.items()
        ]
        return self.skipped + folded

    def add_git_path(self, rel: str) -> None:
        """Classify one path from `git ls-files` (which knows nothing about vendoring)."""
        if rel.endswith("/"):  # git shows an untracked nested repository as a folder
            self.skip(rel.rstrip("/"), SkipReason.NOT_A_FILE, "a nested git repository")
            return
        parts = rel.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in ALWAYS_SKIPPED_DIRS:
                return
            if part in VENDORED_DIRS or (
                self.virtualenvs and "/".join(parts[: i + 1]) in self.virtualenvs
            ):
                folder = "/".join(parts[: i + 1])
                self.vendored[folder] = self.vendored.get(folder, 0) + 1
                return
        verdict = self._by_name(rel, parts[-1])
        if verdict is None:
            return
        try:
            st = os.lstat(os.path.join(self.root_real, rel))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # else deleted but still tracked
                self.skip(rel, SkipReason.UNREADABLE, _os_error_text(exc))
            return
        self._add_stat(rel, st, verdict.language)

    def add_entry(self, rel: str, entry: os.DirEntry[str]) -> None:
        """Classify one non-directory entry found by the plain walk."""
        verdict = self._by_name(rel, entry.name)
        if verdict is None:
            return
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # else it vanished while we walked
                self.skip(rel, SkipReason.UNREADABLE, _os_error_text(exc))
            return
        if self.watch is not None:
            key = _entry_key(st) if not stat.S_ISLNK(st.st_mode) else _stat_key(entry.path)
            self.watch.append((rel, key))
        if stat.S_ISREG(st.st_mode) and st.st_size <= self.max_file_bytes:  # most files
            self.files.append(
                SourceFile(
                    path=rel,
                    size=st.st_size,
                    mtime_ns=st.st_mtime_ns,
                    language=verdict.language,
                    device=st.st_dev,
                    inode=st.st_ino,
                )
            )
            return
        self._add_stat(rel, st, verdict.language)

    def _by_name(self, rel: str, name: str) -> _NameVerdict | None:
        """What the file's name decides (its language), or None when it decided a skip (said)."""
        if not rel.isascii():
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
                shown = rel.encode("utf-8", errors="replace").decode("utf-8")
                self.skip(shown, SkipReason.UNREADABLE, "the file name is not valid UTF-8")
                return None
        low = name.lower()
        if (
            low in _WHOLE_NAME_RULES
            or low.startswith(_WHOLE_NAME_PREFIXES)
            or low.endswith(MINIFIED_SUFFIXES)
        ):
            verdict = self._name_verdict(low)
        else:
            ext = _extension(low)
            found = self._by_extension.get(ext)
            if found is None:
                found = self._name_verdict(low)
                if ext != ".env":  # `x.example.env`: the rest of the name decides
                    self._by_extension[ext] = found
            verdict = found
        if verdict.skip is not None:
            self.skip(rel, verdict.skip, verdict.detail)
            return None
        return verdict

    def _name_verdict(self, name: str) -> _NameVerdict:
        """The rules for one lower-case file name: a skip with its detail, or its language."""
        if name in LOCK_FILES:
            return _NameVerdict(SkipReason.LOCKFILE)
        if name.endswith(MINIFIED_SUFFIXES):
            return _NameVerdict(SkipReason.MINIFIED, "a minified or source-map name")
        ext = os.path.splitext(name)[1]
        if not self.include_secret_files:
            kind = secret_file_kind(name, ext)
            if kind is not None:
                detail = f"{kind}; --include-secret-files indexes it"
                return _NameVerdict(SkipReason.SECRET_FILE, detail)
        if ext in BINARY_EXTENSIONS:
            return _NameVerdict(SkipReason.BINARY, f"file type {ext}")
        return _NameVerdict(None, "", language_for(name))

    def _add_stat(self, rel: str, st: os.stat_result, language: str | None) -> None:
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            resolved = self._follow_symlink(rel)
            if resolved is None:
                return
            st, mode = resolved, resolved.st_mode
        if not stat.S_ISREG(mode):
            self.skip(rel, SkipReason.NOT_A_FILE, _file_type(mode))
            return
        size = st.st_size
        if size > self.max_file_bytes:
            detail = f"{size:,} bytes (limit {self.max_file_bytes:,})"
            self.skip(rel, SkipReason.TOO_LARGE, detail)
            return
        self.files.append(
            SourceFile(
                path=rel,
                size=size,
                mtime_ns=st.st_mtime_ns,
                language=language,
                device=st.st_dev,
                inode=st.st_ino,
            )
        )

    def _follow_symlink(self, rel: str) -> os.stat_result | None:
        """The target's stat when the link stays inside the repository on a file; else a skip."""
        link = os.path.join(self.root_real, rel)
        try:
            st = os.stat(link)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.skip(rel, SkipReason.SYMLINK_LOOP, "the chain of links comes back to itself")
            else:
                self.skip(rel, SkipReason.UNREADABLE, f"broken symlink: {_os_error_text(exc)}")
            return None
        target = os.path.realpath(link)
        if target != self.root_real and not target.startswith(self.root_real + os.sep):
            self.skip(rel, SkipReason.SYMLINK_OUTSIDE, f"points to {target}")
            return None
        if stat.S_ISDIR(st.st_mode):
            link_dir = os.path.dirname(link)
            if link_dir == target or link_dir.startswith(target + os.sep):
                self.skip(rel, SkipReason.SYMLINK_LOOP, "points to a folder that contains it")
            else:
                detail = "symlink to a folder inside the repository (indexed at its real path)"
                self.skip(rel, SkipReason.NOT_A_FILE, detail)
            return None
        return st


def secret_file_kind(name: str, ext: str | None = None) -> str | None:
    """What kind of key or credentials file the (lower-case) file name says it is, or None;
    `ext` is its extension when the caller has it."""
    if name in SSH_KEY_NAMES:
        return "an SSH private key"
    if ext is None:
        ext = os.path.splitext(name)[1]
    if ext in KEY_FILE_EXTENSIONS:
        return f"a key or certificate file ({ext})"
    if name in CREDENTIAL_FILE_NAMES:
        return "a credentials file"
    if name == ".env" or name.startswith(".env.") or ext == ".env":
        marks = set(name.split("."))
        if not marks & ENV_TEMPLATE_MARKS:
            return "an environment file"
    return None


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory where a file was expected (a git submodule or a replaced file)"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _os_error_text(exc: OSError) -> str:
    return exc.strerror or str(exc)


# --- reading -----------------------------------------------------------------------------


def _read_bytes(path: str, file: SourceFile, max_file_bytes: int | None) -> bytes | SkippedFile:
    """The file's bytes; a FIFO or directory named like a file is refused, never waited on,
    and so is a file other than the one the walk vetted (say a link swapped in meanwhile)."""
    rel = file.path
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO returns at once
    except OSError as exc:
        return SkippedFile(rel, SkipReason.UNREADABLE, _os_error_text(exc))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(rel, SkipReason.UNREADABLE, _file_type(st.st_mode))
        if file.inode and (st.st_dev, st.st_ino) != (file.device, file.inode):
            detail = "replaced while indexing (by another file or a link): run again to read it"
            return SkippedFile(rel, SkipReason.UNREADABLE, detail)
        if max_file_bytes is not None and st.st_size > max_file_bytes:
            detail = f"{st.st_size:,} bytes (limit {max_file_bytes:,})"
            return SkippedFile(rel, SkipReason.TOO_LARGE, detail)
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError as exc:
        return SkippedFile(rel, SkipReason.UNREADABLE, _os_error_text(exc))
    finally:
        os.close(fd)


def _longest_line_chars(data: bytes, limit: int) -> int:
    """Length in characters of the longest line if it exceeds `limit`, else 0 (fast in bytes).

    A line of more than `limit` bytes covers a whole aligned block of `limit // 2 + 1` bytes,
    so a file where every such block holds a newline has none: `find` (memchr) checks the
    blocks at a fraction of the cost of splitting every file into lines.
    """
    if len(data) <= limit:
        return 0
    block = limit // 2 + 1
    find = data.find
    if all(find(b"\n", i, i + block) >= 0 for i in range(0, len(data) - block + 1, block)):
        return 0
    long_lines = [line for line in data.split(b"\n") if len(line) > limit]
    if not long_lines:
        return 0
    # Bytes over-count non-ASCII text: confirm the few candidates in characters.
    return max(len(line.decode("utf-8", errors="replace").rstrip("\r")) for line in long_lines)
