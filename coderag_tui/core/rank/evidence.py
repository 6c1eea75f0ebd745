"""What an issue's text points at, in every language, and the lines of a file it points at.

`read_evidence(text)` reads, as values:

* **frames** — stack frames and compiler errors as (path, line, symbol): Python tracebacks,
  Go panics (`file.go:123 +0x1d` under `pkg.(*T).Method(...)`), Rust panics and backtraces
  (`panicked at src/x.rs:12:5`, `at ./src/x.rs:12:5` under `3: krate::module::function`),
  Java and Kotlin frames (`at com.foo.Bar.baz(Bar.java:42)`, read as `com/foo/Bar.java`),
  C# (`at N.C.M() in C:\\x\\C.cs:line 9`), JavaScript (`at fn (src/a.js:1:2)`, `fn@src/a.js:1:2`),
  Ruby (`lib/x.rb:12:in 'm'`), PHP (`in /app/src/X.php on line 12`, `#0 /app/X.php(12): …`),
  compiler and linter errors (`x.c:12:5: error: …`, `x.ts(3,4): error TS2345`, `--> src/x.rs:4:5`)
  and links to a file in a forge (`…/blob/<ref>/src/x.go#L75-L96`);
* **messages** — quoted error messages (in quotes, in backticks with several words, or after
  `error:`/`panic:`/`…Exception:`), to be matched against string literals in the code;
* **identifiers** — names written in backticks (`Layer::downcast_raw` gives both parts);
* **flags** and **config keys** — `--max-depth`, `-j`, and `maxmemory-policy`-like keys;
* **packages** — module paths that map to folders: `com.fasterxml.jackson.core.json`,
  `tracing_subscriber::layer`, `github.com/org/repo/core/conf`, `App\\Http\\Kernel`;
* **tests** — a test file (`foo.test.ts`, `FooTest.java`, `foo_test.go`) or test function
  (`TestFoo`, `test_foo`, `testFoo`) and, from it, the name of what it tests (`subject_of`);
* **strings** — short quoted words (`'sv'`, `"dracula"`), which may name a file (sv.js).

`lines_pointed_at(evidence, path, lines)` then weighs the lines of one file that the evidence
points at: a frame's line, a line holding a quoted message as a string literal, a line
defining a backticked name (or a frame's or a test's subject) and a line handling a named flag
or key. Nothing here knows a repository: every rule is a form that code or a tool writes.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from coderag_tui.core.index.languages import language_for
from coderag_tui.core.rank.definitions import file_definitions, form
from coderag_tui.core.rank.roles import path_roles

# A run of non-space characters is read as its first this many (as `query_terms` does): no
# path or name is longer, and some patterns below cost a run's length squared.
MAX_RUN_CHARS = 256
MAX_ITEMS = 64  # of each kind of evidence, in the order the text gives them

# Weights of `lines_pointed_at`, per line and reason (a line's weights add up).
FRAME_LINE = 1.0  # the line a frame, compiler error or link names in this file
MESSAGE_LINE = 1.0  # a string literal holding (a fixed part of) a quoted message, 20+ chars
DEFINES = 0.8  # the definition of a backticked name, or of a frame's function in its file
FLAG_LINE = 0.8  # a string literal naming a flag or config key
FLAG_NAME = 0.3  # a name that spells a multi-word flag or key (`max-depth` -> max_depth)
TESTED = 0.5  # the definition of the name a test's name points at (TestFoo -> Foo)
LINK_SPAN = 40  # lines of a link's range (#L10-L90) that count, at most
MAX_LINE_CHARS = 2000  # longer lines (minified code, data) are not searched for literals

# Extensions of files a repository holds that `language_for` does not name (redis.conf).
_DATA_SUFFIXES = frozenset({"conf", "config", "properties", "lock", "env", "in", "tmpl"})

# First parts of reverse-domain package names (Java, Kotlin, Android).
_REVERSE_DOMAINS = frozenset({
    "com", "org", "net", "io", "dev", "edu", "gov", "java", "javax", "jakarta", "kotlin",
    "kotlinx", "android", "androidx", "scala",
})  # fmt: skip

MIN_MESSAGE = 10  # characters a message and a literal must share (and a message's length)
FULL_MESSAGE = 20  # characters shared for the full weight; fewer give a share of it


@dataclass(frozen=True, slots=True)
class Frame:
    """A place the issue's text names: a file, maybe its line, maybe the function there."""

    path: str  # as written, slashes forward, `./` and `file://` dropped
    line: int | None
    symbol: str = ""  # the function or method of a stack frame ('' when not given)
    form: str = ""  # what wrote it: python, go, rust, java, csharp, javascript, ruby, php,
    # compiler (a `path:line` of any tool) or link (a forge URL)
    last_line: int | None = None  # a link's range ends here (#L10-L20); else as `line`


