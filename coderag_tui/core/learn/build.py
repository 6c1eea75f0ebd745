"""The learned reranker's training rows: each history pair searched as the engine searches it.

For each pair (oldest first) a followed folder is moved to the parent commit and its index
brought up to date (only the files that changed are read again), every query of the pair is
searched with the engine, dense off and, when an embedder is given, dense on, and the fused
top N with its features (`core.rank.learned.candidate_features`, recorded through the same
seam the learned reranker uses) becomes one query group labelled 2 for a chunk its commit's
hunks touched, 1 for another chunk of a file it changed and 0 otherwise.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coderag_tui.core.capped import parse_json
from coderag_tui.core.engine import Dense, Engine, Rerank
from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.learn.history import FollowedTree, HistoryPair
from coderag_tui.core.rank.learned import (
    FEATURE_NAMES,
    LEARNED_CANDIDATES,
    Candidates,
    LearnedReranker,
    candidate_features,
)
from coderag_tui.core.rank.signals import Scored

if TYPE_CHECKING:
    from coderag_tui.core.rank.embed import Embedder
    from coderag_tui.settings import Settings

HUNK, FILE, OTHER = 2, 1, 0  # the labels
DESCRIBED = 2  # the variant of a doc comment's question (`training/descriptions.py`)


class FeatureRecorder(LearnedReranker):
    """A reranker that keeps the fused order and records the candidates' features."""

    def __init__(self) -> None:
        self.name = "feature recorder"
        self.last: tuple[np.ndarray, np.ndarray] | None = None

    def warm_up(self) -> None:
        pass

    def rerank(self, c: Candidates, n: int = LEARNED_CANDIDATES) -> list[Scored]:
        self.last = candidate_features(c, n)
        return list(c.fused)


@dataclass(frozen=True, kw_only=True)
class QueryGroup:
    """One query's candidates: features (rows in fused order), labels and file ids."""

    repo: str
    sha: str
    variant: int  # 0: the subject alone; 1: the whole message; 2: a doc comment (DESCRIBED)
    dense: bool
    x: np.ndarray
    y: np.ndarray
    files: np.ndarray
    gold_files: int  # answering files in the index (a gold file may be skipped, or absent)

    @property
    def useful(self) -> bool:
        """Whether training can learn from it (some candidate answers)."""
        return bool(self.y.any())


@dataclass(frozen=True)
class BuildProgress:
    """Where a build is: pairs done of a repository's total."""

    repo: str
    done: int
    total: int


def labels(chunks: ChunkList, ids: np.ndarray, pair: HistoryPair) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's label (see `HUNK`) and file id."""
    gold = dict(pair.gold)
    y = np.zeros(ids.size, dtype=np.int8)
    files = chunks.file_of[ids].astype(np.int32)
    for row, i in enumerate(ids.tolist()):
        spans = gold.get(chunks.path(i))
        if spans is None:
            continue
        start, end = int(chunks.starts[i]), int(chunks.ends[i])
        hit = any(a <= end and b >= start for a, b in spans)
        y[row] = HUNK if hit else FILE
    return y, files


def build_groups(  # noqa: PLR0913
    repo: str,
    git_dir: Path,
    pairs: Sequence[HistoryPair],
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    progress: Callable[[BuildProgress], None] | None = None,
    cancel: threading.Event | None = None,
    tree: FollowedTree | None = None,
    variant: int | None = None,
) -> list[QueryGroup]:
    """Search every query of `pairs` at its parent commit in a followed copy of the
    repository (`settings.repo`, a folder of its own) and return the query groups. `tree`:
    that copy, already at the pairs' commit (`training/descriptions.py`); `variant`: the
    groups' variant, when not the query's place in its pair."""
    tree = tree if tree is not None else FollowedTree(git_dir, settings.repo)
    recorder = FeatureRecorder()
    settings = settings.with_(rerank=True, rerank_backend="learned")
    groups: list[QueryGroup] = []
    engine = Engine(settings)
    try:
        for done, pair in enumerate(pairs):
            if cancel is not None and cancel.is_set():
                break
            tree.checkout(pair.parent)
            lexical = engine.update_index(settings)
            engine.use(lexical)
            chunks = lexical.chunks
            if not isinstance(chunks, ChunkList) or not len(chunks):
                continue
            present = sum(1 for path in pair.gold_files if path in set(chunks.paths))
            stages: list[tuple[bool, Dense]] = [(False, Dense(reason="off for training"))]
            if embedder is not None:
                stages.append((True, engine.open_dense(settings, lexical, embedder=embedder)))
            engine.use(Rerank(recorder))
            for dense_on, stage in stages:
                engine.use(stage)
                for n, query in enumerate(pair.queries):
                    recorder.last = None
                    engine.search(query, settings)
                    if recorder.last is None:
                        continue
                    ids, x = recorder.last
                    y, files = labels(chunks, ids, pair)
                    groups.append(
                        QueryGroup(
                            repo=repo,
                            sha=pair.sha,
                            variant=n if variant is None else variant,
                            dense=dense_on,
                            x=x.astype(np.float32),
                            y=y,
                            files=files,
                            gold_files=present,
                        )
                    )
            if progress is not None:
                progress(BuildProgress(repo, done + 1, len(pairs)))
    finally:
        engine.close()
    return groups


# --- saving -----------------------------------------------------------------------------------


def save_groups(path: Path, groups: Sequence[QueryGroup], meta: dict[str, Any]) -> None:
    """Write groups to `path` (.npz) with their description (`meta`, JSON inside)."""
    sizes = np.array([g.y.size for g in groups], dtype=np.int32)
    rows = int(sizes.sum())
    x = np.concatenate([g.x for g in groups]) if groups else np.zeros((0, len(FEATURE_NAMES)))
    y = np.concatenate([g.y for g in groups]) if groups else np.zeros(0, dtype=np.int8)
    files = np.concatenate([g.files for g in groups]) if groups else np.zeros(0, dtype=np.int32)
    info = [
        {"repo": g.repo, "sha": g.sha, "variant": g.variant, "dense": g.dense,
         "gold_files": g.gold_files}
        for g in groups
    ]  # fmt: skip
    assert x.shape[0] == rows
    payload = {"features": list(FEATURE_NAMES), "groups": info, **meta}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial.npz")
    np.savez_compressed(
        tmp, x=x.astype(np.float32), y=y, files=files, sizes=sizes,
        meta=np.frombuffer(json.dumps(payload).encode(), dtype=np.uint8),
    )  # fmt: skip
    tmp.replace(path)


def load_groups(path: Path) -> tuple[list[QueryGroup], dict[str, Any]]:
    """The groups saved by `save_groups`, and their description; ValueError when the file
    was written for other features."""
    with np.load(path, allow_pickle=False) as data:
        meta = parse_json(bytes(data["meta"]).decode())
        if tuple(meta.get("features", ())) != FEATURE_NAMES:
            raise ValueError(f"{path} holds other features than this coderag computes")
        x, y, files, sizes = data["x"], data["y"], data["files"], data["sizes"]
    groups: list[QueryGroup] = []
    at = 0
    for info, size in zip(meta["groups"], sizes.tolist(), strict=True):
        groups.append(
            QueryGroup(
                repo=info["repo"],
                sha=info["sha"],
                variant=int(info["variant"]),
                dense=bool(info["dense"]),
                x=x[at : at + size],
                y=y[at : at + size],
                files=files[at : at + size],
                gold_files=int(info["gold_files"]),
            )
        )
        at += size
    return groups, meta
