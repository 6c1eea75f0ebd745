"""The static first pass: a model2vec table distilled from a (tiny, locally built) transformer,
ranking every chunk at once while the model embeds, and the faces that answer without waiting.
"""

# ruff: noqa: F811 (pytest fixtures imported by name are parameters here)
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.cli import main
from coderag_tui.core.engine import Engine
from coderag_tui.core.rank import models as mr
from coderag_tui.core.rank import static
from coderag_tui.core.rank.dense import DenseIndex, dense_text
from coderag_tui.core.rank.embedders import resolve_embedder
from coderag_tui.core.records import Chunk
from coderag_tui.settings import Settings
from tests.fixtures.network_guard import install_guard
from tests.fixtures.tiny_models import tiny_models_dir, tiny_st_embedder  # noqa: F401

pytestmark = pytest.mark.slow  # builds a tiny BERT and distils it (a few seconds)


@pytest.fixture(scope="module")
def tiny_table(tiny_st_embedder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real model2vec distillation of the tiny BERT (16 dimensions)."""
    target = tmp_path_factory.mktemp("static") / "table"
    return static.distill_folder(tiny_st_embedder, target, pca_dims=16)


@pytest.fixture
def machine_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_table: Path) -> Path:
    """A user cache folder of its own whose models folder holds the tiny table where the
    distilled MiniLM would be (so no test distils the real model)."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    models = Settings().models_path
    assert str(models).startswith(str(cache))
    import shutil

    shutil.copytree(tiny_table, static.distilled_folder(models))
    return models


def test_a_distilled_table_embeds_unit_vectors_and_is_found_by_its_folder(
    tiny_table: Path, tmp_path: Path
) -> None:
    choice = resolve_embedder(Settings(repo=tmp_path, embed_model=str(tiny_table)))
    embedder = choice.embedder
    assert isinstance(embedder, static.StaticEmbedder), choice.reason
    vectors = embedder.embed_documents(["def parse config file", "return total price"])
    assert vectors.shape == (2, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Distilling again keeps the table that is there.
    before = (tiny_table / "model.safetensors").stat().st_mtime_ns
    static.distill_folder(Path("/nonexistent"), tiny_table)
    assert (tiny_table / "model.safetensors").stat().st_mtime_ns == before


def test_a_plain_table_loads_as_model2vec_loads_it(tiny_table: Path) -> None:
    """The table is handed to StaticModel directly (no model card, no hub client): its
    vectors are those of model2vec's own loader."""
    from model2vec import StaticModel

    ours = static.StaticEmbedder.load(tiny_table)
    theirs = StaticModel.from_pretrained(str(tiny_table))
    texts = ["def parse config file", "return total price " * 200, "zzzz qqqq"]
    np.testing.assert_array_equal(ours.model.encode(texts), theirs.encode(texts))
    assert ours.model.max_length == theirs.max_length
    assert ours.model.normalize == theirs.normalize


def test_the_table_keeps_only_the_first_window_of_a_long_chunk(tiny_table: Path) -> None:
    embedder = static.StaticEmbedder.load(tiny_table)
    head = "parse the config file and return the total price " * 8
    text = head * 40  # far more tokens than one window
    chunk = Chunk(path="a.py", start_line=1, end_line=1, text=text, language="python", kind="lines")
    embedded = dense_text(chunk)  # the path on a first line, then the text
    tokens = embedder.tokenizer.encode(embedded, add_special_tokens=False)
    end = tokens.offsets[embedder.window - 1][1]

    class Cache:
        def get_many(self, model: str, hashes: object) -> dict[str, np.ndarray]:
            return {}

        def put_many(self, model: str, items: object) -> None:
            return None

    index = DenseIndex.build([chunk], embedder, Cache(), max_stripes=1)
    expected = embedder.embed_documents([embedded[:end]])[0]
    assert index.complete and index.n_stripes == 1
    assert np.allclose(index.matrix[0], expected, atol=1e-6)


@pytest.fixture
def no_wait(
    tiny_repo: Path, index_dir: Path, tiny_st_embedder: Path, machine_cache: Path
) -> Settings:
    """The tiny repository with the tiny model, searches never waiting for it (a machine
    cache of its own holds the table)."""
    return Settings(
        repo=tiny_repo, index_dir=index_dir, embed_model=str(tiny_st_embedder), dense_wait=False
    )


def test_no_wait_answers_from_the_first_pass_until_the_model_covers_every_chunk(
    no_wait: Settings,
) -> None:
    settings = no_wait
    with Engine.open(settings) as engine:
        dense = engine.dense
        assert dense is not None and dense.available and dense.first_pass
        assert dense.coverage == 1.0 and dense.model == static.STATIC_LABEL
        assert any("has not embedded every chunk yet" in n for n in engine.notices)
        ranked = engine.search("refund a card payment", settings).rankings["dense"]
        assert ranked.available and ranked.hits
        lexical = engine.lexical
        assert lexical is not None
        full = engine.open_dense(settings, lexical)  # what `coderag index --dense` does
        assert full.index is not None and full.index.complete and not full.first_pass
    with Engine.open(settings) as engine:
        dense = engine.dense
        assert dense is not None and not dense.first_pass and dense.coverage == 1.0
        assert dense.describe()["stage"] == "model"


def test_a_later_search_loads_the_table_while_it_checks_the_index_until_the_model_is_done(
    no_wait: Settings,
) -> None:
    settings = no_wait
    assert not Engine(settings).prefetch_first_pass(settings)  # no first pass saved yet
    with Engine.open(settings) as engine:
        before = engine.search("refund a card payment", settings).rankings["dense"].hits
    assert Engine(settings).prefetch_first_pass(settings)
    with Engine.open(settings) as engine:  # the table comes from the thread
        dense = engine.dense
        assert dense is not None and dense.first_pass
        assert engine.search("refund a card payment", settings).rankings["dense"].hits == before
        lexical = engine.lexical
        assert lexical is not None
        engine.open_dense(settings, lexical)  # the model embeds every chunk
    assert not Engine(settings).prefetch_first_pass(settings)  # the model's list is used now


def test_the_first_pass_says_why_it_is_off(tiny_repo: Path, index_dir: Path) -> None:
    settings = Settings(repo=tiny_repo, index_dir=index_dir, dense_first_pass="off")
    with Engine(settings) as engine:
        lexical = engine.update_index(settings)
        first = engine.open_first_pass(settings, lexical)
    assert not first.available and "dense_first_pass = off" in first.reason


def test_the_cli_says_what_dense_covers_and_index_dense_completes_it(
    tiny_repo: Path,
    index_dir: Path,
    tiny_st_embedder: Path,
    machine_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    common = [str(tiny_repo), "--index-dir", str(index_dir), "--embed-model", str(tiny_st_embedder)]
    assert main(["search", "refund", *common, "--no-wait", "--json"]) == 0
    out, err = capsys.readouterr()
    dense = json.loads(out)["dense"]
    assert dense["stage"] == "first pass" and dense["coverage"] == 1.0
    assert "static first pass" in err and "`coderag index --dense` embeds the rest" in err
    assert main(["index", *common, "--dense", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["dense"]
    assert report["coverage"] == 1.0 and report["embedded"] > 0 and report["stage"] == "model"
    assert main(["search", "refund", *common, "--no-wait", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["dense"]["stage"] == "model" and "covers" not in err


def test_a_first_pass_runs_first_on_a_fresh_machine_from_the_shipped_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_table: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-machine"))
    settings = Settings(repo=tmp_path)
    engine = Engine(settings)
    # A machine's first run: nothing distilled, the shipped table is at hand at once.
    assert static.table(settings.models_path) == (static.SHIPPED_TABLE, static.SHIPPED_KEY)
    assert engine.first_pass_worth(settings, 500)
    import shutil

    shutil.copytree(tiny_table, static.distilled_folder(settings.models_path))
    assert static.table(settings.models_path) == (
        static.distilled_folder(settings.models_path),
        static.STATIC_KEY,
    )
    assert not engine.first_pass_worth(settings, 0)
    assert not engine.first_pass_worth(settings.with_(dense_first_pass="off"), 10**6)


def test_the_shipped_table_embeds_like_the_shipped_model_at_a_glance(tmp_path: Path) -> None:
    """The shipped table is MiniLM's vocabulary in 256 dimensions: a question lands nearer the
    code that answers it than beside unrelated text."""
    table = static.load_distilled(tmp_path / "no-models-here")
    assert table is not None and table.name == static.SHIPPED_KEY
    docs = table.embed_documents(
        [
            "def read_file(path):\n    with open(path) as handle:\n        return handle.read()",
            "The cat sat on the warm mat and purred at the afternoon sun.",
        ]
    )
    assert docs.shape == (2, 256)
    scores = docs @ table.embed_query("read the contents of a file")
    assert scores[0] > scores[1]


def test_a_search_waits_a_bounded_time_for_the_model_then_answers_from_the_first_pass(
    tiny_repo: Path,
    index_dir: Path,
    tiny_st_embedder: Path,
    machine_cache: Path,
) -> None:
    import time

    settings = Settings(
        repo=tiny_repo,
        index_dir=index_dir,
        embed_model=str(tiny_st_embedder),
        embed_batch_size=1,
        chunk_lines=4,
        dense_wait=1,
    )

    def slow(done: int, total: int) -> None:  # a model far slower than the wait
        time.sleep(0.4)

    with Engine.open(settings, embed_progress=slow) as engine:
        dense = engine.dense
        assert dense is not None and dense.available and dense.first_pass
        (note,) = [n for n in engine.notices if "a search waits" in n]
        assert "in the 1 s a search waits, so dense is the static first pass" in note
        assert "`coderag index --dense` embeds the rest" in note and "--wait" in note
        assert engine.search("refund a card payment", settings).rankings["dense"].hits
    # What the model embedded in that second is kept: a run that waits for it all finishes.
    with Engine.open(settings.with_(dense_wait="all")) as engine:
        dense = engine.dense
        assert dense is not None and not dense.first_pass and dense.coverage == 1.0


def test_dense_wait_reads_seconds_all_and_the_old_true_and_false() -> None:
    from coderag_tui.settings import DENSE_WAIT_ALL

    assert Settings().dense_wait == 0  # answer at once: the background process carries on
    # Values as a config file or the environment gives them (text, or an older true/false).
    assert Settings().with_(dense_wait="all").dense_wait == DENSE_WAIT_ALL
    assert Settings(dense_wait=True).dense_wait == DENSE_WAIT_ALL
    assert Settings().with_(dense_wait="false").dense_wait == 0
    assert Settings().with_(dense_wait="1").dense_wait == 1  # a number, not "true"


def test_a_search_does_not_wait_for_a_model_that_could_not_finish_in_time(
    tiny_repo: Path,
    index_dir: Path,
    tiny_st_embedder: Path,
    machine_cache: Path,
) -> None:
    from coderag_tui.core.engine import MODEL_CHUNKS_PER_S

    settings = Settings(
        repo=tiny_repo, index_dir=index_dir, embed_model=str(tiny_st_embedder), chunk_lines=1
    )
    with Engine.open(settings.with_(dense_wait=0)) as engine:  # distils the table once
        lexical = engine.lexical
        assert lexical is not None and len(lexical.chunks) > MODEL_CHUNKS_PER_S
    with Engine.open(settings.with_(dense_wait=1)) as engine:
        dense = engine.dense
        assert dense is not None and dense.first_pass and dense.coverage == 1.0
        (note,) = [n for n in engine.notices if "a search waits" in n]
        assert "needs about 1 min for the rest, more than the 1 s a search waits" in note


DISTIL_AND_TELL = """\
import os, sys
from pathlib import Path
from coderag_tui.core.rank import static

static.distill_folder(Path(sys.argv[1]), Path(sys.argv[2]), pca_dims=16)
print(sorted(k for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if k in os.environ))
"""


def test_distilling_leaves_the_environment_alone_and_opens_no_connection(
    tiny_st_embedder: Path, tmp_path: Path
) -> None:
    """The offline switch goes to the library calls, not into the process's environment: a
    fresh interpreter without the hub's variables distils the table, connects nowhere and
    ends with its environment as it began."""
    root = Path(__file__).resolve().parents[2]
    guard = install_guard(tmp_path / "guard")
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
        },
        "HF_HOME": str(tmp_path / "hf"),  # no cached hub model to fall back on
        "PYTHONPATH": os.pathsep.join([str(guard), str(root)]),
        "NETWORK_GUARD_LOG": str(tmp_path / "network.log"),
    }
    target = tmp_path / "table"
    done = subprocess.run(
        [sys.executable, "-c", DISTIL_AND_TELL, str(tiny_st_embedder), str(target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert not (tmp_path / "network.log").exists()
    assert mr.is_static_folder(target)
