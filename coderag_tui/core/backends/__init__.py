"""Where an index lives, between the engine and the rankers: the `Backend` protocol, the
local files (`LocalBackend`, the default) and a Qdrant collection (`QdrantBackend`).

The engine asks `backend_for` for the backend a setting names and then asks the backend;
it never asks which one it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coderag_tui.core.backends.base import Backend
    from coderag_tui.core.backends.local import LocalBackend
    from coderag_tui.settings import Backend as BackendName


def backend_for(name: BackendName, local: LocalBackend) -> Backend:
    """The backend `name` (the `backend` setting) names; `local` is this machine's index, which
    every backend reads from or is."""
    if name == "qdrant":
        from coderag_tui.core.backends.qdrant import QdrantBackend

        return QdrantBackend(local)
    return local
