"""SQLite persistence for the index (files, chunks per chunking setting) and the embedding cache.

One database per repository holds the files (stat, content hash, skip reason, text) and the
chunks of every chunking setting the user has tried; a second database, shared by every
repository, caches embedding vectors by (model, hash of the embedded text). Both use WAL and
explicit transactions, so an interrupted run (Ctrl-C, SIGKILL) leaves a valid database, and a
file that is not ours (corrupt, another program's, another schema version) is moved aside and
rebuilt with a one-sentence notice instead of failing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from coderag_tui.core.capped import parse_json
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index import identity_record
from coderag_tui.core.records import Chunk, SecretFinding

if TYPE_CHECKING:
    import numpy as np

# "CRAG" in ASCII: marks a database as coderag's index (PRAGMA application_id).
INDEX_APP_ID = 0x43524147
# "CREC": marks the shared embedding cache.
CACHE_APP_ID = 0x43524543
INDEX_SCHEMA_VERSION = 3  # 3: suspected secrets per file (an older index is rebuilt)
CACHE_SCHEMA_VERSION = 1
# SQLite's default limit on host parameters is 32766 (999 in old builds); stay well below it.
_PARAMS_PER_QUERY = 500
# How long closing an index waits for the file system's clock to tick past its last write, so
# the record it leaves matches it (a few ms on a coarse clock; longer ticks: not worth it).
_SETTLE_WAIT_S = 0.025

# Every chunk's place without its text: a start-up lists files and line spans from this index
# alone (the table's rows hold the texts; scanning them read the whole file).
_SPANS_INDEX = (
    "CREATE INDEX IF NOT EXISTS chunks_spans "
    "ON chunks (spec_key, path, ord, start_line, end_line, kind, language);"
)
_INDEX_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    language TEXT,
    skip_reason TEXT,
    skip_detail TEXT NOT NULL DEFAULT '',
    invalid_utf8 INTEGER NOT NULL DEFAULT 0
);
-- Texts live apart from the stat rows so the no-change check scans a small table.
CREATE TABLE file_texts (path TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE chunks (
    spec_key TEXT NOT NULL,
    path TEXT NOT NULL,
    ord INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    language TEXT,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL
);
CREATE UNIQUE INDEX chunks_by_spec_path ON chunks (spec_key, path, ord);
CREATE TABLE chunked (
    spec_key TEXT NOT NULL,
    path TEXT NOT NULL,
    PRIMARY KEY (spec_key, path)
) WITHOUT ROWID;
-- Suspected secrets in each file's text (core/index/secret_scan.py), found when it was read.
CREATE TABLE secrets (
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    col INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    end_col INTEGER NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX secrets_by_path ON secrets (path);
"""
_INDEX_SCHEMA += _SPANS_INDEX + "\n"

_CACHE_SCHEMA = """
CREATE TABLE embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
);
"""

_GEN_PREFIX = "generation:"
_BUILD_SETTINGS = "build_settings"
_T = TypeVar("_T")


class StoreError(CoderagError):
    """A problem with the index database; the message is one sentence naming the fix."""


class IndexDamaged(StoreError):
    """The database's pages or rows are damaged: move it aside and rebuild (`Store.replace`)."""


