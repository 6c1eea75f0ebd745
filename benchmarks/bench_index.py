"""Index the running interpreter's standard library and print per-stage throughput.

Usage: PYTHONPATH=. python benchmarks/bench_index.py [--source DIR] [--chunking lines,ast]
                                                     [--runs N] [--compare-tree-sitter]

The stdlib folder (`sysconfig.get_paths()["stdlib"]`) is copied to a temporary folder first,
without `site-packages` (installed third-party code, not the standard library) and
`__pycache__` (bytecode caches), so the "touch one file" step can edit a file without
touching the real interpreter. The copy keeps modification times (shutil.copy2). For each
chunking strategy it prints: the cold build with seconds, files/s and MB/s per stage; the
no-change re-run and its speed-up; the files re-chunked after editing one file (must be
1); and the time to load every chunk of the setting back from the store.
The cold build runs --runs times (fresh index folders; medians printed), each followed by:
* `defs`: a cold build of the chunks' definitions alone, in this process
  (`core.rank.definitions`, what the code signals add to the lexical stage): their own cost,
  wall and CPU, as a share of the cold index's;
* `lexical`: the way from the cold index to a ready lexical stage, as the engine takes it
  (chunk list, then `load_or_build_bm25` with nothing saved), three times: the code signals
  off (BM25 alone), the definitions built in this process, and built by a second process
  while BM25 builds (`core.rank.definitions_process`, its thresholds set aside). What each
  adds to BM25 alone (median over runs of each run's difference) is printed as a share of
  the cold index + BM25 and of the cold index alone, with the CPU it costs here and in the
  second process.
--compare-tree-sitter also times the definitions with every file parsed by tree-sitter
(Python too, instead of scanned) and prints how far the two agree on the Python files' names.
Targets on a 2-core machine: cold `lines` <= 10 s, cold `ast` <= 30 s, re-run >= 10x faster,
definitions <= +30% of the cold index: checked on the wall time the definitions add to a
cold build as shipped (the `lexical` variant `definitions_process`'s thresholds pick for the
corpus on this machine), as a share of the cold index's wall time alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from coderag_tui.core.index.chunk_list import ChunkList, chunk_list_dir
from coderag_tui.core.index.indexer import IndexReport, build_index
from coderag_tui.core.index.store import Store
from coderag_tui.core.rank import definitions_process
from coderag_tui.core.rank.definitions import (
    MAX_DEPTH,
    SCANNERS,
    _file_text,
    _files,
    load_or_build_definitions,
    parsed_definitions,
)
from coderag_tui.core.rank.lexical import load_or_build_bm25
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings

TARGETS = {"lines": 10.0, "ast": 30.0}
# The wall time the definitions add to a cold build as shipped (cold index to a ready lexical
# stage, definitions on minus off), at most this share of the cold index's wall time.
DEFINITIONS_SHARE = 0.30
# How the definitions are built when measuring a ready lexical stage (see `ready_lexical`).
VARIANTS = ("off", "in-process", "second process")


def copy_corpus(source: Path, target: Path) -> tuple[int, int]:
    """Copy `source` without site-packages and __pycache__; return (files, bytes) copied."""
    ignore = shutil.ignore_patterns("site-packages", "__pycache__")
    shutil.copytree(source, target, symlinks=True, ignore=ignore)
    files = [p for p in target.rglob("*") if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files)


def _rate(count: float, seconds: float) -> str:
    return f"{count / seconds:10.0f}" if seconds > 0 else f"{'inf':>10}"


def stage_table(report: IndexReport, corpus_bytes: int) -> list[str]:
    """Seconds, files/s and MB/s per stage (the walk is measured over every candidate)."""
    rows = [f"    {'stage':<6} {'seconds':>8} {'files/s':>10} {'MB/s':>8}"]
    for stage, seconds in report.stage_seconds.items():
        if stage == "walk":
            files, nbytes = report.files_total, corpus_bytes
        elif stage == "read":
            files, nbytes = report.files_read, report.bytes_read
        else:
            files, nbytes = report.files_indexed, report.bytes_read
        mbps = f"{nbytes / 1e6 / seconds:8.1f}" if seconds > 0 else f"{'inf':>8}"
        rows.append(f"    {stage:<6} {seconds:8.3f} {_rate(files, seconds)} {mbps}")
    return rows


def cold_definitions(
    store: Store, settings: Settings, chunks: list[Chunk], *, parse_all: bool
) -> tuple[float, float]:
    """Wall and process CPU seconds to build and save the definitions with nothing saved
    before (no content cache either)."""
    shutil.rmtree(settings.index_path.with_suffix(".bm25"), ignore_errors=True)
    t, cpu = time.perf_counter(), time.process_time()
    load_or_build_definitions(store, settings, chunks, scanners={} if parse_all else SCANNERS)
    return time.perf_counter() - t, time.process_time() - cpu


def ready_lexical(
    store: Store, settings: Settings, variant: str
) -> tuple[float, float, float, str]:
    """Wall, this process's CPU and its children's CPU seconds from nothing saved beside the
    index (no BM25, no definitions, no chunk list) to a ready lexical stage, as the engine
    gets it after a cold index: `ChunkList.load`, then `load_or_build_bm25` with the code
    signals off ("off": BM25 alone) or on, the definitions built in this process
    ("in-process") or by a second process while BM25 builds ("second process"), the
    thresholds of `definitions_process` set aside. With what `definitions_process` said."""
    shutil.rmtree(settings.index_path.with_suffix(".bm25"), ignore_errors=True)
    key = settings.chunking_spec.key
    settings = dataclasses.replace(settings, signals=variant != "off")
    saved = definitions_process.MIN_CHUNKS, definitions_process.MIN_CORES
    forced = {"in-process": (sys.maxsize, 0), "second process": (0, 1)}
    definitions_process.MIN_CHUNKS, definitions_process.MIN_CORES = forced.get(variant, saved)
    definitions_process.last_outcome = ""
    try:
        t, cpu = time.perf_counter(), os.times()
        chunks = ChunkList.load(store, key, chunk_list_dir(settings.index_path, key))
        load_or_build_bm25(store, settings, chunks)
        wall, end = time.perf_counter() - t, os.times()
    finally:
        definitions_process.MIN_CHUNKS, definitions_process.MIN_CORES = saved
    own = end.user + end.system - cpu.user - cpu.system
    children = end.children_user + end.children_system - cpu.children_user - cpu.children_system
    return wall, own, children, definitions_process.last_outcome


def shipped_variant(n_chunks: int) -> str:
    """Which of the variants `load_or_build_bm25` picks for a cold build of `n_chunks` chunks
    on this machine."""
    cores = definitions_process._cores()
    if n_chunks >= definitions_process.MIN_CHUNKS and cores >= definitions_process.MIN_CORES:
        return "second process"
    return "in-process"


def share(part: list[tuple[float, float]], whole: list[tuple[float, float]]) -> str:
    """Medians of `part` (wall, CPU) and their shares of the medians of `whole`."""
    wall, cpu = (statistics.median(x[i] for x in part) for i in (0, 1))
    whole_wall, whole_cpu = (statistics.median(x[i] for x in whole) for i in (0, 1))
    return (
        f"{wall:6.2f} s = +{100 * wall / whole_wall:.0f}% of the cold index's wall time "
        f"(process CPU {cpu:.2f} s = +{100 * cpu / whole_cpu:.0f}% of its CPU)"
    )


def agreement(chunks: list[Chunk]) -> str:
    """How far the scanners and tree-sitter agree on the (line, name, kind) of each definition
    in the files the scanners read: recall and precision against tree-sitter's."""
    parsed = scanned = both = files = differ = 0
    for ids in _files(chunks).values():
        language = chunks[ids[0]].language
        scanner = SCANNERS.get(language) if language else None
        if scanner is None:
            continue
        text = _file_text(chunks, ids)
        want = set(parsed_definitions(text.encode("utf-8", "surrogatepass"), language))
        got = set(scanner(text, MAX_DEPTH))
        parsed, scanned, both = parsed + len(want), scanned + len(got), both + len(want & got)
        files, differ = files + 1, differ + (want != got)
    return (
        f"scanned vs parsed on {files} files: recall {100 * both / max(parsed, 1):.2f}%, "
        f"precision {100 * both / max(scanned, 1):.2f}% ({parsed} parsed names, {scanned} "
        f"scanned; {differ} files differ)"
    )


