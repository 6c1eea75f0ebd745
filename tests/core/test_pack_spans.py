"""Packing by evidence: the span of a match, one block per file without overlaps, the best
file deepened where its definition matched before a weak file comes in, no signature without
the body that matched and no lone line, nothing below the relevance floor, never over the
budget, secrets never shown. Real tree-sitter definitions, real tiktoken counts, the real
markdown template."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coderag_tui.core.index.outline import file_structure
from coderag_tui.core.prompt.pack import OVER_BUDGET, SECRET, PackInputs, split_lines
from coderag_tui.core.prompt.pack_spans import (
    BELOW_FLOOR,
    DATA_ALONE,
    OUTLINE_SHARE,
    STOP_RELEVANCE,
    SpanInputs,
    data_keys,
    pack_spans,
    relevant_keys,
)
from coderag_tui.core.prompt.render import load_template
from coderag_tui.core.prompt.spans import (
    ELISION,
    FileFacts,
    FileView,
    QueryMatch,
    chunk_span,
    compact_span,
    cost,
    file_facts,
    focus,
    readability,
    runs,
    unit_span,
)
from coderag_tui.core.prompt.tokens import token_counter
from coderag_tui.core.rank.words import tokenize
from coderag_tui.core.records import Chunk, Hit, Ranking, SearchRun, SecretFinding
from tests.core.test_budget import synthetic_module, window_chunks

SESSIONS = '''"""Sessions: how a request's session is opened and saved."""

import json


class SessionStore:
    """Keeps sessions by id."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, str]] = {}

    def open_session(self, sid: str) -> dict[str, str]:
        """Open the session with this id, creating an empty one."""
        return self.sessions.setdefault(sid, {})

    def save_session(self, sid: str, data: dict[str, str]) -> None:
        """Save a session: serialise it and keep it under its id."""
        blob = json.dumps(data)
        self.sessions[sid] = json.loads(blob)

    def clear(self) -> None:
        self.sessions.clear()


def unrelated(x: int) -> int:
    return x * 2
'''
FILES = {
    "app/sessions.py": SESSIONS,
    **{f"app/mod{i}.py": synthetic_module(i, 12) for i in range(6)},
}


def _weights(query: str) -> QueryMatch:
    words = functools.partial(tokenize, split_identifiers=True)
    return QueryMatch({w: 1.0 for w in set(words(query))}, words)


def _inputs(budget: int, **extra: object) -> PackInputs:
    return PackInputs(
        budget=budget,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text=FILES.get,
        **extra,  # type: ignore[arg-type]
    )


def _facts(path: str, text: str | None, language: str | None) -> FileFacts:
    if text is None:
        return FileFacts(())
    return file_facts(text, language)


def _how(
    query: str, relevant: frozenset[str] | None = None, data: frozenset[str] | None = None
) -> SpanInputs:
    return SpanInputs(match=_weights(query), facts=_facts, relevant=relevant, data=data)


def _hits(size: int = 8) -> list[Hit]:
    chunks = [c for path, text in FILES.items() for c in window_chunks(path, text, size)]
    return [Hit(c, 1.0 / r, r) for r, c in enumerate(chunks, start=1)]


def _code_of(text: str) -> dict[str, list[str]]:
    """Each block's header line ranges and code lines, by path."""
    out: dict[str, list[str]] = {}
    header = r"^### \[([^\n]+?) · lines ([^\n\]]+)\]\n(`{3,})\w*\n(.*?)\n\3$"
    for match in re.finditer(header, text, re.M | re.S):
        assert match.group(1) not in out, "two blocks of one file"
        out[match.group(1)] = match.group(4).split("\n")
    return out


def _view(path: str = "app/sessions.py", query: str = "save the session serialise") -> FileView:
    text = FILES[path]
    return FileView(
        path=path,
        language="python",
        lines=split_lines(text),
        facts=_facts(path, text, "python"),
        match=_weights(query),
        count=token_counter("cl100k_base").count_each,
    )


