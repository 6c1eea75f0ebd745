"""An index remembers the settings that decide which files it holds (max_file_bytes, …).

A later run keeps them unless the user gave another value; a given value re-checks every
file and says so. Faces that know what the user gave tell the engine (`explicit`); the TUI
and other faces that do not get "a value other than the default was given".
"""

from __future__ import annotations

from pathlib import Path

from coderag_tui.core.engine import Engine
from coderag_tui.settings import Settings, read_settings

BIG = "data/big_table.py"


def _with_big_file(repo: Path) -> None:
    rows = "".join(f"ZEBRA_ROW_{i} = {i * 7}  # zebra lookup table row\n" for i in range(40_000))
    (repo / BIG).parent.mkdir(parents=True, exist_ok=True)
    (repo / BIG).write_text(rows, encoding="utf-8")


def _paths(engine: Engine, settings: Settings) -> tuple[set[str], tuple[str, ...]]:
    lexical = engine.update_index(settings)
    return {c.path for c in lexical.chunks}, lexical.notices


def test_an_engine_not_told_what_was_given_keeps_the_index_build_settings(
    tiny_repo: Path, tmp_path: Path
) -> None:
    _with_big_file(tiny_repo)
    base = Settings(repo=tiny_repo, index_dir=tmp_path / "ix")
    large = base.with_(max_file_bytes=5_000_000)
    with Engine(large, explicit=frozenset({"max_file_bytes"})) as engine:
        assert BIG in _paths(engine, large)[0]

    with Engine(base) as engine:  # the TUI's way: every value is the default
        paths, notices = _paths(engine, base)
    assert BIG in paths
    assert not any("max_file_bytes" in n for n in notices)

    small = base.with_(max_file_bytes=500_000)  # not the default: the user chose it
    with Engine(small) as engine:
        paths, notices = _paths(engine, small)
    assert BIG not in paths
    (note,) = [n for n in notices if "max_file_bytes" in n]
    assert "500000" in note and "5000000" in note


def test_an_explicit_default_value_is_used_when_the_face_says_it_was_given(
    tiny_repo: Path, tmp_path: Path
) -> None:
    _with_big_file(tiny_repo)
    base = Settings(repo=tiny_repo, index_dir=tmp_path / "ix")
    large = base.with_(max_file_bytes=5_000_000)
    with Engine(large, explicit=frozenset({"max_file_bytes"})) as engine:
        engine.update_index(large)
    with Engine(base, explicit=frozenset({"max_file_bytes"})) as engine:
        paths, notices = _paths(engine, base)
    assert BIG not in paths and any("re-checking every file" in n for n in notices)


def test_read_settings_names_the_settings_some_source_gave(tmp_path: Path) -> None:
    loaded = read_settings(
        {"repo": tmp_path, "max_line_chars": 5, "k": None},
        environ={"CODERAG_MAX_FILE_BYTES": "9"},
        config_file=tmp_path / "none.toml",
    )
    assert {"repo", "max_line_chars", "max_file_bytes"} <= loaded.explicit
    assert "k" not in loaded.explicit and "budget" not in loaded.explicit
