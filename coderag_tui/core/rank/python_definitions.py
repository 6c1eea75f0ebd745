"""The definitions in a Python file, found by one regular-expression pass instead of a parse.

Parsing Python with tree-sitter for its names costs several times a cold index; this pass is
much faster and names what
the Python query in `definitions.QUERIES` names (functions, classes, module-level
assignments), with the same `MAX_DEPTH` cut for closures. It agrees with the parse on nearly
every name of the stdlib and on every name of the eight Python dev repositories
(benchmarks/bench_index.py --compare-tree-sitter prints the stdlib's figure; the numbers:
benchmarks/README.md, "Definitions and the Python regex pass"). Where they
differ: names in files tree-sitter cannot parse (it drops them), `a = 1; b = 2` (only `a`
here) and `name=` at column 0 inside brackets (a definition here).

One regex consumes everything that cannot start a definition — code, comments, strings
(triple-quoted ones across lines) — and stops at a line starting with `def`/`class`, a
compound statement's keyword or a decorator, or at a name assigned at column 0; a newline
and the indentation after it are one step of it, so most lines cost one test of what follows
their indentation (faster than testing the whole line's start after each newline). The
depth of a definition in tree-sitter's tree follows from the statements enclosing it, found
by indentation: a body adds two levels, an `else`/`except`/… clause three, a decorator one.
"""

from __future__ import annotations

import re

# Compound statements that open a body (a def inside one sits deeper in the tree).
_HEADS = "if|elif|else|for|while|try|except|finally|with|match|case|async"
# A clause is a node inside its statement, so its body sits one level deeper.
_CLAUSES = frozenset(("elif", "else", "except", "finally"))
# Keywords that `name:` at column 0 can be (they are clauses or `try`, not annotations).
_COLUMN0_KEYWORDS = frozenset(("else", "try", "finally", "except", "lambda"))

# What a line that can matter starts with after its indentation: a def or class with its name,
# a compound statement's keyword or a decorator.
_STARTS = rf"(?:async[ \t]++)?(?:def|class)[ \t]++[^\W\d]|(?:{_HEADS})\b|@"
# A name assigned at column 0 (`X = 1`, `X: int`; not `X == 1` or `X := 1`).
_TOP_STARTS = r"[^\W\d]\w*+[ \t]*+[:=](?!=)"

# That line with its parts named. It holds no quote, `#` or backslash, so the skipping resumes
# after it as if it had read the line itself.
_LINE = (
    r"(?P<top>[^\W\d]\w*+)[ \t]*+(?::(?!=)|=(?!=))"
    r"|(?P<indent>[ \t]*+)(?:(?:async[ \t]++)?(?P<kw>def|class)[ \t]++(?P<name>[^\W\d]\w*+)"
    rf"|(?P<head>(?:{_HEADS})\b|@))"
)

# Everything up to the next line that can matter (possessive: no backtracking), then that line
# or the end of the text. The skipping stops at a newline exactly where `_LINE` matches
# (`_STARTS`, `_TOP_STARTS`), so no position is scanned twice. A newline and its indentation
# are one step, so an indented line that cannot matter (most lines) costs one lookahead at
# what follows its indentation.
_SKIP = (
    r"(?:[^\"'#\n\\]++"  # code
    rf"|\n[ \t]++(?!{_STARTS})"  # an indented line that cannot matter
    rf"|\n(?![ \t]|{_TOP_STARTS}|{_STARTS})"  # a line at column 0 that cannot matter
    r"|\\(?s:.)?"  # an escaped character or a line continuation
    r"|\#[^\n]*+"  # a comment
    r'|"""(?:[^"\\]++|\\(?s:.)|"(?!""))*+"""'
    r"|'''(?:[^'\\]++|\\(?s:.)|'(?!''))*+'''"
    r'|"(?:[^"\\\n]++|\\(?s:.))*+"?'  # a one-line string (unclosed: to the end of the line)
    r"|'(?:[^'\\\n]++|\\(?s:.))*+'?"
    r")*+"
)
_PATTERN = re.compile(_SKIP + rf"(?:\n(?:{_LINE})|\Z)")
_TOP, _INDENT, _KW, _NAME, _HEAD = (
    _PATTERN.groupindex[g] for g in ("top", "indent", "kw", "name", "head")
)


def python_definitions(text: str, max_depth: int) -> list[tuple[int, str, str]]:
    """(1-based line, name, kind) of each definition in a Python file's text, in line order:
    functions and classes starting at most `max_depth` levels deep, module-level names (one
    per line: in `a = 1; b = 2` only `a`)."""
    # Every line, the first one too, starts after a newline; a byte-order mark is no code.
    text = "\n" + (text[1:] if text.startswith("\ufeff") else text)
    found: list[tuple[int, str, str]] = []
    count = text.count
    # The open bodies, outermost first: their indents and the tree depth of their statements.
    # At the bottom the module (indent -1, depth 1), never closed.
    widths: list[int] = [-1]
    depths: list[int] = [1]
    decorated = -1  # the indent of the decorator waiting for its def or class
    line, counted = 0, 0  # `line` is the number of newlines before `counted`
    for match in _PATTERN.finditer(text):
        last = match.lastindex
        if last is None:  # the end of the text
            break
        if last == _TOP:
            top = match.group(_TOP)
            del widths[1:], depths[1:]
            decorated = -1
            if top in _COLUMN0_KEYWORDS:  # `else:`: a clause (or `try:`) at the top level
                widths.append(0)
                depths.append(3 if top == "try" else 4)
                continue
            at = match.start(_TOP)
            line += count("\n", counted, at)
            counted = at
            found.append((line, top, "constant"))
            continue
        indent = match.group(_INDENT)
        width = len(indent.expandtabs(8)) if "\t" in indent else len(indent)
        while widths[-1] >= width:
            widths.pop()
            depths.pop()
        depth = depths[-1]
        if last == _HEAD:
            head = match.group(_HEAD)
            if head == "@":
                decorated = width
                continue
            decorated = -1
            widths.append(width)
            depths.append(depth + 3 if head in _CLAUSES else depth + 2)
            continue
        if decorated == width:  # decorated_definition, then the definition inside it
            depth += 1
        decorated = -1
        widths.append(width)
        depths.append(depth + 2)
        if depth <= max_depth:
            at = match.start(_NAME)
            line += count("\n", counted, at)
            counted = at
            kind = "type" if match.group(_KW) == "class" else "function"
            found.append((line, match.group(_NAME), kind))
    return found
