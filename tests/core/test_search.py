"""Searcher: BM25 alone says why fused == BM25; with vectors it fuses; rerank reorders; timings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from coderag_tui.core.given_paths import LocationError, query_from_location
from coderag_tui.core.index.chunk import chunk_file
from coderag_tui.core.index.store import EmbeddingCache
from coderag_tui.core.rank.dense import DenseIndex
from coderag_tui.core.rank.fusion import rrf
from coderag_tui.core.rank.lexical import BM25Index
from coderag_tui.core.rank.search import Searcher
from coderag_tui.core.records import ChunkingSpec
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import HashingEmbedder
from tests.fixtures.tiny_repo import windows

CHUNKS = windows()

STAGES = ["tokenize", "bm25", "embed query", "vector search", "fusion", "signals", "rerank"]


class StepClock:
    """A clock that advances 1 ms per reading, so every stage takes exactly 1 ms."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


class ShortestFirst:
    """A reranker that prefers shorter chunks (deliberately unlike BM25)."""

    name = "shortest-first"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [-float(len(t)) for t in texts]


def bm25() -> BM25Index:
    return BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)


def test_without_a_model_or_signals_fused_equals_bm25_and_says_why() -> None:
    searcher = Searcher(
        CHUNKS, bm25(), dense_reason="dense search is off: no model here.", clock=StepClock()
    )
    run = searcher.run("charge the card", Settings(k=5, signals=False))
    keys = [h.chunk.key for h in run.rankings["bm25"].hits]
    assert keys and [h.chunk.key for h in run.rankings["fused"].hits] == keys
    assert not run.rankings["dense"].available
    assert run.rankings["dense"].reason == "dense search is off: no model here."
    assert "fused = BM25 (dense is off: no model here.)" in run.notes
    assert not run.rankings["rerank"].available and "--rerank" in run.rankings["rerank"].reason
    assert [t.stage for t in run.timings] == ["tokenize", "bm25", "fusion"]


def test_dense_off_for_now_is_said_once_in_the_fused_note() -> None:
    """A monorepo's first answer said "dense is off: dense search is off for now: …"."""
    reason = "dense search is off for now: a background process makes the first pass."
    searcher = Searcher(CHUNKS, bm25(), dense_reason=reason, clock=StepClock())
    run = searcher.run("charge the card", Settings(k=5, signals=False))
    assert "fused = BM25 (dense is off for now: a background process makes the first pass.)" in (
        run.notes
    )
    assert all(t.ms == pytest.approx(1.0) for t in run.timings)


def test_rankings_hold_depth_hits_so_faces_can_show_k() -> None:
    run = Searcher(CHUNKS, bm25()).run("the self return def import item", Settings(k=3, depth=8))
    assert len(run.rankings["bm25"].hits) == 8
    assert [h.rank for h in run.rankings["bm25"].hits] == list(range(1, 9))
    run = Searcher(CHUNKS, bm25()).run("the self return def import item", Settings(k=12, depth=4))
    assert len(run.rankings["bm25"].hits) == 12


def dense_searcher(tmp_path: Path, **kw: object) -> Searcher:
    embedder = HashingEmbedder()
    cache = EmbeddingCache.open(tmp_path / "emb.sqlite")
    dense = DenseIndex.build(CHUNKS, embedder, cache)
    return Searcher(CHUNKS, bm25(), dense=dense, embedder=embedder, clock=StepClock(), **kw)  # type: ignore[arg-type]


def test_with_vectors_fused_is_rrf_of_bm25_and_dense(tmp_path: Path) -> None:
    searcher = dense_searcher(tmp_path)
    settings = Settings(k=5, depth=10, signals=False)
    run = searcher.run("refund a transaction", settings)
    bm25_keys = [h.chunk.key for h in run.rankings["bm25"].hits]
    dense_keys = [h.chunk.key for h in run.rankings["dense"].hits]
    assert run.rankings["dense"].available and len(dense_keys) == 10
    expected = [key for key, _ in rrf([bm25_keys, dense_keys], k=60)][:10]
    assert [h.chunk.key for h in run.rankings["fused"].hits] == expected
    assert not any(n.startswith("fused = BM25") for n in run.notes)
    assert [t.stage for t in run.timings] == STAGES[:5]
    ranks = run.ranks_of(expected[0])
    assert set(ranks) == {"bm25", "dense", "fused"}