@dataclass(frozen=True, slots=True)
class Evidence:
    """What an issue's text points at (see the module docstring), each in the text's order."""

    frames: tuple[Frame, ...] = ()
    paths: tuple[str, ...] = ()  # every file path named, frames' included
    messages: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # as written: --max-depth, -j
    config_keys: tuple[str, ...] = ()
    packages: tuple[tuple[str, ...], ...] = ()  # a module path's parts
    tests: tuple[str, ...] = ()  # test files and test functions named
    strings: tuple[str, ...] = ()  # short quoted words ('sv', "dracula"), which may name a file

    def __bool__(self) -> bool:
        return any(
            (self.frames, self.paths, self.messages, self.identifiers, self.flags,
             self.config_keys, self.packages, self.tests, self.strings)
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PointedLine:
    """A line of a file the evidence points at (1-based), how strongly, and why."""

    line: int
    weight: float
    why: tuple[str, ...]


# --- reading the text ---------------------------------------------------------------------------

_LONG_RUN = re.compile(rf"\S{{{MAX_RUN_CHARS + 1},}}")
# File names with an extension of 1-5 letters (or a digit: man pages `fd.1`), an optional
# folder path before them; never starting inside a word of a URL's host.
_FILE = r"(?:[A-Za-z]:)?[\w@.+~-]*(?:[\\/][\w@.+~-]+)*[\\/]?[\w+~-]+\.[A-Za-z][\w+]{0,5}"
_PATH_TOKEN = re.compile(rf"(?<![\w./\\-]){_FILE}(?![\w/\\])")

_PYTHON = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
# Go: `pkg/path.(*T).Method(0x1, …)` then, indented, `/abs/file.go:123 +0x1d`.
_GO = re.compile(
    r"^\s*(?:created by )?(?P<fn>[\w./*()-]+?)\([^()\n]*\)\s*\n"
    r"\s+(?P<path>[^\s:]+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?\s*$",
    re.MULTILINE,
)
# Rust backtrace: `  3: krate::module::function` then `at ./src/x.rs:12:5`.
_RUST_FRAME = re.compile(
    r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?P<fn>[\w:<>{}\[\] ,&*'-]+?)\s*\n"
    r"\s+at (?P<path>[^\s:]+\.rs):(?P<line>\d+)(?::\d+)?",
    re.MULTILINE,
)
# Java/Kotlin/Scala: `at com.foo.Bar$Inner.baz(Bar.java:42)`.
_JAVA = re.compile(
    r"\bat (?:[\w.$/@-]+/)?(?P<cls>(?:[\w$]+\.)+)(?P<fn>[\w$<>]+)"
    r"\((?P<file>[\w$-]+\.(?:java|kt|scala|groovy|clj)):(?P<line>\d+)\)"
)
# C#: `at N.C.M(args) in C:\src\C.cs:line 9`.
_CSHARP = re.compile(
    r"\bat (?P<fn>[\w.<>`]+)\([^\n]*?\) in (?P<path>[^\n]+?\.cs):line (?P<line>\d+)"
)
# JavaScript: `at fn (path:1:2)`, `at path:1:2`, `fn@path:1:2`.
_JS = re.compile(
    r"\bat (?:async )?(?:new )?(?:(?P<fn>[\w$.<>\[\] ]+?) \()?(?P<path>[^\s()]+?\.[cm]?[jt]sx?)"
    r":(?P<line>\d+)(?::\d+)?\)?"
    r"|^\s*(?P<ffn>[\w$.<>]*)@(?P<fpath>[^\s@]+?\.[cm]?[jt]sx?):(?P<fline>\d+)(?::\d+)?",
    re.MULTILINE,
)
# Ruby: lib/x.rb:12:in 'm', `m', 'Klass#m', `block in m'.
_RUBY = re.compile(
    r"(?<![^\s(\[{'\"`])(?P<path>[^\s:'\"`]+\.(?:rb|rake|erb)):(?P<line>\d+):in [`']"
    r"(?:block (?:\(\d+ levels\) )?in )?(?:[\w:]+[#.])?(?P<fn>[\w?!=<>\[\]]+)'"
)
# PHP: `in /app/X.php on line 12`, `in /app/X.php:12`, `#0 /app/X.php(12): Foo->bar()`.
_PHP = re.compile(
    r"\bin (?P<path>[^\s\"']+\.php)(?: on line |:)(?P<line>\d+)"
    r"|^#\d+ (?P<tpath>[^\s(]+\.php)\((?P<tline>\d+)\)",
    re.MULTILINE,
)
# Any tool's `path:line[:col]` or `path(line[,col])`, `--> path:line:col` included.
_COMPILER = re.compile(
    rf"(?<![\w./\\-])(?P<path>{_FILE})(?::(?P<line>\d+)(?::\d+)?|\((?P<pline>\d+)(?:,\d+)?\))"
)
# A file in a forge: …/blob/<ref>/path#L10-L20 (also blame, tree, raw; GitLab's /-/blob/).
_LINK = re.compile(
    r"https?://[\w.-]+/(?:[\w.-]+/)+?(?:-/)?(?:blob|blame|tree|raw)/[\w.%-]+/"
    r"(?P<path>[^\s#?)\]>\"']+)(?:#L(?P<line>\d+)(?:-L?(?P<last>\d+))?)?"
)
URL = re.compile(r"(?<![\w+.-])[a-z][\w+.-]*://[^\s)\]>\"'`]+")  # hosts and URL paths: not files

_BACKTICKS = re.compile(r"`([^`\n]{1,200})`")
_DOUBLE_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.){4,300})"|“([^”\n]{4,300})”')
_SINGLE_QUOTED = re.compile(r"(?<![\w'])'([^'\n]{4,300})'(?![\w'])")
_ERROR_LINE = re.compile(
    r"(?:^|(?<=[\s\]>(]))(?:[\w.$]*(?:Error|Exception|Panic|Failure)|error|panic|fatal|FATAL|ERROR"
    r"|failed|FAILED|warning|Warning|[Aa]ssertion failed)(?:\[[\w-]+\])?:\s+(?P<msg>[^\n]{4,300})",
    re.MULTILINE,
)
_PANICKED_AT = re.compile(r"panicked at (?:'(?P<old>[^\n]+)', |[^\n]*?:\d+:\d+:\n(?P<new>[^\n]+))")
# A quoted word: a locale, a key, a theme's name ('sv', "en-gb", 'dracula').
_SHORT_STRING = re.compile(
    r"(?<![\w'\"])(?:'([A-Za-z][\w-]{1,39})'|\"([A-Za-z][\w-]{1,39})\")(?![\w'\"])"
)
_LONG_FLAG = re.compile(r"(?<![\w/.-])(--[A-Za-z][\w-]*[\w])(?:=[^\s`]*)?")
_SHORT_FLAG = re.compile(r"(?<![\w/.-])(-[A-Za-z])(?![\w-])")
_KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_DOTTED_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_-]*)+")
_QUALIFIED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|->|#|\\|\.)[A-Za-z_$][\w$]*)*")
_NAME_SEPARATOR = re.compile(r"::|->|#|\\|\.")
_JAVA_PACKAGE = re.compile(
    r"(?<![\w./-])[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*){2,}(?:\.[A-Z][\w$]*)*"
)
_COLONS_PATH = re.compile(r"(?<![\w:])[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+")
_BACKSLASH_PATH = re.compile(r"(?<![\w\\])[A-Z]\w*(?:\\[A-Z]\w*)+")
_GO_IMPORT = re.compile(r"(?<![\w/:.])(?:[a-z0-9-]+\.)+[a-z]{2,}(?:/[\w.~-]+){2,}")
_TEST_FUNCTION = re.compile(r"\b(?:Test[A-Z_]\w*|test_\w+|test[A-Z]\w*|\w+_test)\b")
_TEST_PREFIX = re.compile(r"^(?:Test_?|test_?|should_?)")
_TEST_SUFFIX = re.compile(r"(?:_?[Tt]ests?|_?[Ss]pec|IT|\.test|\.spec)$")


