"""Incremental index build: walk, read only what changed, chunk, store in committed batches.

A second run with nothing changed reads no file (size + mtime decide), and in a git work
tree does not even walk: git's fingerprint of the tree (`walk.fingerprint`) matches the one
the last complete build recorded. A changed file is re-chunked (and scanned for secrets, see
`secret_scan`) alone, deleted files disappear, and switching the chunking setting re-chunks
the stored text without touching the disk (so does a new version of the chunker, once
per chunking setting). Work is committed every few hundred files, so
Ctrl-C, a cancel event or SIGKILL loses at most the open batch and the next run finishes it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coderag_tui.core.capped import parse_json
from coderag_tui.core.hashing import text_hash, utf8_hash
from coderag_tui.core.index import secret_scan
from coderag_tui.core.index.chunk import CHUNKER_VERSION, chunk_file
from coderag_tui.core.index.store import FileState, Store
from coderag_tui.core.index.walk import fingerprint, read_source, stat_fingerprint, vet, walk
from coderag_tui.core.records import (
    Chunk,
    ChunkingSpec,
    SecretFinding,
    SkippedFile,
    SkipReason,
    SourceFile,
)
from coderag_tui.settings import Settings

STAGES: tuple[str, ...] = ("walk", "read", "scan", "chunk", "store")
# Meta key (plus the chunking key) of the work tree's fingerprint after the last complete
# build, with what that build reported skipped: a matching fingerprint means nothing changed.
FRESH_META_PREFIX = "fresh:"
# Meta key (plus the chunking key) of the paths a plain walk watched (`WalkResult.watched`).
WATCHED_META_PREFIX = "watched:"
# Meta key (plus the chunking key) of the chunker version that cut every file of the last
# complete build: chunks cut by another version are cut again from the stored text.
CHUNKER_META_PREFIX = "chunker:"
_PROGRESS_INTERVAL_S = 0.05  # at most ~20 progress callbacks per second


@dataclass(frozen=True)
class IndexProgress:
    """Where a build is: `stage` is "walk", "index" or "done"; `bytes_done` counts bytes read."""

    stage: str
    files_done: int
    files_total: int
    chunks: int
    bytes_done: int
    elapsed_s: float


@dataclass(frozen=True)
class IndexReport:
    """What a build did; every walked file is indexed, unchanged, skipped or (if cancelled) left.

    `files_indexed` counts files (re-)chunked this run, `files_unchanged` files whose chunks
    were already current (including touched files with the same content), `chunks` the
    chunks of the current setting now in the index, `skipped` every file left out with its
    reason (from the walk and from reading), `invalid_utf8` files decoded with replacements.
    """

    files_total: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    chunks: int
    skipped: tuple[SkippedFile, ...]
    invalid_utf8: tuple[str, ...]
    stage_seconds: dict[str, float]
    elapsed_s: float
    cancelled: bool
    notice: str | None
    files_read: int = 0
    bytes_read: int = 0
    chunks_written: int = 0
    spec_key: str = ""
    index_path: str = ""
    is_git: bool = False
    files_left: int = 0  # files not reached because the build was cancelled
    files_scanned: int = 0  # files whose text was scanned for secrets this run
    # Every indexed file with suspected secrets and their kinds (held back from prompts).
    secrets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A build of given paths (`build_index(only=...)`): the files whose chunks it may have
    # changed, in path order; None for a build that checked every file.
    touched: tuple[str, ...] | None = None

    def skipped_by_reason(self) -> dict[str, int]:
        """How many files were skipped for each reason (reason text -> count), most first."""
        counts: dict[str, int] = {}
        for skip in self.skipped:
            counts[skip.reason.value] = counts.get(skip.reason.value, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (skips as path/reason/detail records)."""
        return {
            "index_path": self.index_path,
            "chunking": self.spec_key,
            "is_git": self.is_git,
            "files_total": self.files_total,
            "files_indexed": self.files_indexed,
            "files_unchanged": self.files_unchanged,
            "files_removed": self.files_removed,
            "files_read": self.files_read,
            "bytes_read": self.bytes_read,
            "chunks": self.chunks,
            "chunks_written": self.chunks_written,
            "skipped_by_reason": self.skipped_by_reason(),
            "skipped": [
                {
                    "path": s.path,
                    "reason": s.reason.value,
                    "reason_code": s.reason.name,
                    "detail": s.detail,
                }
                for s in self.skipped
            ],
            "invalid_utf8": list(self.invalid_utf8),
            "stage_seconds": {k: round(v, 4) for k, v in self.stage_seconds.items()},
            "elapsed_s": round(self.elapsed_s, 4),
            "cancelled": self.cancelled,
            "files_left": self.files_left,
            "files_scanned": self.files_scanned,
            "secrets": [{"path": path, "kinds": list(kinds)} for path, kinds in self.secrets],
            "notice": self.notice,
        }


