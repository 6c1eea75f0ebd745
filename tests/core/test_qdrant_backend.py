"""The Qdrant backend, on Qdrant's embedded mode (the real client, in-process, no server).

A collection pushed from the local index ranks as the local index does; re-pushes write only
what changed; collections that are not coderag's are refused; an unreachable server is one
sentence and leaves the local index as it was. With CODERAG_QDRANT_URL set, one test runs
against that server too.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("qdrant_client")

from coderag_tui.cli import main
from coderag_tui.core.backends import qdrant_points, qdrant_push, qdrant_server
from coderag_tui.core.backends.qdrant_rank import RemoteDense, RemoteLexical
from coderag_tui.core.backends.qdrant_server import NEEDS_CLIENT, BackendError
from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings, SettingsError, read_settings
from tests.fixtures.hashing_embedder import HashingEmbedder

QUERIES = (
    "transaction_id refund",
    "cart total discount",
    "apply_discount percent",
    "item price quantity",
    "shop",
)


def local_settings(repo: Path, index_dir: Path, **kw: object) -> Settings:
    return Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=8, **kw)  # type: ignore[arg-type]


def shared(settings: Settings, url: str | Path, **kw: object) -> Settings:
    return settings.with_(backend="qdrant", backend_url=str(url), **kw)


def push(settings: Settings, *, embedder: HashingEmbedder | None = None, **kw: object) -> object:
    """Index locally (with the embedder's vectors when given) and push, as `coderag index`."""
    local = settings.with_(backend="local")
    with Engine(local) as engine:
        lexical = engine.update_index(local)
        dense = engine.open_dense(local, lexical, embedder=embedder) if embedder else None
        return engine.push(settings, lexical, dense, **kw)  # type: ignore[arg-type]


def ranking(engine: Engine, query: str, name: str = "bm25") -> list[tuple[str, float]]:
    run = engine.search(query)
    return [(h.chunk.key, round(h.score, 4)) for h in run.rankings[name].hits]  # type: ignore[index]


def test_bm25_on_the_server_ranks_as_the_local_index(tiny_repo: Path, tmp_path: Path) -> None:
    local = local_settings(tiny_repo, tmp_path / "ix")
    remote = shared(local, tmp_path / "qdrant")
    report = push(remote)
    with Engine.open(local, dense=False) as here, Engine.open(remote, dense=False) as there:
        assert isinstance(there.lexical and there.lexical.bm25, RemoteLexical)
        assert report.chunks == len(here.lexical.chunks) == report.written  # type: ignore[attr-defined,union-attr]
        for query in QUERIES:
            expected = ranking(here, query)
            assert expected, query
            assert ranking(there, query) == expected, query
            # the fused list (signals included) is computed here from the same lists
            assert ranking(there, query, "fused") == ranking(here, query, "fused"), query


def test_a_client_without_a_local_index_reads_the_chunks_from_the_collection(
    tiny_repo: Path, tmp_path: Path
) -> None:
    local = local_settings(tiny_repo, tmp_path / "ix")
    push(shared(local, tmp_path / "qdrant"))
    elsewhere = shared(local.with_(index_dir=tmp_path / "empty"), tmp_path / "qdrant")
    with Engine.open(local, dense=False) as here, Engine.open(elsewhere, dense=False) as there:
        assert there.lexical is not None and here.lexical is not None
        assert [c.key for c in there.lexical.chunks] == [c.key for c in here.lexical.chunks]
        assert [c.text for c in there.lexical.chunks] == [c.text for c in here.lexical.chunks]
        assert ranking(there, "refund") == ranking(here, "refund")
    assert not (tmp_path / "empty").exists()  # nothing was indexed on this client


def test_fused_search_with_dense_vectors_on_the_server(tiny_repo: Path, tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    local = local_settings(tiny_repo, tmp_path / "ix")
    remote = shared(local, tmp_path / "qdrant")
    report = push(remote, embedder=embedder)
    assert report.dense_points == report.chunks and report.model == embedder.name  # type: ignore[attr-defined]
    with Engine.open(local, dense=False) as here, Engine.open(remote, dense=False) as there:
        assert here.lexical is not None and there.lexical is not None
        here.use(here.open_dense(local, here.lexical, embedder=embedder))
        dense = there.open_dense(remote, there.lexical, embedder=embedder)
        assert isinstance(dense.index, RemoteDense) and dense.coverage == 1.0
        there.use(dense)
        for query in QUERIES:
            assert ranking(there, query, "dense") == ranking(here, query, "dense"), query
            assert ranking(there, query, "fused") == ranking(here, query, "fused"), query
        # another model's query vectors are refused in one sentence; BM25 still answers
        other = HashingEmbedder()
        other.name = "another-model"
        off = there.open_dense(remote, there.lexical, embedder=other)
        assert not off.available
        assert "holds vectors of test-hashing-64, not of another-model" in off.reason


def test_a_re_push_writes_what_changed_and_deletes_what_is_gone(
    tiny_repo: Path, tmp_path: Path
) -> None:
    local = local_settings(tiny_repo, tmp_path / "ix")
    remote = shared(local, tmp_path / "qdrant")
    first = push(remote)
    again = push(remote)
    assert again.written == 0 and again.deleted == 0  # type: ignore[attr-defined]
    assert again.unchanged == first.chunks  # type: ignore[attr-defined]

    payment = tiny_repo / "shop" / "payment.py"
    payment.write_text(payment.read_text() + "\n\ndef chargeback_xyzzy():\n    return 1\n")
    (tiny_repo / "shop" / "cart.py").unlink()
    changed = push(remote)
    assert changed.written >= 1 and changed.deleted >= 1  # type: ignore[attr-defined]
    server = qdrant_server.connect(remote)
    points = server.client.count(server.collection, exact=True).count
    assert points == changed.chunks + 1  # type: ignore[attr-defined]  # + the marker
    with Engine.open(remote, dense=False) as there:
        assert there.lexical is not None
        assert not any(c.path == "shop/cart.py" for c in there.lexical.chunks)
        assert ranking(there, "chargeback_xyzzy")[0][0].startswith("shop/payment.py")
        assert not any(key.startswith("shop/cart.py") for key, _ in ranking(there, "discount"))


def test_an_interrupted_push_is_finished_by_the_next(
    tiny_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qdrant_push, "BATCH", 4)
    local = local_settings(tiny_repo, tmp_path / "ix")
    remote = shared(local, tmp_path / "qdrant")
    stop = threading.Event()

    def progress(done: int, total: int) -> None:
        if done >= 4:
            stop.set()

    stopped = push(remote, progress=progress, cancel=stop)
    assert stopped.cancelled and stopped.written == 4  # type: ignore[attr-defined]
    with Engine.open(remote, dense=False) as there:
        assert any("did not finish" in n for n in there.notices)
    finished = push(remote)
    assert finished.written == finished.chunks - 4 and not finished.cancelled  # type: ignore[attr-defined]
    with Engine.open(remote, dense=False) as there, Engine.open(local, dense=False) as here:
        assert not there.notices
        assert ranking(there, "refund") == ranking(here, "refund")


def test_a_collection_made_by_hand_or_by_another_schema_is_refused(
    tiny_repo: Path, tmp_path: Path
) -> None:
    local = local_settings(tiny_repo, tmp_path / "ix")
    by_hand = shared(local, tmp_path / "qdrant", backend_collection="by-hand")
    client = qdrant_server.connect(by_hand).client
    client.create_collection("by-hand", vectors_config={})
    with pytest.raises(
        BackendError, match=r"^the collection by-hand at .* was not made by coderag"
    ):
        push(by_hand)
    with pytest.raises(BackendError, match="not made by coderag"):
        Engine.open(by_hand, dense=False)

    other = by_hand.with_(backend_collection="other-schema")
    push(other)
    client.set_payload("other-schema", {"coderag_schema": 99}, points=[qdrant_points.MARKER_ID])
    with pytest.raises(BackendError) as refused:
        Engine.open(other, dense=False)
    message = str(refused.value)
    assert "holds coderag schema 99" in message and "--collection" in message
    assert message.count(". ") == 0 and message.endswith(".")


def test_the_cli_pushes_and_searches_the_server(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--index-dir", str(tmp_path / "ix"), "--embed-backend", "none", "--chunk-lines", "8"]
    server = ["--backend", "qdrant", "--url", str(tmp_path / "qdrant")]
    assert main(["index", str(tiny_repo), *common, *server]) == 0
    out = capsys.readouterr().out
    assert "server:   pushed" in out and "written" in out
    assert (
        main(["search", "transaction_id refund", str(tiny_repo), *common, *server, "--json"]) == 0
    )
    assert '"shop/payment.py"' in capsys.readouterr().out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", ["search", "index"])
def test_an_unreachable_server_is_one_sentence_and_the_local_index_stays(
    tiny_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    common = ["--index-dir", str(tmp_path / "ix"), "--embed-backend", "none"]
    assert main(["index", str(tiny_repo), *common]) == 0
    (index,) = (tmp_path / "ix").glob("*.sqlite")
    before = sha(index)
    (tiny_repo / "shop" / "cart.py").write_text("changed = True\n")  # an index run would see it
    capsys.readouterr()
    args = [str(tiny_repo), *common, "--backend", "qdrant", "--url", "http://127.0.0.1:9"]
    args = ["search", "refund", *args] if command == "search" else ["index", *args]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("coderag: cannot reach the Qdrant server at http://127.0.0.1:9:")
    assert captured.err.endswith("; the local index is untouched.\n")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert sha(index) == before


def test_backend_settings_come_from_flags_files_and_the_environment(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('backend = "qdrant"\nbackend_url = "http://qdrant.example:6333"\n')
    loaded = read_settings({"repo": tmp_path}, environ={}, config_file=user)
    assert loaded.settings.backend == "qdrant"
    assert loaded.settings.backend_url == "http://qdrant.example:6333"
    env = {"CODERAG_BACKEND_COLLECTION": "team-index"}
    loaded = read_settings({"repo": tmp_path}, environ=env, config_file=user)
    assert loaded.settings.backend_collection == "team-index"
    # A repository may choose neither the backend nor where its code and your queries go.
    (tmp_path / ".coderag.toml").write_text('backend_url = "http://attacker.example"\n')
    loaded = read_settings({"repo": tmp_path}, environ={}, config_file=tmp_path / "none.toml")
    assert loaded.settings.backend_url == ""
    assert any("ignored backend_url" in w for w in loaded.warnings)
    with pytest.raises(SettingsError, match="backend_collection must be letters, digits"):
        Settings(repo=tmp_path, backend_collection="a/b")
    with pytest.raises(SettingsError, match=r"--url: must be an http:// or https:// URL"):
        read_settings({"backend_url": "ftp://x"}, environ={}, flags={"backend_url": "--url"})


def test_the_collection_name_follows_the_repository_and_chunking_not_ranking(
    tmp_path: Path,
) -> None:
    base = Settings(repo=tmp_path)
    name = qdrant_server.collection_name(base)
    assert re.fullmatch(r"coderag-[0-9a-f]{12}-lines-64-0", name)
    assert qdrant_server.collection_name(base.with_(rrf_k=10, signals=False)) == name
    assert qdrant_server.collection_name(base.with_(chunk_lines=32)) != name
    assert qdrant_server.collection_name(base.with_(repo=tmp_path / "..")) != name
    assert qdrant_server.collection_name(base.with_(backend_collection="mine")) == "mine"


def test_urls_are_shown_without_credentials() -> None:
    shown = qdrant_server.shown_url("https://user:secret@host:6333/x?api-key=k\x1b")
    assert shown == "https://host:6333/x"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://[oops", "http://[oops"),
        ("http://user:secret@[oops/x?api-key=k", "http://[oops/x"),
        ("http://host:abc", "http://host:abc"),
        ("http://host:99999", "http://host:99999"),
    ],
)
def test_a_url_that_does_not_parse_is_one_sentence_naming_it(
    tiny_repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    url: str,
    shown: str,
) -> None:
    assert qdrant_server.shown_url(url) == shown
    args = [str(tiny_repo), "--index-dir", str(tmp_path / "ix"), "--embed-backend", "none"]
    assert main(["search", "refund", *args, "--backend", "qdrant", "--url", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"coderag: cannot use {shown} as a Qdrant server (")
    assert captured.err.endswith("): give http://HOST:PORT.\n")
    assert captured.err.count("\n") == 1 and "secret" not in captured.err


def test_an_ipv6_host_keeps_its_brackets() -> None:
    assert qdrant_server.shown_url("http://[::1]:6333/x") == "http://[::1]:6333/x"


def test_the_package_imports_without_qdrant_client_and_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = (
        "import sys; import coderag_tui.core.engine, coderag_tui.core.backends.qdrant,"
        " coderag_tui.core.backends.qdrant_push, coderag_tui.core.backends.qdrant_rank;"
        "print('qdrant_client' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # as if it were not installed
    settings = shared(Settings(repo=tmp_path), tmp_path / "qdrant")
    with pytest.raises(BackendError) as missing:
        qdrant_server.connect(settings)
    assert str(missing.value) == NEEDS_CLIENT


@pytest.mark.skipif(not os.environ.get("CODERAG_QDRANT_URL"), reason="CODERAG_QDRANT_URL unset")
def test_a_real_server_ranks_as_the_local_index(tiny_repo: Path, tmp_path: Path) -> None:
    local = local_settings(tiny_repo, tmp_path / "ix")
    name = f"coderag-test-{os.getpid()}"
    remote = shared(local, os.environ["CODERAG_QDRANT_URL"], backend_collection=name)
    server = qdrant_server.connect(remote)
    try:
        push(remote)
        with Engine.open(local, dense=False) as here, Engine.open(remote, dense=False) as there:
            for query in QUERIES:
                assert ranking(there, query) == ranking(here, query), query
    finally:
        server.client.delete_collection(name)
