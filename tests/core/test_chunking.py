"""Chunks cover every line exactly once and follow the code's structure where a grammar exists."""

from __future__ import annotations

import itertools
import re
import textwrap
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coderag_tui.core.index import languages
from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.languages import GRAMMARS
from coderag_tui.core.records import Chunk, ChunkingSpec

AST_KINDS = {"function", "class", "method", "module", "header", "class_body", "namespace"}


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def assert_exact_cover(chunks: list[Chunk], text: str) -> None:
    """Every line in exactly one chunk, in order, and each chunk's text is exactly its lines."""
    lines = _lines(text)
    covered = [i for c in chunks for i in range(c.start_line, c.end_line + 1)]
    assert covered == list(range(1, len(lines) + 1))
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def _chunk_with(chunks: list[Chunk], needle: str) -> Chunk:
    (found,) = [c for c in chunks if needle in c.text]
    return found


# --- lines ---------------------------------------------------------------------------------


@given(
    text=st.lists(st.text(alphabet="ab \t}é", max_size=8), max_size=300).map("\n".join),
    trailing_newline=st.booleans(),
    size=st.integers(1, 100),
)
def test_lines_without_overlap_cover_every_line_once(
    text: str, trailing_newline: bool, size: int
) -> None:
    text += "\n" if trailing_newline and text else ""
    chunks = chunk_file("f.txt", text, None, ChunkingSpec("lines", size))
    assert_exact_cover(chunks, text)
    assert all(c.kind == "lines" and c.n_lines <= size + size // 8 for c in chunks)
    assert all(c.n_lines == size for c in chunks[:-1])
    if len(chunks) > 1:  # no short last window: a few leftover lines join the one before
        assert chunks[-1].n_lines > size // 8


@given(n=st.integers(1, 400), size=st.integers(2, 80), data=st.data())
def test_lines_with_overlap_share_exactly_the_overlap(
    n: int, size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    text = "".join(f"line {i}\n" for i in range(1, n + 1))
    chunks = chunk_file("f.txt", text, None, ChunkingSpec("lines", size, overlap))
    assert chunks[0].start_line == 1 and chunks[-1].end_line == n
    for before, after in itertools.pairwise(chunks):
        assert before.end_line - after.start_line + 1 == overlap
        assert before.n_lines == size
    assert chunks[-1].n_lines <= size + size // 8
    if len(chunks) > 1:  # the last window brings more than a few lines of its own
        assert chunks[-1].end_line - chunks[-2].end_line > size // 8
    assert all(c.text.startswith(f"line {c.start_line}\n") or c.n_lines == 1 for c in chunks)


def test_overlapping_windows_example() -> None:
    text = "\n".join(str(i) for i in range(1, 11))
    chunks = chunk_file("n.txt", text, None, ChunkingSpec("lines", 4, 1))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (4, 7), (7, 10)]


_WINDOWS_BEFORE_THE_LAST = [(1, 64), (65, 128), (129, 192), (193, 256), (257, 320)]


@pytest.mark.parametrize(
    ("n_lines", "last_windows"),
    [
        (385, [(321, 385)]),  # flask's sessions.py: `response.vary.add("Cookie")` is no chunk
        (392, [(321, 392)]),  # eight leftover lines (an eighth of a window) still join
        (393, [(321, 384), (385, 393)]),  # nine make a window of their own
        (384, [(321, 384)]),
    ],
)
def test_a_few_leftover_lines_join_the_last_window(
    n_lines: int, last_windows: list[tuple[int, int]]
) -> None:
    text = "".join(f"line {i}\n" for i in range(1, n_lines + 1))
    chunks = chunk_file("sessions.py", text, "python", ChunkingSpec("lines", 64))
    assert [(c.start_line, c.end_line) for c in chunks] == _WINDOWS_BEFORE_THE_LAST + last_windows
    assert_exact_cover(chunks, text)


def test_a_closing_main_call_stays_with_the_code_it_runs() -> None:
    body = [f"    step_{i}()" for i in range(1, 62)]
    tail = ["", "", 'if __name__ == "__main__":', "    main()"]
    text = "\n".join(["def main() -> None:", *body, *tail])  # 66 lines
    (chunk,) = chunk_file("tool.py", text, "python", ChunkingSpec("lines", 64))
    assert chunk.text.startswith("def main()") and chunk.text.endswith("\n    main()")
    assert (chunk.start_line, chunk.end_line) == (1, 66)


# --- file and edge cases ---------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["lines", "ast", "file"])
def test_empty_text_has_no_chunks(strategy: str) -> None:
    assert chunk_file("e.py", "", "python", ChunkingSpec(strategy)) == []  # type: ignore[arg-type]


def test_file_strategy_is_one_chunk_of_the_whole_file() -> None:
    text = "a = 1\n\nb = 2\n"
    (chunk,) = chunk_file("m.py", text, "python", ChunkingSpec("file"))
    assert (chunk.start_line, chunk.end_line, chunk.kind) == (1, 3, "file")
    assert chunk.text == "a = 1\n\nb = 2"
    assert chunk.language == "python" and chunk.path == "m.py"


def test_a_final_newline_does_not_change_the_chunks() -> None:
    spec = ChunkingSpec("ast", 64)
    with_newline = chunk_file("m.py", "def f():\n    pass\n", "python", spec)
    without = chunk_file("m.py", "def f():\n    pass", "python", spec)
    assert with_newline == without


@pytest.mark.parametrize("language", [None, "markdown", "no-such-language"])
def test_ast_without_a_grammar_falls_back_to_lines(language: str | None) -> None:
    text = "".join(f"row {i}\n" for i in range(100))
    chunks = chunk_file("notes.txt", text, language, ChunkingSpec("ast", 40))
    assert [(c.start_line, c.end_line, c.kind) for c in chunks] == [
        (1, 40, "lines"),
        (41, 80, "lines"),
        (81, 100, "lines"),
    ]


def test_ast_falls_back_to_lines_when_the_grammar_fails_to_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(GRAMMARS, "python", ("no_such_grammar_module", "language"))
    monkeypatch.setattr(languages, "_grammars", {})
    monkeypatch.setattr(languages, "_local", threading.local())
    chunks = chunk_file("m.py", "def f():\n    return 1\n", "python", ChunkingSpec("ast"))
    assert [c.kind for c in chunks] == ["lines"]


def test_ast_falls_back_to_lines_when_the_file_does_not_parse() -> None:
    text = "".join(f"}}}} ))) ((( {i} ]]] ::: @@@\n" for i in range(30))
    chunks = chunk_file("broken.py", text, "python", ChunkingSpec("ast", 10))
    assert {c.kind for c in chunks} == {"lines"}
    assert_exact_cover(chunks, text)


# --- ast on Python ---------------------------------------------------------------------------

PY_MODULE = textwrap.dedent(
    '''\
    """Module docstring."""

    import os
    import sys

    LIMIT = 3


    # Helper comment that belongs to the function below.
    @decorator
    def helper(x):
        return x + 1


    class Big:
        """A class too long for one chunk."""

        size = 1

        def first(self):
            a = 1
            return a

        @property
        def second(self):
            b = 2
            return b

        other = 2

        def third(self):
            return 3


    if __name__ == "__main__":
        helper(1)
    '''
)


def test_python_units_gaps_header_and_methods() -> None:
    spec = ChunkingSpec("ast", 12)
    chunks = chunk_file("m.py", PY_MODULE, "python", spec, merge_siblings=False)
    assert_exact_cover(chunks, PY_MODULE)
    got = [(c.kind, c.text.strip().split("\n")[0]) for c in chunks]
    assert got == [
        ("module", '"""Module docstring."""'),
        ("function", "# Helper comment that belongs to the function below."),
        ("header", "class Big:"),
        ("method", "def first(self):"),
        ("method", "@property"),
        ("class_body", "other = 2"),
        ("method", "def third(self):"),
        ("module", 'if __name__ == "__main__":'),
    ]
    header = _chunk_with(chunks, "class Big:")
    assert "size = 1" in header.text and "def first" not in header.text
    assert "@decorator\ndef helper(x):" in _chunk_with(chunks, "def helper").text


def test_merging_joins_class_members_but_never_code_outside_the_class() -> None:
    chunks = chunk_file("m.py", PY_MODULE, "python", ChunkingSpec("ast", 12))
    assert_exact_cover(chunks, PY_MODULE)
    got = [(c.kind, c.text.strip().split("\n")[0]) for c in chunks]
    assert got == [
        ("module", '"""Module docstring."""'),  # 8 lines + the 6-line helper > 12
        ("function", "# Helper comment that belongs to the function below."),
        ("header", "class Big:"),  # the header with its first method
        ("class_body", "@property"),  # second, `other = 2` and third
        ("module", 'if __name__ == "__main__":'),  # fits beside third, but outside Big
    ]
    assert "def first" in _chunk_with(chunks, "class Big:").text
    assert all(c.n_lines <= 12 for c in chunks)


def test_a_class_that_fits_stays_one_chunk() -> None:
    chunks = chunk_file("m.py", PY_MODULE, "python", ChunkingSpec("ast", 64), merge_siblings=False)
    big = _chunk_with(chunks, "class Big:")
    assert big.kind == "class"
    assert "def first" in big.text and "def third" in big.text
    # With merging the whole 36-line module fits the limit: one chunk of mixed kind.
    (whole,) = chunk_file("m.py", PY_MODULE, "python", ChunkingSpec("ast", 64))
    assert (whole.start_line, whole.end_line, whole.kind) == (1, 36, "module")


def test_a_long_function_splits_at_statement_boundaries() -> None:
    body = "".join(f"    value_{i} = compute(\n        {i},\n    )\n" for i in range(40))
    text = f"def long_function():\n{body}    return value_0\n"
    chunks = chunk_file("m.py", text, "python", ChunkingSpec("ast", 20))
    assert_exact_cover(chunks, text)
    assert len(chunks) > 1
    assert all(c.kind == "function" and c.n_lines <= 20 for c in chunks)
    for chunk in chunks[1:]:
        assert re.match(r"    (value_\d+ = compute\(|return)", chunk.text), chunk.text


def test_blank_lines_and_closing_brackets_never_form_their_own_chunk() -> None:
    text = "function a() {\n  return 1;\n}\n\n\n\nfunction b() {\n  return 2;\n}\n\n"
    spec = ChunkingSpec("ast", 64)
    chunks = chunk_file("m.js", text, "javascript", spec, merge_siblings=False)
    assert_exact_cover(chunks, text)
    assert [c.kind for c in chunks] == ["function", "function"]
    # Merged, the blank lines between them do not turn two functions into a "module".
    assert [c.kind for c in chunk_file("m.js", text, "javascript", spec)] == ["function"]


def _small_functions(count: int) -> str:
    """`count` four-line functions, each followed by a blank line (five lines apiece)."""
    return "".join(
        f"def f{i}(a):\n    b = a * {i}\n    c = b + 1\n    return c\n\n" for i in range(count)
    )


def test_small_functions_merge_greedily_up_to_the_limit() -> None:
    text = _small_functions(10)
    chunks = chunk_file("m.py", text, "python", ChunkingSpec("ast", 22))
    assert_exact_cover(chunks, text)
    # 4 functions of 5 lines fit in 22 lines, a fifth would not.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 20), (21, 40), (41, 50)]
    assert all(c.kind == "function" for c in chunks)
    assert all(c.text.startswith("def f") for c in chunks)  # no function is cut
    assert [c.text.count("def ") for c in chunks] == [4, 4, 2]


def test_a_merged_chunk_keeps_a_shared_kind_and_calls_mixed_top_level_code_module() -> None:
    text = _small_functions(2) + "import os\n\nclass K:\n    x = 1\n    y = 2\n"
    chunks = chunk_file("m.py", text, "python", ChunkingSpec("ast", 10))
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("function", 1, 10),
        ("module", 11, 15),  # `import os` with class K
    ]
    (whole,) = chunk_file("m.py", text, "python", ChunkingSpec("ast", 64))
    assert whole.kind == "module"


