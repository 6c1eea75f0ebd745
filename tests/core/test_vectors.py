"""DenseIndex: stripes instead of truncation, best-stripe scores, the embedding cache, cancel."""

# Fixtures are imported from tests/fixtures (conftest.py is shared), so arguments shadow them.
# ruff: noqa: F811

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coderag_tui.core.index.indexer import build_index, open_index
from coderag_tui.core.index.store import EmbeddingCache
from coderag_tui.core.rank import dense as dense_module
from coderag_tui.core.rank.dense import (
    DenseBuildStats,
    DenseIndex,
    dense_dir,
    dense_text,
    load_or_build_dense,
    split_stripes,
    stripe_window,
)
from coderag_tui.core.rank.embed import FastembedEmbedder, WindowedEmbedder
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings
from tests.fixtures.hashing_embedder import HashingEmbedder
from tests.fixtures.tiny_models import (  # noqa: F401 - pytest fixtures
    tiny_fastembed_embedder,
    tiny_models_dir,
)

WORDS = [
    "def",
    "parse",
    "config",
    "file",
    "return",
    "total",
    "price",
    "cart",
    "item",
    "discount",
    "apple",
    "banana",
]


class CountingEmbedder:
    """The real tiny embedder, recording every batch it is asked to embed."""

    def __init__(self, inner: WindowedEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_tokens = inner.max_tokens
        self.window = inner.window
        self.tokenizer = inner.tokenizer
        self.batches: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    @property
    def embedded(self) -> int:
        return sum(len(b) for b in self.batches)


@pytest.fixture(scope="module")
def tiny_embedder(tiny_fastembed_embedder: Path) -> FastembedEmbedder:
    return FastembedEmbedder.load("tiny", folder=tiny_fastembed_embedder)


@pytest.fixture
def embedder(tiny_embedder: FastembedEmbedder) -> CountingEmbedder:
    return CountingEmbedder(tiny_embedder)


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[EmbeddingCache]:
    store = EmbeddingCache.open(tmp_path / "embeddings.sqlite")
    yield store
    store.close()


def _chunk(i: int, text: str) -> Chunk:
    lines = text.count("\n") + 1
    return Chunk(f"src/f{i}.py", 1, lines, "lines", "python", text)


def _long_text(n_words: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    words = [WORDS[int(j)] for j in rng.integers(0, len(WORDS), n_words)]
    return "\n".join(" ".join(words[i : i + 8]) for i in range(0, n_words, 8))


def _corpus() -> list[Chunk]:
    texts = [
        "def parse config file",
        _long_text(150, seed=1),
        "apple banana cherry",
        _long_text(40, seed=2),
        "return total price",
        _long_text(300, seed=3),
    ]
    return [_chunk(i, t) for i, t in enumerate(texts)]


def test_a_long_chunk_is_embedded_as_stripes_and_scores_as_its_best_stripe(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    chunks = _corpus()
    index = DenseIndex.build(chunks, embedder, cache, batch_size=4)
    assert index.n_chunks == len(chunks) and index.complete
    assert index.n_stripes > len(chunks)  # the long chunks became several stripes each
    tokenizer, window = stripe_window(embedder)
    long_stripes = split_stripes([dense_text(chunks[5])], tokenizer, window).texts
    assert len(long_stripes) >= 5
    # Nothing is truncated: every stripe fits the window, and together they cover every line.
    assert max(embedder.inner.count_tokens(long_stripes)) <= embedder.window
    for line in chunks[5].text.splitlines():
        assert any(line in stripe for stripe in long_stripes)
    query = embedder.embed_query("parse config total price")
    best_stripe = float(np.max(embedder.inner.embed_documents(long_stripes) @ query))
    scores = dict(index.search(query, k=len(chunks)))
    assert scores[5] == pytest.approx(best_stripe, abs=1e-5)


def test_search_returns_the_k_best_chunks_best_first(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    chunks = _corpus()
    index = DenseIndex.build(chunks, embedder, cache)
    query = embedder.embed_query(dense_text(chunks[2]))  # what is embedded: path, then text
    hits = index.search(query, k=3)
    assert len(hits) == 3
    assert hits[0][0] == 2  # the chunk embedded as exactly the query text
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert len(index.search(query, k=100)) == len(chunks)
    assert index.search(query, k=0) == []


def test_a_second_build_embeds_nothing(embedder: CountingEmbedder, cache: EmbeddingCache) -> None:
    chunks = _corpus()
    first = DenseIndex.build(chunks, embedder, cache)
    assert first.stats.embedded == first.stats.unique_stripes == embedder.embedded > 0
    embedder.batches.clear()
    second = DenseIndex.build(chunks, embedder, cache)
    assert embedder.embedded == 0
    assert second.stats.embedded == 0 and second.stats.cached == first.stats.unique_stripes
    np.testing.assert_allclose(second.matrix, first.matrix, atol=1e-6)
    # Another chunk size re-uses the stripes it shares with the first build.
    embedder.batches.clear()
    third = DenseIndex.build([*chunks, _chunk(9, "a new chunk of text")], embedder, cache)
    assert third.stats.embedded == 1 == embedder.embedded


def test_identical_stripes_are_embedded_once(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    # the same text at five places of one file: one stripe text (its path, then the text)
    chunks = [
        Chunk("src/f.py", 1 + 10 * i, 1 + 10 * i, "lines", "python", "def parse config file")
        for i in range(5)
    ]
    index = DenseIndex.build(chunks, embedder, cache)
    assert embedder.embedded == 1
    query = embedder.embed_query("apple")
    assert sorted(i for i, _ in index.search(query, 5)) == [0, 1, 2, 3, 4]


def test_missing_stripes_are_embedded_shortest_first_with_progress(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    calls: list[tuple[int, int]] = []
    index = DenseIndex.build(
        _corpus(), embedder, cache, batch_size=3, progress=lambda d, t: calls.append((d, t))
    )
    lengths = [n for batch in embedder.batches for n in embedder.inner.count_tokens(batch)]
    assert lengths == sorted(lengths)
    assert all(len(b) <= 3 for b in embedder.batches)
    total = index.stats.unique_stripes
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_a_cancelled_build_keeps_what_it_embedded(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    chunks = _corpus()
    cancel = threading.Event()

    def stop_after_first_batch(done: int, total: int) -> None:
        if done > 0:
            cancel.set()

    partial = DenseIndex.build(
        chunks, embedder, cache, batch_size=2, progress=stop_after_first_batch, cancel=cancel
    )
    assert partial.stats.cancelled and not partial.complete
    assert partial.stats.embedded == 2 == embedder.embedded
    # Only chunks whose stripes are all known are searchable; none is half-scored.
    searchable = {i for i, _ in partial.search(embedder.embed_query("apple"), k=10)}
    assert len(searchable) < len(chunks)
    embedder.batches.clear()
    full = DenseIndex.build(chunks, embedder, cache)
    assert full.complete
    assert embedder.embedded == full.stats.unique_stripes - 2


def test_a_query_from_another_model_is_refused_with_a_sentence(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    index = DenseIndex.build(_corpus(), embedder, cache)
    with pytest.raises(ValueError, match="embed the query with the model that built the index"):
        index.search(np.ones(7, dtype=np.float32), k=3)


def test_an_embedder_without_a_tokenizer_is_striped_by_words() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    stripes = split_stripes([text, "short"], None, window=30, overlap=5)
    assert list(stripes.chunk_of) == [0, 0, 0, 0, 1]
    assert all(n <= 30 for n in stripes.tokens)
    assert stripes.texts[0].startswith("word0 ") and stripes.texts[3].endswith("word99")
    assert "word25" in stripes.texts[0] and "word25" in stripes.texts[1]  # the overlap


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_search_equals_a_brute_force_max_over_stripes(
    stripes_per_chunk: list[int], k: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(len(stripes_per_chunk)), stripes_per_chunk)
    matrix = rng.normal(size=(len(owner), 8)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    stats = DenseBuildStats(
        chunks=len(stripes_per_chunk), stripes=len(owner), unique_stripes=len(owner)
    )
    index = DenseIndex(matrix, owner, len(stripes_per_chunk), stats)
    raw = matrix @ query
    best = [float(raw[owner == c].max()) for c in range(len(stripes_per_chunk))]
    expected = sorted(range(len(best)), key=lambda c: (-best[c], c))[:k]
    hits = index.search(query, k)
    assert [c for c, _ in hits] == expected
    np.testing.assert_allclose([s for _, s in hits], [best[c] for c in expected], rtol=1e-5)


def test_a_build_from_a_previous_index_copies_unchanged_chunks(
    embedder: CountingEmbedder, cache: EmbeddingCache, tmp_path: Path
) -> None:
    chunks = _corpus()
    first = DenseIndex.build(chunks, embedder, cache)
    embedder.batches.clear()
    # Neither the cache nor the tokenizer is needed for unchanged chunks.
    empty = EmbeddingCache.open(tmp_path / "other.sqlite")
    same = DenseIndex.build(chunks, embedder, empty, previous=first)
    assert embedder.embedded == 0 and same.stats.reused_chunks == len(chunks)
    np.testing.assert_array_equal(same.matrix, first.matrix)
    edited = [*chunks[:3], _chunk(3, "def parse config file\nreturn total price"), *chunks[4:]]
    second = DenseIndex.build(edited, embedder, empty, previous=first)
    assert second.stats.reused_chunks == len(chunks) - 1
    assert embedder.embedded == 1
    query = embedder.embed_query("parse config total price")
    assert dict(second.search(query, 10))[3] == pytest.approx(
        float(embedder.inner.embed_documents([dense_text(edited[3])])[0] @ query), abs=1e-5
    )
    empty.close()


def test_a_saved_index_loads_and_searches_the_same(
    embedder: CountingEmbedder, cache: EmbeddingCache, tmp_path: Path
) -> None:
    index = DenseIndex.build(_corpus(), embedder, cache)
    index.save(tmp_path / "dense")
    loaded = DenseIndex.load(tmp_path / "dense")
    query = embedder.embed_query("apple banana")
    assert loaded.search(query, 4) == index.search(query, 4)
    assert (loaded.model, loaded.window, loaded.complete) == (embedder.name, embedder.window, True)
    (tmp_path / "dense" / "stripe_chunk.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError, match="is damaged"):
        DenseIndex.load(tmp_path / "dense")


def test_load_or_build_dense_reuses_the_saved_index_until_the_chunks_change(
    embedder: CountingEmbedder, tiny_repo: Path, tmp_path: Path
) -> None:
    # Every stripe, so text added at a chunk's end is embedded (the first stripe keeps its text).
    settings = Settings(
        repo=tiny_repo, index_dir=tmp_path / "index", chunk_lines=8, dense_stripes=0
    )
    store, _ = open_index(settings)
    cache = EmbeddingCache.open(settings.embed_cache_path)
    try:
        chunks = store.chunks(settings.chunking_spec.key)
        first = load_or_build_dense(store, settings, chunks, embedder, cache)
        assert first.complete and embedder.embedded == first.stats.unique_stripes > 0
        embedder.batches.clear()
        again = load_or_build_dense(store, settings, chunks, embedder, cache)
        assert embedder.embedded == 0
        np.testing.assert_array_equal(again.matrix, first.matrix)
        cart = tiny_repo / "shop" / "cart.py"
        cart.write_text(cart.read_text() + "\n\ndef apple_banana():\n    return 'fruit salad'\n")
        build_index(settings, store)
        chunks = store.chunks(settings.chunking_spec.key)
        changed = load_or_build_dense(store, settings, chunks, embedder, cache)
        assert changed.complete and changed.n_chunks == len(chunks)
        assert 0 < embedder.embedded < first.stats.unique_stripes
        assert changed.stats.reused_chunks >= len(chunks) - 2
    finally:
        cache.close()
        store.close()


def test_a_stripe_cap_keeps_each_chunks_first_stripes(embedder: CountingEmbedder) -> None:
    text = " ".join(f"word{i}" for i in range(100))
    every = split_stripes([text, "short"], None, window=30, overlap=5)
    two = split_stripes([text, "short"], None, window=30, overlap=5, max_stripes=2)
    assert list(two.chunk_of) == [0, 0, 1]
    assert two.texts == [*every.texts[:2], "short"]  # the same texts, so the same cache keys
    assert two.tokens == [*every.tokens[:2], every.tokens[-1]]
    tokenizer, window = stripe_window(embedder)
    texts = [c.text for c in _corpus()]
    full = split_stripes(texts, tokenizer, window)
    one = split_stripes(texts, tokenizer, window, max_stripes=1)
    assert list(one.chunk_of) == list(range(len(texts)))
    firsts = [full.texts[int(np.flatnonzero(full.chunk_of == i)[0])] for i in range(len(texts))]
    assert one.texts == firsts
    with pytest.raises(ValueError, match="max_stripes must be 0"):
        split_stripes(texts, tokenizer, window, max_stripes=-1)


def test_a_capped_index_scores_a_chunk_by_its_first_stripe_only(
    embedder: CountingEmbedder, cache: EmbeddingCache
) -> None:
    long = _chunk(0, _long_text(300, seed=3))
    tokenizer, window = stripe_window(embedder)
    stripes = split_stripes([dense_text(long)], tokenizer, window).texts
    assert len(stripes) >= 3
    # A second chunk holding exactly the long chunk's last window: a query for that text
    # finds both when every stripe is embedded, and only the second when only the first is.
    chunks = [long, _chunk(1, stripes[-1]), _chunk(2, "apple banana cherry")]
    query = embedder.embed_query(stripes[-1])
    every = DenseIndex.build(chunks, embedder, cache)
    first = DenseIndex.build(chunks, embedder, cache, max_stripes=1)
    assert first.n_stripes == len(chunks) < every.n_stripes
    assert first.max_stripes == 1 and every.max_stripes == 0
    # chunk 0's last stripe is the query exactly; chunk 1 holds it after its path line
    assert [c for c, _ in every.search(query, 3)][:2] == [0, 1]
    assert dict(every.search(query, 3))[0] == pytest.approx(1.0, abs=1e-5)
    ranked = [c for c, _ in first.search(query, 3)]
    assert ranked[0] == 1 and ranked.index(0) > 0
    first_stripe = float(embedder.inner.embed_documents(stripes[:1])[0] @ query)
    assert dict(first.search(query, 3))[0] == pytest.approx(first_stripe, abs=1e-5)


def test_capped_and_uncapped_builds_share_the_embedding_cache(
    embedder: CountingEmbedder, cache: EmbeddingCache, tmp_path: Path
) -> None:
    chunks = _corpus()
    capped = DenseIndex.build(chunks, embedder, cache, max_stripes=1)
    assert embedder.embedded == capped.stats.embedded == len(chunks)
    embedder.batches.clear()
    every = DenseIndex.build(chunks, embedder, cache)
    assert embedder.embedded == every.n_stripes - len(chunks)  # only the later stripes
    embedder.batches.clear()
    again = DenseIndex.build(chunks, embedder, cache, max_stripes=1)
    assert embedder.embedded == 0 and again.stats.cached == len(chunks)
    # A capped row is the uncapped index's first row of that chunk.
    firsts = [int(np.flatnonzero(every.stripe_chunk == i)[0]) for i in range(len(chunks))]
    np.testing.assert_allclose(again.matrix, every.matrix[firsts], atol=1e-6)
    # Rows of a previous index with another cap are not copied: its runs differ in length.
    fresh = EmbeddingCache.open(tmp_path / "fresh.sqlite")
    try:
        embedder.batches.clear()
        two = DenseIndex.build(chunks, embedder, fresh, previous=every, max_stripes=2)
        assert two.stats.reused_chunks == 0 and embedder.embedded == two.n_stripes
        assert all(np.bincount(two.stripe_chunk) <= 2)
    finally:
        fresh.close()


def test_the_saved_index_records_its_cap_and_an_older_one_reads_as_every_stripe(
    embedder: CountingEmbedder, cache: EmbeddingCache, tmp_path: Path
) -> None:
    DenseIndex.build(_corpus(), embedder, cache, max_stripes=2).save(tmp_path / "capped")
    assert DenseIndex.load(tmp_path / "capped").max_stripes == 2
    DenseIndex.build(_corpus(), embedder, cache).save(tmp_path / "old")
    meta_path = tmp_path / "old" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["max_stripes"]  # as written before the cap existed
    meta_path.write_text(json.dumps(meta))
    assert DenseIndex.load(tmp_path / "old").max_stripes == 0


def test_load_or_build_dense_rebuilds_when_the_stripe_cap_changes(
    embedder: CountingEmbedder, tiny_repo: Path, tmp_path: Path
) -> None:
    every_settings = Settings(
        repo=tiny_repo, index_dir=tmp_path / "index", chunk_lines=40, dense_stripes=0
    )
    one_settings = every_settings.with_(dense_stripes=1)
    store, _ = open_index(every_settings)
    cache = EmbeddingCache.open(every_settings.embed_cache_path)
    try:
        chunks = store.chunks(every_settings.chunking_spec.key)
        every = load_or_build_dense(store, every_settings, chunks, embedder, cache)
        assert every.n_stripes > len(chunks)  # some 40-line chunks exceed the tiny window
        embedder.batches.clear()
        one = load_or_build_dense(store, one_settings, chunks, embedder, cache)
        assert one.max_stripes == 1 and one.n_stripes == len(chunks)
        assert embedder.embedded == 0 and one.stats.cached == len(chunks)  # from the cache
        directory = dense_dir(one_settings, embedder.name)
        assert (DenseIndex.read_meta(directory) or {}).get("max_stripes") == 1
        again = load_or_build_dense(store, one_settings, chunks, embedder, cache)
        assert again.stats.cached == 0 and again.stats.reused_chunks == len(chunks)  # loaded
        np.testing.assert_array_equal(again.matrix, one.matrix)
        back = load_or_build_dense(store, every_settings, chunks, embedder, cache)
        assert back.max_stripes == 0 and back.n_stripes == every.n_stripes
        assert embedder.embedded == 0
    finally:
        cache.close()
        store.close()


def test_a_chunk_is_embedded_with_its_path_so_a_question_naming_its_module_finds_it(
    cache: EmbeddingCache,
) -> None:
    same = "def handle(request):\n    return process(request)\n"
    chunks = [
        Chunk("billing/handlers.py", 1, 2, "lines", "python", same),
        Chunk("shipping/handlers.py", 1, 2, "lines", "python", same),
    ]
    embedder = HashingEmbedder()
    index = DenseIndex.build(chunks, embedder, cache)
    assert index.search(embedder.embed_query("how are shipping requests handled"), 2)[0][0] == 1
    assert index.search(embedder.embed_query("billing request handler"), 2)[0][0] == 0


def test_a_build_in_slices_gives_the_index_one_slice_gives(
    embedder: CountingEmbedder,
    cache: EmbeddingCache,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A large repository is built a slice of chunks at a time (memory bounded by the slice):
    # the rows, their chunks and what is re-used must not depend on where slices end.
    chunks = _corpus() * 3  # texts repeated across slices: embedded once, found in the cache
    whole = DenseIndex.build(chunks, embedder, cache)
    embedded_once = embedder.embedded
    monkeypatch.setattr(dense_module, "BUILD_SLICE", 4)
    other = EmbeddingCache.open(tmp_path / "other.sqlite")
    try:
        embedder.batches.clear()
        sliced = DenseIndex.build(chunks, embedder, other)
    finally:
        other.close()
    assert embedder.embedded == embedded_once
    assert np.array_equal(sliced.stripe_chunk, whole.stripe_chunk)
    assert np.allclose(sliced.matrix, whole.matrix)
    assert sliced.complete and list(sliced.chunk_hashes) == list(whole.chunk_hashes)
    # a rebuild re-uses every row of the previous index, slice by slice
    again = DenseIndex.build(chunks, embedder, cache, previous=sliced)
    assert again.stats.reused_chunks == len(chunks) and np.allclose(again.matrix, whole.matrix)