def read_evidence(text: str) -> Evidence:
    """What `text` points at (see the module docstring)."""
    text = _LONG_RUN.sub(lambda run: run.group()[:MAX_RUN_CHARS], text)
    frames = _frames(text)
    plain = URL.sub(" ", text)  # hosts and URL paths are not files, packages or keys
    paths = list(dict.fromkeys(f.path for f in frames))
    for token in dict.fromkeys(_PATH_TOKEN.findall(plain)):  # a long trace repeats its files
        path = _clean_path(token)
        if _looks_like_file(path) and not _package_like(path):
            paths.append(path)
    paths = list(dict.fromkeys(paths))[:MAX_ITEMS]
    identifiers, flags, keys = _backticked(plain)
    for match in _LONG_FLAG.finditer(plain):
        flags.append(match.group(1))
    return Evidence(
        frames=_first(frames),
        paths=_first(paths),
        messages=_first(_messages(text)),
        identifiers=_first(identifiers),
        flags=_first(flags),
        config_keys=_first(keys),
        packages=_first(_packages(plain)),
        tests=_first(_tests(plain, paths)),
        strings=_first(m.group(1) or m.group(2) for m in _SHORT_STRING.finditer(plain)),
    )


def _first(items: Iterable[str] | Iterable[Frame] | Iterable[tuple[str, ...]]) -> tuple:  # type: ignore[type-arg]
    return tuple(dict.fromkeys(items))[:MAX_ITEMS]


