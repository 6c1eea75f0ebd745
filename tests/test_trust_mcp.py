"""What an answer repeats is bounded and masked, and MCP reads only what it serves (issue
"Trust III", item 3 and the MCP findings).

Each test reproduces what an attacker did against main before the fix: `related` on a file of
keys answered with the keys in its `query` field (hold mode and `--redact-secrets` alike),
`related` read a file the server was started with `--exclude` on, `search --from FILE:LINE
--json` echoed the same lines, a refusal quoted a 5 MB argument whole, 20 `paths` of 1 MB took
49 s, and a wrong type got pydantic's multi-line report with a URL.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client

from coderag_tui.cli import main
from tests.fixtures.secrets_repo import AWS_KEY_ID, AWS_SECRET, GITHUB_TOKEN, SETTINGS_PY
from tests.test_mcp import call, refused, session

pytestmark = pytest.mark.timeout(120)
KEYS = (AWS_KEY_ID, AWS_SECRET, GITHUB_TOKEN)


@pytest.mark.parametrize("secrets", ["hold", "redact"])
def test_related_never_repeats_a_secret_and_reads_only_what_the_server_serves(
    tiny_repo: Path, index_dir: Path, secrets: str
) -> None:
    (tiny_repo / "shop" / "settings.py").write_text(SETTINGS_PY)

    async def scenario(client: Client) -> None:
        answer = await call(client, "related", path="shop/settings.py", line=9, k=3)
        said = json.dumps(answer)
        assert not any(key in said for key in KEYS), said
        assert "<redacted:" in answer["query"]
        refusal = await refused(client, "related", path="shop/payment.py", line=5)
        assert "outside the files this server answers for" in refusal

    session(tiny_repo, index_dir, scenario, "--exclude", "shop/payment.py", "--secrets", secrets)


def test_a_refusal_is_one_bounded_sentence_whatever_the_argument(
    tiny_repo: Path, index_dir: Path
) -> None:
    async def scenario(client: Client) -> None:
        huge = "x" * 5_000_000
        long: tuple[tuple[str, dict[str, object]], ...] = (
            ("search", {"query": "cart", "mode": huge}),
            ("search", {"query": "cart", "k": huge}),
            ("related", {"path": huge, "line": 1}),
            ("search", {"query": huge}),
        )
        for tool, arguments in long:
            said = await refused(client, tool, **arguments)
            assert len(said) < 1200, (tool, len(said))
        started = time.perf_counter()
        said = await refused(client, "search", query="cart", paths=["p" * 1_000_000] * 20)
        assert len(said) < 1200 and time.perf_counter() - started < 30
        wrong: tuple[tuple[str, dict[str, object]], ...] = (
            ("search", {"query": "cart", "k": "ten"}),
            ("search", {"query": ["cart"]}),
            ("related", {"path": 7, "line": "one"}),
            ("context", {"task": {"a": 1}}),
        )
        for tool, arguments in wrong:
            said = await refused(client, tool, **arguments)
            assert "pydantic" not in said and "http" not in said, said
        found = await call(client, "search", query="cart total", k=2, paths=["shop/"])
        assert found["hits"]  # a right call still answers
        # The tools check their arguments themselves; their schema still says each type.
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        search = tools["search"].input_schema["properties"]
        assert search["query"]["type"] == "string"
        assert search["k"]["type"] == "integer" and search["k"]["maximum"] == 50
        assert search["mode"]["enum"] == ["fused", "bm25", "dense", "rerank"]
        assert search["paths"]["type"] == "array"
        assert tools["related"].input_schema["required"] == ["path", "line"]

    session(tiny_repo, index_dir, scenario, "--no-dense")


def test_search_from_a_line_never_repeats_its_secrets_in_json(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiny_repo / "shop" / "settings.py").write_text(SETTINGS_PY)
    argv = ["search", "--from", "shop/settings.py:9", str(tiny_repo), "--no-dense", "--json"]
    assert main([*argv, "--index-dir", str(index_dir)]) == 0
    out = capsys.readouterr().out
    assert not any(key in out for key in KEYS), out
    assert "<redacted:" in json.loads(out)["query"]


def test_a_call_during_a_first_build_says_how_far_it_got(tiny_repo: Path) -> None:
    from coderag_tui.cli.mcp_tools import Tools
    from coderag_tui.core.index.indexer import IndexProgress
    from coderag_tui.settings import Settings

    tools = Tools(Settings(repo=tiny_repo))
    for step, said in (
        (IndexProgress("walk", 0, 0, 0, 0, 2.0), "files are being listed (2 s so far)"),
        (IndexProgress("index", 300, 1200, 900, 0, 9.0), "300 of 1,200 files, 9 s so far"),
        (IndexProgress("bm25", 0, 0, 52_000, 0, 31.0), "BM25 index of 52,000 chunks"),
        (IndexProgress("wait", 0, 0, 0, 0, 0.0), "another coderag is building"),
    ):
        tools._opening.progress = step
        assert said in tools.status()["state"]
