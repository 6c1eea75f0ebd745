"""A repository chooses no model, and no model file holds coderag (issue "Trust IV", item 2;
cases 2 to 5).

Each test reproduces what an attacker did against main before the fix: a repository's
`.coderag.toml` named a model inside it (a learned ranker whose tree points at itself hung
the search; a looping or folding ONNX graph kept the embedder or the search busy; a model
folder whose `config.json` is a FIFO hung the search), for every kind of model coderag loads:
static, ONNX, sentence-transformers, learned and cross-encoder. A model the user names is
checked too: its folder holds only regular files, a learned ranker is one tree per tree, and
a load that does not end is abandoned with one sentence.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank.embedders import EMBEDDERS, resolve_embedder
from coderag_tui.core.rank.learned import SHIPPED_MODEL
from coderag_tui.core.rank.rerank import RERANKERS, resolve_reranker
from coderag_tui.core.rank.static import SHIPPED_TABLE
from coderag_tui.settings import Settings, read_settings
from tests.fixtures.cli_run import run_cli_child
from tests.fixtures.tiny_models import (  # noqa: F401 - pytest fixtures
    no_cached_models,
    tiny_fastembed_cross_encoder,
    tiny_fastembed_embedder,
    tiny_models_dir,
    tiny_st_cross_encoder,
    tiny_st_embedder,
)
from tests.fixtures.tiny_repo import make_tiny_repo

SHIPPED_RANKER = Path(__file__).parents[1] / "coderag_tui" / "core" / "rank" / SHIPPED_MODEL
KINDS = ["static", "onnx", "sentence-transformers", "learned", "cross-encoder"]


def _model_of(kind: str, request: pytest.FixtureRequest) -> Path:
    """A real model folder (or, learned, a model file) of `kind`, built or shipped."""
    if kind == "static":
        return SHIPPED_TABLE
    if kind == "learned":
        return SHIPPED_RANKER
    fixture = {
        "onnx": "tiny_fastembed_embedder",
        "sentence-transformers": "tiny_st_embedder",
        "cross-encoder": "tiny_fastembed_cross_encoder",
    }[kind]
    return Path(request.getfixturevalue(fixture))


def _copy(model: Path, target: Path) -> Path:
    if model.is_dir():
        shutil.copytree(model, target)
    else:
        shutil.copy(model, target)
        shutil.copy(model.with_suffix(".json"), target.with_suffix(".json"))
    return target


def _setting(kind: str) -> str:
    return "rerank_model" if kind in ("learned", "cross-encoder") else "embed_model"


def _chosen(kind: str, settings: Settings) -> tuple[str, str]:
    """The name of the model coderag would run for `kind` (or "") and why none."""
    if _setting(kind) == "rerank_model":
        rerank = resolve_reranker(settings)
        return getattr(rerank.reranker, "name", ""), rerank.reason
    dense = resolve_embedder(settings, offline_package=lambda: None)
    return getattr(dense.embedder, "name", ""), dense.reason


def _within(seconds: float, work: Callable[[], Any], unblock: Callable[[], None]) -> Any:
    """`work()` in a thread, which must answer within `seconds`; else `unblock()` frees it and
    the test fails (main waited on a FIFO or a load for ever)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(10)
        pytest.fail(f"no answer within {seconds:g} s")
    return box[0]


