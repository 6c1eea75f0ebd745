"""Definitions: what each grammar's query names, which chunk holds each name, and the saved
copy that follows the store's generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.languages import language_for
from coderag_tui.core.index.store import FileState, Store
from coderag_tui.core.rank.definitions import (
    MAX_DEPTH,
    QUERIES,
    Defined,
    Definitions,
    Names,
    _forms,
    definitions_dir,
    file_definitions,
    form,
    load_or_build_definitions,
    parsed_definitions,
)
from coderag_tui.core.rank.python_definitions import python_definitions
from coderag_tui.core.records import Chunk, ChunkingSpec
from coderag_tui.settings import Settings
from tests.fixtures.stored import put_source

# One small file per language with a grammar, and the names a reader would say it defines.
SAMPLES: dict[str, tuple[str, str, set[str]]] = {
    "python": (
        "a.py",
        "X = 1\n\nclass Cart:\n    def add(self):\n        y = 2\n\n"
        "@cache\ndef total():\n    pass\n",
        {"X", "Cart", "add", "total"},
    ),
    "javascript": (
        "a.js",
        "function send(body) {}\nclass View { render() {} }\n"
        "const etag = () => 1;\nres.json = function json(obj) {};\n",
        {"send", "View", "render", "etag", "json"},
    ),
    "typescript": (
        "a.ts",
        "export interface ZodType {}\nexport type Infer = number;\n"
        "export const parse = (x: unknown) => x;\nenum Kind { A }\n"
        "export abstract class Base { abstract run(): void; }\n",
        {"ZodType", "Infer", "parse", "Kind", "Base", "run"},
    ),
    "tsx": ("a.tsx", "export function App() { return <div/>; }\n", {"App"}),
    "go": (
        "a.go",
        "package gin\n\ntype Engine struct{}\n\nfunc New() *Engine { return nil }\n\n"
        'func (e *Engine) Run() {}\n\nconst Version = "1"\n',
        {"Engine", "New", "Run", "Version"},
    ),
    "rust": (
        "a.rs",
        "pub struct Router;\npub trait IntoResponse {}\nimpl Router {\n"
        "    pub fn route(&self) {}\n}\nmacro_rules! json { () => {} }\n"
        "const MAX: u8 = 1;\n",
        {"Router", "IntoResponse", "route", "json", "MAX"},
    ),
    "java": (
        "A.java",
        "class Gson {\n  static final int MAX_DEPTH = 3;\n  int depth;\n"
        "  String toJson(Object o) { return null; }\n}\ninterface TypeAdapter {}\n",
        {"Gson", "MAX_DEPTH", "toJson", "TypeAdapter"},
    ),
    "c": (
        "a.c",
        "#define LIMIT 3\nstruct node { int v; };\ntypedef int handle;\n"
        "static char *name_of(int id) { return 0; }\n",
        {"LIMIT", "node", "handle", "name_of"},
    ),
    "cpp": (
        "a.cpp",
        "namespace fmt {\nclass formatter { void parse(); };\n}\nvoid fmt::formatter::parse() {}\n",
        {"fmt", "formatter", "parse"},
    ),
    "ruby": (
        "a.rb",
        "module Sinatra\n  class Base\n    def call(env); end\n"
        "    def self.get(path); end\n  end\nend\nVERSION = '4'\n",
        {"Sinatra", "Base", "call", "get", "VERSION"},
    ),
    "c_sharp": (
        "A.cs",
        "namespace N { class Pack { void Write() {} }\ninterface IPack {} }\n",
        {"Pack", "Write", "IPack"},
    ),
    "php": (
        "A.php",
        "<?php\nclass Logger { const API = 2; public function info() {} }\n"
        "function handler() {}\ninterface HandlerInterface {}\n",
        {"Logger", "API", "info", "handler", "HandlerInterface"},
    ),
    "kotlin": (
        "A.kt",
        "class Flow { fun collect() {} }\nobject Dispatchers {}\n",
        {"Flow", "collect", "Dispatchers"},
    ),
}


def test_every_language_with_a_query_has_a_sample() -> None:
    assert set(SAMPLES) == set(QUERIES)


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_grammar_names_the_definitions_a_reader_would(language: str) -> None:
    name, text, expected = SAMPLES[language]
    assert language_for(name) == language
    found = {name for _, name, _ in file_definitions(text.encode(), language)}
    assert found == expected


def test_kinds_lines_and_a_file_without_grammar() -> None:
    found = file_definitions(b"X = 1\n\nclass Cart:\n    def add(self): pass\n", "python")
    assert found == [(1, "X", "constant"), (3, "Cart", "type"), (4, "add", "function")]
    assert file_definitions(b"# Cart\n", "markdown") == []
    assert file_definitions(b"class Cart: pass\n", None) == []


def test_forms_join_the_spellings_of_one_name() -> None:
    assert form("parse_config") == form("parseConfig") == form("ParseConfig") == "parseconfig"


def test_forms_of_many_names_at_once_are_those_of_each_name() -> None:
    names = ["parse_config", "ParseConfig", "$el", "x", "", "Σίσυφος", "İstanbul", "kebab-case"]
    assert _forms(names) == [k if len(k) >= 2 else "" for k in map(form, names)]
    # A name the saved layout cannot hold (a space, comma, colon) is left out, name by name.
    odd = [*names, "a b", "a,b", "a:b", "two\nlines"]
    assert _forms(odd) == [*_forms(names), "", "", "", ""]


def test_a_chunk_keeps_the_weightier_kind_and_the_first_spelling_of_a_form() -> None:
    entries = [
        (3, "parse_config", "constant"),
        (3, "parseConfig", "function"),
        (3, "ParseConfig", "function"),
        (1, "PARSE_CONFIG", "type"),
        (2, "x", "type"),  # one letter: no form
        (2, "a b", "type"),  # cannot be saved
    ]
    definitions = Definitions.from_entries(4, entries)
    assert definitions.lookup("parseconfig") == (
        Defined(1, "type", "PARSE_CONFIG"),
        Defined(3, "function", "parseConfig"),
    )
    assert len(definitions) == 1
    assert Definitions.from_entries(4, []).lookup("parseconfig") == ()


def test_a_name_belongs_to_every_chunk_holding_its_line() -> None:
    text = "".join(f"def f{n}():\n    pass\n" for n in range(6))  # 12 lines
    windows = chunk_file("m.py", text, "python", ChunkingSpec("lines", 4, 2))
    definitions = Definitions.build(windows)
    holders = {windows[d.chunk].key for d in definitions.lookup("f2")}  # line 5
    assert holders == {"m.py:3-6", "m.py:5-8"}
    assert {d.kind for d in definitions.lookup("f2")} == {"function"}
    assert definitions.lookup("nothing") == ()


def test_save_and_load_give_the_same_lookups(tmp_path: Path) -> None:
    chunks = chunk_file("a.go", SAMPLES["go"][1], "go", ChunkingSpec("lines", 3))
    built = Definitions.build(chunks)
    built.save(tmp_path / "defs", {"generation": "g"})
    loaded = Definitions.load(tmp_path / "defs")
    for key in ("engine", "new", "run", "version"):
        assert loaded.lookup(key) == built.lookup(key) != ()
    loaded.save(tmp_path / "again", {"generation": "g"})  # a loaded table, saved as it is held
    again = Definitions.load(tmp_path / "again")
    assert list(again._raw) == list(built._raw) and len(again) == len(built)
    for key in ("engine", "new", "run", "version"):
        assert again.lookup(key) == built.lookup(key)
    # An unreadable entry (or one naming a chunk past the end) defines nothing; the rest stand.
    names = loaded._raw
    assert isinstance(names, Names)
    keys, values = list(names.keys_list), list(names.values_list)
    values[keys.index("engine")] = "not a list"
    values[keys.index("new")] = "f:99999:new"
    Definitions(built.n_docs, Names(keys, values)).save(tmp_path / "bad", {"generation": "g"})
    damaged = Definitions.load(tmp_path / "bad")
    assert damaged.lookup("engine") == damaged.lookup("new") == ()
    assert damaged.lookup("run") == built.lookup("run") != ()
    where = tmp_path / "bad" / "defined.txt"
    where.write_bytes(where.read_bytes()[:-3])  # cut short: its offsets no longer match
    with pytest.raises(ValueError, match="damaged"):
        Definitions.load(tmp_path / "bad")
    (tmp_path / "defs" / "names.txt").write_text("engine", encoding="utf-8")  # one name short
    with pytest.raises(ValueError, match="damaged"):
        Definitions.load(tmp_path / "defs")


def _store(settings: Settings, files: dict[str, str]) -> tuple[Store, str]:
    key = settings.chunking_spec.key
    store = Store.open(settings.index_path)
    with store.batch():
        for path, text in files.items():
            put_source(store, settings.chunking_spec, path, text)
    return store, key


def test_saved_beside_bm25_and_rebuilt_exactly_when_chunks_change(index_dir: Path) -> None:
    settings = Settings(repo=index_dir, index_dir=index_dir, chunk_lines=4)
    files = {"a.py": "def alpha():\n    pass\n", "b.py": "class Beta:\n    pass\n"}
    store, key = _store(settings, files)
    first = load_or_build_definitions(store, settings, store.chunks(key))
    folder = definitions_dir(settings)
    assert folder.parent == settings.index_path.with_suffix(".bm25")
    stamp = (folder / "names.txt").stat().st_mtime_ns
    again = load_or_build_definitions(store, settings, store.chunks(key))
    assert (folder / "names.txt").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert again.lookup("beta") == first.lookup("beta") != ()

    text = "def gamma():\n    pass\n"
    with store.batch():
        store.put_file(
            FileState(
                path="c.py",
                size=len(text),
                mtime_ns=1,
                content_hash=text_hash(text),
                language="python",
                skip_reason=None,
            ),
            text,
        )
        store.put_chunks(key, "c.py", [Chunk("c.py", 1, 2, "lines", "python", text.rstrip())])
    rebuilt = load_or_build_definitions(store, settings, store.chunks(key))
    assert rebuilt.lookup("gamma") != () and rebuilt.lookup("alpha") != ()
    assert (folder / "names.txt").stat().st_mtime_ns != stamp
    store.close()


def test_unchanged_files_come_from_the_content_cache(index_dir: Path) -> None:
    settings = Settings(repo=index_dir, index_dir=index_dir, chunk_lines=4)
    chunks = chunk_file("a.go", "package a\n\nfunc Alpha() {}\n", "go", settings.chunking_spec)
    seen: dict[str, list[tuple[int, str, str]]] = {}
    Definitions.build(chunks, None, seen)
    (digest,) = seen
    # A cached entry is used as it is: the file is not parsed again.
    planted = {digest: [(1, "planted", "type")]}
    assert Definitions.build(chunks, planted).lookup("planted") != ()


def test_a_copy_of_a_file_is_parsed_once_per_build(index_dir: Path) -> None:
    spec = Settings(repo=index_dir, index_dir=index_dir, chunk_lines=4).chunking_spec
    text = "package a\n\nfunc Alpha() {}\n"
    chunks = [*chunk_file("a/x.go", text, "go", spec), *chunk_file("b/x.go", text, "go", spec)]
    seen: dict[str, list[tuple[int, str, str]]] = {}
    built = Definitions.build(chunks, None, seen)
    assert len(seen) == 1 and {d.chunk for d in built.lookup("alpha")} == {0, 1}
    # What this build parsed is what its copies get: the entry of the first, not a new parse.
    (digest,) = seen
    planted = {digest: [(3, "planted", "function")]}
    both = Definitions.build(chunks, None, planted)
    assert {d.chunk for d in both.lookup("planted")} == {0, 1}


def test_scanned_files_skip_the_content_cache() -> None:
    chunks = chunk_file("a.py", "def alpha():\n    pass\n", "python", ChunkingSpec("lines", 4))
    seen: dict[str, list[tuple[int, str, str]]] = {}
    assert Definitions.build(chunks, None, seen).lookup("alpha") != ()
    assert seen == {}  # scanned again on the next build, not cached
    assert Definitions.build(chunks, None, seen, scanners={}).lookup("alpha") != ()
    assert len(seen) == 1  # parsed by tree-sitter: cached


# Python that a line-by-line regex gets wrong and the scan must not: (text, the names defined).
PYTHON_CASES: dict[str, tuple[str, set[str]]] = {
    "a def inside a docstring": (
        'def real():\n    """Example:\n\ndef fake():\n    pass\nFAKE = 1\n"""\n',
        {"real"},
    ),
    "a triple quote inside a string or a comment": (
        "X = '\"\"\"'  # '''\ndef after():\n    pass\n",
        {"X", "after"},
    ),
    "decorated methods and closures": (
        "class A:\n    @property\n    def m(self):\n        def inner():\n"
        "            def deeper():\n                pass\n"
        "    @property\n    def n(self):\n        @cache\n        def too_deep(): pass\n",
        {"A", "m", "inner", "n"},
    ),
    "a closure in an else clause of a method": (
        "class A:\n    def m(self):\n        if x:\n            pass\n"
        "        else:\n            def fallback(): pass\n",
        {"A", "m"},
    ),
    "a closure in a plain method": (
        "class A:\n    def m(self):\n        def inner(): pass\n",
        {"A", "m", "inner"},
    ),
    "column-0 keywords and keyword arguments": (
        "try:\n    import x\nexcept ImportError:\n    def x(): pass\nelse:\n    pass\n"
        "Y: int = 2\nZ == 3\nW += 1\n",
        {"x", "Y"},
    ),
    "async, a byte-order mark and a continued line": (
        "\ufeffV = 1 + \\\n    2\nasync def run(): pass\n",
        {"V", "run"},
    ),
}


@pytest.mark.parametrize("case", sorted(PYTHON_CASES))
def test_the_python_scan_names_what_the_parse_names(case: str) -> None:
    text, expected = PYTHON_CASES[case]
    scanned = python_definitions(text, MAX_DEPTH)
    assert {name for _, name, _ in scanned} == expected
    assert sorted(scanned) == parsed_definitions(text.encode(), "python")


def test_the_python_scan_agrees_with_the_parse_on_real_code() -> None:
    import inspect
    import json.decoder

    text = inspect.getsource(json.decoder) + inspect.getsource(inspect)
    scanned = set(python_definitions(text, MAX_DEPTH))
    parsed = set(parsed_definitions(text.encode(), "python"))
    assert len(parsed) > 200
    assert len(scanned & parsed) >= 0.995 * len(parsed | scanned)
