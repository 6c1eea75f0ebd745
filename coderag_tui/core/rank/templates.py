"""The repository's issue templates: their words in an issue are the form's, not the reporter's.

Many issues are written into the form a repository offers (`.github/ISSUE_TEMPLATE/bug.md`:
"**Describe the bug**", "**Screenshots**", an FAQ in an HTML comment). Those lines match the
template file itself, and every other file that happens to share their words, better than the
code the issue is about. `template_lines` reads the lines of the repository's issue and
pull-request templates (GitHub's Markdown templates and YAML issue forms, GitLab's), and
`without_template_lines` leaves the lines of a query found there out of it. Pure functions of
text; no repository is named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Where forges read templates from: `.github/ISSUE_TEMPLATE/x.md`, `ISSUE_TEMPLATE.md` at the
# root, in `.github/` or `docs/`, the pull-request forms, GitLab's `.gitlab/issue_templates/`.
_TEMPLATE_PATH = re.compile(
    r"(?:^|/)(?:issue_template|pull_request_template|issue_templates|merge_request_templates)"
    r"(?:/|\.[a-z]+$)",
    re.IGNORECASE,
)
# An issue form's keys whose values GitHub renders into the issue (`label:` as a heading).
_FORM_VALUE = re.compile(
    r"^\s*-?\s*(?:label|description|placeholder|value|about|title|name)\s*:\s*[|>]?\s*(.*)$"
)
_WORD = re.compile(r"[a-z0-9]+")
MIN_WORDS = 2  # a one-word line ("Screenshots") says too little to leave out


def is_template(path: str) -> bool:
    """Is this repository path an issue or pull-request template?"""
    return "template" in path.lower() and bool(_TEMPLATE_PATH.search(path))


def _key(line: str) -> str:
    """A line as its words, lowercased: markup (`**`, `###`, `-`, `>`) and spacing aside."""
    return " ".join(_WORD.findall(line.lower()))


def template_lines(texts: Iterable[str]) -> frozenset[str]:
    """The lines of the templates' texts (as `_key`s) that an issue written into them repeats."""
    keys: set[str] = set()
    for text in texts:
        for line in text.splitlines():
            form = _FORM_VALUE.match(line)
            for part in (line, form.group(1) if form else ""):
                key = _key(part)
                if key.count(" ") + 1 >= MIN_WORDS:
                    keys.add(key)
    return frozenset(keys)


def without_template_lines(query: str, lines: frozenset[str]) -> str:
    """`query` without its lines that repeat a template's; the query itself when no line does,
    or when nothing else would be left."""
    if not lines or "\n" not in query:
        return query
    given = query.splitlines()
    kept = [line for line in given if _key(line) not in lines]
    if len(kept) == len(given) or not any(_key(line) for line in kept):
        return query
    return "\n".join(kept)
