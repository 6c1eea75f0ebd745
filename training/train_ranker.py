"""Train the learned reranker that ships with coderag, from the commit history of the
repositories in training/repos.json (none of them in a public benchmark; see
tests/test_training_list.py).

    python training/train_ranker.py build [--only OWNER/NAME ...]
    python training/train_ranker.py build --dense [--only OWNER/NAME ...]
    python training/train_ranker.py train [--dense] [--seed 0] [--write]

`build` reads each repository's history back from its pinned commit (`core.learn.history`:
a seeded draw of `--pairs` eligible commits among the `--scan` latest), searches every pair's
queries at the parent commit as coderag does (`core.learn.build`), and saves the query groups
to OUT/groups/OWNER+NAME.npz; a repository already built is skipped. With `--dense` it takes
the repositories repos.json marks `dense` (a shorter draw: embedding is the cost) and searches
each query with dense off and on, into OWNER+NAME.dense.npz. `train --dense` uses a
repository's .dense groups where it has them and its dense-off groups elsewhere.

`train` splits the repositories (seeded; `--held-back` of them never seen in training,
`--valid` more for early stopping and the file penalty), fits LightGBM's lambdarank
(`core.learn.fit`), prints the held-back split's NDCG@10 and file MRR against the fused order
(dense off and on, paired bootstrap intervals) and the features' gains, and with `--write`
writes the model to coderag_tui/core/rank/learned_ranker.txt with its description beside it.

Reproducible from the seed and the list of repository@commit: the draw of commits, the split
and LightGBM (deterministic, fixed seed) depend on nothing else. The repositories are read
from --repos (bare mirrors or checkouts: OWNER+NAME/repo, OWNER/NAME or NAME under it), as
the `fetch` of the project's tools brings them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from coderag_tui.core.eval.datasets import find_repository  # noqa: E402
from coderag_tui.core.learn.build import (  # noqa: E402
    DESCRIBED,
    BuildProgress,
    QueryGroup,
    build_groups,
    load_groups,
    save_groups,
)
from coderag_tui.core.learn.fit import (  # noqa: E402
    bootstrap,
    choose_penalty,
    fit,
    measure,
    paired_gain,
)
from coderag_tui.core.learn.history import (  # noqa: E402
    FollowedTree,
    HistoryOptions,
    HistoryPair,
    history_pairs,
)
from coderag_tui.core.rank.learned import (  # noqa: E402
    FEATURE_LABELS,
    FEATURE_NAMES,
    MODEL_FORMAT,
    SHIPPED_MODEL,
)
from coderag_tui.settings import Settings  # noqa: E402
from training.descriptions import description_pairs  # noqa: E402

REPOS = HERE / "repos.json"
# Pairs drawn per repository from its latest commits: dense off, and dense on (fewer, from a
# shorter stretch of history, so each pair embeds only what changed since the one before).
PAIRS, SCAN = 40, 600
DENSE_PAIRS, DENSE_SCAN = 20, 150
DESCRIPTIONS = 40  # doc comments' questions drawn per repository (`build --descriptions`)
MODEL = ROOT / "coderag_tui" / "core" / "rank" / SHIPPED_MODEL


def training_list() -> list[dict[str, str]]:
    data = json.loads(REPOS.read_text(encoding="utf-8"))
    return list(data["repositories"])


def list_digest(entries: list[dict[str, str]]) -> str:
    text = "\n".join(f"{e['repo']}@{e['commit']}" for e in entries)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def group_file(out: Path, repo: str, *, dense: bool, described: bool = False) -> Path:
    suffix = ".desc" if described else ".dense" if dense else ""
    return out / "groups" / (repo.replace("/", "+") + suffix + ".npz")


def build(args: argparse.Namespace) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out: Path = args.out
    entries = [e for e in training_list() if not args.only or e["repo"] in args.only]
    if args.dense and not args.only:
        entries = [e for e in entries if e.get("dense")]
    if args.descriptions and args.dense:
        print("--descriptions builds dense off only", file=sys.stderr)
        return 2
    if args.pairs is None:
        args.pairs = DESCRIPTIONS if args.descriptions else DENSE_PAIRS if args.dense else PAIRS
    if args.scan is None:
        args.scan = DENSE_SCAN if args.dense else SCAN
    embedder = None
    if args.dense:
        from coderag_tui.core.rank.embedders import resolve_embedder

        choice = resolve_embedder(Settings(repo=ROOT))
        if choice.embedder is None:
            print(f"dense is off: {choice.reason}", file=sys.stderr)
            return 1
        embedder = choice.embedder
    for entry in entries:
        repo = entry["repo"]
        target = group_file(out, repo, dense=args.dense, described=args.descriptions)
        if target.is_file():
            print(f"{repo}: built already ({target})")
            continue
        git_dir = find_repository(args.repos, repo)
        if git_dir is None:
            print(f"{repo}: not under {args.repos}: fetch it first", file=sys.stderr)
            continue
        started = time.perf_counter()
        folder = "desc-trees" if args.descriptions else "trees"
        settings = Settings(
            repo=out / folder / repo.replace("/", "+"),
            index_dir=out / "index",
            embed_backend="auto" if args.dense else "none",
        )
        pairs, tree = _pairs(args, entry, git_dir, settings.repo)

        def report(p: BuildProgress, started: float = started) -> None:
            if p.done % 10 == 0 or p.done == p.total:
                took = time.perf_counter() - started
                print(f"  {p.repo}: {p.done}/{p.total} pairs ({took:.0f} s)", flush=True)

        groups = build_groups(
            repo, git_dir, pairs, settings, embedder=embedder, progress=report, tree=tree,
            variant=DESCRIBED if args.descriptions else None,
        )  # fmt: skip
        meta = {
            "repo": repo,
            "commit": entry["commit"],
            "language": entry["language"],
            "pairs": len(pairs),
            "seed": args.seed,
            "scan": None if args.descriptions else args.scan,
            "descriptions": bool(args.descriptions),
        }
        save_groups(target, groups, meta)
        took = time.perf_counter() - started
        useful = sum(1 for g in groups if g.useful)
        print(
            f"{repo}: {len(pairs)} pairs, {len(groups)} queries ({useful} answerable), {took:.0f} s"
        )
    return 0


def _pairs(
    args: argparse.Namespace, entry: dict[str, str], git_dir: Path, folder: Path
) -> tuple[list[HistoryPair], FollowedTree | None]:
    """A repository's pairs: its history's, or (`--descriptions`) its doc comments' at the
    pinned commit, with the copy of the tree they are asked in (their comments blanked)."""
    if not args.descriptions:
        options = HistoryOptions(
            commit=entry["commit"], scan=args.scan, limit=args.pairs, seed=args.seed
        )
        return history_pairs(git_dir, options), None
    tree = FollowedTree(git_dir, folder)
    tree.checkout(entry["commit"])
    return description_pairs(folder, entry["commit"], limit=args.pairs, seed=args.seed), tree


def split(
    repos: list[str], seed: int, held_back: float, valid: float
) -> tuple[set[str], set[str], set[str]]:
    """Repositories for training, early stopping and the held-back report (seeded)."""
    order = sorted(repos)
    random.Random(seed).shuffle(order)
    n_test = max(1, round(held_back * len(order)))
    n_valid = max(1, round(valid * len(order)))
    test = set(order[:n_test])
    val = set(order[n_test : n_test + n_valid])
    return set(order[n_test + n_valid :]), val, test


def load_all(out: Path, *, dense: bool, descriptions: bool = False) -> dict[str, list[QueryGroup]]:
    by_repo: dict[str, list[QueryGroup]] = defaultdict(list)
    for entry in training_list():
        path = group_file(out, entry["repo"], dense=True)  # dense on and off
        if not dense or not path.is_file():
            path = group_file(out, entry["repo"], dense=False)
        paths = [path]
        if descriptions:
            paths.append(group_file(out, entry["repo"], dense=False, described=True))
        for path in paths:
            if path.is_file():
                groups, _ = load_groups(path)
                by_repo[entry["repo"]] += [g for g in groups if dense or not g.dense]
    return by_repo


def _without(group: QueryGroup, names: list[str]) -> QueryGroup:
    """The group with the named features' columns zeroed: a model fitted to it cannot use them
    (an ablation on the same queries)."""
    x = group.x.copy()
    x[:, [FEATURE_NAMES.index(name) for name in names]] = 0.0
    return dataclasses.replace(group, x=x)


def train(args: argparse.Namespace) -> int:
    entries = training_list()
    language = {e["repo"]: e["language"] for e in entries}
    by_repo = load_all(args.out, dense=args.dense, descriptions=args.descriptions)
    if not by_repo:
        print(f"no groups under {args.out}/groups: run `build` first", file=sys.stderr)
        return 1
    if args.without:
        by_repo = {r: [_without(g, args.without) for g in gs] for r, gs in by_repo.items()}
    train_r, valid_r, test_r = split(list(by_repo), args.seed, args.held_back, args.valid)
    train_g = [g for r in sorted(train_r) for g in by_repo[r]]
    valid_g = [g for r in sorted(valid_r) for g in by_repo[r]]
    test_g = [g for r in sorted(test_r) for g in by_repo[r]]
    started = time.perf_counter()
    fitted = fit(train_g, valid_g, seed=args.seed, threads=args.threads)
    took = time.perf_counter() - started
    score = fitted.trees.predict
    penalty = choose_penalty(valid_g, score)
    size = len(fitted.text) / 1024
    print(f"fitted {fitted.rounds} trees in {took:.0f} s; model text {size:.0f} KiB")
    print(f"file penalty {penalty} (chosen on the early-stopping repositories)")
    print(
        f"repositories: {len(train_r)} train, {len(valid_r)} early stopping, "
        f"{len(test_r)} held back"
    )
    print("held back: " + ", ".join(f"{r} ({language.get(r, '?')})" for r in sorted(test_r)))
    report: dict[str, object] = {}
    for label, dense in (("dense off", False), ("dense on", True)):
        part = [g for g in test_g if g.dense == dense]
        if not part:
            continue
        fused, learned = measure(part), measure(part, score, penalty)
        intervals = {
            metric: bootstrap(paired_gain(part, score, metric, penalty), seed=args.seed)
            for metric in ("mrr", "ndcg@10", "file_ndcg@10")
        }
        print(
            f"held back, {label}: {fused.groups} queries ({fused.answerable} with an answer among "
            "the candidates)"
        )
        for metric, a, b in (
            ("file MRR", fused.mrr, learned.mrr),
            ("Acc@1", fused.acc1, learned.acc1),
            ("NDCG@10 (hunks)", fused.ndcg10, learned.ndcg10),
            ("NDCG@10 (files once)", fused.file_ndcg10, learned.file_ndcg10),
        ):
            key = {"file MRR": "mrr", "NDCG@10 (hunks)": "ndcg@10"}.get(metric, "file_ndcg@10")
            low, high = intervals[key]
            interval = f" [{low:+.3f}, {high:+.3f}]" if metric != "Acc@1" else ""
            print(f"  {metric:21} fused {a:.3f} -> learned {b:.3f} ({b - a:+.3f}{interval})")
        report[label] = {
            "fused": fused.to_json(),
            "learned": learned.to_json(),
            **{f"{k}_diff_95": [round(v, 4) for v in iv] for k, iv in intervals.items()},
        }
        kinds = (("the subject alone", 0), ("subject and body", 1), ("a doc comment", DESCRIBED))
        for kind, variant in kinds:
            some = [g for g in part if g.variant == variant]
            if some:
                a, b = measure(some), measure(some, score, penalty)
                print(
                    f"  {kind} ({len(some)} queries): file MRR {a.mrr:.3f} -> {b.mrr:.3f}, "
                    f"NDCG@10 (files once) {a.file_ndcg10:.3f} -> {b.file_ndcg10:.3f}"
                )
    print("feature gains (share of the total):")
    for name, gain in list(fitted.importance.items())[: args.show]:
        print(f"  {name:16} {gain:.3f}  {FEATURE_LABELS[name]}")
    if args.write:
        meta = {
            "format": MODEL_FORMAT,
            "trained_by": "training/train_ranker.py",
            "seed": args.seed,
            "training_list": list_digest(entries),
            "repositories": sorted(train_r),
            "early_stopping": sorted(valid_r),
            "held_back": sorted(test_r),
            "queries": len(train_g),
            "trees": fitted.rounds,
            "file_penalty": penalty,
            "dense_in_training": args.dense,
            "descriptions_in_training": args.descriptions,
            "held_back_scores": report,
            "feature_gain": fitted.importance,
        }
        MODEL.write_text(fitted.text, encoding="utf-8")
        MODEL.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL.relative_to(ROOT)} and its .json")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, default=Path.home() / ".cache/coderag/ltr-train")
    common.add_argument("--seed", type=int, default=0)
    common.add_argument("--dense", action="store_true", help="also search with dense on")
    common.add_argument(
        "--descriptions", action="store_true",
        help="build: doc comments' first sentences as questions (OWNER+NAME.desc.npz, "
        f"{DESCRIPTIONS} a repository, dense off); train: learn from them too",
    )  # fmt: skip
    b = sub.add_parser("build", parents=[common], help="search the history pairs, save groups")
    b.add_argument("--repos", type=Path, default=Path("/work/.mirror"))
    b.add_argument(
        "--pairs",
        type=int,
        default=None,
        help=f"pairs per repository ({PAIRS}; {DENSE_PAIRS} dense)",
    )
    b.add_argument(
        "--scan", type=int, default=None,
        help=f"latest commits read per repository ({SCAN}; {DENSE_SCAN} dense)",
    )  # fmt: skip
    b.add_argument("--only", nargs="*", default=[], help="these repositories only")
    t = sub.add_parser("train", parents=[common], help="fit and report the held-back split")
    t.add_argument("--held-back", type=float, default=0.2)
    t.add_argument("--valid", type=float, default=0.15)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--show", type=int, default=20, help="feature gains printed")
    t.add_argument(
        "--without", nargs="*", default=[], choices=FEATURE_NAMES, metavar="FEATURE",
        help="features zeroed before fitting (an ablation on the same queries)",
    )  # fmt: skip
    t.add_argument("--write", action="store_true", help="write the shipped model")
    args = parser.parse_args()
    return build(args) if args.command == "build" else train(args)


if __name__ == "__main__":
    raise SystemExit(main())
