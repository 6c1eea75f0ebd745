"""A resident server answers while one prompt works (issue "Trust IV", item 3; case 8 at the
server level).

Each test reproduces what an attacker did against main before the fix: a prompt over a file
whose definition spans thousands of blank lines packed for minutes (the packing itself is
another fix's); meanwhile MCP's `context` gave no answer within 90 s, every other tool call of
the agent waited behind it, and every `coderag search` asked `coderag serve` for its whole
wait (30 s) before answering by itself. Now one answer works at most its bound, and a request
behind it waits a few seconds at most: it is answered, or told in one sentence, or left to its
own process at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from coderag_tui.cli import server as wire
from coderag_tui.settings import read_settings
from tests.fixtures.tiny_repo import make_tiny_repo

BLANKS = 10_000  # blank lines in one signature: packing took 38 s on main (20,000: over 100 s)
TASK = "ledger"  # names the file, none of its lines: the packer shows the definition's start


def _hostile_repo(root: Path) -> Path:
    repo = make_tiny_repo(root)
    body = "".join(f"    x{i} = {i}\n" for i in range(2000))
    (repo / "ledger.py").write_text(
        "def settle_accounts(\n" + "\n" * BLANKS + "    a):\n" + body + "    return a\n"
    )
    return repo


def test_an_agent_is_answered_while_a_prompt_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from coderag_tui.cli import mcp_cmd, mcp_tools
    from coderag_tui.core.resident import Resident

    monkeypatch.setattr(mcp_cmd, "MAX_ANSWER_S", 3.0, raising=False)
    monkeypatch.setattr(mcp_tools, "BUSY_WAIT_S", 1.0, raising=False)
    repo = _hostile_repo(tmp_path / "shop")
    settings = read_settings(
        {"repo": repo, "index_dir": tmp_path / "ix", "embed_backend": "none"},
        environ={},
        config_file=tmp_path / "none.toml",
    ).settings
    resident, _ = Resident.open(settings, tmp_path / "cookies", dense=False)
    tools = mcp_tools.Tools(settings, dense=False)
    tools.use(resident)
    answers: dict[str, Any] = {}
    started = time.monotonic()

    async def scenario() -> None:
        async with (
            Client(mcp_cmd.build_server(tools)) as client,
            anyio.create_task_group() as group,
        ):

            async def context() -> None:
                answers["context"] = await client.call_tool("context", {"task": TASK})

            group.start_soon(context)
            await anyio.sleep(0.5)  # the context holds the engine first
            answers["status"] = await client.call_tool("status", {})
            answers["search"] = await client.call_tool("search", {"query": "refund"})

    try:
        anyio.run(scenario)
    finally:
        resident.close()
    # Bounds of 3 s and 1 s: every answer came within seconds (main: the context alone took
    # 38 s on an idle machine, and the search waited for it).
    assert time.monotonic() - started < 20

    def said(result: Any) -> str:
        return "".join(getattr(block, "text", "") for block in result.content)

    assert not answers["status"].is_error and answers["status"].structured_content["ready"]
    for name in ("context", "search"):  # answered, or told why not in one sentence
        result = answers[name]
        text = said(result)
        if result.is_error:
            assert text.count("\n") == 0 and "Traceback" not in text, text
            assert "took longer than 3 s" in text or "busy with another answer" in text, text
        else:
            assert result.structured_content, text


def test_a_search_never_waits_a_whole_ask_behind_a_served_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERAG_EMBED_BACKEND", "none")
    repo = _hostile_repo(tmp_path / "shop")
    common = [str(repo), "--index-dir", str(tmp_path / "ix"), "--no-dense"]
    server = subprocess.Popen(
        [sys.executable, "-m", "coderag_tui", "serve", *common, "--verbose"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert server.stderr is not None
        for line in server.stderr:  # its first line once it listens
            if "serving" in line:
                break
        settings = read_settings({"repo": repo, "index_dir": tmp_path / "ix"}).settings
        request = {"task": TASK, "dense": False, "pin": [], "exclude_chunks": [], "include": [],
                   "exclude": []}  # fmt: skip
        prompt = threading.Thread(target=lambda: wire.ask(settings, "prompt", request), daemon=True)
        prompt.start()
        time.sleep(1.0)  # the prompt holds the engine first
        code = main(["search", "refund", *common, "--json"])
        out, err = capsys.readouterr()
        assert code == 0 and "shop/payment.py" in out, err
        # main: the server kept the search for the client's whole wait, which then said so
        assert "did not answer" not in err, err
    finally:
        server.send_signal(signal.SIGKILL)  # the prompt's work is not waited for
        server.wait(timeout=30)
