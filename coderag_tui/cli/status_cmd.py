"""`coderag status [PATH]`: the index, the dense list a search would use, and the background
embedding's progress with its time left, without building or embedding anything."""

from __future__ import annotations

import argparse
from typing import Any

from coderag_tui.cli.common import add_repo_args, print_json, settings_from_args
from coderag_tui.core.visible import visible


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="what the index holds and what the background embedding is doing",
        description=(
            "Show the repository's index (chunks, files), which dense list a search would "
            "rank with now, and how far the background embedding has come, with its time "
            "left. Nothing is built or embedded."
        ),
    )
    add_repo_args(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object for scripts")


def describe(settings: Any) -> dict[str, Any]:
    """The status as a JSON-ready record (also what `coderag mcp`'s status adds)."""
    from coderag_tui.core.engine import Engine, capped_note, model_started
    from coderag_tui.core.rank.definitions import definitions_dir
    from coderag_tui.core.rank.definitions_follow import being_built
    from coderag_tui.core.rank.embedders import OFFLINE_LABEL
    from coderag_tui.core.rank.embedding_status import read_status

    record: dict[str, Any] = {"repo": str(settings.repo_root), "index": None}
    with Engine(settings) as engine:
        lexical = engine.saved_lexical(settings)
        if lexical is not None:
            n_chunks = len(lexical.chunks)
            record["index"] = {
                "chunks": n_chunks,
                "files": lexical.files,
                "chunking": settings.chunking_spec.key,
                "definitions_pending": being_built(definitions_dir(settings)),
            }
            full = engine.open_dense(
                settings, lexical, embed_missing=False, prepare=False, partial=False
            )
            complete = full.available and full.index is not None and full.index.complete
            model = full.model or OFFLINE_LABEL
            record["dense"] = {
                "model": model,
                "complete": complete,
                "reason": full.reason if not full.available and not full.pending else "",
                "capped": (
                    capped_note(settings, model, n_chunks)
                    if not complete and not model_started(settings, n_chunks)
                    else ""
                ),
            }
    status = read_status(settings.index_path)
    record["background"] = (
        None
        if status is None
        else {
            "stage": status.stage,
            "done": status.done,
            "total": status.total,
            "eta_s": status.eta_s(),
            "says": status.describe(),
        }
    )
    return record


def lines(record: dict[str, Any]) -> list[str]:
    out = [f"repository: {record['repo']}"]
    index = record["index"]
    if index is None:
        out.append("index:      none yet: `coderag index` or a first search builds it")
        return out
    out.append(
        f"index:      {index['chunks']:,} chunks in {index['files']:,} files ({index['chunking']})"
    )
    if index.get("definitions_pending"):
        out.append(
            "signals:    the definitions are being parsed in the background; searches rank "
            "without them until then"
        )
    dense = record.get("dense") or {}
    if dense.get("reason"):
        out.append(f"dense:      off — {dense['reason']}")
    elif dense.get("complete"):
        out.append(f"dense:      {dense['model']} covers every chunk")
    else:
        out.append(f"dense:      {dense.get('model')} has not embedded every chunk yet")
    background = record["background"]
    if background is not None:
        out.append(f"background: {background['says']}")
    elif dense.get("capped"):
        out.append(f"background: {dense['capped']}")
    elif not dense.get("complete") and not dense.get("reason"):
        out.append("background: none runs; the next search starts it (or `coderag index --dense`)")
    return out


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    record = describe(settings)
    if args.json:
        print_json(record)
    else:
        print(visible("\n".join(lines(record))))
    return 0