def _clean_path(path: str) -> str:
    path = path.replace("\\", "/")
    for prefix in ("file://", "webpack:///", "webpack://"):
        path = path.removeprefix(prefix)
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip(".")


def _package_like(token: str) -> bool:
    """A dotted lower-case name that is a module path rather than a file: four parts or more,
    or a reverse domain's first part (`com.acme.core.json` is a package, `app.config.json` a
    file)."""
    if not _JAVA_PACKAGE.fullmatch(token):
        return False
    return token.count(".") >= 3 or token.split(".", 1)[0] in _REVERSE_DOMAINS


def _looks_like_file(path: str) -> bool:
    """A path with a file name that a repository would hold: an extension with a letter, not
    a version (`v1.2`), a domain (`example.com` needs a folder to count) or a method call."""
    name = PurePosixPath(path).name
    stem, _, suffix = name.rpartition(".")
    if not stem or not suffix or not suffix[0].isalpha():
        return False
    if "/" not in path and suffix.lower() in {"com", "org", "net", "io", "dev", "x"}:
        return False
    return language_for(path) is not None or "/" in path or suffix.lower() in _DATA_SUFFIXES


def _frames(text: str) -> list[Frame]:  # noqa: C901
    """The frames of every form, in the order of the text (a place read twice: once)."""
    found: list[tuple[int, Frame]] = []
    covered: list[tuple[int, int]] = []

    def add(at: int, end: int, path: str, line: str | None, symbol: str, how: str) -> None:
        path = _clean_path(path)
        if not path:
            return
        found.append((at, Frame(path, int(line) if line else None, _last_name(symbol), how)))
        covered.append((at, end))

    for m in _PYTHON.finditer(text):
        add(m.start(), m.end(), m.group(1), m.group(2), m.group(3) or "", "python")
    for m in _GO.finditer(text):
        add(m.start("path"), m.end(), m.group("path"), m.group("line"), _go_function(m["fn"]), "go")
    for m in _RUST_FRAME.finditer(text):
        add(m.start("path"), m.end(), m.group("path"), m.group("line"), m.group("fn"), "rust")
    for m in _JAVA.finditer(text):
        folder = "/".join(p for p in m.group("cls").split(".")[:-2] if p)
        path = f"{folder}/{m.group('file')}" if folder else m.group("file")
        add(m.start(), m.end(), path, m.group("line"), m.group("fn"), "java")
    for m in _CSHARP.finditer(text):
        add(m.start(), m.end(), m.group("path"), m.group("line"), m.group("fn"), "csharp")
    for m in _JS.finditer(text):
        at = "" if m.group("path") else "f"  # `at fn (path)` or Firefox's `fn@path`
        path, line, function = m.group(f"{at}path"), m.group(f"{at}line"), m.group(f"{at}fn")
        add(m.start(), m.end(), path, line, function or "", "javascript")
    for m in _RUBY.finditer(text):
        add(m.start(), m.end(), m.group("path"), m.group("line"), m.group("fn"), "ruby")
    for m in _PHP.finditer(text):
        at = "" if m.group("path") else "t"  # `in path on line n` or a trace's `#0 path(n)`
        add(m.start(), m.end(), m.group(f"{at}path"), m.group(f"{at}line"), "", "php")
    for m in _LINK.finditer(text):
        path = m.group("path")
        if _looks_like_file(path):
            first, last = m.group("line"), m.group("last")
            frame = Frame(_clean_path(path), int(first) if first else None, "", "link",
                          int(last) if last else None)  # fmt: skip
            found.append((m.start(), frame))
            covered.append((m.start(), m.end()))
    spans = sorted(covered)
    starts = [a for a, _ in spans]
    reach = list(itertools.accumulate((b for _, b in spans), max))  # furthest end so far
    for m in _COMPILER.finditer(text):
        before = bisect.bisect_right(starts, m.start())
        if before and reach[before - 1] > m.start():
            continue  # inside a frame read above
        path = _clean_path(m.group("path"))
        if _looks_like_file(path) and not text[max(0, m.start() - 3) : m.start()].endswith("://"):
            add(m.start(), m.end(), path, m.group("line") or m.group("pline"), "", "compiler")
    found.sort(key=lambda item: item[0])
    return [frame for _, frame in found]


