"""What the signals read from a query, and the roles read from a path."""

from __future__ import annotations

import pytest

from coderag_tui.core.rank.query_terms import analyse, name_forms, same_word, stem
from coderag_tui.core.rank.roles import path_roles, roles_asked


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("APIRouter", ("APIRouter",)),
        ("parse_config", ("parse_config",)),
        ("Sinatra::Base", ("Base", "Sinatra")),
        ("res.send", ("send", "res")),
        ("reindl()", ("reindl",)),
        ("Session", ("Session",)),
    ],
)
def test_a_whole_query_name_gets_exact_name_priority(query: str, names: tuple[str, ...]) -> None:
    terms = analyse(query)
    assert terms.name_query and terms.names == names and not terms.long


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("session", ()),  # a lower-case word is a word
        ("how does safeParse return errors", ("safeParse",)),
        ("how the Gin Engine embeds RouterGroup", ("RouterGroup",)),  # capitals alone: words
        ("how res.redirect builds the Location header", ("redirect", "res")),
        ("what HTTPAdapter does with retries", ("HTTPAdapter",)),
    ],
)
def test_inside_a_question_only_what_is_written_as_code_is_a_name(
    query: str, names: tuple[str, ...]
) -> None:
    terms = analyse(query)
    assert not terms.name_query and terms.names == names


def test_plain_words_give_the_forms_of_the_names_they_could_make() -> None:
    forms = name_forms(["parse", "config"])
    assert {"parseconfig", "configparse", "configparser"} <= set(forms)
    assert same_word(stem("routes"), stem("route")) and same_word(stem("routing"), "router")
    assert same_word("dependency", stem("dependencies"))


ISSUE = """temperature.fuentes errors when given tz-aware inputs on pandas>=1.0.0
When the inputs to `temperature.fuentes` have a tz-aware index, an internal call to `np.diff`
returns Timedelta objects instead of integers and the model then raises an error right away.
It only happens with recent pandas releases; older ones just warn. See pvlib/temperature.py.

Traceback (most recent call last):
  File "/home/me/env/lib/python3.8/site-packages/pvlib/temperature.py", line 602, in fuentes
    timedelta_hours = np.diff(poa_global.index).astype(float) / 1e9 / 60 / 60
TypeError: float() argument must be a string or a number, not 'Timedelta'
"""


def test_issue_text_gathers_frames_paths_dotted_names_and_exceptions() -> None:
    terms = analyse(ISSUE)
    assert terms.long and not terms.name_query
    assert terms.frames == (
        ("/home/me/env/lib/python3.8/site-packages/pvlib/temperature.py", "fuentes"),
    )
    assert "pvlib/temperature.py" in terms.paths
    assert ("temperature", "fuentes") in terms.dotted and ("np", "diff") in terms.dotted
    assert "TypeError" in terms.names and "fuentes" in terms.names
    assert "When" not in terms.names and "It" not in terms.names  # sentences start with capitals
    assert "fuentes" in terms.code_text and "pvlib/temperature.py" in terms.code_text
    assert terms.roles_asked == frozenset()  # issues talk about tests without asking for them


