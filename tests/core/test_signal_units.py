"""Each code signal on its own: hand-built chunks, one signal on, and the size of its effect.

`test_signals.py` checks the order a user sees on tiny indexed repositories; here `rescore`
gets a fused list written by hand and the facts of a few chunks (no index, no files), with
every other signal off, so each test pins one signal's direction and size: flipping its sign
or dropping it fails the test.
"""

from __future__ import annotations

import math

import pytest

from coderag_tui.core.index.languages import language_for
from coderag_tui.core.rank.bm25_index import BM25Index
from coderag_tui.core.rank.definitions import Definitions
from coderag_tui.core.rank.evidence import FLAG_LINE, FLAG_NAME
from coderag_tui.core.rank.signals import (
    COHERENCE,
    DEFINITION,
    FLAG,
    FOLDER,
    FORM,
    FRAME,
    ISSUE,
    MESSAGE,
    MODULE,
    NAMED_BY,
    OTHER_CASE,
    PATH,
    ROLE,
    SAME_FILE,
    TEST,
    CodeFacts,
    Scored,
    Weights,
    rescore,
)
from coderag_tui.core.records import Chunk

OFF = Weights.off()


def make_chunk(path: str, start: int = 1, text: str = "") -> Chunk:
    return Chunk(path, start, start + 9, "lines", "python", text)


def facts(paths: list[str], defined: list[tuple[int, str, str]] | None = None) -> CodeFacts:
    """The facts of one chunk per entry of `paths` (a path twice: two chunks of one file),
    with the definitions `defined` (chunk, name, kind)."""
    chunks = [make_chunk(path, 1 + 10 * paths[:i].count(path)) for i, path in enumerate(paths)]
    definitions = Definitions.from_entries(len(chunks), defined or [])
    return CodeFacts(chunks, definitions)


def one_signal(**weight: float) -> Weights:
    fields = {
        "definitions": 0.0, "forms": 0.0, "path": 0.0, "coherence": 0.0, "roles": 1.0,
        "same_file": 1.0, "issue_terms": 0.0,
    }  # fmt: skip
    return Weights(**{**fields, **weight})


def by_chunk(scored: list[Scored]) -> dict[int, tuple[float, dict[str, float]]]:
    return {i: (score, dict(why)) for i, score, why in scored}


def order(scored: list[Scored]) -> list[int]:
    return [i for i, _, _ in scored]


def test_with_every_signal_off_the_fused_list_stays_as_it_was_scaled_to_one() -> None:
    code = facts(["a.py", "b.py"], [(1, "APIRouter", "type")])
    scored = rescore("APIRouter", [(0, 4.0), (1, 2.0)], code, OFF)
    assert order(scored) == [0, 1]
    assert by_chunk(scored) == {0: (1.0, {"bm25": 1.0}), 1: (0.5, {"bm25": 0.5})}


# --- definitions -------------------------------------------------------------------------------
def test_a_chunk_defining_the_queried_name_gains_the_definitions_weight() -> None:
    code = facts(["app.py", "routing.py"], [(1, "APIRouter", "type")])
    scored = rescore("APIRouter", [(0, 1.0), (1, 0.5)], code, one_signal(definitions=0.8))
    assert order(scored) == [1, 0]
    score, why = by_chunk(scored)[1]
    assert why[f"{DEFINITION}: APIRouter"] == pytest.approx(0.8)
    assert score == pytest.approx(1.3)
    assert by_chunk(scored)[0] == (1.0, {"bm25": 1.0})  # the chunk that only uses it


def test_a_name_defined_in_several_files_shares_its_weight_and_another_case_gets_half() -> None:
    code = facts(
        ["a.py", "b.py", "c.py"],
        [(0, "Engine", "type"), (1, "Engine", "type"), (2, "engine", "function")],
    )
    scored = by_chunk(rescore("Engine", [(0, 1.0)], code, one_signal(definitions=1.0)))
    full = 1.0 / math.sqrt(3)
    label = f"{DEFINITION}: Engine"
    assert scored[0][1][label] == pytest.approx(full)
    assert scored[1][1][label] == pytest.approx(full)  # joined: the fused list missed it
    assert scored[2][1][label] == pytest.approx(full * OTHER_CASE)


