"""The backend seam: a push is planned before anything is written, and the server's dense list
says honestly how much of the collection it covers (Qdrant's embedded mode, the real client)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("qdrant_client")

from coderag_tui.core.backends import qdrant_push, qdrant_server
from coderag_tui.core.backends.qdrant_points import MARKER_ID, chunk_ids
from coderag_tui.core.backends.qdrant_rank import RemoteDense
from coderag_tui.core.engine import Engine
from coderag_tui.core.index.identity import repository_identity
from coderag_tui.core.rank.dense import DenseIndex
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import HashingEmbedder


def _settings(repo: Path, index_dir: Path) -> tuple[Settings, Settings]:
    local = Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=8)
    return local, local.with_(backend="qdrant", backend_url=str(index_dir.parent / "qdrant"))


def _push(local: Settings, remote: Settings, embedder: HashingEmbedder | None = None) -> None:
    with Engine(local) as engine:
        lexical = engine.update_index(local)
        dense = engine.open_dense(local, lexical, embedder=embedder) if embedder else None
        engine.push(remote, lexical, dense)


def _held(server: qdrant_server.Server) -> tuple[list[str], dict[str, object]]:
    records, _ = server.client.scroll(server.collection, limit=1000, with_payload=True)
    marker = next(r.payload for r in records if str(r.id) == MARKER_ID)
    return sorted(str(r.id) for r in records), dict(marker or {})


def test_a_push_plan_names_what_changes_and_writes_nothing(tiny_repo: Path, tmp_path: Path) -> None:
    local, remote = _settings(tiny_repo, tmp_path / "ix")
    _push(local, remote)
    cart = tiny_repo / "shop" / "cart.py"
    cart.rename(cart.with_name("basket.py"))  # as many words: the weights stay as written
    server = qdrant_server.connect(remote)
    before = _held(server)
    with Engine(local) as engine:
        chunks = list(engine.update_index(local).chunks)
    points = qdrant_push.local_points(remote, chunks, None)
    plan = qdrant_push.plan_push(server, remote, points, repository_identity(tiny_repo))

    assert _held(server) == before  # planning only reads
    assert not plan.recreate and not plan.rewrite
    written = {chunks[i].path for i in plan.write}
    assert written == {"shop/basket.py"}
    gone = {pid for pid in before[0] if pid != MARKER_ID} - set(chunk_ids(chunks)[0])
    assert gone and set(plan.stale) == gone  # cart.py's points, and only those
    assert plan.total == len(plan.write) + len(plan.stale)


def test_the_server_dense_list_covers_what_was_pushed_with_vectors(
    tiny_repo: Path, tmp_path: Path
) -> None:
    embedder = HashingEmbedder()
    local, remote = _settings(tiny_repo, tmp_path / "ix")
    _push(local, remote, embedder)
    extra = tiny_repo / "shop" / "ledger.py"
    extra.write_text("def ledger_balance_xyzzy(entries):\n    return sum(entries)\n")
    _push(local, remote)  # without vectors: the new chunk's point has none
    with Engine.open(remote, dense=False) as there:
        assert there.lexical is not None
        dense = there.open_dense(remote, there.lexical, embedder=embedder)
        index = dense.index
        assert isinstance(index, RemoteDense) and not isinstance(index, DenseIndex)
        assert index.covered == index.n_chunks - 1 and not index.complete
        assert 0 < dense.coverage < 1 and index.embedded == 0
        assert not dense.notices  # nothing was cancelled: the vectors were pushed as they were
        there.use(dense)
        hits = there.search("ledger balance", there.settings).rankings["dense"].hits
        assert hits and all(h.chunk.path != "shop/ledger.py" for h in hits)
