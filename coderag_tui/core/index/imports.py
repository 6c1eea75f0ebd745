"""Which files of the repository a file imports, read with tree-sitter.

The seed paper's structure-aware list (after DraCo's import graph) puts the files a query's
file imports, and those importing it, before the BM25 list. This module finds the import
statements of Python, JavaScript, TypeScript (and TSX), Go, Java and Rust and resolves each
to files of the repository by their paths; a module from outside the repository (the
standard library, a package) resolves to nothing. Resolution is by path, not by a build
system: Python's dotted names and relative imports, JavaScript's relative specifiers (with
or without an extension, or a folder's index), Go's import paths (the folder whose path the
import ends with), Java's qualified names (a wildcard takes the package's folder), Rust's
`mod x;` and `use crate::/super::/self::` paths (the longest prefix that is a file).
"""

from __future__ import annotations

import logging
import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coderag_tui.core.index.languages import language_for, parser_for

if TYPE_CHECKING:
    import tree_sitter

logger = logging.getLogger(__name__)

# Every language whose imports are read (TSX shares TypeScript's statements).
IMPORT_LANGUAGES: tuple[str, ...] = (
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "java",
    "rust",
)

_JS = """
(import_statement source: (string (string_fragment) @module))
(export_statement source: (string (string_fragment) @module))
(call_expression function: (identifier) @require
  arguments: (arguments . (string (string_fragment) @module)))
(call_expression function: (import)
  arguments: (arguments . (string (string_fragment) @module)))
"""

# One query per language; @module captures a module's name as written (see `_specifiers`).
QUERIES: dict[str, str] = {
    "python": """
(import_statement name: (dotted_name) @module)
(import_statement name: (aliased_import name: (dotted_name) @module))
(import_from_statement) @from
""",
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": "(import_spec path: (interpreted_string_literal) @module)",
    "java": "(import_declaration) @module",
    "rust": """
(use_declaration argument: (_) @module)
(mod_item name: (identifier) @mod !body)
""",
}
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
_queries: dict[str, tree_sitter.Query | None] = {}


def _query(language: str) -> tree_sitter.Query | None:
    """The compiled import query of a language (once per process), or None without one."""
    if language not in _queries:
        parser = parser_for(language)
        source = QUERIES.get(language)
        compiled = None
        if parser is not None and parser.language is not None and source is not None:
            import tree_sitter

            try:
                compiled = tree_sitter.Query(parser.language, source)
            except Exception:  # a grammar whose node names differ: no imports for it
                logger.debug("the %s imports query does not compile", language, exc_info=True)
        _queries[language] = compiled
    return _queries[language]


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _python_from(node: tree_sitter.Node) -> list[str]:
    """`from M import a, b` -> M, M.a, M.b (a name may be a module); dots kept for relatives."""
    module = node.child_by_field_name("module_name")
    if module is None:
        return []
    base = _text(module)
    out = [base]
    for name in node.children_by_field_name("name"):
        inner = name.child_by_field_name("name") if name.type == "aliased_import" else name
        if inner is not None:
            joiner = "" if base.endswith(".") else "."
            out.append(f"{base}{joiner}{_text(inner)}")
    return out


def _rust_paths(node: tree_sitter.Node) -> list[str]:
    """A `use` argument as `::` paths, a use list (`a::{b, c::d}`) expanded."""
    kind = node.type
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        prefix = _text(path) + "::" if path is not None else ""
        items = node.child_by_field_name("list")
        return [prefix + p for p in _rust_paths(items)] if items is not None else [prefix[:-2]]
    if kind == "use_list":
        return [p for child in node.named_children for p in _rust_paths(child)]
    if kind == "use_as_clause":
        path = node.child_by_field_name("path")
        return _rust_paths(path) if path is not None else []
    if kind == "use_wildcard":
        return [_text(node).removesuffix("::*").removesuffix("*")]
    return [_text(node)]


