"""The definitions built by a third process that follows a repository's first index as it is
written: the very definitions (and parsed files' cache) this process would build, whether
the child saw every file whole as it was written or only some of them, and every way it can
go wrong (killed, told of other chunks, stopped by Ctrl-C) ends with them built here and no
process left behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import status_cmd
from coderag_tui.core.engine import Engine
from coderag_tui.core.index import indexer
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.indexer import IndexInterrupted
from coderag_tui.core.index.store import Store
from coderag_tui.core.rank import bm25_process, definitions_follow, definitions_process
from coderag_tui.core.rank.definitions import (
    Definitions,
    definitions_dir,
    known_files,
    saved_generation,
)
from coderag_tui.core.rank.lexical import BM25Index
from coderag_tui.settings import Settings
from tests.fixtures.classes_repo import make_classes_repo
from tests.fixtures.gated_definitions import gated_boot, wait_for_left_followers

# Files tree-sitter parses (Python is scanned), some long enough to take several chunks.
OTHER_LANGUAGES = {
    "web/cart.js": "".join(
        f"function addItem{n}(cart, item) {{\n  cart.push(item);\n  return cart;\n}}\n\n"
        for n in range(8)
    )
    + "class Cart {\n  total() {\n    return 0;\n  }\n}\n",
    "srv/queue.go": "package srv\n\n"
    + "".join(f"type Queue{n} struct {{\n\titems []int\n}}\n\n" for n in range(6))
    + "func (q *Queue0) Push(x int) {\n\tq.items = append(q.items, x)\n}\n",
    "core/lib.rs": "".join(
        f"pub struct Parser{n} {{\n    depth: usize,\n}}\n\n"
        f"fn parse_{n}() -> usize {{\n    {n}\n}}\n\n"
        for n in range(5)
    ),
}

# The child reads pages of 5 rows (files cut across pages) and sees the first page and none
# after: every later file is read in its final snapshot instead (what happens to rows
# committed just before the parent's word).
FIRST_PAGE_ONLY = (
    "import json, sys\n"
    "args = json.loads(sys.argv[1])\n"
    "sys.path[:] = args['path']\n"
    "from coderag_tui.core.rank import definitions_follow, definitions_process\n"
    "definitions_follow.PAGE = 5\n"
    "follow = definitions_process.followed_pages\n"
    "def first_page_only(read, parent):\n"
    "    pages = follow(read, parent)\n"
    "    yield next(pages, [])\n"
    "    for _ in pages:\n"
    "        pass\n"
    "definitions_process.followed_pages = first_page_only\n"
    "from coderag_tui.core.rank.definitions_follow import main\n"
    "sys.exit(main(args))\n"
)


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both followers for any corpus on any machine (the thresholds are about speed)."""
    monkeypatch.setattr(bm25_process, "MIN_BYTES", 0)
    monkeypatch.setattr(definitions_process.Follower, "min_chunks", 0)
    monkeypatch.setattr(definitions_process, "MIN_CORES", 1)
    definitions_follow.last_outcome = ""


def _repo(root: Path) -> Path:
    make_classes_repo(root)
    for path, text in OTHER_LANGUAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def settings(tmp_path: Path, index_dir: Path) -> Settings:
    """A first index that waits for the follower (the background case has tests of its own)."""
    return Settings(
        repo=_repo(tmp_path / "repo"),
        index_dir=index_dir,
        chunk_lines=8,
        embed_backend="none",
        definitions_background=False,
    )


def first_index(settings: Settings) -> BM25Index:
    engine = Engine(settings)
    lexical = engine.update_index(settings)
    assert isinstance(lexical.chunks, ChunkList) and isinstance(lexical.bm25, BM25Index)
    engine.close()
    return lexical.bm25


def built_here(settings: Settings, tmp_path: Path) -> tuple[Definitions, dict[str, Any]]:
    """The definitions of the same repository built in this process, and the parsed files'
    cache it keeps (in an index of its own)."""
    own = settings.with_(index_dir=tmp_path / "here")
    engine = Engine(own)
    lexical = engine.update_index(own)  # too small for a follower without `any_size`
    engine.close()
    assert lexical.bm25.definitions is not None
    return lexical.bm25.definitions, known_files(definitions_dir(own))


def lookups(definitions: Definitions) -> dict[str, tuple[object, ...]]:
    keys = list(definitions._raw)
    assert len(keys) > 50
    return {key: definitions.lookup(key) for key in keys}


