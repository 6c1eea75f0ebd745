"""A file's definitions as nested line spans: what a prompt packs instead of a line window.

Each definition (function, method, class and their equivalents, by `chunk.GRAMMAR_RULES`) is a
`Unit`: its lines (decorators and wrappers such as `export` included), the last line of its
signature (the line before its body starts, or its first line when the body opens on it) and
how deeply it nests. The packer (`core.prompt.spans`) takes the smallest unit that carries a
match, or a unit's signature with the matched lines below it, and lists units' signatures as
an outline of files that did not fit.

The same parse gives the file's *statements* (`Statements`): for each line, the largest syntax
node of at most `STATEMENT_LINES` lines that holds it (a call with its arguments, a `raise` with
its message, a short `if` with its branch), and the first lines of the longer nodes (a long
`if`, a loop, a definition), so a packer shows a matched line as the whole statement it is part
of rather than as a lone line.

Files in a language without a grammar, or whose parse is mostly errors, have no units and
no statements.
"""

from __future__ import annotations

import threading
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coderag_tui.core.index.chunk import (
    FUNCTION_VALUES,
    GRAMMAR_RULES,
    MAX_ERROR_SHARE,
    Grammar,
    body_of,
    error_share,
    node_rows,
)
from coderag_tui.core.index.languages import parser_for

if TYPE_CHECKING:
    import tree_sitter
    from tree_sitter import Node

MAX_PARSE_BYTES = 2_000_000  # a larger file is outlined by nothing rather than parsed slowly
STATEMENT_LINES = 12  # a node this long or shorter is shown whole when one of its lines matched


@dataclass(frozen=True, slots=True)
class Unit:
    """One definition: lines start..end (1-based, inclusive), its signature start..head_end,
    its kind (function, method, class, namespace), nesting depth (0: top level) and the
    first line of the comments right above it (its doc comment; `start` when none)."""

    start: int
    end: int
    head_end: int
    kind: str
    depth: int
    doc: int = 0

    @property
    def first(self) -> int:
        """The first line of the definition with its doc comment."""
        return self.doc or self.start

    @property
    def n_lines(self) -> int:
        return self.end - self.start + 1

    def holds(self, line: int) -> bool:
        return self.start <= line <= self.end


@dataclass(frozen=True, slots=True)
class Statements:
    """Where a file's statements lie, for widening a line to the statement it is part of:
    `inner[line]` is the first line of the smallest node of two lines or more that holds the
    line (0: none), and `ends[start]` the last lines of the nodes starting on `start`,
    ascending (nodes that start on one line nest: a call in its statement)."""

    inner: array[int]
    ends: dict[int, tuple[int, ...]]

    def around(self, line: int, limit: int) -> tuple[int, int] | None:
        """The largest node of at most `limit` lines that starts where the smallest node
        holding `line` starts (`raise E(` shows its message; a call its arguments), or None:
        the smallest such node is longer (the line is the head of a long statement, or a
        line of its own in a long body)."""
        start = self.inner[line] if 0 < line < len(self.inner) else 0
        if not start:
            return None
        best = 0
        for end in self.ends.get(start, ()):
            if end - start + 1 > limit:
                break
            if end >= line:
                best = end
        return (start, best) if best else None

    def closes(self, line: int) -> bool:
        """Whether `line` ends a node begun above it (the `)` of a long call or import)."""
        start = self.inner[line] if 0 < line < len(self.inner) else 0
        return 0 < start < line and line in self.ends.get(start, ())

    def heads(self, line: int) -> int:
        """The last line of the longest node starting on `line` (0: none starts there)."""
        ends = self.ends.get(line)
        return ends[-1] if ends else 0


NO_STATEMENTS = Statements(array("i"), {})


@dataclass(frozen=True, slots=True)
class Structure:
    """What a parse tells of a file: its definitions and its statements."""

    units: tuple[Unit, ...]
    statements: Statements = NO_STATEMENTS


_queries: dict[str, tree_sitter.Query | None] = {}
_queries_lock = threading.Lock()


def _patterns(language: str) -> list[str]:
    """One query pattern per kind of definition of a language (`chunk.GRAMMAR_RULES`)."""
    rules = GRAMMAR_RULES[language]
    values = " ".join(f"({v})" for v in sorted(FUNCTION_VALUES))
    patterns = [f"({node}) @unit.{kind}" for node, kind in rules.units.items()]
    patterns += [
        f"({decl} (variable_declarator value: [{values}])) @unit.function"
        for decl in sorted(rules.declarations)
    ]
    if rules.declarations:  # `app.set = function set(…) {…}`
        patterns.append(
            f"(expression_statement (assignment_expression right: [{values}])) @unit.function"
        )
    return patterns


def _query(language: str) -> tree_sitter.Query | None:
    """The outline query of a language, compiled once per process: every pattern the
    grammar knows (a grammar version may lack a node type; its pattern is left out)."""
    with _queries_lock:
        if language in _queries:
            return _queries[language]
        parser = parser_for(language)
        compiled = None
        if parser is not None and parser.language is not None:
            import tree_sitter

            kept = []
            for pattern in _patterns(language):
                try:
                    tree_sitter.Query(parser.language, pattern)
                except Exception:  # a node type this grammar does not have
                    continue
                kept.append(pattern)
            compiled = tree_sitter.Query(parser.language, "\n".join(kept)) if kept else None
        _queries[language] = compiled
        return compiled