class IndexInterrupted(KeyboardInterrupt):
    """Ctrl-C during a build: the finished batches are committed; `report` says what was kept.

    It is a KeyboardInterrupt, so callers that do not know it still stop as usual.
    """

    def __init__(self, report: IndexReport) -> None:
        super().__init__("interrupted")
        self.report = report


def index_excludes(settings: Settings) -> list[Path]:
    """The index's own files when they live inside the repository, so it never indexes itself."""
    root = settings.repo_root
    index_path = settings.index_path.resolve()
    folder = index_path.parent
    if folder != root and root in folder.parents:
        return [folder]
    if folder != root:
        return []
    cache = settings.embed_cache_path.resolve()
    paths = [index_path.with_suffix(".bm25")]
    for base in (index_path, cache):
        paths.append(base)
        # ".sound": the record that spares an unchanged index its page check (`identity_record`)
        suffixes = ("-wal", "-shm", "-journal", ".lock", ".sound")
        paths.extend(base.with_name(base.name + s) for s in suffixes)
    return paths


def read_indexable(settings: Settings, rel: str) -> str | SkippedFile | None:
    """The text of one repository file, read as the index reads it, if the walk would index
    it; else why not (a SkippedFile), or None when there is no such path. `rel` is
    repository-relative with forward slashes, and never leaves the repository."""
    vetted = vet(
        settings.repo_root,
        rel,
        max_file_bytes=settings.max_file_bytes,
        exclude=index_excludes(settings),
        include_secret_files=settings.include_secret_files,
    )
    if not isinstance(vetted, SourceFile):
        return vetted
    outcome = read_source(
        settings.repo_root,
        vetted,
        max_line_chars=settings.max_line_chars,
        max_file_bytes=settings.max_file_bytes,
    )
    return outcome if isinstance(outcome, SkippedFile) else outcome[0]


@dataclass
class _Run:
    """Mutable counters of one build, turned into an IndexReport at the end."""

    started: float
    files_total: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    files_read: int = 0
    bytes_read: int = 0
    chunks_written: int = 0
    scanned: int = 0
    done: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    invalid: dict[str, bool] = field(default_factory=dict)
    chunks: int | None = None  # the chunks of the chunking after the build, when known
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))


@dataclass(frozen=True)
class _Job:
    """One file that needs work: read from disk, or chunked from the stored text."""

    file: SourceFile
    previous: FileState | None
    from_store: bool


@dataclass
class _Build:
    """What every phase of one build shares: the settings, the store, the counters, the clock,
    and the progress callback with the time it was last called."""

    settings: Settings
    store: Store
    run: _Run
    clock: Callable[[], float]
    progress: Callable[[IndexProgress], None] | None
    last_emit: float = float("-inf")

    def emit(self, stage: str, *, force: bool = False) -> None:
        """Report progress, at most every `_PROGRESS_INTERVAL_S` unless `force`."""
        if self.progress is None:
            return
        now = self.clock()
        if not force and now - self.last_emit < _PROGRESS_INTERVAL_S:
            return
        self.last_emit = now
        run = self.run
        self.progress(
            IndexProgress(
                stage,
                run.done,
                run.files_total,
                run.chunks_written,
                run.bytes_read,
                now - run.started,
            )
        )


