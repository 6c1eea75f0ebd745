"""Which repository this is, for shared state that must not be written from another one.

A collection on a shared server records the identity of the repository that made it, and a
push from any other repository is refused. In a git work tree with full history the identity
is its first commits (the commits with no parent that HEAD descends from): every clone of a
project shares them, on any machine and at any path, so a team's machines and CI can all
update one collection. Elsewhere (no git, no commit yet, a shallow clone whose oldest commit
moves) it is this machine's name and the folder's resolved path, hashed.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from coderag_tui.core import git

_GIT_TIMEOUT_S = 30


def _git(root: str, *argv: str) -> str | None:
    out = git.output(root, *argv, timeout=_GIT_TIMEOUT_S)
    return None if out is None else out.decode("ascii", errors="replace").strip()


def repository_identity(root: Path) -> str:
    """`git:<first commits>` for a git work tree with its whole history, else
    `path:<digest of this machine's name and the resolved path>`."""
    real = os.path.realpath(root)
    top = _git(real, "rev-parse", "--show-toplevel")
    if top is not None and os.path.realpath(top) == real:
        shallow = _git(real, "rev-parse", "--is-shallow-repository")
        roots = _git(real, "rev-list", "--max-parents=0", "HEAD")
        if shallow == "false" and roots:
            return "git:" + ",".join(sorted(roots.split()))
    where = f"{socket.gethostname()}:{real}".encode("utf-8", "surrogatepass")
    return "path:" + hashlib.sha256(where).hexdigest()[:32]