def test_the_follower_builds_what_this_process_would(
    settings: Settings, tmp_path: Path, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_here(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the definitions were built in this process")

    monkeypatch.setattr(Definitions, "build", not_here)
    bm25 = first_index(settings)
    monkeypatch.undo()
    assert definitions_follow.last_outcome.startswith("built and saved by a second process")
    assert bm25.definitions is not None
    here, cache = built_here(settings, tmp_path)
    assert lookups(bm25.definitions) == lookups(here)
    assert {"cart", "queue0", "parser4", "additem7"} <= set(bm25.definitions._raw)
    assert known_files(definitions_dir(settings)) == cache  # the next build parses nothing
    assert len(cache) == len(OTHER_LANGUAGES)


def test_files_the_follower_missed_are_read_at_the_end(
    settings: Settings, tmp_path: Path, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(definitions_follow, "_BOOT", FIRST_PAGE_ONLY)
    bm25 = first_index(settings)
    assert definitions_follow.last_outcome.startswith("built and saved by a second process")
    assert bm25.definitions is not None
    here, cache = built_here(settings, tmp_path)
    assert lookups(bm25.definitions) == lookups(here)
    assert known_files(definitions_dir(settings)) == cache


def test_a_follower_that_dies_leaves_the_build_to_this_process(
    settings: Settings, tmp_path: Path, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(definitions_follow, "_BOOT", "import sys\nsys.exit(1)\n")
    bm25 = first_index(settings)
    assert "failed" in definitions_follow.last_outcome
    assert bm25.definitions is not None
    assert lookups(bm25.definitions) == lookups(built_here(settings, tmp_path)[0])


def test_a_follower_told_of_other_chunks_saves_nothing(
    settings: Settings, tmp_path: Path, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = definitions_process.Follower.done
    monkeypatch.setattr(
        definitions_process.Follower, "done", lambda self, generation, n: done(self, "another", n)
    )
    bm25 = first_index(settings)
    assert "changed" in definitions_follow.last_outcome
    assert bm25.definitions is not None  # built here instead
    assert lookups(bm25.definitions) == lookups(built_here(settings, tmp_path)[0])


def test_no_follower_when_the_signals_do_not_read_definitions(
    settings: Settings, any_size: None
) -> None:
    bare = Settings(
        repo=settings.repo,
        index_dir=settings.index_dir,
        chunk_lines=8,
        embed_backend="none",
        signals=False,
    )
    store = Store.open(bare.index_path)
    assert definitions_follow.start(store, bare) is None
    assert "not wanted" in definitions_follow.last_outcome
    store.close()


def test_ctrl_c_while_indexing_stops_the_follower(
    settings: Settings, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    children: list[definitions_process.Follower] = []
    start = definitions_follow.start

    def started(*args: Any) -> definitions_process.Follower | None:
        child = start(*args)
        if child is not None:
            children.append(child)
        return child

    cut = indexer.chunk_file  # type: ignore[attr-defined]
    calls = iter(range(1000))

    def chunk_then_interrupt(*args: Any, **kw: Any) -> Any:
        if next(calls) == 4:  # Ctrl-C after a few files
            raise KeyboardInterrupt
        return cut(*args, **kw)

    monkeypatch.setattr(definitions_follow, "start", started)
    monkeypatch.setattr(indexer, "chunk_file", chunk_then_interrupt)
    engine = Engine(settings)
    with pytest.raises(IndexInterrupted):
        engine.update_index(settings)
    engine.close()
    assert children and all(c.process.poll() is not None for c in children)
    assert saved_generation(definitions_dir(settings)) is None  # nothing half-saved


@pytest.fixture
def gated(
    settings: Settings, tmp_path: Path, any_size: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Settings]]:
    """The gate file a child left to parse in the background waits for (opened at the end
    whatever happens, and the child waited for), and settings that leave it so."""
    gate = tmp_path / "gate"
    monkeypatch.setattr(definitions_follow, "_BOOT", gated_boot(gate))
    try:
        yield gate, settings.with_(definitions_background=True)
    finally:
        gate.touch()
        wait_for_left_followers()


def _never_built_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_here(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the definitions were built in this process")

    monkeypatch.setattr(Definitions, "build", not_here)


def test_a_first_index_answers_before_its_definitions_are_parsed(
    settings: Settings,
    tmp_path: Path,
    gated: tuple[Path, Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BM25 ready, the first searches rank without the definitions and say so; once the
    follower left to finish saves them, the next search uses them, never built here."""
    from coderag_tui.core.backends.local import DEFINITIONS_LATER
    from coderag_tui.core.rank.search import DEFINITIONS_PENDING

    gate, background = gated
    _never_built_here(monkeypatch)
    query = "where is addItem7 defined"
    with Engine.open(background) as engine:
        assert engine.lexical is not None and DEFINITIONS_LATER in engine.lexical.notices
        first = engine.search(query, background)
        assert DEFINITIONS_PENDING in first.notes
        labels = [label for hit in first.rankings["fused"].hits for label, _ in hit.why]
        assert labels and not any("definition" in label for label in labels)
        with Engine.open(background) as another:  # a second run meanwhile: no build either
            assert DEFINITIONS_PENDING in another.search(query, background).notes
        said = status_cmd.lines(status_cmd.describe(background))
        assert any(line.startswith("signals:") and "background" in line for line in said)
        gate.touch()
        wait_for_left_followers()
        assert definitions_follow.being_built(definitions_dir(background)) is False
        later = engine.search(query, background)
    assert DEFINITIONS_PENDING not in later.notes
    top = later.rankings["fused"].hits[0]
    assert top.chunk.path == "web/cart.js"
    assert ("definition: addItem7", pytest.approx(1.0)) in list(top.why)
    monkeypatch.undo()
    saved = Definitions.load(definitions_dir(settings))
    assert lookups(saved) == lookups(built_here(settings, tmp_path)[0])


def test_a_run_that_will_not_rank_without_them_waits_for_the_child(
    settings: Settings, gated: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`coderag eval` (definitions_background off) opening an index whose definitions a child
    is still parsing waits for it, then ranks with them, parsing nothing itself."""
    import threading

    gate, background = gated
    _never_built_here(monkeypatch)
    opener = threading.Timer(1.0, gate.touch)
    try:
        with Engine.open(background) as engine:
            assert engine.lexical is not None and engine.lexical.bm25.definitions is None
            opener.start()  # the child goes on a second after the waiting run opens
            with Engine.open(settings) as waiting:
                assert waiting.lexical is not None
                assert waiting.lexical.bm25.definitions is not None
                run = waiting.search("where is addItem7 defined", settings)
    finally:
        opener.cancel()
    assert not any("for now" in note for note in run.notes)
    assert ("definition: addItem7", pytest.approx(1.0)) in list(run.rankings["fused"].hits[0].why)


def test_an_edit_indexed_while_they_are_parsed_costs_a_delta_not_their_work(
    gated: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child reads the build it was left in one snapshot, whatever is indexed meanwhile:
    it saves their definitions, and the edit's file alone is parsed here afterwards."""
    gate, background = gated
    built: list[int] = []
    build = Definitions.build

    def counted(chunks: Any, *args: Any, **kw: Any) -> Definitions:
        built.append(len(chunks))
        return build(chunks, *args, **kw)

    monkeypatch.setattr(Definitions, "build", counted)
    with Engine.open(background) as engine:
        assert engine.lexical is not None
        total = len(engine.lexical.chunks)
        left = list(definitions_process.reap())
        (background.repo / "web/remove.js").write_text(
            "function removeItem9(cart) {}\n", encoding="utf-8"
        )
        engine.use(engine.update_index(background))  # a new generation, while it parses
        gate.touch()
        wait_for_left_followers()
        assert [p.returncode for p in left] == [definitions_process.SAVED]
        run = engine.search("where is removeItem9 defined", background)
    top = run.rankings["fused"].hits[0]
    assert top.chunk.path == "web/remove.js"
    assert any(label == "definition: removeItem9" for label, _ in top.why)
    assert built == [1]  # the new file's chunk, not the repository
    assert total > 50


def test_the_follower_left_to_finish_outlives_coderag_index(
    settings: Settings, tmp_path: Path
) -> None:
    """`coderag index` returns once BM25 is ready; its follower saves the definitions after."""
    import subprocess
    import sys
    import time

    gate = tmp_path / "gate"
    script = (
        "import sys\n"
        "from coderag_tui.core.rank import bm25_process, definitions_follow, definitions_process\n"
        "bm25_process.MIN_BYTES = 0\n"
        "definitions_process.Follower.min_chunks = 0\n"
        "definitions_process.MIN_CORES = 1\n"
        f"definitions_follow._BOOT = {gated_boot(gate)!r}\n"
        "from coderag_tui.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    directory = definitions_dir(settings)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, "index", str(settings.repo), "--index-dir",
             str(settings.index_dir), "--embed-backend", "none", "--chunk-lines", "8"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "still being parsed in the background" in done.stdout
        assert saved_generation(directory) is None and definitions_follow.being_built(directory)
    finally:
        gate.touch()  # never leave the follower waiting
    deadline = time.monotonic() + 60
    while definitions_follow.being_built(directory) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert saved_generation(directory) is not None