def file_imports(data: bytes, language: str | None) -> list[str]:  # noqa: C901
    """The modules one file imports, as written (`a.b`, `./x`, `crate::m::T`, `mod:name`),
    in order of appearance without repeats; [] for a language this module does not read."""
    if language not in QUERIES:
        return []
    query = _query(language)
    parser = parser_for(language) if query is not None else None
    if query is None or parser is None:
        return []
    import tree_sitter

    try:
        tree = parser.parse(data)
        matches = tree_sitter.QueryCursor(query).matches(tree.root_node)
    except Exception:  # the binding refused the input: no imports known
        logger.debug("tree-sitter could not parse a %s file", language, exc_info=True)
        return []
    found: list[tuple[int, str]] = []
    for _, captures in matches:
        if "require" in captures and _text(captures["require"][0]) != "require":
            continue
        for name, nodes in captures.items():
            for node in nodes:
                at = node.start_byte
                if name == "from":
                    found += [(at, m) for m in _python_from(node)]
                elif name == "mod":
                    found.append((at, f"mod:{_text(node)}"))
                elif name == "module" and language == "rust":
                    found += [(at, p) for p in _rust_paths(node)]
                elif name == "module" and language == "java":
                    text = _text(node).removeprefix("import").strip().removesuffix(";").strip()
                    found.append((at, text.removeprefix("static").strip().replace(" ", "")))
                elif name == "module":
                    found.append((at, _text(node).strip('"`')))
    found.sort(key=lambda pair: pair[0])
    return list(dict.fromkeys(m for _, m in found if m))


@dataclass
class _Paths:
    """The repository's files, looked up by path and by folder."""

    files: frozenset[str]
    by_folder: Mapping[str, tuple[str, ...]]
    folders: frozenset[str]

    @classmethod
    def of(cls, paths: Iterable[str]) -> _Paths:
        files = frozenset(paths)
        folders: dict[str, list[str]] = defaultdict(list)
        every: set[str] = set()
        for path in sorted(files):
            folder = posixpath.dirname(path)
            folders[folder].append(path)
            while folder:
                every.add(folder)
                folder = posixpath.dirname(folder)
        return cls(files, {k: tuple(v) for k, v in folders.items()}, frozenset(every))

    def ending(self, suffix: str) -> list[str]:
        """Files whose path is `suffix` or ends with `/suffix`."""
        return [p for p in self.files if p == suffix or p.endswith("/" + suffix)]


def _python(path: str, module: str, paths: _Paths) -> list[str]:
    dots = len(module) - len(module.lstrip("."))
    rest = module[dots:].replace(".", "/")
    if dots:
        folder = posixpath.dirname(path)
        for _ in range(dots - 1):
            folder = posixpath.dirname(folder)
        stem = posixpath.join(folder, rest) if rest else folder
        wanted = [f"{stem}.py", f"{stem}/__init__.py"] if rest else [f"{stem}/__init__.py"]
        return [p for p in wanted if p in paths.files]
    for candidate in (f"{rest}.py", f"{rest}/__init__.py"):
        found = paths.ending(candidate)
        if found:
            return sorted(found)
    return []


def _javascript(path: str, module: str, paths: _Paths) -> list[str]:
    if not module.startswith("."):
        return []  # a package, not a file of the repository
    stem = posixpath.normpath(posixpath.join(posixpath.dirname(path), module))
    if stem.startswith(".."):
        return []
    base = stem.rsplit(".", 1)[0] if posixpath.splitext(stem)[1] in (".js", ".mjs") else stem
    for candidate in (
        stem,
        *(base + ext for ext in _JS_EXTENSIONS),
        *(f"{stem}/index{ext}" for ext in _JS_EXTENSIONS),
    ):
        if candidate in paths.files:
            return [candidate]
    return []


def _go(path: str, module: str, paths: _Paths) -> list[str]:
    parts = module.split("/")
    for start in range(len(parts)):  # the longest tail of the import path that is a folder
        folder = "/".join(parts[start:])
        if folder in paths.by_folder:
            return [
                p
                for p in paths.by_folder[folder]
                if p.endswith(".go") and not p.endswith("_test.go") and p != path
            ]
    return []


