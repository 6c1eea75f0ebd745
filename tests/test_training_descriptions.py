"""Doc comments as training questions (training/descriptions.py): the first sentence of a
definition's comment, its name taken out, and the comment blanked from what is searched."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.descriptions import blanked, documented  # noqa: E402

PYTHON = '''"""Connection pooling for the HTTP client.

More words that are not the first paragraph.
"""
import os


class PoolManager:
    """Keeps one pool of connections per host and reuses them.

    :param size: how many
    """

    def get(self, host):
        """Return x."""
        return host
'''

GO = """// Copyright 2020 The Authors. Licensed under the MIT licence.
package pool

// Manager keeps one pool of connections for each host it has seen.
// A second line of the same sentence.
type Manager struct{}

//go:noinline
func helper() {}

// Licensed under the MIT licence: see the LICENSE file for the terms.
func terms() {}
"""

C = """#include <stdio.h>
#include "buffer sizes for every reader.h"
int limit_of(int x) { return x; }

/* Render an object to text in the buffer. */
static int print_object(int x) { return x; }
"""

JAVA = """package a;

/**
 * Decodes {@link Message messages} read from a <b>socket</b> stream.
 *
 * @param in the stream
 */
@Deprecated
public class Decoder {}
"""


def test_a_python_module_class_and_short_docstring() -> None:
    found = {d.name: d for d in documented(PYTHON, "python", module="pool")}
    assert found["pool"].kind == "module" and found["pool"].query == (
        "Connection pooling for the HTTP client"
    )
    manager = found["PoolManager"]
    assert manager.query == "Keeps one pool of connections per host and reuses them"
    assert (manager.doc_start, manager.doc_end) == (9, 12)
    assert "get" not in found  # "Return x." is under four words


def test_the_name_leaves_the_query_and_a_licence_is_no_question() -> None:
    found = documented(GO, "go")
    assert [d.name for d in found] == ["Manager"]
    assert found[0].query == "keeps one pool of connections for each host it has seen"
    assert (found[0].doc_start, found[0].doc_end) == (4, 5)


def test_c_preprocessor_lines_are_not_comments_and_markup_is_read_as_words() -> None:
    c = documented(C, "c")
    assert [(d.name, d.query) for d in c] == [
        ("print_object", "Render an object to text in the buffer")
    ]
    java = documented(JAVA, "java")
    assert [(d.name, d.query) for d in java] == [
        ("Decoder", "Decodes Message messages read from a socket stream")
    ]
    assert (java[0].doc_start, java[0].doc_end) == (3, 7)  # the annotation between is skipped


def test_blanking_empties_the_comment_and_keeps_every_other_line_where_it_was() -> None:
    manager = next(d for d in documented(PYTHON, "python") if d.name == "PoolManager")
    out = blanked(PYTHON, [(manager.doc_start, manager.doc_end)])
    assert out.count("\n") == PYTHON.count("\n")
    assert "Keeps one pool" not in out and "def get(self, host):" in out.split("\n")[13]
    assert documented(out, "python", module="pool")[0].name == "pool"  # the others stay