def definition_units(text: str, language: str | None) -> tuple[Unit, ...]:
    """Every definition of a file, sorted by first line (outer before inner)."""
    return file_structure(text, language).units


def file_structure(text: str, language: str | None) -> Structure:
    """A file's definitions (sorted by first line, outer before inner) and statements, from
    one parse; an empty structure for a language without a grammar, a file over
    `MAX_PARSE_BYTES` or a parse that is mostly errors."""
    rules = GRAMMAR_RULES.get(language or "")
    data = text.encode("utf-8", errors="surrogatepass")
    empty = Structure(())
    if rules is None or not language or len(data) > MAX_PARSE_BYTES:
        return empty
    parser = parser_for(language)
    query = _query(language)
    if parser is None or query is None:
        return empty
    import tree_sitter

    try:
        tree = parser.parse(data)
        captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
    except Exception:  # the binding refused the input: no outline
        return empty
    root = tree.root_node
    n_lines = text.count("\n") + 1
    if root.has_error and error_share(root, root.named_children, n_lines) > MAX_ERROR_SHARE:
        return empty
    found: dict[tuple[int, int], tuple[int, int, int, str, int]] = {}
    for name, nodes in captures.items():
        for node in nodes:
            lines = _lines_of(node, name.removeprefix("unit."), rules)
            kept = found.setdefault((lines[0], lines[1]), lines)
            if lines[4] < kept[4]:
                # Two nodes of the same lines (`typedef struct {…} T;` and its struct) whose
                # comments above differ: the earlier doc line, whichever came first (their
                # order varied from one parse to the next, and so did the prompt).
                found[(lines[0], lines[1])] = (*kept[:4], lines[4])
    ordered = sorted(found.values(), key=lambda u: (u[0], -u[1]))
    units: list[Unit] = []
    open_units: list[Unit] = []  # the units enclosing the next one, outermost first
    for start, end, head_end, kind, doc in ordered:
        while open_units and open_units[-1].end < start:
            open_units.pop()
        if kind == "function" and open_units and open_units[-1].kind == "class":
            kind = "method"
        unit = Unit(start, end, head_end, kind, len(open_units), doc)
        units.append(unit)
        open_units.append(unit)
    return Structure(tuple(units), _statements(root))


def _statements(root: Node) -> Statements:
    """`Statements` from one walk of the tree: each node of two lines or more claims its
    lines that no such child of its own holds (work linear in lines and nodes)."""
    _, last = node_rows(root)
    inner = array("i", bytes(4 * (last + 2)))
    ends: dict[int, list[int]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        start, end = node_rows(node)
        if end <= start:
            continue
        ends.setdefault(start, []).append(end)
        line = start
        for child in node.named_children:
            c_start, c_end = node_rows(child)
            if c_end <= c_start:
                continue
            for n in range(line, c_start):
                inner[n] = start
            line = max(line, c_end + 1)
            stack.append(child)
        for n in range(line, end + 1):
            inner[n] = start
    return Statements(inner, {k: tuple(sorted(set(v))) for k, v in ends.items()})


def _lines_of(node: Node, kind: str, rules: Grammar) -> tuple[int, int, int, str, int]:
    """A definition's (first line, last line, signature's last line, kind, doc comment's
    first line), its wrappers (decorators, `export`) included."""
    start, end = node_rows(node)
    outer = node
    while outer.parent is not None and outer.parent.type in rules.wrappers:
        outer = outer.parent
    body = body_of(node, rules)
    head_end = start
    if body is not None and body is not node:
        # The signature ends where what comes before the body ends: `def f(x):` above its
        # block, `void f() {` on its brace's line (below `@Override` too).
        # Comments between the signature and the body are the body's (a Ruby module's
        # doc comment of its first class), not the signature's.
        before = body.prev_sibling
        while before is not None and "comment" in before.type:
            before = before.prev_sibling
        head_end = before.end_point.row + 1 if before is not None else body.start_point.row + 1
    first = node_rows(outer)[0]
    doc = _doc_start(outer, first, rules.attach)
    return first, end, max(first, min(head_end, end)), kind, doc


def _doc_start(node: Node, start: int, attach: frozenset[str]) -> int:
    """The first line of the comments right above `node` (at most one blank line between),
    else `start`."""
    first = start
    before = node.prev_named_sibling
    while before is not None and before.type in attach:
        b_start, b_end = node_rows(before)
        if b_end < first - 2:
            break
        first = b_start
        before = before.prev_named_sibling
    return first


def enclosing(units: tuple[Unit, ...], line: int) -> list[Unit]:
    """The units holding `line`, innermost first."""
    found = [u for u in units if u.holds(line)]
    found.sort(key=lambda u: (u.n_lines, -u.depth))
    return found
