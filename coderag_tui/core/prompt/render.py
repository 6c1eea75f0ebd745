"""Prompt templates: the ranked code context and the task, laid out the way chat models read best.

Built-in templates
    `markdown` (default): a one-line role, `## Relevant context from the codebase`, then per
    block `### [path · lines a–b]` and a fenced code block tagged with the file's language,
    then `## Task` with the user's text last. `xml`: the same role line, then
    `<context><chunk path="…" lines="a-b" language="…">…</chunk></context><task>…</task>`
    with `&` and `<` escaped in text (`>` only in `]]>`) and attributes quoted, so the
    XML is well-formed while `->` in code stays readable.
    With `context_first=False` the task comes first.
    A change (`--diff`) is its own section next to the task: `## The change` with the diff in a
    fenced `diff` block (xml: `<change>…</change>`), between the context and the task.

User template files (UTF-8 text)
    The part above a line reading exactly `=== chunk ===` is the prompt; the part below is
    the format of one code block (when absent, blocks use the markdown format). Each
    placeholder appears at most once in each part, {fence} twice (`core.placeholders`), and is
    replaced literally; any other braces are left alone, so no escaping is needed. A template
    whose own text, with one empty block, takes more than the budget is refused
    (`Template.check_fits`): no prompt of it could hold code.

    prompt part:  {role} {context} {task}       ({context} = the blocks, joined by a blank line)
                  {change}                     (the `--diff` section; when a file has no
                                                {change}, the section follows the task)
    block part:   {path} {start} {end} {lines} {language} {fence} {code}
                  ({lines} = "a–b"; {language} = the fence tag, e.g. "python"; {fence} = a
                  backtick fence longer than any backtick run in the code)

    Example file:

        {role}
        Task: {task}

        {context}
        === chunk ===
        FILE {path} (lines {lines})
        {fence}{language}
        {code}
        {fence}

Rendering is deterministic: the same blocks and task give byte-identical text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import quoteattr

from coderag_tui.core.capped import read_capped
from coderag_tui.core.errors import CoderagError
from coderag_tui.core.index.languages import fence_tag, language_for
from coderag_tui.core.placeholders import (
    PLACEHOLDER,
    split_template,
    template_problem,
)
from coderag_tui.settings import MAX_TEMPLATE_BYTES

ROLE = "You are an expert software engineer. Use the code context below to answer the task."
CONTEXT_HEADING = "## Relevant context from the codebase"
TASK_HEADING = "## Task"
CHANGE_HEADING = "## The change"
NO_CONTEXT = "(no code from the repository matched the task)"
BUILTIN_TEMPLATES = ("markdown", "xml")

TemplateKind = Literal["markdown", "xml", "file"]

_BACKTICKS = re.compile(r"`+")


class TemplateError(CoderagError, ValueError):
    """A template name or file the user gave cannot be used; the message names the fix."""


def fence_tag_for(language: str | None, path: str) -> str:
    """The code-fence tag for a block, from its language or else its path ("" when unknown)."""
    return fence_tag(language if language is not None else language_for(path))


def fence_for(code: str) -> str:
    """A backtick fence longer than any backtick run in `code` (at least three)."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(code)), default=0)
    return "`" * max(3, longest + 1)


def line_range(start: int, end: int) -> str:
    """`a–b` with an en dash, the form every header uses."""
    return f"{start}–{end}"


def line_ranges(start: int, end: int, parts: Sequence[tuple[int, int]] = ()) -> str:
    """The lines a block shows: `a–b`, or its parts `a–b, c, d–e` when lines were left out."""
    if not parts or (len(parts) == 1 and parts[0] == (start, end)):
        return line_range(start, end)
    return ", ".join(str(a) if a == b else line_range(a, b) for a, b in parts)


