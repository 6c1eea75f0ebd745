"""The placeholders of a prompt template file, checked wherever one is read: `core.prompt.render`
for every template, and `settings` for a repository's own (ignored when it cannot be used).

A file is a prompt part, then optionally a line `=== chunk ===` and the format of one block.
Each placeholder appears at most once in each part ({fence} twice: it opens and closes a
block), so a prompt is its template's text and what packing put in: a block part holding
`{code}` ten thousand times took packing minutes and a gigabyte before.
"""

from __future__ import annotations

import re

CHUNK_SEPARATOR = "=== chunk ==="
TWICE = frozenset({"fence"})  # a block's fence opens and closes it
PLACEHOLDER = re.compile(r"\{(role|context|task|change|path|start|end|lines|language|fence|code)\}")


def split_template(text: str) -> tuple[str, str]:
    """The prompt part and the block part ("" when the file has none) of a template's text."""
    lines = text.splitlines(keepends=True)
    split = next((i for i, line in enumerate(lines) if line.strip() == CHUNK_SEPARATOR), None)
    if split is None:
        return text, ""
    return "".join(lines[:split]), "".join(lines[split + 1 :])


def template_problem(prompt_part: str, block_part: str) -> str:
    """ "" when the parts make a usable template, else what is wrong, ending with its fix."""
    missing = [p for p in ("{context}", "{task}") if p not in prompt_part]
    if missing:
        return (
            f"has no {' or '.join(missing)} placeholder: add it where the code context and the "
            "task should go"
        )
    if block_part.strip() and "{code}" not in block_part:
        return (
            f"has a `{CHUNK_SEPARATOR}` part without {{code}}: add {{code}} where each block's "
            "code should go"
        )
    for part in (prompt_part, block_part):
        seen = PLACEHOLDER.findall(part)
        repeated = sorted({name for name in seen if seen.count(name) > 1 + (name in TWICE)})
        if repeated:
            shown = ", ".join(f"{{{name}}}" for name in repeated)
            return (
                f"repeats {shown}: each placeholder may appear once in the prompt and in a "
                "block ({fence} twice)"
            )
    return ""