def _big_class(n_methods: int) -> str:
    methods = "".join(
        f"    def m{i}(self):\n        v = self.x + {i}\n        return v\n\n"
        for i in range(n_methods)
    )
    return f'class Big:\n    """Docs."""\n\n    x = 1\n\n{methods}'


def test_a_big_class_becomes_its_header_with_first_methods_then_groups_of_methods() -> None:
    text = "import os\n\n" + _big_class(9) + "def after():\n    return 1\n"
    chunks = chunk_file("m.py", text, "python", ChunkingSpec("ast", 14))
    assert_exact_cover(chunks, text)
    got = [(c.kind, c.start_line, c.end_line) for c in chunks]
    # The class (lines 3-43) is 41 lines: header (5 lines) + 2 methods, then 3 + 3 + 1
    # methods of 4 lines each; `import os` and `after` stay outside the class's chunks.
    assert got == [
        ("module", 1, 2),
        ("header", 3, 15),
        ("method", 16, 27),
        ("method", 28, 39),
        ("method", 40, 43),
        ("function", 44, 45),
    ]
    assert chunks[1].text.startswith("class Big:") and chunks[1].text.count("def m") == 2
    assert all(c.text.startswith("    def m") for c in chunks[2:5])


def test_a_unit_longer_than_the_limit_is_split_and_its_pieces_are_never_merged() -> None:
    body = "".join(f"    value_{i} = {i}\n" for i in range(30))
    text = _small_functions(1) + f"def long_one():\n{body}    return 0\n\n" + _small_functions(1)
    chunks = chunk_file("m.py", text, "python", ChunkingSpec("ast", 12))
    assert_exact_cover(chunks, text)
    long_pieces = [c for c in chunks if "value_" in c.text]
    assert len(long_pieces) == 3 and all(c.n_lines <= 12 for c in long_pieces)
    assert all("def f0" not in c.text for c in long_pieces)  # its small neighbours stay apart
    assert chunks[0].text.startswith("def f0") and "value_" not in chunks[0].text
    assert chunks[-1].text.startswith("def f0") and "value_" not in chunks[-1].text


