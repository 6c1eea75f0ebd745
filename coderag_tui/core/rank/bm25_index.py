"""BM25 over chunks: word counts kept per segment, scored per query word with bm25s's formulas.

A query costs, per query word, one column slice of the postings (which chunks hold the word,
how often), its idf from the live chunk frequency and the term part from each chunk's length:
vectorised numpy instead of rank_bm25's
pass over every chunk's word counts. Scores are not precomputed, because every edit changes
the corpus statistics they depend on: keeping counts is what lets an edit add a small delta
segment (`core.rank.segments`) instead of rebuilding the index, with the exact scores of a
rebuild. The formulas are bm25s's (`bm25s.scoring`), written out in `idf_of` / `tfc_of`
because importing bm25s slows every start-up; tests check they agree, and that the full
matrix equals what `bm25s.BM25.index` builds.

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
benchmark lucene's top-10 is also the closer of the two to BM25Okapi's in practice. The
figures (a query's cost, the import, the overlap): benchmarks/README.md ("BM25 scoring").
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from coderag_tui.core.index.persist import loaded_once, read_folder_meta, save_folder
from coderag_tui.core.rank.saved_lines import SavedLines
from coderag_tui.core.rank.segments import Drift, FileTable
from coderag_tui.core.rank.splitters import WORD, check_splitter, split_many, split_text
from coderag_tui.core.rank.words import (
    TOKENIZER_VERSION,
    compounds,
    split_words,
    tokenize,
    word_terms,
)
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.rank.definitions import Definitions, Later
    from coderag_tui.settings import Settings

DEFAULT_METHOD = "lucene"
# bm25s variants whose score is idf(word) x term part, with nothing for absent words (bm25l and
# bm25+ give every chunk a score, which a top-k of matching chunks does not want).
METHODS = ("lucene", "robertson", "atire")
K1 = 1.5  # rank_bm25's BM25Okapi default
B = 0.75  # rank_bm25's BM25Okapi default
FORMAT = 3  # bump when the saved layout changes; older folders are rebuilt
META_NAME = "coderag-bm25.json"
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
    splitter: str = WORD  # what a token is: `core.rank.splitters` (words, lines or BPE)

    @classmethod
    def of(cls, settings: Settings) -> BM25Options:
        """The options `settings` index with: their word splitting, the default method."""
        return cls(settings.split_identifiers, settings.path_in_text)

    def as_dict(self) -> dict[str, Any]:
        """The options as saved in metadata (`BM25Options(**d)` reads them back)."""
        return dataclasses.asdict(self)

    @property
    def folder_name(self) -> str:
        words = "split" if self.split_identifiers else "words"
        path = "path" if self.path_in_text else "nopath"
        splitter = "" if self.splitter == WORD else f"{self.splitter}-"
        return f"{splitter}{words}-{path}-{self.method}-k{self.k1:g}-b{self.b:g}"


def chunk_tokens(chunk: Chunk, options: BM25Options) -> list[str]:
    """The words BM25 indexes for one chunk (its path's words first when path_in_text)."""
    if options.splitter == WORD:
        tokens = tokenize(chunk.text, split_identifiers=options.split_identifiers)
    else:
        tokens = split_text(chunk.text, options.splitter)
    if options.path_in_text:
        return [
            *_path_words(
                chunk.path, split_identifiers=options.split_identifiers, splitter=options.splitter
            ),
            *tokens,
        ]
    return tokens


@functools.lru_cache(maxsize=4096)
def _path_words(path: str, *, split_identifiers: bool, splitter: str = WORD) -> tuple[str, ...]:
    """A path's words (its tokens under the splitter), worked out once for all its chunks."""
    return tuple(split_text(path, splitter, split_identifiers=split_identifiers))


def _other_tokens(chunks: Iterable[Chunk], options: BM25Options) -> Iterator[list[str]]:
    """`chunk_tokens` of each chunk under a splitter other than words (BPE in batches)."""
    it1, it2 = itertools.tee(chunks)
    texts = split_many((c.text for c in it1), options.splitter)
    for chunk, tokens in zip(it2, texts, strict=True):
        if options.path_in_text:
            path = _path_words(
                chunk.path, split_identifiers=options.split_identifiers, splitter=options.splitter
            )
            yield [*path, *tokens]
        else:
            yield tokens


_BATCH = 8192  # chunks tokenized and counted at a time while building (bounds the peak memory)


class _Vocabulary(dict[str, int]):
    """Word -> number, a new word numbered as it is first looked up (in C for known words)."""

    def __missing__(self, word: str) -> int:
        number = self[word] = len(self)
        return number


class _TermNumbers(dict[str, tuple[int, ...]]):
    """A word of `split_words` -> the vocabulary numbers of its `word_terms`, worked out once."""

    def __init__(self, vocab: _Vocabulary, *, split_identifiers: bool) -> None:
        super().__init__()
        self.vocab = vocab
        self.split_identifiers = split_identifiers

    def __missing__(self, word: str) -> tuple[int, ...]:
        found = self[word] = tuple(
            map(self.vocab.__getitem__, word_terms(word, self.split_identifiers))
        )
        return found


class ChunkNumbers:
    """Each chunk's BM25 words (`chunk_tokens` of the word splitter, to the last one) as
    vocabulary numbers, each distinct word worked out once: the whole way from text to numbers
    runs in C for every word seen before. `Postings.from_chunks` and the second process that
    builds BM25 while the index is written (`core.rank.bm25_process`) share it."""

    def __init__(self, options: BM25Options) -> None:
        self.vocab = _Vocabulary()
        self._terms = _TermNumbers(self.vocab, split_identifiers=options.split_identifiers)
        self._split = options.split_identifiers
        self._with_path = options.path_in_text
        self._paths: dict[str, tuple[int, ...]] = {}

    def __call__(self, path: str, text: str) -> list[int]:
        terms = self._terms.__getitem__
        words = chain.from_iterable(map(terms, split_words(text, self._split)))
        if not self._with_path:
            return list(words)
        numbers = self._paths.get(path)
        if numbers is None:
            numbers = self._paths[path] = tuple(
                chain.from_iterable(map(terms, split_words(path, self._split)))
            )
        return [*numbers, *words]


@dataclass(frozen=True)
class Postings:
    """One segment's word counts: for each word (a column; words sorted, so a lookup is a
    binary search and loading builds no dict) the chunks holding it, ascending, and how often
    (CSC layout), and each chunk's word count."""

    words: Sequence[str]  # a list when built, `SavedLines` when loaded
    indptr: np.ndarray  # int64, one more than words
    docs: np.ndarray  # int32, the segment's chunk numbers
    tf: np.ndarray  # int32, how often the word is in that chunk
    lengths: np.ndarray  # int64, words per chunk

    @property
    def n_docs(self) -> int:
        return int(self.lengths.size)

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]]) -> Postings:
        """Count words in batches of chunks: no corpus-wide list of words is ever held."""
        vocab = _Vocabulary()
        return cls.count((list(map(vocab.__getitem__, doc)) for doc in documents), vocab)

    @classmethod
    def from_chunks(cls, chunks: Iterable[Chunk], options: BM25Options) -> Postings:
        """`build` over `chunk_tokens` of each chunk, with the words of each distinct word
        looked up once as vocabulary numbers: the whole way from text to numbers runs in C
        for every word seen before (the words are `chunk_tokens`' to the last one)."""
        if options.splitter != WORD:
            return cls.build(_other_tokens(chunks, options))
        numbers = ChunkNumbers(options)
        return cls.count((numbers(c.path, c.text) for c in chunks), numbers.vocab)

    @classmethod
    def count(cls, documents: Iterable[Sequence[int]], vocab: dict[str, int]) -> Postings:
        """The postings of documents given as vocabulary numbers (`vocab`: word -> number)."""
        counting = Counting()
        iterator = iter(documents)
        while batch := list(islice(iterator, _BATCH)):
            counting.add(batch)
        return counting.postings(vocab)

    def column(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(chunks, counts) of one word, or None when the segment never saw it."""
        col = bisect.bisect_left(self.words, word)
        if col == len(self.words) or self.words[col] != word:
            return None
        start, end = int(self.indptr[col]), int(self.indptr[col + 1])
        return self.docs[start:end], self.tf[start:end]

    def save(self, folder: Path) -> None:
        for name in ("indptr", "docs", "tf", "lengths"):
            np.save(folder / f"{name}.npy", getattr(self, name), allow_pickle=False)
        (folder / _WORDS).write_text("\n".join(self.words), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Postings:
        """Read what `save` wrote, the arrays memory-mapped (once per saved folder:
        `persist.loaded_once`); ValueError when it is damaged."""
        try:
            return loaded_once(folder / _WORDS, "postings", lambda: cls._read(folder))
        except OSError as exc:
            raise ValueError(f"the BM25 index at {folder} is damaged: {exc}") from exc

    @classmethod
    def _read(cls, folder: Path) -> Postings:
        try:
            arrays = {
                name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                for name in ("indptr", "docs", "tf", "lengths")
            }
            words = SavedLines.split((folder / _WORDS).read_bytes())
        except (OSError, ValueError) as exc:
            raise ValueError(f"the BM25 index at {folder} is damaged: {exc}") from exc
        indptr, docs, tf, lengths = (arrays[n] for n in ("indptr", "docs", "tf", "lengths"))
        if (
            indptr.ndim != 1
            or len(indptr) != len(words) + 1
            or not int(indptr[-1]) == len(docs) == len(tf)
            or (len(docs) and int(docs.max()) >= len(lengths))
        ):
            raise ValueError(
                f"the BM25 index at {folder} is damaged: its arrays and words do not match"
            )
        return cls(words, indptr, docs, tf, lengths)


class Counting:
    """`Postings.count` a batch of chunks at a time, as they come: `add` counts one batch (the
    next chunks, in order), `postings` gathers them. The process that follows a first build
    (`core.rank.bm25_process`) counts while the build is still written, so only the gathering
    is left once it ends."""

    def __init__(self) -> None:
        self.n_docs = 0
        self._words: list[np.ndarray] = []
        self._docs: list[np.ndarray] = []
        self._tf: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []

    def add(self, batch: Sequence[Sequence[int]]) -> None:
        """Count the next chunks, each given as its words' vocabulary numbers."""
        if not batch:
            return
        lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
        flat = _flat(batch, int(lengths.sum()))
        docs = np.repeat(np.arange(len(batch), dtype=np.int64), lengths)
        pairs, tf = np.unique(flat * len(batch) + docs, return_counts=True)
        words, rows = np.divmod(pairs, len(batch))
        self._words.append(words.astype(np.int32))
        self._docs.append((rows + self.n_docs).astype(np.int32))
        self._tf.append(tf.astype(np.int32))
        self._lengths.append(lengths)
        self.n_docs += len(batch)

    def postings(self, vocab: dict[str, int]) -> Postings:
        """The postings of every chunk added (`vocab`: word -> number, every number they use);
        the counts are let go as they are placed."""
        word_parts, self._words = self._words, []
        doc_parts, self._docs = self._docs, []
        tf_parts, self._tf = self._tf, []
        if not word_parts:
            empty = np.zeros(0, np.int32)
            return Postings([], np.zeros(1, np.int64), empty, empty, np.zeros(0, np.int64))
        seen = list(vocab)  # first-seen order; columns go in sorted order
        order = sorted(range(len(seen)), key=seen.__getitem__)
        column = np.empty(len(seen), dtype=np.int32)
        column[np.asarray(order, dtype=np.int64)] = np.arange(len(seen), dtype=np.int32)
        per_word = np.zeros(len(seen), dtype=np.int64)
        for n, words in enumerate(word_parts):
            word_parts[n] = words = column[words]
            per_word += np.bincount(words, minlength=len(seen))
        indptr = np.zeros(len(seen) + 1, dtype=np.int64)
        np.cumsum(per_word, out=indptr[1:])
        docs = np.empty(int(indptr[-1]), dtype=np.int32)
        tf = np.empty(int(indptr[-1]), dtype=np.int32)
        _place(word_parts, doc_parts, tf_parts, indptr[:-1].copy(), docs, tf)
        return Postings([seen[i] for i in order], indptr, docs, tf, np.concatenate(self._lengths))


def _flat(batch: Sequence[Sequence[int]], total: int) -> np.ndarray:
    """A batch's numbers end to end, as int64: the bytes of int32 arrays (the follower's)
    joined in C, any other sequence read number by number."""
    if all(type(doc) is array and doc.typecode == "i" for doc in batch):
        joined = b"".join(cast("Sequence[array[int]]", batch))
        return np.frombuffer(joined, dtype=np.int32).astype(np.int64)
    return np.fromiter(chain.from_iterable(batch), dtype=np.int64, count=total)


def _place(
    word_parts: list[np.ndarray],
    doc_parts: list[np.ndarray],
    tf_parts: list[np.ndarray],
    free: np.ndarray,
    docs: np.ndarray,
    tf: np.ndarray,
) -> None:
    """Write each batch's (word, chunk, count) triples into the word-major `docs` and `tf`,
    at each word's next free place (`free`, advanced as it goes): a counting sort, with no
    corpus-wide sort or copy of the triples. In a batch, a word's triples are one run with its
    chunks ascending (they come from `np.unique`), and batches come in chunk order, so every
    word's chunks end ascending. Each batch's parts are let go once placed."""
    for n, words in enumerate(word_parts):
        if not words.size:
            continue
        starts = np.flatnonzero(np.concatenate(([True], words[1:] != words[:-1])))
        runs = np.diff(np.append(starts, words.size))
        heads = words[starts]
        within = np.arange(words.size) - np.repeat(starts, runs)
        at = np.repeat(free[heads], runs) + within
        docs[at] = doc_parts[n]
        tf[at] = tf_parts[n]
        free[heads] += runs
        word_parts[n] = doc_parts[n] = tf_parts[n] = words[:0]


def idf_of(method: str, df: int, n_docs: int) -> float:
    """bm25s's idf of a word in `df` of `n_docs` chunks (tests check it equals bm25s.scoring's;
    written out here because importing bm25s costs a start-up ~0.4 s)."""
    if method == "robertson":
        return math.log(max((n_docs - df + 0.5) / (df + 0.5), 1.0))
    if method == "atire":
        return math.log(n_docs / df)
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def length_norm(lengths: np.ndarray, avg: float, k1: float, b: float) -> np.ndarray:
    """Each chunk's part of bm25s's term-part denominator, k1 (1 - b + b len / avglen)."""
    return np.asarray(k1 * ((1 - b) + b * lengths / avg))


def tfc_of(method: str, tf: np.ndarray, norm: np.ndarray, k1: float) -> np.ndarray:
    """bm25s's term part for counts `tf` in chunks of `length_norm` `norm` (see `idf_of`)."""
    top: np.ndarray = tf * (k1 + 1) if method == "atire" else tf
    return np.asarray(top / (tf + norm))


class BM25Index:
    """BM25 over a list of chunks: a base segment, and a delta for what changed since.

    Results are indexes into the chunk list. Word counts are kept, not scores: a score needs
    the corpus's chunk count, each word's chunk frequency and the average chunk length, which
    every edit changes, so they are computed per query word from the live postings (about a
    millisecond per common word on 80k chunks). That is what lets an edit add a small delta
    (the changed files' chunks, with the base's old copies of them masked out through
    `Drift.remap`) instead of rebuilding the whole index, and the scores are exactly those
    of a full rebuild. Arrays are memory-mapped when loaded.
    """

    def __init__(
        self,
        base: Postings,
        options: BM25Options,
        *,
        drift: Drift | None = None,
        delta: Postings | None = None,
    ):
        if options.method not in METHODS:
            raise ValueError(f"unknown BM25 method {options.method!r}: use one of {METHODS}")
        self.options = options
        self.base = base
        self.drift = drift
        self.delta = delta
        # The names each chunk defines, built and saved with the lexical stage (the code
        # signals read them; see `load_or_build_bm25`); None until then.
        self.definitions: Definitions | None = None
        self.definitions_later: Later | None = None  # while a follower builds them
        if drift is None:
            self.n_docs = base.n_docs
            self._lengths = base.lengths
        else:
            self.n_docs = drift.n_chunks
            lengths = np.zeros(self.n_docs, dtype=np.int64)
            live = drift.remap >= 0
            lengths[drift.remap[live]] = np.asarray(base.lengths)[live]
            if delta is not None:
                lengths[drift.added] = delta.lengths
            self._lengths = lengths
        self._avg = float(np.mean(self._lengths)) if self.n_docs else 0.0
        self._norm: np.ndarray | None = None

    @property
    def empty(self) -> bool:
        """True when no chunk has a word (every query finds nothing)."""
        return not self.base.words and (self.delta is None or not self.delta.words)

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
        splitter: str = WORD,
    ) -> BM25Index:
        """Tokenize every chunk with our tokenizer (or `splitter`) and count its words."""
        options = BM25Options(split_identifiers, path_in_text, method, k1, b, splitter)
        check_splitter(splitter)
        if options.method not in METHODS:
            raise ValueError(f"unknown BM25 method {options.method!r}: use one of {METHODS}")
        return cls(Postings.from_chunks(chunks, options), options)

    @classmethod
    def from_tokens(cls, corpus: Iterable[Sequence[str]], options: BM25Options) -> BM25Index:
        """Build from already tokenized documents."""
        if options.method not in METHODS:
            raise ValueError(f"unknown BM25 method {options.method!r}: use one of {METHODS}")
        return cls(Postings.build(corpus), options)

    def _column(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The current chunk indexes holding `word` and its counts there, over both segments."""
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        found = self.base.column(word)
        if found is not None:
            docs, tf = found
            if self.drift is not None:
                where = self.drift.remap[docs]
                live = where >= 0
                docs, tf = where[live], tf[live]
            parts.append((docs, tf))
        if self.delta is not None and self.drift is not None:
            extra = self.delta.column(word)
            if extra is not None:
                parts.append((self.drift.added[extra[0]], extra[1]))
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _scored(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(chunk indexes, BM25 scores) of one word; None when no chunk holds it."""
        found = self._column(word)
        if found is None or not found[0].size:
            return None
        docs, tf = found
        o = self.options
        idf = idf_of(o.method, int(docs.size), self.n_docs)
        if self._norm is None:  # per chunk, once: a query word then gathers it
            self._norm = length_norm(self._lengths, self._avg, o.k1, o.b)
        tfc = tfc_of(o.method, tf.astype(np.float64), self._norm[docs], o.k1)
        return docs, (idf * tfc).astype(np.float32)

    def score_matrix(self) -> dict[str, np.ndarray]:
        """Every (word, chunk) score in bm25s's CSC layout over the base's words (tests and
        `tests/fixtures/bm25s_oracle.py`; a delta's words are not in it)."""
        data, indices = [], []
        indptr = np.zeros(len(self.base.words) + 1, dtype=np.int64)
        for col, word in enumerate(self.base.words):
            found = self._scored(word)
            docs, vals = found if found is not None else (np.zeros(0, np.int64), np.zeros(0))
            data.append(vals.astype(np.float32))
            indices.append(docs.astype(np.int32))
            indptr[col + 1] = indptr[col] + docs.size
        return {
            "data": np.concatenate(data) if data else np.zeros(0, np.float32),
            "indices": np.concatenate(indices) if indices else np.zeros(0, np.int32),
            "indptr": indptr.astype(np.int32 if indptr[-1] < 2**31 else np.int64),
        }

    def holders(self, word: str) -> np.ndarray | None:
        """The indexes of the current chunks that hold `word` (None: none do), unordered; the
        learned reranker reads which candidates and files cover the query's words."""
        found = self._column(word)
        return found[0] if found is not None and found[0].size else None

    def idf(self, word: str) -> float:
        """The idf of a word (0.0 for an unknown word), for tests and debugging."""
        found = self._column(word)
        if found is None or not found[0].size:
            return 0.0
        return idf_of(self.options.method, int(found[0].size), self.n_docs)

    def tokenize_query(self, query: str) -> list[str]:
        """The query's words, split exactly as the chunks were, and the identifiers its dashed
        and slashed words stand for (`HTTP/2` -> http2; `words.compounds`)."""
        if self.options.splitter != WORD:
            return split_text(query, self.options.splitter)
        words = tokenize(query, split_identifiers=self.options.split_identifiers)
        return words + compounds(query)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for these query words (unknown words add nothing; a
        repeated word counts again)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        seen: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        parts = []
        for token in tokens:
            if token not in seen:
                seen[token] = self._scored(token)
            if (found := seen[token]) is not None:
                parts.append(found)
        if not parts:
            return out
        if len(parts) == 1:
            out[parts[0][0]] = parts[0][1]
            return out
        rows = np.concatenate([p[0] for p in parts])
        vals = np.concatenate([p[1] for p in parts])
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
        if self.base.words:
            words = self.base.words[:2]
            self.search_tokens(words, 1)
            self.search_tokens(words[:1], 1)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top k (chunk index, score) for a query string; an empty or unknown query gives []."""
        return self.search_tokens(self.tokenize_query(query), k)

    def save(
        self,
        directory: Path,
        *,
        extra: dict[str, Any] | None = None,
        table: FileTable | None = None,
    ) -> None:
        """Write the base segment to `directory` atomically (a temporary folder renamed into
        place), with the file table it was built from when given; `extra` goes into its
        metadata."""

        def write(tmp: Path) -> None:
            self.base.save(tmp)
            if table is not None:
                table.save(tmp)

        meta = {
            "format": FORMAT,
            "tokenizer": TOKENIZER_VERSION,
            "n_docs": self.base.n_docs,
            "options": self.options.as_dict(),
            **(extra or {}),
        }
        save_folder(directory, write, meta, META_NAME)

    @staticmethod
    def read_meta(directory: Path) -> dict[str, Any] | None:
        """The saved segment's metadata, or None when there is none or it is unreadable."""
        meta = read_folder_meta(directory, META_NAME, FORMAT)
        if meta is None:
            return None
        return meta if meta.get("tokenizer") == TOKENIZER_VERSION else None

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Read a base written by `save`; raises ValueError when it is missing or damaged."""
        meta = cls.read_meta(directory)
        if meta is None:
            raise ValueError(f"no BM25 index at {directory}")
        base = Postings.load(directory)
        if base.n_docs != int(meta["n_docs"]):
            raise ValueError(f"the BM25 index at {directory} is damaged: its chunk count differs")
        return cls(base, BM25Options(**meta["options"]))


def bm25_dir(settings: Settings, options: BM25Options) -> Path:
    """Where the BM25 base of the current chunking and tokenizer options is saved (its delta
    is the sibling folder with `.delta` added)."""
    spec = settings.chunking_spec.key.replace(":", "_")
    return settings.index_path.with_suffix(".bm25") / f"{spec}-{options.folder_name}"
