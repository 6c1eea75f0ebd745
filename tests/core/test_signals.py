"""Code signals on tiny real repositories: the order a user expects from the fused list.

Each repository is written to disk and indexed by the Engine with dense off, so the fused list
is BM25 plus the signals, and the raw BM25 list beside it shows what the signals changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core.engine import Engine
from coderag_tui.core.records import RankingName, SearchRun
from coderag_tui.settings import Settings

PYTHON_REPO: dict[str, str] = {
    "webapp/__init__.py": '"""A tiny web framework."""\n',
    "webapp/routing.py": '''"""Routing: how routes are matched and registered."""


class APIRouter:
    """Groups routes; an app includes routers."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.routes: list[tuple[str, object]] = []

    def add_api_route(self, path: str, endpoint: object) -> None:
        """Register an endpoint under the router's prefix."""
        self.routes.append((self.prefix + path, endpoint))

    def get(self, path: str):
        def decorator(func):
            self.add_api_route(path, func)
            return func
        return decorator


def match(routes, path):
    for pattern, endpoint in routes:
        if pattern == path:
            return endpoint
    return None
''',
    "webapp/applications.py": '''"""The application object."""

from webapp.routing import APIRouter


class App:
    def __init__(self) -> None:
        self.router = APIRouter()

    def include_router(self, router: APIRouter) -> None:
        for path, endpoint in router.routes:
            self.router.add_api_route(path, endpoint)
''',
    "webapp/config.py": '''"""Reading settings."""

import json


def parse_config(text: str) -> dict:
    """Parse the JSON settings of an app."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TypeError("settings must be an object")
    return data
''',
    "tests/test_routing.py": """from webapp.routing import APIRouter
from webapp.applications import App


def test_routes_are_registered():
    router = APIRouter()
    router.add_api_route("/a", print)
    routes = router.routes
    assert routes == [("/a", print)]  # routes registered


def test_api_router_routes_are_registered_in_the_app():
    app = App()
    router = APIRouter(prefix="/v1")
    router.add_api_route("/items", print)
    app.include_router(router)
    assert app.router.routes  # routes registered through APIRouter
    assert isinstance(app.router, APIRouter)
""",
    "CHANGELOG.md": """# Changelog

## 0.3
- Routes are registered in the order they are declared; how routes are registered is
  now documented. Registered routes keep their prefix.
- APIRouter routes registered twice raise an error.

## 0.2
- Routes registered on an APIRouter can be included in an app.
""",
}

GO_REPO: dict[str, str] = {
    "config/loader.go": """package config

// ParseConfig reads the settings file of a server.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	err := decode(data, &c)
	return c, err
}

type Config struct {
	Port int
}
""",
    "server/server.go": """package server

// Start parses the config, parses the flags and serves; config parse errors stop it.
func Start(args []string) error {
	flags := parseFlags(args)          // parse the flags
	cfg, err := loadConfig(flags.path) // parse the config file
	if err != nil {
		return err // a config that does not parse
	}
	return serve(cfg)
}
""",
    "server/flags.go": """package server

// parseFlags parses the command line into flags; config comes later.
func parseFlags(args []string) Flags {
	return Flags{path: args[0]}
}
""",
}

RUBY_REPO: dict[str, str] = {
    "lib/sinatra/base.rb": """module Sinatra
  # The base application class every app inherits from.
  class Base
    def call(env)
      dup.call!(env)
    end

    def self.get(path, &block)
      route("GET", path, &block)
    end
  end
end
""",
    "lib/sinatra/main.rb": """module Sinatra
  # The classic application: Base with the top-level DSL.
  class Application < Base
    set :logging, true
  end
end
""",
    "lib/sinatra/helpers.rb": """module Sinatra
  module Helpers
    # Sinatra helpers used by Sinatra apps; Sinatra::Base includes them in Sinatra.
    def halt(*response)
      throw :halt, response
    end
  end
