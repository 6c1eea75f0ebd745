"""An issue's lines that repeat the repository's issue template are the form's words."""

from __future__ import annotations

from coderag_tui.core.rank.templates import is_template, template_lines, without_template_lines

MARKDOWN = "**Describe the bug**\nA clear and concise description of what the bug is.\n**Logs**\n"
FORM = (
    "body:\n  - type: textarea\n    attributes:\n      label: Steps to reproduce\n"
    "      description: |\n        Tell us what you did, step by step.\n"
)


def test_templates_are_found_where_forges_read_them() -> None:
    for path in (
        ".github/ISSUE_TEMPLATE/bug_report.md",
        ".github/ISSUE_TEMPLATE/config.yml",
        "ISSUE_TEMPLATE.md",
        ".github/pull_request_template.md",
        "docs/PULL_REQUEST_TEMPLATE.md",
        ".gitlab/issue_templates/Bug.md",
    ):
        assert is_template(path), path
    for path in ("src/template.js", "lib/issue_template_renderer.rb", "templates/index.html"):
        assert not is_template(path), path


def test_the_forms_lines_leave_the_query_and_the_reporters_stay() -> None:
    lines = template_lines([MARKDOWN, FORM])
    issue = (
        "Crash on save\n**Describe the bug**\nSaving a file with a long name crashes.\n"
        "### Steps to reproduce\n1. save a.txt\n**Logs**"
    )
    kept = without_template_lines(issue, lines)
    assert kept == "Crash on save\nSaving a file with a long name crashes.\n1. save a.txt\n**Logs**"


def test_a_question_or_a_query_of_nothing_but_template_lines_is_kept_whole() -> None:
    lines = template_lines([MARKDOWN])
    assert without_template_lines("Describe the bug", lines) == "Describe the bug"
    only_form = "**Describe the bug**\nA clear and concise description of what the bug is."
    assert without_template_lines(only_form, lines) == only_form
    assert without_template_lines("a\nb", frozenset()) == "a\nb"