@pytest.mark.parametrize(
    ("path", "language", "roles"),
    [
        ("src/click/core.py", "python", set()),
        ("tests/test_core.py", "python", {"test"}),
        ("binding/binding_test.go", "go", {"test"}),
        ("src/v4/classic/tests/string.test.ts", "typescript", {"test"}),
        ("gson/src/test/java/com/google/gson/GsonTest.java", "java", {"test"}),
        ("spec/models/user_spec.rb", "ruby", {"test"}),
        ("src/main/kotlin/FlowSpec.kt", "kotlin", {"test"}),
        ("src/main/java/security/KeySpec.java", "java", set()),  # Spec means test in Kotest
        ("CHANGELOG.md", "markdown", {"changelog"}),
        ("HISTORY.rst", "rst", {"changelog"}),
        ("idlelib/history.py", "python", set()),  # code named history is code
        ("README.md", "markdown", {"docs"}),
        ("docs/examples/plot_sun.py", "python", {"docs", "example"}),
        ("benchmarks/bench_search.py", "python", {"benchmark"}),
        ("vendor/github.com/x/y.go", "go", {"vendored"}),
        ("api/v1/service_pb2.py", "python", {"generated"}),
        ("types/index.d.ts", "typescript", {"generated"}),
        ("db/migrations/0001_initial.py", "python", {"migration"}),
        ("src/requests/compat.py", "python", {"legacy"}),
        ("src/click/testing.py", "python", set()),  # the test runner is the implementation
        ("projects/SelfTest/UsageTests/Approx.tests.cpp", "cpp", {"test"}),
        ("singleheader/simdjson.h", "c", {"generated"}),
        ("extras/catch_amalgamated.hpp", "cpp", {"generated"}),
        ("LICENSE-APACHE", None, {"meta"}),
        ("COPYING", None, {"meta"}),
        (".github/ISSUE_TEMPLATE/bug_report.md", "markdown", {"docs", "meta"}),
        (".github/workflows/ci.yml", "yaml", {"meta"}),
        (".travis.yml", "yaml", {"meta"}),
        ("src/security.go", "go", set()),  # code named like a housekeeping file is code
        ("lib/license_check.py", "python", set()),
    ],
)
def test_roles_come_from_the_path_and_language(
    path: str, language: str | None, roles: set[str]
) -> None:
    assert path_roles(path, language) == roles


def test_a_query_asks_for_a_role_by_naming_it() -> None:
    assert analyse("test for routing").roles_asked == {"test"}
    assert analyse("what changed in the changelog").roles_asked == {"changelog"}
    assert analyse("an example of a middleware").roles_asked == {"example"}
    assert analyse("how are routes registered").roles_asked == frozenset()
    assert roles_asked(["Tests"]) == {"test"}


def test_issue_text_in_other_languages_gathers_their_frames_and_paths() -> None:
    issue = (
        "The reader crashes on a negative number in a document, every time, when the document "
        "holds a negative number with a fraction and the reader is asked for its value as a "
        "double; here is the trace:\n"
        "\tat com.acme.json.Reader.parseNumber(Reader.java:42)\n"
        "and the same with https://github.com/acme/json/blob/main/src/main/java/com/acme/json/"
        "Lexer.java#L10-L12 and `HTTP/2`.\n"
    )
    terms = analyse(issue)
    assert terms.long
    assert ("com/acme/json/Reader.java", "parseNumber") in terms.frames
    assert "parseNumber" in terms.names
    assert "src/main/java/com/acme/json/Lexer.java" in terms.paths
    assert "github" not in terms.names and ("github", "com") not in terms.dotted  # a URL
    assert "http2" in terms.words  # the identifier `HTTP/2` stands for
    assert terms.evidence.frames[0].line == 42


BODY = (
    "Steps to reproduce: build the buffer with `BytesMut::with_capacity(8)`, write the number "
    "with `put_int`, then read it back; the number read is positive although the number "
    "written was negative, for every width below eight bytes.\n"
)


@pytest.mark.parametrize(
    ("text", "titled"),
    [
        ("`Buf::get_int()` is positive for negative numbers\n" + BODY, {"get_int"}),
        ("Reading a negative number gives a positive one\n" + BODY, set()),  # no name in it
        (BODY.replace("\n", " ") + "and `get_int` too.", set()),  # one line: no title
        ("x" * 201 + " get_int\n" + BODY, set()),  # a first line too long to be a title
        ("`put_int` writes what `get_int` misreads\n" + BODY, {"put_int", "get_int"}),
    ],
    ids=["named", "prose", "one line", "long first line", "title and body"],
)
def test_an_issues_title_is_its_first_line_and_its_names_are_read(
    text: str, titled: set[str]
) -> None:
    terms = analyse(text)
    assert terms.long
    assert terms.titled == titled
    assert analyse("where is get_int defined").titled == frozenset()  # a question has none
