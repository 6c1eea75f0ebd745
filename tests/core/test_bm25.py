"""BM25 over chunks: rank_bm25 agreement, rare identifiers, options, and the saved index."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from coderag_tui.core.hashing import text_hash
from coderag_tui.core.index.store import FileState, Store
from coderag_tui.core.rank.lexical import (
    K1,
    BM25Index,
    BM25Options,
    bm25_dir,
    chunk_tokens,
    load_or_build_bm25,
)
from coderag_tui.core.rank.words import tokenize
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings
from tests.fixtures.bm25s_oracle import as_bm25s
from tests.fixtures.tiny_repo import FILES, windows

CHUNKS = windows()
QUERIES = [
    "card_token",
    "charge the card and retry on timeout",
    "refund transaction",
    "stock reserve product",
    "cart items total quantity",
    "checkout fetch response",
    "discount percent",
]


def okapi_top(tokens: list[str], k: int = 10) -> tuple[list[int], np.ndarray]:
    okapi = BM25Okapi([tokenize(c.text) for c in CHUNKS])
    scores = okapi.get_scores(tokens)
    order = sorted((i for i in range(len(CHUNKS)) if scores[i] > 0), key=lambda i: (-scores[i], i))
    return order[:k], scores


def test_corpus_is_small_but_not_trivial() -> None:
    assert 10 <= len(CHUNKS) <= 30


@pytest.mark.parametrize("query", QUERIES)
def test_robertson_scores_are_bm25okapi_scores_over_k1_plus_1(query: str) -> None:
    """Robertson idf = Okapi idf while every query word is in under half the chunks."""
    tokens = tokenize(query)
    n = len(CHUNKS)
    for t in tokens:
        assert sum(t in tokenize(c.text) for c in CHUNKS) < n / 2, t
    index = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False, method="robertson")
    top, okapi_scores = okapi_top(tokens)
    np.testing.assert_allclose(index.scores(tokens) * (K1 + 1), okapi_scores, rtol=1e-5)
    assert [i for i, _ in index.search(query, 10)] == top


@pytest.mark.parametrize("query", [q for q in QUERIES if len(tokenize(q)) == 1] + ["refund"])
def test_lucene_default_orders_one_word_queries_exactly_like_bm25okapi(query: str) -> None:
    """One word: both scores are idf(word) x the same increasing term part, so the order agrees."""
    index = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)
    top, _ = okapi_top(tokenize(query))
    assert [i for i, _ in index.search(query, 10)] == top


@pytest.mark.parametrize("query", QUERIES)
def test_lucene_default_gives_bm25okapi_top10_set_and_best_hit(query: str) -> None:
    """Several words: lucene's idf log(1 + x) compresses the gap between rare and common words
    that Okapi's log(x) keeps, so the order inside the top-10 may differ (it does for
    "cart items total quantity"), but the same chunks are found and the best one agrees."""
    index = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)
    top, _ = okapi_top(tokenize(query))
    ours = [i for i, _ in index.search(query, 10)]
    assert set(ours) == set(top)
    assert ours[0] == top[0]


def test_lucene_and_okapi_differ_for_a_word_in_most_chunks() -> None:
    """Okapi floors a negative idf at 0.25 x the average idf; lucene keeps log(1 + x) > 0."""
    docs = [["common", "a"], ["common", "b"], ["common", "c"], ["d"]]
    okapi = BM25Okapi(docs)
    lucene = BM25Index.from_tokens(docs, BM25Options())
    assert okapi.idf["common"] == pytest.approx(0.25 * okapi.average_idf)
    expected_idf = np.log(1 + (4 - 3 + 0.5) / (3 + 0.5))
    assert lucene.idf("common") == pytest.approx(expected_idf, rel=1e-5)


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_numpy_score_matrix_equals_bm25s_own_index(method: str) -> None:
    """Our vectorised build must give exactly the matrix bm25s.BM25.index builds."""

    options = BM25Options(split_identifiers=True, path_in_text=True, method=method)
    corpus = [chunk_tokens(c, options) for c in CHUNKS] + [[]]  # an empty chunk too
    ours = BM25Index.from_tokens(corpus, options)
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus]
    reference = bm25s.BM25(method=method)
    reference.index((ids, vocab), create_empty_token=False, show_progress=False)
    theirs = reference.scores
    assert ours.n_docs == theirs["num_docs"] == len(corpus)
    matrix = ours.score_matrix()  # our columns are the words in sorted order
    assert ours.base.words == sorted(vocab)
    assert matrix["indptr"][-1] == theirs["indptr"][-1]
    for col, word in enumerate(ours.base.words):
        mine = slice(matrix["indptr"][col], matrix["indptr"][col + 1])
        other = slice(theirs["indptr"][vocab[word]], theirs["indptr"][vocab[word] + 1])
        np.testing.assert_array_equal(matrix["indices"][mine], theirs["indices"][other])
        np.testing.assert_allclose(matrix["data"][mine], theirs["data"][other], rtol=1e-6)


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown BM25 method 'bm25l'"):
        BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False, method="bm25l")


def test_rare_identifier_chunk_ranks_first() -> None:
    index = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)
    holders = [c for c in CHUNKS if "transaction_id" in c.text]
    assert len(holders) == 1
    hits = index.search("the cart is refunded by transaction_id", 5)
    assert CHUNKS[hits[0][0]] == holders[0]


def test_unknown_words_are_ignored_and_empty_queries_find_nothing() -> None:
    index = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)
    assert index.search("refund zzzunknownzzz", 3) == index.search("refund", 3)
    assert index.search("", 10) == []
    assert index.search("zzzunknownzzz 42 !!", 10) == []
    assert all(score > 0 for _, score in index.search("the", 50))


def test_split_identifiers_finds_camel_case_parts() -> None:
    plain = BM25Index.build(CHUNKS, split_identifiers=False, path_in_text=False)
    split = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=False)
    assert plain.search("declined", 5) == []
    assert "class PaymentDeclined" in CHUNKS[split.search("declined", 5)[0][0]].text


def test_path_in_text_finds_a_chunk_by_its_file_name() -> None:
    chunk = Chunk("billing/ledger.py", 1, 1, "lines", None, "x = compute()\n")
    corpus = [*CHUNKS, chunk]
    assert chunk_tokens(
        chunk, BM25Index.build([], split_identifiers=False, path_in_text=True).options
    )[:3] == [
        "billing",
        "ledger",
        "py",
    ]
    without = BM25Index.build(corpus, split_identifiers=False, path_in_text=False)
    with_path = BM25Index.build(corpus, split_identifiers=False, path_in_text=True)
    assert without.search("ledger", 5) == []
    assert with_path.search("ledger", 5)[0][0] == len(corpus) - 1


def test_ties_are_broken_by_chunk_order_and_k_is_respected() -> None:
    same = Chunk("a.py", 1, 1, "lines", None, "alpha beta\n")
    index = BM25Index.build([same] * 5, split_identifiers=False, path_in_text=False)
    assert [i for i, _ in index.search("alpha", 3)] == [0, 1, 2]


def test_empty_corpus_and_chunks_without_words() -> None:
    empty = BM25Index.build([], split_identifiers=False, path_in_text=False)
    assert empty.search("anything", 5) == []
    blank = BM25Index.build(
        [Chunk("a.txt", 1, 1, "lines", None, "1 2 = 3\n")],
        split_identifiers=False,
        path_in_text=False,
    )
    assert blank.search("1", 5) == []


def test_save_and_load_give_the_same_results(tmp_path: Path) -> None:
    index = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=True)
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.options == index.options
    for query in QUERIES:
        assert loaded.search(query, 10) == index.search(query, 10)


def test_a_loaded_index_finds_every_word_it_saved(tmp_path: Path) -> None:
    chunks = [
        *CHUNKS,
        Chunk("i18n/größe.py", 1, 1, "lines", "python", "def größe(): return 'naïve'"),
    ]
    index = BM25Index.build(chunks, split_identifiers=True, path_in_text=True)
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.base.words == index.base.words
    assert "größe" in loaded.base.words
    for word in index.base.words:
        theirs, ours = loaded.base.column(word), index.base.column(word)
        assert theirs is not None and ours is not None, word
        assert np.array_equal(theirs[0], ours[0]), word
    assert loaded.base.column("zzz-never-seen") is None
    assert loaded.search("größe naïve", 1)[0][0] == len(chunks) - 1
    empty = BM25Index.from_tokens([[]], index.options)
    empty.save(tmp_path / "empty")
    assert BM25Index.load(tmp_path / "empty").empty


def test_saved_scores_are_bm25s_scores(tmp_path: Path) -> None:
    """The saved index loads back (memory-mapped) and scores as bm25s does with its matrix."""
    index = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=False)
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    theirs = as_bm25s(loaded)
    for query in QUERIES:
        words = index.tokenize_query(query)
        assert np.allclose(theirs.get_scores(words), loaded.scores(words))
        assert np.array_equal(loaded.scores(words), index.scores(words))


def test_load_of_a_missing_or_damaged_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no BM25 index"):
        BM25Index.load(tmp_path / "nothing")
    index = BM25Index.build(CHUNKS, split_identifiers=True, path_in_text=True)
    index.save(tmp_path / "bm25")
    words = tmp_path / "bm25" / "coderag-words.txt"
    words.write_text("\n".join(words.read_text(encoding="utf-8").split("\n")[:-3]))
    with pytest.raises(ValueError, match="damaged"):
        BM25Index.load(tmp_path / "bm25")
    words.unlink()
    with pytest.raises(ValueError, match="damaged"):
        BM25Index.load(tmp_path / "bm25")


def _store_with(path: Path, chunks: list[Chunk], spec_key: str) -> Store:
    store = Store.open(path)
    with store.batch():
        for file_path in sorted({c.path for c in chunks}):
            text = FILES.get(file_path, "")
            store.put_file(
                FileState(
                    path=file_path,
                    size=len(text),
                    mtime_ns=1,
                    content_hash=text_hash(text),
                    language=None,
                    skip_reason=None,
                ),
                text,
            )
            store.put_chunks(spec_key, file_path, [c for c in chunks if c.path == file_path])
    return store


def test_load_or_build_reuses_the_saved_index_until_chunks_change(index_dir: Path) -> None:
    settings = Settings(repo=index_dir, index_dir=index_dir)
    spec_key = settings.chunking_spec.key
    store = _store_with(settings.index_path, CHUNKS, spec_key)
    chunks = store.chunks(spec_key)
    first = load_or_build_bm25(store, settings, chunks)
    folder = bm25_dir(settings, first.options)
    stamp = (folder / "coderag-bm25.json").stat().st_mtime_ns
    again = load_or_build_bm25(store, settings, chunks)
    assert (folder / "coderag-bm25.json").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    assert again.search("refund", 5) == first.search("refund", 5)

    extra = Chunk("shop/ledger.py", 1, 1, "lines", None, "def zzledger(): pass\n")
    with store.batch():
        store.put_file(
            FileState(
                path=extra.path,
                size=1,
                mtime_ns=2,
                content_hash=text_hash(extra.text),
                language=None,
                skip_reason=None,
            ),
            extra.text,
        )
        store.put_chunks(spec_key, extra.path, [extra])
    # max_drift 0: any change rebuilds the base (small drifts add a delta: test_segments.py)
    rebuilt = load_or_build_bm25(store, settings, store.chunks(spec_key), max_drift=0.0)
    assert rebuilt.search("zzledger", 5) != []
    assert (folder / "coderag-bm25.json").stat().st_mtime_ns != stamp
    store.close()


def test_load_or_build_keys_the_folder_by_tokenizer_options(index_dir: Path) -> None:
    settings = Settings(repo=index_dir, index_dir=index_dir)
    store = _store_with(settings.index_path, CHUNKS, settings.chunking_spec.key)
    chunks = store.chunks(settings.chunking_spec.key)
    plain = load_or_build_bm25(store, settings.with_(split_identifiers=False), chunks)
    split = load_or_build_bm25(store, settings.with_(split_identifiers=True), chunks)
    assert split.options.split_identifiers and not plain.options.split_identifiers
    saved = settings.index_path.with_suffix(".bm25").glob("*/coderag-bm25.json")
    assert len(list(saved)) == 2  # beside them: the chunks' definitions (one per chunking)
    store.close()


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("with_path", [False, True])
def test_postings_from_chunks_are_the_postings_of_their_tokens(
    split: bool, with_path: bool
) -> None:
    """The build that numbers each distinct word once counts exactly `chunk_tokens`' words:
    checked on a slice of the standard library, chunked as the index chunks it."""
    import sysconfig

    from coderag_tui.core.index.chunk import chunk_file
    from coderag_tui.core.rank.lexical import BM25Options, Postings, chunk_tokens
    from coderag_tui.core.records import ChunkingSpec

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)[::25]
    spec = ChunkingSpec.parse("lines:64")
    chunks = [
        chunk
        for path in files
        for chunk in chunk_file(
            path.relative_to(stdlib).as_posix(),
            path.read_bytes().decode("utf-8", "replace"),
            "python",
            spec,
        )
    ]
    assert len(chunks) > 300
    options = BM25Options(split, with_path)
    fast = Postings.from_chunks(chunks, options)
    plain = Postings.build(chunk_tokens(c, options) for c in chunks)
    assert fast.words == plain.words
    for name in ("indptr", "docs", "tf", "lengths"):
        assert np.array_equal(getattr(fast, name), getattr(plain, name)), name


@pytest.mark.parametrize("batch", [7, 8192])
def test_postings_counted_in_batches_are_each_words_chunks_ascending_with_counts(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many batches the chunks are counted in, each word's column lists the chunks
    holding it in order with how often: checked against a count made word by word."""
    from collections import Counter

    from coderag_tui.core.rank import bm25_index
    from coderag_tui.core.rank.lexical import BM25Options, Postings, chunk_tokens

    monkeypatch.setattr(bm25_index, "_BATCH", batch)
    options = BM25Options(split_identifiers=True, path_in_text=True)
    postings = Postings.from_chunks(CHUNKS, options)
    expected: dict[str, list[tuple[int, int]]] = {}
    for n, chunk in enumerate(CHUNKS):
        for word, count in Counter(chunk_tokens(chunk, options)).items():
            expected.setdefault(word, []).append((n, count))
    assert postings.words == sorted(expected)
    for word, held in expected.items():
        column = postings.column(word)
        assert column is not None
        assert list(zip(column[0].tolist(), column[1].tolist(), strict=True)) == held, word
    assert postings.lengths.tolist() == [len(chunk_tokens(c, options)) for c in CHUNKS]
