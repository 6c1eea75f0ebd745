"""The one content hash: the identity of file texts, chunk texts and embedded stripes."""

from __future__ import annotations

import hashlib


def text_hash(text: str) -> str:
    """SHA-1 hex digest of the text's UTF-8 bytes (lone surrogates kept, so any str hashes).

    Files, chunks and the embedding cache are keyed by it, so unchanged text is never read,
    chunked or embedded twice.
    """
    return utf8_hash(text.encode("utf-8", "surrogatepass"))


def utf8_hash(data: bytes) -> str:
    """`text_hash` of a text already encoded as above (the indexer also scans those bytes)."""
    return hashlib.sha1(data).hexdigest()