def _go_function(function: str) -> str:
    """`github.com/x/y/pkg.(*T).Method` -> Method; `main.main` -> main."""
    return function.rsplit("/", 1)[-1].rsplit(".", 1)[-1].strip("()*")


def _last_name(symbol: str) -> str:
    """The function of a frame's symbol: `krate::module::Type::method` -> method,
    `Foo.bar` -> bar, `<main>` and closures -> ''."""
    symbol = re.sub(r"<[^<>]*>|\{\{closure\}\}|\{closure#\d+\}", "", symbol).strip()
    parts = [p for p in re.split(r"::|\.|#|->|\s", symbol) if p]
    name = parts[-1] if parts else ""
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*[?!=]?", name) else ""


def _messages(text: str) -> list[str]:
    """Quoted messages: quoted text with a space, several words in backticks, the text after
    an error's label, and a Rust panic's message."""
    out: list[str] = []

    def add(message: str | None) -> None:
        message = " ".join((message or "").split()).strip(" .,;:'\"`")
        if len(message) >= MIN_MESSAGE and any(c.isalpha() for c in message):
            out.append(message)

    for m in _PANICKED_AT.finditer(text):
        add(m.group("old") or m.group("new"))
    for m in _ERROR_LINE.finditer(text):
        add(m.group("msg"))
    for m in _DOUBLE_QUOTED.finditer(text):
        quoted = m.group(1) or m.group(2)
        if " " in quoted.strip():
            add(quoted)
    for m in _SINGLE_QUOTED.finditer(text):
        if " " in m.group(1).strip():
            add(m.group(1))
    for m in _BACKTICKS.finditer(text):
        if len(m.group(1).split()) >= 3 and not m.group(1).lstrip().startswith("-"):
            add(m.group(1))
    return out


def _backticked(text: str) -> tuple[list[str], list[str], list[str]]:
    """Names, flags and config keys written in backticks (`fd -L` gives the flag -L)."""
    names: list[str] = []
    flags: list[str] = []
    keys: list[str] = []
    for m in _BACKTICKS.finditer(text):
        inside = m.group(1).strip()
        words = inside.split()
        flags += [w for w in words if _LONG_FLAG.fullmatch(w) or _SHORT_FLAG.fullmatch(w)]
        if len(words) == 1 and (_KEBAB.fullmatch(inside) or _DOTTED_KEY.fullmatch(inside)):
            if not _looks_like_file(inside):
                keys.append(inside)
            continue
        if len(words) > 3:  # a message or a command, read elsewhere
            continue
        for token in _QUALIFIED.findall(inside):
            parts = [p for p in _NAME_SEPARATOR.split(token) if p]
            for part in parts:
                if len(part) >= 2 and not part.isdigit():
                    names.append(part)
    return names, flags, keys


