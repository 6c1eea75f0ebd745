"""What issue text points at (`core.rank.evidence`): frames, messages, names, flags, packages
and tests read from text in each language, and the lines of a file they point at."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coderag_tui.core.rank.evidence import (
    DEFINES,
    FLAG_LINE,
    FRAME_LINE,
    MESSAGE_LINE,
    TESTED,
    Evidence,
    Frame,
    lines_pointed_at,
    message_share,
    package_names,
    package_runs,
    read_evidence,
    same_file,
    sources_of_tests,
    subject_of,
)

GO_PANIC = """panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a3b2c]

goroutine 1 [running]:
github.com/acme/shop/core/mapping.(*Unmarshaler).fillField(0xc000010000, 0x0)
\t/home/me/go/pkg/mod/github.com/acme/shop/core/mapping/unmarshaler.go:123 +0x1d
main.main()
\t/tmp/sandbox/prog.go:8 +0x25
"""
RUST_PANIC = """thread 'main' panicked at src/walk.rs:120:9:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
   3: fd::walk::scan
             at ./src/walk.rs:120:9
"""
RUST_OLD_PANIC = "thread 'main' panicked at 'index out of bounds: the len is 3', src/vec.rs:44:5"
JAVA = """Exception in thread "main" java.lang.IllegalStateException: cannot parse the number
\tat com.acme.core.json.ReaderBase.parseNumber(ReaderBase.java:42)
\tat com.acme.core.json.ReaderBase$Inner.run(ReaderBase.java:7)
"""
JS = """TypeError: Cannot read properties of undefined (reading 'locale')
    at formatWeek (src/plugin/weekOfYear/index.js:12:7)
    at /app/node_modules/lib/index.js:3:1
"""
RUBY = "lib/sinatra/base.rb:12:in `route!': undefined method `call' (NoMethodError)"
RUBY_34 = "from lib/app/router.rb:88:in 'Router#dispatch'"
PHP = """PHP Fatal error:  Uncaught TypeError: bad handler in /app/src/Handler/StreamHandler.php \
on line 77
#0 /app/src/Logger.php(12): Monolog\\Handler\\StreamHandler->write()"""
C_ERROR = (
    "lib/compress/zstd_compress.c:1043:5: error: 'cctx' undeclared (first use in this function)"
)
TS_ERROR = (
    "src/generators/parse.ts(31,7): error TS2345: Argument of type 'string' is not assignable"
)
CSHARP = "   at Acme.Parsing.Reader.Next() in C:\\src\\Acme\\Parsing\\Reader.cs:line 55"
PYTHON = 'Traceback (most recent call last):\n  File "pkg/mod.py", line 9, in run\n    x()\n'
LINK = (
    "see https://github.com/acme/shop/blob/b2571883cae4/core/collection/timingwheel.go#L75-L96 "
    "for the code"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GO_PANIC,
            Frame(
                "/home/me/go/pkg/mod/github.com/acme/shop/core/mapping/unmarshaler.go",
                123,
                "fillField",
                "go",
            ),
        ),
        (RUST_PANIC, Frame("src/walk.rs", 120, "scan", "rust")),
        (RUST_OLD_PANIC, Frame("src/vec.rs", 44, "", "compiler")),
        (JAVA, Frame("com/acme/core/json/ReaderBase.java", 42, "parseNumber", "java")),
        (JS, Frame("src/plugin/weekOfYear/index.js", 12, "formatWeek", "javascript")),
        (RUBY, Frame("lib/sinatra/base.rb", 12, "route!", "ruby")),
        (RUBY_34, Frame("lib/app/router.rb", 88, "dispatch", "ruby")),
        (PHP, Frame("/app/src/Handler/StreamHandler.php", 77, "", "php")),
        (C_ERROR, Frame("lib/compress/zstd_compress.c", 1043, "", "compiler")),
        (TS_ERROR, Frame("src/generators/parse.ts", 31, "", "compiler")),
        (CSHARP, Frame("C:/src/Acme/Parsing/Reader.cs", 55, "Next", "csharp")),
        (PYTHON, Frame("pkg/mod.py", 9, "run", "python")),
        (LINK, Frame("core/collection/timingwheel.go", 75, "", "link", 96)),
    ],
    ids=[
        "go",
        "rust",
        "rust-old",
        "java",
        "javascript",
        "ruby",
        "ruby-3.4",
        "php",
        "c",
        "ts",
        "csharp",
        "python",
        "link",
    ],
)
def test_a_frame_of_each_language_is_read_as_file_line_and_function(
    text: str, expected: Frame
) -> None:
    frames = read_evidence(text).frames
    assert expected in frames
    assert frames.index(expected) == (1 if expected.form == "rust" else 0)  # after the panic
    assert expected.path in read_evidence(text).paths


def test_a_php_trace_line_and_a_second_java_frame_are_read_too() -> None:
    php = read_evidence(PHP).frames
    assert Frame("/app/src/Logger.php", 12, "", "php") in php
    java = read_evidence(JAVA).frames
    assert java[1] == Frame("com/acme/core/json/ReaderBase.java", 7, "run", "java")


