"""Cut a file into chunks: line windows, tree-sitter units, or the whole file.

`ast` chunking lays a file out as a sequence of units (functions, classes, methods and
their equivalents, with the comments, decorators and attributes right above them) and the
code between them ("module" chunks: imports, module-level statements). A unit longer than
the limit is split at statement boundaries; a class longer than the limit becomes a
"header" chunk (its first line up to its first method), one chunk per method, and
"class_body" chunks for fields between methods. Namespaces too big for one chunk (C++
`namespace`, C# `namespace`, Rust `mod`, `#ifdef` blocks …) are opened up the same way.
One-line definitions stay with the code around them, gaps made only of blank lines or
closing brackets join a neighbour (no chunk is just `}`), and neighbouring module chunks
that fit the limit together are merged. Every line lands in exactly one chunk, in order.

Then, as in cAST (split big nodes, merge small siblings), adjacent siblings are merged
greedily while the merged chunk stays within the limit: consecutive top-level functions
and classes with the module code between them, or consecutive members of a class that
was opened up (its header joins its first methods). The limit counts physical lines,
blank ones included, so `spec.lines` stays the most lines a chunk holds (apart from a few
trailing blank or closing-bracket lines, as before). Merging never cuts a unit, never
joins the pieces of a split unit to anything, and never joins members of an opened class
to code outside that class; a class that fits the limit was already one unit.
A merged chunk keeps its parts' kind when they all share one ("function" for three small
functions); otherwise it is "header" when it holds a class header, "class_body" for other
mixed members of a class, and "module" for mixed top-level (or namespace-level) code.

Line windows hold `spec.lines` lines each, except that a file's last few lines (at most an
eighth of a window: a lone `main()` call, a closing `}`) join the window before them instead
of making a chunk of their own (so a window holds at most `spec.lines + spec.lines // 8`).

Chunk kinds: lines, file, function, class, method, module, header, class_body, namespace.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coderag_tui.core.index.languages import parser_for
from coderag_tui.core.records import Chunk, ChunkingSpec

if TYPE_CHECKING:
    from tree_sitter import Node

# A parse whose top-level ERROR nodes cover more than this share of the lines is not trusted.
MAX_ERROR_SHARE = 0.5
# A last line window that adds at most `size // TAIL_DIVISOR` lines of its own joins the window
# before it: alone, one or two lines rank on a line's words (BM25 favours short chunks) and
# one line's meaning (embedded alone, `response.vary.add("Cookie")` sits close to any
# question about cookies), and a hit that shows a line without its code helps no one.
TAIL_DIVISOR = 8
# Changes whenever `chunk_file` cuts some text differently, so an index re-chunks the text it
# stores (`indexer.build_index`) instead of keeping chunks a new version would not make.
# 2: short last line windows join the window before them.
CHUNKER_VERSION = "2"

GAP_KINDS = frozenset({"module", "header", "class_body"})
# Scope of ranges that must never be merged with a neighbour (pieces of a split unit).
_NO_MERGE = -1

# (start, end, kind, scope): `scope` numbers the sibling list a range belongs to.
_Range = tuple[int, int, str, int]
_BODY_TYPES = frozenset(
    {
        "block",
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "body_statement",
        "interface_body",
        "enum_body",
        "enum_class_body",
        "statement_block",
        "compound_statement",
        "enum_member_declaration_list",
    }
)
FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


@dataclass(frozen=True)
class Grammar:
    """Which tree-sitter node types are units in one language, and how they nest."""

    units: Mapping[str, str]  # node type -> "function" | "class" | "method" | "namespace"
    wrappers: frozenset[str] = frozenset()  # wrap one definition: decorators, export, template
    attach: frozenset[str] = frozenset({"comment"})  # belong to the unit right below them
    declarations: frozenset[str] = frozenset()  # `const f = () => …` counts as a function
    flatten: frozenset[str] = frozenset()  # member lists nested one level deeper
    self_body: frozenset[str] = field(default_factory=frozenset)  # namespaces without a body


_JS_UNITS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
}
_TS_UNITS = {
    **_JS_UNITS,
    "abstract_class_declaration": "class",
    "interface_declaration": "class",
    "enum_declaration": "class",
    "function_signature": "function",
    "abstract_method_signature": "method",
    "internal_module": "namespace",
    "module": "namespace",
}
_C_UNITS = {
    "function_definition": "function",
    "struct_specifier": "class",
    "union_specifier": "class",
    "enum_specifier": "class",
    "type_definition": "class",
    "preproc_ifdef": "namespace",
    "preproc_if": "namespace",
    "preproc_else": "namespace",
    "preproc_elif": "namespace",
    "preproc_elifdef": "namespace",
    "linkage_specification": "namespace",  # extern "C" { … } around a whole header
}
_PREPROC = frozenset(
    {"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef"}
)

GRAMMAR_RULES: dict[str, Grammar] = {
    "python": Grammar(
        units={"function_definition": "function", "class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": Grammar(
        units=_JS_UNITS,
        wrappers=frozenset({"export_statement"}),
        declarations=frozenset({"lexical_declaration", "variable_declaration"}),
    ),
    "typescript": Grammar(
        units=_TS_UNITS,
        wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
        declarations=frozenset({"lexical_declaration", "variable_declaration"}),
    ),
    "go": Grammar(
        units={
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "class",
        }
    ),
    "rust": Grammar(
        units={
            "function_item": "function",
            "function_signature_item": "function",
            "impl_item": "class",
            "trait_item": "class",
            "struct_item": "class",
            "enum_item": "class",
            "union_item": "class",
            "macro_definition": "function",
            "mod_item": "namespace",
        },
        attach=frozenset({"line_comment", "block_comment", "attribute_item"}),
    ),
    "java": Grammar(
        units={
            "class_declaration": "class",
            "interface_declaration": "class",
            "enum_declaration": "class",
            "record_declaration": "class",
            "annotation_type_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
            "compact_constructor_declaration": "method",
        },
        attach=frozenset({"line_comment", "block_comment"}),
        flatten=frozenset({"enum_body_declarations"}),
    ),
    "c": Grammar(units=_C_UNITS, self_body=_PREPROC),
    "cpp": Grammar(
        units={
            **_C_UNITS,
            "class_specifier": "class",
            "namespace_definition": "namespace",
        },
        wrappers=frozenset({"template_declaration"}),
        self_body=_PREPROC,
    ),
    "ruby": Grammar(
        units={
            "method": "function",
            "singleton_method": "function",
            "class": "class",
            "singleton_class": "class",
            "module": "class",
        }
    ),
    "c_sharp": Grammar(
        units={
            "class_declaration": "class",
            "struct_declaration": "class",
            "interface_declaration": "class",
            "record_declaration": "class",
            "enum_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
            "destructor_declaration": "method",
            "operator_declaration": "method",
            "conversion_operator_declaration": "method",
            "indexer_declaration": "method",
            "local_function_statement": "function",
            "namespace_declaration": "namespace",
        }
    ),
    "php": Grammar(
        units={
            "function_definition": "function",
            "class_declaration": "class",
            "interface_declaration": "class",
            "trait_declaration": "class",
            "enum_declaration": "class",
            "method_declaration": "method",
            "namespace_definition": "namespace",
        }
    ),
    "kotlin": Grammar(
        units={
            "function_declaration": "function",
            "class_declaration": "class",
            "object_declaration": "class",
            "companion_object": "class",
        },
        attach=frozenset({"line_comment", "block_comment"}),
    ),
}
GRAMMAR_RULES["tsx"] = GRAMMAR_RULES["typescript"]


def chunk_file(
    path: str,
    text: str,
    language: str | None,
    spec: ChunkingSpec,
    *,
    merge_siblings: bool = True,
) -> list[Chunk]:
    """Cut one file's text into chunks by the spec; an empty text gives no chunks.

    Line numbers are 1-based and inclusive; a chunk's text is exactly its lines joined
    with "\\n" (a final newline of the file belongs to no line). `merge_siblings=False`
    keeps `ast` at one chunk per unit (to compare against the merged chunks).
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    n = len(lines)
    if spec.strategy == "file":
        return [Chunk(path, 1, n, "file", language, "\n".join(lines))]
    ranges: list[tuple[int, int, str]] | None = None
    if spec.strategy == "ast":
        ranges = ast_ranges(text, lines, language, spec.lines, merge_siblings=merge_siblings)
    if ranges is None:
        ranges = line_ranges(n, spec.lines, spec.overlap if spec.strategy == "lines" else 0)
    return [Chunk(path, s, e, kind, language, "\n".join(lines[s - 1 : e])) for s, e, kind in ranges]