ISSUE = (
    "Refunds fail for a transaction paid by card. When I refund a transaction the payment "
    "stays captured and the order total is not restored; I expected the refund to release "
    "the payment and the item to return to the cart, as the docs say it should."
)


def test_issue_text_is_fused_without_dense_unless_its_weight_is_set(tmp_path: Path) -> None:
    """On the dev sets' issue text dense lowered the fused list (issue 41); a question keeps it."""
    searcher = dense_searcher(tmp_path)
    settings = Settings(k=5, depth=10, signals=False)
    issue = searcher.run(ISSUE, settings)
    assert issue.rankings["dense"].available  # its own column is still there
    assert [h.chunk.key for h in issue.rankings["fused"].hits] == (
        [h.chunk.key for h in issue.rankings["bm25"].hits]
    )
    assert any("left out of the fused list for issue text" in n for n in issue.notes)
    weighed = searcher.run(ISSUE, Settings(k=5, depth=10, signals=False, issue_dense_weight=1.0))
    bm25_keys = [h.chunk.key for h in weighed.rankings["bm25"].hits]
    dense_keys = [h.chunk.key for h in weighed.rankings["dense"].hits]
    expected = [key for key, _ in rrf([bm25_keys, dense_keys], k=60)][:10]
    assert expected != bm25_keys  # so the two runs above differ
    assert [h.chunk.key for h in weighed.rankings["fused"].hits] == expected
    question = searcher.run("refund a transaction", settings)
    assert not any(n.startswith("fused = BM25") for n in question.notes)


def test_weighted_fusion_is_used_when_asked(tmp_path: Path) -> None:
    searcher = dense_searcher(tmp_path)
    only_bm25 = searcher.run("refund", Settings(fusion="weighted", bm25_weight=1.0, depth=10))
    top_bm25 = only_bm25.rankings["bm25"].hits[0].chunk.key
    assert only_bm25.rankings["fused"].hits[0].chunk.key == top_bm25
    only_dense = searcher.run("refund", Settings(fusion="weighted", bm25_weight=0.0, depth=10))
    assert only_dense.rankings["fused"].hits[0].chunk.key == (
        only_dense.rankings["dense"].hits[0].chunk.key
    )


def test_rerank_reorders_the_fused_candidates_and_keeps_a_few(tmp_path: Path) -> None:
    searcher = dense_searcher(tmp_path, reranker=ShortestFirst())
    settings = Settings(rerank=True, rerank_candidates=6, rerank_keep=3)
    run = searcher.run("cart total", settings)
    candidates = [h.chunk for h in run.rankings["fused"].hits[:6]]
    expected = sorted(candidates, key=lambda c: len(c.text))[:3]
    assert [h.chunk for h in run.rankings["rerank"].hits] == expected
    assert run.final.name == "rerank"
    assert [t.stage for t in run.timings] == STAGES


def test_rerank_asked_for_without_a_model_says_why() -> None:
    searcher = Searcher(CHUNKS, bm25(), rerank_reason="rerank is off: no cross-encoder here.")
    run = searcher.run("cart", Settings(rerank=True))
    assert run.rankings["rerank"].reason == "rerank is off: no cross-encoder here."
    assert "rerank is off: no cross-encoder here." in run.notes
    assert run.final.name == "fused"


def test_excluded_chunks_are_left_out_of_every_ranking(tmp_path: Path) -> None:
    searcher = dense_searcher(tmp_path)
    settings = Settings(depth=5, k=5)
    first = searcher.run("the cart items and their total", settings)
    top = first.rankings["bm25"].hits[0].chunk
    exclude = searcher.overlapping(top.path, top.start_line, top.end_line)
    assert exclude == {CHUNKS.index(top)}
    run = searcher.run("the cart items and their total", settings, exclude=exclude)
    for name in ("bm25", "dense", "fused"):
        assert top not in [h.chunk for h in run.rankings[name].hits]
        assert len(run.rankings[name].hits) == 5


def test_empty_and_numeric_queries_find_nothing_and_say_so() -> None:
    searcher = Searcher(CHUNKS, bm25())
    assert searcher.run("", Settings()).rankings["bm25"].hits == ()
    run = searcher.run("1 2", Settings())
    assert run.rankings["fused"].hits == ()
    assert any("no indexable words" in n for n in run.notes)


