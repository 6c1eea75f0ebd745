"""Writing a file the user named, never through a symbolic link a repository committed.

A repository can commit `prompt.md -> ../.bashrc` or a folder `out -> ~/.ssh`; a prompt
saved there would land in the user's shell start-up file. So a file is written whole or not
at all (a temporary file in the same folder, renamed over the name once every byte is on
disk), the last part of the name is never a link, and inside `guarded` (the repository) no
folder on the way is one either. The folders are opened one by one without following links
(`O_NOFOLLOW`), and the temporary file is made and renamed relative to the last of them, so
a link swapped in between a check and the write changes nothing. Folders outside `guarded`
are the user's own and are followed (a home folder reached through a link is common).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(OSError):
    """The path leads through a symbolic link coderag will not write through; the message is
    one sentence naming the link and the fix."""


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
        "another path, or remove the link."
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
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, "it is a folder", str(path))
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