class IndexNotWritable(StoreError):
    """The database cannot be written (read-only file or folder, full disk): read what is there.

    `reason` says what failed in a few words and `fix` what the user can do, so a face that
    goes on reading the index can say both in its own sentence.
    """

    def __init__(
        self,
        message: str,
        reason: str = "its folder is not writable",
        fix: str = "pass --index-dir with a writable folder",
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.fix = fix


@dataclass(frozen=True, slots=True, kw_only=True)
class FileState:
    """What the index remembers about one file: its stat, content hash, and why it was skipped."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    language: str | None
    skip_reason: str | None  # SkipReason name (e.g. "BINARY"), None for an indexed file
    skip_detail: str = ""
    invalid_utf8: bool = False


def _parts(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """`items` in slices of at most `_PARAMS_PER_QUERY` (one `IN (...)` query each)."""
    for start in range(0, len(items), _PARAMS_PER_QUERY):
        yield items[start : start + _PARAMS_PER_QUERY]


def _rows_in(
    conn: sqlite3.Connection, query: str, items: Sequence[object], before: tuple[object, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """The rows of `query`, whose `{marks}` is an `IN (...)` list, over `items` in `_parts`
    (one query each, its parameters `before` then the part)."""
    for part in _parts(items):
        yield from conn.execute(query.format(marks=",".join("?" * len(part))), (*before, *part))


def _explain(path: Path, exc: sqlite3.Error) -> str:
    """Turn an SQLite error into one sentence a user can act on."""
    text = str(exc)
    low = text.lower()
    if "disk is full" in low or "disk i/o" in low:
        return (
            f"cannot write the index at {path} ({text}): free some disk space or pass "
            "--index-dir with a folder on another disk."
        )
    if "locked" in low or "busy" in low:
        return (
            f"the index at {path} is locked by another coderag process: wait for it to "
            "finish or pass --index-dir."
        )
    if "readonly" in low or "read-only" in low or "unable to open" in low:
        return (
            f"cannot open the index at {path} for writing ({text}): pass --index-dir with "
            "a writable folder."
        )
    return (
        f"the index at {path} is damaged ({text}): delete that file and run `coderag index` again."
    )


# SQLite's result codes (Python 3.11+ names them on the exception) and, for older Pythons and
# the sqlite3 module's own decoding errors, the words of its messages.
_DAMAGED_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_NOT_WRITABLE_CODES = (
    "SQLITE_FULL",
    "SQLITE_READONLY",
    "SQLITE_CANTOPEN",
    "SQLITE_IOERR",
    "SQLITE_PERM",
)
_DAMAGED_WORDS = ("malformed", "not a database", "could not decode")
_NOT_WRITABLE_WORDS = ("disk is full", "disk i/o", "readonly", "read-only", "unable to open")


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """The StoreError for an SQLite error: IndexDamaged, IndexNotWritable or a plain one."""
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    low = str(exc).lower()
    if code.startswith(_DAMAGED_CODES) or any(w in low for w in _DAMAGED_WORDS):
        # SQLite's text can quote the damaged bytes (a row that no longer decodes): not shown.
        return IndexDamaged(
            f"the index at {path} is damaged: run `coderag index`, which moves it aside and "
            "rebuilds it."
        )
    if code.startswith(_NOT_WRITABLE_CODES) or any(w in low for w in _NOT_WRITABLE_WORDS):
        full = "full" in low or "disk i/o" in low
        fix = (
            "free some disk space or pass --index-dir with a folder on another disk"
            if full
            else "pass --index-dir with a writable folder"
        )
        return IndexNotWritable(_explain(path, exc), str(exc), fix)
    return StoreError(_explain(path, exc))


def _aside_name(path: Path, label: str) -> Path:
    """A free name next to `path` for a bad database, e.g. `x.sqlite.corrupt-20250101-120000`."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.{label}-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{label}-{stamp}-{n}")
    return candidate


def _move_aside(path: Path, label: str) -> Path:
    """Rename the database and its WAL/SHM side files so a fresh one can be created."""
    target = _aside_name(path, label)
    os.replace(path, target)
    identity_record.forget(path)
    for suffix in ("-wal", "-shm", "-journal"):
        side = Path(str(path) + suffix)
        if side.exists():
            try:
                os.replace(side, Path(str(target) + suffix))
            except OSError:
                side.unlink(missing_ok=True)
    return target


def _connect(path: Path) -> sqlite3.Connection:
    """Open in autocommit mode (transactions are explicit) with WAL and relaxed fsync."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
    try:
        # Big pages keep most chunks and small files on one page (no overflow chains); this
        # only takes effect when the file is created, before WAL is switched on.
        conn.execute("PRAGMA page_size=16384")
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("PRAGMA cache_size=-32768")  # 32 MiB page cache
        conn.execute("PRAGMA mmap_size=268435456")
    except BaseException:
        conn.close()
        raise
    return conn


def _open_database(
    path: Path, *, app_id: int, version: int, schema: str, what: str
) -> tuple[sqlite3.Connection, str | None, bool]:
    """Open or create a database of ours; move aside anything else and say so in one sentence.

    The flag says whether the database was created here (so nobody else has written it yet).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IndexNotWritable(
            f"cannot create the folder {path.parent} for the {what} ({exc.strerror}): pass "
            "--index-dir with a writable folder."
        ) from exc
    if path.exists() and not path.is_file():
        raise StoreError(f"the {what} path {path} is not a file: remove it or pass --index-dir.")
    notice: str | None = None
    for _attempt in range(2):
        label = ""
        conn: sqlite3.Connection | None = None
        try:
            conn = _connect(path)
            found_app = int(conn.execute("PRAGMA application_id").fetchone()[0])
            found_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            n_tables = int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
            if found_app == app_id and found_version == version:
                return conn, notice, False
            if found_app == 0 and n_tables == 0:
                _create_schema(conn, app_id=app_id, version=version, schema=schema)
                return conn, notice, True
            if found_app == app_id:
                label = "old-schema"
                reason = f"used schema version {found_version} (this coderag uses {version})"
            else:
                label = "foreign"
                reason = "was not made by coderag"
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "not a database" not in str(exc):
                if conn is not None:
                    conn.close()
                raise _store_error(path, exc) from exc
            label = "corrupt"
            reason = "was not a readable SQLite database"
        if conn is not None:
            conn.close()
        try:
            moved = _move_aside(path, label)
        except OSError as exc:
            raise StoreError(
                f"the {what} at {path} {reason} and could not be moved aside "
                f"({exc.strerror}): delete it and run again."
            ) from exc
        notice = f"The {what} at {path} {reason}; moved it to {moved.name} and started a new one."
    raise StoreError(f"cannot create the {what} at {path}: delete it and run again.")


