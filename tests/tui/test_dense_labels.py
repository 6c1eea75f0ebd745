"""What the TUI calls models and how it explains a fused score: pure functions, no app."""

from __future__ import annotations

import pytest

from coderag_tui.core.rank.static import STATIC_KEY
from coderag_tui.tui.session import model_title, short_model, why_line
from coderag_tui.tui.widgets.status import IndexState, top_bar_content


@pytest.mark.parametrize(
    ("key", "title"),
    [
        ("sentence-transformers/all-MiniLM-L6-v2:int8", "all-MiniLM-L6-v2"),
        ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"),
        ("fastembed:BAAI/bge-small-en-v1.5", "bge-small-en-v1.5"),
        (STATIC_KEY, "static MiniLM"),
    ],
)
def test_a_model_is_named_as_people_call_it(key: str, title: str) -> None:
    assert model_title(key) == title


def test_the_progress_figure_uses_a_short_name() -> None:
    assert short_model("all-MiniLM-L6-v2") == "MiniLM"
    assert short_model("bge-small-en-v1.5") == "bge"


def test_the_why_line_shows_the_base_then_each_signed_signal() -> None:
    why = (("rrf", 0.8213), ("definition: Cart", 0.4), ("path", 0.1), ("role: test", -0.41))
    assert why_line(why) == "why: rrf 0.82 · definition: Cart +0.40 · path +0.10 · role: test -0.41"
    assert why_line(()) == ""


def test_a_narrow_top_bar_keeps_the_dense_progress_and_drops_the_chunking() -> None:
    state = IndexState(
        "shop",
        files=7,
        chunks=12,
        chunking="lines:12:0",
        index="ready",
        dense="first pass",
        dense_detail="static MiniLM · MiniLM 34%",
    )
    full = top_bar_content(state).plain
    compact = top_bar_content(state, compact=True).plain
    assert "12-line chunks" in full and "(static MiniLM · MiniLM 34%)" in full
    assert "12-line chunks" not in compact and "7 files" not in compact
    assert compact.endswith("dense first pass (MiniLM 34%)")


def test_the_fused_title_says_what_was_fused_and_whether_signals_rescored_it() -> None:
    from pathlib import Path

    from coderag_tui.core.records import Ranking, RankingName, SearchRun
    from coderag_tui.settings import Settings
    from coderag_tui.tui.session import fused_labels

    def run(*, dense_on: bool, query: str = "parse config") -> SearchRun:
        rankings: dict[RankingName, Ranking] = {
            "bm25": Ranking("bm25", ()),
            "dense": Ranking("dense", (), available=dense_on, reason="" if dense_on else "off"),
        }
        return SearchRun(query=query, rankings=rankings, timings=(), notes=())

    settings = Settings(repo=Path("."))
    assert fused_labels(run(dense_on=True), settings) == ("RRF + signals", "RRF")
    assert fused_labels(run(dense_on=False), settings) == ("BM25 + signals", "BM25")
    assert fused_labels(run(dense_on=True), settings.with_(signals=False)) == ("RRF",)
    assert (
        fused_labels(run(dense_on=True), settings.with_(fusion="weighted"))[0]
        == "weighted + signals"
    )


def test_issue_text_fused_without_dense_is_titled_bm25_though_dense_ranked_it(
    tmp_path: object,
) -> None:
    """The Fused column said `RRF + signals` for issue text that `issue_dense_weight` = 0
    fuses from BM25 alone."""
    from pathlib import Path

    from coderag_tui.core.index.store import EmbeddingCache
    from coderag_tui.core.rank.dense import DenseIndex
    from coderag_tui.core.rank.lexical import BM25Index
    from coderag_tui.core.rank.search import Searcher
    from coderag_tui.settings import Settings
    from coderag_tui.tui.session import fused_labels
    from tests.fixtures.hashing_embedder import HashingEmbedder
    from tests.fixtures.tiny_repo import windows

    chunks = windows()
    embedder = HashingEmbedder()
    dense = DenseIndex.build(chunks, embedder, EmbeddingCache.open(Path(str(tmp_path)) / "e.db"))
    bm25 = BM25Index.build(chunks, split_identifiers=False, path_in_text=False)
    searcher = Searcher(chunks, bm25, dense=dense, embedder=embedder)
    settings = Settings(repo=Path("."), k=5, depth=10)
    issue = (
        "Refunds fail for a transaction paid by card. When I refund a transaction the payment "
        "stays captured and the order total is not restored; I expected the refund to release "
        "the payment and the item to return to the cart, as the docs say it should."
    )
    assert searcher.run(issue, settings).rankings["dense"].available
    assert fused_labels(searcher.run(issue, settings), settings)[0] == "BM25 + signals"
    question = searcher.run("refund a transaction", settings)
    assert fused_labels(question, settings)[0] == "RRF + signals"