def lexical_summary(
    lexical: dict[str, list[tuple[float, float, float]]],
    outcomes: dict[str, str],
    colds: list[tuple[float, float]],
    n_chunks: int,
    own_build: float,
) -> bool:
    """Print what the definitions add to a cold build's wall time (median over runs of each
    run's difference to BM25 alone) and check the target on the variant shipped
    (`own_build`: the median wall time of their build alone, for comparison)."""
    cold_wall = statistics.median(wall for wall, _ in colds)
    off = lexical["off"]
    base = statistics.median(c + w for (c, _), (w, _, _) in zip(colds, off, strict=True))
    base_cpu = statistics.median(c + own for (_, c), (_, own, _) in zip(colds, off, strict=True))
    print(
        f"  lexical: {base:6.2f} s median from the start of a cold index to a ready lexical "
        f"stage with the code signals off (cold index + chunk list + BM25; process CPU "
        f"{base_cpu:.2f} s); with the definitions, median over runs of each run's extra:"
    )
    added: dict[str, float] = {}
    for variant in VARIANTS[1:]:
        pairs = list(zip(lexical[variant], off, strict=True))
        extra = [w - w0 for (w, _, _), (w0, _, _) in pairs]
        added[variant] = statistics.median(extra)
        own = statistics.median(c - c0 for (_, c, _), (_, c0, _) in pairs)
        children = statistics.median(k for (_, _, k), _ in pairs)
        said = f" ({outcomes[variant]})" if variant == "second process" else ""
        print(
            f"    {variant + ':':<16}{added[variant]:+6.2f} s wall (runs {min(extra):+.2f} to "
            f"{max(extra):+.2f}) = {100 * added[variant] / base:+.0f}% of the cold index + BM25 "
            f"= {100 * added[variant] / cold_wall:+.0f}% of the cold index alone; CPU "
            f"{own:+.2f} s here, {children:.2f} s in a second process{said}"
        )
    shipped = shipped_variant(n_chunks)
    why = (
        f"{n_chunks} chunks >= {definitions_process.MIN_CHUNKS} and "
        f"{definitions_process._cores()} cores >= {definitions_process.MIN_CORES}"
        if shipped == "second process"
        else f"{n_chunks} chunks < {definitions_process.MIN_CHUNKS} or "
        f"{definitions_process._cores()} cores < {definitions_process.MIN_CORES}"
    )
    met = added[shipped] <= DEFINITIONS_SHARE * cold_wall
    print(
        f"  target:  definitions <= +{100 * DEFINITIONS_SHARE:.0f}% of the cold index's wall "
        f"time, checked on the wall time they add to a cold build as shipped (here "
        f"{shipped}: {why}): {100 * added[shipped] / cold_wall:+.0f}% "
        + ("met" if met else "MISSED")
        + f" (their own build alone, `defs`: {100 * own_build / cold_wall:+.0f}%)"
    )
    return met