def line_ranges(n_lines: int, size: int, overlap: int = 0) -> list[tuple[int, int, str]]:
    """Windows of `size` lines sharing `overlap` lines; the last window ends at the last line.

    When at most `size // TAIL_DIVISOR` lines are left after a window, that window
    stretches to the last line instead of leaving them a window of their own.
    """
    size = max(1, size)
    step = max(1, size - max(0, overlap))
    ranges = []
    start = 1
    while True:
        end = min(start + size - 1, n_lines)
        if n_lines - end <= size // TAIL_DIVISOR:
            ranges.append((start, n_lines, "lines"))
            return ranges
        ranges.append((start, end, "lines"))
        start += step


def ast_ranges(
    text: str, lines: list[str], language: str | None, limit: int, *, merge_siblings: bool = True
) -> list[tuple[int, int, str]] | None:
    """(start, end, kind) ranges from the syntax tree, or None when lines must be used instead."""
    rules = GRAMMAR_RULES.get(language or "")
    parser = parser_for(language) if rules is not None and language else None
    if rules is None or parser is None:
        return None
    try:
        tree = parser.parse(text.encode("utf-8", errors="surrogatepass"))
    except Exception:  # the binding refused the input: chunk it by lines
        return None
    root = tree.root_node
    n = len(lines)
    children = root.named_children
    if root.has_error and error_share(root, children, n) > MAX_ERROR_SHARE:
        return None
    limit = max(1, limit)
    layout = _Layout(rules, limit)
    layout.lay_out(children, 1, n, in_class=False)
    tidy = _merge_gaps(layout.out, lines, limit)
    if merge_siblings:
        ranges = _merge_siblings(tidy, limit, layout.mixed_kinds)
    else:
        ranges = [(s, e, kind) for s, e, kind, _ in tidy]
    if not _covers(ranges, n):  # a defect in the tables must never lose lines
        return None
    return ranges