def test_a_match_inside_a_method_packs_the_method_under_its_class_line() -> None:
    lines = split_lines(SESSIONS)
    first = lines.index("class SessionStore:") + 1
    start = next(i for i, line in enumerate(lines, 1) if "def save_session" in line)
    view = _view()
    found = focus(view, 15, 26)  # a window from save_session's docstring to `unrelated`
    assert found.unit is not None and (found.unit.start, found.unit.end) == (start, start + 3)
    assert unit_span(view, found.unit) == ((first, first), (start, start + 3))
    # within 60 tokens: the signatures above the best line, and that line's statement
    compact = compact_span(view, 15, 26, found, 60, 2)
    assert compact[0] == (first, first) and cost(view, compact, 2) <= 60
    chunk = Chunk("app/sessions.py", 15, 26, "lines", "python", "")
    packed = pack_spans([Hit(chunk, 1.0, 1)], _inputs(120), _how("save the session serialise"))
    (block,) = packed.blocks
    assert block.text.split("\n")[:3] == [lines[first - 1], ELISION, lines[start - 1]]
    assert f"lines {first}, {start}–" in packed.text
    # with more room, the ranked window itself comes in whole behind its method ...
    roomy = pack_spans([Hit(chunk, 1.0, 1)], _inputs(400), _how("save the session serialise"))
    assert roomy.blocks[0].shown == ((first, first), (start, 26))
    # ... and once the whole file takes at most WHOLE_SHARE of the room, all of it
    whole = pack_spans([Hit(chunk, 1.0, 1)], _inputs(4000), _how("save the session serialise"))
    assert whole.blocks[0].shown == ((1, len(lines)),)


def test_the_best_file_is_deepened_where_it_matched_before_weak_files_come_in() -> None:
    hits = _hits()
    strong = [h for h in hits if h.chunk.path == "app/sessions.py"]
    weak = [h for h in hits if h.chunk.path != "app/sessions.py"]
    # the session file scores far above the rest: its method comes in whole first
    ranked = [Hit(h.chunk, 10.0, r) for r, h in enumerate(strong, 1)]
    ranked += [Hit(h.chunk, 1.0, r) for r, h in enumerate(weak, len(ranked) + 1)]
    packed = pack_spans(ranked, _inputs(400), _how("save the session serialise json"))
    assert packed.code_files[0] == "app/sessions.py"
    text = packed.blocks[0].text
    assert "def save_session" in text and "self.sessions[sid] = json.loads(blob)" in text
    # files that score alike come in side by side before either grows
    even = [Hit(h.chunk, 1.0, r) for r, h in enumerate(hits, 1)]
    wide = pack_spans(even, _inputs(400), _how("retry delay gateway charge session"))
    assert len(wide.code_files) >= 3


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    budget=st.integers(min_value=60, max_value=6000),
    size=st.sampled_from([4, 8, 16, 64]),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_blocks_never_overlap_never_exceed_the_budget_and_show_the_file(
    budget: int, size: int, seed: int
) -> None:
    import random

    hits = _hits(size)
    random.Random(seed).shuffle(hits)
    hits = [Hit(h.chunk, h.score, r) for r, h in enumerate(hits, start=1)]
    packed = pack_spans(hits, _inputs(budget), _how("retry charge gateway session"))
    assert packed.tokens <= budget
    assert packed.account is not None
    assert packed.account.bare_signatures == 0 and packed.account.lone_lines == 0
    assert token_counter("cl100k_base").count(packed.text) == packed.tokens
    code = _code_of(packed.text)
    assert set(code) == {b.path for b in packed.blocks}
    for block in packed.blocks:
        shown = block.shown
        assert list(shown) == runs(n for a, b in shown for n in range(a, b + 1))  # disjoint
        file_lines = split_lines(FILES[block.path])
        expected: list[str] = []
        for i, (a, b) in enumerate(shown):
            expected += ([ELISION] if i else []) + file_lines[a - 1 : b]
        assert code[block.path] == expected