end
""",
}


def index_and_search(repo: Path, index_dir: Path, query: str, **kw: Any) -> SearchRun:
    settings = Settings(
        repo=repo,
        index_dir=index_dir,
        embed_backend="none",
        chunk_lines=12,
        **kw,
    )
    with Engine.open(settings) as engine:
        return engine.search(query, settings)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def python_repo(tmp_path: Path) -> Path:
    return write(tmp_path / "webapp", PYTHON_REPO)


def files(run: SearchRun, name: RankingName = "fused") -> list[str]:
    return [f.path for f in run.files(name)]


def test_a_class_name_puts_its_definition_first_and_a_test_using_it_lower(
    python_repo: Path, index_dir: Path
) -> None:
    run = index_and_search(python_repo, index_dir, "APIRouter")
    assert files(run, "bm25")[0] == "tests/test_routing.py"  # the raw list: mentions win
    top = run.rankings["fused"].hits[0]
    assert top.chunk.path == "webapp/routing.py"
    assert "class APIRouter" in top.chunk.text
    labels = dict(top.why)
    assert labels["definition: APIRouter"] > 0
    assert files(run).index("tests/test_routing.py") > 0


def test_a_question_prefers_the_implementation_over_changelog_and_tests(
    python_repo: Path, index_dir: Path
) -> None:
    run = index_and_search(python_repo, index_dir, "how are routes registered")
    raw = files(run, "bm25")
    assert raw.index("CHANGELOG.md") < raw.index("webapp/routing.py")  # raw: prose wins
    fused = files(run)
    assert fused[0] == "webapp/routing.py"
    assert fused.index("CHANGELOG.md") > 0 and fused.index("tests/test_routing.py") > 0
    roles = {label for hit in run.rankings["fused"].hits for label, _ in hit.why}
    assert {"role: changelog", "role: test"} <= roles


def test_asking_for_a_test_lets_the_test_rise(python_repo: Path, index_dir: Path) -> None:
    asked = index_and_search(python_repo, index_dir, "test for routes registered")
    assert files(asked)[0] == "tests/test_routing.py"
    assert not any(
        label.startswith("role: test")
        for hit in asked.rankings["fused"].hits
        for label, _ in hit.why
    )


def test_issue_text_with_a_traceback_ranks_the_file_of_its_frame_first(
    python_repo: Path, index_dir: Path
) -> None:
    issue = (
        "App crashes at start-up after the routes are registered\n\n"
        "I registered my routes on an APIRouter with a prefix, registered more routes on a "
        "second router, and included both routers in the app as the docs say; every route "
        "is registered and the routes match their paths when I list the router's routes. "
        "Then the app stops before it serves a single route:\n\n"
        "```\nTraceback (most recent call last):\n"
        '  File "/srv/app/main.py", line 3, in <module>\n'
        '  File "/usr/lib/python3/site-packages/webapp/config.py", line 8, in parse_config\n'
        "TypeError: unhashable type: 'list'\n```\n"
        "Routes registered on the router still match; only the start-up breaks.\n"
    )
    run = index_and_search(python_repo, index_dir, issue)
    assert files(run, "bm25")[0] != "webapp/config.py"  # the prose about routes wins raw
    top = run.rankings["fused"].hits[0]
    assert top.chunk.path == "webapp/config.py"
    labels = dict(top.why)
    assert labels["issue terms: traceback frame parse_config"] > 0
    assert labels["path: path in the issue"] > 0


def test_words_of_a_question_find_the_identifier_they_form(tmp_path: Path, index_dir: Path) -> None:
    repo = write(tmp_path / "server", GO_REPO)
    run = index_and_search(repo, index_dir, "parse config")
    assert files(run, "bm25")[0] == "server/server.go"  # the words, spread in comments
    top = run.rankings["fused"].hits[0]
    assert top.chunk.path == "config/loader.go"
    assert dict(top.why)["identifier form: parseconfig"] > 0


def test_a_qualified_name_counts_its_last_part_most(tmp_path: Path, index_dir: Path) -> None:
    repo = write(tmp_path / "sinatra", RUBY_REPO)
    run = index_and_search(repo, index_dir, "Sinatra::Base")
    assert files(run, "bm25")[0] != "lib/sinatra/base.rb"  # `Sinatra` is said everywhere
    assert files(run)[0] == "lib/sinatra/base.rb"


def test_why_sums_to_the_score_and_bm25_stays_raw(python_repo: Path, index_dir: Path) -> None:
    run = index_and_search(python_repo, index_dir, "how are routes registered")
    for hit in run.rankings["fused"].hits:
        assert hit.why[0][0] == "bm25"
        assert sum(value for _, value in hit.why) == pytest.approx(hit.score)
    assert all(hit.why == () for hit in run.rankings["bm25"].hits)
    assert "signals" in [t.stage for t in run.timings]


def test_each_signal_is_a_setting_and_signals_off_leaves_bm25(
    python_repo: Path, index_dir: Path
) -> None:
    query = "how are routes registered"
    without_roles = index_and_search(python_repo, index_dir, query, signal_roles=1.0)
    labels = {label for hit in without_roles.rankings["fused"].hits for label, _ in hit.why}
    assert not any(label.startswith("role") for label in labels)
    assert any(
        "role priors" not in n and n.startswith("fused = BM25 + signals: definitions")
        for n in without_roles.notes
    )
    off = index_and_search(python_repo, index_dir, query, signals=False)
    assert [h.chunk.key for h in off.rankings["fused"].hits] == [
        h.chunk.key for h in off.rankings["bm25"].hits
    ]
    assert "signals" not in [t.stage for t in off.timings]


def test_search_json_carries_why_for_fused_hits(
    python_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from coderag_tui.cli import main

    code = main(
        [
            "search",
            "APIRouter",
            str(python_repo),
            "--index-dir",
            str(index_dir),
            "--no-dense",
            "--json",
            "--k",
            "3",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    top = data["rankings"]["fused"]["hits"][0]
    assert top["path"] == "webapp/routing.py"
    signals = {entry["signal"]: entry["value"] for entry in top["why"]}
    assert signals["definition: APIRouter"] > 0
    assert sum(signals.values()) == pytest.approx(top["score"])
    assert data["rankings"]["bm25"]["hits"][0]["why"] == []
    assert any(note.startswith("fused = BM25 + signals") for note in data["notes"])


CONTEXT_REPO = {
    "app/ctx.py": "\n".join(
        [
            '"""Contexts: an app context is pushed for each request and popped after it."""',
            "",
            "class AppContext:",
            '    """The app context. It is pushed when a request starts; while pushed,',
            "    current_app points at the app. A context pushed twice is pushed once.",
            '    """',
            "",
            "    def __init__(self, app):",
            "        self.app = app",
            "        self.tokens = []",
            *[f"    def helper_{i}(self):\n        return self.app.name{i}\n" for i in range(4)],
            "    def push(self):",
            "        self.tokens.append(_cv.set(self))",
            "",
            "    def pop(self):",
            "        _cv.reset(self.tokens.pop())",
        ]
    )
    + "\n",
    "app/other.py": '"""Other code: a context for templates, pushed to the renderer."""\n',
}