def run_strategy(
    repo: Path, index_root: Path, strategy: str, corpus_bytes: int, runs: int, *, compare: bool
) -> bool:
    print(f"\n== chunking {Settings(chunking=strategy).chunking_spec.key} ==")
    colds: list[tuple[float, float]] = []  # (wall, process CPU) seconds
    defs: list[tuple[float, float]] = []
    parsed: list[tuple[float, float]] = []
    # per variant: (wall, process CPU, children's CPU) from the cold index to a ready lexical
    # stage, the cold index left out (it is the same for every variant of a run)
    lexical: dict[str, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    outcomes: dict[str, str] = {}
    for run in range(runs):
        settings = Settings(
            repo=repo, index_dir=index_root / f"{strategy}-{run}", chunking=strategy
        )
        store = Store.open(settings.index_path)
        cpu = time.process_time()
        cold = build_index(settings, store)
        cold_cpu = time.process_time() - cpu
        chunks = store.chunks(settings.chunking_spec.key)
        defs.append(cold_definitions(store, settings, chunks, parse_all=False))
        if compare:
            parsed.append(cold_definitions(store, settings, chunks, parse_all=True))
        colds.append((cold.elapsed_s, cold_cpu))
        if run == 0:  # untimed: the process's first BM25 build pays for imports and caches
            ready_lexical(store, settings, "in-process")
        for variant in VARIANTS[run % 3 :] + VARIANTS[: run % 3]:  # each first once in 3 runs
            wall, own, children, outcomes[variant] = ready_lexical(store, settings, variant)
            lexical[variant].append((wall, own, children))
        bm25 = lexical["off"][-1][0]
        print(
            f"  cold {run + 1}/{runs}: {cold.elapsed_s:6.2f} s (process CPU {cold_cpu:.2f} s); "
            f"definitions {defs[-1][0]:.2f} s (CPU {defs[-1][1]:.2f} s)"
            + (
                f", all parsed by tree-sitter {parsed[-1][0]:.2f} s (CPU {parsed[-1][1]:.2f} s)"
                if compare
                else ""
            )
            + f"; then chunk list + BM25 {bm25:.2f} s, with the definitions in-process "
            f"{lexical['in-process'][-1][0] - bm25:+.2f} s, in a second process "
            f"{lexical['second process'][-1][0] - bm25:+.2f} s"
        )
        if run < runs - 1:
            store.close()
    ok = True
    median = statistics.median(wall for wall, _ in colds)
    print(
        f"  cold:    {median:6.2f} s median of {runs} (process CPU "
        f"{statistics.median(cpu for _, cpu in colds):.2f} s)  files {cold.files_total} "
        f"(indexed {cold.files_indexed}, skipped {len(cold.skipped)}), "
        f"{cold.bytes_read / 1e6:.1f} MB read, {cold.chunks} chunks "
        f"[target <= {TARGETS.get(strategy, float('inf')):.0f} s]"
    )
    print("\n".join(stage_table(cold, corpus_bytes)))
    if median > TARGETS.get(strategy, float("inf")):
        ok = False
    print(
        f"  defs:    {share(defs, colds)}, median cold build of the definitions alone, in "
        "this process (load_or_build_definitions with nothing saved: their own cost)"
    )
    if compare:
        print(f"  parsed:  {share(parsed, colds)}, every file parsed by tree-sitter")
        print(f"  agree:   {agreement(chunks)}")
    own_build = statistics.median(wall for wall, _ in defs)
    ok = ok and lexical_summary(lexical, outcomes, colds, cold.chunks, own_build)

    cpu = time.process_time()
    again = build_index(settings, store)
    again_cpu = time.process_time() - cpu
    ratio = cold.elapsed_s / again.elapsed_s if again.elapsed_s > 0 else float("inf")
    print(
        f"  re-run:  {again.elapsed_s:6.3f} s  ({ratio:.1f}x faster; files read "
        f"{again.files_read}, unchanged {again.files_unchanged}/{again.files_total}) "
        f"[target >= 10x]; process CPU {again_cpu:.3f} s"
    )
    print("  " + ", ".join(f"{k} {v:.3f} s" for k, v in again.stage_seconds.items()))
    ok = ok and ratio >= 10 and again.files_read == 0

    victim = sorted(repo.glob("json/*.py"))[0] if (repo / "json").is_dir() else None
    if victim is None:
        victim = next(p for p in sorted(repo.rglob("*.py")) if p.is_file())
    with victim.open("a", encoding="utf-8") as handle:
        handle.write(f"\n# touched by bench_index at {time.time()}\n")
    touched = build_index(settings, store)
    print(
        f"  edit 1:  {touched.elapsed_s:6.3f} s  re-chunked {touched.files_indexed} file(s), "
        f"read {touched.files_read} ({victim.relative_to(repo)}) [must be 1]"
    )
    ok = ok and touched.files_indexed == 1

    t, cpu = time.perf_counter(), time.process_time()
    chunks = store.chunks(settings.chunking_spec.key)
    load_s, load_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(
        f"  load:    {load_s:6.3f} s  for {len(chunks)} chunks [target < 0.3 s]; "
        f"process CPU {load_cpu:.3f} s"
    )
    size_mb = sum(p.stat().st_size for p in settings.index_path.parent.glob("*")) / 1e6
    print(f"  index:   {size_mb:.1f} MB on disk")
    store.close()
    store = Store.open(settings.index_path)  # a fresh connection, as the engine's first build
    t = time.perf_counter()
    damage = store.damage()
    print(
        f"  check:   {(time.perf_counter() - t) * 1000:6.1f} ms  SQLite's page check "
        f"(PRAGMA quick_check), once per opened index before its first build: "
        f"{damage or 'sound'}"
    )
    store.close()
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--chunking", default="lines,ast")
    parser.add_argument("--runs", type=int, default=3, help="cold builds (medians printed)")
    parser.add_argument(
        "--compare-tree-sitter",
        action="store_true",
        help="also time the definitions with every file parsed, and print the agreement",
    )
    args = parser.parse_args(argv)
    # Wall times on a shared machine grow with its load; CPU times show the work itself.
    print(
        "load average (1, 5, 15 min): "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + f" on {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory(prefix="coderag-bench-") as tmp:
        repo = Path(tmp) / "stdlib"
        t = time.perf_counter()
        n_files, n_bytes = copy_corpus(args.source, repo)
        print(
            f"corpus: {args.source} (without site-packages, __pycache__) -> {n_files} files, "
            f"{n_bytes / 1e6:.1f} MB, {sum(1 for _ in repo.rglob('*.py'))} .py "
            f"(copied in {time.perf_counter() - t:.1f} s)"
        )
        results = [
            run_strategy(
                repo,
                Path(tmp) / "index",
                strategy.strip(),
                n_bytes,
                max(args.runs, 1),
                compare=args.compare_tree_sitter,
            )
            for strategy in args.chunking.split(",")
        ]
    print("\nall targets met" if all(results) else "\nSOME TARGETS MISSED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