def _packages(text: str) -> list[tuple[str, ...]]:
    """Module paths: dotted (Java and the like), `::` (Rust, C++, Ruby), `\\` (PHP) and Go
    import paths (the part after host/owner/repository)."""
    out: list[tuple[str, ...]] = []
    for token in _JAVA_PACKAGE.findall(text):
        if _package_like(token) or not _looks_like_file(token):
            out.append(tuple(p.split("$", 1)[0] for p in token.split(".") if p))
    for token in _COLONS_PATH.findall(text):
        out.append(tuple(token.split("::")))
    for token in _BACKSLASH_PATH.findall(text):
        out.append(tuple(token.split("\\")))
    for token in _GO_IMPORT.findall(text):
        parts = token.split("/")
        if len(parts) > 3 and not _looks_like_file(token):
            out.append(tuple(p.rstrip(".") for p in parts[3:]))
    return [parts for parts in out if len(parts) >= 2]


def _tests(text: str, paths: Sequence[str]) -> list[str]:
    """Test files among the paths named, and test functions named in the text."""
    out = [p for p in paths if "test" in path_roles(p, language_for(p))]
    out += _TEST_FUNCTION.findall(text)
    return out


def subject_of(test: str) -> str:
    """What a test's name says it tests: `foo.test.ts` -> foo.ts, `FooTest.java` -> Foo.java,
    `foo_test.go` -> foo.go, `test_foo.py` -> foo.py, `TestFoo` -> Foo, `test_parse` -> parse;
    '' when nothing is left."""
    pure = PurePosixPath(test)
    if pure.suffix and language_for(pure.name) is not None:
        stem, suffix = pure.name[: -len(pure.suffix)], pure.suffix
        bare = _TEST_SUFFIX.sub("", _TEST_PREFIX.sub("", stem))
        return f"{bare}{suffix}" if bare and bare != stem else ""
    bare = _TEST_SUFFIX.sub("", _TEST_PREFIX.sub("", test)).strip("_")
    return bare if bare != test and len(bare) >= 2 else ""


# --- files the evidence names -----------------------------------------------------------------

# Folders that hold sources without being part of a module path (src/main/java/com/acme …).
SOURCE_ROOTS = frozenset(
    {"src", "source", "sources", "lib", "main", "java", "kotlin", "scala", "include"}
)
# Folders that hold tests beside (or mirroring) the sources.
TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})


@dataclass(frozen=True, slots=True)
class PackageRuns:
    """What module paths name, in `form`: runs of two parts or more joined by `/`, and the
    single parts after a first (`krate::cli` names a crate's src/cli.rs)."""

    runs: frozenset[str]
    singles: frozenset[str]


def package_runs(packages: Sequence[tuple[str, ...]]) -> PackageRuns:
    """The runs of parts the module paths name (see `PackageRuns`)."""
    runs: set[str] = set()
    singles: set[str] = set()
    for parts in packages:
        keys = [form(p) for p in parts if form(p)]
        singles.update(keys[1:])
        for i in range(len(keys)):
            for j in range(i + 2, len(keys) + 1):
                runs.add("/".join(keys[i:j]))
    return PackageRuns(frozenset(runs), frozenset(singles))


def package_names(path: str, named: PackageRuns) -> str | None:
    """How module paths name a file: `module` when a run of two parts or more is the end of
    its folders and name (source roots left out: `com.acme.Json` names
    src/main/java/com/acme/Json.java, `tracing_subscriber::layer` tracing-subscriber/src/
    layer.rs), or one part after a first is the whole of it (`fd::cli` names src/cli.rs);
    `folder` when a run is the end of its folders (a Go or Java package); else None."""
    if not named.runs and not named.singles:
        return None
    pure = PurePosixPath(path)
    folders = [form(p) for p in pure.parts[:-1] if p.lower() not in SOURCE_ROOTS]
    key = [*folders, form(pure.name.split(".", 1)[0])]
    if len(key) == 1 and key[0] in named.singles:
        return "module"
    if any("/".join(key[-n:]) in named.runs for n in range(2, len(key) + 1)):
        return "module"
    if any("/".join(folders[-n:]) in named.runs for n in range(2, len(folders) + 1)):
        return "folder"
    return None


