"""The names each chunk defines (functions, classes, methods, types, top-level constants).

Built with the lexical stage and saved beside its BM25 index under the same generation, so it
is rebuilt exactly when the chunks change. Each file is put back together from its chunks,
parsed once with its tree-sitter grammar, and one Query per language (captures run in C)
names its definitions; a definition belongs to the chunk holding the line of its name (with
overlapping windows, to every chunk holding that line). Files without a grammar define nothing.
Python is not parsed: one regex pass (`python_definitions`) names what its query would.

Names are looked up by their *form*: lower case without underscores, so `parse_config`,
`parseConfig` and `ParseConfig` are one key, and a query's words `parse config` can be joined
into it; each definition keeps its kind (type, function, constant) and spelling.

Parsing is the cost: parsing Python with tree-sitter costs several times a cold index; the
regex pass is much faster and agrees with the parse on nearly every name
(benchmarks/bench_index.py --compare-tree-sitter; the figures: benchmarks/README.md,
"Definitions and the Python regex pass"). Most of the rest of the build is the regex pass: where
each name lands is sorted out with numpy and the saved text joined once (`_holders`,
`_pack`). Parsed results are kept per file content hash beside the index, so a rebuild after
an edit parses only the files that changed, and a build parses each distinct text once (copies
of a file are common in a monorepo). Scanned files are not kept: hashing and writing
them would cost every cold build more than it saves a rebuild, which rebuilds the
BM25 index anyway. A cold build of many chunks runs beside the BM25
build in a second process (`core.rank.definitions_process`); a repository's first index is
followed file by file as it is written (`core.rank.definitions_follow`).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from coderag_tui.core.capped import parse_json
from coderag_tui.core.hashing import utf8_hash
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.languages import parser_for
from coderag_tui.core.index.persist import read_folder_meta, save_folder
from coderag_tui.core.rank.python_definitions import python_definitions
from coderag_tui.core.rank.saved_lines import SavedLines
from coderag_tui.core.rank.segments import MAX_DRIFT, CurrentTable, Drift, FileTable, delta_fits
from coderag_tui.core.records import Chunk

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import tree_sitter

    from coderag_tui.core.index.store import Store
    from coderag_tui.settings import Settings

# Bump when the queries or the saved layout change: saved definitions are then rebuilt.
EXTRACTOR_VERSION = 5
_META = "coderag-definitions.json"
_NAMES = "names.txt"  # the name forms, sorted, one a line
_WHERE = "defined.txt"  # line by line with names.txt: `kind:chunk:name,…`
_WHERE_AT = "defined-at.npy"  # where each line of defined.txt starts, and where the file ends
_FILES_CACHE = "definitions-by-content.json"  # per file text hash: [[line, name, kind], …]

# Kinds of definition: a type (class, struct, interface, trait, enum, module, type alias),
# a function (function, method, macro) or a top-level constant or variable.
KINDS = ("type", "function", "constant")
_KIND_CODE = {"type": "t", "function": "f", "constant": "c"}
_CODE_KIND = {v: k for k, v in _KIND_CODE.items()}

_JS_COMMON = """
(function_declaration name: (identifier) @function)
(generator_function_declaration name: (identifier) @function)
(method_definition name: (property_identifier) @function)
(variable_declarator name: (identifier) @function
  value: [(arrow_function) (function_expression) (generator_function)])
(assignment_expression left: (member_expression property: (property_identifier) @function)
  right: [(arrow_function) (function_expression) (generator_function)])
(program (lexical_declaration (variable_declarator name: (identifier) @constant)))
(program (variable_declaration (variable_declarator name: (identifier) @constant)))
(program (export_statement declaration: (lexical_declaration
  (variable_declarator name: (identifier) @constant))))
"""
_TS_TYPES = """
(class_declaration name: (type_identifier) @type)
(abstract_class_declaration name: (type_identifier) @type)
(interface_declaration name: (type_identifier) @type)
(type_alias_declaration name: (type_identifier) @type)
(enum_declaration name: (identifier) @type)
(internal_module name: (identifier) @type)
(function_signature name: (identifier) @function)
(abstract_method_signature name: (property_identifier) @function)
"""
_C_COMMON = """
(function_definition declarator: (function_declarator declarator: (identifier) @function))
(function_definition declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @function)))
(struct_specifier name: (type_identifier) @type body: (_))
(union_specifier name: (type_identifier) @type body: (_))
(enum_specifier name: (type_identifier) @type body: (_))
(type_definition declarator: (type_identifier) @type)
(preproc_def name: (identifier) @constant)
(preproc_function_def name: (identifier) @function)
"""

# One tree-sitter query per language; the capture name is the kind of definition.
QUERIES: dict[str, str] = {
    "python": """
