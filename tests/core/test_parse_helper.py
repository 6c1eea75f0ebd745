"""The process that parses files beside the definitions child left to finish in the
background: it finds what this process would, a child whose helper dies still finds every
file's definitions, and the helper never outlives its parent."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from coderag_tui.core.rank import definitions_process
from coderag_tui.core.rank.definitions import file_found, parsed_definitions
from coderag_tui.core.rank.definitions_follow import _Followed
from coderag_tui.core.rank.parse_helper import Helper
from coderag_tui.core.records import Chunk
from tests.fixtures.orphans import outlives_its_parent

FILES = {
    "src/queue.go": (
        "go",
        "package srv\n\n"
        + "".join(f"type Queue{n} struct {{\n\titems []int\n}}\n\n" for n in range(6))
        + "func (q *Queue0) Push(x int) {\n\tq.items = append(q.items, x)\n}\n",
    ),
    "src/lib.rs": (
        "rust",
        "".join(f"pub struct Parser{n} {{\n    depth: usize,\n}}\n\n" for n in range(5)),
    ),
    "src/cart.js": (
        "javascript",
        "".join(f"function addItem{n}(cart, item) {{\n  return cart;\n}}\n\n" for n in range(8)),
    ),
    "src/map.c": (
        "c",
        "".join(f"int map_get_{n}(int key) {{\n  return key;\n}}\n" for n in range(9)),
    ),
}


@pytest.fixture
def helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[Helper]:
    monkeypatch.setattr(definitions_process, "MIN_CORES", 1)  # whatever machine runs this
    started = Helper.start()
    assert started is not None
    try:
        yield started
    finally:
        started.close()


def _chunks(path: str, language: str, text: str, lines: int = 4) -> list[Chunk]:
    """A file cut in windows of `lines` lines, as the index stores it."""
    rows = text.splitlines(keepends=True)
    return [
        Chunk(
            path, i + 1, min(i + lines, len(rows)), "lines", language, "".join(rows[i : i + lines])
        )
        for i in range(0, len(rows), lines)
    ]


def test_the_helper_finds_what_this_process_parses(helper: Helper) -> None:
    jobs = [(text.encode(), language) for language, text in FILES.values()]
    for data, language in jobs:
        assert helper.submit(data, language)
    assert len(helper.handed) == len(jobs)  # all wait in the pipe, none waited for
    answers = [helper.answer(wait=True) for _ in jobs]
    assert answers == [parsed_definitions(data, language) for data, language in jobs]
    assert all(answers) and helper.answer() is None  # nothing left


def _pages(*, copies: bool = True) -> list[list[tuple[int, Chunk]]]:
    """Each file's rows as the child reads them; with `copies`, a second copy of each file
    (the same text elsewhere: parsed once)."""
    pages: list[list[tuple[int, Chunk]]] = []
    for path, (language, text) in FILES.items():
        for name in [path, path.replace("src/", "copy/")] if copies else [path]:
            first = sum(map(len, pages)) + 1
            pages.append(list(enumerate(_chunks(name, language, text), start=first)))
    return pages


def _followed(helper: Helper | None, *, copies: bool = True) -> _Followed:
    followed = _Followed({}, helper)
    for page in _pages(copies=copies):
        followed.add(page)
    followed.finish()
    return followed


def test_a_child_with_a_helper_finds_what_it_finds_alone(
    helper: Helper, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[str] = []
    submit = helper.submit

    def counted(data: bytes, language: str) -> bool:
        taken = submit(data, language)
        handed.extend([language] if taken else [])
        return taken

    monkeypatch.setattr(helper, "submit", counted)
    alone = _followed(None)
    shared = _followed(helper)
    assert sorted(handed) == sorted(language for language, _ in FILES.values())  # once each
    assert shared.files == alone.files
    assert shared.known == alone.known and len(alone.known) == len(FILES)
    assert shared.files["copy/map.c"][1] == file_found(_chunks("src/map.c", *FILES["src/map.c"]))


def test_a_child_whose_helper_dies_parses_its_files_itself(helper: Helper) -> None:
    os.kill(helper.process.pid, signal.SIGKILL)
    helper.process.wait()
    assert _followed(helper).files == _followed(None).files


def test_files_handed_over_are_parsed_here_when_the_helper_dies_with_them(
    helper: Helper,
) -> None:
    os.kill(helper.process.pid, signal.SIGSTOP)  # it takes files and answers none
    followed = _Followed({}, helper)
    for page in _pages(copies=False):
        followed.add(page)
    assert helper.handed  # files wait for a helper that will never answer
    os.kill(helper.process.pid, signal.SIGKILL)
    followed.finish()
    assert followed.files == _followed(None, copies=False).files


PARENT = """
import sys, time
from coderag_tui.core.rank import definitions_process
from coderag_tui.core.rank.parse_helper import Helper
definitions_process.MIN_CORES = 1
helper = Helper.start()
print(helper.process.pid, flush=True)
time.sleep(600)
"""


def test_the_helper_ends_when_its_parent_is_killed() -> None:
    assert not outlives_its_parent(PARENT), "the helper outlived its parent"