def test_prose_versions_urls_and_method_calls_are_not_frames_or_paths() -> None:
    text = (
        "Since v1.2.3 on example.com, calling `Foo.getBar()` at 10:30 fails; "
        "see https://example.com/docs/page.html and json.Unmarshal."
    )
    evidence = read_evidence(text)
    assert evidence.frames == ()
    assert evidence.paths == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'it fails with "resolver returned no addresses" sometimes',
            "resolver returned no addresses",
        ),
        (
            "got `rpc error: code = Unavailable desc = connection refused by peer`",
            "rpc error: code = Unavailable desc = connection refused by peer",
        ),
        ("zstd: error: unsupported format here\n", "unsupported format here"),
        (RUST_OLD_PANIC, "index out of bounds: the len is 3"),
        (JAVA, "cannot parse the number"),
        (
            "thread 'main' panicked at src/main.rs:9:5:\nassertion `left == right` failed\n",
            "assertion `left == right` failed",
        ),
    ],
    ids=["double-quotes", "backticks", "error-label", "rust-old", "java", "rust-new"],
)
def test_quoted_messages_are_read(text: str, message: str) -> None:
    assert message in read_evidence(text).messages


def test_backticks_give_names_flags_and_keys() -> None:
    evidence = read_evidence(
        "Using `Layer::downcast_raw` with `--strip-cwd-prefix` and `fd -L -t l` under "
        "`maxmemory-policy` and `core.autocrlf`; also --max-depth=3 in prose."
    )
    assert evidence.identifiers[:2] == ("Layer", "downcast_raw")
    assert set(evidence.flags) >= {"--strip-cwd-prefix", "-L", "-t", "--max-depth"}
    assert evidence.config_keys == ("maxmemory-policy", "core.autocrlf")


def test_module_paths_of_each_language_are_packages() -> None:
    evidence = read_evidence(
        "In com.fasterxml.jackson.core.json the parser, `tracing_subscriber::layer::Layer`, "
        'App\\Http\\Kernel and import "github.com/acme/shop/core/conf" (see https://github.com/a/b/c/d).'
    )
    assert ("com", "fasterxml", "jackson", "core", "json") in evidence.packages
    assert ("tracing_subscriber", "layer", "Layer") in evidence.packages
    assert ("App", "Http", "Kernel") in evidence.packages
    assert ("core", "conf") in evidence.packages
    assert ("c", "d") not in evidence.packages  # a URL is not an import path


@pytest.mark.parametrize(
    ("test", "tested"),
    [
        ("src/foo.test.ts", "foo.ts"),
        ("FooTest.java", "Foo.java"),
        ("core/foo_test.go", "foo.go"),
        ("tests/test_foo.py", "foo.py"),
        ("spec/router_spec.rb", "router.rb"),
        ("TestUnmarshalJsonReader", "UnmarshalJsonReader"),
        ("test_parse_config", "parse_config"),
        ("testParseNegative", "ParseNegative"),
        ("parser.ts", ""),
    ],
)
def test_a_tests_name_says_what_it_tests(test: str, tested: str) -> None:
    assert subject_of(test) == tested


def test_test_files_and_functions_named_in_text_are_tests() -> None:
    evidence = read_evidence(
        "func TestUnmarshalJsonReader(t *testing.T) fails, and so does src/foo.test.ts"
    )
    assert "TestUnmarshalJsonReader" in evidence.tests
    assert "src/foo.test.ts" in evidence.tests


@pytest.mark.parametrize(
    ("named", "path", "same"),
    [
        ("/home/me/src/shop/core/mapping/unmarshaler.go", "core/mapping/unmarshaler.go", True),
        (
            "com/acme/core/json/ReaderBase.java",
            "src/main/java/com/acme/core/json/ReaderBase.java",
            True,
        ),
        ("unmarshaler.go", "core/mapping/unmarshaler.go", True),
        ("mod.rs", "src/a/mod.rs", True),
        ("other/unmarshaler.go", "core/mapping/unmarshaler.go", False),
        ("core/mapping/unmarshaler.go", "core/mapping/marshaler.go", False),
    ],
)
def test_a_named_path_is_a_file_by_its_tail(named: str, path: str, same: bool) -> None:
    assert same_file(named, path) is same


# --- lines of a file --------------------------------------------------------------------------

GO_FILE = [
    "package mapping",  # 1
    "",
    "type Unmarshaler struct{}",  # 3
    "",
    "func (u *Unmarshaler) fillField(v any) error {",  # 5
    '\treturn fmt.Errorf("value of type %s is not assignable to type %s", a, b)',  # 6
    "}",
    "",
    "func UnmarshalJsonReader(r io.Reader, v any) error {",  # 9
    '\tflag.IntVar(&depth, "max-depth", 0, "how deep")',  # 10
    "\treturn nil",
    "}",
]


def weights(found: tuple) -> dict[int, float]:  # type: ignore[type-arg]
    return {p.line: p.weight for p in found}