def test_a_question_in_another_inflection_finds_the_definition_it_names(
    tmp_path: Path, index_dir: Path
) -> None:
    """`pushed` asks where `push` is defined (flask: `ctx.py`'s `def push` fell out of the
    fused top 100 behind its file's better chunks); the chunk defining it is credited."""
    repo = write(tmp_path / "flasklike", CONTEXT_REPO)
    settings = Settings(repo=repo, index_dir=index_dir, embed_backend="none", chunk_lines=8)
    with Engine.open(settings) as engine:
        run = engine.search("how does the app context get pushed", settings)

    def rank(name: RankingName) -> int:
        hits = run.rankings[name].hits
        return next(h.rank for h in hits if "def push" in h.chunk.text)

    other = next(h.rank for h in run.rankings["bm25"].hits if h.chunk.path == "app/other.py")
    assert rank("bm25") > other  # BM25 reads `pushed` in the other file, not `push`
    hit = next(h for h in run.rankings["fused"].hits if "def push" in h.chunk.text)
    assert dict(hit.why)["identifier form: push"] > 0
    assert rank("fused") < rank("bm25")  # and it rises for it


TEMPLATE_REPO = {
    ".github/ISSUE_TEMPLATE/feature_request.md": (
        "---\nname: Feature request\nabout: Suggest an idea for this project\n---\n\n"
        "**Is your feature request related to a problem? Please describe.**\n"
        "A clear and concise description of what the problem is.\n\n"
        "**Describe the solution you'd like**\n"
        "A clear and concise description of what you want to happen.\n\n"
        "**Additional context**\nAdd any other context or screenshots about the request here.\n"
    ),
    "src/fetchRepo.js": (
        "const request = require('./request');\n\n"
        "async function fetchRepo(username, reponame) {\n"
        "  const res = await request({ login: username, repo: reponame });\n"
        "  const repo = res.data.repository;\n"
        "  return { name: repo.name, stars: repo.stargazers, archived: repo.isArchived };\n"
        "}\n\n"
        "module.exports = fetchRepo;\n"
    ),
}


def test_a_file_in_two_roles_is_pushed_down_by_both(tmp_path: Path, index_dir: Path) -> None:
    # An issue written in the project's own template: the template holds most of its words.
    issue = (
        "Archived repositories\n\n"
        "**Is your feature request related to a problem? Please describe.**\n"
        "A clear description of the problem: my archived repository shows as any other.\n\n"
        "**Describe the solution you'd like**\nIt says it is archived, so I can describe what I "
        "want to happen.\n\n**Additional context**\nNone.\n"
    )
    repo = write(tmp_path / "stats", TEMPLATE_REPO)
    run = index_and_search(repo, index_dir, issue)
    template, code = ".github/ISSUE_TEMPLATE/feature_request.md", "src/fetchRepo.js"
    assert files(run, "bm25") == [template, code]
    scores = {h.chunk.path: h for h in run.rankings["fused"].hits}
    why = dict(scores[template].why)
    before = sum(v for k, v in why.items() if not k.startswith("role"))
    assert why["role: docs+meta"] == pytest.approx(before * (0.5**2 - 1.0))
    assert before * 0.5 > scores[code].score  # one role's prior would leave it first
    assert files(run) == [code, template]
