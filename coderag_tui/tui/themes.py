"""Themes as data: YAML theme files validated into `textual.theme.Theme`.

Bundled themes live in the repository's `themes/` folder (installed as
`coderag_tui/bundled_themes`); a user's theme folder uses the same schema. Loading never
raises: every problem becomes one line of a report the app shows in a single notification.
The remembered choice lives in the state file (`coderag_tui.tui.state`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from textual.color import Color, ColorParseError
from textual.theme import Theme

if TYPE_CHECKING:
    from textual.app import App

DEFAULT_THEME = "coderag-dark"
COLOUR_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "success",
    "warning",
    "error",
)
KNOWN_FIELDS = {"name", "dark", "variables", *COLOUR_FIELDS}


@dataclass(frozen=True)
class ThemeLoad:
    """Themes read from some folders, and one line per problem found (file: what is wrong)."""

    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def bundled_theme_dirs() -> list[Path]:
    """Folders holding the bundled themes: the installed wheel's copy, then the source tree's."""
    package = Path(__file__).resolve().parents[1]
    candidates = [package / "bundled_themes", package.parent / "themes"]
    return [path for path in candidates if path.is_dir()]


def theme_from_mapping(data: object, source: str) -> tuple[Theme | None, list[str]]:
    """Validate one theme mapping; returns the Theme or None, and the problems found."""
    if not isinstance(data, Mapping):
        return None, [f"{source}: expected a mapping of theme fields, got {type(data).__name__}"]
    problems: list[str] = []
    unknown = sorted(str(key) for key in data if key not in KNOWN_FIELDS)
    if unknown:
        problems.append(f"{source}: unknown field(s) {', '.join(unknown)}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{source}: `name` is missing (give the theme a name)")
    if "primary" not in data:
        problems.append(f"{source}: `primary` is missing (every theme needs a primary colour)")
    colours: dict[str, str] = {}
    for key in COLOUR_FIELDS:
        if key not in data or data[key] is None:
            continue
        value = str(data[key])
        try:
            Color.parse(value)
        except ColorParseError:
            problems.append(f"{source}: `{key}` is not a colour: {value!r}")
        else:
            colours[key] = value
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        problems.append(f"{source}: `dark` must be true or false, got {dark!r}")
    variables = data.get("variables") or {}
    if not isinstance(variables, Mapping):
        problems.append(f"{source}: `variables` must be a mapping of name: value")
        variables = {}
    if problems:
        return None, problems
    theme = Theme(
        name=str(name).strip(),
        dark=bool(dark),
        variables={str(k): str(v) for k, v in variables.items()},
        **colours,  # type: ignore[arg-type]
    )
    return theme, []


def load_theme_file(path: Path) -> tuple[Theme | None, list[str]]:
    """Read and validate one YAML theme file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return None, [f"{path.name}: cannot be read ({exc.strerror or exc})"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return None, [f"{path.name}: is not valid YAML{where}"]
    return theme_from_mapping(data, path.name)


def load_themes(folders: Iterable[Path]) -> ThemeLoad:
    """Every `*.yaml` / `*.yml` theme in the folders, later folders overriding earlier names."""
    by_name: dict[str, Theme] = {}
    problems: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
        for path in files:
            theme, found = load_theme_file(path)
            problems.extend(found)
            if theme is not None:
                by_name[theme.name] = theme
    return ThemeLoad(themes=tuple(by_name.values()), problems=tuple(problems))


def register_themes(app: App[None], wanted: str, user_dir: Path) -> tuple[str, ...]:
    """Register the bundled and the user's themes and pick `wanted` (else the default theme);
    returns the problems found, for one notification once the app is up."""
    loaded = load_themes([*bundled_theme_dirs(), user_dir])
    for theme in loaded.themes:
        app.register_theme(theme)
    problems = list(loaded.problems)
    if wanted in app.available_themes:
        app.theme = wanted
    else:
        problems.append(
            f"theme {wanted!r} was not found: pick one with ctrl+p → “theme”, "
            f"or add {wanted}.yaml to {user_dir}"
        )
        if DEFAULT_THEME in app.available_themes:
            app.theme = DEFAULT_THEME
    return tuple(problems)
