"""Packing ranked chunks into a budget: never over it, best first, exact line ranges, merges."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coderag_tui.core.prompt.pack import (
    EXCLUDED,
    OVER_BUDGET,
    PINNED_MISSING,
    BudgetTooSmall,
    PackInputs,
    advise,
    budget_label,
    pack,
    packing_order,
    split_lines,
)
from coderag_tui.core.prompt.render import load_template
from coderag_tui.core.prompt.tokens import TokenCounter, token_counter
from coderag_tui.core.records import Chunk, Hit, Ranking, SearchRun

TASK = "Where is the retry delay computed, and how would I make it configurable?"
HEADER = re.compile(r"^### \[(?P<path>.+) · lines (?P<start>\d+)–(?P<end>\d+)\]$")


def window_chunks(path: str, text: str, size: int, overlap: int = 0) -> list[Chunk]:
    """Line windows like the `lines` chunker makes (each chunk's text ends with a newline)."""
    lines = split_lines(text)
    chunks = []
    step = size - overlap
    for start in range(0, len(lines), step):
        part = lines[start : start + size]
        language = "python" if path.endswith(".py") else None
        chunks.append(
            Chunk(path, start + 1, start + len(part), "lines", language, "\n".join(part) + "\n")
        )
        if start + size >= len(lines):
            break
    return chunks


def synthetic_module(seed: int, n_functions: int) -> str:
    """Deterministic Python-looking code with varied line lengths, unicode and backticks."""
    rng = random.Random(seed)
    words = ["retry", "delay", "gateway", "charge", "cart", "total", "naïve", "δ", "token"]
    out = [f'"""Module {seed}: generated for packing tests."""', ""]
    for f in range(n_functions):
        name = "_".join(rng.choice(words[:6]) for _ in range(2)) + f"_{f}"
        doc = " ".join(rng.choice(words) for _ in range(rng.randint(2, 9)))
        out.append(f"def {name}(x: int, y: int = {rng.randint(0, 99)}) -> int:")
        out.append(f'    """Compute {doc}."""')
        for _ in range(rng.randint(1, 8)):
            n_terms = rng.randint(1, 6)
            terms = [f"{rng.choice(words[:6])}_{rng.randint(0, 9)}" for _ in range(n_terms)]
            out.append(f"    x = x * {rng.randint(1, 9)} + ({' + '.join(terms)} if y else 0)")
        if f % 7 == 0:
            out.append('    doc = "```python\\nprint(1)\\n```"  # a fence inside the code')
        out.append("    return x")
        out.append("")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return token_counter("cl100k_base")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Hit]]:
    """~8 files on disk (about 170k tokens) and 64-line chunks ranked in a shuffled order."""
    root = tmp_path_factory.mktemp("corpus")
    chunks: list[Chunk] = []
    for i in range(8):
        path = f"pkg/module_{i}.py"
        text = synthetic_module(i, 420)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        chunks += window_chunks(path, text, 64)
    random.Random(7).shuffle(chunks)
    hits = [Hit(c, 1.0 / (i + 1), i + 1) for i, c in enumerate(chunks)]
    return root, hits


def read_file(root: Path) -> Callable[[str], str | None]:
    def file_text(path: str) -> str | None:
        target = root / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    return file_text