def test_a_frame_points_at_its_line_and_at_its_functions_definition() -> None:
    evidence = Evidence(frames=(Frame("/x/core/mapping/unmarshaler.go", 6, "fillField", "go"),))
    found = weights(lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE))
    assert found == {5: DEFINES, 6: FRAME_LINE}
    assert lines_pointed_at(evidence, "core/mapping/other.go", GO_FILE) == ()


def test_a_quoted_message_points_at_the_literal_that_writes_it() -> None:
    evidence = read_evidence("I got panic `value of type string is not assignable to type`")
    found = lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE)
    assert weights(found) == {6: MESSAGE_LINE}
    assert found[0].why == ("a quoted message as a string literal",)


def test_a_backticked_name_points_at_its_definition_and_a_flag_at_its_handler() -> None:
    evidence = read_evidence("`UnmarshalJsonReader` ignores `--max-depth`")
    found = weights(lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE))
    assert found == {9: DEFINES, 10: FLAG_LINE}


def test_a_test_name_points_at_the_definition_it_tests() -> None:
    evidence = read_evidence("func TestUnmarshalJsonReader(t *testing.T) fails")
    found = weights(lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE))
    assert found == {9: TESTED}


def test_a_link_points_at_its_range() -> None:
    evidence = read_evidence("https://github.com/a/b/blob/main/core/mapping/unmarshaler.go#L9-L10")
    found = weights(lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE))
    assert found == {9: FRAME_LINE, 10: FRAME_LINE}


@pytest.mark.parametrize(
    ("path", "lines", "line"),
    [
        (
            "src/cli.rs",
            ["    #[arg(short = 'j', long = \"threads\")]", "    pub threads: usize,"],
            1,
        ),
        ("programs/cli.c", ["    switch (c) {", "    case 'j': nbThreads = 1; break;"], 2),
        ("programs/cli.c", ['    if (!strcmp(argument, "-j")) { threads = 1; }'], 1),
    ],
)
def test_a_short_flag_points_at_the_line_that_reads_it(
    path: str, lines: list[str], line: int
) -> None:
    found = weights(lines_pointed_at(read_evidence("Panic when using `-j` flag"), path, lines))
    assert found == {line: FLAG_LINE}


def test_the_same_file_without_evidence_has_no_lines() -> None:
    evidence = read_evidence("the mapping code is slow when the input is big, please look")
    assert not evidence.frames and not evidence.messages
    assert lines_pointed_at(evidence, "core/mapping/unmarshaler.go", GO_FILE) == ()


@pytest.mark.parametrize(
    ("literal", "share"),
    [
        ("value of type %s is not assignable to type %s", 1.0),
        ("not assignable", 0.7),  # 14 characters of the 20 for full weight
        ("assignable", 0.5),
        ("type", 0.0),
    ],
)
def test_a_literal_shares_a_message_by_its_fixed_parts(literal: str, share: float) -> None:
    messages = ["value of type string is not assignable to type"]
    assert message_share(literal, messages) == pytest.approx(share)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=2000))
def test_any_text_is_read_without_error(text: str) -> None:
    evidence = read_evidence(text)
    for frame in evidence.frames:
        assert frame.path
    lines_pointed_at(evidence, "a/b.go", text.splitlines()[:50])


# --- files the evidence names -------------------------------------------------------------


@pytest.mark.parametrize(
    ("package", "path", "how"),
    [
        (
            ("com", "acme", "core", "JsonFactory"),
            "src/main/java/com/acme/core/JsonFactory.java",
            "module",
        ),
        (("tracing_subscriber", "layer", "Layer"), "tracing-subscriber/src/layer.rs", "module"),
        (("fd", "cli", "Opts"), "src/cli.rs", "module"),
        (("core", "conf"), "core/conf/config.go", "folder"),
        (("com", "acme", "core", "json"), "src/main/java/com/acme/core/json/Reader.java", "folder"),
        (("App", "Http", "Kernel"), "app/Http/Kernel.php", "module"),
        (
            ("com", "acme", "core", "JsonFactory"),
            "src/main/java/com/acme/other/JsonFactory.java",
            None,
        ),
        (("fd", "cli", "Opts"), "src/exec/cli.rs", None),
        (("std", "fmt"), "src/format.rs", None),
    ],
)
def test_a_module_path_names_its_file_or_its_folder(
    package: tuple[str, ...], path: str, how: str | None
) -> None:
    assert package_names(path, package_runs([package])) == how


def test_a_test_file_names_the_source_beside_it() -> None:
    paths = [
        "src/plugin/week.js",  # 0
        "src/locale/week.js",  # 1
        "src/main/java/com/acme/Parser.java",  # 2
        "core/mapping/unmarshaler.go",  # 3
        "core/other/unmarshaler.go",  # 4
        "lib/a.ts",  # 5
        "lib/b/a.ts",  # 6
    ]
    assert sources_of_tests(["test/plugin/week.test.js"], paths) == [0]
    assert sources_of_tests(["src/test/java/com/acme/ParserTest.java"], paths) == [2]
    assert sources_of_tests(["core/mapping/unmarshaler_test.go"], paths) == [3]
    assert sources_of_tests(["a.test.ts"], paths) == []  # two a.ts, nothing to tell them apart
    assert sources_of_tests(["TestParse"], paths) == []  # a test function names no file
