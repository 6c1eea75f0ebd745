"""Reaching a Qdrant: a server by URL or Qdrant's embedded mode in a folder, and its errors.

Only the URL the user chose is ever connected to. Messages show a URL without its user,
password or query string (they may hold keys), and every client failure becomes one
`BackendError` sentence that says the local index is untouched.

qdrant_client is imported inside functions: the package imports without it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from coderag_tui.core.index.store import StoreError
from coderag_tui.core.visible import one_line

if TYPE_CHECKING:
    from coderag_tui.settings import Settings

TIMEOUT_S = 30
NEEDS_CLIENT = "the qdrant backend needs qdrant-client: pip install 'coderag-tui[server]'."
NO_URL = (
    "the qdrant backend needs a server: pass --url http://HOST:6333 (or a folder for Qdrant's "
    "embedded mode), or set backend_url in your config or CODERAG_BACKEND_URL."
)


class BackendError(StoreError):
    """The server or its collection cannot be used; one sentence naming it and the fix.

    A StoreError, so every face that reports an index it cannot use reports this too.
    """


def client_module() -> Any:
    """qdrant_client, imported when first needed (BackendError saying how to install it)."""
    from coderag_tui.core.rank import keep_runtimes_offline

    keep_runtimes_offline()  # qdrant-client may import onnxruntime (through fastembed)
    try:
        import qdrant_client
    except ImportError:
        raise BackendError(NEEDS_CLIENT) from None
    return qdrant_client


def client_models() -> Any:
    """qdrant_client's request models (points, vectors, collection parameters)."""
    return client_module().models


def is_server_url(url: str) -> bool:
    return url.strip().lower().startswith(("http://", "https://"))


# A URL after its "scheme://": the authority (user, host, port) and the path, up to "?" or "#".
_AUTHORITY_PATH = re.compile(r"([^/?#]*)([^?#]*)")


def shown_url(url: str) -> str:
    """The URL as messages show it: no user, password or query string (they may hold keys).

    Total: a URL that does not parse (a bracket left open, a port that is no number) is shown
    as typed from its host on, since that is the part to fix.
    """
    url = url.strip()
    if not is_server_url(url):
        return one_line(url)
    if _url_problem(url):
        scheme, _, rest = url.partition("://")
        match = _AUTHORITY_PATH.match(rest)
        assert match is not None  # every text matches: both parts may be empty
        authority, path = match.groups()
        return one_line(f"{scheme}://{authority.rpartition('@')[2]}{path}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return one_line(f"{parts.scheme}://{host}{port}{parts.path}")


def _url_problem(url: str) -> str:
    """ "" when a server URL's host and port read, else what is wrong with them."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - reading it checks it: a port that is no number, or too big
    except ValueError as exc:
        return one_line(str(exc)) or "it does not parse"
    if not parts.hostname:
        return "it names no host"
    return ""


def collection_name(settings: Settings) -> str:
    """The collection of this repository and chunking: the setting, or one derived from the
    repository root's resolved path and the chunking key (never from ranking rules)."""
    if settings.backend_collection:
        return settings.backend_collection
    digest = hashlib.sha1(str(settings.repo_root).encode("utf-8", "surrogatepass")).hexdigest()
    chunking = settings.chunking_spec.key.replace(":", "-")
    return f"coderag-{digest[:12]}-{chunking}"


# Qdrant's embedded mode locks its folder: one client per folder and process, kept open
# until `close_embedded` (run at exit too, while the interpreter can still close them).
_EMBEDDED: dict[str, Any] = {}
_EMBEDDED_LOCK = threading.Lock()


def close_embedded() -> None:
    """Close every embedded-mode client this process opened (their folders are unlocked)."""
    with _EMBEDDED_LOCK:
        clients = list(_EMBEDDED.values())
        _EMBEDDED.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # a folder removed meanwhile: nothing to keep
            client.close()


@dataclass
class Server:
    """A client of one Qdrant (a server or an embedded folder) and the collection it serves."""

    client: Any
    url: str  # as messages show it
    collection: str
    embedded: bool

    @property
    def named(self) -> str:
        return f"the collection {one_line(self.collection)} at {self.url}"


def connect(settings: Settings) -> Server:
    """A client for `settings.backend_url`; nothing is asked of the server yet."""
    url = settings.backend_url.strip()
    if not url:
        raise BackendError(NO_URL)
    qdrant_client = client_module()
    name = collection_name(settings)
    if is_server_url(url):
        problem = _url_problem(url)
        if problem:
            raise BackendError(
                f"cannot use {shown_url(url)} as a Qdrant server ({problem}): give "
                "http://HOST:PORT."
            )
        try:
            client = qdrant_client.QdrantClient(
                url=url, timeout=TIMEOUT_S, check_compatibility=False
            )
        except TypeError:  # a client older than check_compatibility (1.12)
            client = qdrant_client.QdrantClient(url=url, timeout=TIMEOUT_S)
        except Exception as exc:  # a malformed URL
            raise BackendError(
                f"cannot use {shown_url(url)} as a Qdrant server ({cause_of(exc)}): give "
                "http://HOST:PORT."
            ) from None
        return Server(client, shown_url(url), name, embedded=False)
    folder = Path(url).expanduser().resolve()
    with _EMBEDDED_LOCK:
        client = _EMBEDDED.get(str(folder))
        if client is None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                client = qdrant_client.QdrantClient(path=str(folder))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise BackendError(_embedded_failed(folder, exc)) from None
                raise BackendError(
                    f"the Qdrant folder {one_line(str(folder))} is open in another process: "
                    "close it, or share the index through a Qdrant server."
                ) from None
            except Exception as exc:
                raise BackendError(_embedded_failed(folder, exc)) from None
            if not _EMBEDDED:
                atexit.register(close_embedded)
            _EMBEDDED[str(folder)] = client
    return Server(client, one_line(str(folder)), name, embedded=True)


def _embedded_failed(folder: Path, exc: BaseException) -> str:
    return (
        f"Qdrant's embedded mode cannot use {one_line(str(folder))} ({cause_of(exc)}); the local "
        "index is untouched: give a writable folder or a server URL."
    )


def cause_of(exc: BaseException) -> str:
    """The innermost cause of a client error, on one line and short."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "source", None) or exc.__cause__ or exc.__context__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    text = one_line(str(exc).strip()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "…"


@contextlib.contextmanager
def answering(server: Server) -> Iterator[None]:
    """Client failures become one BackendError sentence (the local index is never touched)."""
    try:
        yield
    except BackendError:
        raise
    except Exception as exc:
        if server.embedded:
            raise BackendError(
                f"Qdrant's embedded mode in {server.url} failed ({cause_of(exc)}); the local "
                "index is untouched."
            ) from None
        from qdrant_client.http.exceptions import UnexpectedResponse

        if isinstance(exc, UnexpectedResponse):
            status = exc.status_code
            raise BackendError(
                f"the Qdrant server at {server.url} refused a request (HTTP {status}: "
                f"{cause_of(exc)}); the local index is untouched: check the URL and the "
                "server's access rules."
            ) from None
        raise BackendError(
            f"cannot reach the Qdrant server at {server.url}: {cause_of(exc)}; the local index "
            "is untouched."
        ) from None
