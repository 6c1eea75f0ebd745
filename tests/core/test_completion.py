"""The completion task on a tiny real repository in two languages: which lines become rows,
their gold and query, the same rows from the same seed, and a run that packs the definition."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from coderag_tui.core.eval.completion import (
    BUDGETS,
    completion_rows,
    completion_task,
    run_completion,
)
from coderag_tui.core.eval.evaluation import Grid
from coderag_tui.core.eval.figures import figures, html_report
from coderag_tui.settings import Settings
from tests.fixtures.completion_repo import make_repo


def _settings(repo: Path, index_dir: Path) -> Settings:
    return Settings(repo=repo, index_dir=index_dir)


def test_rows_are_uses_of_names_defined_in_one_other_file(tmp_path: Path, index_dir: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    task = completion_task(_settings(repo, index_dir), 50, query_lines=3)
    got = {(r.path, r.line, r.name, r.gold, r.gold_line, r.kind) for r in task.rows}
    assert got == {
        ("app/main.py", 15, "Circle", "geometry/shapes.py", 6, "type"),
        ("app/main.py", 16, "area_of", "geometry/shapes.py", 13, "function"),
        ("web/page.js", 6, "renderBadge", "web/widgets.js", 3, "function"),
    }  # not the import lines, the comment, nor shared_helper (defined in two files)
    assert task.available == 3 and task.files == 2
    circle = next(r for r in task.rows if r.name == "Circle")
    assert circle.query == "def report(radii):\n    total = 0\n    for radius in radii:"
    assert circle.query_start == 12
    assert circle.eval_row().gold_files == ("geometry/shapes.py",)
    assert {r.language for r in task.rows} == {"python", "javascript"}


def test_the_same_seed_draws_the_same_rows(tmp_path: Path, index_dir: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    settings = _settings(repo, index_dir)
    first = completion_rows(settings, 2, seed=7)
    assert completion_rows(settings, 2, seed=7) == first
    assert len(first) == 2
    # one file at a time: two rows come from the two files that have targets
    assert {r.path for r in first} == {"app/main.py", "web/page.js"}
    drawn = {tuple(r.id for r in completion_rows(settings, 2, seed=s)) for s in range(12)}
    assert len(drawn) > 1  # the seed decides which line of app/main.py is drawn


def test_a_run_finds_the_defining_file_and_packs_the_definition(
    tmp_path: Path, index_dir: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    settings = _settings(repo, index_dir)
    rows = completion_rows(settings, 10)
    report = run_completion(
        rows, settings, Grid(modes=("bm25",), chunkings=("lines:8",)), resamples=50
    )
    assert len(report.instances) == len(rows) == 3
    for result in report.instances:
        assert result.gold_rank is not None
        assert result.packed is not None
        assert set(result.packed) == set(BUDGETS)
        # the whole repository fits in 16k tokens: the definition is in that prompt
        assert result.packed[16000] is True
    (summary,) = report.summaries
    assert summary.packed is not None and summary.packed[16000] == 1.0
    assert summary.packed[128] <= summary.packed[16000]
    assert [f.metric for f in figures(report)][:1] == ["packed"]


def test_a_run_takes_the_grids_splitters_scorers_and_structure_lists(
    tmp_path: Path, index_dir: Path
) -> None:
    """The completion task is where the seed paper's axes are measured: BPE tokens, the IoU
    scorer and the imports list run on its rows as on any dataset's."""
    repo = make_repo(tmp_path / "repo")
    settings = _settings(repo, index_dir)
    rows = completion_rows(settings, 10)
    grid = Grid(
        modes=("bm25", "imports"),
        chunkings=("lines:8",),
        tokenizers=("split+path", "bpe"),
        scorers=("bm25", "iou"),
    )
    report = run_completion(rows, settings, grid, resamples=50)
    labels = {(r.mode, r.tokenizer) for r in report.instances}
    assert labels == {
        (mode, tok)
        for mode in ("bm25", "imports")
        for tok in ("split+path", "split+path/iou", "bpe", "bpe/iou")
    }
    # each row's file imports the defining file: the imports list puts it first
    assert {r.gold_rank for r in report.instances if r.mode == "imports"} == {1}
    assert not any("unavailable" in note for note in report.notes)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


HOSTILE = '<img src=x onerror="alert(1)">'


def test_the_report_escapes_hostile_file_names_and_code(tmp_path: Path, index_dir: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hostile = repo / "app" / f"{HOSTILE}.py"
    hostile.write_text(
        'def build():\n    note = "</pre><script>alert(2)</script>"\n    return Circle(1)\n',
        encoding="utf-8",
    )
    settings = _settings(repo, index_dir)
    task = completion_task(settings, 10)
    assert any(HOSTILE in r.path for r in task.rows)
    report = run_completion(
        task.rows, settings, Grid(modes=("bm25",), chunkings=("lines:8", "lines:16")), resamples=50
    )
    page = html_report(report, task)
    parser = _Elements()
    parser.feed(page)
    tags = {tag for tag, _ in parser.tags}
    assert "script" not in tags and "img" not in tags
    for _, attrs in parser.tags:
        assert not any(name.startswith("on") for name, _ in attrs)
        assert not any(name in ("src", "href") for name, _ in attrs)  # nothing loads
    text = "".join(parser.text)
    assert HOSTILE in text  # shown as text, whole
    assert "<script>alert(2)</script>" in text
    assert tags >= {"svg", "polyline", "table"}


@pytest.mark.parametrize("n", [0, -1])
def test_no_rows_for_no_n(tmp_path: Path, index_dir: Path, n: int) -> None:
    repo = make_repo(tmp_path / "repo")
    assert completion_rows(_settings(repo, index_dir), n) == []


def test_a_method_reached_through_this_or_a_variable_is_no_row(
    tmp_path: Path, index_dir: Path
) -> None:
    """`this.get(` in one file and `res.get = function` in another are unrelated; `Circle.of(`
    reaches the class's method; `text.split(` is a string's."""
    repo = tmp_path / "repo"
    (repo / "lib").mkdir(parents=True)
    (repo / "lib" / "response.js").write_text(
        "const res = {};\nres.get = function get(field) {\n  return field;\n};\n"
    )
    (repo / "lib" / "app.js").write_text(
        "function route(path) {\n  return path;\n}\n\nexports.mount = function () {\n"
        "  this.get('/');\n  route('/');\n};\n"
    )
    (repo / "shapes.py").write_text(
        "class Circle:\n    @classmethod\n    def unit_circle(cls):\n        return cls()\n\n\n"
        "def split_words(text):\n    return text.split()\n"
    )
    (repo / "main.py").write_text(
        "import shapes\n\n\ndef run(text):\n    words = text.split_words()\n"
        "    return shapes.Circle.unit_circle()\n"
    )
    rows = completion_rows(_settings(repo, index_dir), 10, query_lines=5)
    assert {(r.id, r.name) for r in rows} == {("main.py:6", "Circle")}


def test_a_bare_call_of_a_name_only_a_method_defines_is_no_row(
    tmp_path: Path, index_dir: Path
) -> None:
    """requests' `setup()` in setup.py is setuptools', not a test class's `def setup(self)`."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_things.py").write_text(
        "class TestThings:\n    def setup_things(self):\n        self.things = []\n"
    )
    (repo / "tests" / "helpers.py").write_text("def make_thing():\n    return 1\n")
    (repo / "setup.py").write_text(
        "from setuptools import setup_things\n\nsetup_things()\nmake_thing()\n"
    )
    rows = completion_rows(_settings(repo, index_dir), 10)
    assert {(r.id, r.name) for r in rows} == {("setup.py:4", "make_thing")}