def build_index(  # noqa: PLR0913
    settings: Settings,
    store: Store,
    *,
    progress: Callable[[IndexProgress], None] | None = None,
    cancel: threading.Event | None = None,
    batch_files: int = 200,
    batch_bytes: int = 4 << 20,
    workers: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
    only: Collection[str] | None = None,
    previous: IndexReport | None = None,
    planned: Callable[[int], None] | None = None,
) -> IndexReport:
    """Bring the index of `settings.repo` for `settings.chunking_spec` up to date.

    With `only` (repository paths, forward slashes: what a file watch saw change since the
    last complete build), just those paths are checked, each with the walk's rules
    (`walk.vet`): a file there is indexed as the walk would, one gone or left out is
    removed with any stored file inside it. `previous` (that build's report) lends the
    skips of every other path to the report. `planned` is told how many bytes the walk
    found to read, before any is read. When a path is a folder, or the index was cut
    or scanned by another version, every file is checked instead.

    A set `cancel` event stops between files and returns a report with `cancelled=True`;
    Ctrl-C commits the files finished so far and raises IndexInterrupted (a
    KeyboardInterrupt) carrying that report. Either way the next run finishes the job.
    Reading and chunking run on `workers` threads (default: up to 4, one per core) while
    this thread writes, so `stage_seconds` for read and chunk are summed over threads and
    may add up to more than `elapsed_s`.

    The phases: the fingerprint (an unchanged tree ends here), the walk, the plan (which
    files to read or chunk again, which are gone), then the batches that index them.
    """
    spec = settings.chunking_spec
    run = _Run(started=clock())
    build = _Build(settings, store, run, clock, progress)
    build.emit("walk", force=True)
    if only is not None:
        batches = (batch_files, batch_bytes)
        report = _build_paths(
            build, sorted(set(only)), previous, cancel=cancel, workers=workers, batches=batches
        )
        if report is not None:
            return report
        run = build.run = _Run(started=run.started)
    t = clock()
    excludes = index_excludes(settings)
    fresh_key = FRESH_META_PREFIX + spec.key
    chunker_key = CHUNKER_META_PREFIX + spec.key
    cut_by_this_chunker = store.get_meta(chunker_key) == CHUNKER_VERSION
    digest, is_git = _check_digest(store, settings, excludes, check=cut_by_this_chunker)
    if digest is not None and cut_by_this_chunker:
        unchanged = _unchanged_report(store, settings, fresh_key, digest, run, clock, is_git=is_git)
        if unchanged is not None:
            build.emit("done", force=True)
            return unchanged
    if store.get_meta(fresh_key):
        store.set_meta(fresh_key, "")  # forgotten until this build completes
    result = walk(
        settings.repo_root,
        max_file_bytes=settings.max_file_bytes,
        exclude=excludes,
        include_secret_files=settings.include_secret_files,
    )
    run.seconds["walk"] += clock() - t
    run.files_total = len(result.files)
    run.skipped.extend(result.skipped)
    digest = _with_reading_rules(result.digest, settings) or digest  # a plain walk's own stat

    jobs, chunked, cut_by_this_chunker = _plan(
        build, result.files, chunker_key, cut_by_this_chunker=cut_by_this_chunker
    )
    build.emit("index", force=True)
    if planned is not None:
        planned(sum(job.file.size for job in jobs if not job.from_store))
    if any(not job.from_store for job in jobs):
        # Files will be read and scanned: import the detectors (~0.08 s) beside the reading.
        threading.Thread(target=secret_scan.warm, name="coderag-secret-scan", daemon=True).start()
    position, cancelled, interrupted = _index_jobs(
        build,
        jobs,
        chunked,
        cancel=cancel,
        batch_files=batch_files,
        batch_bytes=batch_bytes,
        workers=workers,
    )

    left = len(jobs) - position
    run.done = run.files_total - left
    if not interrupted:  # after Ctrl-C, call nothing of the caller's again
        build.emit("done", force=True)
    report = _report(
        run,
        settings,
        store,
        is_git=result.is_git,
        cancelled=cancelled or interrupted,
        left=left,
        clock=clock,
    )
    if interrupted:
        raise IndexInterrupted(report)
    if not report.cancelled and not cut_by_this_chunker:
        store.set_meta(chunker_key, CHUNKER_VERSION)
    if digest is not None and not report.cancelled:
        _remember_fresh(store, spec.key, digest, report, result.watched)
    return report


