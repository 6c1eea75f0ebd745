"""Which language a file is written in, and a tree-sitter parser for the ones we chunk by AST;
whether a file is data rather than code (`is_data_file`).

Grammars come from the per-language wheels (`tree-sitter-python`, …), imported on first use
and cached; a grammar that is missing or fails to load yields None, and chunking falls back
to line windows. Names without a grammar ("markdown", "json", …) still get a language so
prompts can fence them correctly.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import threading
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import tree_sitter

# Languages with a tree-sitter grammar: language -> (module, function returning the grammar).
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c_sharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
}

_EXTENSIONS: dict[str, str] = {
    # languages with a grammar
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".cs": "c_sharp",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    # text languages (no AST chunking, but a fence tag and a name for the UI)
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".fish": "fish",
    ".ps1": "powershell",
    ".bat": "batch",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    ".svg": "xml",
    ".css": "css",
    ".scss": "scss",
    ".less": "less",
    ".sql": "sql",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".vue": "vue",
    ".svelte": "svelte",
    ".proto": "protobuf",
    ".graphql": "graphql",
    ".tf": "hcl",
    ".cmake": "cmake",
    ".mk": "make",
    ".m": "objective_c",
    ".mm": "objective_c",
    ".zig": "zig",
    ".nim": "nim",
    ".tex": "latex",
    ".dockerfile": "dockerfile",
}

_FILENAMES: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "vagrantfile": "ruby",
    "podfile": "ruby",
    "brewfile": "ruby",
    "jenkinsfile": "groovy",
    "build.gradle": "groovy",
    "sconstruct": "python",
    "sconscript": "python",
    ".bashrc": "shell",
    ".zshrc": "shell",
    ".profile": "shell",
}

# Lower-case names whose language the whole name decides, not the extension (`language_for`).
NAMED_FILES: frozenset[str] = frozenset(_FILENAMES)
NAMED_PREFIXES: tuple[str, ...] = ("dockerfile.",)  # a Dockerfile's variants (`Dockerfile.dev`)

# Fence tags that differ from our language names (what markdown renderers recognise).
_FENCE_TAGS: dict[str, str] = {
    "c_sharp": "csharp",
    "shell": "bash",
    "objective_c": "objectivec",
    "text": "text",
    "make": "makefile",
}

# Grammars are shared; parsers are per thread because a tree-sitter Parser is not thread-safe.
_grammars: dict[str, tree_sitter.Language | None] = {}
_grammar_lock = threading.Lock()
_local = threading.local()


def language_for(path: str) -> str | None:
    """The language of a file from its name (extension, or names like Makefile); None if unknown."""
    name = os.path.basename(path).lower()
    language = _FILENAMES.get(name)
    if language is not None:
        return language
    if name.startswith("dockerfile."):
        return "dockerfile"
    _, ext = os.path.splitext(name)
    return _EXTENSIONS.get(ext)


def parser_for(language: str) -> tree_sitter.Parser | None:
    """A tree-sitter parser for the language (cached per thread), or None without a grammar."""
    parsers: dict[str, tree_sitter.Parser | None] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    try:
        return parsers[language]
    except KeyError:
        pass
    grammar = _grammar(language)
    parser = None
    if grammar is not None:
        import tree_sitter

        parser = tree_sitter.Parser(grammar)
    parsers[language] = parser
    return parser


def _grammar(language: str) -> tree_sitter.Language | None:
    """The loaded grammar, imported from its wheel on first use; any failure means "no grammar"."""
    with _grammar_lock:
        if language not in _grammars:
            _grammars[language] = _load_grammar(language)
        return _grammars[language]


def _load_grammar(language: str) -> tree_sitter.Language | None:
    """Import the grammar wheel; an absent wheel or an ABI mismatch yields None (line chunking)."""
    spec = GRAMMARS.get(language)
    if spec is None:
        return None
    module_name, function_name = spec
    try:
        import tree_sitter

        module = importlib.import_module(module_name)
        return tree_sitter.Language(getattr(module, function_name)())
    except Exception:  # no wheel, or one built for another tree-sitter: no grammar
        logger.debug("no tree-sitter grammar from %s", module_name, exc_info=True)
        return None


def fence_tag(language: str | None) -> str:
    """The markdown code-fence tag for a language ("" when unknown, which renders as plain)."""
    if language is None:
        return ""
    return _FENCE_TAGS.get(language, language)


# Data rather than code: a prompt takes them only when more than one list ranks them high.
_DATA_LANGUAGES = frozenset({"json", "yaml"})
_DATA_DIRS = frozenset({
    "fixture", "fixtures", "__fixtures__", "testdata", "test_data", "snapshots", "__snapshots__",
})  # fmt: skip
_DATA_FILE = re.compile(r".*(?:\.lock|-lock\.json|-lock\.yaml|\.snap|\.snapshot)$")


def is_data_file(path: str, language: str | None) -> bool:
    """A data file rather than code: JSON, YAML, a lock file, a snapshot or a fixture."""
    pure = PurePosixPath(path)
    if language in _DATA_LANGUAGES or _DATA_FILE.match(pure.name.lower()):
        return True
    return any(part.lower() in _DATA_DIRS for part in pure.parts[:-1])
