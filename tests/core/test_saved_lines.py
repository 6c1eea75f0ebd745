"""Saved lines read a line at a time: the same lines as the text they were joined into."""

from __future__ import annotations

import bisect
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.core.rank.saved_lines import SavedLines

CASES = [[], ["a"], ["alpha", "beta", "größe"], ["a", ""], ["", "b"], ["x"] * 3]


@pytest.mark.parametrize("lines", CASES)
def test_split_lines_are_the_joined_lines(lines: list[str]) -> None:
    saved = SavedLines.split("\n".join(lines).encode("utf-8"))
    expected = lines if "\n".join(lines) else []  # one empty line saves as no text at all
    assert saved == expected and len(saved) == len(expected)
    assert saved[:] == expected and saved[::-1] == expected[::-1]
    if expected:
        assert saved[-1] == expected[-1]
    with pytest.raises(IndexError):
        saved[len(expected)]


def test_a_sorted_file_is_searched_by_bisection_and_opened_from_disk(tmp_path: Path) -> None:
    words = sorted(["zeta", "alpha", "größe", "mid", "beta"])
    saved = SavedLines.split("\n".join(words).encode("utf-8"))
    for i, word in enumerate(words):
        assert bisect.bisect_left(saved, word) == i
    entries = [w.encode("utf-8") + b"\n" for w in words]  # the definitions' layout
    (tmp_path / "lines").write_bytes(b"".join(entries))
    at = np.zeros(len(entries) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in entries], out=at[1:])
    np.save(tmp_path / "at.npy", at)
    assert SavedLines.open(tmp_path / "lines", tmp_path / "at.npy", len(words)) == words
    with pytest.raises(ValueError, match="do not match"):
        SavedLines.open(tmp_path / "lines", tmp_path / "at.npy", len(words) + 1)