def sources_of_tests(tests: Sequence[str], paths: Sequence[str]) -> list[int]:
    """The indexes of `paths` that test files among `tests` test: a file named as the test's
    subject (`subject_of`), the one whose folders share the most with the test's (test
    folders and source roots left out) when several do; none on a tie."""
    wanted: dict[str, list[str]] = {}
    for test in tests:
        subject = subject_of(test)
        if "." in subject:
            wanted.setdefault(subject.lower(), []).append(test)
    if not wanted:
        return []
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, path in enumerate(paths):
        name = PurePosixPath(path).name.lower()
        if name in wanted:
            by_name[name].append(i)
    out: list[int] = []
    for name, found in by_name.items():
        for test in wanted[name]:
            shared = [_shared_folders(test, paths[i]) for i in found]
            best = max(shared)
            if shared.count(best) == 1:
                out.append(found[shared.index(best)])
    return list(dict.fromkeys(out))


def _shared_folders(test: str, path: str) -> int:
    """How many trailing folders a test and a source share, test folders and roots left out."""
    skip = SOURCE_ROOTS | TEST_FOLDERS

    def folders(p: str) -> list[str]:
        return [
            f.lower() for f in PurePosixPath(_clean_path(p)).parts[:-1] if f.lower() not in skip
        ]

    a, b = folders(test), folders(path)
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


# --- matching one file ------------------------------------------------------------------------


def same_file(named: str, path: str) -> bool:
    """Whether a path the issue names is `path` (repository-relative): the named path ends with
    `path` (an absolute path of a checkout), or `path` ends with the named path's file and
    folder (a frame relative to another root); a bare file name names only itself."""
    named = _clean_path(named).lstrip("/")
    if not named or not path:
        return False
    if ("/" + named).endswith("/" + path):
        return True
    if "/" not in named:
        return PurePosixPath(path).name == named
    return ("/" + path).endswith("/" + "/".join(named.split("/")[-2:]))


_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
_LITERAL_OR_BACKTICKS = re.compile(_LITERAL.pattern + r"|`([^`\n]*)`")
# Languages whose back quotes hold strings (elsewhere they quote names in comments and docs).
BACKTICK_STRINGS = frozenset({"go", "javascript", "typescript", "tsx", "shell", "kotlin", "scala"})
_PLACEHOLDER = re.compile(
    r"%[-+ #0-9.*]*[a-zA-Z]|\{[^{}]*\}|\$\{[^}]*\}|#\{[^}]*\}|\\[nrt0\"'\\]|\\u[0-9a-fA-F]{4}"
)


def literals(line: str, language: str | None = None) -> list[str]:
    """The string literals of a code line: double and single quotes, and back quotes in the
    languages whose strings they are (`BACKTICK_STRINGS`)."""
    pattern = _LITERAL_OR_BACKTICKS if language in BACKTICK_STRINGS else _LITERAL
    return [next(g for g in m.groups() if g is not None) for m in pattern.finditer(line)]


def _fixed_parts(literal: str) -> list[str]:
    """A literal's text between format placeholders, lower case, spaces collapsed."""
    return [" ".join(p.split()).lower() for p in _PLACEHOLDER.split(literal) if p.strip()]


def message_share(literal: str, messages: Sequence[str]) -> float:
    """How surely a string literal writes one of the messages: the longest fixed part of it
    found in a message (or a message found in it), over `FULL_MESSAGE` characters (capped at 1);
    0 below `MIN_MESSAGE` characters."""
    best = 0
    lowered = [" ".join(m.split()).lower() for m in messages]
    for part in _fixed_parts(literal):
        core = part.strip(" .,:;!?'\"()[]")
        if len(core) < MIN_MESSAGE:
            continue
        for message in lowered:
            if core in message:
                best = max(best, len(core))
            elif len(message) >= MIN_MESSAGE and message in core:
                best = max(best, len(message))
    return min(1.0, best / FULL_MESSAGE) if best >= MIN_MESSAGE else 0.0


def _bare(flag: str) -> str:
    """A flag's or key's name without dashes and value; lower case unless one letter (-L, -l)."""
    bare = flag.strip().lstrip("-").split("=", 1)[0]
    return bare if len(bare) == 1 else bare.lower()


def _flag_names(evidence: Evidence) -> dict[str, str]:
    """Each flag's and key's bare name (`_bare`) -> how it was written."""
    out: dict[str, str] = {}
    for written in (*evidence.flags, *evidence.config_keys):
        out.setdefault(_bare(written), written)
    return out


_SHORT_FLAG_USE = re.compile(r"(?:case\s+|short\s*(?:=|:|\()\s*)'([A-Za-z])'")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