def test_merging_makes_stdlib_chunks_more_than_twice_as_large() -> None:
    import dataclasses
    import fractions
    import json.decoder
    import shlex
    import string
    import textwrap as textwrap_module

    modules = [dataclasses, fractions, json.decoder, shlex, string, textwrap_module]
    spec = ChunkingSpec("ast", 64)
    merged: list[Chunk] = []
    units: list[Chunk] = []
    for module in modules:
        assert module.__file__ is not None
        with open(module.__file__, encoding="utf-8") as handle:
            text = handle.read()
        merged_here = chunk_file(module.__file__, text, "python", spec)
        assert_exact_cover(merged_here, text)
        merged += merged_here
        units += chunk_file(module.__file__, text, "python", spec, merge_siblings=False)
    mean_merged = sum(c.n_lines for c in merged) / len(merged)
    mean_units = sum(c.n_lines for c in units) / len(units)
    # Measured: about 44 lines against 19 per chunk; 8-16 line chunks never win.
    assert mean_merged >= 2 * mean_units
    assert mean_merged >= 32
    assert len(merged) * 2 <= len(units)


# Generated Python sources: functions, classes with methods, decorators, comments, module
# statements, blank lines and nested blocks of random sizes.
_statement = st.sampled_from(
    ["x = 1", "call(x)", "# a comment", "", "if x:\n    y = 2\nelse:\n    y = 3", "pass"]
)