def _open_read_only(path: Path, *, app_id: int, version: int, what: str) -> sqlite3.Connection:
    """Open an existing database of ours for reading only (a folder or file we may not write).

    WAL needs a shared-memory file next to the database; when that cannot be created the file
    is opened as immutable, which is safe because nobody who may write it is writing it.
    """
    if not path.is_file():
        raise IndexNotWritable(
            f"cannot create the {what} at {path} (its folder is not writable): pass "
            "--index-dir with a writable folder."
        )
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    conn: sqlite3.Connection | None = None
    for query in (uri, uri + "&immutable=1"):
        try:
            conn = sqlite3.connect(
                query, uri=True, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            found_app = int(conn.execute("PRAGMA application_id").fetchone()[0])
            found_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if conn is not None:
                conn.close()
                conn = None
            if not query.endswith("immutable=1"):
                continue  # no shared-memory file and no right to create one: immutable
            raise _store_error(path, exc) from exc
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise _store_error(path, exc) from exc
        if (found_app, found_version) != (app_id, version):
            conn.close()
            raise IndexNotWritable(
                f"the {what} at {path} was made by another coderag version and cannot be "
                "rebuilt because it is read-only: pass --index-dir with a writable folder."
            )
        conn.execute("PRAGMA query_only=1")
        return conn
    raise IndexNotWritable(
        f"cannot open the {what} at {path} even for reading: pass --index-dir with a "
        "writable folder."
    )


def _create_schema(conn: sqlite3.Connection, *, app_id: int, version: int, schema: str) -> None:
    """Create tables and stamp the file as ours in one transaction (all or nothing)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in schema.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id={int(app_id)}")
        conn.execute(f"PRAGMA user_version={int(version)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


_DB = TypeVar("_DB", bound="_Database")


class _Database:
    """One SQLite file of ours behind a lock: opened (and vetted) by a subclass's `open`."""

    notice: str | None
    app_id: int
    version: int
    schema: str
    what: str

    def __init__(
        self, path: Path, conn: sqlite3.Connection, notice: str | None, *, created: bool = False
    ) -> None:
        self.path = path
        self.notice = notice
        self.created = created  # made by this open: nobody else has written it yet
        self._conn = conn
        self._lock = threading.RLock()

    @classmethod
    def open(cls: type[_DB], path: Path, *, read_only: bool = False) -> _DB:
        """Open (or create) the file at `path`; a bad file is moved aside and `notice` says so.

        `read_only` opens an existing file for reading only, never creating or moving anything
        (IndexNotWritable when there is none); every write then raises IndexNotWritable.
        """
        path = Path(path)
        if read_only:
            conn = _open_read_only(path, app_id=cls.app_id, version=cls.version, what=cls.what)
            try:
                return cls(path, conn, None)
            except BaseException:
                conn.close()
                raise
        conn, notice, created = _open_database(
            path, app_id=cls.app_id, version=cls.version, schema=cls.schema, what=cls.what
        )
        try:
            return cls(path, conn, notice, created=created)
        except BaseException:
            conn.close()
            raise

    @property
    def read_only(self) -> bool:
        """Was the file opened for reading only (`open(read_only=True)`)?"""
        with self._lock:
            return bool(self._conn.execute("PRAGMA query_only").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._closed = True

    @property
    def closed(self) -> bool:
        return getattr(self, "_closed", False)

    def __enter__(self: _DB) -> _DB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Store(_Database):
    """The per-repository index: files, their text, and chunks for each chunking setting.

    A Store may be handed between threads (the TUI builds in a worker) but is used by one
    thread at a time; a lock serialises calls, and `batch()` holds it for the transaction.
    """

    app_id = INDEX_APP_ID
    version = INDEX_SCHEMA_VERSION
    schema = _INDEX_SCHEMA
    what = "index"

    def __init__(
        self, path: Path, conn: sqlite3.Connection, notice: str | None, *, created: bool = False
    ) -> None:
        super().__init__(path, conn, notice, created=created)
        self._depth = 0
        self._dirty: set[str] = set()
        self.page_checks = 0  # how many times this store ran SQLite's page check
        self._records = False  # keeps the file's last sound identity beside it (`identity_record`)
        self._sound = False  # made, page-checked or matched by its record; written only by us since
        self._wrote = False  # committed a write since it was opened
        # `content_hashes` as last read, with SQLite's data_version then (another
        # connection's commit changes it); this store's own writes are applied to it as they
        # commit (`_hash_writes` holds those of the open transaction).
        self._hashes: dict[str, str] | None = None
        self._hashes_version = -1
        self._hash_writes: list[tuple[str, str | None]] = []
        self._db_id = self._ensure_db_id()
        self._ensure_spans_index()

    @classmethod
    def open(cls, path: Path, *, read_only: bool = False, record: bool = False) -> Store:
        """`_Database.open`; with `record`, a file known sound (checked, or made and written
        only by this store) leaves a record beside it so a later run can skip the page check
        (`damage_if_changed`). Only where the walk never lists it: see the keeper."""
        store = super().open(path, read_only=read_only)
        if record and not read_only:
            store._records = True
            store._sound = store.created
        return store

    def close(self) -> None:
        """Close the file; one known sound is recorded as it is after SQLite's last checkpoint."""
        with self._lock:
            # Our own writes, or SQLite folding a WAL its record matches into the file, keep it
            # sound; a change by anyone else since it was last recorded is left to the next check.
            keep = self._sound and (self._wrote or identity_record.matches(self.path))
            super().close()
            self._sound = False
            if keep and not identity_record.matches(self.path):
                snapshot = identity_record.take_settled(self.path, _SETTLE_WAIT_S)
                if snapshot is not None:
                    identity_record.write(self.path, snapshot)

    def fold_wal(self) -> None:
        """Fold the write-ahead log into the file and empty it, so that a reader left open for
        long (`definitions_follow`) keeps no WAL that every later run opens again (as root,
        SQLite's opening changes its ctime, and then each run checks every page); a store
        read-only or busy is left as it is."""
        with self._lock:
            if self.read_only:
                return
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                return
            self._record_sound()

    def _record_sound(self) -> None:
        """After a committed write: record the file as it is now, when it was known sound."""
        if self._sound:
            snapshot = identity_record.take(self.path)
            if snapshot is not None:
                identity_record.write(self.path, snapshot)

    # --- transactions -------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction: commit on success, roll back on any exception (Ctrl-C included).

        Nested batches join the outer one. The generation of every chunking setting whose
        chunks changed is bumped inside the same transaction.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc
            self._depth = 1
            self._dirty = set()
            self._hash_writes = []
            try:
                yield
                self._bump_generations()
                self._conn.execute("COMMIT")
                self._wrote = True
                self._apply_hash_writes()
                self._record_sound()
            except BaseException as exc:
                self._hashes = None  # what was committed of it is not known: read it again
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _store_error(self.path, exc) from exc
                raise
            finally:
                self._depth = 0
                self._dirty = set()

    def _apply_hash_writes(self) -> None:
        if self._hashes is not None:
            for path, digest in self._hash_writes:
                if digest is None:
                    self._hashes.pop(path, None)
                else:
                    self._hashes[path] = digest
        self._hash_writes = []

    def _bump_generations(self) -> None:
        for spec_key in sorted(self._dirty):
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) "
                "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
                (_GEN_PREFIX + spec_key,),
            )

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the file, whatever other processes commit meanwhile
        (one read transaction; WAL keeps it consistent). Inside a batch: that transaction."""
        with self._lock:
            if self._conn.in_transaction:
                yield
                return
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc
            try:
                yield
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")

    def _ensure_spans_index(self) -> None:
        """Add the spans index to an index made before it existed (once; seconds at most)."""
        with self._reading() as conn:
            have = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'chunks_spans'"
            ).fetchone()
        if have is None and not self.read_only:
            with self.batch():
                self._conn.execute(_SPANS_INDEX)

    def _ensure_db_id(self) -> str:
        """A random id of this database file, so generations of a rebuilt index never repeat."""
        existing = self.get_meta("db_id")
        if existing is not None:
            return existing
        if self.read_only:
            return "read-only"
        new = uuid.uuid4().hex[:12]
        self.set_meta("db_id", new)
        return new

    # --- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._reading() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.batch():
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def generation(self, spec_key: str) -> str:
        """Changes whenever the chunks of `spec_key` change (a cache key for derived indexes)."""
        counter = self.get_meta(_GEN_PREFIX + spec_key) or "0"
        return f"{self._db_id}-{counter}"

    def spec_keys(self) -> list[str]:
        """Every chunking setting that has (or had) chunks in this index."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT key FROM meta WHERE key >= ? AND key < ? ORDER BY key",
                (_GEN_PREFIX, _GEN_PREFIX[:-1] + chr(ord(":") + 1)),
            ).fetchall()
        return [str(r[0])[len(_GEN_PREFIX) :] for r in rows]

    # --- integrity and the settings an index was built with ---------------------------------

    def damage(self) -> str | None:
        """What SQLite's page check (`PRAGMA quick_check`) finds wrong, or None when sound.

        It reads every page once (80 ms for an index of 80,000 chunks), so the engine runs it
        at most once per opened index, and only when `damage_if_changed` finds no record that
        matches the file. A sound file is recorded so, as it was before the check began.
        """
        with self._lock:
            before = identity_record.take(self.path) if self._records else None
            self.page_checks += 1
            try:
                rows = self._conn.execute("PRAGMA quick_check(5)").fetchall()
            except sqlite3.DatabaseError as exc:
                if not isinstance(_store_error(self.path, exc), IndexDamaged):
                    raise _store_error(self.path, exc) from exc
                return "SQLite cannot read its pages"
            if rows != [("ok",)]:
                more = "+" if len(rows) >= 5 else ""
                return f"SQLite's page check found {len(rows)}{more} problems"
            if not self._texts_decode():
                return "a stored text is no longer valid UTF-8"
            self._sound = self._records
            if before is not None:
                identity_record.write(self.path, before)
            return None

    def _texts_decode(self) -> bool:
        """Whether every stored text still reads as UTF-8: well-formed pages can hold bytes
        changed behind our back, which SQLite finds only when the text is read (a search reads
        a chunk's text only when it shows it, so the check that runs when the file changed
        reads them all)."""
        cur = self._conn.execute("SELECT text FROM chunks")  # file texts: read when re-chunked
        try:
            while cur.fetchmany(4096):
                pass
        except sqlite3.OperationalError:
            return False
        return True

    def damage_if_changed(self) -> str | None:
        """`damage`, run only when the file may have changed behind coderag's back.

        The check is skipped (None) when this store made the file, or when the record left
        beside it by the last check or the last run's own writes still matches the file and
        its WAL (`identity_record`): another program's write, a truncation or a crash in the middle
        of a write all change what the record holds, and then the pages are checked.
        """
        with self._lock:
            if self._sound or (self._records and identity_record.matches(self.path)):
                self._sound = self._records
                return None
            return self.damage()

    @classmethod
    def replace(cls, store: Store | Path, why: str, *, record: bool | None = None) -> Store:
        """Close a damaged `store` (or the file at a path), move the file aside (kept for
        inspection) and open a new one (`record`: as `open`; default: as the store replaced).

        The new store's `notice` says so in one sentence, without any of the damaged bytes.
        """
        if isinstance(store, Store):
            if record is None:
                record = store._records
            path = store.path
            store._sound = False  # never record a damaged file as sound while closing it
            store.close()
        else:
            path = Path(store)
        try:
            moved = _move_aside(path, "corrupt")
        except OSError as exc:
            raise StoreError(
                f"the index at {path} is damaged ({why}) and could not be moved aside "
                f"({exc.strerror}): delete it and run again."
            ) from exc
        fresh = cls.open(path, record=bool(record))
        fresh.notice = (
            f"The index at {path} was damaged ({why}); moved it to {moved.name} and "
            "started a new one."
        )
        return fresh

    def build_settings(self) -> dict[str, object] | None:
        """The settings that decide which files are indexed, as the last build used them."""
        raw = self.get_meta(_BUILD_SETTINGS)
        if raw is None:
            return None
        try:
            values = parse_json(raw)
        except ValueError:
            return None
        return dict(values) if isinstance(values, dict) else None

    def set_build_settings(self, values: Mapping[str, object], *, recheck: bool) -> None:
        """Remember `values` for the next build; with `recheck`, forget every file's stat so
        that build reads every file again under the new settings (content that did not change
        is not re-chunked)."""
        with self.batch():
            self.set_meta(_BUILD_SETTINGS, json.dumps(dict(values), sort_keys=True))
            if recheck:
                self._conn.execute("UPDATE files SET mtime_ns = -1")

    # --- files --------------------------------------------------------------------------

    def file_states(self, paths: Iterable[str] | None = None) -> dict[str, FileState]:
        """The stored state of every file, or of those of `paths` the store knows."""
        columns = (
            "SELECT path, size, mtime_ns, content_hash, language, skip_reason, "
            "skip_detail, invalid_utf8 FROM files"
        )
        with self._reading() as conn:
            if paths is None:
                rows = conn.execute(columns).fetchall()
            else:
                rows = list(_rows_in(conn, columns + " WHERE path IN ({marks})", list(paths)))
        return {
            r[0]: FileState(
                path=r[0],
                size=r[1],
                mtime_ns=r[2],
                content_hash=r[3],
                language=r[4],
                skip_reason=r[5],
                skip_detail=r[6],
                invalid_utf8=bool(r[7]),
            )
            for r in rows
        }

    def content_hashes(self) -> Mapping[str, str]:
        """Each file's content hash (what search structures compare to find changed files).

        Read once and kept while no other connection commits (SQLite's data_version), with
        this store's own committed writes applied: a resident process re-checking one file
        after an edit does not read every file's row again."""
        with self._reading() as conn:
            (version,) = conn.execute("PRAGMA data_version").fetchone()
            if conn.in_transaction:  # uncommitted writes of ours: read them, keep nothing
                rows = conn.execute("SELECT path, content_hash FROM files").fetchall()
                return {str(r[0]): str(r[1]) for r in rows}
            if self._hashes is None or version != self._hashes_version:
                rows = conn.execute("SELECT path, content_hash FROM files").fetchall()
                self._hashes = {str(r[0]): str(r[1]) for r in rows}
                self._hashes_version = int(version)
            return MappingProxyType(self._hashes)

    def file_text(self, path: str) -> str | None:
        """The text that was indexed for `path` (so re-chunking never has to read the file)."""
        with self._reading() as conn:
            row = conn.execute("SELECT text FROM file_texts WHERE path = ?", (path,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def paths_under(self, folder: str) -> list[str]:
        """The stored files inside `folder` (a repository path, no trailing slash)."""
        low, high = folder + "/", folder + "0"  # "0" follows "/": every path starting "folder/"
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT path FROM files WHERE path >= ? AND path < ? ORDER BY path", (low, high)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def file_count(self) -> int:
        with self._reading() as conn:
            return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])

    def put_file(self, state: FileState, text: str | None) -> None:
        """Record a file's new content (or its skip); its old chunks of every setting are dropped.

        The chunks described the previous content, so they go; the caller puts the chunks
        of the current setting right after, and other settings are rebuilt from the stored
        text when they are next used.
        """
        self.put_files([(state, text)])

    def put_files(self, items: Sequence[tuple[FileState, str | None]]) -> None:
        """`put_file` for many files with a few statements (the indexer writes whole batches)."""
        if not items:
            return
        with self.batch():
            self._hash_writes += [(state.path, state.content_hash) for state, _ in items]
            self._drop_chunks([state.path for state, _ in items])
            # The findings described the previous content; the indexer puts the new ones.
            self._conn.executemany(
                "DELETE FROM secrets WHERE path = ?", [(state.path,) for state, _ in items]
            )
            self._conn.executemany(
                "INSERT OR REPLACE INTO files (path, size, mtime_ns, content_hash, language, "
                "skip_reason, skip_detail, invalid_utf8) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        s.path,
                        s.size,
                        s.mtime_ns,
                        s.content_hash,
                        s.language,
                        s.skip_reason,
                        s.skip_detail,
                        int(s.invalid_utf8),
                    )
                    for s, _ in items
                ],
            )
            self._conn.executemany(
                "DELETE FROM file_texts WHERE path = ?",
                [(s.path,) for s, text in items if text is None],
            )
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_texts (path, text) VALUES (?, ?)",
                [(s.path, text) for s, text in items if text is not None],
            )

    def update_stat(self, path: str, size: int, mtime_ns: int) -> None:
        """A file was touched but its content is the same: remember the new stat only."""
        self.update_stats([(path, size, mtime_ns)])

    def update_stats(self, items: Sequence[tuple[str, int, int]]) -> None:
        """`update_stat` for many (path, size, mtime_ns) at once."""
        if not items:
            return
        with self.batch():
            self._conn.executemany(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                [(size, mtime_ns, path) for path, size, mtime_ns in items],
            )

    def delete_files(self, paths: Iterable[str]) -> None:
        """Forget files and their chunks of every chunking setting."""
        items = list(paths)
        if not items:
            return
        with self.batch():
            self._hash_writes += [(p, None) for p in items]
            self._drop_chunks(items)
            params = [(p,) for p in items]
            self._conn.executemany("DELETE FROM files WHERE path = ?", params)
            self._conn.executemany("DELETE FROM file_texts WHERE path = ?", params)
            self._conn.executemany("DELETE FROM secrets WHERE path = ?", params)

    def _drop_chunks(self, paths: Sequence[str]) -> None:
        for spec_key in set(self.spec_keys()) | self._dirty:
            params = [(spec_key, p) for p in paths]
            cur = self._conn.executemany(
                "DELETE FROM chunks WHERE spec_key = ? AND path = ?", params
            )
            if cur.rowcount > 0:
                self._dirty.add(spec_key)
            self._conn.executemany("DELETE FROM chunked WHERE spec_key = ? AND path = ?", params)

    # --- chunks -------------------------------------------------------------------------

    def put_chunks(
        self,
        spec_key: str,
        path: str,
        chunks: Sequence[Chunk],
        *,
        text_hashes: Sequence[str] | None = None,
    ) -> None:
        """Replace the chunks of one file for one chunking setting (so re-runs never duplicate).

        `text_hashes` (one per chunk, as `text_hash`) may be given when already computed.
        """
        self.put_chunks_many(spec_key, [(path, chunks, text_hashes)])

    def put_chunks_many(
        self,
        spec_key: str,
        items: Sequence[tuple[str, Sequence[Chunk], Sequence[str] | None]],
    ) -> None:
        """`put_chunks` for many files: (path, chunks, text hashes or None) each."""
        if not items:
            return
        rows: list[tuple[object, ...]] = []
        for path, chunks, hashes in items:
            pairs = list(zip(chunks, hashes or [text_hash(c.text) for c in chunks], strict=True))
            pairs.sort(key=lambda pair: (pair[0].start_line, pair[0].end_line))
            rows.extend(
                (spec_key, path, i, c.start_line, c.end_line, c.kind, c.language, c.text, h)
                for i, (c, h) in enumerate(pairs)
            )
        with self.batch():
            self._dirty.add(spec_key)
            keys = [(spec_key, path) for path, _, _ in items]
            self._conn.executemany("DELETE FROM chunks WHERE spec_key = ? AND path = ?", keys)
            self._conn.executemany(
                "INSERT INTO chunks (spec_key, path, ord, start_line, end_line, kind, language, "
                "text, text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._conn.executemany(
                "INSERT OR IGNORE INTO chunked (spec_key, path) VALUES (?, ?)", keys
            )

    def chunked_paths(self, spec_key: str, paths: Iterable[str] | None = None) -> set[str]:
        """Files already cut into chunks for `spec_key` (an empty file counts, with no chunks),
        or those of `paths` that are."""
        query = "SELECT path FROM chunked WHERE spec_key = ?"
        with self._reading() as conn:
            if paths is None:
                rows = conn.execute(query, (spec_key,)).fetchall()
            else:
                in_paths = query + " AND path IN ({marks})"
                rows = list(_rows_in(conn, in_paths, list(paths), (spec_key,)))
        return {str(r[0]) for r in rows}

    def file_spans(
        self, spec_key: str, paths: Iterable[str]
    ) -> dict[str, tuple[str | None, list[tuple[int, int, str]]]]:
        """(language, each chunk's (start_line, end_line, kind) in order) of each of `paths`
        with chunks of `spec_key`."""
        found: dict[str, tuple[str | None, list[tuple[int, int, str]]]] = {}
        query = (
            "SELECT path, language, start_line, end_line, kind FROM chunks "
            "WHERE spec_key = ? AND path IN ({marks}) ORDER BY path, ord"
        )
        with self._reading() as conn:
            for path, language, start, end, kind in _rows_in(
                conn, query, sorted(set(paths)), (spec_key,)
            ):
                entry = found.setdefault(str(path), (language, []))
                entry[1].append((int(start), int(end), str(kind)))
        return found

    def chunks(self, spec_key: str) -> list[Chunk]:
        """Every chunk of one chunking setting, ordered by (path, start_line)."""
        with self._reading() as conn:
            cur = conn.execute(
                "SELECT path, start_line, end_line, kind, language, text FROM chunks "
                "WHERE spec_key = ? ORDER BY path, ord",
                (spec_key,),
            )
            return [Chunk(*row) for row in cur]

    def chunk_files(self, spec_key: str) -> list[tuple[str, str | None, int]]:
        """(path, language, chunk count) of each file with chunks, in the order of `chunks()`."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT path, max(language), count(*) FROM chunks WHERE spec_key = ? "
                "GROUP BY path ORDER BY path",
                (spec_key,),
            ).fetchall()
        return [(str(r[0]), r[1], int(r[2])) for r in rows]

    def chunk_spans(self, spec_key: str) -> tuple[np.ndarray, list[str] | None]:
        """Every chunk's (ordinal, start_line, end_line) in the order of `chunks()`, one row
        each, and their kinds (None when every chunk has the kind `lines`)."""
        import numpy as np

        with self._reading() as conn:
            where = "FROM chunks WHERE spec_key = ? ORDER BY path, ord"
            # One string, parsed by numpy: half the time of a Python tuple per chunk. The
            # caller checks the ordinals, since SQLite does not promise the inner order here.
            (joined,) = conn.execute(
                "SELECT group_concat(ord || ' ' || start_line || ' ' || end_line, ' ') "
                f"FROM (SELECT ord, start_line, end_line {where})",
                (spec_key,),
            ).fetchone()
            numbers = np.array((joined or "").split(), dtype=np.int64)
            spans = numbers.reshape(-1, 3)
            mixed = conn.execute(
                "SELECT 1 FROM chunks WHERE spec_key = ? AND kind != 'lines' LIMIT 1", (spec_key,)
            ).fetchone()
            kinds = None
            if mixed is not None:
                kinds = [str(r[0]) for r in conn.execute(f"SELECT kind {where}", (spec_key,))]
        return spans, kinds

    def chunk_text(self, spec_key: str, path: str, ordinal: int) -> tuple[int, int, str] | None:
        """(start_line, end_line, text) of a file's chunk number `ordinal` (0-based)."""
        with self._reading() as conn:
            row = conn.execute(
                "SELECT start_line, end_line, text FROM chunks "
                "WHERE spec_key = ? AND path = ? AND ord = ?",
                (spec_key, path, ordinal),
            ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]))

    def chunk_page(
        self, spec_key: str, after: tuple[str, int] | None, limit: int
    ) -> list[tuple[Chunk, int]]:
        """Up to `limit` chunks (with their ordinal) in the order of `chunks()`, starting after
        the chunk at (path, ordinal) `after` (None: from the first)."""
        columns = "SELECT path, start_line, end_line, kind, language, text, ord FROM chunks"
        with self._reading() as conn:
            if after is None:
                cur = conn.execute(
                    f"{columns} WHERE spec_key = ? ORDER BY path, ord LIMIT ?", (spec_key, limit)
                )
            else:
                cur = conn.execute(
                    f"{columns} WHERE spec_key = ? AND (path, ord) > (?, ?) "
                    "ORDER BY path, ord LIMIT ?",
                    (spec_key, after[0], after[1], limit),
                )
            return [(Chunk(*row[:6]), int(row[6])) for row in cur]

    def chunk_rows_after(self, spec_key: str, after: int, limit: int) -> list[tuple[int, str, str]]:
        """Up to `limit` chunks of `spec_key` as (row id, path, text), in the order they were
        written, after the row `after` (0: from the first). A row is never changed, only
        deleted: a second process can follow a build by its row ids."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT rowid, path, text FROM chunks WHERE rowid > ? AND spec_key = ? "
                "ORDER BY rowid LIMIT ?",
                (after, spec_key, limit),
            ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def chunks_after(self, spec_key: str, after: int, limit: int) -> list[tuple[int, Chunk]]:
        """`chunk_rows_after` with each chunk whole: (row id, chunk)."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT rowid, path, start_line, end_line, kind, language, text FROM chunks "
                "WHERE rowid > ? AND spec_key = ? ORDER BY rowid LIMIT ?",
                (after, spec_key, limit),
            ).fetchall()
        return [(int(r[0]), Chunk(*r[1:])) for r in rows]

    def chunk_row_ids(self, spec_key: str) -> list[int]:
        """The row id of every chunk of `spec_key`, in the order of `chunks()`."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT rowid FROM chunks WHERE spec_key = ? ORDER BY path, ord", (spec_key,)
            ).fetchall()
        return [int(r[0]) for r in rows]

    def chunk_rows(self, row_ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """(row id, path, text) of the chunks `row_ids` that exist."""
        query = "SELECT rowid, path, text FROM chunks WHERE rowid IN ({marks})"
        with self._reading() as conn:
            return [(int(r[0]), str(r[1]), str(r[2])) for r in _rows_in(conn, query, list(row_ids))]

    def chunk_count(self, spec_key: str, paths: Iterable[str] | None = None) -> int:
        """How many chunks `spec_key` has, in all or in the files `paths`."""
        query = "SELECT count(*) FROM chunks WHERE spec_key = ?"
        with self._reading() as conn:
            if paths is None:
                return int(conn.execute(query, (spec_key,)).fetchone()[0])
            in_paths = query + " AND path IN ({marks})"
            return sum(int(r[0]) for r in _rows_in(conn, in_paths, list(paths), (spec_key,)))

    def chunk_hashes(self, spec_key: str) -> list[str]:
        """The text hash of every chunk of `spec_key`, in the order of `chunks()`."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT text_hash FROM chunks WHERE spec_key = ? ORDER BY path, ord", (spec_key,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    # --- suspected secrets ----------------------------------------------------------------

    def put_secrets(self, items: Sequence[tuple[str, Sequence[SecretFinding]]]) -> None:
        """Replace the suspected secrets of each (path, findings) (none: the file is clean)."""
        if not items:
            return
        with self.batch():
            self._conn.executemany(
                "DELETE FROM secrets WHERE path = ?", [(path,) for path, _ in items]
            )
            self._conn.executemany(
                "INSERT INTO secrets (path, line, col, end_line, end_col, kind) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (path, f.line, f.col, f.end_line, f.end_col, f.kind)
                    for path, findings in items
                    for f in findings
                ],
            )

    def secrets(self, paths: Iterable[str] | None = None) -> dict[str, tuple[SecretFinding, ...]]:
        """The suspected secrets of `paths` (default: every file), by path, in line order."""
        query = "SELECT path, line, col, end_line, end_col, kind FROM secrets"
        with self._reading() as conn:
            if paths is None:
                rows = conn.execute(query).fetchall()
            else:
                in_paths = query + " WHERE path IN ({marks})"
                rows = list(_rows_in(conn, in_paths, list(dict.fromkeys(paths))))
        found: dict[str, list[SecretFinding]] = {}
        for path, *where in rows:
            found.setdefault(str(path), []).append(SecretFinding(*where))
        return {
            path: tuple(sorted(items, key=lambda f: (f.line, f.col, f.end_line, f.end_col)))
            for path, items in found.items()
        }


