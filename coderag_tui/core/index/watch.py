"""Has anything under the repository changed since the index was last checked? Asked of the
kernel's file events (inotify through `watchfiles`), so a resident process need not walk.

The watch cannot say "nothing changed" from silence alone: an event may still be on its way.
`sync` closes that gap the way watchman does, with a cookie: it creates a file in a folder
watched by the same kernel queue and waits for that file's event. Events come out of the
queue in the order they happened, so once the cookie's arrives, every change made before
`sync` was called has been seen, and `take_changes` is then the truth.

What makes the answer "changed": any event under the root except in the index's own files
and the parts of `.git` that change without the work tree changing (its index file and object
store). With it comes which paths changed (`take_changes`), so the caller can check exactly
those; the answer is "every file" instead when a path could change the rules that pick files
(an ignore file, anything else in `.git`: a checkout, `info/exclude`) or the burst is larger
than `MAX_PATHS`. When the watch fails (too many folders for the kernel's watch limit, a
folder gone) or a cookie does not come back in time, `sync` says so and the caller checks
everything.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

# Milliseconds the watch thread waits for more events before handing a batch over (and the
# floor of a `sync`); cookies come back in about this time.
STEP_MS = 10
# At most this many milliseconds of events are grouped into one batch.
DEBOUNCE_MS = 200
SYNC_TIMEOUT_S = 2.0
RETRY_S = 0.1  # a cookie not back in this time is made again (see `sync`)
# Parts of a git folder that change without any file of the work tree changing (`git add`,
# `git status` refreshing its index, a commit writing objects).
_GIT_QUIET = ("index", "index.lock", "objects", "logs", "FETCH_HEAD", "ORIG_HEAD")
# More changed paths than this between two questions: "every file" (a checkout, a build).
MAX_PATHS = 256
# Files whose change can change which files are indexed: then every file is checked.
RULE_FILES = frozenset({".gitignore", ".coderagignore"})
EVERY_FILE = None  # what `take_changes` gives for "check every file"


class TreeWatch:
    """Watches `root` (recursively) and says whether anything relevant changed.

    `ignore` lists files and folders whose events never count (the index's own files when
    they live in the repository). `cookies` is a private folder for `sync`'s cookie files;
    it is created if missing. Call `close` (or use it as a context manager) to stop.
    """

    def __init__(self, root: Path, cookies: Path, ignore: Iterable[Path] = ()) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():  # the watch would silently watch nothing
            raise NotADirectoryError(20, "the repository folder is not there", str(root))
        cookies.mkdir(parents=True, exist_ok=True)
        self.cookies = cookies.resolve()
        self._cookie_prefix = str(self.cookies) + os.sep
        self._root_prefix = str(self.root) + os.sep
        quiet = [self.root / ".git" / part for part in _GIT_QUIET]
        self._ignore = tuple(str(p) for p in (*quiet, *(Path(p).resolve() for p in ignore)))
        self._paths: set[str] | None = set()  # None: every file (see `take_changes`)
        self._last_event = time.monotonic()
        self._seen: set[str] = set()
        self._pending: set[str] = set()
        self._failure = ""
        self._stopped = False
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="coderag-watch", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- the watch thread
    def _run(self) -> None:
        from watchfiles import watch

        try:
            for batch in watch(
                self.root,
                self.cookies,
                watch_filter=None,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self._stop,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                self._take(path for _, path in batch)
        except Exception as exc:  # the kernel's watch limit, a root gone: say why, then stop
            self._failure = str(exc) or type(exc).__name__
        finally:
            with self._cond:
                self._stopped = True
                self._cond.notify_all()

    def _take(self, paths: Iterable[str]) -> None:
        changed: list[str] = []
        cookies: list[str] = []
        for path in paths:
            if path.startswith(self._cookie_prefix):
                cookies.append(path[len(self._cookie_prefix) :])
            elif not self._ignored(path):
                changed.append(path)
        with self._cond:
            if changed:
                self._last_event = time.monotonic()
                self._note_paths(changed)
            self._seen.update(c for c in cookies if c in self._pending)
            self._cond.notify_all()

    def _note_paths(self, changed: list[str]) -> None:
        """Add the repository paths of `changed` (absolute) to what `take_changes` gives."""
        if self._paths is None:
            return
        prefix = self._root_prefix
        for path in changed:
            rel = path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else ""
            name = rel.rpartition("/")[2]
            if not rel or rel == ".git" or rel.startswith(".git/") or name in RULE_FILES:
                self._paths = None  # the root itself, git's state or an ignore rule
                return
            self._paths.add(rel)
        if len(self._paths) > MAX_PATHS:
            self._paths = None

    def _ignored(self, path: str) -> bool:
        return any(path == p or path.startswith(p + os.sep) for p in self._ignore)

    # ---------------------------------------------------------------- the questions
    @property
    def failure(self) -> str:
        """Why the watch stopped ("" while it runs)."""
        return self._failure if self._stopped else ""

    def sync(self, timeout: float = SYNC_TIMEOUT_S) -> bool:
        """Wait until every event of a change made before this call has been seen.

        False when the watch has stopped or the cookie did not come back within `timeout`
        seconds: then nothing can be said from events and the caller checks every file.
        """
        deadline = time.monotonic() + timeout
        while True:
            # A cookie made before the watch was in place is never seen: the first sync after
            # the start makes a new one every RETRY_S until one comes back.
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            seen = self._one_cookie(min(left, RETRY_S))
            if seen is not None:
                return seen

    def _one_cookie(self, wait: float) -> bool | None:
        """True when a new cookie came back within `wait` seconds, None when it did not,
        False when the watch has stopped or the cookie cannot be made."""
        name = f"sync-{os.getpid()}-{next(self._counter)}"
        cookie = self.cookies / name
        with self._cond:
            self._pending.add(name)
        try:
            cookie.write_bytes(b"")
        except OSError:
            return False
        try:
            with self._cond:
                self._cond.wait_for(lambda: name in self._seen or self._stopped, wait)
                if self._stopped:
                    return False
                if name in self._seen:
                    self._seen.discard(name)
                    return True
                return None
        finally:
            with self._cond:
                self._pending.discard(name)
                self._seen.discard(name)
            cookie.unlink(missing_ok=True)

    def take_changed(self) -> bool:
        """Has anything relevant changed since the last call (or since the watch started)?
        Resets the answer, as `take_changes` does."""
        return self.take_changes() != frozenset()

    @property
    def _changed(self) -> bool:
        """Whether a relevant event came since the last `take_changes` (hold `_cond`)."""
        return self._paths is None or bool(self._paths)

    def take_changes(self) -> frozenset[str] | None:
        """The repository paths (forward slashes) with an event since the last call (or
        since the watch started): empty when nothing relevant changed, `EVERY_FILE` (None)
        when every file must be checked (see the module docstring). A path may be a file or
        a folder, there or gone. Resets the answer: a change after this call counts for the
        next one."""
        with self._cond:
            paths, self._paths = self._paths, set()
            return None if paths is None else frozenset(paths)

    def wait_changed(self, timeout: float | None = None) -> bool:
        """Block until something relevant has changed (not resetting it), the watch stops or
        `timeout` passes; True when a change is waiting."""
        with self._cond:
            self._cond.wait_for(lambda: self._changed or self._stopped, timeout)
            return self._changed

    def quiet_for(self, seconds: float) -> None:
        """Wait until no relevant event has come for `seconds` (a burst, such as a checkout,
        is taken in once it is over) or the watch stops."""
        with self._cond:
            while not self._stopped:
                left = self._last_event + seconds - time.monotonic()
                if left <= 0:
                    return
                self._cond.wait(left)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def __enter__(self) -> TreeWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