def test_query_from_location_takes_the_lines_before(tiny_repo: Path) -> None:
    lines = (tiny_repo / "shop/cart.py").read_text().splitlines()
    query = query_from_location(Settings(repo=tiny_repo), "shop/cart.py", 30, 3)
    assert query == "\n".join(lines[26:29])
    assert lines[29] not in query.splitlines()
    assert query_from_location(Settings(repo=tiny_repo), "shop/cart.py", 3, 10) == "\n".join(
        lines[:2]
    )


@pytest.mark.parametrize(
    ("file", "line", "message"),
    [
        ("shop/nope.py", 5, "does not exist"),
        ("shop/cart.py", 1, "no lines before"),
        ("shop/cart.py", 999, "no lines before"),
        ("shop", 3, "not a regular file"),
    ],
)
def test_query_from_location_errors_name_the_fix(
    tiny_repo: Path, file: str, line: int, message: str
) -> None:
    with pytest.raises(LocationError, match=message):
        query_from_location(Settings(repo=tiny_repo), file, line, 5)


def test_a_status_code_query_finds_the_chunk_that_raises_it() -> None:
    from coderag_tui.core.records import Chunk

    chunks = [
        Chunk(
            "web/errors.py",
            1,
            3,
            "lines",
            "python",
            "def not_found(request):\n    raise HTTPError(404, 'no such page')\n",
        ),
        Chunk("web/ok.py", 1, 2, "lines", "python", "def ok(request):\n    return 200\n"),
    ]
    index = BM25Index.build(chunks, split_identifiers=True, path_in_text=True)
    run = Searcher(chunks, index).run("why do I get a 404", Settings())
    assert run.rankings["bm25"].hits[0].chunk.path == "web/errors.py"


def test_a_fifo_as_the_query_location_is_refused_at_once(tiny_repo: Path) -> None:
    import os

    os.mkfifo(tiny_repo / "pipe.py")
    with pytest.raises(LocationError, match="not a regular file"):
        query_from_location(Settings(repo=tiny_repo), "pipe.py", 3, 2)


def test_file_line_has_one_reading_for_every_face(tiny_repo: Path, index_dir: Path) -> None:
    from coderag_tui.cli import main
    from coderag_tui.core.given_paths import parse_location

    assert parse_location("shop/cart.py:25") == ("shop/cart.py", 25)
    assert parse_location(" C:/repo/x.py:3 ") == ("C:/repo/x.py", 3)
    for bad in ("shop/cart.py", "shop/cart.py:0", ":5", "shop/cart.py:ten"):
        with pytest.raises(LocationError, match="FILE:LINE"):
            parse_location(bad)
    # The CLI reads it the same way (line 0 was accepted there and refused in the TUI).
    code = main(
        ["search", "--from", "shop/cart.py:0", str(tiny_repo), "--index-dir", str(index_dir)]
    )
    assert code == 2


# 65 lines: one past a 64-line window, like flask's sessions.py (385 = 6 x 64 + 1).
SESSIONS = '''"""Sessions kept in a signed cookie: the client holds the data, the key proves it."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timedelta, timezone


class BadSignature(Exception):
    """The cookie was not signed with this application's key."""


class SignedCookieSessions:
    """Load a session from the request's cookie and save it into the response's."""

    def __init__(self, secret_key: bytes, cookie_name: str = "session") -> None:
        self.secret_key = secret_key
        self.cookie_name = cookie_name
        self.lifetime = timedelta(days=31)

    def sign(self, payload: bytes) -> str:
        mac = hmac.new(self.secret_key, payload, hashlib.sha256)
        return mac.hexdigest()

    def loads(self, raw: str) -> dict[str, object]:
        payload, _, signature = raw.rpartition(".")
        if not hmac.compare_digest(self.sign(payload.encode()), signature):
            raise BadSignature(raw)
        data: dict[str, object] = json.loads(payload)
        return data

    def dumps(self, session: dict[str, object]) -> str:
        payload = json.dumps(session, sort_keys=True)
        return payload + "." + self.sign(payload.encode())

    def open_session(self, request) -> dict[str, object]:
        raw = request.cookies.get(self.cookie_name)
        if not raw:
            return {}
        try:
            return self.loads(raw)
        except BadSignature:
            return {}

    def expires(self) -> datetime:
        return datetime.now(timezone.utc) + self.lifetime

    def save_session(self, session: dict[str, object], response) -> None:
        if not session:
            response.delete_cookie(self.cookie_name)
            return
        response.set_cookie(
            self.cookie_name,
            self.dumps(session),
            expires=self.expires(),
            httponly=True,
            secure=True,
            samesite="Lax",
        )
        response.headers["Cache-Control"] = "private"
        response.headers["X-Session"] = "signed"
        response.headers["Vary"] = "Accept"
        response.vary.add("Cookie")
'''


