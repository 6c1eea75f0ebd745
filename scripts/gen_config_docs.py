"""Write docs/configuration.md from the settings schema, so the page cannot drift from the code.

    PYTHONPATH=. python scripts/gen_config_docs.py           # rewrite docs/configuration.md
    PYTHONPATH=. python scripts/gen_config_docs.py --check   # exit 1 if it is out of date

Every setting is rendered from `coderag_tui.settings.SCHEMA` (type, choices, default as the
flags' help shows it, limits, environment variable, docstring, and what a repository's own
`.coderag.toml` may do with it); its flags are read from the real parsers, so a setting shows
only the flags some command takes. tests/test_docs.py renders the page in memory and fails
when the committed file differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import MISSING
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coderag_tui.cli.common import INVERSE_FLAGS, VALUE_FLAGS  # noqa: E402
from coderag_tui.core.prompt.render import MAX_TEMPLATE_BYTES  # noqa: E402
from coderag_tui.settings import (  # noqa: E402
    MAX_CONFIG_BYTES,
    REPO_FILE,
    SCHEMA,
    UNKNOWN_NAMED,
    SettingInfo,
)

OUT = ROOT / "docs" / "configuration.md"
COMMAND = "python scripts/gen_config_docs.py"

# A setting given as a positional argument rather than a flag (`settings_from_args` reads the
# PATH argument into `repo`).
POSITIONAL = {"repo": "the `PATH` argument"}

KIND_WORDS: dict[type, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "text",
    Path: "a path",
}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its name: `coderag` (the TUI) and each subcommand."""
    from coderag_tui.cli import build_parser
    from coderag_tui.cli.tui_cmd import build_parser as build_tui_parser

    parsers: dict[str, argparse.ArgumentParser] = {"coderag": build_tui_parser()}
    sub = build_parser()._subparsers
    for action in sub._group_actions if sub is not None else ():
        choices = getattr(action, "choices", None) or {}
        parsers.update(choices)
    return parsers


def flags_by_setting() -> dict[str, dict[str, list[str]]]:
    """setting -> flag spelling -> the commands that take it, read from the real parsers."""
    found: dict[str, dict[str, list[str]]] = {name: {} for name in SCHEMA}
    for command, parser in _parsers().items():
        for action in parser._actions:
            if action.dest not in SCHEMA:
                continue
            for spelling in action.option_strings:
                found[action.dest].setdefault(spelling, []).append(command)
    return found


def md(text: str) -> str:
    """Schema prose as Markdown shows it literally: `<redacted:TYPE>` and `*.pem` stay text."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("<", "&lt;")


def kind_text(info: SettingInfo) -> str:
    """The type in words: the choices of a Literal, else the kind (with its special word)."""
    if info.choices:
        return "one of " + ", ".join(f"`{choice}`" for choice in info.choices)
    text = KIND_WORDS[info.kind]
    if info.meta.auto is not None:
        text += f" or `{info.meta.auto_word}`"
    if info.meta.names:
        text += ": " + ", ".join(f"`{n}`" for n in info.meta.names) + " or a file"
    if info.optional:
        text += ", or unset"
    return text


def repo_file_text(info: SettingInfo) -> str:
    """What a repository's own .coderag.toml may do with this setting, in words."""
    policy = info.meta.repo_file
    if policy == "free":
        return "may set it."
    if policy == "refused":
        return f"ignored, with one warning: {md(info.meta.why_refused)}."
    if policy == "lower":
        return (
            "may only lower it below what applies without the repository's file (your config, "
            "the environment, a flag or the default); a higher value is ignored with a warning."
        )
    if info.meta.names:
        name = "one of the names " + ", ".join(f"`{n}`" for n in info.meta.names)
    else:
        name = "a name that is not a path (a hub model such as `org/model`)"
    return (
        f"{name} is kept; a path must lie inside the repository (a relative one is read from "
        "its root), and one leading outside it is ignored with a warning."
    )


def repo_file_short(info: SettingInfo) -> str:
    """The repository file's say in one or two words, for the overview table."""
    return {
        "free": "may set",
        "refused": "ignored",
        "inside": "inside only",
        "lower": "lower only",
    }[info.meta.repo_file]


def flag_text(name: str, flags: dict[str, list[str]]) -> str:
    """A setting's flags, grouped by the commands that take them; a flag that sets one value
    (`--no-wait`) says which."""
    if name in POSITIONAL:
        return POSITIONAL[name] + " of every command"
    if not flags:
        return "none (a config file or the environment variable)"
    fixed = {flag: f"`{value}`" for flag, value, _ in VALUE_FLAGS.get(name, ())}
    if name in INVERSE_FLAGS:
        fixed[INVERSE_FLAGS[name][0]] = "false"
    by_commands: dict[tuple[str, ...], list[str]] = {}
    for spelling, commands in flags.items():
        shown = f"`{spelling}`" + (f" (= {fixed[spelling]})" if spelling in fixed else "")
        by_commands.setdefault(tuple(commands), []).append(shown)
    return "; ".join(
        f"{', '.join(spellings)} on {', '.join(f'`{c}`' for c in commands)}"
        for commands, spellings in by_commands.items()
    )


def toml_value(info: SettingInfo) -> str | None:
    """The default as a TOML value, or None when it is made at run time (a path, the cwd)."""
    default: Any = info.default
    if default is MISSING or default is None or isinstance(default, Path):
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if info.meta.auto is not None and default == info.meta.auto:
        return json.dumps(info.meta.auto_word)
    if isinstance(default, int | float):
        return str(default)
    return json.dumps(default)


