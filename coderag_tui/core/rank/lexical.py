"""BM25 over chunks with bm25s: every (word, chunk) score is precomputed into a sparse matrix.

A query then costs one column slice per query word and a `bincount`, far below a millisecond
per word on ~18k chunks, instead of rank_bm25's pass over every chunk's word counts. The matrix
is computed with numpy from bm25s's own scoring functions (bm25s's per-chunk Python loop was
the slowest part of a build); bm25s holds it, saves and loads it.

Scoring variant (the default, "lucene", as in Lucene/Elasticsearch and bm25s):
    idf(w)   = log(1 + (N - n_w + 0.5) / (n_w + 0.5))
    score    = sum over query words w of idf(w) * tf / (tf + k1 * (1 - b + b * len / avglen))
rank_bm25's `BM25Okapi` (the reference) differs in two ways:
    * its term part is multiplied by (k1 + 1), a constant factor that never changes an order;
    * its idf is log((N - n_w + 0.5) / (n_w + 0.5)), and a word in more than half of the chunks
      (negative idf) gets a floor of 0.25 * the corpus-average idf instead.
We use "lucene" because its idf is never negative and needs no corpus-wide floor: a very
common word (`self`, `return`) still adds a little, instead of a value that depends on the
whole vocabulary. With method="robertson" (idf log((N - n + 0.5) / (n + 0.5)), clipped at 0)
the scores are exactly BM25Okapi's divided by (k1 + 1) whenever every query word appears in
fewer than half of the chunks; tests/core/test_bm25.py checks both statements. On the stdlib
benchmark (benchmarks/bench_search.py, 50 queries) lucene's top-10 shares 0.91 of BM25Okapi's
chunks on average (robertson: 0.87), so lucene is also the closer of the two in practice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coderag_tui.core.index.persist import read_folder_meta, save_folder
from coderag_tui.core.rank.words import TOKENIZER_VERSION, tokenize
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.index.store import Store
    from coderag_tui.core.rank.definitions import Definitions
    from coderag_tui.settings import Settings

DEFAULT_METHOD = "lucene"
# bm25s variants whose score is idf(word) x term part, with nothing for absent words (bm25l and
# bm25+ give every chunk a score, which a top-k of matching chunks does not want).
METHODS = ("lucene", "robertson", "atire")
K1 = 1.5  # rank_bm25's BM25Okapi default
B = 0.75  # rank_bm25's BM25Okapi default
_FORMAT = 2  # bump when the saved layout changes; older folders are rebuilt
_META = "coderag-bm25.json"
# The vocabulary one word a line in id order: read back ~3x faster than bm25s's JSON dict, which
# took most of a start-up's BM25 load on the stdlib (~200k words). Words never hold a newline.
_WORDS = "coderag-words.txt"


@dataclass(frozen=True)
class BM25Options:
    """What a saved index was built with; any difference means a rebuild."""

    split_identifiers: bool = False
    path_in_text: bool = False
    method: str = DEFAULT_METHOD
    k1: float = K1
    b: float = B

    @property
    def folder_name(self) -> str:
        words = "split" if self.split_identifiers else "words"
        path = "path" if self.path_in_text else "nopath"
        return f"{words}-{path}-{self.method}-k{self.k1:g}-b{self.b:g}"


def chunk_tokens(chunk: Chunk, options: BM25Options) -> list[str]:
    """The words BM25 indexes for one chunk (its path's words first when path_in_text)."""
    tokens = tokenize(chunk.text, split_identifiers=options.split_identifiers)
    if options.path_in_text:
        return tokenize(chunk.path, split_identifiers=options.split_identifiers) + tokens
    return tokens


class BM25Index:
    """A BM25 score matrix (bm25s's CSC layout) over a fixed list of chunks.

    Results are indexes into that list. The matrix is bm25s's: built from its scoring
    functions, saved by `bm25s.BM25.save` (the folder loads with `bm25s.BM25.load`). Loading
    reads the three arrays with numpy and the vocabulary from a word-a-line file, so opening
    an index does not import bm25s and scipy (0.4 s of a TUI start-up) or parse its JSON.
    """

    def __init__(
        self,
        scores: dict[str, Any] | None,
        vocab: dict[str, int],
        n_docs: int,
        options: BM25Options,
    ):
        self._vocab = vocab
        self.n_docs = n_docs
        self.options = options
        # The names each chunk defines, built and saved with the lexical stage (the code
        # signals read them; see `load_or_build_bm25`); None until then.
        self.definitions: Definitions | None = None
        self._data = np.zeros(0, dtype=np.float32)
        self._indices = np.zeros(0, dtype=np.int64)
        self._indptr = np.zeros(1, dtype=np.int64)
        if scores is not None and vocab:
            self._data = np.asarray(scores["data"], dtype=np.float32)
            self._indices = np.asarray(scores["indices"], dtype=np.int64)
            self._indptr = np.asarray(scores["indptr"], dtype=np.int64)

    @property
    def empty(self) -> bool:
        """True when no chunk has a word (every query finds nothing)."""
        return not self._vocab

    def as_bm25s(self) -> Any:
        """This matrix in a `bm25s.BM25` object (to save it, or to compare with bm25s itself)."""
        import bm25s

        retriever = bm25s.BM25(k1=self.options.k1, b=self.options.b, method=self.options.method)
        retriever.scores = {
            "data": self._data,
            "indices": self._indices.astype(np.int32),
            "indptr": self._indptr.astype(np.int32 if self._indptr[-1] < 2**31 else np.int64),
            "num_docs": self.n_docs,
        }
        retriever.vocab_dict = self._vocab
        retriever.unique_token_ids_set = set(self._vocab.values())
        retriever.nonoccurrence_array = None
        return retriever

    @classmethod
    def build(
        cls,
        chunks: Sequence[Chunk],
        *,
        split_identifiers: bool,
        path_in_text: bool,
        method: str = DEFAULT_METHOD,
        k1: float = K1,
        b: float = B,
    ) -> BM25Index:
        """Tokenize every chunk with our tokenizer and let bm25s precompute the scores."""
        options = BM25Options(split_identifiers, path_in_text, method, k1, b)
        return cls.from_tokens([chunk_tokens(c, options) for c in chunks], options)

    @classmethod
    def from_tokens(cls, corpus: Sequence[Sequence[str]], options: BM25Options) -> BM25Index:
        """Build from already tokenized documents (bm25s never sees raw text or its tokenizer)."""
        if options.method not in METHODS:
            raise ValueError(f"unknown BM25 method {options.method!r}: use one of {METHODS}")
        # Word ids in first-seen order, mapped with C-level calls (a Python loop per word was
        # the slowest part of building on ~3M words).
        vocab = {t: i for i, t in enumerate(dict.fromkeys(chain.from_iterable(corpus)))}
        if not vocab:
            return cls(None, {}, len(corpus), options)
        lengths = np.fromiter(map(len, corpus), dtype=np.int64, count=len(corpus))
        flat = np.fromiter(
            map(vocab.__getitem__, chain.from_iterable(corpus)),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        return cls(_score_matrix(flat, lengths, len(vocab), options), vocab, len(corpus), options)

    def idf(self, word: str) -> float:
        """The idf bm25s computed for a word (0.0 for an unknown word), for tests and debugging."""
        if word not in self._vocab:
            return 0.0
        from bm25s.scoring import _select_idf_scorer

        col = self._vocab[word]
        df = int(self._indptr[col + 1] - self._indptr[col])
        return float(_select_idf_scorer(self.options.method)(df, N=self.n_docs))

    def tokenize_query(self, query: str) -> list[str]:
        """The query's words, split exactly as the chunks were."""
        return tokenize(query, split_identifiers=self.options.split_identifiers)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for these query words (unknown words add nothing)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        ids = [self._vocab[t] for t in tokens if t in self._vocab]
        if not ids:
            return out
        starts, ends = self._indptr[ids], self._indptr[np.asarray(ids) + 1]
        if len(ids) == 1:
            sl = slice(int(starts[0]), int(ends[0]))
            out[self._indices[sl]] = self._data[sl]
            return out
        rows = np.concatenate([self._indices[s:e] for s, e in zip(starts, ends, strict=True)])
        vals = np.concatenate([self._data[s:e] for s, e in zip(starts, ends, strict=True)])
        return np.bincount(rows, weights=vals, minlength=self.n_docs).astype(np.float32)

    def search_tokens(self, tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, score) for query words, best first, ties by chunk order."""
        if k <= 0 or not tokens:
            return []
        scores = self.scores(tokens)
        top = np.flatnonzero(scores > 0)
        if top.size > k:
            found = scores[top]
            kth = np.partition(found, found.size - k)[found.size - k]
            # every chunk tied with the k-th score stays a candidate: ties go by chunk order
            top = top[found >= kth]
        order = np.lexsort((top, -scores[top]))
        return [(int(top[i]), float(scores[top[i]])) for i in order[:k]]

    def warm_up(self) -> None:
        """Run one query through every numpy path, so the first real query's timing is honest."""
        if self._vocab:
            words = list(self._vocab)[:2]
            self.search_tokens(words, 1)
            self.search_tokens(words[:1], 1)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, score) for a query string; an empty or unknown query gives []."""
        return self.search_tokens(self.tokenize_query(query), k)

    def save(self, directory: Path, *, extra: dict[str, Any] | None = None) -> None:
        """Write the index to `directory` atomically (a temporary folder renamed into place)."""

        def write(tmp: Path) -> None:
            if not self.empty:
                self.as_bm25s().save(str(tmp), show_progress=False)
                (tmp / _WORDS).write_text("\n".join(self._vocab), encoding="utf-8")

        meta = {
            "format": _FORMAT,
            "tokenizer": TOKENIZER_VERSION,
            "n_docs": self.n_docs,
            "empty": self.empty,
            "options": _options_dict(self.options),
            **(extra or {}),
        }
        save_folder(directory, write, meta, _META)

    @staticmethod
    def read_meta(directory: Path) -> dict[str, Any] | None:
        """The saved index's metadata, or None when there is none or it is unreadable."""
        meta = read_folder_meta(directory, _META, _FORMAT)
        if meta is None:
            return None
        return meta if meta.get("tokenizer") == TOKENIZER_VERSION else None

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Read an index written by `save`; raises ValueError when it is missing or damaged."""
        meta = cls.read_meta(directory)
        if meta is None:
            raise ValueError(f"no BM25 index at {directory}")
        options = BM25Options(**meta["options"])
        n_docs = int(meta["n_docs"])
        if meta["empty"]:
            return cls(None, {}, n_docs, options)
        try:
            scores = {
                name: np.load(directory / f"{name}.csc.index.npy", allow_pickle=False)
                for name in ("data", "indices", "indptr")
            }
            words = (directory / _WORDS).read_text(encoding="utf-8").split("\n")
        except (OSError, ValueError) as exc:
            raise ValueError(f"the BM25 index at {directory} is damaged: {exc}") from exc
        indptr = scores["indptr"]
        if (
            indptr.ndim != 1
            or len(indptr) != len(words) + 1
            or not int(indptr[-1]) == len(scores["data"]) == len(scores["indices"])
            or (len(scores["indices"]) and int(scores["indices"].max()) >= n_docs)
        ):
            raise ValueError(
                f"the BM25 index at {directory} is damaged: its arrays and words do not match"
            )
        return cls(scores, dict(zip(words, range(len(words)), strict=True)), n_docs, options)


def _options_dict(options: BM25Options) -> dict[str, Any]:
    return {
        "split_identifiers": options.split_identifiers,
        "path_in_text": options.path_in_text,
        "method": options.method,
        "k1": options.k1,
        "b": options.b,
    }


def _score_matrix(
    flat: np.ndarray, lengths: np.ndarray, n_vocab: int, options: BM25Options
) -> dict[str, Any]:
    """bm25s's score matrix (CSC over words), computed with numpy instead of a per-chunk loop.

    Same formulas (bm25s.scoring's idf and term-part functions) and the same layout as
    `bm25s.BM25.index`, several times faster on ~18k chunks; tests check the two are equal.
    `flat` holds every chunk's word ids one chunk after another, `lengths` each chunk's count.
    """
    from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

    n_docs = len(lengths)
    docs = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # One entry per (word, chunk) pair, sorted by word then chunk: the CSC order.
    pairs, tf = np.unique(flat * n_docs + docs, return_counts=True)
    words, rows = np.divmod(pairs, n_docs)
    df = np.bincount(words, minlength=n_vocab)
    idf_of = _select_idf_scorer(options.method)
    unique_df, where = np.unique(df, return_inverse=True)
    idf = np.array([idf_of(int(d), N=n_docs) if d else 0.0 for d in unique_df])[where]
    tfc = _select_tfc_scorer(options.method)(
        tf_array=tf.astype(np.float64),
        l_d=lengths[rows].astype(np.float64),
        l_avg=float(lengths.mean()),
        k1=options.k1,
        b=options.b,
    )
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {
        "data": (idf[words] * tfc).astype(np.float32),
        "indices": rows.astype(np.int32),
        "indptr": indptr.astype(np.int32 if indptr[-1] < 2**31 else np.int64),
        "num_docs": n_docs,
    }


def bm25_dir(settings: Settings, options: BM25Options) -> Path:
    """Where the BM25 index of the current chunking and tokenizer options is saved."""
    spec = settings.chunking_spec.key.replace(":", "_")
    return settings.index_path.with_suffix(".bm25") / f"{spec}-{options.folder_name}"


def load_or_build_bm25(
    store: Store,
    settings: Settings,
    chunks: Sequence[Chunk],
    *,
    method: str = DEFAULT_METHOD,
) -> BM25Index:
    """The saved index when the store's chunks are unchanged (same generation), else rebuilt.

    With the code signals that read them on, the chunks' definitions come with it (saved
    beside it under the same generation; `core.rank.definitions`).
    """
    index = _load_or_build_matrix(store, settings, chunks, method)
    if settings.signals and (
        settings.signal_definitions or settings.signal_forms or settings.signal_issue_terms
    ):
        from coderag_tui.core.rank.definitions import load_or_build_definitions

        index.definitions = load_or_build_definitions(store, settings, chunks)
    return index


def _load_or_build_matrix(
    store: Store, settings: Settings, chunks: Sequence[Chunk], method: str
) -> BM25Index:
    options = BM25Options(settings.split_identifiers, settings.path_in_text, method)
    directory = bm25_dir(settings, options)
    generation = store.generation(settings.chunking_spec.key)
    meta = BM25Index.read_meta(directory)
    if (
        meta is not None
        and meta.get("generation") == generation
        and meta.get("n_docs") == len(chunks)
    ):
        try:
            return BM25Index.load(directory)
        except (ValueError, KeyError, TypeError):
            pass  # damaged: rebuild below
    index = BM25Index.build(
        chunks,
        split_identifiers=options.split_identifiers,
        path_in_text=options.path_in_text,
        method=method,
    )
    # A read-only or full cache costs a rebuild next time, never the search.
    with contextlib.suppress(OSError):
        index.save(directory, extra={"generation": generation})
    return index
