"""The documentation a user reads stays true: the generated settings page matches the schema,
its example config reads back as the defaults, and every link between the pages leads somewhere.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import MISSING
from pathlib import Path
from types import ModuleType

import pytest

from coderag_tui.settings import SCHEMA, Settings, read_settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generator() -> ModuleType:
    return _script("gen_config_docs")


def test_readme_examples_are_what_the_commands_print() -> None:
    examples = _script("readme_examples")
    committed = README.read_text(encoding="utf-8")
    assert committed == examples.render(committed), (
        f"README.md's example outputs differ from what the commands print now: run "
        f"`{examples.COMMAND}` and commit the result."
    )


def test_configuration_page_is_current() -> None:
    gen = _generator()
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == gen.render(), (
        f"docs/configuration.md differs from the settings schema: run `{gen.COMMAND}` and "
        "commit the result."
    )


def test_configuration_page_names_every_setting_with_its_env_var() -> None:
    page = _generator().render()
    for name, info in SCHEMA.items():
        assert f"\n### {name}\n" in page
        assert f"`{info.env_var}`" in page
    # Flags that set one value say which (read from the real parsers).
    assert "`--no-wait` (= `0`)" in page
    assert "`--allow-secrets` (= `allow`)" in page


def test_configuration_example_reads_back_as_the_defaults(tmp_path: Path) -> None:
    page = _generator().render()
    example = re.search(r"```toml\n(.*?)```", page, re.S)
    assert example is not None
    config = tmp_path / "config.toml"
    config.write_text(example.group(1), encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    loaded = read_settings({"repo": repo}, environ={}, config_file=config)
    assert loaded.warnings == ()
    defaults = Settings(repo=repo)
    for name, info in SCHEMA.items():
        if info.default is not MISSING and info.default is not None:
            assert getattr(loaded.settings, name) == getattr(defaults, name), name


def _links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as -."""
    headings = re.findall(r"^#{1,6} (.+)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    for link in _links(page):
        if link.startswith(("http://", "https://")):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.relative_to(ROOT)} links to {link}, which is missing"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{page.relative_to(ROOT)}: no heading for {link}"


def test_the_readme_is_a_guide_that_links_to_every_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, (
        "the README is a guide: reference goes to docs/, numbers to benchmarks/"
    )
    links = set(_links(README))
    for page in PAGES[1:]:
        assert str(page.relative_to(ROOT)) in links, f"the README does not link to {page.name}"


def _readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_the_readme_names_every_key_the_help_names() -> None:
    """The README's key table and the help screen are read from one place: the bindings."""
    from coderag_tui.tui.keys import APP_BINDINGS
    from coderag_tui.tui.screens.help import binding_rows
    from coderag_tui.tui.screens.main import MainScreen

    table = _readme_section("The TUI")
    for key, _ in binding_rows([*APP_BINDINGS, *MainScreen.BINDINGS]):
        for one in key.split(", "):
            assert f"`{one}`" in table, f"the README's key table does not name `{one}`"


def test_the_readme_s_mcp_lines_work_after_the_quick_start() -> None:
    """The quick start installs `coderag` in the clone's .venv, not on PATH: every line that
    registers the MCP server names the command by its path."""
    quick = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("##", 1)[0]
    assert ".venv/bin/pip install" in quick and ".venv/bin/coderag ." in quick
    for page in (README, ROOT / "docs" / "mcp.md"):
        text = page.read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if "mcp add" in line or "mcpServers" in line]
        assert lines, page
        for line in lines:
            assert "-- coderag mcp" not in line and '"command": "coderag"' not in line, line
            assert '"$CODERAG" mcp' in line or ".venv/bin/coderag" in line, line
        assert "CODERAG=$(pwd)/.venv/bin/coderag" in text, page