class EmbeddingCache(_Database):
    """Embedding vectors keyed by (model, hash of the embedded text), shared by every repository.

    Unchanged or renamed code is never embedded twice: across runs, chunk sizes and repos.
    """

    app_id = CACHE_APP_ID
    version = CACHE_SCHEMA_VERSION
    schema = _CACHE_SCHEMA
    what = "embedding cache"

    def _guard(self, fn: Callable[[], _T]) -> _T:
        with self._lock:
            try:
                return fn()
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc

    def get_many(self, model: str, text_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors among `text_hashes` (missing ones are simply absent)."""
        import numpy as np

        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(text_hashes))

        def run() -> None:
            query = (
                "SELECT text_hash, dim, vector FROM embeddings "
                "WHERE model = ? AND text_hash IN ({marks})"
            )
            for key, dim, blob in _rows_in(self._conn, query, unique, (model,)):
                vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                if vector.shape[0] == dim:
                    found[str(key)] = vector

        self._guard(run)
        return found

    def put_many(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors (as little-endian float32) in one transaction."""
        import numpy as np

        rows = []
        for key, vector in items:
            flat = np.ascontiguousarray(vector, dtype="<f4").reshape(-1)
            rows.append((model, key, int(flat.shape[0]), flat.tobytes()))
        if not rows:
            return

        def run() -> None:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (model, text_hash, dim, vector) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

        self._guard(run)

    def count(self, model: str | None = None) -> int:
        def run() -> int:
            if model is None:
                row = self._conn.execute("SELECT count(*) FROM embeddings").fetchone()
            else:
                row = self._conn.execute(
                    "SELECT count(*) FROM embeddings WHERE model = ?", (model,)
                ).fetchone()
            return int(row[0])

        return self._guard(run)