class _Pointer:
    """Weights and reasons per line of one file, as the evidence adds them."""

    def __init__(self, n_lines: int) -> None:
        self.n = n_lines
        self.weights: dict[int, float] = defaultdict(float)
        self.why: dict[int, list[str]] = defaultdict(list)

    def point(self, line: int, weight: float, reason: str) -> None:
        if 1 <= line <= self.n and weight > 0:
            self.weights[line] += weight
            if reason not in self.why[line]:
                self.why[line].append(reason)

    def lines(self) -> tuple[PointedLine, ...]:
        return tuple(
            PointedLine(line, round(self.weights[line], 6), tuple(self.why[line]))
            for line in sorted(self.weights)
        )


def lines_pointed_at(
    evidence: Evidence, path: str, lines: Sequence[str], language: str | None = None
) -> tuple[PointedLine, ...]:
    """The lines of the file `path` (its `lines`, the first is line 1) that the evidence points
    at, each with its weight and reasons, in line order (see the weights above). `language`:
    the file's, when the caller knows it better than its name (`language_for`)."""
    pointer = _Pointer(len(lines))
    symbols = _frame_lines(evidence, path, pointer)
    _definition_lines(evidence, symbols, lines, language or language_for(path), pointer)
    _literal_lines(evidence, lines, language or language_for(path), pointer)
    return pointer.lines()


def _frame_lines(evidence: Evidence, path: str, pointer: _Pointer) -> set[str]:
    """Point at the lines this file's frames and links name; return their functions."""
    symbols: set[str] = set()
    for frame in evidence.frames:
        if not same_file(frame.path, path):
            continue
        if frame.line is not None:
            last = frame.last_line if frame.last_line is not None else frame.line
            reason = f"{frame.form or 'frame'} {frame.path}:{frame.line}"
            for line in range(frame.line, min(last, frame.line + LINK_SPAN - 1) + 1):
                pointer.point(line, FRAME_LINE, reason)
        if frame.symbol:
            symbols.add(frame.symbol)
    return symbols


def _definition_lines(
    evidence: Evidence, symbols: set[str], lines: Sequence[str], language: str | None,
    pointer: _Pointer,
) -> None:  # fmt: skip
    """Point at the definitions of backticked names, of this file's frames' functions and of
    what a test's name says it tests."""
    names = {form(n): n for n in evidence.identifiers}
    frames = {form(s): s for s in symbols}
    tested = {form(t): t for t in map(subject_of, evidence.tests) if t and "." not in t}
    if not (names or frames or tested):
        return
    text = "\n".join(lines).encode("utf-8", "replace")
    for line, name, _kind in file_definitions(text, language):
        key = form(name)
        if key in names:
            pointer.point(line, DEFINES, f"defines `{names[key]}`")
        if key in frames:
            pointer.point(line, DEFINES, f"defines {frames[key]} (a frame's function)")
        if key in tested:
            pointer.point(line, TESTED, f"defines {tested[key]} (named by a test)")


def _literal_lines(
    evidence: Evidence, lines: Sequence[str], language: str | None, pointer: _Pointer
) -> None:
    """Point at string literals holding a quoted message or naming a flag or key, and at names
    that spell a multi-word flag or key."""
    flags = _flag_names(evidence)
    spelled = {form(bare): flag for bare, flag in flags.items() if "-" in bare}
    shorts = {bare: flag for bare, flag in flags.items() if len(bare) == 1}
    if not (flags or evidence.messages):
        return
    for number, line in enumerate(lines, start=1):
        if not line or len(line) > MAX_LINE_CHARS:
            continue
        quoted = '"' in line or "'" in line or "`" in line
        for literal in literals(line, language) if quoted else ():
            share = message_share(literal, evidence.messages) if evidence.messages else 0.0
            if share:
                pointer.point(number, MESSAGE_LINE * share, "a quoted message as a string literal")
            bare = _bare(literal)
            if bare in flags and (len(bare) > 1 or literal.strip().startswith("-")):
                pointer.point(number, FLAG_LINE, f"handles {flags[bare]}")
        for m in _SHORT_FLAG_USE.finditer(line) if shorts else ():
            if m.group(1) in shorts:
                pointer.point(number, FLAG_LINE, f"handles {shorts[m.group(1)]}")
        for token in _IDENTIFIER.findall(line) if spelled else ():
            if form(token) in spelled:
                pointer.point(number, FLAG_NAME, f"names {spelled[form(token)]}")