@pytest.mark.usefixtures("no_cached_models")
@pytest.mark.parametrize("kind", KINDS)
def test_a_repository_never_chooses_a_model(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    planted = _copy(_model_of(kind, request), repo / ("ranker.txt" if kind == "learned" else "m"))
    extra = 'rerank_backend = "learned"\n' if kind == "learned" else ""
    (repo / ".coderag.toml").write_text(f'{extra}{_setting(kind)} = "{planted.name}"\n')
    loaded = read_settings({"repo": repo}, environ={}, config_file=tmp_path / "none.toml")
    (note,) = loaded.warnings
    assert f"ignored {_setting(kind)} (it chooses a model, which only you may do)" in note
    name, _ = _chosen(kind, loaded.settings)
    assert str(repo) not in name  # the repository's model was never loaded
    # The same model named by the user is theirs to run.
    mine = loaded.settings.with_(**{_setting(kind): str(planted)})
    name, reason = _chosen(kind, mine)
    assert str(planted) in name, reason


@pytest.mark.usefixtures("no_cached_models")
def test_your_hub_name_never_loads_a_folder_of_that_name_in_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_tiny_repo(tmp_path / "shop")
    shutil.copytree(SHIPPED_TABLE, repo / "BAAI" / "bge-small-en-v1.5")
    monkeypatch.chdir(repo)  # where a user runs coderag, the hub name a path from here
    hub = Settings(repo=repo, embed_model="BAAI/bge-small-en-v1.5")
    name, reason = _chosen("static", hub)
    assert name == "" and "not in the local cache" in reason, (name, reason)
    # Named as the folder it is, it is the user's to run.
    name, reason = _chosen("static", hub.with_(embed_model="./BAAI/bge-small-en-v1.5"))
    assert str(repo / "BAAI") in name, reason


def _cyclic_ranker(folder: Path) -> Path:
    """The shipped ranker with its first tree's root split leading back to itself."""
    text = SHIPPED_RANKER.read_text()
    head, _, rest = text.partition("\nTree=0\n")
    tree, sep, tail = rest.partition("\n\n")
    lines = [
        "left_child=0 " + line.split("=", 1)[1].split(" ", 1)[1]
        if line.startswith("left_child=")
        else line
        for line in tree.splitlines()
    ]
    path = folder / "cyclic.txt"
    path.write_text(head + "\nTree=0\n" + "\n".join(lines) + sep + tail)
    shutil.copy(SHIPPED_RANKER.with_suffix(".json"), path.with_suffix(".json"))
    return path


@pytest.mark.parametrize("who", ["repository", "user"])
def test_a_learned_ranker_with_a_cycle_never_hangs_a_search(tmp_path: Path, who: str) -> None:
    """`learned._depth` followed the self-loop for ever; the search runs in a child with a
    minute to spare, so the old code fails it."""
    repo = make_tiny_repo(tmp_path / "shop")
    ranker = _cyclic_ranker(repo)
    argv = ["search", "cart total", str(repo), "--no-dense", "--rerank", "--json",
            "--index-dir", str(tmp_path / "ix")]  # fmt: skip
    if who == "repository":
        (repo / ".coderag.toml").write_text(
            f'rerank_backend = "learned"\nrerank_model = "{ranker.name}"\n'
        )
    else:
        argv += ["--rerank-backend", "learned", "--rerank-model", str(ranker)]
    done = run_cli_child(*argv)
    assert done.returncode == 0, done.stderr
    assert "shop/cart.py" in done.stdout
    if who == "repository":
        assert "ignored rerank_model (it chooses a model" in done.stderr
    else:
        assert "a tree's splits do not form a tree" in done.stderr


@pytest.mark.parametrize(
    ("kids", "why"),
    [
        ("left_child=0 -1", "splits do not form a tree"),
        ("left_child=5 -1", "splits do not form a tree"),
        ("left_child=-1 -1", "leaves do not form a tree"),
    ],
    ids=["itself", "out-of-range", "a-leaf-twice"],
)
def test_a_learned_ranker_is_checked_before_a_tree_is_walked(
    tmp_path: Path, kids: str, why: str
) -> None:
    from coderag_tui.core.rank.learned import LearnedModel, ModelError

    shipped = SHIPPED_RANKER.read_text()
    tree = (
        "Tree=0\nnum_leaves=3\nnum_cat=0\nsplit_feature=0 1\nsplit_gain=1 1\n"
        "threshold=0.5 0.5\ndecision_type=2 2\n{kids}\nright_child=1 -3\n"
        "leaf_value=0.1 0.2 0.3\nleaf_weight=1 1 1\nleaf_count=1 1 1\n"
        "internal_value=0 0\ninternal_weight=1 1\ninternal_count=2 2\nshrinkage=1\n\n"
    )
    header = shipped.partition("\nTree=")[0]
    path = tmp_path / "bad.txt"
    path.write_text(header + "\n" + tree.format(kids=kids) + "end of trees\n")
    with pytest.raises(ModelError, match=why):
        LearnedModel.load(path)
    deep_kids = " ".join(str(n) for n in range(1, 80)) + " -1"
    deep = (
        "Tree=0\nnum_leaves=81\nnum_cat=0\n"
        f"split_feature={' '.join(['0'] * 80)}\nthreshold={' '.join(['0.5'] * 80)}\n"
        f"decision_type={' '.join(['2'] * 80)}\nleft_child={deep_kids}\n"
        f"right_child={' '.join(str(-n) for n in range(2, 82))}\n"
        f"leaf_value={' '.join(['0.1'] * 81)}\ninternal_value={' '.join(['0'] * 80)}\n\n"
    )
    path.write_text(header + "\n" + deep + "end of trees\n")
    with pytest.raises(ModelError, match="deeper than 64 splits"):
        LearnedModel.load(path)


def _fifo_in(kind: str, model: Path, target: Path) -> Path:
    """A copy of `model` whose `config.json` (learned: the model file itself) is a FIFO, as a
    tarball can carry one."""
    if kind == "learned":
        target.mkdir()
        fifo = target / "ranker.txt"
        os.mkfifo(fifo)
        return fifo
    shutil.copytree(model, target)
    (target / "config.json").unlink()
    os.mkfifo(target / "config.json")
    return target


def _unblock(fifo: Path) -> Callable[[], None]:
    def unblock() -> None:  # a writer that closes at once: the blocked reader sees the end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    return unblock


@pytest.mark.usefixtures("no_cached_models")
@pytest.mark.parametrize("kind", KINDS)
def test_a_model_file_that_is_a_fifo_never_hangs_a_search(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    model = _fifo_in(kind, _model_of(kind, request), tmp_path / "m")
    settings = Settings(repo=make_tiny_repo(tmp_path / "shop")).with_(
        **{_setting(kind): str(model)},
        **({"rerank_backend": "learned"} if kind == "learned" else {}),
    )
    fifo = model if kind == "learned" else model / "config.json"
    name, reason = _within(30, lambda: _chosen(kind, settings), _unblock(fifo))
    assert str(model) not in name
    assert "not a regular file" in reason and "\n" not in reason, reason


@pytest.mark.parametrize("kinds", [EMBEDDERS, RERANKERS], ids=["embedder", "cross-encoder"])
def test_a_model_that_never_finishes_loading_is_abandoned(
    kinds: mr.ModelKind[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph onnxruntime folds for minutes while it opens a session took a search 68 s; a
    load that never ends (here: one waiting on an event) is abandoned at the bound."""
    monkeypatch.setattr(mr, "LOAD_TIMEOUT_S", 0.5, raising=False)
    released = threading.Event()

    def never_done(backend: str, name: str, *, allow_download: bool, folder: Path | None) -> Any:
        released.wait(60)
        return None

    folder = shutil.copytree(SHIPPED_TABLE, tmp_path / "m")
    stuck = dataclasses.replace(kinds, load=never_done)
    try:
        model, problem = _within(
            20, lambda: mr.resolve_model(stuck, "auto", str(folder), allow_download=False),
            released.set,
        )  # fmt: skip
    finally:
        released.set()
    assert model is None
    assert "took longer than 0.5 s, so it was abandoned" in problem and "\n" not in problem
