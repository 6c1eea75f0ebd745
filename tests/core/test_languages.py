"""Files map to the right language, every bundled grammar loads, and fences use common tags."""

from __future__ import annotations

import threading

import pytest

from coderag_tui.core.index import languages
from coderag_tui.core.index.languages import GRAMMARS, fence_tag, language_for, parser_for


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("pkg/mod.py", "python"),
        ("types.pyi", "python"),
        ("web/app.jsx", "javascript"),
        ("web/app.mjs", "javascript"),
        ("web/app.ts", "typescript"),
        ("web/App.TSX", "tsx"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("Main.java", "java"),
        ("include/x.h", "c"),
        ("src/x.cpp", "cpp"),
        ("src/x.hpp", "cpp"),
        ("app/model.rb", "ruby"),
        ("Program.cs", "c_sharp"),
        ("index.php", "php"),
        ("Main.kt", "kotlin"),
        ("README.md", "markdown"),
        ("config.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("scripts/run.sh", "shell"),
        ("Makefile", "make"),
        ("sub/Dockerfile", "dockerfile"),
        ("Dockerfile.prod", "dockerfile"),
        ("Gemfile", "ruby"),
        ("notes.unknownext", None),
        ("LICENSE", None),
    ],
)
def test_language_for(path: str, language: str | None) -> None:
    assert language_for(path) == language


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_every_grammar_wheel_loads_and_parses(language: str) -> None:
    parser = parser_for(language)
    assert parser is not None
    tree = parser.parse(b"x\n")
    assert tree.root_node.end_point.row >= 1


def test_languages_without_grammar_have_no_parser() -> None:
    assert parser_for("markdown") is None
    assert parser_for("no-such-language") is None


def test_a_grammar_that_fails_to_import_yields_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GRAMMARS, "python", ("no_such_grammar_module", "language"))
    monkeypatch.setattr(languages, "_grammars", {})
    monkeypatch.setattr(languages, "_local", threading.local())
    assert parser_for("python") is None


def test_parsers_are_cached_per_thread() -> None:
    assert parser_for("python") is parser_for("python")
    other: list[object] = []
    thread = threading.Thread(target=lambda: other.append(parser_for("python")))
    thread.start()
    thread.join()
    assert other[0] is not None and other[0] is not parser_for("python")


@pytest.mark.parametrize(
    ("language", "tag"),
    [("python", "python"), ("c_sharp", "csharp"), ("tsx", "tsx"), ("shell", "bash"), (None, "")],
)
def test_fence_tag(language: str | None, tag: str) -> None:
    assert fence_tag(language) == tag
