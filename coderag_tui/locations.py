"""Where coderag keeps things on this machine: every platform path in one place.

The folders follow each platform's rules (`platformdirs`): settings and themes in the user
config folder, indexes and models in the cache, saved prompts in the data folder, crash
reports and logs in the state folder, sockets in the runtime folder. None is ever inside a
repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "coderag"


def user_config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def user_config_file() -> Path:
    """The user's own config file, read before the repository's."""
    return user_config_dir() / "config.toml"


def user_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP_NAME))


def user_models_dir() -> Path:
    """Models coderag derives from installed packages (an ONNX export, the static table) and
    the caches of the libraries that fetch models and tables: one folder per machine."""
    return user_cache_dir() / "models"


LIBRARY_CACHES = ("fastembed", "huggingface", "tiktoken")


def library_cache_dir(library: str, *, make: bool = False) -> Path:
    """coderag's own cache folder for `library` (one of LIBRARY_CACHES), never the library's
    default: fastembed's is `$TMPDIR/fastembed_cache` and tiktoken's `$TMPDIR/data-gym-cache`,
    shared by every user of the machine, where another user can plant a model or a table, or
    leave a folder nobody else may read. With `make`, the folder is made private to the user
    (0700) before a library writes into it."""
    if library not in LIBRARY_CACHES:
        raise ValueError(f"no cache folder for {library!r}")
    folder = user_models_dir() / library
    return private_folder(folder) if make else folder


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing and readable by its owner only (0700) when it is the user's:
    what a library caches there (a model, a table) is the user's own choice alone."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_uid == os.getuid():
        folder.chmod(0o700)
    return folder


def user_data_dir() -> Path:
    """Where coderag keeps what the user made (saved prompts): never inside a repository."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def user_state_dir() -> Path:
    """Where coderag keeps what it noted for the user to read: crash reports."""
    return Path(platformdirs.user_state_dir(APP_NAME))


def user_runtime_dir() -> Path:
    """Where resident servers (`coderag serve`) keep their sockets: `$XDG_RUNTIME_DIR/coderag`
    when the session has one, else `coderag-<uid>` in the temporary folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / APP_NAME
    return temporary_runtime_dirs()[0]


def temporary_runtime_dirs() -> tuple[Path, ...]:
    """`coderag-<uid>` in the temporary folder, then in /tmp (for a long $TMPDIR)."""
    import tempfile

    name = f"{APP_NAME}-{os.getuid()}"
    return (Path(tempfile.gettempdir()) / name, Path("/tmp") / name)
