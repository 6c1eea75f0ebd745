"""Writing a file the user named, never through a symbolic link a repository committed.

The one way every writer of a named file goes (`--out`, `ctrl+s`, `eval` reports, the crash
report, `--log-file`). A repository can commit `prompt.md -> ../.bashrc`, `coderag.log ->
~/.bashrc` or a folder `out -> ~/.ssh`; a prompt or a log line written there would land in
the user's shell start-up file. So the last part of the name is never a link, and inside
`guarded` (the repository) no folder on the way is one either. The folders are opened one by
one without following links (`O_NOFOLLOW`), and the file is made relative to the last of
them, so a link swapped in between a check and the write changes nothing. Folders outside
`guarded` are the user's own and are followed (a home folder reached through a link is
common). Only a regular file is ever written: a folder, a FIFO, a device or a socket by the
name is refused in one sentence (as root, renaming over `/dev/null` would replace it).

`write_atomically` writes a file whole or not at all (a temporary file in the same folder,
renamed over the name once every byte is on disk); `open_for_append` opens one to add to
(a log), made private to the user (0600) when new.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from pathlib import Path
from typing import BinaryIO

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(OSError):
    """The path leads through a symbolic link, or names something other than a regular file,
    that coderag will not write; the message is one sentence naming it and the fix."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _special_refusal(shown: Path, mode: int) -> UnsafePath:
    return UnsafePath(
        f"{shown} is {_kind(mode)}, and coderag writes only regular files: choose another path.",
    )


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _link_refusal(shown: Path, link: str, *, itself: bool = False) -> UnsafePath:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    what = "is a symbolic link" if itself else f"leads through the symbolic link {link}"
    return UnsafePath(
        f"{shown} {what} (to {target}), and coderag never writes through a link: choose "
        "another path, or remove the link.",
    )


def _open_folder(folder: str, guarded: str | None, shown: Path) -> int:
    """A descriptor of `folder` (absolute, normalised), made if missing, reached without
    following a link at or below `guarded`."""
    fd = os.open(os.sep, _DIR_FLAGS)
    real = os.sep
    try:
        for part in Path(folder).parts[1:]:
            here = os.path.join(real, part)
            careful = guarded is not None and _inside(here, guarded)
            flags = _DIR_FLAGS | (_NOFOLLOW if careful else 0)
            try:
                next_fd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                next_fd = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                if careful and exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    try:
                        is_link = stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode)
                    except OSError:
                        is_link = False
                    if is_link:
                        raise _link_refusal(shown, here) from None
                raise
            os.close(fd)
            fd = next_fd
            real = here if careful else os.path.realpath(here)
        return fd
    except BaseException:
        os.close(fd)
        raise


def first_link(path: Path, guarded: Path) -> Path | None:
    """The first part of `path` at or below the folder `guarded` that is a symbolic link
    (`path` itself included), or None: a place inside a repository to refuse to write."""
    root = os.path.realpath(guarded)
    absolute = os.path.abspath(path)
    if not _inside(absolute, root):
        return None
    here = root
    for part in Path(os.path.relpath(absolute, root)).parts:
        here = os.path.join(here, part)
        try:
            if stat.S_ISLNK(os.lstat(here).st_mode):
                return Path(here)
        except OSError:
            return None
    return None


def write_atomically(path: Path, text: str, *, guarded: Path | None = None) -> None:
    """Write `text` as UTF-8 to `path` whole or not at all, never through a symbolic link.

    `path` itself may not be a link (anywhere), and no folder on the way to it may be one
    inside `guarded` (the repository, resolved). An existing file keeps its permissions.
    Raises UnsafePath (one sentence) for a link, else OSError or UnicodeEncodeError, with
    `path` untouched either way.
    """
    data = text.encode("utf-8")  # before anything is created: a bad character changes nothing
    absolute = Path(os.path.abspath(path))
    root = os.path.realpath(guarded) if guarded is not None else None
    fd = _open_folder(str(absolute.parent), root, path)
    name = absolute.name
    temporary = f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        try:
            existing = os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise _link_refusal(path, str(absolute), itself=True)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise _special_refusal(path, existing.st_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        handle_fd = os.open(temporary, flags, 0o666, dir_fd=fd)  # umask applies
        try:
            with os.fdopen(handle_fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if existing is not None:
                    os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
                os.fsync(handle.fileno())
            os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=fd)
            raise
    finally:
        os.close(fd)


def open_for_append(path: Path, *, guarded: Path | None = None) -> BinaryIO:
    """`path` opened to append bytes to, made (0600: a log holds repository text) when
    missing; never through a link (as `write_atomically`), never anything but a regular file
    (a FIFO is not waited on). UnsafePath (one sentence) or OSError otherwise."""
    absolute = Path(os.path.abspath(path))
    root = os.path.realpath(guarded) if guarded is not None else None
    fd = _open_folder(str(absolute.parent), root, path)
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO with no reader fails instead of waiting
        try:
            handle_fd = os.open(absolute.name, flags, 0o600, dir_fd=fd)
        except OSError as exc:
            try:
                existing = os.lstat(absolute.name, dir_fd=fd)
            except OSError:
                raise exc from None
            if stat.S_ISLNK(existing.st_mode):
                raise _link_refusal(path, str(absolute), itself=True) from None
            if not stat.S_ISREG(existing.st_mode):
                raise _special_refusal(path, existing.st_mode) from None
            raise
    finally:
        os.close(fd)
    try:
        mode = os.fstat(handle_fd).st_mode
        if not stat.S_ISREG(mode):
            raise _special_refusal(path, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(handle_fd, True)
        return os.fdopen(handle_fd, "ab")
    except BaseException:
        os.close(handle_fd)
        raise