def error_share(root: Node, children: list[Node], n: int) -> float:
    if root.type == "ERROR":
        return 1.0
    bad = 0
    for child in children:
        if child.type == "ERROR":
            s, e = node_rows(child)
            bad += e - s + 1
    return bad / max(1, n)


def node_rows(node: Node) -> tuple[int, int]:
    """1-based inclusive first and last line of a node (a node ending at column 0 ends above)."""
    start = node.start_point
    end = node.end_point
    last = end.row if end.column == 0 and end.row > start.row else end.row + 1
    return start.row + 1, last


class _Layout:
    """Walks sibling nodes and appends (start, end, kind, scope) ranges covering a span in order.

    Each call of `lay_out` opens a new scope (one list of siblings); `mixed_kinds[scope]`
    names a merged chunk of that scope whose parts differ in kind.
    """

    def __init__(self, rules: Grammar, limit: int) -> None:
        self.rules = rules
        self.limit = limit
        self.out: list[_Range] = []
        self.mixed_kinds: list[str] = []

    def lay_out(self, children: Iterable[Node], lo: int, hi: int, *, in_class: bool) -> bool:
        """Cover lines lo..hi with the units among `children` and the gaps between them."""
        scope = len(self.mixed_kinds)
        self.mixed_kinds.append("class_body" if in_class else "module")
        units: list[tuple[int, int, Node, str]] = []
        others: list[Node] = []
        run_start = run_end = -1  # the comments/attributes just above the next unit
        prev_end = lo - 1
        for child in children:
            cs, ce = node_rows(child)
            # A one-line definition (`typedef int (*fn)(void);`, `def f(): pass`) is not worth
            # a chunk of its own: it stays with the code around it.
            found = self._unit(child, cs, ce, in_class=in_class) if ce > cs else None
            if found is None:
                others.append(child)
                if child.type in self.rules.attach and cs > prev_end:
                    if run_start < 0 or cs > run_end + 1:
                        run_start = cs
                    run_end = ce
                else:
                    run_start = -1
                prev_end = max(prev_end, ce)
                continue
            kind, inner = found
            start = run_start if run_start >= 0 and run_end + 1 >= cs else cs
            run_start = -1
            units.append((start, ce, inner, kind))
            prev_end = max(prev_end, ce)
        cuts = self._cuts(others)
        first_gap = "header" if in_class else "module"
        later_gap = "class_body" if in_class else "module"
        cur = lo
        for start, end, inner, kind in units:
            end = min(end, hi)
            if end < cur:
                continue  # shares its lines with the previous unit (several units on one line)
            start = max(start, cur)
            if start > cur:
                self._gap(cur, start - 1, first_gap if cur == lo else later_gap, cuts, scope)
            self._emit_unit(inner, kind, start, end, scope)
            cur = end + 1
        if cur <= hi:
            self._gap(cur, hi, first_gap if cur == lo else later_gap, cuts, scope)
        return bool(units)

    def _unit(self, node: Node, cs: int, ce: int, *, in_class: bool) -> tuple[str, Node] | None:
        """(kind, the definition node) when `node` is a unit at this level, else None."""
        rules = self.rules
        node_type = node.type
        kind = rules.units.get(node_type)
        if kind is None:
            if node_type in rules.wrappers:
                for child in node.named_children:
                    inner = self._unit(child, cs, ce, in_class=in_class)
                    if inner is not None:
                        return inner
                return None
            if node_type in rules.declarations and declares_function(node):
                kind = "function"
            else:
                return None
        if kind == "namespace":
            # Small namespaces stay inside the surrounding code; big ones are opened up.
            if ce - cs + 1 <= self.limit or body_of(node, rules) is None:
                return None
        elif kind == "function" and in_class:
            kind = "method"
        return kind, node

    def _emit_unit(self, node: Node, kind: str, start: int, end: int, scope: int) -> None:
        if end - start + 1 <= self.limit:
            self.out.append((start, end, kind, scope))
            return
        if kind in ("class", "namespace"):
            body = body_of(node, self.rules)
            if body is not None:
                mark = len(self.out)
                members = _members(body, self.rules)
                if self.lay_out(members, start, end, in_class=kind == "class"):
                    return
                del self.out[mark:]
            if kind == "namespace":
                kind = "module"
        for s, e in _pack(start, end, self._cuts([node]), self.limit):
            self.out.append((s, e, kind, _NO_MERGE))

    def _gap(self, lo: int, hi: int, kind: str, cuts: list[int], scope: int) -> None:
        # The pieces of a long gap are runs of sibling statements: they may merge.
        for s, e in _pack(lo, hi, cuts, self.limit):
            self.out.append((s, e, kind, scope))

    def _cuts(self, nodes: Iterable[Node]) -> list[int]:
        """Lines where a split may start: each statement's first line, deeper in long ones."""
        found: set[int] = set()
        stack = list(nodes)
        while stack:
            node = stack.pop()
            s, e = node_rows(node)
            found.add(s)
            if e - s + 1 > self.limit:
                found.add(e + 1)
                stack.extend(node.named_children)
        return sorted(found)