def _indent(block: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in block.split("\n"))


@st.composite
def _function(draw: st.DrawFn, prefix: str = "") -> str:
    decorators = "".join(f"@dec{i}\n" for i in range(draw(st.integers(0, 2))))
    body = draw(st.lists(_statement, min_size=1, max_size=30))
    lines = [s for s in body if s.strip()] or ["pass"]
    text = f"{decorators}def f{draw(st.integers(0, 99))}(a):\n" + _indent("\n".join(lines), "    ")
    return _indent(text, prefix)


@st.composite
def _class(draw: st.DrawFn) -> str:
    members = draw(st.lists(st.one_of(_function(), st.just("attr = 1"), st.just("")), max_size=6))
    body = "\n".join(members) if any(m.strip() for m in members) else "pass"
    return "class C(Base):\n" + _indent(body, "    ")


_python_source = st.lists(
    st.one_of(_function(), _class(), _statement, st.just("import os\n\n")), max_size=12
).map("\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=_python_source, limit=st.integers(1, 40))
def test_ast_on_generated_python_covers_every_line_once(source: str, limit: int) -> None:
    chunks = chunk_file("gen.py", source, "python", ChunkingSpec("ast", limit))
    assert_exact_cover(chunks, source)
    assert all(c.kind in AST_KINDS for c in chunks)  # valid Python never falls back to lines


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=_python_source, limit=st.integers(1, 40))
def test_merging_only_joins_whole_neighbouring_chunks(source: str, limit: int) -> None:
    spec = ChunkingSpec("ast", limit)
    units = chunk_file("gen.py", source, "python", spec, merge_siblings=False)
    merged = chunk_file("gen.py", source, "python", spec)
    assert_exact_cover(merged, source)
    unit_starts = [c.start_line for c in units]
    assert {c.start_line for c in merged} <= set(unit_starts)  # merging never cuts
    for chunk in merged:
        if chunk.start_line not in unit_starts:
            continue
        parts = [u for u in units if chunk.start_line <= u.start_line <= chunk.end_line]
        if len(parts) > 1:
            assert chunk.n_lines <= limit
            assert chunk.kind == parts[0].kind or chunk.kind in ("module", "header", "class_body")