def _java(path: str, module: str, paths: _Paths) -> list[str]:
    parts = module.split(".")
    if parts[-1] == "*":
        folder = "/".join(parts[:-1])
        hits = [f for f in paths.folders if f == folder or f.endswith("/" + folder)]
        return sorted(p for f in hits for p in paths.by_folder.get(f, ()) if p.endswith(".java"))
    for end in range(len(parts), 0, -1):  # a static import names a member of the class
        found = paths.ending("/".join(parts[:end]) + ".java")
        if found:
            return sorted(found)
    return []


def _rust_module_folder(path: str) -> str:
    """The folder a Rust file's own submodules live in (`a/b.rs` -> `a/b`, `a/mod.rs` -> `a`)."""
    folder, name = posixpath.split(path)
    if name in ("mod.rs", "lib.rs", "main.rs"):
        return folder
    return posixpath.join(folder, name.removesuffix(".rs"))


def _crate_root(path: str) -> str:
    """The `src` folder of the crate holding `path` (its folder when there is none)."""
    parts = path.split("/")
    if "src" in parts[:-1]:
        at = len(parts) - 2 - parts[:-1][::-1].index("src")
        return "/".join(parts[: at + 1])
    return posixpath.dirname(path)


def _rust(path: str, module: str, paths: _Paths) -> list[str]:
    if module.startswith("mod:"):
        folder = _rust_module_folder(path)
        name = module[4:]
        wanted = (posixpath.join(folder, f"{name}.rs"), posixpath.join(folder, name, "mod.rs"))
        return [p for p in wanted if p in paths.files][:1]
    parts = [p for p in module.split("::") if p]
    if not parts:
        return []
    head = parts[0]
    if head == "crate":
        folder, parts = _crate_root(path), parts[1:]
    elif head in ("self", "super"):
        folder = _rust_module_folder(path)
        while parts and parts[0] in ("self", "super"):
            if parts[0] == "super":
                folder = posixpath.dirname(folder)
            parts = parts[1:]
    else:
        return []  # another crate (std, a dependency; a workspace sibling is left out)
    for end in range(len(parts), 0, -1):  # the longest prefix that is a module file
        stem = posixpath.join(folder, *parts[:end])
        for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
            if candidate in paths.files:
                return [candidate]
    return []


_RESOLVERS: dict[str, Callable[[str, str, _Paths], list[str]]] = {
    "python": _python,
    "javascript": _javascript,
    "typescript": _javascript,
    "tsx": _javascript,
    "go": _go,
    "java": _java,
    "rust": _rust,
}


@dataclass(frozen=True)
class ImportGraph:
    """Which repository files each file imports, and which files import it."""

    imports: Mapping[str, tuple[str, ...]]
    imported_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, paths: Iterable[str], read: Callable[[str], bytes | None]) -> ImportGraph:
        """Read and resolve the imports of every file among `paths` (`read` gives a file's
        bytes, None when it cannot); files in other languages import nothing."""
        table = _Paths.of(paths)
        imports: dict[str, tuple[str, ...]] = {}
        by: dict[str, list[str]] = defaultdict(list)
        for path in sorted(table.files):
            language = language_for(path)
            resolve = _RESOLVERS.get(language or "")
            if resolve is None:
                continue
            data = read(path)
            if data is None:
                continue
            found: dict[str, None] = {}
            for module in file_imports(data, language):
                found.update(dict.fromkeys(p for p in resolve(path, module, table) if p != path))
            imports[path] = tuple(found)
            for target in found:
                by[target].append(path)
        return cls(imports, {k: tuple(v) for k, v in by.items()})

    def related(self, path: str) -> tuple[str, ...]:
        """The files `path` imports (in the order it imports them), then those importing it."""
        out = dict.fromkeys(self.imports.get(path, ()))
        out.update(dict.fromkeys(self.imported_by.get(path, ())))
        out.pop(path, None)
        return tuple(out)