# --- identifier forms --------------------------------------------------------------------------
def test_words_that_form_a_defined_name_lift_its_chunk_and_one_word_lifts_at_half() -> None:
    code = facts(
        ["a.py", "config.py", "web.py"], [(1, "parse_config", "function"), (2, "Session", "type")]
    )
    weights = one_signal(forms=0.4)
    formed = by_chunk(rescore("parse config", [(0, 1.0), (1, 0.9)], code, weights))
    assert formed[1][1][f"{FORM}: parseconfig"] == pytest.approx(0.4)
    assert formed[1][0] == pytest.approx(1.3)
    word = by_chunk(rescore("session handling", [(0, 1.0)], code, weights))
    assert word[2][1][f"{FORM}: session"] == pytest.approx(0.2)


# --- path match --------------------------------------------------------------------------------
def test_a_file_named_by_the_querys_words_rises_by_the_share_of_words_it_holds() -> None:
    code = facts(["shop/payment.py", "shop/routing.py"])
    scored = by_chunk(rescore("routing rules", [(0, 1.0), (1, 0.8)], code, one_signal(path=0.5)))
    # `routing` of {routing, rules} is in the file's name; its folder `shop` is not asked
    assert scored[1][1][PATH] == pytest.approx(0.25)
    assert scored[1][0] == pytest.approx(1.05)
    assert PATH not in scored[0][1]


# --- file coherence ----------------------------------------------------------------------------
def test_a_file_whose_chunks_score_together_gains_once_on_its_best_chunk() -> None:
    code = facts(["many.py", "many.py", "one.py"])
    fused = [(2, 1.0), (0, 0.6), (1, 0.6)]
    scored = by_chunk(rescore("anything", fused, code, one_signal(coherence=0.3)))
    assert scored[0][1][COHERENCE] == pytest.approx(0.3)  # many.py: 1.2 of the largest 1.2
    assert COHERENCE not in scored[1][1]  # once per file: its best (on a tie, first) chunk
    assert scored[2][1][COHERENCE] == pytest.approx(0.3 * 1.0 / 1.2)


# --- role priors -------------------------------------------------------------------------------
def test_a_test_file_is_scaled_by_the_prior_unless_the_query_asks_for_tests() -> None:
    code = facts(["shop/payment.py", "tests/test_payment.py"])
    fused = [(1, 1.0), (0, 0.8)]
    weights = one_signal(roles=0.5)
    scored = rescore("refund payment", fused, code, weights)
    assert order(scored) == [0, 1]
    score, why = by_chunk(scored)[1]
    assert score == pytest.approx(0.5) and why[f"{ROLE}: test"] == pytest.approx(-0.5)
    asked = by_chunk(rescore("test for refund payment", fused, code, weights))
    assert asked[1] == (1.0, {"bm25": 1.0})


# --- same file -------------------------------------------------------------------------------
def test_a_files_later_chunks_yield_to_another_files_best_and_keep_their_own_order() -> None:
    code = facts(["big.py", "big.py", "big.py", "small.py"])
    fused = [(0, 1.0), (1, 0.95), (2, 0.9), (3, 0.8)]
    scored = rescore("anything", fused, code, one_signal(same_file=0.8))
    assert order(scored) == [0, 3, 1, 2]  # big.py's 2nd (0.76) and 3rd (0.576) below 0.8
    score, why = by_chunk(scored)[2]
    assert score == pytest.approx(0.9 * 0.8**2)  # two better chunks of its file above
    assert why[SAME_FILE] == pytest.approx(0.9 * 0.8**2 - 0.9)
    assert SAME_FILE not in by_chunk(scored)[0][1] and SAME_FILE not in by_chunk(scored)[3][1]
    assert order(rescore("anything", fused, code, OFF)) == [0, 1, 2, 3]


def test_same_file_counts_the_order_after_every_other_signal() -> None:
    # The test file's chunk is halved by its role first, so the source chunk is its file's
    # best only through the roles; a chunk never counts one that ranks below it.
    code = facts(["pay.py", "pay.py", "tests/test_pay.py"])
    fused = [(2, 1.0), (1, 0.9), (0, 0.7)]
    scored = by_chunk(rescore("refund", fused, code, one_signal(roles=0.5, same_file=0.5)))
    assert scored[1][0] == pytest.approx(0.9) and SAME_FILE not in scored[1][1]
    assert scored[0][0] == pytest.approx(0.35)  # pay.py's second: 0.7 x 0.5
    assert scored[2][0] == pytest.approx(0.5) and SAME_FILE not in scored[2][1]


# --- issue terms -------------------------------------------------------------------------------
ISSUE_TEXT = """The refund fails when the payment was already captured and the customer asks
again for money back after a partial capture happened earlier in the same day, see below for
the full trace of the failure we saw in production
Traceback (most recent call last):
  File "/srv/app/shop/payment.py", line 12, in refund
    raise ValueError("already refunded")
ValueError: already refunded
"""


