"""The learned ranker is trained only on repositories outside every public benchmark.

training/repos.json is the training list (owner/name@commit); training/benchmark_repos.json
holds the benchmarks' repositories as data (semble's 62, SWE-bench full with its dev split,
Lite and Verified being subsets of it, Multilingual, Multimodal, other harness repositories,
and the dev sets'). The shipped model's description names the repositories it was fitted on.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAINING = json.loads((ROOT / "training" / "repos.json").read_text(encoding="utf-8"))
BENCHMARKS = json.loads((ROOT / "training" / "benchmark_repos.json").read_text(encoding="utf-8"))
REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _names(entries: list[str]) -> set[str]:
    return {name.lower() for name in entries}


def _benchmark_names() -> set[str]:
    return {
        name.lower()
        for key, value in BENCHMARKS.items()
        if key != "about"
        for name in value["repos"]
    }


def test_the_benchmark_lists_are_complete_where_their_size_is_known() -> None:
    assert len(_names(BENCHMARKS["semble"]["repos"])) == 62
    swe = _names(BENCHMARKS["swe_bench"]["repos"])
    for name in ("django/django", "sympy/sympy", "scikit-learn/scikit-learn", "pallets/flask",
                 "psf/requests", "pytest-dev/pytest", "sphinx-doc/sphinx", "astropy/astropy",
                 "matplotlib/matplotlib", "pydata/xarray", "pylint-dev/pylint",
                 "mwaskom/seaborn"):  # fmt: skip
        assert name in swe
    dev = _names(BENCHMARKS["dev_sets"]["repos"])
    assert {"pallets/click", "psf/requests", "sqlfluff/sqlfluff", "tokio-rs/axum"} <= dev
    assert all(REPO.match(name) for name in _benchmark_names())


def test_no_training_repository_is_in_a_benchmark() -> None:
    training = _names([entry["repo"] for entry in TRAINING["repositories"]])
    assert not training & _benchmark_names()


def test_every_training_entry_is_pinned_to_a_commit_and_a_language() -> None:
    entries = TRAINING["repositories"]
    assert len(entries) >= 30
    assert len({e["repo"].lower() for e in entries}) == len(entries)
    for entry in entries:
        assert REPO.match(entry["repo"]), entry
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
    languages = {e["language"] for e in entries}
    # every language coderag parses, and some it reads as line windows
    assert {"python", "javascript", "typescript", "go", "rust", "java", "kotlin", "c", "cpp",
            "ruby", "php", "c_sharp"} <= languages  # fmt: skip


@pytest.mark.parametrize("part", ["repositories", "early_stopping", "held_back"])
def test_the_shipped_model_was_fitted_on_the_training_list_only(part: str) -> None:
    folder = resources.files("coderag_tui.core.rank")
    meta = json.loads(folder.joinpath("learned_ranker.json").read_text(encoding="utf-8"))
    used = _names(meta[part])
    assert used, part
    assert used <= _names([entry["repo"] for entry in TRAINING["repositories"]])
    assert not used & _benchmark_names()
