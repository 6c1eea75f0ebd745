"""What a packed prompt holds and saves, in the words every face shows (CLI, TUI, MCP).

`readable` says what a reader cannot use (signatures without the body that matched, lone
lines) and what went to outlines and data files. `saved` says how many files the prompt
carries code from, in how many tokens, against what those files hold whole ("9 files in
1,940 tokens; those files hold 84k tokens"): the reading the prompt spares the model.
`stopped` says why packing ended and what it left out, counted by reason, so a prompt that
stops early says it stopped on purpose.
"""

from __future__ import annotations

from collections import Counter

from coderag_tui.core.prompt.pack import EXCLUDED, OVER_BUDGET, SECRET
from coderag_tui.core.prompt.pack_spans import BELOW_FLOOR, DATA_ALONE, OUTLINED, PAST_RELEVANCE
from coderag_tui.core.records import PackedPrompt


def tokens_label(n: int) -> str:
    """1940 -> `1,940`, 84212 -> `84k`, 1234567 -> `1.2M`: a count of tokens as read."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{round(n / 1000)}k"
    return f"{n:,}"


def saved(packed: PackedPrompt) -> str:
    """`9 files in 1,940 tokens; those files hold 84k tokens` (plus the outlined files): the
    tokens of the files' blocks against the tokens of the files whole."""
    files = packed.code_files
    outlined = len({b.path for b in packed.blocks if b.outline})
    n = len(files)
    used = sum(b.tokens for b in packed.blocks if not b.outline)
    files_word = f"{n} file{'s' if n != 1 else ''}"
    line = f"{files_word} in {tokens_label(used)} tokens"
    if packed.files_tokens is not None and n:
        if packed.files_tokens > used:
            line += f"; {'those files hold' if n != 1 else 'that file holds'} "
            line += f"{tokens_label(packed.files_tokens)} tokens"
        else:  # small files: the prompt holds them whole (headers make it the larger)
            line = f"{files_word} whole in {tokens_label(used)} tokens"
    if outlined:
        line += f"; {outlined} more file{'s' if outlined != 1 else ''} outlined (signatures)"
    return line


def readable(packed: PackedPrompt) -> str:
    """What a reader cannot use in the prompt, or that nothing of the kind is in it:
    `every block readable; outline 120 tokens` or `2 signatures without the body that
    matched, 1 lone line; data files 308 tokens` ("" for whole chunks, which are not
    counted)."""
    account = packed.account
    if account is None:
        return ""
    faults = []
    if account.bare_signatures:
        n = account.bare_signatures
        faults.append(f"{n} signature{'s' if n != 1 else ''} without the body that matched")
    if account.lone_lines:
        n = account.lone_lines
        faults.append(f"{n} lone line{'s' if n != 1 else ''}")
    line = ", ".join(faults) if faults else "every block readable"
    spent = []
    if account.outline_tokens:
        spent.append(f"outline {tokens_label(account.outline_tokens)} tokens")
    if account.data_tokens:
        spent.append(f"data files {tokens_label(account.data_tokens)} tokens")
    return "; ".join([line, *spent])


def stopped(packed: PackedPrompt) -> str:
    """Why packing ended and what it left out, by reason: `stopped: relevance ended; left
    out 37 chunks below the relevance floor, 2 over budget`."""
    counts = Counter(d.reason for d in packed.dropped)
    parts = [
        f"{counts[reason]} {label}"
        for reason, label in (
            (BELOW_FLOOR, "below the relevance floor"),
            (PAST_RELEVANCE, "worth too little beside the best"),
            (DATA_ALONE, "from data files only one list ranks high"),
            (OVER_BUDGET, "over budget"),
            (OUTLINED, "outlined only"),
            (EXCLUDED, "excluded"),
            (SECRET, "with suspected secrets"),
        )
        if counts[reason]
    ]
    head = f"stopped: {packed.stopped}" if packed.stopped else ""
    left = f"left out {', '.join(parts)}" if parts else ""
    return "; ".join(p for p in (head, left) if p)