def markdown_blocks(text: str) -> list[tuple[str, int, int, str]]:
    """(path, start, end, code) for every `### [path · lines a–b]` block of a markdown prompt."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        match = HEADER.match(lines[i])
        if match:
            fence = re.match(r"^(`{3,})", lines[i + 1])
            assert fence, f"no fence after {lines[i]!r}"
            j = i + 2
            while lines[j] != fence.group(1):
                j += 1
            code = "\n".join(lines[i + 2 : j])
            blocks.append((match["path"], int(match["start"]), int(match["end"]), code))
            i = j
        i += 1
    return blocks


@pytest.mark.parametrize("budget", [512, 2048, 8000, 16_384, 128_000])
@pytest.mark.parametrize("template_name", ["markdown", "xml"])
def test_rendered_prompt_never_exceeds_the_budget(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter, budget: int, template_name: str
) -> None:
    root, hits = corpus
    packed = pack(
        hits,
        PackInputs(
            budget=budget,
            counter=counter,
            template=load_template(template_name),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    assert counter.count(packed.text) == packed.tokens <= budget
    assert packed.blocks, "at least the first chunk fits every budget tested"
    assert packed.dropped, "the corpus is larger than every budget tested"
    # Greedy packing leaves little unused: no dropped chunk would have fitted in the rest.
    assert packed.tokens > budget * 0.6


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(min_value=512, max_value=128_000),
    trim_last=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_any_budget_and_order_stays_within_budget_with_exact_line_ranges(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter, budget: int, trim_last: bool, seed: int
) -> None:
    root, hits = corpus
    order = list(hits)
    random.Random(seed).shuffle(order)
    ranked = [Hit(h.chunk, h.score, i + 1) for i, h in enumerate(order)]
    packed = pack(
        ranked,
        PackInputs(
            budget=budget,
            counter=counter,
            template=load_template("markdown"),
            task=TASK,
            trim_last=trim_last,
            file_text=read_file(root),
        ),
    )
    assert counter.count(packed.text) <= budget
    first = ranked[0].chunk
    assert packed.blocks[0].chunk_keys[0] == first.key
    assert packed.blocks[0].start_line <= first.start_line
    for path, start, end, code in markdown_blocks(packed.text):
        real = (root / path).read_text(encoding="utf-8").split("\n")
        assert code == "\n".join(real[start - 1 : end]), f"{path} {start}-{end} differs from disk"


def test_first_block_is_the_top_ranked_chunk_and_blocks_follow_rank(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter
) -> None:
    root, hits = corpus
    packed = pack(
        hits,
        PackInputs(
            budget=8000,
            counter=counter,
            template=load_template("markdown"),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    headers = markdown_blocks(packed.text)
    top = hits[0].chunk
    assert (headers[0][0], headers[0][1], headers[0][2]) == (top.path, top.start_line, top.end_line)
    assert [b.best_rank for b in packed.blocks] == sorted(b.best_rank for b in packed.blocks)
    assert [(b.path, b.start_line, b.end_line) for b in packed.blocks] == [h[:3] for h in headers]


def test_overlapping_and_adjacent_chunks_of_a_file_merge_into_one_block(
    tmp_path: Path, counter: TokenCounter
) -> None:
    text = "".join(f"line {n} of the file\n" for n in range(1, 61))
    (tmp_path / "a.py").write_text(text, encoding="utf-8")

    def piece(start: int, end: int) -> Chunk:
        lines = text.split("\n")[start - 1 : end]
        return Chunk("a.py", start, end, "lines", "python", "\n".join(lines) + "\n")

    ranked = [piece(5, 15), piece(30, 40), piece(1, 10), piece(16, 20)]
    hits = [Hit(c, 1.0, i + 1) for i, c in enumerate(ranked)]
    for file_text in (read_file(tmp_path), None):  # from the file, or from the chunks alone
        packed = pack(
            hits,
            PackInputs(
                budget=4000,
                counter=counter,
                template=load_template("markdown"),
                task="t",
                file_text=file_text,
            ),
        )
        spans = [(b.start_line, b.end_line) for b in packed.blocks]
        assert spans == [(1, 20), (30, 40)]
        assert packed.blocks[0].chunk_keys == ("a.py:5-15", "a.py:1-10", "a.py:16-20")
        assert packed.blocks[0].best_rank == 1
        assert packed.blocks[0].text == "\n".join(text.split("\n")[0:20])
        assert "### [a.py · lines 1–20]" in packed.text
        assert packed.text.count("### [a.py") == 2


def test_pinned_go_first_and_excluded_never_appear(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter
) -> None:
    root, hits = corpus
    pinned = [hits[9].chunk.key, hits[4].chunk.key]
    excluded = [hits[0].chunk.key, hits[2].chunk.key]
    packed = pack(
        hits[:30],
        PackInputs(
            budget=6000,
            counter=counter,
            template=load_template("markdown"),
            task=TASK,
            pinned=pinned,
            excluded=excluded,
            file_text=read_file(root),
        ),
    )
    included = [k for b in packed.blocks for k in b.chunk_keys]
    assert included[:2] == pinned
    assert not set(excluded) & set(included)
    reasons = {d.key: d.reason for d in packed.dropped}
    assert reasons[hits[0].chunk.key] == reasons[hits[2].chunk.key] == EXCLUDED
    assert set(reasons.values()) <= {EXCLUDED, OVER_BUDGET}
    for dropped in packed.dropped:
        assert dropped.tokens > 0


def test_dropped_chunks_are_reported_and_nothing_is_cut_by_default(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter
) -> None:
    root, hits = corpus
    packed = pack(
        hits[:40],
        PackInputs(
            budget=3000,
            counter=counter,
            template=load_template("markdown"),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    by_key = {h.chunk.key: h.chunk for h in hits}
    for block in packed.blocks:
        for key in block.chunk_keys:
            chunk = by_key[key]
            assert block.start_line <= chunk.start_line <= chunk.end_line <= block.end_line
    included = {k for b in packed.blocks for k in b.chunk_keys}
    assert len(included) + len(packed.dropped) == 40
    assert all(d.reason == OVER_BUDGET for d in packed.dropped)


def test_trim_last_cuts_the_last_chunk_at_a_line_boundary_to_fill_the_budget(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter
) -> None:
    root, hits = corpus
    inputs = PackInputs(
        budget=3000,
        counter=counter,
        template=load_template("markdown"),
        task=TASK,
        file_text=read_file(root),
    )
    whole = pack(hits, inputs)
    trimmed = pack(hits, dataclasses.replace(inputs, trim_last=True))
    assert whole.tokens <= trimmed.tokens <= 3000
    assert trimmed.tokens >= 3000 - 40, "a trimmed prompt fills the budget to within a line"
    last = trimmed.blocks[-1]
    chunk = next(h.chunk for h in hits if h.chunk.key == last.chunk_keys[-1])
    assert last.end_line < chunk.end_line
    real = (root / last.path).read_text(encoding="utf-8").split("\n")
    assert last.text == "\n".join(real[last.start_line - 1 : last.end_line])


def test_same_inputs_give_byte_identical_prompts(
    corpus: tuple[Path, list[Hit]], counter: TokenCounter, tmp_path: Path
) -> None:
    root, hits = corpus
    a = pack(
        hits,
        PackInputs(
            budget=8000,
            counter=counter,
            template=load_template("xml"),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    b = pack(
        hits,
        PackInputs(
            budget=8000,
            counter=token_counter("cl100k_base", cache_dir=tmp_path),
            template=load_template("xml"),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    assert a.text.encode() == b.text.encode()
    assert a == b


def test_a_budget_smaller_than_the_task_says_so(counter: TokenCounter) -> None:
    with pytest.raises(BudgetTooSmall, match="raise the budget"):
        pack(
            [],
            PackInputs(
                budget=20, counter=counter, template=load_template("markdown"), task=TASK * 3
            ),
        )


def test_code_with_backtick_fences_gets_a_longer_fence(counter: TokenCounter) -> None:
    code = 'doc = """\n```python\nprint(1)\n```\n"""\n'
    hit = Hit(Chunk("d.py", 1, 5, "lines", "python", code), 1.0, 1)
    packed = pack(
        [hit], PackInputs(budget=500, counter=counter, template=load_template("markdown"), task="t")
    )
    assert "\n````python\n" + code + "````\n" in packed.text
    assert markdown_blocks(packed.text)[0][3] == code.rstrip("\n")


@pytest.mark.parametrize(
    ("budget", "chunk_lines", "expected"),
    [
        (2000, 64, "budget 2k → 32–64-line chunks recommended; "),
        (4000, 16, "budget 4k → 32–64-line chunks recommended (try 32); "),
        (8000, 64, "budget 8k → 64–128-line chunks recommended; 10 chunks of 64 lines fit"),
        (12_000, 200, "budget 12k → 64–128-line chunks recommended (try 128); "),
        (16_000, 64, "budget 16k → whole files recommended; "),
        (128_000, 64, "budget 128k → whole files recommended; "),
        (131_072, 64, "budget 128k → whole files recommended; "),
    ],
)
def test_chunk_size_advice_follows_the_research_table(
    budget: int, chunk_lines: int, expected: str
) -> None:
    advice = advise(budget, chunk_lines, avg_tokens_per_line=11.2)
    assert advice.text.startswith(expected)
    assert advice.text.endswith(f"{advice.chunks_that_fit} chunks of {chunk_lines} lines fit")
    if advice.recommended_lines is None:
        assert advice.spec.strategy == "file"
    else:
        low, high = advice.recommended_lines
        assert low <= advice.spec.lines <= high


def test_advice_counts_how_many_chunks_fit() -> None:
    small = advise(8000, 64, avg_tokens_per_line=5.0).chunks_that_fit
    large = advise(8000, 64, avg_tokens_per_line=20.0).chunks_that_fit
    assert small > large >= 5
    assert budget_label(8192) == "8k" and budget_label(900) == "900"
    assert budget_label(128_000) == "128k" and budget_label(131_072) == "128k"
    assert budget_label(12_500) == "12.5k" and budget_label(2048) == "2k"


def test_a_pinned_chunk_missing_from_the_results_is_reported(counter: TokenCounter) -> None:
    hit = Hit(Chunk("a.py", 1, 2, "lines", "python", "x = 1\ny = 2"), 1.0, 1)
    packed = pack(
        [hit],
        PackInputs(
            budget=500,
            counter=counter,
            template=load_template("markdown"),
            task="t",
            pinned=["gone.py:1-9"],
        ),
    )
    assert [b.chunk_keys for b in packed.blocks] == [("a.py:1-2",)]
    assert [(d.key, d.reason) for d in packed.dropped] == [("gone.py:1-9", PINNED_MISSING)]


def test_an_estimating_counter_marks_the_prompt_as_approximate(
    corpus: tuple[Path, list[Hit]], tmp_path: Path
) -> None:
    root, hits = corpus
    estimate = token_counter("o200k_base", cache_dir=tmp_path, offline_encoding="none")
    packed = pack(
        hits[:40],
        PackInputs(
            budget=3000,
            counter=estimate,
            template=load_template("markdown"),
            task=TASK,
            file_text=read_file(root),
        ),
    )
    assert (packed.exact, packed.encoding) == (False, "estimate")
    assert estimate.count(packed.text) == packed.tokens <= 3000
    assert len(packed.text) <= 3000 * 3, "the estimate is characters / 3"


def test_packing_order_is_fused_or_the_reranked_few_first_then_the_fused_rest() -> None:
    chunks = [Chunk("a.py", i, i, "lines", "python", f"x = {i}") for i in range(1, 6)]
    fused = tuple(Hit(c, 1.0 / r, r) for r, c in enumerate(chunks, start=1))
    rerank = (Hit(chunks[3], 0.9, 1), Hit(chunks[1], 0.8, 2))
    run = SearchRun(
        "q", {"fused": Ranking("fused", fused), "rerank": Ranking("rerank", rerank)}, timings=()
    )
    order = packing_order(run, "rerank")
    assert [h.chunk.start_line for h in order] == [4, 2, 1, 3, 5]
    assert [h.rank for h in order] == [1, 2, 3, 4, 5]
    # By default the prompt follows the fused list: no reranker has beaten it on both dev sets.
    assert [h.chunk.start_line for h in packing_order(run)] == [1, 2, 3, 4, 5]
    assert [h.chunk.start_line for h in packing_order(run, "fused")] == [1, 2, 3, 4, 5]
