"""The structure-aware lists in an evaluation: `path-distance` and `imports` (the seed
paper's), each a file list made from a run's lexical list and the query's origin file.

The import graph of a tree is read once (tree-sitter over every file the index holds,
`core.index.imports`) and shared by its rows and chunkings; a row without an origin (an
issue, a plain question) has no such list, and the run's notes say why.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path

from coderag_tui.core.index.chunk_list import ChunkList
from coderag_tui.core.index.imports import ImportGraph
from coderag_tui.core.rank.structure import (
    IMPORTS,
    NO_ORIGIN,
    PATH_DISTANCE,
    STRUCTURE_LISTS,
    import_files,
    path_distance_files,
)
from coderag_tui.core.records import Chunk, SearchRun

__all__ = ["STRUCTURE_LISTS", "StructureLists"]


def _reader(tree: Path) -> Callable[[str], bytes | None]:
    """Reads a file of the tree; None for one that is missing or leads out of it by a link."""
    root = os.path.realpath(tree)

    def read(path: str) -> bytes | None:
        full = os.path.realpath(os.path.join(root, path))
        if not full.startswith(root + os.sep):
            return None
        try:
            return Path(full).read_bytes()
        except OSError:
            return None

    return read


class StructureLists:
    """The structure-aware file lists of one tree and chunking."""

    def __init__(
        self,
        tree: Path,
        chunks: Sequence[Chunk],
        graphs: MutableMapping[Path, ImportGraph],
        notes: list[str],
    ) -> None:
        self.tree = tree
        if isinstance(chunks, ChunkList):
            self.files: tuple[str, ...] = tuple(chunks.paths)
        else:
            self.files = tuple(dict.fromkeys(c.path for c in chunks))
        self._graphs = graphs
        self._notes = notes

    def graph(self) -> ImportGraph:
        """The tree's import graph, read on first use and noted with what it cost."""
        if self.tree not in self._graphs:
            started = time.perf_counter()
            graph = ImportGraph.build(self.files, _reader(self.tree))
            edges = sum(len(v) for v in graph.imports.values())
            self._notes.append(
                f"imports: {self.tree.name}: {len(graph.imports)} files read, {edges} imports "
                f"of repository files, in {time.perf_counter() - started:.1f} s."
            )
            self._graphs[self.tree] = graph
        return self._graphs[self.tree]

    def files_for(
        self, mode: str, run: SearchRun, accepts: Callable[[str], bool]
    ) -> list[str] | None:
        """The mode's candidate files in rank order, or None when the query has no origin
        (or the lexical list is unavailable)."""
        if run.origin is None or not run.origin.paths:
            return None
        lexical = next((r for name, r in run.rankings.items() if name == "bm25"), None)
        if lexical is None or not lexical.available:
            return None
        origin = run.origin.paths[0]
        ranked = [f.path for f in run.files("bm25")]
        if mode == PATH_DISTANCE:
            files = path_distance_files(origin, ranked, self.files)
        elif mode == IMPORTS:
            files = import_files(origin, self.graph().related(origin), ranked)
        else:
            raise ValueError(f"{mode!r} is not a structure-aware list")
        return [p for p in files if accepts(p)]

    @staticmethod
    def reason(run: SearchRun) -> str:
        """Why a run has no structure-aware list."""
        return NO_ORIGIN if run.origin is None else "the lexical list is unavailable"
