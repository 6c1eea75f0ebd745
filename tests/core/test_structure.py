"""The structure-aware lists: path distance, and related files put before the lexical list."""

from __future__ import annotations

import pytest

from coderag_tui.core.rank.structure import (
    chunks_first,
    import_files,
    path_distance,
    path_distance_files,
)


@pytest.mark.parametrize(
    ("a", "b", "steps"),
    [
        ("pkg/a.py", "pkg/b.py", 0),
        ("pkg/a.py", "pkg/sub/c.py", 1),
        ("pkg/sub/c.py", "pkg/a.py", 1),
        ("pkg/x/a.py", "pkg/y/b.py", 2),
        ("a.py", "pkg/sub/c.py", 2),
        ("a.py", "b.py", 0),
    ],
)
def test_path_distance_counts_folder_steps(a: str, b: str, steps: int) -> None:
    assert path_distance(a, b) == steps


def test_path_distance_list_puts_near_files_first_then_backfills() -> None:
    every = ["pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/sub/d.py", "other/e.py", "pkg/x/y/f.py"]
    ranked = ["other/e.py", "pkg/sub/d.py", "pkg/c.py", "pkg/a.py"]  # the lexical list
    got = path_distance_files("pkg/a.py", ranked, every)
    # same folder (c ranked, b not) before the folder below (d), then the lexical rest
    assert got == ["pkg/c.py", "pkg/b.py", "pkg/sub/d.py", "other/e.py", "pkg/a.py"]


def test_import_list_orders_related_files_by_lexical_rank_then_backfills() -> None:
    ranked = ["z.py", "b.py", "q.py"]
    got = import_files("o.py", ["a.py", "b.py", "o.py"], ranked)
    assert got == ["b.py", "a.py", "z.py", "q.py"]
    # nothing related: the lexical list unchanged
    assert import_files("o.py", [], ranked) == ranked


def test_chunks_first_takes_whole_files_in_lexical_order_within_each() -> None:
    file_chunks = {"a.py": [0, 1, 2], "b.py": [3, 4]}
    ranked = [4, 2, 9]  # chunk 9 is of a file not listed
    assert chunks_first(["a.py", "b.py"], ranked, file_chunks) == [2, 0, 1, 4, 3, 9]
