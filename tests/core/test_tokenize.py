"""The BM25 tokenizer: what a chunk and a query turn into (the same function for both)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coderag_tui.core.rank.words import compounds, tokenize


def test_default_splits_on_non_alphanumeric_characters_and_lowercases() -> None:
    assert tokenize("def charge_card(gateway, amount): return Gateway.CHARGE") == [
        "def",
        "charge",
        "card",
        "gateway",
        "amount",
        "return",
        "gateway",
        "charge",
    ]


def test_single_digits_are_dropped_but_numerals_of_two_or_more_digits_stay() -> None:
    assert tokenize("x = 100 + md5(0x1f) * 2") == ["x", "100", "md5", "0x1f"]
    assert tokenize("HTTP_404_NOT_FOUND = 404", split_identifiers=True) == [
        "http_404_not_found",
        "http",
        "404",
        "not",
        "found",
        "404",
    ]
    assert tokenize("retry 3 times, port 8080", split_identifiers=True) == [
        "retry",
        "times",
        "port",
        "8080",
    ]


def test_default_splits_snake_case_but_not_camel_case() -> None:
    # A query "apply discount" must find `apply_discount` without any option.
    assert tokenize("getUserName get_user_name") == ["getusername", "get", "user", "name"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getUserName", ["getusername", "get", "user", "name"]),
        ("get_user_name", ["get_user_name", "get", "user", "name"]),
        ("HTTPServer2", ["httpserver2", "http", "server"]),
        ("__init__", ["__init__", "init"]),
        ("plain", ["plain"]),
        ("Plain", ["plain"]),
        ("HTTP", ["http"]),
    ],
)
def test_split_identifiers_adds_parts_and_keeps_the_whole(text: str, expected: list[str]) -> None:
    assert tokenize(text, split_identifiers=True) == expected


def test_unicode_letters_are_words() -> None:
    assert tokenize("Größe = naïve_café") == ["größe", "naïve", "café"]


@given(st.text(max_size=200))
def test_split_identifiers_covers_every_default_word(text: str) -> None:
    """Each default word is there, or (a compound like `0A` or `getUser` inside `x_getUser`)
    all of its identifier parts are; every token is lowercase and not a single digit."""
    split = tokenize(text, split_identifiers=True)
    present = set(split)
    for word in re.findall(r"[^\W_]+", text):  # the default words, before lowercasing
        if word.isdigit() and len(word) == 1:
            continue
        parts = {
            p.lower()
            for p in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_A-Za-z]+", word)
            if not (len(p) == 1 and p.isdigit())  # `¹` is a digit to str.isdigit, not to \d
        }
        assert word.lower() in present or parts <= present, (word, split)
    assert all(t == t.lower() and not (t.isdigit() and len(t) == 1) for t in split)


def test_a_superscript_digit_is_no_part_of_its_own() -> None:
    """Found by hypothesis: `0¹_` has the default word `0¹`; its only other part, `¹`, is a
    single digit (str.isdigit), which no token is."""
    assert tokenize("0¹_", split_identifiers=True) == ["0¹_"]


def test_a_compound_segment_is_covered_by_its_parts() -> None:
    """Found by hypothesis: `0A_` has the default word `0a`; split mode has `0a_` and `a`."""
    assert tokenize("0A_", split_identifiers=True) == ["0a_", "a"]
    assert tokenize("test_getUser", split_identifiers=True) == [
        "test_getuser",
        "test",
        "get",
        "user",
    ]


# --- the same words as the reference splitter, now that the loops run in C ---------------------

_CODE_ALPHABET = st.sampled_from(
    [*"abcXYZ_019 .()[]{}:=,\n\t'\"#-/", "é", "Ü", "ß", "٣", "²", "日本", "İ", "ǅ", "\u00a0"]
)


@given(st.lists(_CODE_ALPHABET, max_size=60).map("".join))
def test_the_words_are_the_reference_splitters_on_any_text(text: str) -> None:
    from tests.fixtures import reference_words

    for split in (False, True):
        assert tokenize(text, split_identifiers=split) == reference_words.tokenize(
            text, split_identifiers=split
        )


def test_the_words_are_the_reference_splitters_on_the_standard_library() -> None:
    import os
    import sysconfig
    from pathlib import Path

    from tests.fixtures import reference_words

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    assert len(files) > 500
    checked = 0
    for path in files[::9]:  # a ninth of the files: every kind of module, in seconds
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        for split in (False, True):
            assert tokenize(text, split_identifiers=split) == reference_words.tokenize(
                text, split_identifiers=split
            ), (os.fspath(path), split)
        checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("where is HTTP/2 negotiated", ["http2"]),
        ("the e-mail field", ["email", "e_mail"]),
        ("decode utf-8 text", ["utf8"]),
        ("the Set-Cookie header", ["setcookie", "set_cookie"]),
        ("fd --max-depth 3", ["maxdepth", "max_depth"]),
        ("read-only files", ["readonly", "read_only"]),
        ("src/a/b.rs and a-b-c-d and 2020-12-01 and x.y-z", []),  # paths, long runs, dates
    ],
)
def test_dashed_and_slashed_words_give_the_identifiers_they_stand_for(
    text: str, joined: list[str]
) -> None:
    assert compounds(text) == joined