@settings(max_examples=100, deadline=None)
@given(
    source=st.lists(st.text(alphabet="def clas():{}\n #@\"'x=1\t", max_size=40), max_size=40).map(
        "\n".join
    ),
    limit=st.integers(1, 30),
    language=st.sampled_from(sorted(GRAMMARS)),
)
def test_ast_on_arbitrary_text_covers_every_line_once(
    source: str, limit: int, language: str
) -> None:
    chunks = chunk_file("any", source, language, ChunkingSpec("ast", limit))
    assert_exact_cover(chunks, source)


# --- ast per language ------------------------------------------------------------------------

# Each snippet: an import-like line, a function `add`, and a type `Counter` with two methods
# `increment` and `reset` (Go and C have no methods inside types).
SNIPPETS: dict[str, str] = {
    "python": """
import math

def add(a, b):
    total = a + b
    return total

class Counter:
    def increment(self):
        self.n += 1
        return self.n

    def reset(self):
        self.n = 0
        return self.n
""",
    "javascript": """
const fs = require("fs");

function add(a, b) {
  const total = a + b;
  return total;
}

class Counter {
  increment() {
    this.n += 1;
    return this.n;
  }

  reset() {
    this.n = 0;
    return this.n;
  }
}
""",
    "typescript": """
import { x } from "./x";

export function add(a: number, b: number): number {
  const total = a + b;
  return total;
}

export class Counter {
  private n = 0;
  increment(): number {
    this.n += 1;
    return this.n;
  }

  reset(): number {
    this.n = 0;
    return this.n;
  }
}
""",
    "tsx": """
import React from "react";

export function add(a: number, b: number): JSX.Element {
  const total = a + b;
  return <span>{total}</span>;
}

class Counter extends React.Component {
  increment(): number {
    this.n += 1;
    return this.n;
  }

  reset(): number {
    this.n = 0;
    return this.n;
  }
}
""",
    "go": """
package counter

import "fmt"

func add(a int, b int) int {
	total := a + b
	return total
}

type Counter struct {
	n int
}

func (c *Counter) increment() int {
	c.n += 1
	return c.n
}

func (c *Counter) reset() int {
	c.n = 0
	return c.n
}
""",
    "rust": """
use std::fmt;

fn add(a: i32, b: i32) -> i32 {
    let total = a + b;
    total
}

struct Counter { n: i32 }

impl Counter {
    fn increment(&mut self) -> i32 {
        self.n += 1;
        self.n
    }

    fn reset(&mut self) -> i32 {
        self.n = 0;
        self.n
    }
}
""",
    "java": """
import java.util.List;

class Counter {
    private int n;

    static int add(int a, int b) {
        int total = a + b;
        return total;
    }

    int increment() {
        n += 1;
        return n;
    }

    int reset() {
        n = 0;
        return n;
    }
}
""",
    "c": """
#include <stdio.h>

int add(int a, int b) {
    int total = a + b;
    return total;
}

struct Counter {
    int n;
    int step;
};
""",
    "cpp": """
#include <vector>

int add(int a, int b) {
    int total = a + b;
    return total;
}

class Counter {
public:
    int increment() {
        n += 1;
        return n;
    }

    int reset() {
        n = 0;
        return n;
    }
private:
    int n = 0;
};
""",
    "ruby": """
require "set"

def add(a, b)
  total = a + b
  total
end

class Counter
  def increment
    @n += 1
    @n
  end

  def reset
    @n = 0
    @n
  end
end
""",
    "c_sharp": """
using System;

class Counter {
    private int n;

    static int add(int a, int b) {
        int total = a + b;
        return total;
    }

    public int increment() {
        n += 1;
        return n;
    }

    public int reset() {
        n = 0;
        return n;
    }
}
""",
    "php": """<?php
use Foo\\Bar;

function add($a, $b) {
    $total = $a + $b;
    return $total;
}

class Counter {
    public function increment() {
        $this->n += 1;
        return $this->n;
    }

    public function reset() {
        $this->n = 0;
        return $this->n;
    }
}
""",
    "kotlin": """
import kotlin.math.max

fun add(a: Int, b: Int): Int {
    val total = a + b
    return total
}

class Counter {
    var n = 0
    fun increment(): Int {
        n += 1
        return n
    }

    fun reset(): Int {
        n = 0
        return n
    }
}
""",
}