def escape(text: str) -> str:
    """XML text escaping that keeps code readable: `&` and `<` always, `>` only after `]]`."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("]]>", "]]&gt;")


def _substitute(fmt: str, values: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), fmt)


def _with_newline(code: str) -> str:
    return code if code.endswith("\n") or not code else code + "\n"


@dataclass(frozen=True)
class Template:
    """How blocks and the task become one prompt; see the module docstring for the formats."""

    name: str
    kind: TemplateKind = "markdown"
    context_first: bool = True
    role: str = ROLE
    prompt_format: str = ""  # user files only
    block_format: str = ""  # user files only (empty: markdown blocks)

    def render_block(
        self,
        *,
        path: str,
        start: int,
        end: int,
        language: str | None,
        code: str,
        parts: Sequence[tuple[int, int]] = (),
    ) -> str:
        """One code block with its header; `code` is its lines joined by newlines (no final one).
        With `parts`, the header names the line ranges shown (the code holds an elision line
        between them)."""
        lines = line_ranges(start, end, parts)
        if self.kind == "xml":
            xml_lines = lines.replace("–", "-").replace(" ", "")
            attrs = (
                f"path={quoteattr(path)} lines={quoteattr(xml_lines)}"
                f" language={quoteattr(fence_tag_for(language, path))}"
            )
            return f"<chunk {attrs}>\n{escape(code)}\n</chunk>"
        tag = fence_tag_for(language, path)
        fence = fence_for(code)
        if self.kind == "file" and self.block_format:
            values = {
                "path": path,
                "start": str(start),
                "end": str(end),
                "lines": lines,
                "language": tag,
                "fence": fence,
                "code": code,
            }
            return _substitute(self.block_format, values).rstrip("\n")
        return f"### [{path} · lines {lines}]\n{fence}{tag}\n{code}\n{fence}"

    def check_fits(self, count: Callable[[str], int], budget: int) -> None:
        """TemplateError when the template's own text, with one block of no code, takes more
        than `budget` tokens (`count`): no prompt of it could hold any code."""
        if self.kind != "file":
            return
        frame = self.render_block(path="", start=1, end=1, language=None, code="")
        tokens = count(self.render([frame], ""))
        if tokens > budget:
            raise TemplateError(
                f"template {self.name} takes {tokens:,} tokens with one empty block, more than "
                f"the budget of {budget:,}: shorten it or raise the budget."
            )

    def render(self, blocks: Sequence[str], task: str, change: str = "") -> str:
        """The whole prompt from rendered blocks (in order), the task and, when given, the
        change (a unified diff) as its own section; ends with a newline."""
        task = task.strip()
        change = change.strip("\n")
        if self.kind == "file":
            context = "\n\n".join(blocks) if blocks else NO_CONTEXT
            values = {"role": self.role, "context": context, "task": task, "change": ""}
            if change:
                values["change"] = change_section(change)
                if "{change}" not in self.prompt_format:
                    values["task"] = f"{task}\n\n{values['change']}"
            text = _substitute(self.prompt_format, values)
            return text if text.endswith("\n") else text + "\n"
        change_part = ""
        if self.kind == "xml":
            inner = "\n".join(blocks) + "\n" if blocks else ""
            context = f"<context>\n{inner}</context>"
            task_part = f"<task>\n{_with_newline(escape(task))}</task>"
            if change:
                change_part = f"<change>\n{_with_newline(escape(change))}</change>"
        else:
            body = "\n\n".join(blocks) if blocks else NO_CONTEXT
            context = f"{CONTEXT_HEADING}\n\n{body}"
            task_part = f"{TASK_HEADING}\n\n{task}"
            change_part = change_section(change) if change else ""
        # The change sits next to the task: the model reads the code, then what changed, then
        # what to do (or, task first, what to do and what changed before the code).
        middle = [change_part] if change_part else []
        parts = (
            [context, *middle, task_part] if self.context_first else [task_part, *middle, context]
        )
        return self.role + "".join(f"\n\n{part}" for part in parts) + "\n"


def change_section(diff: str) -> str:
    """`## The change` and the diff in a fenced `diff` block (a fence longer than any
    backtick run in it)."""
    fence = fence_for(diff)
    return f"{CHANGE_HEADING}\n\n{fence}diff\n{diff}\n{fence}"


def parse_template_file(text: str, *, name: str) -> Template:
    """A Template from the text of a user template file, or TemplateError saying what is
    missing or repeated (`core.placeholders`)."""
    prompt_part, block_part = split_template(text)
    problem = template_problem(prompt_part, block_part)
    if problem:
        raise TemplateError(f"template {name} {problem}.")
    return Template(
        name=name, kind="file", prompt_format=prompt_part, block_format=block_part.strip("\n")
    )


# A template file larger than MAX_TEMPLATE_BYTES is refused unread: a template is a page of
# text, and a repository may name one of its own files (a sparse 3 GB file must not be read).


def load_template(name_or_path: str, *, context_first: bool = True) -> Template:
    """`markdown`, `xml`, or the path of a user template file (see the module docstring)."""
    key = name_or_path.strip().lower()
    if key in ("markdown", "md"):
        return Template("markdown", "markdown", context_first)
    if key == "xml":
        return Template("xml", "xml", context_first)
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise TemplateError(
            f"template {name_or_path!r} is neither markdown, xml nor a readable file: "
            "pass one of those."
        )
    try:
        data = read_capped(path, MAX_TEMPLATE_BYTES)
        if data is None:
            raise TemplateError(
                f"the template file {path} is larger than {MAX_TEMPLATE_BYTES // 1024} KiB: a "
                "template is a page of text with placeholders; pass a smaller file."
            )
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(
            f"cannot read the template file {path} ({exc}): pass a UTF-8 text file."
        ) from exc
    return replace(parse_template_file(text, name=str(path)), context_first=context_first)


def render(template: Template, blocks: Sequence[str], task: str, change: str = "") -> str:
    """Module-level spelling of Template.render, for callers that hold a template value."""
    return template.render(blocks, task, change)
