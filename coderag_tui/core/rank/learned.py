"""The learned reranker: a small gradient-boosted ranking model over what the engine computes.

The fused list weighs its code signals by hand (`core.rank.signals`); this stage lets a model
trained on commit history (a commit's message as the query, the files it changed at its
parent as the answer; `core.learn`) reorder the fused top N instead. Its features are what a
search has already computed for each candidate, plus a few cheap facts (`FEATURES`): BM25 and
dense scores and ranks, the fused score and each signal's part of it, the file's roles,
language, length and depth, how much of the query's words the chunk and its file hold, and
the query's kind and length.

The model is a LightGBM lambdarank ensemble kept as LightGBM's own text dump (reviewable, and
loadable by LightGBM itself), evaluated here with numpy: importing LightGBM takes seconds,
while its trees are a few arrays walked level by level for every tree and candidate at once
(`TreeEnsemble`). Each reranked hit's `why` is its score split over the features (the change
of the expected score at each split on its path, summed per feature, so the parts add up to
the score) and shows the largest few.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from coderag_tui.core.capped import parse_json, read_capped
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.rank.query_terms import STOPWORDS, QueryTerms
from coderag_tui.core.rank.signals import (
    COHERENCE,
    DEFINITION,
    FORM,
    ISSUE,
    PATH,
    ROLE,
    SAME_FILE,
    CodeFacts,
    Scored,
)
from coderag_tui.core.records import Chunk

if TYPE_CHECKING:
    from coderag_tui.core.rank.lexical import LexicalIndex

# The features, in the model's column order, each with the label a hit's `why` shows.
FEATURES: tuple[tuple[str, str], ...] = (
    # the query
    ("q_words", "query length"),
    ("q_long", "issue text"),
    ("q_name", "a name query"),
    ("q_question", "a question"),
    ("q_names", "names in the query"),
    ("q_paths", "paths in the query"),
    ("q_dense", "dense on"),
    # the raw lists
    ("bm25_rel", "BM25 score"),
    ("bm25_rr", "BM25 rank"),
    ("dense_cos", "dense score"),
    ("dense_gap", "dense score below the best"),
    ("dense_rr", "dense rank"),
    ("bm25_file_rr", "file's BM25 rank"),
    ("dense_file_rr", "file's dense rank"),
    # the fused list and its signals
    ("base_rel", "fused base"),
    ("fused_rel", "fused score"),
    ("fused_rr", "fused rank"),
    ("sig_definition", "definition signal"),
    ("sig_form", "identifier form signal"),
    ("sig_path", "path signal"),
    ("sig_named", "file named in the issue"),
    ("sig_coherence", "file coherence signal"),
    ("sig_issue", "issue terms signal"),
    ("sig_frame", "traceback frame"),
    ("sig_role", "role prior"),
    # the file
    ("role_test", "a test"),
    ("role_docs", "docs"),
    ("role_example", "an example"),
    ("role_vendored", "vendored or generated"),
    ("role_other", "changelog, benchmark, migration or legacy"),
    ("role_asked", "a role the query asks for"),
    ("lang_code", "source code"),
    ("lang_prose", "prose"),
    ("lang_share", "share of candidates in its language"),
    ("path_depth", "path depth"),
    ("file_lines", "file length"),
    ("file_chunks", "chunks in the file"),
    ("chunk_lines", "chunk length"),
    ("chunk_pos", "place in the file"),
    ("file_rr", "file's fused rank"),
    ("file_best", "its file's best chunk"),
    ("file_hits", "file's chunks among the candidates"),
    # the query's words in the chunk and its file
    ("chunk_cov", "query words in the chunk"),
    ("file_cov", "query words in the file"),
)
FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in FEATURES)
FEATURE_LABELS: dict[str, str] = dict(FEATURES)
_COLUMN = {name: n for n, name in enumerate(FEATURE_NAMES)}

LEARNED_CANDIDATES = 100  # fused candidates the model reorders by default
EXPLAINED = 3  # features a hit's `why` names; the rest are summed as one part
EXPLAINED_HITS = 20  # reranked hits whose `why` names features (the rest say the score alone)
MODEL_FORMAT = 1  # of the JSON beside a model text: bump when the features change meaning
SHIPPED_MODEL = "learned_ranker.txt"  # in this package, with learned_ranker.json beside it
COVERAGE_WORDS = 24  # query words (the rarest first) whose holders the coverage reads
BIAS = "learned, expected"  # a reranked hit's `why` starts from the model's expected score
OTHERS = "other features"
NOT_RERANKED = "below the reranked candidates, in fused order"

_PROSE = frozenset({"markdown", "rst", "text", "latex"})
_DATA = frozenset({"json", "yaml", "toml", "ini", "xml", "csv", "html", "css"})
_VENDORED = frozenset({"vendored", "generated"})
_OTHER_ROLES = frozenset({"changelog", "benchmark", "migration", "legacy"})
_QUESTION = re.compile(
    r"^\s*(?:how|what|where|which|why|when|who|does|do|is|are|can|should|could|would)\b",
    re.IGNORECASE,
)


# The shipped model's text is under 200 KiB; a bigger file is not a model this code wrote.
MAX_MODEL_BYTES = 16 * 1024 * 1024
# The shipped model has 99 trees of depth 6 at most; LightGBM's own limit of leaves per tree
# is 131,072. A model past these bounds is refused before any tree is walked.
MAX_TREES = 10_000
MAX_TREE_DEPTH = 64


def _read_small(path: Path) -> str:
    """A model file's text: OSError when it cannot be read, ValueError (the words a sentence
    ends with) when it is not a regular file, too big or not UTF-8 — a FIFO or a huge file
    named by a repository's config is refused, never waited on or read whole."""
    if not path.is_file():
        raise ValueError("not a regular file")
    data = read_capped(path, MAX_MODEL_BYTES)
    if data is None:
        raise ValueError(f"larger than {MAX_MODEL_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("not UTF-8 text") from exc


class ModelError(CoderagError, ValueError):
    """A learned model file that cannot be used; the message names the file and the fix."""


# --- features ---------------------------------------------------------------------------------


@dataclass
class Candidates:
    """What one search computed that the learned reranker reads: the query read by the
    signals, its BM25 words, the raw lists and the fused list (best first, each with its
    `why`), the facts about the chunks and the lexical index (for the words' coverage)."""

    query: str
    terms: QueryTerms
    tokens: Sequence[str]
    bm25: Sequence[tuple[int, float]]
    dense: Sequence[tuple[int, float]] | None
    fused: Sequence[Scored]
    facts: CodeFacts
    chunks: Sequence[Chunk]
    lexical: LexicalIndex | None = None
    _spans: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def spans(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and last line of each chunk in `ids` (texts are not read)."""
        chunks = self.chunks
        if isinstance(chunks, ChunkList):
            return chunks.starts[ids].astype(np.float64), chunks.ends[ids].astype(np.float64)
        starts = np.array([chunks[i].start_line for i in ids.tolist()], dtype=np.float64)
        ends = np.array([chunks[i].end_line for i in ids.tolist()], dtype=np.float64)
        return starts, ends

    def file_end(self, fid: int) -> int:
        """The last line of a file (its last chunk's end)."""
        last = self.facts.chunks_of[fid][-1]
        chunks = self.chunks
        if isinstance(chunks, ChunkList):
            return int(chunks.ends[last])
        return chunks[last].end_line


def _signal_column(label: str) -> str | None:
    """The feature a `why` label of the fused list feeds (None: the base, or unknown)."""
    if label.startswith(DEFINITION):
        return "sig_definition"
    if label.startswith(FORM):
        return "sig_form"
    if label == PATH:
        return "sig_path"
    if label.startswith(PATH + ":"):
        return "sig_named"
    if label == COHERENCE:
        return "sig_coherence"
    if label.startswith(ISSUE + ": traceback"):
        return "sig_frame"
    if label.startswith(ISSUE):
        return "sig_issue"
    if label.startswith(ROLE):
        return "sig_role"
    return None


def _file_ranks(scored: Sequence[tuple[int, float]], file_of: Sequence[int]) -> dict[int, int]:
    """Each file's rank (1-based) by its first chunk in a ranked list."""
    ranks: dict[int, int] = {}
    for i, _ in scored:
        fid = file_of[i]
        if fid not in ranks:
            ranks[fid] = len(ranks) + 1
    return ranks


def _idf(df: int, n: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _coverage(
    c: Candidates, ids: np.ndarray, fids: np.ndarray, n_chunks: int
) -> tuple[np.ndarray, np.ndarray]:
    """The idf-weighted share of the query's words each candidate chunk, and its file, holds:
    its first `COVERAGE_WORDS` distinct words that are not stopwords (issue text is long; its
    opening says what it is about). Zeros without a lexical index that can say."""
    zeros = np.zeros(ids.size), np.zeros(ids.size)
    holders_of = getattr(c.lexical, "holders", None)
    if holders_of is None or not c.tokens or n_chunks == 0:
        return zeros
    words = [w for w in dict.fromkeys(c.tokens) if w not in STOPWORDS][:COVERAGE_WORDS]
    found: list[tuple[float, np.ndarray]] = []
    for word in words:
        held = holders_of(word)
        if held is not None:
            found.append((_idf(int(held.size), n_chunks), held))
    if not found:
        return zeros
    # A word no chunk holds counts against coverage at the weight of the rarest word.
    total = sum(w for w, _ in found) + (len(words) - len(found)) * max(w for w, _ in found)
    file_of = c.facts.file_of_array
    n_files = len(c.facts.paths)
    chunk_cov = np.zeros(ids.size)
    file_cov = np.zeros(ids.size)
    in_chunk = np.zeros(n_chunks, dtype=bool)
    in_file = np.zeros(n_files, dtype=bool)
    for weight, held in found:
        files = file_of[held]
        in_chunk[held] = True
        in_file[files] = True
        chunk_cov += weight * in_chunk[ids]
        file_cov += weight * in_file[fids]
        in_chunk[held] = False
        in_file[files] = False
    return chunk_cov / total, file_cov / total


def candidate_features(c: Candidates, n: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: C901
    """The fused top `n` (chunk indexes, best first) and their feature matrix (`FEATURES`)."""
    top = c.fused[: max(n, 0)]
    ids = np.fromiter((i for i, _, _ in top), dtype=np.int64, count=len(top))
    x = np.zeros((ids.size, len(FEATURE_NAMES)), dtype=np.float64)
    if not ids.size:
        return ids, x
    col = _COLUMN
    facts = c.facts
    file_of = facts.file_of
    terms = c.terms
    fids = np.fromiter((file_of[i] for i in ids), dtype=np.int64, count=ids.size)

    # the query
    x[:, col["q_words"]] = math.log1p(len(terms.words))
    x[:, col["q_long"]] = float(terms.long)
    x[:, col["q_name"]] = float(terms.name_query)
    x[:, col["q_question"]] = float(
        bool(_QUESTION.match(c.query)) or c.query.rstrip().endswith("?")
    )
    x[:, col["q_names"]] = len(terms.names)
    x[:, col["q_paths"]] = len(terms.paths)
    x[:, col["q_dense"]] = float(c.dense is not None)

    # the raw lists
    where = {int(i): row for row, i in enumerate(ids)}
    if c.bm25:
        best = c.bm25[0][1] or 1.0
        for rank, (i, s) in enumerate(c.bm25, start=1):
            row = where.get(i)
            if row is not None:
                x[row, col["bm25_rel"]] = s / best
                x[row, col["bm25_rr"]] = 1.0 / rank
        ranks = _file_ranks(c.bm25, file_of)
        x[:, col["bm25_file_rr"]] = [1.0 / ranks[f] if f in ranks else 0.0 for f in fids]
    if c.dense:
        best = c.dense[0][1]
        x[:, col["dense_gap"]] = 1.0
        for rank, (i, s) in enumerate(c.dense, start=1):
            row = where.get(i)
            if row is not None:
                x[row, col["dense_cos"]] = s
                x[row, col["dense_gap"]] = best - s
                x[row, col["dense_rr"]] = 1.0 / rank
        ranks = _file_ranks(c.dense, file_of)
        x[:, col["dense_file_rr"]] = [1.0 / ranks[f] if f in ranks else 0.0 for f in fids]

    # the fused list and its signals
    top_score = top[0][1] if top[0][1] > 0 else 1.0
    best_of_file: dict[int, int] = {}
    hits_of_file: dict[int, int] = {}
    for row, (i, s, why) in enumerate(top):
        x[row, col["fused_rel"]] = s / top_score
        x[row, col["fused_rr"]] = 1.0 / (row + 1)
        if why:
            x[row, col["base_rel"]] = why[0][1]
            for label, value in why[1:]:
                name = _signal_column(label)
                if name is not None:
                    x[row, col[name]] += value
        fid = file_of[i]
        best_of_file.setdefault(fid, row)
        hits_of_file[fid] = hits_of_file.get(fid, 0) + 1
    file_rank = {fid: r for r, fid in enumerate(best_of_file, start=1)}
    x[:, col["file_rr"]] = [1.0 / file_rank[f] for f in fids]
    x[:, col["file_best"]] = [float(best_of_file[f] == row) for row, f in enumerate(fids)]
    x[:, col["file_hits"]] = [hits_of_file[f] for f in fids]

    # the file (worked out once per file: a file often has several candidates)
    languages = [facts.languages[f] for f in fids]
    counts: dict[str | None, int] = {}
    for language in languages:
        counts[language] = counts.get(language, 0) + 1
    per_file: dict[int, list[float]] = {}
    asked = terms.roles_asked
    names = ("role_test", "role_docs", "role_example", "role_vendored", "role_other",
             "role_asked", "lang_prose", "lang_code", "lang_share", "path_depth", "file_lines",
             "file_chunks")  # fmt: skip
    file_cols = [col[name] for name in names]
    rows = np.empty((ids.size, len(names)))
    for row, fid in enumerate(fids.tolist()):
        known = per_file.get(fid)
        if known is None:
            roles = facts.roles[fid]
            language = facts.languages[fid]
            prose = language is None or language in _PROSE
            known = per_file[fid] = [
                float("test" in roles),
                float("docs" in roles),
                float("example" in roles),
                float(bool(roles & _VENDORED)),
                float(bool(roles & _OTHER_ROLES)),
                float(bool(roles & asked)),
                float(prose),
                float(not prose and language not in _DATA),
                counts[language] / ids.size,
                float(facts.paths[fid].count("/")),
                float(max(c.file_end(fid), 1)),
                float(len(facts.chunks_of[fid])),
            ]
        rows[row] = known
    x[:, file_cols] = rows
    file_lines = x[:, col["file_lines"]].copy()
    x[:, col["file_lines"]] = np.log1p(file_lines)
    starts, ends = c.spans(ids)
    x[:, col["chunk_pos"]] = (starts - 1) / file_lines
    x[:, col["chunk_lines"]] = np.log1p(ends - starts + 1)

    n_chunks = len(c.chunks)
    chunk_cov, file_cov = _coverage(c, ids, fids, n_chunks)
    x[:, col["chunk_cov"]] = chunk_cov
    x[:, col["file_cov"]] = file_cov
    return ids, x


# --- the model --------------------------------------------------------------------------------

_MISSING_NONE, _MISSING_ZERO, _MISSING_NAN = 0, 1, 2
_ZERO = 1e-35  # LightGBM's kZeroThreshold


@dataclass(frozen=True)
class TreeEnsemble:
    """The trees of a LightGBM text model as flat arrays over every tree's nodes.

    Internal nodes come first, then the leaves; a leaf is a node whose children are itself,
    so every row steps `depth` times through every tree at once with no bookkeeping of who
    has arrived, and a step that stays put changes nothing. `value` is a node's output as a
    leaf (LightGBM's internal value for a split node).
    """

    feature_names: tuple[str, ...]
    split_feature: np.ndarray
    threshold: np.ndarray
    decision: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int

    @classmethod
    def from_text(cls, text: str) -> TreeEnsemble:  # noqa: C901
        """Parse LightGBM's `model_to_string` (numerical splits only); ValueError otherwise."""
        header, _, rest = text.partition("\nTree=")
        names: tuple[str, ...] = ()
        for line in header.splitlines():
            if line.startswith("feature_names="):
                names = tuple(line.split("=", 1)[1].split())
        if not names or not rest:
            raise ValueError("not a LightGBM text model (no feature_names or no trees)")
        trees: list[dict[str, str]] = []
        for block in ("Tree=" + rest).split("\nTree="):
            fields: dict[str, str] = {}
            for line in block.split("end of trees", 1)[0].splitlines():
                key, sep, value = line.partition("=")
                if sep:
                    fields[key.strip()] = value.strip()
            if "num_leaves" in fields:
                trees.append(fields)
        if not trees:
            raise ValueError("the model has no trees")
        if len(trees) > MAX_TREES:
            raise ValueError(f"it has more than {MAX_TREES:,} trees")
        n_internal = sum(int(t["num_leaves"]) - 1 for t in trees)
        split_feature: list[int] = []
        threshold: list[float] = []
        decision: list[int] = []
        left: list[int] = []
        right: list[int] = []
        internal: list[float] = []
        leaves: list[float] = []
        roots: list[int] = []
        depth = 0
        for fields in trees:
            n_leaves = int(fields["num_leaves"])
            if int(fields.get("num_cat", "0")) != 0:
                raise ValueError("categorical splits are not supported")
            values = [float(v) for v in fields["leaf_value"].split()]
            if len(values) != n_leaves:
                raise ValueError("a tree's leaf values do not match its leaf count")
            node_base, leaf_base = len(split_feature), n_internal + len(leaves)
            leaves += values
            if n_leaves == 1:
                roots.append(leaf_base)
                continue

            def place(child: int, node_base: int = node_base, leaf_base: int = leaf_base) -> int:
                return child + node_base if child >= 0 else leaf_base + ~child

            kids_l = [int(v) for v in fields["left_child"].split()]
            kids_r = [int(v) for v in fields["right_child"].split()]
            split_feature += [int(v) for v in fields["split_feature"].split()]
            threshold += [float(v) for v in fields["threshold"].split()]
            decision += [int(v) for v in fields["decision_type"].split()]
            internal += [float(v) for v in fields["internal_value"].split()]
            if {len(kids_l), len(kids_r), len(split_feature) - node_base} != {n_leaves - 1} or (
                len(threshold) != len(split_feature)
                or len(decision) != len(split_feature)
                or len(internal) != len(split_feature)
            ):
                raise ValueError("a tree's splits do not match its leaf count")
            depth = max(depth, _depth(kids_l, kids_r))  # a tree, checked, before its nodes count
            left += [place(c) for c in kids_l]
            right += [place(c) for c in kids_r]
            roots.append(node_base)
        if any(d & 1 for d in decision):
            raise ValueError("categorical splits are not supported")
        if any(not 0 <= f < len(names) for f in split_feature):
            raise ValueError("a split names a feature the model does not have")
        n_leaves_all = len(leaves)
        itself = list(range(n_internal, n_internal + n_leaves_all))
        return cls(
            feature_names=names,
            split_feature=np.asarray(split_feature + [0] * n_leaves_all, dtype=np.int64),
            threshold=np.asarray(threshold + [0.0] * n_leaves_all, dtype=np.float64),
            decision=np.asarray(decision + [0] * n_leaves_all, dtype=np.int64),
            left=np.asarray(left + itself, dtype=np.int64),
            right=np.asarray(right + itself, dtype=np.int64),
            value=np.asarray(internal + leaves, dtype=np.float64),
            roots=np.asarray(roots, dtype=np.int64),
            depth=depth,
        )

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    def _step(self, x: np.ndarray, node: np.ndarray, at: np.ndarray, *, plain: bool) -> np.ndarray:
        """The child each (node, row) pair goes to, as LightGBM decides it; `at` is each
        pair's row offset in the flattened `x`, `plain` says no value can be missing."""
        value = x[at + self.split_feature[node]]
        if plain:
            go_left = value <= self.threshold[node]
        else:
            kind = self.decision[node]
            missing = (kind >> 2) & 3
            nan = np.isnan(value)
            value = np.where(nan & (missing != _MISSING_NAN), 0.0, value)
            is_missing = ((missing == _MISSING_ZERO) & (value > -_ZERO) & (value <= _ZERO)) | (
                (missing == _MISSING_NAN) & nan
            )
            go_left = np.where(is_missing, (kind & 2) != 0, value <= self.threshold[node])
        return np.asarray(np.where(go_left, self.left[node], self.right[node]))

    def _walk(self, x: np.ndarray, *, explain: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Every tree's leaf for every row (trees x rows), and with `explain` each row's
        score change per feature along its paths (rows x features)."""
        n = x.shape[0]
        n_features = len(self.feature_names)
        state = np.repeat(self.roots[:, None], n, axis=1).ravel()
        at = np.tile(np.arange(n) * n_features, self.roots.size)
        flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
        # LightGBM reads a zero as missing only in nodes that say so; NaN only when present.
        plain = not self._zero_missing and not bool(np.isnan(flat).any())
        contrib = np.zeros(n * n_features) if explain else None
        for _ in range(self.depth):
            child = self._step(flat, state, at, plain=plain)
            if contrib is not None:
                contrib += np.bincount(
                    at + self.split_feature[state],
                    weights=self.value[child] - self.value[state],
                    minlength=contrib.size,
                )
            state = child
        leaves = state.reshape(self.roots.size, n)
        return leaves, None if contrib is None else contrib.reshape(n, n_features)

    @property
    def _zero_missing(self) -> bool:
        return bool((((self.decision >> 2) & 3) == _MISSING_ZERO).any())

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The raw score of every row (higher ranks first)."""
        if x.shape[0] == 0:
            return np.zeros(0)
        leaves, _ = self._walk(x, explain=False)
        return np.asarray(self.value[leaves].sum(axis=0))

    def expected(self) -> float:
        """The score before any split: the sum of the trees' root values."""
        return float(self.value[self.roots].sum())

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """Each row's score split over the features: `expected() + row sum == predict`."""
        if x.shape[0] == 0:
            return np.zeros((0, len(self.feature_names)))
        _, contrib = self._walk(x, explain=True)
        return np.asarray(contrib)


def _depth(left: Sequence[int], right: Sequence[int]) -> int:
    """The number of splits on a tree's longest path (a child < 0 is leaf ~child), walked once
    from the root; ValueError when the children are not one tree (a node reached twice, so a
    cycle, or never, or out of range) or it is deeper than `MAX_TREE_DEPTH`."""
    n = len(left)
    reached = bytearray(n)
    leaves = bytearray(n + 1)
    reached[0] = 1
    deepest = 0
    todo = [(0, 1)]
    while todo:
        node, level = todo.pop()
        if level > MAX_TREE_DEPTH:
            raise ValueError(f"a tree is deeper than {MAX_TREE_DEPTH} splits")
        deepest = max(deepest, level)
        for child in (left[node], right[node]):
            if child >= 0:
                if child >= n or reached[child]:
                    raise ValueError("a tree's splits do not form a tree")
                reached[child] = 1
                todo.append((child, level + 1))
            else:
                if ~child > n or leaves[~child]:
                    raise ValueError("a tree's leaves do not form a tree")
                leaves[~child] = 1
    if not all(reached) or not all(leaves):
        raise ValueError("a tree's splits do not form a tree")
    return deepest


@dataclass(frozen=True)
class LearnedModel:
    """A learned ranking model and what it says about itself (from the JSON beside it)."""

    trees: TreeEnsemble
    source: str  # "shipped", "tuned" or a file path, as notes name it
    meta: dict[str, object]

    @classmethod
    def load(cls, path: Path, source: str = "") -> LearnedModel:
        """Read a model text and the JSON beside it (`<name>.json`), checking its features."""
        how = "give a model file written by `coderag tune` or training/train_ranker.py"
        try:
            text = _read_small(path)
        except OSError as exc:
            raise ModelError(
                f"cannot read the learned model {path} ({exc.strerror}): {how}."
            ) from exc
        except ValueError as exc:
            raise ModelError(f"the learned model {path} is {exc}: {how}.") from exc
        meta_path = path.with_suffix(".json")
        meta: dict[str, object] = {}
        if meta_path.is_file():
            try:
                loaded = parse_json(_read_small(meta_path))
            except (OSError, ValueError, RecursionError) as exc:
                raise ModelError(f"{meta_path} is not valid JSON: write the model again.") from exc
            if isinstance(loaded, dict):
                meta = loaded
        return cls.from_text(text, source or str(path), meta, where=str(path))

    @classmethod
    def from_text(
        cls, text: str, source: str, meta: dict[str, object], where: str = "the model"
    ) -> LearnedModel:
        try:
            trees = TreeEnsemble.from_text(text)
        except ValueError as exc:
            raise ModelError(
                f"{where} is not a usable LightGBM ranking model ({exc}): write it again."
            ) from exc
        if trees.feature_names != FEATURE_NAMES:
            raise ModelError(
                f"{where} was trained on other features than this coderag computes: run "
                "`coderag tune` again (or remove it to use the shipped model)."
            )
        if meta.get("format", MODEL_FORMAT) != MODEL_FORMAT:
            raise ModelError(f"{where} is of another format: run `coderag tune` again.")
        return cls(trees, source, meta)

    @classmethod
    def shipped(cls) -> LearnedModel:
        """The model that ships inside the package (trained by training/train_ranker.py)."""
        folder = resources.files("coderag_tui.core.rank")
        text = folder.joinpath(SHIPPED_MODEL).read_text(encoding="utf-8")
        meta_file = folder.joinpath(SHIPPED_MODEL.replace(".txt", ".json"))
        meta = parse_json(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
        return cls.from_text(text, "shipped", meta, where=f"the shipped {SHIPPED_MODEL}")


class LearnedReranker:
    """Reorders the fused top N by a learned model's score (see the module docstring)."""

    def __init__(self, model: LearnedModel) -> None:
        self.model = model
        self.name = f"learned ({model.source})"
        penalty = model.meta.get("file_penalty", 0.0)
        self.file_penalty = float(penalty) if isinstance(penalty, (int, float)) else 0.0

    def warm_up(self) -> None:
        """Run the trees once, so the first search's timing is honest."""
        self.model.trees.predict(np.zeros((2, len(FEATURE_NAMES))))

    def rerank(self, c: Candidates, n: int = LEARNED_CANDIDATES) -> list[Scored]:
        """The fused top `n` by the model's score (ties keep the fused order), each with its
        `why`, then the rest of the fused list as it was, scored as the last reranked one."""
        ids, x = candidate_features(c, max(n, 1))
        if not ids.size:
            return []
        trees = self.model.trees
        parts = trees.contributions(x)  # one walk: the parts, and the scores as their sums
        expected = trees.expected()
        scores = expected + parts.sum(axis=1)
        fids = c.facts.file_of_array[ids]
        penalty = spread(scores, fids, self.file_penalty)
        scores = scores + penalty
        order = np.lexsort((np.arange(ids.size), -scores))
        whys: dict[int, tuple[tuple[str, float], ...]] = {}
        for row in order[:EXPLAINED_HITS].tolist():
            why = explain(float(scores[row] - penalty[row]), expected, parts[row])
            if penalty[row]:
                why += ((SAME_FILE, float(penalty[row])),)
            whys[row] = why
        out: list[Scored] = []
        for row in order.tolist():
            why = whys.get(row) or ((BIAS, float(scores[row])),)
            out.append((int(ids[row]), float(scores[row]), why))
        floor = float(scores[order[-1]])
        out += [(i, floor, ((NOT_RERANKED, floor),)) for i, _, _ in c.fused[ids.size :]]
        return out


def spread(scores: np.ndarray, fids: np.ndarray, penalty: float) -> np.ndarray:
    """What each candidate loses for the better candidates of its own file: `penalty` spreads
    of the scores (their standard deviation) per such chunk, so one file does not fill the
    list (a file counts once for a question about files). Zeros with no penalty."""
    out = np.zeros(scores.size)
    if penalty <= 0 or scores.size < 2:
        return out
    step = penalty * float(np.std(scores))
    before: dict[int, int] = {}
    for row in np.lexsort((np.arange(scores.size), -scores)).tolist():
        fid = int(fids[row])
        k = before.get(fid, 0)
        out[row] = -step * k
        before[fid] = k + 1
    return out


def explain(score: float, expected: float, contrib: np.ndarray) -> tuple[tuple[str, float], ...]:
    """A score as the sum it is: the model's expected score, the `EXPLAINED` largest feature
    parts (by size) and the rest of them as one part."""
    size = np.abs(contrib)
    top = (
        np.argpartition(-size, EXPLAINED)[:EXPLAINED]
        if size.size > EXPLAINED
        else np.arange(size.size)
    )
    biggest = top[np.lexsort((top, -size[top]))]  # by size, ties by feature order
    named = [(FEATURES[int(f)][1], float(contrib[f])) for f in biggest]
    named = [(label, value) for label, value in named if value != 0.0]
    rest = score - expected - sum(value for _, value in named)
    parts = [(BIAS, expected), *named]
    if abs(rest) > 1e-9:
        parts.append((OTHERS, rest))
    return tuple(parts)