def declares_function(node: Node) -> bool:
    """`const f = () => …` / `var g = function () …`: a declaration whose value is a function."""
    for child in node.named_children:
        if child.type == "variable_declarator":
            value = child.child_by_field_name("value")
            if value is not None and value.type in FUNCTION_VALUES:
                return True
    return False


def body_of(node: Node, rules: Grammar) -> Node | None:
    """The node holding a class's or namespace's members (the node itself for `#ifdef`)."""
    if node.type in rules.self_body:
        return node
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in _BODY_TYPES:
            return child
    return None


def _members(body: Node, rules: Grammar) -> list[Node]:
    members: list[Node] = []
    for child in body.named_children:
        if child.type in rules.flatten:
            members.extend(child.named_children)
        else:
            members.append(child)
    return members


def _pack(lo: int, hi: int, cuts: list[int], limit: int) -> list[tuple[int, int]]:
    """Split lines lo..hi into pieces of at most `limit` lines, cutting at `cuts` when possible.

    Pieces aim at equal sizes (70 lines with a limit of 64 become 35 + 35, not 64 + 6);
    a stretch with no allowed cut within the limit is cut hard.
    """
    pieces = []
    start = lo
    while hi - start + 1 > limit:
        remaining = hi - start + 1
        n_pieces = -(-remaining // limit)
        target = start + -(-remaining // n_pieces)  # first line of the next piece
        left = bisect.bisect_right(cuts, start)
        right = bisect.bisect_right(cuts, start + limit)
        best = -1
        i = bisect.bisect_left(cuts, target, left, right)
        for j in (i - 1, i):
            if left <= j < right and (best < 0 or abs(cuts[j] - target) < abs(best - target)):
                best = cuts[j]
        cut = best if best > start else target
        pieces.append((start, cut - 1))
        start = cut
    pieces.append((start, hi))
    return pieces


def _is_trivial(line: str) -> bool:
    """Blank, or only closing brackets and separators (`}`, `};`, `end`): not worth a chunk."""
    stripped = line.strip()
    return not stripped or stripped == "end" or not stripped.strip("{}()[];,")


def _merge_gaps(ranges: list[_Range], lines: list[str], limit: int) -> list[_Range]:
    """Tidy the gaps: no chunk of only blank lines or closing brackets, no needless splits.

    A short trivial gap (blank lines, `}`, `end`) joins the chunk above (or below, at the
    top of the file); blank lines opening a longer gap join the chunk above too, so gaps
    start with code; neighbouring module chunks that fit together become one (the lines
    before a namespace and its opening line, say). A range grown this way keeps the scope
    of the range it grew from (the later one for two module chunks, so a namespace's
    opening lines can still merge with its first members).
    """
    max_trivial = max(3, limit // 8)
    merged: list[_Range] = []
    pending = -1  # start line of a trivial gap at the top, waiting for the next chunk
    for s, e, kind, scope in ranges:
        trivial = (
            kind in GAP_KINDS
            and e - s + 1 <= max_trivial
            and all(_is_trivial(line) for line in lines[s - 1 : e])
        )
        if trivial and merged:
            ps, _, pk, pscope = merged[-1]
            merged[-1] = (ps, e, pk, pscope)
            continue
        if trivial:
            if pending < 0:
                pending = s
            continue
        if pending >= 0:
            s, pending = pending, -1
        elif merged and kind == "module" and merged[-1][2] == "module":
            ps = merged[-1][0]
            if e - ps + 1 <= limit:
                merged[-1] = (ps, e, kind, scope)
                continue
        elif kind in GAP_KINDS and merged:
            blank = s
            while blank < e and not lines[blank - 1].strip():
                blank += 1
            if blank > s:
                ps, _, pk, pscope = merged[-1]
                merged[-1] = (ps, blank - 1, pk, pscope)
                s = blank
        merged.append((s, e, kind, scope))
    if pending >= 0:  # the whole file is trivial
        merged.append((pending, ranges[-1][1], "module", _NO_MERGE))
    return merged


def _merge_siblings(
    ranges: list[_Range], limit: int, mixed_kinds: list[str]
) -> list[tuple[int, int, str]]:
    """Greedily join neighbouring ranges of one scope while the result has at most `limit` lines.

    Ranges are contiguous and in order, so two neighbours of the same scope are siblings
    with nothing from another scope between them; a range of another scope (a split
    unit's piece, an opened class's members) ends the current group.
    """
    merged: list[tuple[int, int, str]] = []
    group_start, group_end, group_scope = 0, -1, _NO_MERGE
    kinds: list[str] = []

    def flush() -> None:
        if not kinds:
            return
        if all(k == kinds[0] for k in kinds):
            kind = kinds[0]
        elif "header" in kinds:
            kind = "header"
        else:
            kind = mixed_kinds[group_scope]
        merged.append((group_start, group_end, kind))

    for s, e, kind, scope in ranges:
        if kinds and scope == group_scope and scope != _NO_MERGE and e - group_start < limit:
            group_end = e
            kinds.append(kind)
            continue
        flush()
        group_start, group_end, group_scope, kinds = s, e, scope, [kind]
    flush()
    return merged


def _covers(ranges: list[tuple[int, int, str]], n: int) -> bool:
    expected = 1
    for s, e, _ in ranges:
        if s != expected or e < s:
            return False
        expected = e + 1
    return expected == n + 1
