"""The lexical axes of an evaluation grid: which splitter a tokenizer option builds on, and
which scorer ranks with it (the seed paper's splitter x scorer grid).

A tokenizer option is how text becomes tokens: the word splitter's four variants
(`default`, `split`, `path`, `split+path`) or the paper's other splitters, `line` and `bpe`
(`core.rank.splitters`); identifier splitting and path words apply to words, so the two axes
are one list rather than a cross product with empty cells. The scorer (`bm25`, `iou`:
`core.rank.iou`) is a second axis over every tokenizer. Each pair is one lexical list, named
in results by its tokenizer, then `/iou` when IoU scores it; any eval task (the issue grid,
a completion task) passes these through `Engine.lexical_for`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from coderag_tui.core.rank.iou import BM25, SCORERS
from coderag_tui.core.rank.splitters import BPE, LINE, WORD

# Tokenizer options that are not word splitting -> their splitter.
TOKENIZER_SPLITTERS: dict[str, str] = {"line": LINE, "bpe": BPE}


class LexicalVariant(NamedTuple):
    """One lexical list of a grid: its label in results, tokenizer option, splitter, scorer."""

    label: str
    tokenizer: str
    splitter: str
    scorer: str


def splitter_of(tokenizer: str) -> str:
    """The splitter a tokenizer option builds on (`word` for the word variants)."""
    return TOKENIZER_SPLITTERS.get(tokenizer, WORD)


def lexical_label(tokenizer: str, scorer: str) -> str:
    """How results name a lexical list: the tokenizer, `/scorer` added unless it is BM25."""
    return tokenizer if scorer == BM25 else f"{tokenizer}/{scorer}"


def check_scorers(scorers: Sequence[str]) -> None:
    """Raise ValueError naming the first unknown scorer (or an empty list)."""
    if not scorers:
        raise ValueError(f"give at least one scorer: {', '.join(SCORERS)}")
    for scorer in scorers:
        if scorer not in SCORERS:
            raise ValueError(f"unknown scorer {scorer!r}: use {', '.join(SCORERS)}")


def lexical_variants(
    tokenizers: Sequence[str], scorers: Sequence[str]
) -> tuple[LexicalVariant, ...]:
    """Every (tokenizer, scorer) pair, scorers varying fastest, each labelled."""
    return tuple(
        LexicalVariant(lexical_label(tok, scorer), tok, splitter_of(tok), scorer)
        for tok in tokenizers
        for scorer in scorers
    )
