"""Scope: which files a ranking may show (--include / --exclude), and origins of several spans."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.core.records import LineSpan, Origin, Scope
from coderag_tui.settings import Settings


@pytest.mark.parametrize(
    ("path", "include", "exclude", "accepted"),
    [
        ("shop/cart.py", (), (), True),
        ("shop/cart.py", ("shop",), (), True),
        ("shop/cart.py", ("shop/",), (), True),
        ("shopping/cart.py", ("shop",), (), False),  # a folder name, not a prefix of a name
        ("shop/cart.py", ("*.py",), (), True),
        ("web/app.js", ("*.py",), (), False),
        ("tests/test_cart.py", (), ("test_*.py",), False),  # a name at any depth
        ("shop/cart.py", (), ("test_*.py",), True),
        ("tests/test_cart.py", (), ("tests/**",), False),
        ("shop/deep/x.py", ("shop/*",), (), True),  # `*` crosses folders, as in eval
        ("shop/cart.py", ("shop",), ("shop/cart.py",), False),
        ("shop/cart.py", ("/",), (), True),
    ],
)
def test_scope_accepts_paths_as_documented(
    path: str, include: tuple[str, ...], exclude: tuple[str, ...], accepted: bool
) -> None:
    assert Scope(include, exclude).accepts(path) is accepted


def _settings(repo: Path, index_dir: Path) -> Settings:
    return Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=8)


def test_a_scope_filters_every_ranking_and_says_how_much(tiny_repo: Path, index_dir: Path) -> None:
    settings = _settings(tiny_repo, index_dir)
    with Engine.open(settings) as engine:
        wide = engine.search("cart items total", settings)
        assert {h.chunk.path for h in wide.final.hits} & {"tests/test_cart.py", "web/app.js"}
        scope = Scope(include=("shop",), exclude=("shop/payment.py",))
        run = engine.search("cart items total", settings, scope=scope)
        assert run.scope == scope and run.out_of_scope > 0
        for ranking in run.rankings.values():
            for hit in ranking.hits:
                assert scope.accepts(hit.chunk.path), hit.chunk.key
        assert run.final.hits, "the scope still holds matching chunks"


def test_an_origin_of_several_spans_leaves_out_each_span_s_chunks(
    tiny_repo: Path, index_dir: Path
) -> None:
    settings = _settings(tiny_repo, index_dir)
    origin = Origin((LineSpan("shop/cart.py", 17, 18), LineSpan("shop/payment.py", 10, 11)))
    assert origin.paths == ("shop/cart.py", "shop/payment.py")
    assert origin.describe() == "shop/cart.py and 1 other file"
    with Engine.open(settings) as engine:
        run = engine.search("def add item charge card retries", settings, origin)
        assert run.left_out >= 2
        for ranking in run.rankings.values():
            for hit in ranking.hits:
                c = hit.chunk
                for span in origin.spans:
                    touches = c.start_line <= span.end_line and c.end_line >= span.start_line
                    assert not (c.path == span.path and touches), c.key


def test_scope_patterns_stay_inside_the_repository(tmp_path: Path) -> None:
    from coderag_tui.core.given_paths import LocationError, scope_pattern

    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside, target_is_directory=True)
    (repo / "alias").symlink_to(repo / "src", target_is_directory=True)
    assert scope_pattern(repo, "src/") == "src/"
    assert scope_pattern(repo, "src") == "src"
    assert scope_pattern(repo, "*.py") == "*.py"
    assert scope_pattern(repo, "src/**/test_*.py") == "src/**/test_*.py"
    assert scope_pattern(repo, str(repo / "src" / "deep")) == "src/deep"
    assert scope_pattern(repo, f"{repo}/src/*.py") == "src/*.py"
    assert scope_pattern(repo, str(repo)) == "."
    assert scope_pattern(repo, "alias/x.py") == "src/x.py"  # the index names real paths
    for bad in ("../x", "src/../../x", "/etc", "/etc/*.conf", "out/", "out/*.py", "~/", ""):
        with pytest.raises(LocationError):
            scope_pattern(repo, bad)
