"""`coderag index`: summary, --json, --verbose, bad input in one sentence, Ctrl-C exit 130."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import main
from coderag_tui.core.index import indexer
from coderag_tui.core.index.indexer import IndexProgress
from tests.fixtures.hostile_repo import EXPECTED_SKIPS, make_hostile_repo
from tests.fixtures.tiny_repo import FILES


def test_json_output_parses_and_counts_files(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["index", str(tiny_repo), "--index-dir", str(index_dir), "--json"])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    assert data["repo"] == str(tiny_repo.resolve())
    assert data["files_indexed"] == len(FILES)
    assert data["chunks"] > 0 and data["chunking"] == "lines:64:0"
    assert set(data["stage_seconds"]) == {"walk", "read", "scan", "chunk", "store"}
    assert Path(data["index_path"]).parent == index_dir

    main(["index", str(tiny_repo), "--index-dir", str(index_dir), "--json"])
    again = json.loads(capsys.readouterr().out)
    assert again["files_unchanged"] == len(FILES) and again["files_read"] == 0


def test_summary_names_what_was_done(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["index", str(tiny_repo), "--index-dir", str(index_dir), "--chunking", "file"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{len(FILES)} indexed, 0 unchanged, 0 removed" in out
    assert f"chunks:   {len(FILES)}" in out
    assert "chunking file" in out and "skipped:  none" in out
    assert "walk" in out and "store" in out


@pytest.mark.parametrize(
    ("path", "words"),
    [("no/such/folder", "does not exist"), ("README.md", "is not a folder")],
)
def test_bad_path_is_one_sentence_and_exit_2(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str], path: str, words: str
) -> None:
    target = tiny_repo / path
    code = main(["index", str(target), "--index-dir", str(index_dir)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.rstrip().endswith(".")
    assert words in err and str(target) in err


def test_bad_overlap_is_one_sentence_and_exit_2(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "index",
            str(tiny_repo),
            "--index-dir",
            str(index_dir),
            "--chunk-lines",
            "10",
            "--overlap",
            "10",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--overlap: must be below --chunk-lines (10)" in err


def test_verbose_lists_every_skipped_file_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_hostile_repo(tmp_path / "hostile", git=False)
    code = main(["index", str(repo), "--index-dir", str(tmp_path / "index"), "--verbose"])
    out = capsys.readouterr().out
    assert code == 0
    listed = out.split("Skipped files:\n", 1)[1]
    for path, reason in EXPECTED_SKIPS.items():
        assert f"  {path}: {reason.value}" in listed, path
    assert "invalid UTF-8: 1 files" in out and "src/latin1.py" in out


def test_verbose_gives_each_skipped_file_one_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`assets/logo.png: binary (NUL byte in the first 8 KiB) (binary file type (.png))` gave
    two causes, one of them wrong: it was skipped by its name, never read."""
    repo = make_hostile_repo(tmp_path / "hostile", git=False)
    main(["index", str(repo), "--index-dir", str(tmp_path / "index"), "--verbose"])
    out = capsys.readouterr().out
    lines = dict(
        line.strip().split(": ", 1)
        for line in out.split("Skipped files:\n", 1)[1].splitlines()
        if line.startswith("  ") and ": " in line
    )
    assert lines["assets/logo.png"] == "binary (file type .png)"
    assert lines["bin/tool"] == "binary (a NUL byte in the first 8 KiB)"
    assert lines["web/vendor.min.js"] == "minified or generated (a minified or source-map name)"
    assert lines["web/bundle.js"].startswith("minified or generated (a line of 11,017 characters")
    for reason in lines.values():
        assert ") (" not in reason, reason  # one cause each, not a reason and a detail's
    summary = out.split("Skipped files:", 1)[0]
    assert "2  binary\n" in summary and "2  minified or generated\n" in summary


def test_corrupt_index_notice_is_printed(
    tiny_repo: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["index", str(tiny_repo), "--index-dir", str(index_dir), "--json"])
    db = Path(json.loads(capsys.readouterr().out)["index_path"])
    for side in db.parent.glob(db.name + "-*"):
        side.unlink()
    db.write_bytes(b"garbage" * 1000)
    assert main(["index", str(tiny_repo), "--index-dir", str(index_dir)]) == 0
    out = capsys.readouterr().out
    assert "Note: The index at" in out and "moved it to" in out
    assert f"{len(FILES)} indexed" in out


def test_ctrl_c_exits_130_and_says_what_was_kept(
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks: Iterator[int] = iter(range(10**9))
    build_index = indexer.build_index

    def press_ctrl_c_after_three_files(*args: Any, **kw: Any) -> indexer.IndexReport:
        def progress(p: IndexProgress) -> None:
            if p.files_done >= 3:
                raise KeyboardInterrupt

        kw.update(progress=progress, batch_files=2, clock=lambda: float(next(ticks)))
        return build_index(*args, **kw)

    monkeypatch.setattr(indexer, "build_index", press_ctrl_c_after_three_files)
    code = main(["index", str(tiny_repo), "--index-dir", str(index_dir)])
    assert code == 130
    assert capsys.readouterr().err == ("coderag: interrupted; 3 files kept; run again to finish.\n")
    monkeypatch.undo()
    main(["index", str(tiny_repo), "--index-dir", str(index_dir), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (data["files_unchanged"], data["files_indexed"]) == (3, len(FILES) - 3)


def test_unknown_chunking_from_the_environment_is_one_sentence(
    tiny_repo: Path,
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODERAG_CHUNKING", "words")
    code = main(["index", str(tiny_repo), "--index-dir", str(index_dir)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "CODERAG_CHUNKING: chunking must be one of lines, ast, file, got 'words'" in err