def toml_example() -> Iterator[str]:
    """Every setting with its default, in the user config file's syntax."""
    yield "```toml"
    yield "# ~/.config/coderag/config.toml (a [coderag] table works too): every setting, at its"
    yield "# default; keep only the lines you change."
    for name, info in SCHEMA.items():
        value = toml_value(info)
        if value is None:
            yield f"# {name} = ...  # default: {info.shown_default}"
        elif info.choices:
            yield f"{name} = {value}  # {' | '.join(info.choices)}"
        else:
            yield f"{name} = {value}"
    yield "```"


def setting_section(info: SettingInfo, flags: dict[str, list[str]]) -> Iterator[str]:
    yield f"### {info.name}"
    yield ""
    yield md(info.doc)
    yield ""
    yield f"- type: {kind_text(info)}"
    yield f"- default: {md(info.shown_default)}"
    if info.limits:
        yield f"- limits: {info.limits}"
    yield f"- environment: `{info.env_var}`"
    yield f"- flags: {flag_text(info.name, flags)}"
    yield f"- a repository's `{REPO_FILE}`: {repo_file_text(info)}"
    yield ""


HEADER = f"""\
# Configuration

<!-- Generated by `{COMMAND}` from coderag_tui/settings.py; do not edit by hand.
     tests/test_docs.py fails when this file is out of date. -->

coderag has one settings object (`coderag_tui/settings.py`). Every setting below has one
name, type, limit and default everywhere: in a config file, as a `CODERAG_<SETTING>`
environment variable and as a flag (`chunk_overlap` ↔ `CODERAG_CHUNK_OVERLAP` ↔
`--chunk-overlap`); each command's `--help` is generated from the same schema. Under "flags",
`coderag` is the TUI and the other names are its commands (`coderag search` …).

## Where settings come from

Read in this order, later wins:

1. the defaults below;
2. your config file, `config.toml` in the user config folder (`~/.config/coderag/config.toml`
   on Linux);
3. `{REPO_FILE}` in the repository being indexed, within the limits each setting states
   (see below);
4. `CODERAG_<SETTING>` environment variables;
5. command-line flags.

A file may hold the settings at its top level or in a `[coderag]` table; a key may be spelled
with dashes (`chunk-lines`). A value is checked once, wherever it comes from, and a bad one
stops coderag with one sentence naming the key and its source:

```
coderag: /repo/{REPO_FILE}: rrf_k must be ≥ 1, got -60.
coderag: CODERAG_CHUNKING: chunking must be one of lines, ast, file, got 'words'.
coderag: --rrf-k: must be ≥ 1, got -60.
```

An unknown key is a warning naming the closest known one
(`unknown setting 'overlap' (did you mean 'chunk_overlap'?); ignored.`); the first
{UNKNOWN_NAMED} are named and the rest counted. The TUI shows such warnings in a notification.

## What a repository's own {REPO_FILE} may do

A cloned repository's `{REPO_FILE}` is someone else's text. It may tune retrieval and prompts,
but each setting says how far ("a repository's `{REPO_FILE}`" in its list):

- **may set it**: as any other source;
- **ignored**: the key is skipped and coderag runs on, with one warning naming every such key
  and why (set it in your own config, the environment or a flag if you mean it);
- **inside only**: a path is read from the repository's root and must stay inside it;
- **lower only**: a resource limit may go down, never up.

A `{REPO_FILE}` that is a link leading out of the repository, or larger than
{MAX_CONFIG_BYTES // 1024} KiB, is not read: one sentence says so and coderag stops, as it does
for a value out of its limits. See [security.md](security.md).

## Other files

- The index lives in the user cache folder (`~/.cache/coderag/index/` on Linux): one SQLite
  database per repository plus one embedding cache shared by all of them; `index_dir` puts it
  elsewhere. What coderag makes there is yours alone (folders 0700, files 0600). Models
  coderag derives from installed packages (the ONNX and int8 copies, the static table) are
  kept once per machine in `~/.cache/coderag/models`.
- A template file is plain text with `{{role}}`, `{{context}}` and `{{task}}` placeholders and a
  per-block part below a line `=== chunk ===` (`{{path}}`, `{{lines}}`, `{{language}}`,
  `{{fence}}`, `{{code}}`); see the docstring of `coderag_tui/core/prompt/render.py`. Each
  placeholder appears once at most in each part (`{{fence}}` twice), and the template's own
  text with one empty block must fit the budget. A template file larger than
  {MAX_TEMPLATE_BYTES // 1024} KiB is not read. One a repository's `.coderag.toml` names that
  cannot be used (too large, not UTF-8, not a template, a placeholder repeated) is ignored with
  one warning.
- Your own themes are YAML files in `theme_dir`, with the schema of `themes/coderag-dark.yaml`.
"""


def render() -> str:
    """The whole page, as committed in docs/configuration.md."""
    flags = flags_by_setting()
    lines = [HEADER, "## Example", ""]
    lines += toml_example()
    lines += ["", "## Every setting", ""]
    lines += ["| setting | default | repository's file |", "|---|---|---|"]
    for name, info in SCHEMA.items():
        default = md(info.shown_default).replace("|", "\\|")
        lines.append(f"| [{name}](#{name}) | {default} | {repo_file_short(info)} |")
    lines.append("")
    for info in SCHEMA.values():
        lines += setting_section(info, flags[info.name])
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    text = render()
    current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
    if args.check:
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run `{COMMAND}`.", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
