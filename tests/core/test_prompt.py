"""Prompt templates: markdown layout, well-formed XML, user template files, fences and tags."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from coderag_tui.core.prompt.render import (
    CONTEXT_HEADING,
    ROLE,
    TASK_HEADING,
    Template,
    TemplateError,
    fence_for,
    fence_tag_for,
    load_template,
)

CODE = 'def f(a, b):\n    return a < b and b > 0  # {task} & "quotes" ]]> `x`'
TASK = "Explain f when a < b & b > 0."


def blocks_for(template_name: str) -> tuple[list[str], Template]:
    template = load_template(template_name)
    blocks = [
        template.render_block(path="src/f.py", start=3, end=4, language="python", code=CODE),
        template.render_block(path='we"ird <p>.ts', start=10, end=10, language=None, code="x"),
    ]
    return blocks, template


def test_markdown_has_role_context_headers_fences_and_the_task_last() -> None:
    blocks, template = blocks_for("markdown")
    text = template.render(blocks, TASK)
    assert text.startswith(ROLE + "\n\n" + CONTEXT_HEADING + "\n\n")
    assert "### [src/f.py · lines 3–4]\n```python\n" + CODE + "\n```\n" in text
    assert '### [we"ird <p>.ts · lines 10–10]\n```typescript\nx\n```' in text
    assert text.endswith(f"{TASK_HEADING}\n\n{TASK}\n")
    assert text.index("src/f.py") < text.index('we"ird')


def test_context_last_puts_the_task_first() -> None:
    template = load_template("markdown", context_first=False)
    text = template.render(["### [a.py · lines 1–1]\n```python\nx\n```"], TASK)
    assert text.index(TASK_HEADING) < text.index(CONTEXT_HEADING) < text.index("### [a.py")


def test_xml_is_well_formed_and_round_trips_code_paths_and_task() -> None:
    blocks, template = blocks_for("xml")
    text = template.render(blocks, TASK)
    assert text.startswith(ROLE + "\n\n<context>\n<chunk ")
    body = text[len(ROLE) + 2 :]
    root = ET.fromstring(f"<prompt>{body}</prompt>")
    chunks = root.findall("./context/chunk")
    assert [c.get("path") for c in chunks] == ["src/f.py", 'we"ird <p>.ts']
    assert [c.get("lines") for c in chunks] == ["3-4", "10-10"]
    assert chunks[0].get("language") == "python"
    assert chunks[0].text == f"\n{CODE}\n"
    assert root.findtext("task") == f"\n{TASK}\n"
    assert "return a &lt; b and b > 0" in text, "`>` stays readable outside `]]>`"


def test_a_fence_is_longer_than_any_backtick_run_in_the_code() -> None:
    assert fence_for("plain") == "```"
    assert fence_for("a ``` b") == "````"
    assert fence_for("`````") == "``````"


@pytest.mark.parametrize(
    ("language", "path", "tag"),
    [
        ("python", "x.py", "python"),
        ("tsx", "x.tsx", "tsx"),
        ("c_sharp", "x.cs", "csharp"),
        (None, "web/app.js", "javascript"),
        (None, "notes.unknownext", ""),
    ],
)
def test_fence_tags_come_from_the_language(language: str | None, path: str, tag: str) -> None:
    assert fence_tag_for(language, path) == tag


def test_a_user_template_file_fills_placeholders_once_and_leaves_other_braces(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mine.txt"
    path.write_text(
        "{role}\nTASK: {task}\n{not_a_field} stays\n\n{context}\n"
        "=== chunk ===\nFILE {path} ({lines}, {start}..{end})\n"
        "{fence}{language}\n{code}\n{fence}\n",
        encoding="utf-8",
    )
    template = load_template(str(path))
    block = template.render_block(path="src/f.py", start=3, end=4, language="python", code=CODE)
    text = template.render([block], "do {it}")
    assert text == (
        f"{ROLE}\nTASK: do {{it}}\n{{not_a_field}} stays\n\n"
        f"FILE src/f.py (3–4, 3..4)\n```python\n{CODE}\n```\n"
    )
    assert "{task}" in text, "placeholders inside code are not substituted"


def test_a_user_template_without_a_chunk_part_uses_markdown_blocks(tmp_path: Path) -> None:
    path = tmp_path / "short.tmpl"
    path.write_text("Q: {task}\n{context}", encoding="utf-8")
    template = load_template(str(path))
    block = template.render_block(path="a.py", start=1, end=1, language="python", code="x = 1")
    expected = "Q: why?\n### [a.py · lines 1–1]\n```python\nx = 1\n```\n"
    assert template.render([block], "why?") == expected


def test_bad_templates_say_what_to_fix(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="neither markdown, xml nor a readable file"):
        load_template(str(tmp_path / "missing.txt"))
    no_task = tmp_path / "no_task.txt"
    no_task.write_text("{context}\n", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"no \{task\} placeholder"):
        load_template(str(no_task))
    no_code = tmp_path / "no_code.txt"
    no_code.write_text("{context}{task}\n=== chunk ===\n{path}\n", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"without \{code\}"):
        load_template(str(no_code))


def test_rendering_is_deterministic() -> None:
    first = blocks_for("markdown")
    second = blocks_for("markdown")
    assert first[0] == second[0]
    assert first[1].render(first[0], TASK).encode() == second[1].render(second[0], TASK).encode()
