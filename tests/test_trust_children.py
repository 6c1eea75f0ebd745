"""A child process ends when its parent does, whatever the signal state (issue "Trust III",
item 8).

The reproduction: `coderag index &` from a script starts with SIGINT ignored, and its BM25
child inherited that; killed with -9, the parent left the child looping for ever (40+ minutes
at ~12% CPU each), because the child's way to stop, an interrupt, was a no-op under SIG_IGN.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.settings import Settings
from tests.fixtures.orphans import outlives_its_parent
from tests.fixtures.tiny_repo import make_tiny_repo

PARENT = """
import json, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a job started in the background by a script
from coderag_tui.core.rank import bm25_process, definitions_process
from coderag_tui.core.rank.bm25_index import BM25Options
args = {{
    "path": sys.path,
    "store": {store!r},
    "spec_key": {spec!r},
    "options": BM25Options().as_dict(),
    "directory": {folder!r},
}}
boot = {boot!r}
child = definitions_process.spawn(boot, args, bm25_process.Child, lambda said: None)
print(child.process.pid, flush=True)
time.sleep(600)
"""


def test_a_child_ends_when_its_parent_is_killed_whatever_the_signal_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from coderag_tui.core.rank import bm25_process

    repo = make_tiny_repo(tmp_path / "shop")
    ix = tmp_path / "ix"
    assert main(["index", str(repo), "--index-dir", str(ix)]) == 0
    capsys.readouterr()
    (store,) = ix.glob("*.sqlite")
    # The BM25 child follows the build and waits for the parent's word that it is written.
    script = PARENT.format(
        store=str(store),
        spec=Settings(repo=repo).chunking_spec.key,
        folder=str(tmp_path / "bm25"),
        boot=bm25_process._BOOT,
    )
    # The child is following the build, waiting for its parent's word, when it is killed.
    assert not outlives_its_parent(script, settle_s=1.0), "the child outlived its parent"
