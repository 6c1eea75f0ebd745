"""Recall at a budget: what a packed prompt of so many tokens carries of the answer.

A ranking is only as good as the prompt built from it: the model sees the packed blocks, not
the ranks. For each budget the real packer and template fill a prompt (`Engine.prompt`, the
code `coderag prompt` runs, with an empty task so the budget is the code's), and the prompt is
scored here: the share of gold files with code in it, the share of gold lines it shows, the
tokens it used, its blocks and its distinct files.

The baseline beside it is the grep-and-read habit: read whole files in BM25's file order until
the budget is spent (`read_whole`). It says what a ranking's packing saves over opening the
files a search names.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coderag_tui.core.records import PackAccount, PackedPrompt

NO_FAULTS = PackAccount()  # a packer that does not count them
BUDGETS: tuple[int, ...] = (500, 1000, 2000, 4000, 8000, 16000)
READ_WHOLE = "read whole files"  # the baseline's name in tables and figures
READ_LIMIT = 200_000  # tokens the baseline reads at most while looking for the gold


@dataclass(frozen=True, slots=True)
class BudgetScore:
    """One prompt against one row's answer: gold files with code in the prompt (share), gold
    lines shown (share, None when the row has no gold lines), tokens used, blocks, files, and
    what a reader cannot use (`PackAccount`: signatures without their matched body, lone
    lines, outline and data-file tokens; zeros when the packer does not count them)."""

    file_recall: float
    line_recall: float | None
    tokens: int
    blocks: int
    files: int
    account: PackAccount = NO_FAULTS

    def to_json(self) -> dict[str, Any]:
        return {
            "file_recall": round(self.file_recall, 4),
            "line_recall": None if self.line_recall is None else round(self.line_recall, 4),
            "tokens": self.tokens,
            "blocks": self.blocks,
            "files": self.files,
            **_account_json(self.account),
        }


def _account_json(account: PackAccount) -> dict[str, Any]:
    return {
        "bare_signatures": account.bare_signatures,
        "lone_lines": account.lone_lines,
        "outline_tokens": account.outline_tokens,
        "data_tokens": account.data_tokens,
    }


def _line_recall(
    shown: Mapping[str, set[int]], gold_lines: Mapping[str, frozenset[int]]
) -> float | None:
    total = sum(len(lines) for lines in gold_lines.values())
    if total == 0:
        return None
    found = sum(len(lines & shown.get(path, set())) for path, lines in gold_lines.items())
    return found / total


def _file_recall(paths: set[str], gold_files: Sequence[str]) -> float:
    gold = set(gold_files)
    return len(gold & paths) / len(gold) if gold else 0.0


def prompt_recall(
    packed: PackedPrompt, gold_files: Sequence[str], gold_lines: Mapping[str, frozenset[int]]
) -> BudgetScore:
    """How much of the answer a packed prompt carries (see `BudgetScore`)."""
    shown: dict[str, set[int]] = {}
    for block in packed.blocks:
        if block.outline:  # signatures only: the file is named, its code is not in
            continue
        lines = shown.setdefault(block.path, set())
        for start, end in block.shown:
            lines.update(range(start, end + 1))
    return BudgetScore(
        file_recall=_file_recall(set(shown), gold_files),
        line_recall=_line_recall(shown, gold_lines),
        tokens=packed.tokens,
        blocks=len(packed.blocks),
        files=len(shown),
        account=packed.account or NO_FAULTS,
    )


@dataclass(frozen=True, slots=True)
class WholeFiles:
    """The grep-and-read baseline of one row: its score at each budget, and the tokens read
    until every gold file was read (None: not within `READ_LIMIT` or the ranked files)."""

    at: Mapping[int, BudgetScore]
    tokens_to_gold: int | None


def read_whole(
    ranked_files: Sequence[str],
    tokens_of: Callable[[str], int | None],
    gold_files: Sequence[str],
    gold_lines: Mapping[str, frozenset[int]],
    budgets: Sequence[int],
) -> WholeFiles:
    """Read `ranked_files` whole, in order, and score what fits in each budget.

    `tokens_of(path)` is a file's token count (None: unreadable, skipped). A file counts only
    once it is read whole within the budget, as a person reading file after file would.
    """
    gold = set(gold_files)
    read: list[tuple[str, int]] = []  # (path, tokens read once it is done)
    spent = 0
    tokens_to_gold: int | None = None
    limit = max([*budgets, 0])
    for path in ranked_files:
        if spent > READ_LIMIT or (tokens_to_gold is not None and spent > limit):
            break
        tokens = tokens_of(path)
        if tokens is None:
            continue
        spent += tokens
        read.append((path, spent))
        if tokens_to_gold is None and gold and gold <= {p for p, _ in read}:
            tokens_to_gold = spent
    at: dict[int, BudgetScore] = {}
    for budget in budgets:
        within = [(p, t) for p, t in read if t <= budget]
        paths = {p for p, _ in within}
        shown = {p: set(gold_lines.get(p, ())) for p in paths}
        at[budget] = BudgetScore(
            file_recall=_file_recall(paths, gold_files),
            line_recall=_line_recall(shown, gold_lines),
            tokens=within[-1][1] if within else 0,
            blocks=len(within),
            files=len(within),
        )
    return WholeFiles(at, tokens_to_gold)


@dataclass(frozen=True, slots=True)
class BudgetSummary:
    """Means over rows at one budget: file and line recall (line: rows with gold lines),
    tokens used, blocks and files; and totals over rows of what a reader cannot use."""

    file_recall: float
    line_recall: float | None
    tokens: float
    blocks: float
    files: float
    n: int
    n_lines: int  # rows with gold lines
    account: PackAccount = NO_FAULTS

    def to_json(self) -> dict[str, Any]:
        return {
            "file_recall": round(self.file_recall, 4),
            "line_recall": None if self.line_recall is None else round(self.line_recall, 4),
            "tokens": round(self.tokens, 1),
            "blocks": round(self.blocks, 2),
            "files": round(self.files, 2),
            "rows": self.n,
            "rows_with_lines": self.n_lines,
            **_account_json(self.account),
        }


def summarise_budgets(
    per_row: Sequence[Mapping[int, BudgetScore]],
) -> dict[int, BudgetSummary]:
    """The mean of each budget's scores over rows."""
    budgets = sorted({b for scores in per_row for b in scores})
    out: dict[int, BudgetSummary] = {}
    for b in budgets:
        scores = [row[b] for row in per_row if b in row]
        if not scores:
            continue
        lines = [s.line_recall for s in scores if s.line_recall is not None]
        out[b] = BudgetSummary(
            file_recall=statistics.fmean(s.file_recall for s in scores),
            line_recall=statistics.fmean(lines) if lines else None,
            tokens=statistics.fmean(s.tokens for s in scores),
            blocks=statistics.fmean(s.blocks for s in scores),
            files=statistics.fmean(s.files for s in scores),
            n=len(scores),
            n_lines=len(lines),
            account=PackAccount(
                bare_signatures=sum(s.account.bare_signatures for s in scores),
                lone_lines=sum(s.account.lone_lines for s in scores),
                outline_tokens=sum(s.account.outline_tokens for s in scores),
                data_tokens=sum(s.account.data_tokens for s in scores),
            ),
        )
    return out


def parse_budgets(text: str) -> tuple[int, ...]:
    """`1000,2000,8k` -> (1000, 2000, 8000); ValueError in one sentence otherwise."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        scale = 1000 if part.endswith("k") else 1
        try:
            value = int(float(part.removesuffix("k")) * scale)
        except ValueError:
            raise ValueError(
                f"budget {part!r} is not a number of tokens (e.g. 2000 or 2k)"
            ) from None
        if value < 1:
            raise ValueError(f"budget {part!r} must be at least one token")
        out.append(value)
    if not out:
        raise ValueError("give at least one budget (e.g. 1000,2000,8000)")
    return tuple(sorted(set(out)))
