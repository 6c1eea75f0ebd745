"""Keeping one repository's index database: open, checked, repaired, locked, built as asked.

The keeper opens the database once (for reading only when it cannot be written, so searches
answer from what it holds), runs SQLite's page check before the first build when the file may
have changed since coderag last knew it sound (`identity_record`) and moves a damaged file aside,
holds a lock file while a run builds so a second run waits instead of doubling the work, and
builds with the settings the index remembers unless the user gave others. The engine asks it
for a store and for a build; nothing here ranks or packs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.core.index.store import IndexDamaged, IndexNotWritable, Store, StoreError
from coderag_tui.core.safe_write import first_link
from coderag_tui.settings import settings_of

if TYPE_CHECKING:
    from coderag_tui.core.index.indexer import IndexProgress, IndexReport
    from coderag_tui.settings import Settings

# Settings that decide which files get indexed: an index remembers the values it was built
# with, and a later run keeps them unless the user gave another value (`explicit`).
BUILD_SETTINGS = settings_of("files")
LOCK_POLL_S = 0.1  # how often a run waiting for another run's index lock checks `cancel`


@dataclass(frozen=True)
class Built:
    """What a build did: the store it wrote, its report (None when nothing was built because
    the index cannot be written), and what to tell the user once."""

    store: Store
    report: IndexReport | None
    notices: tuple[str, ...]


@dataclass
class IndexKeeper:
    """The index database of one repository (per index path), kept open between calls."""

    # Settings the user gave (flags, environment, config files); None: those that differ
    # from their defaults. A build setting not given keeps the index's value.
    explicit: frozenset[str] | None = None
    clock: Callable[[], float] = time.perf_counter
    _store: Store | None = field(default=None, repr=False)
    _stale: IndexNotWritable | None = field(default=None, repr=False)
    _checked: Store | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def stale(self) -> IndexNotWritable | None:
        """Why the open index cannot be updated (it was opened for reading), or None."""
        return self._stale

    def store(self, settings: Settings) -> Store:
        """The index database of `settings`, opened once and kept.

        One that cannot be written (a read-only folder or file) is opened for reading only,
        so searches answer from what it holds; `build` then says it was not updated.
        """
        path = settings.index_path
        _refuse_linked_place(settings)
        with self._lock:
            if self._store is None or self._store.path != path:
                if self._store is not None:
                    self._store.close()
                self._store, self._stale = None, None
                # The record beside the index is never indexed: when the index lies in the
                # repository's top folder, `indexer.index_excludes` leaves it out of the walk.
                record = True
                try:
                    self._store = Store.open(path, record=record)
                except IndexDamaged:
                    self._store = Store.replace(
                        path, "SQLite cannot read its first rows", record=record
                    )
                except IndexNotWritable as exc:
                    try:
                        self._store = Store.open(path, read_only=True)
                    except IndexNotWritable:
                        raise exc from None
                    self._stale = exc
            return self._store

    def opened(self) -> Store | None:
        """The store opened last, if any (for reading file texts while packing)."""
        return self._store

    def build(
        self,
        settings: Settings,
        *,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        stale_ok: bool = True,
        only: Collection[str] | None = None,
        previous: IndexReport | None = None,
        planned: Callable[[int], None] | None = None,
    ) -> Built:
        """Bring the index up to date: only changed files are read (of `only`, when given:
        see `indexer.build_index`; every file when a build setting changed).

        The file is page-checked before its first build unless its record says nothing but
        coderag changed it since it was last found sound; a damaged one is moved aside and
        rebuilt, said in a notice. An index that cannot be written is left as it is with a
        notice saying so (unless `stale_ok` is false: then IndexNotWritable). Build settings
        the user did not give keep the values the index was built with; a different given
        value re-checks every file, said too. `planned` as in `build_index`. Call it inside
        `locked`.
        """
        from coderag_tui.core.index.indexer import build_index

        for attempt in (1, 2):
            store = self._checked_store(settings)
            try:
                if self._stale is not None:
                    raise self._stale
                build, note = self._build_settings(settings, store)
                paths = only if note is None and attempt == 1 else None
                report = build_index(
                    build,
                    store,
                    progress=progress,
                    cancel=cancel,
                    only=paths,
                    previous=previous,
                    planned=planned,
                )
                break
            except IndexDamaged:
                if attempt == 2:
                    raise
                self.discard(store, "a row of it could not be read")
            except IndexNotWritable as exc:
                if not stale_ok:
                    raise
                notice = (
                    f"could not update the index at {store.path} ({exc.reason}): answering "
                    f"from what it already holds; {exc.fix} to update it."
                )
                return Built(self.store(settings), None, (notice,))
        notices = tuple(n for n in (store.notice, report.notice, note) if n)
        return Built(store, report, notices)

    def _checked_store(self, settings: Settings) -> Store:
        """`store`, with SQLite's page check run at most once per opened file, when it may
        have changed behind coderag's back (a damaged one is moved aside, a new one started)."""
        store = self.store(settings)
        with self._lock:
            if self._checked is not store and not store.read_only:
                damage = store.damage_if_changed()
                if damage is not None:
                    store = self._store = Store.replace(store, damage)
                self._checked = store
            return store

    def discard(self, store: Store, why: str) -> Store:
        """Move a damaged store aside and start a new one (said in its notice)."""
        with self._lock:
            fresh = self._store = self._checked = Store.replace(store, why)
            return fresh

    @contextlib.contextmanager
    def locked(
        self,
        settings: Settings,
        progress: Callable[[IndexProgress], None] | None,
        cancel: threading.Event | None,
        notices: list[str],
    ) -> Iterator[bool]:
        """Hold the repository's index lock (a file beside the index), waiting for another
        run that holds it; yields False if `cancel` is set while waiting.

        A folder where the lock file cannot be made is one where the index cannot be written
        either: the build then goes on without the lock and falls back to reading.
        """
        from filelock import FileLock, Timeout

        from coderag_tui.core.index.indexer import IndexProgress

        path = settings.index_path
        _refuse_linked_place(settings)
        lock = FileLock(str(path) + ".lock")
        usable, held = True, False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock.acquire(timeout=0)
            held = True
        except Timeout:  # (a TimeoutError, so an OSError: caught first)
            # Another run holds it, or no file can be made there at all (`/proc/self`), which
            # filelock cannot tell apart: waiting on the latter would never end.
            usable = _can_create_in(path.parent)
        except OSError:
            usable = False
        if usable and not held:
            started = self.clock()
            if progress is not None:
                progress(IndexProgress("wait", 0, 0, 0, 0, 0.0))
            while not held:
                if cancel is not None and cancel.is_set():
                    yield False
                    return
                with contextlib.suppress(Timeout):
                    lock.acquire(timeout=LOCK_POLL_S)
                    held = True
            notices.append(
                f"waited {self.clock() - started:.1f} s for another coderag run that was "
                "indexing this repository; it had done the work."
            )
        try:
            yield True
        finally:
            if held:
                lock.release()

    def _build_settings(self, settings: Settings, store: Store) -> tuple[Settings, str | None]:
        """The settings to build with, and a note when a build setting changed.

        The index remembers the build settings it was made with. One the user did not give
        (see `explicit`) keeps that value, so a later `search` never silently drops files
        indexed under a larger limit; one given with another value is used, every file is
        checked again under it, and the note says so.
        """
        from coderag_tui.settings import SCHEMA, SettingsError

        names = [n for n in BUILD_SETTINGS if n in SCHEMA]
        current: dict[str, object] = {n: getattr(settings, n) for n in names}
        stored = store.build_settings()
        if stored is None:
            store.set_build_settings(current, recheck=False)
            return settings, None
        given = self.explicit
        if given is None:
            given = frozenset(n for n in names if current[n] != SCHEMA[n].default)
        kept = {n: stored[n] for n in names if n in stored and n not in given}
        kept = {n: v for n, v in kept.items() if v != current[n]}
        if kept:
            try:
                settings = settings.with_(**kept)
            except SettingsError:  # a value this version no longer accepts: use today's
                kept = {}
            current.update(kept)
        changed = [n for n in names if n in stored and stored[n] != current[n]]
        if changed or any(n not in stored for n in names):
            store.set_build_settings(current, recheck=bool(changed))
        if not changed:
            return settings, None
        said = ", ".join(
            f"{n} is {current[n]} (the index was built with {stored[n]})" for n in changed
        )
        return settings, f"{said}: re-checking every file under the new value."

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = self._checked = self._stale = None


def _refuse_linked_place(settings: Settings) -> None:
    """StoreError when the index would lie inside the repository behind a link it committed."""
    path = settings.index_path
    link = first_link(path, settings.repo_root)
    if link is not None:
        raise StoreError(
            f"the index {path} lies in the repository behind the symbolic link {link}, and "
            "coderag never writes through a link: pass --index-dir outside the repository, or "
            "remove the link."
        )


def _can_create_in(folder: Path) -> bool:
    """Can a file be made in `folder` (a lock file, an index)?"""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