def test_nothing_below_the_relevance_floor_is_packed_and_packing_says_why_it_stopped() -> None:
    hits = _hits()
    keep = frozenset(h.chunk.key for h in hits[:3])
    packed = pack_spans(hits, _inputs(16000), _how("retry delay", relevant=keep))
    packed_keys = {k for b in packed.blocks for k in b.chunk_keys}
    assert packed_keys <= keep
    assert {b.path for b in packed.blocks} <= {h.chunk.path for h in hits[:3]}
    assert packed.stopped == STOP_RELEVANCE and packed.tokens < 16000 // 2
    below = [d for d in packed.dropped if d.reason == BELOW_FLOOR]
    assert len(below) == len(hits) - 3
    # A prompt half empty never says a chunk was left out for the budget.
    assert not [d for d in packed.dropped if d.reason == OVER_BUDGET]


def test_the_relevance_floor_takes_any_list_s_top_and_a_share_of_the_best_score() -> None:
    chunks = [Chunk("a.py", i, i, "lines", "python", f"x{i}") for i in range(1, 8)]
    fused = Ranking("fused", tuple(Hit(c, 1.0 / r, r) for r, c in enumerate(chunks, 1)))
    bm25 = Ranking("bm25", (Hit(chunks[6], 5.0, 1),))
    run = SearchRun("q", {"fused": fused, "bm25": bm25}, timings=())
    # fused ranks 1-3 are in its top 3; BM25 ranks chunk 7 first; 1/5 < 0.25 of the best
    assert relevant_keys(run, None, 3, 0.0) == {c.key for c in (*chunks[:3], chunks[6])}
    assert relevant_keys(run, None, 10, 0.25) == {c.key for c in chunks[:4]}


def test_a_held_secret_line_is_shown_by_no_other_span() -> None:
    text = SESSIONS.replace("json.loads(blob)", "json.loads(blob)  # key AKIA0000")
    lines = split_lines(text)
    secret_line = next(i for i, line in enumerate(lines, 1) if "AKIA" in line)
    method = next(i for i, line in enumerate(lines, 1) if "def save_session" in line)
    # a chunk above the secret line whose definition (the whole method) holds that line
    near = Chunk("app/sessions.py", method, secret_line - 1, "lines", "python", "")
    held = Chunk("app/sessions.py", secret_line, secret_line, "lines", "python", "")
    finding = SecretFinding(secret_line, 1, secret_line, 5, "AWS Access Key")
    inputs = PackInputs(
        budget=4000,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text={"app/sessions.py": text}.get,
        secrets={"app/sessions.py": (finding,)},
    )
    packed = pack_spans(
        [Hit(held, 2.0, 1), Hit(near, 1.0, 2)], inputs, _how("save session json loads")
    )
    assert "AKIA" not in packed.text
    assert any(d.reason == SECRET and d.key == held.key for d in packed.dropped)
    (block,) = packed.blocks
    shown = {n for a, b in block.shown for n in range(a, b + 1)}
    assert set(range(method, secret_line)) <= shown  # the method, up to its last line ...
    assert secret_line not in shown  # ... which holds the secret


@pytest.mark.parametrize("budget", [300, 1000, 4000])
def test_an_outline_lists_matched_signatures_within_its_share(budget: int) -> None:
    hits = _hits(64)
    packed = pack_spans(hits, _inputs(budget), _how("retry delay gateway charge"))
    outlined = [b for b in packed.blocks if b.outline]
    assert sum(b.tokens for b in outlined) <= budget * OUTLINE_SHARE
    for block in outlined:
        assert all(line.lstrip().startswith(("def ", ELISION)) for line in block.text.split("\n"))
        assert block.path not in packed.code_files


STEPS = "".join(f"        step_{i} = prepare({i})\n" for i in range(60))
BIG_METHOD = (
    '''class Response:
    """A response."""

    def content(self) -> bytes:
        """The body, once read."""
'''
    + STEPS
    + """        if not hasattr(self, "_content"):
            raise ResponseNotRead(
                "Attempted to access streaming response content, without having called read()."
            )
        return self._content

    def other(self) -> None:
        pass
"""
)


