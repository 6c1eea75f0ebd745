"""Shared fixtures: a tiny real repository, and an index directory inside the test's tmp."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.tiny_repo import make_tiny_repo

# Tests never reach a model hub or a tokenizer download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # should a test import onnxruntime first
# No test leaves a background embedding process behind unless it asks for one (and waits it).
os.environ["CODERAG_DENSE_BACKGROUND"] = "0"


# What the developer's terminal and session put in the environment: inside tmux, over SSH,
# with a display or NO_COLOR, copying and colours take other paths than on a plain machine.
TERMINAL_VARIABLES = (
    "TMUX",
    "TMUX_PANE",
    "STY",
    "TERM",
    "TERM_PROGRAM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "SSH_TTY",
)


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test sees the same plain terminal, whatever the developer runs it in; a test
    about tmux, SSH or a display sets the variables it needs itself."""
    for name in TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# The user's own folders, as they were when the suite started (for the test that checks no
# test writes there).
HOME_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
REAL_HOME = {name: os.environ[name] for name in HOME_VARIABLES if name in os.environ}


@pytest.fixture(autouse=True)
def private_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Every test has a machine of its own: a HOME, XDG folders and a TMPDIR nobody else
    uses, so no test reads or writes the developer's config, caches, saved prompts or
    models, nor a shared /tmp; and a runtime folder of its own, so no test asks a
    `coderag serve` someone runs on this machine (short: a socket's path must fit in 107
    bytes). A test that needs other folders sets them itself."""
    runtime = Path(tempfile.mkdtemp(prefix="cr-"))
    machine = tmp_path_factory.mktemp("machine")
    home = machine / "home"
    folders = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "TMPDIR": machine / "tmp",
        "XDG_RUNTIME_DIR": runtime,
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield home
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def same_priority() -> Iterator[None]:
    """No test changes the priority of the test process: a suite niced to 19 by one test gets
    almost no CPU on a busy machine for every test after it (the background embedder and the
    model workers lower only their own process or thread)."""
    before = os.getpriority(os.PRIO_PROCESS, os.getpid())
    yield
    after = os.getpriority(os.PRIO_PROCESS, os.getpid())
    assert after == before, f"this test changed the test process's nice value ({before} → {after})"


@pytest.fixture
def private_runtime_dir(private_home: Path) -> Path:
    """This test's runtime folder (`XDG_RUNTIME_DIR`, made by `private_home`)."""
    return Path(os.environ["XDG_RUNTIME_DIR"])


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    return make_tiny_repo(tmp_path / "shop")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "index"
    path.mkdir()
    return path


# Fixtures that build a model (a tiny BERT exported to ONNX, or the packaged MiniLM): a test
# that asks for one is slow, whatever its file says.
MODEL_FIXTURES = frozenset(
    {
        "tiny_st_embedder",
        "tiny_st_cross_encoder",
        "tiny_fastembed_embedder",
        "tiny_fastembed_cross_encoder",
    }
)


# Modules whose tests start coderag processes, each paying an interpreter's start-up: a
# server and its clients, an MCP session, another process racing for the index, the CLI run
# several times per test. Slow as a whole; the full suite and CI run them.
SPAWNING_MODULES = frozenset(
    {
        "test_cli_serve.py",
        "test_mcp.py",
        "test_cli_tune.py",
        "test_cli_safety.py",
        "test_trust.py",
        "test_trust_serve.py",
        "test_index_integrity.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`slow` on every test that builds a model or starts coderag processes; `tui` on every
    Pilot and snapshot test, so the fast loop (`-m "not slow and not tui"`) is the core and
    the CLI's quick paths."""
    tui_folder = Path(__file__).parent / "tui"
    for item in items:
        if MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if Path(str(item.fspath)).name in SPAWNING_MODULES:
            item.add_marker(pytest.mark.slow)
        if tui_folder in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.tui)