def _build_paths(
    build: _Build,
    paths: Sequence[str],
    previous: IndexReport | None,
    *,
    cancel: threading.Event | None,
    workers: int | None,
    batches: tuple[int, int],
) -> IndexReport | None:
    """`build_index` of `paths` alone (see there; `batches`: its batch_files and batch_bytes);
    None when every file must be checked."""
    settings, store, run, clock = build.settings, build.store, build.run, build.clock
    key = settings.chunking_spec.key
    if (
        store.get_meta(CHUNKER_META_PREFIX + key) != CHUNKER_VERSION
        or store.get_meta(secret_scan.SCANNER_META_KEY) != secret_scan.SCANNER_VERSION
    ):
        return None
    t = clock()
    vetted = _vet_paths(settings, store, paths)
    run.seconds["walk"] += clock() - t
    if vetted is None:
        return None
    files, skipped, gone = vetted
    checked = set(paths) | gone
    t = clock()
    # The chunk count after the build follows from the checked files' counts before and
    # after it (a count of every chunk is the slowest read of a small build).
    before = store.chunk_count(key, checked) if previous is not None else 0
    states = store.file_states([*(f.path for f in files), *gone])
    chunked = store.chunked_paths(key, [f.path for f in files])
    removed = sorted(p for p in gone if p in states)
    if removed:
        store.delete_files(removed)
    run.removed = len(removed)
    fresh_key = FRESH_META_PREFIX + key
    if store.get_meta(fresh_key):
        store.set_meta(fresh_key, "")  # the recorded fingerprint no longer tells the truth
    run.seconds["store"] += clock() - t
    jobs = _jobs(files, states, chunked, run)
    run.files_total = len(files)
    run.done = run.unchanged
    build.emit("index", force=True)
    position, cancelled, interrupted = _index_jobs(
        build,
        jobs,
        chunked,
        cancel=cancel,
        batch_files=batches[0],
        batch_bytes=batches[1],
        workers=workers,
    )
    left = len(jobs) - position
    run.done = run.files_total - left
    if not interrupted:
        build.emit("done", force=True)
    if previous is not None:  # the rest of the tree is as the last complete build found it
        run.skipped += [s for s in previous.skipped if s.path not in checked]
        for path in previous.invalid_utf8:
            if path not in checked:
                run.invalid.setdefault(path, True)
    run.skipped += skipped
    run.files_total = store.file_count()
    run.unchanged = run.files_total - run.indexed
    if previous is not None:
        run.chunks = previous.chunks - before + store.chunk_count(key, checked)
    report = _report(
        run,
        settings,
        store,
        is_git=previous.is_git if previous is not None else (settings.repo_root / ".git").exists(),
        cancelled=cancelled or interrupted,
        left=left,
        clock=clock,
    )
    report = dataclasses.replace(report, touched=tuple(sorted(checked)))
    if interrupted:
        raise IndexInterrupted(report)
    return report


def _vet_paths(
    settings: Settings, store: Store, paths: Sequence[str]
) -> tuple[list[SourceFile], list[SkippedFile], set[str]] | None:
    """What the walk would make of each of `paths`: the files to index, the skips it would
    report, and the stored paths to forget (gone, left out, or inside a folder removed);
    None when a path is a folder (its files came with no event of their own)."""
    root, excludes = settings.repo_root, index_excludes(settings)
    files: list[SourceFile] = []
    skipped: list[SkippedFile] = []
    gone: set[str] = set()
    for rel in paths:
        try:
            if stat.S_ISDIR(os.lstat(os.path.join(root, rel)).st_mode):
                return None
        except FileNotFoundError:
            pass  # gone: vet says so
        except (OSError, ValueError):
            return None
        vetted = vet(
            root,
            rel,
            max_file_bytes=settings.max_file_bytes,
            exclude=excludes,
            include_secret_files=settings.include_secret_files,
        )
        if isinstance(vetted, SourceFile):
            files.append(vetted)
            continue
        if isinstance(vetted, SkippedFile) and vetted.path == rel and _walk_says(vetted):
            skipped.append(vetted)
        gone.add(rel)
        gone.update(store.paths_under(rel))  # a folder removed: every file it held
    return files, skipped, gone


def _walk_says(skip: SkippedFile) -> bool:
    """Would the walk report this skip of `vet`'s? Not a path it never lists (ignored, in
    the index's folder or in a folder it never enters)."""
    return not (
        skip.reason is SkipReason.NOT_A_FILE and skip.detail.startswith(("ignored by", "inside "))
    )


def _check_digest(
    store: Store, settings: Settings, excludes: Sequence[Path], *, check: bool
) -> tuple[str | None, bool]:
    """The tree's digest for the no-change check, and whether git made it: git's
    fingerprint, else (when there is a record to `check` against) the last plain walk's
    stat made again."""
    digest = _tree_digest(settings, excludes)
    if digest is not None or not check:
        return digest, digest is not None
    key = WATCHED_META_PREFIX + settings.chunking_spec.key
    return _watched_digest(store, settings, excludes, key), False


def _tree_digest(settings: Settings, excludes: Sequence[Path]) -> str | None:
    """git's fingerprint of the tree and of the reading rules (None: git cannot vouch)."""
    digest = fingerprint(
        settings.repo_root,
        max_file_bytes=settings.max_file_bytes,
        exclude=excludes,
        include_secret_files=settings.include_secret_files,
    )
    return _with_reading_rules(digest, settings)


