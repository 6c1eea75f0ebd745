"""Packing is bounded by the lines it looks at, and says truly why it stopped (issue "Trust IV",
cases 7, 8 and 12).

Each test reproduces what an attacker did against main before the fix: a definition whose
signature spans thousands of blank lines made every span's price walk back over all of them for
each line (N = 10,000 took 38 s, 20,000 over 100 s, and MCP `context` on that file gave no
answer within 90 s); and a file of 9,000 blank lines, each priced as a token, made the prompt
say "stopped: the budget is full" at 261 of 8,000 tokens, leaving out most of a file that holds
387 tokens in all.
"""

from __future__ import annotations

import json
from pathlib import Path

from coderag_tui.core.prompt.pack import PackInputs
from coderag_tui.core.prompt.pack_spans import STOP_BUDGET, SpanInputs, pack_spans
from coderag_tui.core.prompt.render import load_template
from coderag_tui.core.prompt.spans import FileFacts, QueryMatch
from coderag_tui.core.prompt.tokens import token_counter
from coderag_tui.core.records import Chunk, Hit
from tests.fixtures.cli_run import run_cli_child
from tests.fixtures.tiny_repo import make_tiny_repo

BLANKS = 20_000  # blank lines in one signature: over 100 s to pack on main


def test_a_signature_over_thousands_of_blank_lines_is_packed_at_once(tmp_path: Path) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    body = "".join(f"    total_{i} = {i}\n" for i in range(200))
    (repo / "ledger.py").write_text(
        "def settle_accounts(\n" + "\n" * BLANKS + "    a):\n" + body + "    return a\n"
    )
    index = str(tmp_path / "index")
    done = run_cli_child(
        "prompt", "ledger", str(repo), "--index-dir", index, "--no-dense",
        "--budget", "8000", "--json", timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    prompt = json.loads(done.stdout)
    assert "def settle_accounts(" in prompt["prompt"]
    assert prompt["readable"]["bare_signatures"] == 0


def _view_of(text: str, query: str) -> tuple[PackInputs, SpanInputs, list[Hit]]:
    lines = text.split("\n")[:-1]
    chunk = Chunk("notes.py", 1, len(lines), "file", "python", text)
    inputs = PackInputs(
        budget=8000,
        counter=token_counter("cl100k_base"),
        template=load_template("markdown"),
        task="",
        file_text={"notes.py": text}.get,
    )

    def words(line: str) -> list[str]:
        return line.replace("(", " ").replace(")", " ").replace("=", " ").split()

    how = SpanInputs(
        match=QueryMatch({w: 1.0 for w in query.split()}, words),
        facts=lambda path, text, language: FileFacts(()),
    )
    return inputs, how, [Hit(chunk, 1.0, 1)]


def test_a_file_of_blank_lines_is_packed_whole_and_the_stop_reason_is_true() -> None:
    code = "".join(f"ledger_{i} = balance({i}, 'entry {i}')\n" for i in range(30))
    text = code[: len(code) // 2] + "\n" * 9_000 + code[len(code) // 2 :]
    inputs, how, hits = _view_of(text, "ledger balance")
    packed = pack_spans(hits, inputs, how)
    shown = {n for b in packed.blocks for a, z in b.shown for n in range(a, z + 1)}
    lines = text.split("\n")
    code_lines = {i for i, line in enumerate(lines, 1) if line.strip()}
    assert code_lines <= shown  # every line of code is in: the blanks cost next to nothing
    assert packed.tokens < inputs.budget // 2
    assert packed.stopped != STOP_BUDGET
