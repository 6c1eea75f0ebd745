"""How chunks are ordered for a query: BM25, dense vectors, fusion, rerank, and their models.

Every model runtime coderag loads is imported by a module of this package (onnxruntime by
fastembed, qdrant-client and the int8 export; torch by sentence-transformers), so this is
where they are kept offline: on import, before any of them can load (`keep_runtimes_offline`).
"""

from __future__ import annotations

import logging
import os
import sys

# onnxruntime's official builds start Microsoft's 1DS telemetry as the module is imported:
# a device id under $XDG_CACHE_HOME/Microsoft, then lookups and uploads to
# mobile.events.data.microsoft.com from a native thread. Only this variable, in the
# environment before that import, stops all of it (onnxruntime's Privacy.md); no session
# option does, and `onnxruntime.disable_telemetry_events()` comes after the start and leaves
# the uploader running.
OFFLINE_ENVIRONMENT = {"ORT_DISABLE_TELEMETRY": "1"}


def keep_runtimes_offline() -> None:
    """Set `OFFLINE_ENVIRONMENT`, whatever the environment said: coderag promises no network
    at run time. Child processes inherit it."""
    os.environ.update(OFFLINE_ENVIRONMENT)
    if "onnxruntime" in sys.modules:  # a host process imported it first: too late to stop
        logging.getLogger(__name__).debug("onnxruntime was imported before coderag's models")


keep_runtimes_offline()
