"""What role a file plays (test, example, docs, changelog …), read from its path and language.

The role prior of the code signals (`core.rank.signals`) pushes these files down unless the
query asks for the role ("test for routing", "changelog", "example of a middleware"). Roles
come from folder names, file-name conventions and the file's language, never from the
repository's name, so they mean the same in every repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from coderag_tui.core.index.languages import GRAMMARS

ROLES = (
    "test", "example", "docs", "changelog", "benchmark", "vendored", "generated", "migration",
    "legacy", "meta", "build",
)  # fmt: skip

# A file under a folder of one of these names plays the role.
_ROLE_DIRS: dict[str, frozenset[str]] = {
    "test": frozenset({
        "test", "tests", "__tests__", "testing", "spec", "specs", "testdata", "test_data",
        "e2e", "integration_tests", "unit_tests", "selftest", "selftests",
    }),
    "example": frozenset({
        "example", "examples", "_examples", "demo", "demos", "sample", "samples", "docs_src",
        "tutorial", "tutorials", "cookbook",
    }),
    "docs": frozenset({"doc", "docs", "documentation", "_docs", "man"}),
    "benchmark": frozenset({"bench", "benches", "benchmark", "benchmarks", "asv_bench"}),
    "vendored": frozenset({
        "vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party",
        "external", "extern", "node_modules", "single_include",
    }),
    "generated": frozenset({
        "generated", "__generated__", "_generated", "singleheader", "single_header",
        "amalgamation",
    }),
    "migration": frozenset({"migrations", "migration", "alembic"}),
    "legacy": frozenset({"compat", "_compat", "legacy", "deprecated"}),
    # The project's housekeeping: CI, issue and pull-request templates, funding, bots.
    "meta": frozenset({".github", ".gitlab", ".circleci", ".azure-pipelines", ".buildkite"}),
}  # fmt: skip
# test_x.py, x_test.go, x.test.ts, x.tests.cpp, x.spec.js, x_spec.rb, XTest.java, XTests.cs,
# conftest.py
_TEST_FILE = re.compile(
    r"(?:^test_.*|.*_test|.*_tests|.*_spec|.*\.tests?|.*\.specs?|.*[a-z]Tests?|conftest"
    r"|test_helpers?)$"
)
_SPEC_FILE = re.compile(r".*[a-z](?:Spec|Suite)$")  # Kotest, ScalaTest, Quick, MUnit
_SPEC_LANGUAGES = frozenset({"kotlin", "scala", "swift", "groovy"})
_CHANGELOG = re.compile(
    r"^(?:change_?log|changes|history|news|release_?notes|releases|whatsnew|upgrading)$"
)
_GENERATED_FILE = re.compile(
    r".*(?:_pb2(?:_grpc)?|\.pb|\.generated|\.g|\.min|_generated)$|.*amalgamat(?:ed|ion).*"
)
# The project's housekeeping files, whatever their language: licences, contribution and
# conduct guides, CI configurations, ownership and funding files.
_META_FILE = re.compile(
    r"^(?:licen[cs]e|copying|notice|authors|contributors|contributing|code[-_]of[-_]conduct"
    r"|security|codeowners|funding|\.travis|appveyor|azure-pipelines|\.drone|\.cirrus"
    r"|\.gitlab-ci|jenkinsfile|\.mailmap|\.gitattributes|\.gitignore|\.editorconfig"
    r"|\.codecov|codecov|\.coveragerc|\.pre-commit-config)(?:[-_.].*)?$"
)
_LEGACY_FILE = re.compile(r"^_?(?:compat|py2compat|py3compat|legacy)$")
# How the project is built, bundled and linted, whatever its language: build scripts, package
# manifests and lock files, bundler, compiler, linter and test-runner configurations.
_BUILD_FILE = re.compile(
    r"^(?:(?:gnu)?makefile|cmakelists\.txt|.*\.cmake(?:\.in)?|configure(?:\.ac)?|meson\.build"
    r"|build\.gradle(?:\.kts)?|settings\.gradle(?:\.kts)?|pom\.xml|build\.xml|build\.sbt"
    r"|package(?:-lock)?\.json|yarn\.lock|pnpm-lock\.yaml|cargo\.(?:toml|lock)|go\.(?:mod|sum)"
    r"|.*\.(?:config|conf)\.[cm]?[jt]s|(?:gulpfile|gruntfile|webpack[\w.-]*|rollup[\w.-]*)\.[cm]?[jt]s"
    r"|tsconfig[\w.-]*\.json|\.eslintrc[\w.]*|\.babelrc|\.prettierrc[\w.]*|\.npmignore"
    r"|dockerfile|\.dockerignore|build|build\.bazel|workspace|\.bazelrc|vcpkg\.json"
    r"|conanfile\.(?:txt|py)|tox\.ini|setup\.cfg|pyproject\.toml|manifest\.in)$"
)
_DOC_LANGUAGES = frozenset({"markdown", "rst", "text", "latex"})

# The query words that ask for each role (that role is then not pushed down).
_ASKED_BY: dict[str, frozenset[str]] = {
    "test": frozenset({
        "test", "tests", "testing", "tested", "spec", "specs", "unittest", "pytest",
        "fixture", "fixtures", "mock", "mocks",
    }),
    "example": frozenset({
        "example", "examples", "demo", "demos", "sample", "samples", "tutorial",
    }),
    "docs": frozenset({
        "doc", "docs", "documentation", "documented", "readme", "guide", "manual",
    }),
    "changelog": frozenset({
        "changelog", "changelogs", "changes", "history", "release", "releases", "news",
        "changed", "whatsnew",
    }),
    "benchmark": frozenset({"benchmark", "benchmarks", "bench", "performance"}),
    "vendored": frozenset({"vendor", "vendored", "vendoring", "bundled"}),
    "generated": frozenset({"generated", "codegen", "protobuf"}),
    "migration": frozenset({"migration", "migrations", "migrate"}),
    "legacy": frozenset({
        "legacy", "compat", "compatibility", "deprecated", "deprecation", "backport",
    }),
    "meta": frozenset({
        "license", "licence", "licensing", "contributing", "ci", "workflow", "workflows",
        "template", "templates", "funding", "codeowners",
    }),
    "build": frozenset({
        "build", "builds", "building", "makefile", "cmake", "gradle", "maven", "webpack",
        "bundler", "bundle", "bundling", "compile", "compiling", "compilation", "dependency",
        "dependencies", "lockfile", "docker", "dockerfile", "lint", "linter", "eslint",
    }),
}  # fmt: skip


def path_roles(path: str, language: str | None) -> frozenset[str]:
    """The roles a file plays, from its path and language (never the repository's name)."""
    pure = PurePosixPath(path)
    dirs = [part.lower() for part in pure.parts[:-1]]
    name = pure.name
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    full_stem = pure.stem  # x.test for x.test.ts
    roles = {role for role, names in _ROLE_DIRS.items() if any(d in names for d in dirs)}
    if (
        _TEST_FILE.match(full_stem)
        or _TEST_FILE.match(stem)
        or (language in _SPEC_LANGUAGES and _SPEC_FILE.match(stem))
    ):
        roles.add("test")
    prose = language is None or language in _DOC_LANGUAGES
    if prose and _CHANGELOG.match(stem.lower()):  # history.py is code, HISTORY.md is not
        roles.add("changelog")
    elif language in _DOC_LANGUAGES:
        roles.add("docs")
    if stem.lower().startswith(("bench_", "benchmark_")):
        roles.add("benchmark")
    if _GENERATED_FILE.match(full_stem) or name.endswith(".d.ts"):
        roles.add("generated")
    if _LEGACY_FILE.match(stem.lower()):
        roles.add("legacy")
    if language not in GRAMMARS and _META_FILE.match(name.lower()):  # security.go is code
        roles.add("meta")
    if _BUILD_FILE.match(name.lower()):
        roles.add("build")
    return frozenset(roles)


def roles_asked(words: Iterable[str]) -> frozenset[str]:
    """The roles a query asks for by name ("test for routing" asks for tests)."""
    said = {word.lower() for word in words}
    return frozenset(role for role, asked in _ASKED_BY.items() if said & asked)