def _watched_digest(
    store: Store, settings: Settings, excludes: Sequence[Path], key: str
) -> str | None:
    """The last plain walk's digest made again from the stat of the paths it watched (see
    `walk.stat_fingerprint`); None when no walk recorded them."""
    raw = store.get_meta(key)
    try:
        watched = parse_json(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(watched, list) or not all(isinstance(p, str) for p in watched):
        return None
    digest = stat_fingerprint(
        settings.repo_root,
        watched,
        max_file_bytes=settings.max_file_bytes,
        exclude=excludes,
        include_secret_files=settings.include_secret_files,
    )
    return _with_reading_rules(digest, settings)


def _with_reading_rules(digest: str | None, settings: Settings) -> str | None:
    """A tree's digest with the rules of reading, which decide what is indexed too."""
    return None if digest is None else f"{digest}:{settings.max_line_chars}"


def _plan(
    build: _Build, files: Sequence[SourceFile], chunker_key: str, *, cut_by_this_chunker: bool
) -> tuple[list[_Job], set[str], bool]:
    """Compare the walk with what the store holds: the files to read or to chunk again (the
    jobs), the files already cut by this chunker, and whether every chunk is this chunker's
    from now on. Files gone from the repository are deleted, and stored files are scanned
    again when the secret scanner changed."""
    store, run, clock = build.store, build.run, build.clock
    t = clock()
    states = store.file_states()
    chunked = store.chunked_paths(build.settings.chunking_spec.key)
    if not cut_by_this_chunker and chunked:
        chunked = set()  # cut by another chunker version: cut every file again
    elif not cut_by_this_chunker:  # nothing cut yet: every chunk from now on is this version's
        store.set_meta(chunker_key, CHUNKER_VERSION)
        cut_by_this_chunker = True
    current = {f.path for f in files}
    gone = sorted(p for p in states if p not in current)
    jobs = _jobs(files, states, chunked, run)
    run.done = run.unchanged
    if gone:
        store.delete_files(gone)
        run.removed = len(gone)
    run.seconds["store"] += clock() - t
    if store.get_meta(secret_scan.SCANNER_META_KEY) != secret_scan.SCANNER_VERSION:
        _rescan_stored(store, states, {j.file.path for j in jobs if not j.from_store}, run, clock)
    return jobs, chunked, cut_by_this_chunker


def _jobs(
    files: Sequence[SourceFile], states: dict[str, FileState], chunked: set[str], run: _Run
) -> list[_Job]:
    """The files that need work: read again when their stat changed (or they could not be
    read), chunked again from the stored text when this chunking lacks them; the rest count
    as unchanged."""
    jobs: list[_Job] = []
    for file in files:
        state = states.get(file.path)
        if (
            state is None
            or state.size != file.size
            or state.mtime_ns != file.mtime_ns
            or state.skip_reason == SkipReason.UNREADABLE.name
        ):
            jobs.append(_Job(file, state, from_store=False))
        elif state.skip_reason is not None:
            run.skipped.append(_skip_from_state(state))
            run.unchanged += 1
        elif file.path in chunked and state.language == file.language:
            run.invalid[file.path] = state.invalid_utf8
            run.unchanged += 1
        else:
            jobs.append(_Job(file, state, from_store=True))
    return jobs


def _index_jobs(
    build: _Build,
    jobs: Sequence[_Job],
    chunked: set[str],
    *,
    cancel: threading.Event | None,
    batch_files: int,
    batch_bytes: int,
    workers: int | None,
) -> tuple[int, bool, bool]:
    """Read, chunk and write the jobs in batches of at most `batch_files` files or
    `batch_bytes` read, each committed whole: (how many jobs are done, whether `cancel`
    stopped it, whether Ctrl-C did)."""
    settings, store, run, clock = build.settings, build.store, build.run, build.clock
    root, spec = settings.repo_root, settings.chunking_spec
    cancelled = False
    interrupted = False
    position = 0
    feed = _Feed(
        jobs,
        store,
        run,
        clock,
        workers=_worker_count(workers),
        prepare=lambda job, stored: _prepare(job, stored, root, spec, settings, chunked, clock),
    )
    try:
        while position < len(jobs) and not cancelled and not interrupted:
            batch_start = position
            batch_snapshot = _snapshot(run)
            read_in_batch = 0
            writes = _Writes()
            try:
                with store.batch():
                    try:
                        while position < len(jobs):
                            if (
                                position - batch_start >= batch_files
                                or read_in_batch >= batch_bytes
                            ):
                                break
                            if cancel is not None and cancel.is_set():
                                cancelled = True
                                break
                            read_in_batch += _apply(feed.next(), writes, run)
                            position += 1
                            run.done += 1
                            build.emit("index")
                    except KeyboardInterrupt:
                        # The files finished so far are written and committed; every write
                        # leaves a consistent state, so a half-done one is redone next run.
                        interrupted = True
                    t = clock()
                    writes.flush(store, spec.key)
                run.seconds["store"] += clock() - t
            except KeyboardInterrupt:
                _restore(run, batch_snapshot)  # the commit itself was interrupted: batch lost
                position = batch_start
                interrupted = True
    finally:
        feed.close()
    return position, cancelled, interrupted


def _remember_fresh(
    store: Store,
    spec_key: str,
    digest: str,
    report: IndexReport,
    watched: Sequence[str] = (),
) -> None:
    """Record the fingerprint a complete build started from, with what it skipped and which
    files had invalid UTF-8, so the next build of this chunking (`spec_key`) can answer
    without a walk (and a plain walk's `watched` paths). Not when a file could not be read:
    that one is retried every run."""
    if any(s.reason is SkipReason.UNREADABLE for s in report.skipped):
        return
    if watched:
        store.set_meta(WATCHED_META_PREFIX + spec_key, json.dumps(list(watched)))  # ASCII
    record = {
        "digest": digest,
        "files_total": report.files_total,
        "skipped": [[s.path, s.reason.name, s.detail] for s in report.skipped],
        "invalid_utf8": list(report.invalid_utf8),
    }
    store.set_meta(FRESH_META_PREFIX + spec_key, json.dumps(record))


def _unchanged_report(
    store: Store,
    settings: Settings,
    key: str,
    digest: str,
    run: _Run,
    clock: Callable[[], float],
    *,
    is_git: bool,
) -> IndexReport | None:
    """The report of a build that finds nothing changed, when the fingerprint recorded by
    the last complete build matches `digest`; None when a walk must decide."""
    raw = store.get_meta(key)
    if not raw or store.get_meta(secret_scan.SCANNER_META_KEY) != secret_scan.SCANNER_VERSION:
        return None
    try:
        record = parse_json(raw)
        if record.get("digest") != digest:
            return None
        run.files_total = run.unchanged = run.done = int(record["files_total"])
        run.skipped = [SkippedFile(p, SkipReason[r], d) for p, r, d in record["skipped"]]
        run.invalid = dict.fromkeys(record["invalid_utf8"], True)
    except (ValueError, KeyError, TypeError):
        return None
    run.seconds["walk"] += clock() - run.started
    return _report(run, settings, store, is_git=is_git, cancelled=False, left=0, clock=clock)


def _worker_count(requested: int | None) -> int:
    """Threads for reading and chunking: tree-sitter and file reads release the GIL."""
    if requested is not None:
        return max(1, requested)
    return max(1, min(4, os.cpu_count() or 1))


@dataclass
class _Prepared:
    """A file read and chunked off the main thread, ready to be written to the store."""

    job: _Job
    skip: SkippedFile | None = None
    text: str | None = None
    digest: str = ""
    invalid: bool = False
    chunks: list[Chunk] | None = None  # None: content unchanged and already chunked
    hashes: list[str] | None = None  # text_hash of each chunk, computed off the main thread
    findings: tuple[SecretFinding, ...] | None = None  # None: the text was not scanned
    was_read: bool = False
    same_content: bool = False
    read_s: float = 0.0
    scan_s: float = 0.0
    chunk_s: float = 0.0


class _Feed:
    """Prepares jobs ahead of the writer on a small thread pool, handing them back in order.

    Text stored in the index is fetched here on the calling thread, so worker threads never
    touch the database (which is inside the writer's transaction).
    """

    def __init__(
        self,
        jobs: Sequence[_Job],
        store: Store,
        run: _Run,
        clock: Callable[[], float],
        *,
        workers: int,
        prepare: Callable[[_Job, str | None], _Prepared],
    ) -> None:
        self._jobs = jobs
        self._store = store
        self._run = run
        self._clock = clock
        self._prepare = prepare
        self._next = 0
        self._pool = ThreadPoolExecutor(workers, "coderag-index") if workers > 1 else None
        self._window = workers * 4
        self._pending: deque[Future[_Prepared]] = deque()

    def _stored_text(self, job: _Job) -> str | None:
        if not job.from_store:
            return None
        t = self._clock()
        text = self._store.file_text(job.file.path)
        self._run.seconds["store"] += self._clock() - t
        return text

    def next(self) -> _Prepared:
        if self._pool is None:
            job = self._jobs[self._next]
            self._next += 1
            return self._prepare(job, self._stored_text(job))
        while self._next < len(self._jobs) and len(self._pending) < self._window:
            job = self._jobs[self._next]
            self._next += 1
            self._pending.append(self._pool.submit(self._prepare, job, self._stored_text(job)))
        return self._pending.popleft().result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _prepare(
    job: _Job,
    stored_text: str | None,
    root: Path,
    spec: ChunkingSpec,
    settings: Settings,
    chunked: set[str],
    clock: Callable[[], float],
) -> _Prepared:
    """Read (unless the text came from the store), hash and chunk one file; no database access."""
    file, previous = job.file, job.previous
    out = _Prepared(job)
    text = stored_text
    if text is None or previous is None:
        t = clock()
        outcome = read_source(
            root,
            file,
            max_line_chars=settings.max_line_chars,
            max_file_bytes=settings.max_file_bytes,
        )
        out.was_read = True
        if isinstance(outcome, SkippedFile):
            out.skip = outcome
            out.read_s = clock() - t
            return out
        text, out.invalid = outcome
        raw = text.encode("utf-8", "surrogatepass")
        out.digest = utf8_hash(raw)  # text_hash(text), sharing the bytes with the scan
        out.read_s = clock() - t
        out.same_content = (
            previous is not None
            and previous.skip_reason is None
            and previous.content_hash == out.digest
            and previous.language == file.language
        )
        if not out.same_content:
            t = clock()
            out.findings = secret_scan.scan_text(file.path, text, raw)
            out.scan_s = clock() - t
        if out.same_content and file.path in chunked:
            return out
    else:
        out.digest, out.invalid = previous.content_hash, previous.invalid_utf8
    out.text = text
    t = clock()
    out.chunks = chunk_file(file.path, text, file.language, spec)
    out.hashes = [text_hash(c.text) for c in out.chunks]
    out.chunk_s = clock() - t
    return out


@dataclass
class _Writes:
    """The store writes of one batch, issued together so the writer makes few SQL calls."""

    deleted: list[str] = field(default_factory=list)
    files: list[tuple[FileState, str | None]] = field(default_factory=list)
    stats: list[tuple[str, int, int]] = field(default_factory=list)
    chunks: list[tuple[str, Sequence[Chunk], Sequence[str] | None]] = field(default_factory=list)
    secrets: list[tuple[str, Sequence[SecretFinding]]] = field(default_factory=list)

    def flush(self, store: Store, spec_key: str) -> None:
        # Order matters: new content drops a file's old chunks (and findings) before its new
        # ones go in.
        store.delete_files(self.deleted)
        store.put_files(self.files)
        store.update_stats(self.stats)
        store.put_chunks_many(spec_key, self.chunks)
        store.put_secrets(self.secrets)


def _apply(prepared: _Prepared, writes: _Writes, run: _Run) -> int:
    """Queue one prepared file's writes and count it; returns the bytes read for it."""
    file, previous = prepared.job.file, prepared.job.previous
    run.seconds["read"] += prepared.read_s
    run.seconds["scan"] += prepared.scan_s
    run.seconds["chunk"] += prepared.chunk_s
    read_bytes = file.size if prepared.was_read else 0
    if prepared.was_read:
        run.files_read += 1
        run.bytes_read += read_bytes
    skip = prepared.skip
    if skip is not None:
        run.skipped.append(skip)
        if skip.reason is SkipReason.UNREADABLE:
            # Not remembered: a permission fix does not change mtime, so retry next run.
            if previous is not None:
                writes.deleted.append(file.path)
        else:
            writes.files.append(
                (
                    FileState(
                        path=file.path,
                        size=file.size,
                        mtime_ns=file.mtime_ns,
                        content_hash="",
                        language=file.language,
                        skip_reason=skip.reason.name,
                        skip_detail=skip.detail,
                    ),
                    None,
                )
            )
        return read_bytes
    run.invalid[file.path] = prepared.invalid
    if prepared.findings is not None:
        writes.secrets.append((file.path, prepared.findings))
        run.scanned += 1
    if prepared.same_content:
        writes.stats.append((file.path, file.size, file.mtime_ns))
    elif prepared.was_read or (previous is not None and previous.language != file.language):
        state = FileState(
            path=file.path,
            size=file.size,
            mtime_ns=file.mtime_ns,
            content_hash=prepared.digest,
            language=file.language,
            skip_reason=None,
            invalid_utf8=prepared.invalid,
        )
        writes.files.append((state, prepared.text))
    if prepared.chunks is None:
        run.unchanged += 1
    else:
        writes.chunks.append((file.path, prepared.chunks, prepared.hashes))
        run.indexed += 1
        run.chunks_written += len(prepared.chunks)
    return read_bytes


def _skip_from_state(state: FileState) -> SkippedFile:
    try:
        reason = SkipReason[state.skip_reason or ""]
    except KeyError:
        reason = SkipReason.UNREADABLE
    return SkippedFile(state.path, reason, state.skip_detail)


def _snapshot(run: _Run) -> tuple[int, int, int, int, int, int, int, dict[str, bool]]:
    return (
        run.indexed,
        run.unchanged,
        run.files_read,
        run.bytes_read,
        run.chunks_written,
        run.scanned,
        len(run.skipped),
        dict(run.invalid),
    )


def _restore(run: _Run, snap: tuple[int, int, int, int, int, int, int, dict[str, bool]]) -> None:
    """Undo the counters of a batch that was rolled back."""
    (
        run.indexed,
        run.unchanged,
        run.files_read,
        run.bytes_read,
        run.chunks_written,
        run.scanned,
        n_skipped,
        run.invalid,
    ) = snap
    del run.skipped[n_skipped:]


def _rescan_stored(
    store: Store,
    states: dict[str, FileState],
    to_read: set[str],
    run: _Run,
    clock: Callable[[], float],
) -> None:
    """Scan every stored text again for secrets when the scanner changed (a new detector or
    limit); files about to be read again are scanned then. No file is read from disk."""
    t = clock()
    found: list[tuple[str, Sequence[SecretFinding]]] = []
    for path, state in states.items():
        if state.skip_reason is not None or path in to_read:
            continue
        text = store.file_text(path)
        if text is not None:
            found.append((path, secret_scan.scan_text(path, text)))
            run.scanned += 1
    with store.batch():
        store.put_secrets(found)
        store.set_meta(secret_scan.SCANNER_META_KEY, secret_scan.SCANNER_VERSION)
    run.seconds["scan"] += clock() - t


def _report(
    run: _Run,
    settings: Settings,
    store: Store,
    *,
    is_git: bool,
    cancelled: bool,
    left: int,
    clock: Callable[[], float],
) -> IndexReport:
    t = clock()
    n_chunks = run.chunks
    if n_chunks is None:
        n_chunks = store.chunk_count(settings.chunking_spec.key)
    secrets = tuple(
        (path, secret_scan.kinds_in(findings, 1, max(f.end_line for f in findings)))
        for path, findings in sorted(store.secrets().items())
    )
    run.seconds["store"] += clock() - t
    return IndexReport(
        files_total=run.files_total,
        files_indexed=run.indexed,
        files_unchanged=run.unchanged,
        files_removed=run.removed,
        chunks=n_chunks,
        skipped=tuple(sorted(run.skipped, key=lambda s: s.path)),
        invalid_utf8=tuple(sorted(p for p, bad in run.invalid.items() if bad)),
        stage_seconds=dict(run.seconds),
        elapsed_s=clock() - run.started,
        cancelled=cancelled,
        notice=store.notice,
        files_read=run.files_read,
        bytes_read=run.bytes_read,
        chunks_written=run.chunks_written,
        spec_key=settings.chunking_spec.key,
        index_path=str(store.path),
        is_git=is_git,
        files_left=left,
        files_scanned=run.scanned,
        secrets=secrets,
    )


def open_index(settings: Settings, **kw: Any) -> tuple[Store, IndexReport]:
    """Open the repository's index and bring it up to date (keyword arguments go to build_index)."""
    store = Store.open(settings.index_path)
    try:
        report = build_index(settings, store, **kw)
    except BaseException:
        store.close()
        raise
    return store, report


__all__: Sequence[str] = (
    "IndexInterrupted",
    "IndexProgress",
    "IndexReport",
    "build_index",
    "index_excludes",
    "open_index",
)