def test_an_issue_lifts_the_file_its_traceback_names_and_the_frames_function() -> None:
    code = facts(
        ["shop/cart.py", "shop/payment.py", "shop/payment.py"], [(2, "refund", "function")]
    )
    fused = [(0, 1.0), (1, 0.5)]
    scored = by_chunk(rescore(ISSUE_TEXT, fused, code, one_signal(issue_terms=0.3)))
    frame = scored[2][1][f"{ISSUE}: traceback frame refund"]
    assert frame == pytest.approx(0.3 * FRAME)
    named = f"{PATH}: path in the issue"
    # the file's boost goes once, to its best chunk: the first (0.5) over the frame's (0.3)
    assert scored[1][1][named] == pytest.approx(0.3 * NAMED_BY["path"])
    assert named not in scored[2][1]
    assert scored[1][0] > scored[0][0]  # the named file now leads the one the prose matched


# --- what issue text points at (core.rank.evidence) --------------------------------------------
def chunks_with_text(files: list[tuple[str, str]]) -> tuple[CodeFacts, BM25Index]:
    """One chunk per (path, text), their facts (no definitions) and their BM25 index."""
    chunks = [Chunk(path, 1, 10, "lines", language_for(path), text) for path, text in files]
    return CodeFacts(chunks, Definitions.from_entries(len(chunks), [])), BM25Index.build(
        chunks, split_identifiers=True, path_in_text=False
    )


def test_a_chunk_holding_the_quoted_message_as_a_literal_gains_the_messages_weight() -> None:
    code, bm25 = chunks_with_text([
        ("cli.c", "/* the output file and passthrough of unsupported input */\nint main() {}"),
        ("fileio.c", 'DISPLAYLEVEL(1, "zstd: %s: unsupported format \\n", src);'),
    ])  # fmt: skip
    query = 'zstd prints "hello: unsupported format" and stops'
    scored = by_chunk(rescore(query, [(0, 1.0)], code, one_signal(messages=0.6), bm25=bm25))
    why = scored[1][1]
    assert why[f"{MESSAGE}: a quoted message as a string literal"] == pytest.approx(0.6 * 0.9)
    assert MESSAGE not in " ".join(scored[0][1])  # the prose's file holds no such literal


def test_a_chunk_handling_a_named_flag_gains_the_flags_weight_and_one_naming_it_less() -> None:
    code, bm25 = chunks_with_text([
        ("src/cli.rs", '#[arg(long = "max-depth")]\npub max_depth: usize,'),
        ("src/walk.rs", "let depth = opts.max_depth; // how deep the walk goes"),
        ("src/output.rs", "// a comment about `--max-depth` in back quotes is no literal"),
    ])  # fmt: skip
    scored = by_chunk(
        rescore("`--max-depth` is ignored", [], code, one_signal(flags=1.0), bm25=bm25)
    )
    assert scored[0][1][f"{FLAG}: handles --max-depth"] == pytest.approx(FLAG_LINE)
    assert scored[1][1][f"{FLAG}: names --max-depth"] == pytest.approx(FLAG_NAME)
    assert 2 not in scored


def test_a_module_path_names_its_file_fully_and_its_folders_files_by_half() -> None:
    code = facts([
        "src/main/java/com/acme/core/JsonFactory.java",
        "src/main/java/com/acme/core/json/Reader.java",
        "src/main/java/com/acme/other/JsonFactory.java",
    ])  # fmt: skip
    query = "com.acme.core.JsonFactory breaks on com.acme.core.json input"
    scored = by_chunk(rescore(query, [(2, 1.0)], code, one_signal(packages=0.4)))
    assert scored[0][1][f"{MODULE}: module in the issue"] == pytest.approx(0.4)
    assert scored[1][1][f"{MODULE}: folder in the issue"] == pytest.approx(0.4 * FOLDER)
    assert scored[2][1] == {"bm25": 1.0}


def test_a_test_file_lifts_the_source_beside_it_and_a_test_name_its_subject() -> None:
    code = facts(
        ["src/plugin/week.js", "src/locale/week.js", "core/mapping/unmarshaler.go"],
        [(2, "UnmarshalJsonReader", "function")],
    )
    query = "test/plugin/week.test.js fails, and so does TestUnmarshalJsonReader"
    scored = by_chunk(rescore(query, [], code, one_signal(tests=0.5)))
    assert scored[0][1][f"{TEST}: the source beside a test in the issue"] == pytest.approx(0.5)
    assert 1 not in scored  # the other week.js lies in another folder
    assert scored[2][1][f"{TEST}: defines UnmarshalJsonReader"] == pytest.approx(0.5)