def test_a_files_last_line_is_not_a_hit_of_its_own_but_part_of_its_code(tmp_path: Path) -> None:
    spec = ChunkingSpec("lines", 64)
    chunks = chunk_file("sessions.py", SESSIONS, "python", spec)
    chunks += chunk_file("app.py", "def create_app(config):\n    return App(config)\n", None, spec)
    embedder = HashingEmbedder()
    dense = DenseIndex.build(chunks, embedder, EmbeddingCache.open(tmp_path / "emb.sqlite"))
    index = BM25Index.build(chunks, split_identifiers=True, path_in_text=True)
    run = Searcher(chunks, index, dense=dense, embedder=embedder).run(
        "how are sessions stored in cookies", Settings(k=5, depth=10)
    )
    # A lone `response.vary.add("Cookie")` window used to top the dense list; now that line
    # comes with the code that sets the cookie, in every list.
    for name in ("bm25", "dense", "fused"):
        top = run.rankings[name].hits[0].chunk
        assert (top.path, top.start_line, top.end_line) == ("sessions.py", 1, 65), name
        assert "response.set_cookie(" in top.text and top.text.endswith('vary.add("Cookie")')
        assert all(h.chunk.n_lines > 1 for h in run.rankings[name].hits), name


def test_the_reranked_list_names_its_reranker_and_which_list_the_prompt_follows(
    tmp_path: Path,
) -> None:
    searcher = dense_searcher(tmp_path, reranker=ShortestFirst())
    run = searcher.run("cart total", Settings(rerank=True))
    assert run.rankings["rerank"].by == "cross-encoder shortest-first"
    note = "reranked by the cross-encoder shortest-first; the prompt follows the fused list"
    assert any(n.startswith(note) for n in run.notes)
    run = searcher.run("cart total", Settings(rerank=True, prompt_order="reranked"))
    assert any(n.endswith("the prompt follows it (prompt_order = reranked).") for n in run.notes)


def test_a_one_line_chunk_cannot_rank_on_its_vector_alone(tmp_path: Path) -> None:
    from coderag_tui.core.rank.search import dense_length_prior
    from coderag_tui.core.records import Chunk

    one = Chunk("static/index.html", 1, 1, "lines", None, "cart total")
    body = (
        "def total(cart):\n    items = cart.items\n    prices = [item.price for item in items]\n"
        "    return sum(prices)\n\n\ndef empty(cart):\n    return not cart.items\n\n"
    )
    long = Chunk("shop/total.py", 1, 10, "lines", "python", body)
    cache = EmbeddingCache.open(tmp_path / "cache.sqlite")
    embedder = HashingEmbedder()
    dense = DenseIndex.build([one, long], embedder, cache)
    bm25 = BM25Index.build([one, long], split_identifiers=False, path_in_text=False)
    searcher = Searcher([one, long], bm25, dense=dense, embedder=embedder)
    raw = searcher.run("cart total", Settings(dense_short_lines=0, signals=False))
    scores = {h.chunk.path: h.score for h in raw.rankings["dense"].hits}
    assert scores["static/index.html"] > scores["shop/total.py"]  # the words alone, closer
    weighed = searcher.run("cart total", Settings(signals=False))
    assert weighed.rankings["dense"].hits[0].chunk.path == "shop/total.py"
    hit = weighed.rankings["dense"].hits[1]
    assert hit.score == pytest.approx(scores["static/index.html"] * 0.5)
    assert dense_length_prior(1, 8) == 0.5 and dense_length_prior(8, 8) == 1.0
    assert dense_length_prior(4, 0) == 1.0  # off