def _one_file(path: str, text: str, query: str, budget: int) -> str:
    """The packed code of `text` for `query`, its line windows ranked by the query's words."""
    chunks = window_chunks(path, text, 16)
    words = set(tokenize(query, split_identifiers=True))
    chunks.sort(key=lambda c: -len(words & set(tokenize(c.text, split_identifiers=True))))
    hits = [Hit(c, 1.0 / r, r) for r, c in enumerate(chunks, 1)]
    inputs = PackInputs(
        budget=budget,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text={path: text}.get,
    )
    return pack_spans(hits, inputs, _how(query)).blocks[0].text


@pytest.mark.parametrize("budget", [150, 400, 2000])
def test_a_matched_body_is_never_cut_to_its_signature(budget: int) -> None:
    text = _one_file("models.py", BIG_METHOD, "why would ResponseNotRead be raised", budget)
    lines = text.split("\n")
    assert "    def content(self) -> bytes:" in lines  # the signature comes ...
    assert "            raise ResponseNotRead(" in lines  # ... with the body that matched
    view = FileView(
        path="models.py",
        language="python",
        lines=split_lines(BIG_METHOD),
        facts=_facts("models.py", BIG_METHOD, "python"),
        match=_weights("streaming response content not read"),
        count=token_counter("cl100k_base").count_each,
    )
    assert readability(view, ((4, 4),)).bare_signatures == 1  # what the packer never does


def test_a_raise_keeps_its_message_line() -> None:
    text = _one_file("models.py", BIG_METHOD, "ResponseNotRead", 200)
    assert "raise ResponseNotRead(" in text
    assert "without having called read()" in text  # the statement whole, not its first line


LONG_SIGNATURE = (
    "def route(\n"
    "    path: str,\n"
    + "".join(f"    option_{i}: int = 0,  # plain option number {i}\n" for i in range(30))
    + "    status_code: int = 200,  # the default status code of the response\n"
    + "".join(f"    extra_{i}: int = 0,  # plain extra number {i}\n" for i in range(30))
    + ") -> None:\n"
    "    register(path)\n"
)


def test_a_match_inside_a_long_signature_still_shows_its_file() -> None:
    # A glimpse of a match in a signature's parameters shows nothing (the head alone is
    # never shown cut from its body): the file still offers its other spans.
    text = _one_file("routes.py", LONG_SIGNATURE, "default status code response", 2000)
    assert "status_code: int = 200" in text


RUBY_MODULE = (
    "module Shop\n"
    + "".join(
        f"  # Notes on the shop, line {i} of a long comment about nothing.\n" for i in range(30)
    )
    + "  class Basket < Hash\n"
    + "".join(f"    def item_{i}\n      {i}\n    end\n\n" for i in range(12))
    + "    def indifferent_lookup(key)\n"
    "      self[key.to_s]\n"
    "    end\n"
    "  end\n"
    "end\n"
)


def test_a_module_s_signature_is_its_line_not_the_comment_above_its_first_class() -> None:
    # The comment between `module Shop` and its class is the module's body, not its head:
    # a head reaching the class would put 30 lines of comment in every glimpse below it.
    module, basket = file_structure(RUBY_MODULE, "ruby").units[:2]
    assert (module.start, module.head_end) == (1, 1)
    assert (basket.start, basket.head_end) == (32, 32)


CALLS = (
    "def setup(app):\n"
    + "".join(f"    step_{i}(app)\n" for i in range(10))
    + "    app.register(\n        'first',\n        handler=one,\n        retries=3,\n    )\n"
    + "".join(f"    after_{i}(app)\n" for i in range(20))
)


@pytest.mark.parametrize("first", [13, 16])  # inside the call, and its closing `)`
def test_a_run_never_opens_inside_a_call_begun_above_it(first: int) -> None:
    # A ranked window may start anywhere: its span starts with the call it cuts into.
    view = FileView(
        path="setup.py",
        language="python",
        lines=split_lines(CALLS),
        facts=_facts("setup.py", CALLS, "python"),
        match=_weights("register"),
        count=token_counter("cl100k_base").count_each,
    )
    (start, _), *_ = chunk_span(view, first, first + 10)
    assert view.lines[start - 1] == "    app.register("


