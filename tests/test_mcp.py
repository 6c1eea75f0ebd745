"""`coderag mcp`: driven by the MCP SDK's own client over stdio, the real protocol, no mocks.

Each test starts `coderag mcp` as a subprocess with the SDK's `Client` (the initialize
handshake coding agents use today), calls the tools and reads what comes back.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
from mcp import Client, StdioServerParameters

from tests.fixtures.network_guard import install_guard
from tests.fixtures.secrets_repo import AWS_SECRET, SETTINGS_PY

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(120)


def session(
    repo: Path, index_dir: Path, scenario: Callable[[Client], Awaitable[None]], *extra: str
) -> None:
    """Run `coderag mcp REPO` and `scenario` against it through the SDK's stdio client, with
    every network connection the server's interpreter tries refused and logged (none may be)."""
    guard = install_guard(index_dir / "guard")
    network_log = index_dir / "network.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coderag_tui", "mcp", str(repo), "--index-dir", str(index_dir), *extra],
        env={
            "PYTHONPATH": os.pathsep.join([str(guard), str(ROOT)]),
            "NETWORK_GUARD_LOG": str(network_log),
            "HF_HUB_OFFLINE": "1",
            "XDG_CONFIG_HOME": str(index_dir / "config"),
            "CODERAG_EMBED_BACKEND": "none",
        },
        cwd=str(repo),
    )

    async def run() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            await scenario(client)

    anyio.run(run)
    assert not network_log.exists(), network_log.read_text(encoding="utf-8")


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's answer as data; fails the test when the tool answered with an error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The one sentence a tool answered an error with."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert "Traceback" not in text and text.count("\n") == 0, text
    return text


def test_a_session_lists_the_tools_and_answers_each(tiny_repo: Path, index_dir: Path) -> None:
    async def scenario(client: Client) -> None:
        assert client.server_info is not None and client.server_info.name == "coderag"
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == {"search", "context", "related", "status"}
        for tool in listed.values():
            assert tool.description and len(tool.description) > 150, tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint
        assert set(listed["search"].input_schema["properties"]) == {
            "query", "k", "mode", "paths", "offset",
        }  # fmt: skip
        assert listed["search"].input_schema["required"] == ["query"]
        assert listed["search"].input_schema["properties"]["k"]["maximum"] == 50

        found = await call(client, "search", query="charge card retry timeout", k=3)
        first = found["hits"][0]
        assert first["path"] == "shop/payment.py" and first["rank"] == 1
        assert first["start_line"] <= 10 <= first["end_line"]
        assert "def charge_card" in first["text"] and first["why"]["bm25"] > 0
        assert abs(sum(first["why"].values()) - first["score"]) < 1e-3

        page1 = await call(client, "search", query="cart item", k=1)
        assert page1["next_offset"] == 1 and len(page1["hits"]) == 1
        page2 = await call(client, "search", query="cart item", k=1, offset=1)
        assert page2["hits"][0]["rank"] == 2
        assert page2["hits"][0]["path"] != page1["hits"][0]["path"] or (
            page2["hits"][0]["start_line"] != page1["hits"][0]["start_line"]
        )
        scoped = await call(client, "search", query="cart item", paths=["tests/"])
        assert {h["path"] for h in scoped["hits"]} == {"tests/test_cart.py"}

        result = await client.call_tool(
            "context", {"task": "why is the total wrong?", "budget": 700}
        )
        assert not result.is_error
        prompt = result.content[0].text  # type: ignore[union-attr]
        account = json.loads(result.content[1].text)  # type: ignore[union-attr]
        assert "## Relevant context from the codebase" in prompt
        assert prompt.rstrip().endswith("why is the total wrong?")
        assert "### [shop/cart.py · lines" in prompt
        assert account["tokens"] <= account["budget"] == 700
        # what the prompt saves and why it stopped, as the CLI and the TUI say it
        files = {b["path"] for b in account["blocks"] if not b["outline"]}
        assert account["saved"].startswith(f"{len(files)} file")
        assert account["stopped"] in ("the budget is full", "relevance ended")

        near = await call(client, "related", path="shop/cart.py", line=30)
        assert near["origin"]["path"] == "shop/cart.py" and near["origin"]["left_out"] >= 1
        for hit in near["hits"]:
            assert not (hit["path"] == "shop/cart.py" and hit["start_line"] <= 30), hit

        status = await call(client, "status")
        assert status["ready"] and status["index"]["chunks"] > 0
        assert status["repository"] == str(tiny_repo.resolve())
        assert status["dense"]["available"] is False and "embed_backend" in str(status["dense"])
        assert status["limits"]["k"] == 50

    session(tiny_repo, index_dir, scenario, "--chunk-lines", "16")