# (kind of the chunk holding "add", kind of the chunk holding "Counter" with a big limit)
_EXPECTED_KINDS: dict[str, tuple[str, str]] = {
    "java": ("class", "class"),  # add is a static method inside the class
    "c_sharp": ("class", "class"),
}


_COUNTER: dict[str, str] = {"go": "type Counter", "rust": "impl Counter", "c": "struct Counter"}


def test_every_grammar_has_a_snippet() -> None:
    assert set(SNIPPETS) == set(GRAMMARS)


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_ast_units_per_language(language: str) -> None:
    source = SNIPPETS[language].lstrip("\n")
    parser = languages.parser_for(language)
    assert parser is not None and not parser.parse(source.encode()).root_node.has_error

    whole = chunk_file("f", source, language, ChunkingSpec("ast", 200), merge_siblings=False)
    assert_exact_cover(whole, source)
    add_kind, counter_kind = _EXPECTED_KINDS.get(language, ("function", "class"))
    assert _chunk_with(whole, " add(").kind == add_kind
    counter = _COUNTER.get(language, "class Counter")
    assert _chunk_with(whole, counter).kind == counter_kind
    assert whole[0].kind == "module"  # the import-like first lines

    small = chunk_file("f", source, language, ChunkingSpec("ast", 5), merge_siblings=False)
    assert_exact_cover(small, source)
    if language == "c":
        assert _chunk_with(small, counter).kind == "class"
        return
    increment = _chunk_with(small, "increment")
    reset = _chunk_with(small, "reset")
    assert increment is not reset
    assert increment.kind == reset.kind == "method"
    assert increment.text.count("\n") >= 2  # the whole method, not a fragment
    if language != "go":
        header = _chunk_with(small, counter)
        assert header.kind == "header"
        assert "increment" not in header.text


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_a_snippet_within_the_limit_merges_into_one_chunk(language: str) -> None:
    source = SNIPPETS[language].lstrip("\n")
    (chunk,) = chunk_file("f", source, language, ChunkingSpec("ast", 200))
    assert chunk.text == source.rstrip("\n")
    assert chunk.kind == "module"  # imports, functions and types: mixed top-level code


def test_cpp_namespace_too_big_is_opened_into_units() -> None:
    functions = "".join(
        f"int f{i}(int a) {{\n    int b = a * {i};\n    return b;\n}}\n\n" for i in range(8)
    )
    source = f"#include <x>\n\nnamespace big {{\n\n{functions}}}  // namespace big\n"
    spec = ChunkingSpec("ast", 10)
    chunks = chunk_file("f.cpp", source, "cpp", spec, merge_siblings=False)
    assert_exact_cover(chunks, source)
    assert [c.kind for c in chunks].count("function") == 8
    assert "namespace big {" in chunks[0].text
    # Merged: the functions (5 lines with their blank line) pair up inside the namespace.
    merged = chunk_file("f.cpp", source, "cpp", spec)
    assert_exact_cover(merged, source)
    # The namespace's opening lines join its first function; the others pair up.
    assert [c.text.count("int f") for c in merged] == [1, 2, 2, 2, 1]
    assert "namespace big {" in merged[0].text and "// namespace big" in merged[-1].text


def test_rust_doc_comments_and_attributes_stay_with_their_item() -> None:
    source = "use std::fmt;\n\n/// A point.\n#[derive(Debug)]\nstruct Point {\n    x: i32,\n}\n"
    chunks = chunk_file("p.rs", source, "rust", ChunkingSpec("ast", 64), merge_siblings=False)
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("module", 1, 2),
        ("class", 3, 7),
    ]


def test_javascript_arrow_function_constants_are_functions() -> None:
    source = "const x = 1;\n\nexport const handler = async (event) => {\n  return event;\n};\n"
    spec = ChunkingSpec("ast", 64)
    chunks = chunk_file("h.js", source, "javascript", spec, merge_siblings=False)
    assert [c.kind for c in chunks] == ["module", "function"]


def test_one_line_definitions_stay_with_the_surrounding_code() -> None:
    typedefs = "".join(f"typedef int (*fn{i})(void *);\n" for i in range(10))
    source = f"#include <stddef.h>\n{typedefs}\nint twice(int x) {{\n    return 2 * x;\n}}\n"
    spec = ChunkingSpec("ast", 64)
    chunks = chunk_file("t.h", source, "c", spec, merge_siblings=False)
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("module", 1, 12),
        ("function", 13, 15),
    ]
