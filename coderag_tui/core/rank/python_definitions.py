"""The definitions in a Python file, found by one regular-expression pass instead of a parse.

Tree-sitter reads ~10 MB/s here, so parsing the stdlib's 31 MB of Python for its names took
~3.5 s of CPU, six times its cold index; this pass reads ~90 MB/s and names what the Python
query in `definitions.QUERIES` names (functions, classes, module-level assignments), with the
same `MAX_DEPTH` cut for closures. It agrees with the parse on 99.97% of the stdlib's names
and on every name of the eight Python dev repositories (benchmarks/bench_index.py
--compare-tree-sitter prints the stdlib's figure). Where they differ: names in files
tree-sitter cannot parse (it drops them), `a = 1; b = 2` (only `a` here) and `name=` at
column 0 inside brackets (a definition here).

One regex consumes everything that cannot start a definition — code, comments, strings
(triple-quoted ones across lines) — and stops at a line starting with `def`/`class`, a
compound statement's keyword or a decorator, or at a name assigned at column 0. The depth of
a definition in tree-sitter's tree follows from the statements enclosing it, found by
indentation: a body adds two levels, an `else`/`except`/… clause three, a decorator one.
"""

from __future__ import annotations

import re

# Compound statements that open a body (a def inside one sits deeper in the tree).
_HEADS = "if|elif|else|for|while|try|except|finally|with|match|case|async"
# A clause is a node inside its statement, so its body sits one level deeper.
_CLAUSES = frozenset(("elif", "else", "except", "finally"))
# Keywords that `name:` at column 0 can be (they are clauses or `try`, not annotations).
_COLUMN0_KEYWORDS = frozenset(("else", "try", "finally", "except", "lambda"))


def _line(named: bool) -> str:
    """A line that can matter; the unnamed copy is the lookahead that stops the skipping."""

    def group(name: str, body: str) -> str:
        return f"(?P<{name}>{body})" if named else f"(?:{body})"

    return (
        group("top", r"[^\W\d]\w*+")
        + r"[ \t]*+(?::(?!=)|=(?!=))"
        + "|"
        + group("indent", r"[ \t]*+")
        + r"(?:(?:async[ \t]++)?"
        + group("kw", "def|class")
        + r"[ \t]++"
        + group("name", r"[^\W\d]\w*+")
        + "|"
        + group("head", f"(?:{_HEADS})\\b|@")
        + ")"
    )


# Everything up to the next line that can matter (possessive: no backtracking), then that line
# or the end of the text. The lookahead and the named line are one pattern, so the skipping
# stops exactly where a match can be made and no position is scanned twice.
_SKIP = (
    r"(?:[^\"'#\n\\]++"  # code
    r"|\\(?s:.)?"  # an escaped character or a line continuation
    r"|\#[^\n]*+"  # a comment
    r'|"""(?:[^"\\]++|\\(?s:.)|"(?!""))*+"""'
    r"|'''(?:[^'\\]++|\\(?s:.)|'(?!''))*+'''"
    r'|"(?:[^"\\\n]++|\\(?s:.))*+"?'  # a one-line string (unclosed: to the end of the line)
    r"|'(?:[^'\\\n]++|\\(?s:.))*+'?"
    r"|\n(?!" + _line(named=False) + "))*+"
)
_PATTERN = re.compile(_SKIP + r"(?:\n(?:" + _line(named=True) + r")|\Z)")
_TOP, _NAME, _HEAD = (_PATTERN.groupindex[g] for g in ("top", "name", "head"))


def python_definitions(text: str, max_depth: int) -> list[tuple[int, str, str]]:
    """(1-based line, name, kind) of each definition in a Python file's text, in line order:
    functions and classes starting at most `max_depth` levels deep, module-level names (one
    per line: in `a = 1; b = 2` only `a`)."""
    # Every line, the first one too, starts after a newline; a byte-order mark is no code.
    text = "\n" + (text[1:] if text.startswith("\ufeff") else text)
    found: list[tuple[int, str, str]] = []
    stack: list[tuple[int, int]] = []  # open bodies: (indent, tree depth of their statements)
    decorated = -1  # the indent of the decorator waiting for its def or class
    line, counted = 0, 0  # `line` is the number of newlines before `counted`
    for match in _PATTERN.finditer(text):
        last = match.lastindex
        if last is None:  # the end of the text
            break
        if last == _TOP:
            top = match[_TOP]
            stack.clear()
            decorated = -1
            if top in _COLUMN0_KEYWORDS:  # `else:`: a clause (or `try:`) at the top level
                stack.append((0, 3 if top == "try" else 4))
                continue
            at = match.start(_TOP)
            line += text.count("\n", counted, at)
            counted = at
            found.append((line, top, "constant"))
            continue
        indent = match["indent"]
        width = len(indent.expandtabs(8)) if "\t" in indent else len(indent)
        while stack and stack[-1][0] >= width:
            stack.pop()
        depth = stack[-1][1] if stack else 1
        if last == _HEAD:
            head = match[_HEAD]
            if head == "@":
                decorated = width
                continue
            decorated = -1
            stack.append((width, depth + 3 if head in _CLAUSES else depth + 2))
            continue
        if decorated == width:  # decorated_definition, then the definition inside it
            depth += 1
        decorated = -1
        stack.append((width, depth + 2))
        if depth <= max_depth:
            at = match.start(_NAME)
            line += text.count("\n", counted, at)
            counted = at
            found.append((line, match[_NAME], "type" if match["kw"] == "class" else "function"))
    return found