(function_definition name: (identifier) @function)
(class_definition name: (identifier) @type)
(module (expression_statement (assignment left: (identifier) @constant)))
""",
    "javascript": _JS_COMMON + "(class_declaration name: (identifier) @type)\n",
    "typescript": _JS_COMMON + _TS_TYPES,
    "tsx": _JS_COMMON + _TS_TYPES,
    "go": """
(function_declaration name: (identifier) @function)
(method_declaration name: (field_identifier) @function)
(type_spec name: (type_identifier) @type)
(source_file (const_declaration (const_spec name: (identifier) @constant)))
(source_file (var_declaration (var_spec name: (identifier) @constant)))
""",
    "rust": """
(function_item name: (identifier) @function)
(function_signature_item name: (identifier) @function)
(macro_definition name: (identifier) @function)
(struct_item name: (type_identifier) @type)
(enum_item name: (type_identifier) @type)
(union_item name: (type_identifier) @type)
(trait_item name: (type_identifier) @type)
(type_item name: (type_identifier) @type)
(mod_item name: (identifier) @type)
(const_item name: (identifier) @constant)
(static_item name: (identifier) @constant)
""",
    "java": """
(class_declaration name: (identifier) @type)
(interface_declaration name: (identifier) @type)
(enum_declaration name: (identifier) @type)
(record_declaration name: (identifier) @type)
(annotation_type_declaration name: (identifier) @type)
(method_declaration name: (identifier) @function)
((field_declaration declarator: (variable_declarator name: (identifier) @constant))
  (#match? @constant "^[A-Z][A-Z0-9_]*$"))
""",
    "c": _C_COMMON,
    "cpp": _C_COMMON
    + """
(function_definition declarator: (function_declarator
  declarator: (qualified_identifier name: (identifier) @function)))
(function_definition declarator: (function_declarator declarator: (field_identifier) @function))
(field_declaration declarator: (function_declarator declarator: (field_identifier) @function))
(class_specifier name: (type_identifier) @type body: (_))
(namespace_definition name: (namespace_identifier) @type)
""",
    "ruby": """
(method name: (_) @function)
(singleton_method name: (_) @function)
(class name: (constant) @type)
(class name: (scope_resolution name: (constant) @type))
(module name: (constant) @type)
(module name: (scope_resolution name: (constant) @type))
(program (assignment left: (constant) @constant))
""",
    "c_sharp": """
(class_declaration name: (identifier) @type)
(struct_declaration name: (identifier) @type)
(interface_declaration name: (identifier) @type)
(enum_declaration name: (identifier) @type)
(record_declaration name: (identifier) @type)
(delegate_declaration name: (identifier) @type)
(method_declaration name: (identifier) @function)
""",
    "php": """
(function_definition name: (name) @function)
(method_declaration name: (name) @function)
(class_declaration name: (name) @type)
(interface_declaration name: (name) @type)
(trait_declaration name: (name) @type)
(enum_declaration name: (name) @type)
(const_element (name) @constant)
""",
    "kotlin": """
(class_declaration name: (_) @type)
(object_declaration name: (_) @type)
(function_declaration name: (_) @function)
(type_alias type: (identifier) @type)
(source_file (property_declaration (variable_declaration (identifier) @constant)))
""",
}

_queries: dict[str, tree_sitter.Query | None] = {}
# How deep in the syntax tree a definition may start: methods of nested classes and namespaces
# are in; closures deep inside functions are left out, and leaving them costs a third of the
# query time (the stdlib: captures 0.36 s instead of 0.88 s, 6% fewer names).
MAX_DEPTH = 6

# A definition found in a file: (1-based line of its name, name, kind).
FileDefinition = tuple[int, str, str]

# Definitions a follower left to finish on its own is building: they, loaded (or built here
# when it ended without saving them), once it is done; None while it runs.
Later = Callable[[], "Definitions | None"]
# Languages whose definitions a scan of the text finds, ~10x faster than parsing it; called
# with the file's text and MAX_DEPTH, it names what the language's query names.
Scanner = Callable[[str, int], list[FileDefinition]]
SCANNERS: dict[str, Scanner] = {"python": python_definitions}


def form(name: str) -> str:
    """The lookup key of a name: lower case, underscores, dashes and `$` left out."""
    return name.lower().replace("_", "").replace("-", "").replace("$", "")


def _query(language: str) -> tree_sitter.Query | None:
    """The compiled query of a language (once per process), or None without a grammar."""
    if language not in _queries:
        parser = parser_for(language)
        grammar = parser.language if parser is not None else None
        source = QUERIES.get(language)
        compiled = None
        if grammar is not None and source is not None:
            import tree_sitter

            try:
                compiled = tree_sitter.Query(grammar, source)
            except Exception:  # a grammar version whose node names differ: no definitions
                logger.debug("the %s definitions query does not compile", language, exc_info=True)
                compiled = None
        _queries[language] = compiled
    return _queries[language]


def file_definitions(data: bytes, language: str | None) -> list[FileDefinition]:
    """The definitions in one file's UTF-8 text, in line order; [] without a grammar."""
    scanner = SCANNERS.get(language) if language else None
    if scanner is not None:
        return scanner(data.decode("utf-8", "replace"), MAX_DEPTH)
    return parsed_definitions(data, language)


def parsed_definitions(data: bytes, language: str | None) -> list[FileDefinition]:
    """The definitions the language's tree-sitter query names, in line order; [] without a
    grammar (what `file_definitions` does for every language without a scanner)."""
    if not language:
        return []
    query = _query(language)
    parser = parser_for(language) if query is not None else None
    if query is None or parser is None:
        return []
    import tree_sitter

    try:
        tree = parser.parse(data)
        cursor = tree_sitter.QueryCursor(query)
        cursor.set_max_start_depth(MAX_DEPTH)
        captures = cursor.captures(tree.root_node)
    except Exception:  # the binding refused the input: this file defines nothing we know
        logger.debug("tree-sitter could not parse a %s file", language, exc_info=True)
        return []
    found: dict[tuple[int, str], str] = {}
    for kind, nodes in captures.items():
        for node in nodes:
            raw = node.text
            if not raw:
                continue
            name = raw.decode("utf-8", "replace")
            key = (node.start_point[0] + 1, name)
            # A top-level `const f = () => …` is both; the function says more.
            if found.get(key) != "function":
                found[key] = kind
    return sorted((line, name, kind) for (line, name), kind in found.items())


def _files(chunks: Sequence[Chunk]) -> dict[str, list[int]]:
    """Chunk indexes per path, in line order."""
    by_path: dict[str, list[int]] = defaultdict(list)
    for i, chunk in enumerate(chunks):
        by_path[chunk.path].append(i)
    for ids in by_path.values():
        ids.sort(key=lambda i: chunks[i].start_line)
    return by_path


def _file_text(chunks: Sequence[Chunk], ids: Sequence[int]) -> str:
    """A file's text put back together from its chunks (overlapping lines taken once)."""
    parts: list[str] = []  # runs of whole lines, joined by newlines at the end
    have = 0  # lines put back so far
    for i in ids:
        chunk = chunks[i]
        if chunk.end_line <= have:
            continue
        text, start = chunk.text, chunk.start_line
        if start > have + 1:  # keep line numbers on a gap
            parts.extend([""] * (start - 1 - have))
        elif start <= have:  # overlapping windows: drop the lines already taken
            skip = have - start + 1
            pieces = text.split("\n", skip)
            if len(pieces) <= skip:
                continue
            text = pieces[skip]
            start += skip
        parts.append(text)
        have = start + text.count("\n")
    return "\n".join(parts)


class ParseJob(NamedTuple):
    """A file `file_job` leaves to tree-sitter: its entry's key, UTF-8 text and language."""

    digest: str
    data: bytes
    language: str


def file_job(
    file_chunks: Sequence[Chunk],
    known: Mapping[str, list[FileDefinition]] | None = None,
    seen: dict[str, list[FileDefinition]] | None = None,
    scanners: Mapping[str, Scanner] = SCANNERS,
) -> list[FileDefinition] | ParseJob:
    """`file_found` up to the parse: the definitions when no parse is needed ([] without a
    query, its language scanned, or the entry `known` or `seen` holds, which `seen`
    receives), else the parse to do (whose result is the file's entry)."""
    language = file_chunks[0].language if file_chunks else None
    if not language or language not in QUERIES:
        return []
    text = _file_text(file_chunks, range(len(file_chunks)))
    scanner = scanners.get(language)
    if scanner is not None:
        return scanner(text, MAX_DEPTH)
    data = text.encode("utf-8", "surrogatepass")
    digest = f"{language}:{utf8_hash(data)}"
    cached = known.get(digest) if known is not None else None
    if cached is None and seen is not None:
        cached = seen.get(digest)
    if cached is None:
        return ParseJob(digest, data, language)
    if seen is not None:
        seen[digest] = cached
    return cached


def file_found(
    file_chunks: Sequence[Chunk],
    known: Mapping[str, list[FileDefinition]] | None = None,
    seen: dict[str, list[FileDefinition]] | None = None,
    scanners: Mapping[str, Scanner] = SCANNERS,
) -> list[FileDefinition]:
    """The definitions in one file put back together from its chunks (in line order): its
    language scanned, or parsed unless `known` or `seen` holds its text's entry (a copy of a
    file already parsed: vendored code, a repository twice in a monorepo); [] for a language
    without a query. `seen` receives the entry of a parsed file (see `Definitions.build`)."""
    job = file_job(file_chunks, known, seen, scanners)
    if not isinstance(job, ParseJob):
        return job
    found = parsed_definitions(job.data, job.language)
    if seen is not None:
        seen[job.digest] = found
    return found


class Defined(NamedTuple):
    """One definition of a looked-up name: the chunk holding it, its kind and its spelling."""

    chunk: int
    kind: str
    name: str


_KIND_RANK = {"type": 2, "function": 1, "constant": 0}
_RANK_CODE = ("c", "f", "t")  # the saved code of each rank


@dataclass
class Definitions:
    """Which chunks define which names, by name form (see `form`)."""

    n_docs: int
    # form -> "kind:chunk:name,…" as saved; parsed on first lookup (a start-up stays fast)
    _raw: Mapping[str, str]
    _parsed: dict[str, tuple[Defined, ...]] = field(default_factory=dict, repr=False)
    # After an edit: where this base's chunks are now, and the changed files' definitions
    # (numbered over `drift.added`); see `shifted`.
    _drift: Drift | None = field(default=None, repr=False)
    _delta: Definitions | None = field(default=None, repr=False)

    def __len__(self) -> int:
        if self._delta is None:
            return len(self._raw)
        return len(self._raw.keys() | self._delta._raw.keys())

    def shifted(self, drift: Drift, delta: Definitions) -> Definitions:
        """This base's definitions in the current chunk list: chunks of changed files dropped,
        `delta` (built over the current `drift.added` chunks) added."""
        return Definitions(drift.n_chunks, self._raw, _drift=drift, _delta=delta)

    def _own(self, key: str) -> tuple[Defined, ...]:
        """This base's definitions of one form; none when its saved entry is unreadable (each
        entry is checked when looked up, so loading reads no entry)."""
        raw = self._raw.get(key)
        if raw is None or not _SAVED_ENTRY.fullmatch(raw):
            return ()
        items = []
        for item in raw.split(","):
            code, index, name = item.split(":", 2)
            if int(index) >= self._base_docs:
                return ()
            items.append(Defined(int(index), _CODE_KIND.get(code, "function"), name))
        return tuple(items)

    @property
    def _base_docs(self) -> int:
        return self._drift.remap.size if self._drift is not None else self.n_docs

    def lookup(self, key: str) -> tuple[Defined, ...]:
        """Every definition whose name has this form, in chunk order."""
        found = self._parsed.get(key)
        if found is None:
            found = self._own(key)
            drift = self._drift
            if drift is not None:
                remap, added = drift.remap, drift.added
                items = [d._replace(chunk=int(remap[d.chunk])) for d in found]
                if self._delta is not None:
                    items += [
                        d._replace(chunk=int(added[d.chunk])) for d in self._delta.lookup(key)
                    ]
                found = tuple(sorted((d for d in items if d.chunk >= 0), key=lambda d: d.chunk))
            self._parsed[key] = found
        return found

    def __contains__(self, key: object) -> bool:
        if self._drift is None:
            return key in self._raw
        return isinstance(key, str) and bool(self.lookup(key))

    @classmethod
    def from_entries(cls, n_docs: int, entries: Iterable[tuple[int, str, str]]) -> Definitions:
        """From (chunk index, name, kind) entries; a chunk defining two spellings of one form
        keeps the weightier kind (type, then function, then constant; the first entry of
        equal kinds)."""
        rows = list(entries)
        names = [row[1] for row in rows]
        keys, key_of = _keys(names)
        chunk_ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        ranks = np.fromiter((_KIND_RANK[row[2]] for row in rows), dtype=np.int64, count=len(rows))
        spelled = np.array(names, dtype=object)
        first = np.arange(len(rows), dtype=np.int64)
        return cls(n_docs, _pack(keys, key_of, chunk_ids, spelled, ranks, first))

    @classmethod
    def build(
        cls,
        chunks: Sequence[Chunk],
        known: Mapping[str, list[FileDefinition]] | None = None,
        seen: dict[str, list[FileDefinition]] | None = None,
        *,
        scanners: Mapping[str, Scanner] = SCANNERS,
    ) -> Definitions:
        """Scan or parse every file with a query once. `known` maps a parsed file's language
        and text hash to its definitions (those files are not parsed again); `seen` receives
        the entry of every parsed file of this build, to be saved as the next build's `known`.
        `scanners` are the languages scanned instead of parsed ({}: parse every file)."""
        if isinstance(chunks, ChunkList):
            chunks = list(chunks)  # every text is read: once, a page at a time
        files: list[tuple[list[int], list[FileDefinition]]] = []
        for ids in _files(chunks).values():
            found = file_found([chunks[i] for i in ids], known, seen, scanners)
            if found:
                files.append((ids, found))
        starts = np.fromiter((c.start_line for c in chunks), dtype=np.int64, count=len(chunks))
        ends = np.fromiter((c.end_line for c in chunks), dtype=np.int64, count=len(chunks))
        return cls.of_files(len(chunks), starts, ends, files)

    @classmethod
    def of_files(
        cls,
        n_docs: int,
        starts: np.ndarray,
        ends: np.ndarray,
        files: Sequence[tuple[Sequence[int], list[FileDefinition]]],
    ) -> Definitions:
        """The definitions of `n_docs` chunks (their first and last lines `starts`, `ends`)
        from each file's chunk indexes, in line order, and what `file_found` found in it (the
        files in chunk order): what `build` makes once every file is scanned or parsed."""
        return cls(n_docs, _holders(starts, ends, files))

    def save(
        self,
        directory: Path,
        extra: dict[str, Any],
        *,
        table: FileTable | None = None,
        drift: Drift | None = None,
    ) -> None:
        """Write atomically (see `save_folder`), with the file table a base was built from or
        the drift a delta was built for."""

        def write(tmp: Path) -> None:
            names = self._raw if isinstance(self._raw, Names) else Names.of(self._raw)
            keys = names.keys_list
            if isinstance(keys, SavedLines):  # loaded: written as it is held
                (tmp / _NAMES).write_bytes(bytes(keys.data))
            else:
                (tmp / _NAMES).write_text("\n".join(keys), encoding="utf-8")
            values = names.values_list
            if isinstance(values, SavedLines):  # built or loaded: written as it is held
                data, at = values.data, values.at
            else:
                encoded = [v.encode("utf-8") + b"\n" for v in values]
                data = b"".join(encoded)
                at = np.zeros(len(encoded) + 1, dtype=np.int64)
                np.cumsum([len(e) for e in encoded], out=at[1:])
            (tmp / _WHERE).write_bytes(data)
            np.save(tmp / _WHERE_AT, np.asarray(at, dtype=np.int64), allow_pickle=False)
            if table is not None:
                table.save(tmp)
            if drift is not None:
                drift.save(tmp)

        meta = {"format": EXTRACTOR_VERSION, "n_docs": self.n_docs, **extra}
        save_folder(directory, write, meta, _META)

    @classmethod
    def load(cls, directory: Path) -> Definitions:
        """Read what `save` wrote; ValueError when it is missing or damaged."""
        meta = read_folder_meta(directory, _META, EXTRACTOR_VERSION)
        if meta is None:
            raise ValueError(f"no definitions at {directory}")
        try:
            names = SavedLines.split((directory / _NAMES).read_bytes())
            values = SavedLines.open(directory / _WHERE, directory / _WHERE_AT, len(names))
        except (OSError, ValueError) as exc:
            raise ValueError(f"the definitions at {directory} are damaged: {exc}") from exc
        return cls(int(meta["n_docs"]), Names(names, values))


def _holders(
    starts: np.ndarray,
    ends: np.ndarray,
    files: Sequence[tuple[Sequence[int], list[FileDefinition]]],
) -> Names:
    """The saved entries of the definitions of `files` (each file's chunk indexes in line
    order, and its definitions; chunk `i` spans lines `starts[i]`..`ends[i]`): each definition
    belongs to every chunk of its file holding its line. Windows may overlap, so from the last
    chunk starting at or before the line, back while the chunks hold it: one numpy step per
    overlapping window (one in all without overlap)."""
    found = [d for _, defined in files for d in defined]
    if not found:
        none = np.zeros(0, dtype=np.int64)
        return _pack([], none, none, np.zeros(0, dtype=object), none, none)
    ids = np.fromiter((i for f, _ in files for i in f), dtype=np.int64)
    starts, ends = starts[ids], ends[ids]
    chunk_file = np.repeat(np.arange(len(files), dtype=np.int64), [len(f) for f, _ in files])
    lines_, names, kinds = zip(*found, strict=True)
    lines = np.array(lines_, dtype=np.int64)
    counts = [len(defined) for _, defined in files]
    def_file = np.repeat(np.arange(len(files), dtype=np.int64), counts)
    # (file, line) as one sortable number: chunks are in file order, then start line
    at = np.searchsorted(chunk_file << 32 | starts, def_file << 32 | lines, side="right") - 1
    held: list[np.ndarray] = []  # per step back: the definitions held by chunk `at - step`
    holder: list[np.ndarray] = []  # and that chunk's index in `chunks`
    alive = np.ones(len(found), dtype=bool)
    while True:
        place = np.maximum(at, 0)
        alive &= (at >= 0) & (chunk_file[place] == def_file) & (ends[place] >= lines)
        if not alive.any():
            break
        which = np.flatnonzero(alive)
        held.append(which)
        holder.append(ids[place[which]])
        at = at - 1
    rows = np.concatenate(held)  # the definition of each entry
    keys, key_of = _keys(list(names))
    spelled = np.array(names, dtype=object)
    ranks = np.fromiter(map(_KIND_RANK.__getitem__, kinds), dtype=np.int64, count=len(kinds))
    # Entries of one form in one chunk, of equal kinds: the first definition in the file's.
    return _pack(keys, key_of[rows], np.concatenate(holder), spelled[rows], ranks[rows], rows)


def _keys(names: list[str]) -> tuple[list[str], np.ndarray]:
    """The forms of `names` sorted, each once, and where each name's form is among them (-1:
    left out, see `_forms`)."""
    forms = _forms(names)
    keys = sorted(set(forms) - {""})
    place = {key: i for i, key in enumerate(keys)}
    key_of = np.fromiter(map(place.get, forms, repeat(-1)), dtype=np.int64, count=len(forms))
    return keys, key_of


def _pack(
    keys: list[str],
    key_of: np.ndarray,
    chunk_ids: np.ndarray,
    names: np.ndarray,
    ranks: np.ndarray,
    first: np.ndarray,
) -> Names:
    """The saved layout of entries (form `keys[key_of]` or left out when -1, chunk index,
    name, kind rank): per form, sorted, one line `kind:chunk:name,…` in chunk order; of the
    entries of one chunk and form the weightiest kind is kept, then the smallest `first`.
    Sorted and deduplicated with numpy, the text joined once: with `_holders` ~0.07 s on the
    stdlib, where grouping in dicts of strings took ~0.11 s."""
    kept = np.flatnonzero(key_of >= 0)
    order = kept[np.lexsort((first[kept], -ranks[kept], chunk_ids[kept], key_of[kept]))]
    key_in, chunk_of = key_of[order], chunk_ids[order]
    new = np.ones(len(order), dtype=bool)  # the first entry of each (form, chunk)
    new[1:] = (key_in[1:] != key_in[:-1]) | (chunk_of[1:] != chunk_of[:-1])
    order, key_in, chunk_of = order[new], key_in[new], chunk_of[new]
    ends_line = np.ones(len(order), dtype=bool)  # the last entry of each form
    ends_line[:-1] = key_in[1:] != key_in[:-1]
    codes = np.array(_RANK_CODE)[ranks[order]].tolist()
    seps = np.where(ends_line, "\n", ",").tolist()
    text = "".join(
        [
            f"{c}:{i}:{n}{s}"
            for c, i, n, s in zip(
                codes, chunk_of.tolist(), names[order].tolist(), seps, strict=True
            )
        ]
    )
    data = text.encode("utf-8")
    at = np.zeros(len(keys) + 1, dtype=np.int64)  # no saved entry holds a newline
    at[1:] = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
    return Names(keys, SavedLines(data, at))


def _forms(names: list[str]) -> list[str]:
    """`form` of each name, "" for one the saved layout cannot hold or shorter than two
    characters. Lowered and stripped as one text (every name on its own line) when none
    holds a space, comma, colon or newline (~5x faster than name by name)."""
    joined = "\n".join(names)
    if (
        joined.count("\n") == len(names) - 1
        and "," not in joined
        and ":" not in joined
        and not _SPACE.search(joined)
    ):
        lowered = joined.lower().replace("_", "").replace("-", "").replace("$", "")
        return [key if len(key) >= 2 else "" for key in lowered.split("\n")]
    keys = [form(name) for name in names]
    return [
        key if len(key) >= 2 and _PLAIN_NAME.fullmatch(name) else ""
        for key, name in zip(keys, names, strict=True)
    ]


class Names(Mapping[str, str]):
    """Name forms in sorted order with their saved definitions, looked up by binary search
    (loading builds no dict: ~0.1 s less per start-up on the stdlib x5)."""

    def __init__(self, keys: Sequence[str], values: Sequence[str]) -> None:
        self.keys_list = keys
        self.values_list = values

    @classmethod
    def of(cls, raw: Mapping[str, str]) -> Names:
        keys = sorted(raw)
        return cls(keys, [raw[k] for k in keys])

    def _at(self, key: object) -> int:
        if not isinstance(key, str):
            return -1
        at = bisect.bisect_left(self.keys_list, key)
        return at if at < len(self.keys_list) and self.keys_list[at] == key else -1

    def __getitem__(self, key: str) -> str:
        at = self._at(key)
        if at < 0:
            raise KeyError(key)
        return self.values_list[at]

    def __contains__(self, key: object) -> bool:
        return self._at(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_list)

    def __len__(self) -> int:
        return len(self.keys_list)


_PLAIN_NAME = re.compile(r"[^\s,:]+")  # names that the saved layout can hold as they are
_SPACE = re.compile(r"[^\S\n]")  # white space but a newline
_SAVED_ENTRY = re.compile(r"[tfc]:\d+:[^\s,:]+(?:,[tfc]:\d+:[^\s,:]+)*")


def definitions_wanted(settings: Settings) -> bool:
    """Whether the code signals of `settings` read the definitions (else none are built)."""
    return settings.signals and bool(
        settings.signal_definitions
        or settings.signal_forms
        or settings.signal_issue_terms
        or settings.signal_tests
    )


def definitions_dir(settings: Settings) -> Path:
    """Where the definitions of the current chunking are saved (beside its BM25 folders)."""
    spec = settings.chunking_spec.key.replace(":", "_")
    return settings.index_path.with_suffix(".bm25") / f"{spec}-definitions"


def _read_cache(path: Path) -> dict[str, list[FileDefinition]]:
    """The per-content cache (file language and text hash -> definitions); {} when it is
    missing, from another extractor version or damaged (every file is then parsed)."""
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
        if data["version"] != EXTRACTOR_VERSION:
            return {}
        return {
            str(key): [(int(line), str(name), _CODE_KIND[kind]) for line, name, kind in found]
            for key, found in data["files"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _write_cache(path: Path, cache: dict[str, list[FileDefinition]]) -> None:
    files = {
        key: [(line, name, _KIND_CODE[kind]) for line, name, kind in found]
        for key, found in cache.items()
    }
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # rename: readers see all or nothing
    try:
        tmp.write_text(json.dumps({"version": EXTRACTOR_VERSION, "files": files}), "utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)  # interrupted before the rename (or it failed)


def load_or_build_definitions(
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    *,
    scanners: Mapping[str, Scanner] = SCANNERS,
    current: CurrentTable | None = None,
    max_drift: float = MAX_DRIFT,
) -> Definitions:
    """The saved definitions when the store's chunks are unchanged (same generation); after
    an edit, the saved base shifted with a delta of the changed files (`core.rank.segments`);
    else rebuilt (parsing only files whose text the per-content cache has not seen;
    `scanners` as in `Definitions.build`)."""
    return load_or_build_definitions_at(
        store,
        settings.chunking_spec.key,
        definitions_dir(settings),
        chunks,
        scanners=scanners,
        current=current,
        max_drift=max_drift,
    )


def load_or_build_definitions_at(  # noqa: PLR0913
    store: Store,
    spec_key: str,
    directory: Path,
    chunks: Sequence[Chunk],
    *,
    generation: str | None = None,
    scanners: Mapping[str, Scanner] = SCANNERS,
    current: CurrentTable | None = None,
    max_drift: float = MAX_DRIFT,
) -> Definitions:
    """`load_or_build_definitions` of the chunking `spec_key`, saved in `directory`;
    `generation` is the store's generation of the chunks (read now when not given)."""
    if generation is None:
        generation = store.generation(spec_key)
    current = current if current is not None else CurrentTable(store, chunks)
    meta = read_folder_meta(directory, _META, EXTRACTOR_VERSION)
    with contextlib.suppress(ValueError, KeyError, TypeError):
        if meta is not None and meta.get("generation") == generation:
            if meta.get("n_docs") == len(chunks):
                return Definitions.load(directory)
        elif meta is not None:
            delta_dir = directory.with_name(directory.name + ".delta")
            base = Definitions.load(directory)
            saved = read_folder_meta(delta_dir, _META, EXTRACTOR_VERSION)
            if delta_fits(saved, meta, generation, len(chunks)):
                drift = Drift.load(delta_dir, len(chunks), base.n_docs)
                return base.shifted(drift, Definitions.load(delta_dir))
            drift = current.drift_from(FileTable.load(directory))
            if drift.n_chunks == len(chunks) and drift.worth_a_delta(max_drift):
                changed = [chunks[int(i)] for i in drift.added]
                delta = Definitions.build(changed, known_files(directory), scanners=scanners)
                extra = {"generation": generation, "base": meta.get("generation")}
                with contextlib.suppress(OSError):
                    delta.save(delta_dir, {**extra, "n_chunks": len(chunks)}, drift=drift)
                return base.shifted(drift, delta)
    seen: dict[str, list[FileDefinition]] = {}
    definitions = Definitions.build(chunks, known_files(directory), seen, scanners=scanners)
    save_base(directory, definitions, generation, current.table, seen)
    return definitions


def known_files(directory: Path) -> dict[str, list[FileDefinition]]:
    """The parsed files' definitions kept beside the definitions saved in `directory` (by
    language and text hash; see `_read_cache`)."""
    return _read_cache(directory.parent / _FILES_CACHE)


def save_base(
    directory: Path,
    definitions: Definitions,
    generation: str,
    table: FileTable,
    seen: dict[str, list[FileDefinition]],
) -> None:
    """Save a new base of `generation` (its file table `table`) in `directory`, drop its old
    delta and keep `seen` (the parsed files' entries) as the next build's `known_files`."""
    # A read-only or full cache costs a rebuild next time, never the search.
    with contextlib.suppress(OSError):
        definitions.save(directory, {"generation": generation}, table=table)
        shutil.rmtree(directory.with_name(directory.name + ".delta"), ignore_errors=True)
        # only the files indexed now: the cache never grows
        _write_cache(directory.parent / _FILES_CACHE, seen)


def saved_generation(directory: Path) -> str | None:
    """The generation of the definitions saved in `directory` (None: none readable)."""
    meta = read_folder_meta(directory, _META, EXTRACTOR_VERSION)
    generation = meta.get("generation") if meta is not None else None
    return generation if isinstance(generation, str) else None