def test_a_data_file_enters_only_when_two_lists_rank_it_near_the_top() -> None:
    fixture = Chunk("tests/fixtures/retry.json", 1, 3, "lines", "json", '{"retry": 1}\n')
    code = Chunk("app/sessions.py", 1, 26, "lines", "python", "")
    fused = Ranking("fused", (Hit(fixture, 2.0, 1), Hit(code, 1.0, 2)))
    bm25 = Ranking("bm25", (Hit(fixture, 2.0, 1), Hit(code, 1.0, 2)))
    dense = Ranking("dense", (Hit(code, 0.9, 1),))
    run = SearchRun("retry", {"fused": fused, "bm25": bm25, "dense": dense}, timings=())
    assert fixture.key not in data_keys(run, None)  # BM25 alone says so
    files = {**FILES, "tests/fixtures/retry.json": '{"retry": 1,\n "delay": 2,\n "x": 3}\n'}
    inputs = PackInputs(
        budget=2000,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text=files.get,
    )
    packed = pack_spans(list(fused.hits), inputs, _how("retry", data=data_keys(run, None)))
    assert packed.code_files == ("app/sessions.py",)
    assert any(d.reason == DATA_ALONE and d.key == fixture.key for d in packed.dropped)
    both = Ranking("dense", (Hit(fixture, 0.9, 1), Hit(code, 0.8, 2)))
    agreed = SearchRun("retry", {"fused": fused, "bm25": bm25, "dense": both}, timings=())
    assert fixture.key in data_keys(agreed, None)


LOADER = (
    "def load(path):\n"
    '    """Read a settings file."""\n'
    + "".join(f"    part_{i} = step({i})\n" for i in range(40))
    + "    if not path.exists():\n"
    + '        raise MissingSettings("no settings file at the path you gave")\n'
    + "".join(f"    tail_{i} = step({i})\n" for i in range(40))
    + "    return parse(path)\n"
)


def _pointed_packing(
    issue: str, path: str, text: str, budget: int, query: str
) -> tuple[PackInputs, SpanInputs]:
    """Pack inputs for one file at `budget`, and span inputs whose `pointed` reads `issue`."""
    from coderag_tui.core.rank.evidence import lines_pointed_at, read_evidence

    evidence = read_evidence(issue)

    def pointed(path: str, lines: Sequence[str], language: str | None) -> dict[int, float]:
        return {p.line: p.weight for p in lines_pointed_at(evidence, path, lines, language)}

    inputs = PackInputs(
        budget=budget,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text={path: text}.get,
    )
    return inputs, SpanInputs(match=_weights(query), facts=_facts, pointed=pointed)


@pytest.mark.parametrize(
    "issue",
    [
        'Traceback (most recent call last):\n  File "/srv/app/settings.py", line 44, in load\n'
        "MissingSettings: boom",
        'Loading fails with "no settings file at the path you gave" although the file is there.',
    ],
    ids=["a stack frame", "a quoted message"],
)
def test_what_issue_text_points_at_is_shown_with_its_statement(issue: str) -> None:
    chunks = window_chunks("app/settings.py", LOADER, 64)
    hits = [Hit(c, 1.0 / r, r) for r, c in enumerate(chunks, 1)]
    inputs, how = _pointed_packing(issue, "app/settings.py", LOADER, 200, "load")
    text = pack_spans(hits, inputs, how).blocks[0].text
    assert 'raise MissingSettings("no settings file at the path you gave")' in text
    assert "    if not path.exists():" in text  # the statement around it, not the line alone
    without = SpanInputs(match=_weights("load"), facts=_facts)
    assert "raise MissingSettings" not in pack_spans(hits, inputs, without).blocks[0].text