def test_no_path_argument_leaves_the_repository(tiny_repo: Path, index_dir: Path) -> None:
    outside = tiny_repo.parent / "outside"
    outside.mkdir()
    (outside / "private.py").write_text("PRIVATE_TOKEN = 'not for agents'\n" * 5)
    (tiny_repo / "link.py").symlink_to(outside / "private.py")
    (tiny_repo / "linked").symlink_to(outside, target_is_directory=True)
    (tiny_repo / ".coderagignore").write_text("notes/\n")
    (tiny_repo / "notes").mkdir()
    (tiny_repo / "notes" / "plan.py").write_text("x = 1\n" * 5)

    async def scenario(client: Client) -> None:
        for path in (
            "../outside/private.py",
            str(outside / "private.py"),
            "shop/../../outside/private.py",
            "link.py",
            "linked/private.py",
            "notes/plan.py",
            ".git/config",
            "/etc/passwd",
        ):
            said = await refused(client, "related", path=path, line=2)
            assert "not for agents" not in said
            assert "outside the repository" in said or "not a file coderag indexes" in said, said
        for pattern in ("../outside", "/etc", str(outside), "linked/", "linked/*.py", "~/"):
            said = await refused(client, "search", query="token", paths=[pattern])
            assert "outside" in said or "climbs out" in said, said
        found = await call(client, "search", query="PRIVATE_TOKEN agents", k=50)
        assert all("outside" not in h["path"] for h in found["hits"])
        assert all("not for agents" not in (h["text"] or "") for h in found["hits"])

    session(tiny_repo, index_dir, scenario)


def test_texts_are_data_secrets_are_held_and_answers_are_bounded(
    tiny_repo: Path, index_dir: Path
) -> None:
    hostile = "label = '[bold red]boom[/]'  # \x1b]52;c;cHduZWQ=\x07 stays text\n"
    (tiny_repo / "shop" / "markup.py").write_text(hostile)
    (tiny_repo / "shop" / "settings.py").write_text(SETTINGS_PY)
    (tiny_repo / "shop" / "huge.py").write_text(
        "".join(f"def padding_{i}(): return 'filler text {i}'\n" for i in range(400))
    )

    async def scenario(client: Client) -> None:
        found = await call(client, "search", query="label bold red boom", k=3)
        hit = next(h for h in found["hits"] if h["path"] == "shop/markup.py")
        assert hit["text"] == hostile.rstrip("\n")  # exactly the file's text, as a JSON string

        keys = await call(client, "search", query="AWS_SECRET_ACCESS_KEY STRIPE_API_KEY", k=5)
        held = next(h for h in keys["hits"] if h["path"] == "shop/settings.py")
        assert held["text"] is None and "secret" in held["held_back"]
        assert AWS_SECRET not in json.dumps(keys)
        prompt = await client.call_tool("context", {"task": "which AWS key is used?"})
        assert AWS_SECRET not in "".join(b.text for b in prompt.content)  # type: ignore[union-attr]

        big = await call(client, "search", query="padding filler text", k=50)
        cut = next(h for h in big["hits"] if h["path"] == "shop/huge.py")
        assert len(cut["text"]) <= 4000 and "text_cut" in cut
        assert sum(len(h["text"] or "") for h in big["hits"]) <= 60_000
        said = await refused(client, "search", query="cart", k=51)
        assert "k" in said
        said = await refused(client, "context", task="cart", budget=10**6)
        assert "budget" in said

    session(tiny_repo, index_dir, scenario, "--chunk-lines", "200")


def test_answers_stay_fresh_through_the_watch(tiny_repo: Path, index_dir: Path) -> None:
    async def scenario(client: Client) -> None:
        before = await call(client, "search", query="zanzibar_exchange_rate")
        assert all(h["path"] != "shop/currency.py" for h in before["hits"])
        (tiny_repo / "shop" / "currency.py").write_text(
            "def zanzibar_exchange_rate(amount):\n    return amount * 3\n"
        )
        after = await call(client, "search", query="zanzibar_exchange_rate")
        assert after["hits"][0]["path"] == "shop/currency.py"
        status = await call(client, "status")
        assert status["index"]["checks"]["checked"] + status["index"]["checks"]["background"] >= 1

    session(tiny_repo, index_dir, scenario)


def test_without_the_sdk_the_command_says_how_to_install_it(
    tiny_repo: Path, index_dir: Path, tmp_path: Path
) -> None:
    import subprocess

    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "mcp").mkdir()
    (blocker / "mcp" / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "coderag_tui", "mcp", str(tiny_repo), "--index-dir", str(index_dir)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "coderag: coderag mcp needs the MCP SDK, which is not installed: "
        "pip install 'coderag-tui[mcp]'.\n"
    )
    assert time.monotonic() - started < 60
