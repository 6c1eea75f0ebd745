"""A small code-to-code check for the structure-aware lists (issue 27 item 2), from the
NL dev set's repositories at their base commits.

Each row is a completion point: a target line that uses a class or function defined in
exactly one other file of the benchmark folder (the definitions index's tree-sitter
queries say which; called, or a capitalised type name), the QUERY_LINES lines before it as
the query (its `origin`, so the query's own chunk is left out and the structure-aware
lists start from its file), and the defining file as the gold. Rows are drawn per
repository with a fixed seed, so the set is the same on every machine.

    PYTHONPATH=. python benchmarks/code_to_code_rows.py OUT.jsonl \
        [--dataset ../shared/bench/nl_dev.jsonl] [--repos /work/.mirror] \
        [--tree-cache DIR] [--per-repo 20] [--seed 0]

then `coderag eval OUT.jsonl --repos /work/.mirror --modes bm25,path-distance,imports`.
The completion task (`coderag eval --completion`, issue 27 item 1) is the product's version
of this; this script only exists so the lists could be measured before it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from pathlib import Path

from coderag_tui.core.eval.datasets import (
    CandidateFilter,
    find_repository,
    is_test_path,
    load_dataset,
    materialise_tree,
)
from coderag_tui.core.index.languages import language_for
from coderag_tui.core.rank.definitions import file_definitions

QUERY_LINES = 10
MIN_NAME = 4  # shorter names (`get`, `run`) are defined everywhere
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def rows_for(
    repo: str, commit: str, root: str, tree: Path, per_repo: int, seed: int
) -> list[dict[str, object]]:
    """Up to `per_repo` completion rows of one repository tree (see the module docstring)."""
    files = sorted(
        p.relative_to(tree).as_posix()
        for p in (tree / root if root else tree).rglob("*")
        if p.is_file() and not p.is_symlink()
    )
    texts: dict[str, str] = {}
    defined_in: dict[str, set[str]] = defaultdict(set)
    for path in files:
        language = language_for(path)
        if language is None or is_test_path(path):
            continue
        data = (tree / path).read_bytes()
        found = file_definitions(data, language)
        if not found:
            continue
        texts[path] = data.decode("utf-8", "replace")
        for _, name, kind in found:
            if kind in ("type", "function") and len(name) >= MIN_NAME:
                defined_in[name].add(path)
    unique = {name: next(iter(paths)) for name, paths in defined_in.items() if len(paths) == 1}
    points: list[tuple[str, int, str, str]] = []
    for path, text in texts.items():
        lines = text.splitlines()
        for number in range(QUERY_LINES + 1, len(lines) + 1):
            line = lines[number - 1]
            for match in _IDENT.finditer(line):
                name = match.group()
                gold = unique.get(name)
                # a call or a type: a keyword argument or a local that shares the name is not
                used = name[0].isupper() or line[match.end() : match.end() + 1] == "("
                if gold is not None and gold != path and used:
                    points.append((path, number, name, gold))
                    break
    rng = random.Random(f"{seed}:{repo}")
    chosen = sorted(rng.sample(points, min(per_repo, len(points))))
    out: list[dict[str, object]] = []
    for path, number, name, gold in chosen:
        lines = texts[path].splitlines()
        start = number - QUERY_LINES
        query = "\n".join(lines[start - 1 : number - 1])
        if not query.strip():
            continue
        out.append(
            {
                "id": f"{repo.split('/')[-1]}:{path}:{number}:{name}",
                "query": query,
                "gold_files": [gold],
                "origin": {"path": path, "start_line": start, "end_line": number - 1},
                "repo": repo,
                "base_commit": commit,
                "language": language_for(path),
                **({"benchmark_root": root} if root else {}),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dataset", type=Path, default=here.parent / "shared/bench/nl_dev.jsonl")
    parser.add_argument("--repos", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--tree-cache", type=Path, default=None)
    parser.add_argument("--per-repo", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    seen: dict[str, tuple[str, str]] = {}
    for row in load_dataset(args.dataset):
        if row.repo and row.base_commit and row.repo not in seen:
            seen[row.repo] = (row.base_commit, row.benchmark_root or "")
    rows: list[dict[str, object]] = []
    for repo, (commit, root) in seen.items():
        git_dir = find_repository(args.repos, repo)
        if git_dir is None:
            print(f"skipped {repo}: not under {args.repos}", file=sys.stderr)
            continue
        tree = materialise_tree(
            git_dir,
            commit,
            cache_dir=args.tree_cache,
            label=repo.replace("/", "+"),
            candidates=CandidateFilter(root=root),
        )
        found = rows_for(repo, commit, root, tree, args.per_repo, args.seed)
        print(f"{repo}: {len(found)} rows", file=sys.stderr)
        rows += found
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