def test_two_places_an_issue_links_to_in_one_file_are_both_shown() -> None:
    """An issue linking to two functions of one long file sees both linked statements,
    though only the first one's chunk is ranked: each place is a hit of its own, not one
    hit clipped to the first place's function."""
    text = (
        LOADER
        + "\n\n"
        + LOADER.replace("def load(", "def save(").replace(
            "no settings file at the path you gave", "cannot write the settings here"
        )
    )
    at = [n for n, line in enumerate(text.split("\n"), 1) if "raise" in line]
    assert len(at) == 2 and at[1] - at[0] > 64  # two functions, chunks apart
    link = "https://github.com/o/r/blob/main/app/settings.py"
    issue = f"Both fail: {link}#L{at[0]} and {link}#L{at[1]}"
    # Only the first function's chunk is ranked: the second place is known from the link.
    first = window_chunks("app/settings.py", text, 64)[0]
    assert first.start_line <= at[0] <= first.end_line < at[1]
    hits = [Hit(first, 1.0, 1)]
    inputs, how = _pointed_packing(issue, "app/settings.py", text, 300, "settings")
    shown = pack_spans(hits, inputs, how).blocks[0].text
    assert 'raise MissingSettings("no settings file at the path you gave")' in shown
    assert 'raise MissingSettings("cannot write the settings here")' in shown


def test_a_lines_weight_is_the_same_in_any_order_of_its_words() -> None:
    """A line's words come as a set, whose order follows the process's string hashing; the
    weight (and so the prompt) must not: 0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1 in floats."""
    match = QueryMatch({"a": 0.1, "b": 0.2, "c": 0.3}, str.split)
    assert match.weight(["a", "b", "c"]) == match.weight(["c", "b", "a"]) == 0.6


def test_a_c_typedef_has_one_outline_with_its_comment_however_often_it_is_parsed() -> None:
    """`typedef struct {…} T;` and its struct span the same lines with different comments
    above; the parse gave them in varying order, and the outline (so the prompt) followed."""
    text = "\n".join(
        [
            "#include <stddef.h>",
            "",
            "/* The frame's parameters:",
            " * what a reader needs first. */",
            "typedef struct {",
            "    unsigned windowLog;",
            "    size_t contentSize;",
            "} FrameParams;",
            "",
            "/* Compress one frame. */",
            "size_t compress(FrameParams const* p);",
        ]
    )
    found = {repr(file_structure(text, "c").units) for _ in range(40)}
    assert len(found) == 1
    units = file_structure(text, "c").units
    struct = next(u for u in units if u.start == 5)
    assert struct.first == 3  # its comment comes with it


NOTICE = """\
// Copyright (c) 2017 walker developers
// Licensed under the Apache License, Version 2.0
// at your option. All files in the project carrying such
// notice may not be copied, modified, or distributed except
// according to those terms.
"""

WALK_RS = (
    NOTICE
    + """
use std::fs;
use std::path::Path;

pub fn walk(root: &Path, follow: bool) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if follow && path.is_symlink() && fs::metadata(&path).is_err() {
            continue; // a broken symlink is dropped when links are followed
        }
        found.push(path.display().to_string());
    }
    found
}
"""
)


def _rust_packed(query: str, hits: Sequence[Hit], budget: int) -> str:
    inputs = PackInputs(
        budget=budget,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text={"src/walk.rs": WALK_RS}.get,
    )
    return pack_spans(hits, inputs, _how(query)).text


@pytest.mark.parametrize("budget", [300, 2000])
def test_a_licence_notice_is_never_shown_and_never_the_match(budget: int) -> None:
    # The query holds words of the notice ("walker", "notice") and of the code.
    query = "walker -L: notice how a broken symlink is dropped"
    lines = WALK_RS.splitlines()
    whole = Chunk("src/walk.rs", 1, len(lines), "lines", "rust", WALK_RS)
    text = _rust_packed(query, [Hit(whole, 1.0, 1)], budget)
    assert "Licensed under" not in text and "notice may not" not in text
    assert "a broken symlink is dropped" in text
    # A hit on the notice's lines alone shows the code below them.
    notice = Chunk("src/walk.rs", 1, 7, "lines", "rust", "\n".join(lines[:7]) + "\n")
    text = _rust_packed(query, [Hit(notice, 1.0, 1)], budget)
    assert "Copyright" not in text and "use std::fs;" in text
