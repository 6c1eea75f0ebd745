"""`coderag eval`: measure retrieval on an issue-to-file dataset or on the repository's history."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.common import (
    BACKEND_GROUP,
    BACKEND_SETTINGS,
    UserError,
    add_repo_args,
    add_setting_flags,
    print_json,
    settings_from_args,
)
from coderag_tui.cli.progress import StepBar
from coderag_tui.core.records import RANKING_NAMES

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rich.console import Console

    from coderag_tui.core.eval.budget import BudgetSummary
    from coderag_tui.core.eval.evaluation import (
        ConfigSummary,
        EvalProgress,
        EvalReport,
        Grid,
        GroupScore,
    )

DEFAULT_MODES = "bm25,dense,fused"
SEMBLE_NDCG_TITLE = "NDCG@10 (semble)"
SEMBLE_NOTE = (
    "NDCG@10 (semble): the top 10 chunks against the relevant and secondary targets; a "
    "repository's score is the mean over its queries, every other row the mean over repositories."
)


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "eval",
        help="measure retrieval (Acc@k, recall, MRR, NDCG) on a dataset or git history",
        description=(
            "Evaluate retrieval on a JSONL dataset (id, query, gold_files, optional repo and "
            "base_commit) or on the repository's own history, over a grid of modes, chunkings "
            "and tokenizers, and print one table row per configuration."
        ),
    )
    parser.add_argument(
        "dataset",
        nargs="?",
        type=Path,
        metavar="DATASET.jsonl",
        help="rows with id/instance_id, query/problem_statement, gold_files",
    )
    parser.add_argument(
        "--from-git-history",
        type=int,
        metavar="N",
        default=None,
        help="use the last N non-merge commits touching 1-5 source files instead",
    )
    parser.add_argument(
        "--completion",
        type=int,
        metavar="N",
        default=None,
        help="use N code-completion rows built from the repository instead: a line using a "
        "class or function defined in another file, the lines before it as a code query, the "
        "defining file as gold; also says whether the definition is packed at each budget",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="the seed that draws the --completion rows (default: 0)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="FILE.html",
        help="also write the figures (Acc@k and packed-at-budget against chunk size, per "
        "category and language, with bootstrap intervals) as one self-contained HTML file",
    )
    parser.add_argument(
        "--plot",
        action="store_true",
        help="also draw those curves in the terminal",
    )
    parser.add_argument(
        "--save-dataset",
        type=Path,
        metavar="FILE",
        default=None,
        help="also write the rows built from git history to FILE (JSONL)",
    )
    parser.add_argument(
        "--repo",
        dest="path",
        default=None,
        metavar="PATH",
        help="the repository for rows without `repo` (default: current folder)",
    )
    parser.add_argument(
        "--repos",
        type=Path,
        metavar="DIR",
        default=None,
        help="folder holding the repositories named by rows (owner/name, name "
        "or owner+name; bare or checkout)",
    )
    parser.add_argument(
        "--modes",
        default=DEFAULT_MODES,
        help=f"comma list of {','.join(RANKING_NAMES)},fused-files (RRF of the "
        f"BM25 and dense file rankings) (default: {DEFAULT_MODES})",
    )
    parser.add_argument(
        "--chunking",
        dest="chunkings",
        default=None,
        help="comma list, e.g. lines:32,lines:64,ast,file (default: the settings')",
    )
    parser.add_argument(
        "--tokenizer",
        dest="tokenizers",
        default=None,
        help="comma list of default,split,path,split+path (word splitting) or the seed "
        "paper's other splitters line (each line a token) and bpe (cl100k tokens) "
        "(default: the settings')",
    )
    parser.add_argument(
        "--scorer",
        dest="scorers",
        default="bm25",
        help="comma list of bm25,iou: the lexical list's scorer, with every tokenizer "
        "(iou: shared tokens / all tokens of the query and the chunk) (default: bm25)",
    )
    parser.add_argument(
        "--k",
        dest="cutoff",
        type=int,
        default=10,
        metavar="K",
        help="cut-off for recall@K (Acc@1/5/10 are always shown)",
    )
    parser.add_argument(
        "--budgets",
        default="1000,2000,4000,8000,16000",
        metavar="TOKENS",
        help="comma list of prompt budgets at which each ranking is packed by the prompt's own "
        "packer and scored: gold files and gold lines in the prompt, tokens, blocks, files, "
        "beside reading whole files in BM25 order; 'none' skips it (default: "
        "1000,2000,4000,8000,16000)",
    )
    parser.add_argument(
        "--limit", type=int, default=None, metavar="N", help="evaluate only the first N rows"
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="only rank files matching GLOB (repeatable, e.g. '*.py')",
    )
    parser.add_argument(
        "--exclude-tests",
        action="store_true",
        help="do not rank test files (tests/ folders, test_*.py, conftest.py)",
    )
    parser.add_argument(
        "--tree-cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="where trees at base_commit are extracted (default: user cache)",
    )
    # The settings run() reads from the flags (the rest come from config files and CODERAG_*).
    add_setting_flags(
        parser, ["embed_model", "embed_backend", "dense_stripes", "rerank_model", "query_lines"]
    )
    add_setting_flags(parser.add_argument_group(BACKEND_GROUP), BACKEND_SETTINGS)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write one row per configuration to FILE",
    )
    parser.add_argument(
        "--json-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the JSON results (with every instance) to FILE",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the summary as a markdown table to FILE",
    )
    add_repo_args(parser, path_positional=False)
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="CONFIG",
        help="compare every configuration with this one by a paired bootstrap, "
        "e.g. 'bm25' or 'fused lines:64 split+path' (default: the first)",
    )


def _budgets(text: str | None) -> tuple[int, ...]:
    from coderag_tui.core.eval.budget import BUDGETS, parse_budgets

    if text is None:
        return BUDGETS
    if text.strip().lower() in ("none", "0", ""):
        return ()
    try:
        return parse_budgets(text)
    except ValueError as exc:
        raise UserError(f"--budgets: {exc}.") from exc


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _tokenizer_name(split: bool, path: bool) -> str:
    return {
        (False, False): "default",
        (True, False): "split",
        (False, True): "path",
        (True, True): "split+path",
    }[(split, path)]


def run(args: argparse.Namespace) -> int:
    from coderag_tui.core.eval.datasets import (
        CandidateFilter,
        DatasetError,
        from_git_history,
        load_dataset,
        rows_to_jsonl,
    )
    from coderag_tui.core.eval.evaluation import Grid, run_eval
    from coderag_tui.core.index.store import StoreError

    values = {
        "path": args.path,
        "index_dir": args.index_dir,
        "embed_model": args.embed_model,
        "embed_backend": args.embed_backend,
        "rerank_model": args.rerank_model,
        "dense_stripes": args.dense_stripes,
        "query_lines": getattr(args, "query_lines", None),
        **{name: getattr(args, name) for name in BACKEND_SETTINGS},
    }
    settings = settings_from_args(argparse.Namespace(**values))
    completion = getattr(args, "completion", None)
    sources = [args.dataset, args.from_git_history, completion]
    if sum(source is not None for source in sources) != 1:
        raise UserError(
            "give a DATASET.jsonl, --from-git-history N or --completion N (one of the three)."
        )
    try:
        if completion is not None:
            rows = []
        elif args.dataset is not None:
            rows = load_dataset(args.dataset)
        else:
            if args.from_git_history < 1:
                raise UserError("--from-git-history needs N >= 1.")
            rows = from_git_history(settings.repo_root, args.from_git_history)
            if not rows:
                raise UserError(
                    f"no commit in {settings.repo_root} modifies 1-5 existing source files: "
                    "evaluate a repository with more history."
                )
            if args.save_dataset is not None:
                _write_text(
                    args.save_dataset, rows_to_jsonl(rows), "--save-dataset", settings.repo_root
                )
    except DatasetError as exc:
        raise UserError(str(exc)) from exc
    if args.limit is not None:
        rows = rows[: max(0, args.limit)]
    if args.repos is not None and not args.repos.is_dir():
        raise UserError(f"{args.repos} is not a folder: pass the folder holding the repositories.")

    spec = settings.chunking_spec
    default_chunking = spec.strategy if spec.strategy == "file" else f"{spec.strategy}:{spec.lines}"
    grid = Grid(
        modes=_split(args.modes),
        chunkings=_split(args.chunkings) if args.chunkings else (default_chunking,),
        tokenizers=(
            _split(args.tokenizers)
            if args.tokenizers
            else (_tokenizer_name(settings.split_identifiers, settings.path_in_text),)
        ),
        scorers=_split(getattr(args, "scorers", None) or "bm25"),
        k=args.cutoff,
        budgets=_budgets(getattr(args, "budgets", None)),
        candidates=CandidateFilter(
            include=tuple(p for pat in args.include for p in _split(pat)),
            exclude_tests=args.exclude_tests,
        ),
    )
    try:
        grid.validate()
    except ValueError as exc:
        raise UserError(f"{exc}.") from exc
    if settings.backend != "local" and any(
        v.splitter != "word" or v.scorer != "bm25" for v in grid.lexicals
    ):
        raise UserError(
            "the line and bpe splitters and the iou scorer are built over a local index, and a "
            "server's collection has the one tokenizer it was pushed with: run them with "
            "--backend local."
        )
    baseline = _baseline(getattr(args, "baseline", None), grid, settings.dense_stripes)

    cancel = threading.Event()
    task = None
    try:
        if completion is not None:
            from coderag_tui.cli.eval_completion import completion_task

            settings, task = completion_task(args, settings, grid)
        with StepBar("eval", lines=True) as bar:
            if task is not None:
                from coderag_tui.core.eval.completion import run_completion

                report = run_completion(
                    task.rows,
                    settings,
                    grid,
                    progress=_eval_progress(bar),
                    cancel=cancel,
                    baseline=baseline,
                )
            else:
                report = run_eval(
                    rows,
                    settings,
                    grid,
                    repos_dir=args.repos,
                    tree_cache=args.tree_cache,
                    progress=_eval_progress(bar),
                    cancel=cancel,
                    baseline=baseline,
                )
    except KeyboardInterrupt:
        cancel.set()
        raise
    except (DatasetError, StoreError) as exc:  # StoreError: an index or the server failed
        raise UserError(str(exc)) from exc

    repo = settings.repo_root
    if args.csv is not None:
        _write_text(args.csv, _csv_text(report), "--csv", repo)
    if args.markdown is not None:
        _write_text(args.markdown, markdown_table(report), "--markdown", repo)
    report_json = report.to_json()
    if task is not None:
        report_json["completion"] = task.to_json()
    if args.json_file is not None:
        text = json.dumps(report_json, indent=2, ensure_ascii=False)
        _write_text(args.json_file, text, "--json-file", repo)
    if getattr(args, "report", None) is not None:
        from coderag_tui.core.eval.figures import html_report

        _write_text(args.report, html_report(report, task), "--report", repo)
    if args.json:
        print_json(report_json)
    else:
        if task is not None:
            from coderag_tui.cli.eval_completion import print_task

            print_task(task)
        _print_report(report)
        if getattr(args, "plot", False):
            from coderag_tui.cli.eval_completion import print_plots

            print_plots(report)
    if not report.instances:
        print("coderag: no row could be evaluated (see the notes above).", file=sys.stderr)
        return 1
    return 0


def _baseline(text: str | None, grid: Grid, dense_stripes: int) -> tuple[str, str, str] | None:
    """The configuration --baseline names (mode, chunking, tokenizer; the grid's first where
    left out), checked against the grid before anything runs."""
    from coderag_tui.core.eval.evaluation import ANY_TOKENIZER, mode_label

    if not text:
        return None
    parts = text.replace(",", " ").replace("·", " ").split()
    lexicals = [v.label for v in grid.lexicals]
    mode, chunking, tokenizer = grid.modes[0], grid.chunkings[0], lexicals[0]
    for part in parts:
        if part in grid.modes:
            mode = part
        elif part in grid.chunkings:
            chunking = part
        elif part in lexicals:
            tokenizer = part
        else:
            known = ", ".join(dict.fromkeys((*grid.modes, *grid.chunkings, *lexicals)))
            raise UserError(
                f"--baseline {text!r}: {part!r} is not a mode, chunking or tokenizer of this "
                f"run; use some of {known}."
            )
    return (
        mode_label(mode, dense_stripes),
        chunking,
        ANY_TOKENIZER if mode == "dense" else tokenizer,
    )


def _eval_progress(bar: StepBar) -> Callable[[EvalProgress], None]:
    def update(event: EvalProgress) -> None:
        bar.show(
            event.done,
            event.total,
            f"{event.label} {event.detail}",
            finished=event.detail == "done",
        )

    return update


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _config_labels(summaries: list[ConfigSummary]) -> list[str]:
    """A short name per configuration: the parts (mode, chunking, tokenizer) that vary."""
    varying = [len({s.config[i] for s in summaries}) > 1 for i in range(3)]
    if not any(varying):
        varying[0] = True
    return [" ".join(p for p, v in zip(s.config, varying, strict=True) if v) for s in summaries]


def _semble_tables(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """semble's NDCG@10 per repository, category and language: (title, header, rows) each,
    one column per configuration. A repository's score is the mean over its queries; every
    other row (all, a category, a language) is the plain mean over repositories."""
    summaries = [s for s in report.summaries if s.semble is not None]
    if not summaries:
        return []
    labels = _config_labels(summaries)
    languages: dict[str, str] = {}
    for r in report.instances:
        if r.ndcg10_semble is not None and r.language:
            languages.setdefault(r.repo, r.language)
    tables = []
    for title, attr in (
        ("repository", "by_repo"),
        ("category", "by_category"),
        ("language", "by_language"),
    ):
        groups: dict[str, None] = {}
        for s in summaries:
            groups.update(dict.fromkeys(getattr(s.semble, attr)))
        extra = ["language"] if attr == "by_repo" else []
        head = [title, *extra, "queries", "repos", *labels]
        rows: list[list[str]] = []
        overall: list[GroupScore] = [s.semble.overall for s in summaries if s.semble]
        rows.append(
            [
                "all (mean of repositories)",
                *([""] * len(extra)),
                str(overall[0].queries),
                str(overall[0].repos),
                *(f"{g.ndcg10:.3f}" for g in overall),
            ]
        )
        for group in groups:
            scores = [getattr(s.semble, attr).get(group) for s in summaries]
            first = next(g for g in scores if g is not None)
            rows.append(
                [
                    group,
                    *([languages.get(group, "")] if extra else []),
                    str(first.queries),
                    str(first.repos),
                    *(f"{g.ndcg10:.3f}" if g is not None else "" for g in scores),
                ]
            )
        tables.append((f"{SEMBLE_NDCG_TITLE} per {title}", head, rows))
    return tables


def _packed_table(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """The completion task's packing, as (title, header, rows): per configuration, the share
    of rows whose definition is in the prompt packed within each budget (none: no table)."""
    from coderag_tui.core.eval.figures import budget_name

    summaries = [s for s in report.summaries if s.packed is not None]
    if not summaries:
        return []
    budgets = sorted({b for s in summaries for b in s.packed or {}})
    head = ["mode", "chunking", "tokenizer", "n", *(budget_name(b) for b in budgets)]
    rows = [
        [
            s.mode,
            s.chunking,
            s.tokenizer,
            str(s.n),
            *(_pct((s.packed or {}).get(b, 0.0)) for b in budgets),
        ]
        for s in summaries
    ]
    title = (
        "definition packed in the prompt within each budget (% of rows; the retrieval side "
        "of exact match, no generator offline)"
    )
    return [(title, head, rows)]


def _budget_tables(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Recall at a budget as (title, header, rows): per configuration and for the
    grep-and-read baseline, the gold files and gold lines the prompt carries and what the
    prompt holds, at each budget (none: no table)."""
    from coderag_tui.core.eval.budget import READ_WHOLE
    from coderag_tui.core.eval.figures import budget_name

    summaries = [s for s in report.summaries if s.budgets]
    whole = report.whole_files
    if not summaries:
        return []
    budgets = sorted({b for s in summaries for b in s.budgets or {}})
    labels = _config_labels(summaries)
    lines: list[tuple[str, Mapping[int, BudgetSummary]]] = [
        (label, s.budgets or {}) for label, s in zip(labels, summaries, strict=True)
    ]
    if whole is not None:
        lines.append((f"{READ_WHOLE} (BM25 order)", whole[0]))
    head = ["configuration", *(budget_name(b) for b in budgets)]

    def cells(at: Mapping[int, BudgetSummary], cell: Callable[[BudgetSummary], str]) -> list[str]:
        return [cell(at[b]) if b in at else "" for b in budgets]

    tables = [
        (
            "gold files with code in the prompt, by budget (% of rows)",
            head,
            [[name, *cells(at, lambda v: _pct(v.file_recall))] for name, at in lines],
        )
    ]
    if any(v.line_recall is not None for _, at in lines for v in at.values()):
        n = max(v.n_lines for _, at in lines for v in at.values())
        tables.append(
            (
                f"gold lines shown in the prompt, by budget (% of gold lines; {n} rows have them)",
                head,
                [[name, *cells(at, lambda v: _pct(v.line_recall or 0.0))] for name, at in lines],
            )
        )
    tables.append(
        (
            "what the prompt holds, by budget: tokens used / blocks / distinct files (means)",
            head,
            [
                [name, *cells(at, lambda v: f"{v.tokens:,.0f} / {v.blocks:.1f} / {v.files:.1f}")]
                for name, at in lines
            ],
        )
    )
    tables.append(
        (
            "what a reader cannot use, by budget: signatures without their matched body / "
            "lone lines (totals over rows) / outline and data-file tokens (means)",
            head,
            [[name, *cells(at, _faults)] for name, at in lines[: len(summaries)]],
        )
    )
    return tables


def _faults(v: BudgetSummary) -> str:
    """A budget's reader faults as one table cell."""
    a = v.account
    n = max(1, v.n)
    return (
        f"{a.bare_signatures} / {a.lone_lines} / "
        f"{a.outline_tokens / n:,.0f} / {a.data_tokens / n:,.0f}"
    )


LANGUAGE_BUDGETS = (2000, 8000)  # the budgets the per-language table shows, when run


def _language_tables(report: EvalReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """File-level scores and the prompt's recall per language of the rows, each a mean with
    its 95% bootstrap interval (Acc and recall in %), as (title, header, rows); none unless
    the rows carry two languages or more."""
    from coderag_tui.core.eval.by_language import LANGUAGE_METRICS, Estimate
    from coderag_tui.core.eval.figures import budget_name

    if not report.languages:
        return []
    labels = dict(
        zip(
            (s.config for s in report.summaries),
            _config_labels(list(report.summaries)),
            strict=True,
        )
    )
    budgets = [b for b in LANGUAGE_BUDGETS if any(b in s.file_recall for s in report.languages)]
    has_lines = any(s.line_recall for s in report.languages)

    def cell(e: Estimate | None, scale: float = 100.0, digits: int = 1) -> str:
        if e is None:
            return ""
        return (
            f"{scale * e.mean:.{digits}f} [{scale * e.low:.{digits}f}, {scale * e.high:.{digits}f}]"
        )

    head = ["configuration", "language", "n"]
    head += [m.replace("acc", "Acc").replace("mrr", "MRR") for m in LANGUAGE_METRICS]
    for b in budgets:
        head += [f"files@{budget_name(b)}", *([f"lines@{budget_name(b)}"] if has_lines else [])]
    rows = []
    for s in report.languages:
        row = [labels.get(s.config, " ".join(s.config)), s.language, str(s.n)]
        row += [
            cell(s.scores[m], 1.0, 3) if m == "mrr" else cell(s.scores[m]) for m in LANGUAGE_METRICS
        ]
        for b in budgets:
            row.append(cell(s.file_recall.get(b)))
            if has_lines:
                row.append(cell(s.line_recall.get(b)))
        rows.append(row)
    title = (
        "file-level retrieval and the prompt's recall per language "
        "(%, MRR 0-1; 95% bootstrap interval of the rows)"
    )
    return [(title, head, rows)]


def _budget_note(report: EvalReport) -> str | None:
    from coderag_tui.core.eval.budget import READ_LIMIT

    whole = report.whole_files
    if whole is None:
        return None
    _, median, reached = whole
    rows = len({(r.id, r.chunking) for r in report.instances if r.whole is not None})
    until = f"{median:,.0f}" if median is not None else "-"
    return (
        "recall at a budget: each ranking packed by `coderag prompt`'s packer and template with "
        "an empty task; read whole files = BM25's files read whole in order, counted once "
        f"read within the budget (median tokens until every gold file was read: {until}, "
        f"{reached} of {rows} rows within {READ_LIMIT:,} tokens)."
    )


def _comparison_rows(report: EvalReport) -> tuple[str, list[str], list[list[str]]] | None:
    """The bootstrap comparisons as (title, header, rows), or None when there are none."""
    if not report.comparisons:
        return None
    first = report.comparisons[0]
    labels = {
        s.config: label
        for s, label in zip(report.summaries, _config_labels(list(report.summaries)), strict=True)
    }

    def name(metric: str) -> str:
        return {"mrr": "MRR (files)"}.get(metric, SEMBLE_NDCG_TITLE)

    # fused-files has no chunk ranking, so on semble's format it is compared on MRR instead
    mixed = len({c.metric for c in report.comparisons}) > 1
    title = (
        f"paired bootstrap vs {labels.get(first.baseline, ' '.join(first.baseline))}: "
        f"difference in {'the metric shown' if mixed else name(first.metric)}, "
        f"{100 * first.interval.confidence:.0f}% interval, "
        f"{first.interval.resamples} resamples of queries"
    )
    head = [
        "configuration",
        *(["metric"] if mixed else []),
        "queries",
        "baseline",
        "score",
        "difference",
        "interval",
        "verdict",
    ]
    rows = [
        [
            labels.get(c.candidate, " ".join(c.candidate)),
            *([name(c.metric)] if mixed else []),
            str(c.interval.n),
            f"{c.baseline_score:.3f}",
            f"{c.candidate_score:.3f}",
            f"{c.interval.mean_diff:+.3f}",
            f"[{c.interval.low:+.3f}, {c.interval.high:+.3f}]",
            c.interval.verdict,
        ]
        for c in report.comparisons
    ]
    return title, head, rows


def _print_report(report: EvalReport, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # a file or pipe: do not squeeze the table to 80 columns
            console = Console(width=220)
    names = report.metric_names
    with_semble = any(s.semble is not None for s in report.summaries)
    for level in ("files", "chunks"):
        summaries = [s for s in report.summaries if level == "files" or s.chunk_scores is not None]
        if not summaries:
            continue
        table = Table(title=f"{level[:-1]}-level retrieval (Acc and recall in %, k={report.k})")
        for col in ("mode", "chunking", "tokenizer", "n"):
            table.add_column(col, justify="right" if col == "n" else "left")
        for name in names:
            table.add_column(
                name.replace("acc", "Acc").replace("ndcg", "NDCG").replace("mrr", "MRR"),
                justify="right",
            )
        semble_column = with_semble and level == "files"
        if semble_column:
            table.add_column(SEMBLE_NDCG_TITLE, justify="right")
        table.add_column("median ms", justify="right")
        table.add_column("per stage (median ms)")
        for s in summaries:
            scores = s.scores if level == "files" else (s.chunk_scores or {})
            cells = [
                f"{scores.get(n, 0.0):.3f}" if n in ("mrr", "ndcg@10") else _pct(scores.get(n, 0))
                for n in names
            ]
            if semble_column:
                cells.append(f"{s.semble.overall.ndcg10:.3f}" if s.semble is not None else "")
            stages = " · ".join(f"{st} {ms:.1f}" for st, ms in s.stage_ms.items())
            table.add_row(
                s.mode, s.chunking, s.tokenizer, str(s.n), *cells, f"{s.search_ms:.1f}", stages
            )
        console.print(table)
    comparison = _comparison_rows(report)
    for title, head, rows in [
        *_packed_table(report),
        *_budget_tables(report),
        *_language_tables(report),
        *_semble_tables(report),
        *([comparison] if comparison else []),
    ]:
        table = Table(title=title)
        for i, col in enumerate(head):
            table.add_column(col, justify="left" if i == 0 or col == "language" else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    if with_semble:
        console.print(f"note: {SEMBLE_NOTE}")
    budget_note = _budget_note(report)
    if budget_note:
        console.print(f"note: {budget_note}")
    for row_id, reason in report.skipped:
        console.print(f"skipped {row_id}: {reason}")
    for note in report.notes:
        console.print(f"note: {note}")
    console.print(f"wall time {report.wall_s:.1f} s" + (" (cancelled)" if report.cancelled else ""))


def markdown_table(report: EvalReport) -> str:
    """The file-level summary as a markdown table (Acc and recall in %, MRR and NDCG 0-1),
    then semble's NDCG@10 per repository, category and language and the bootstrap
    comparisons, when the run has them."""
    names = report.metric_names
    with_semble = any(s.semble is not None for s in report.summaries)
    head = [
        "mode",
        "chunking",
        "tokenizer",
        "n",
        *names,
        *([SEMBLE_NDCG_TITLE] if with_semble else []),
        "median ms",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in report.summaries:
        cells = [
            f"{s.scores.get(n, 0.0):.3f}" if n in ("mrr", "ndcg@10") else _pct(s.scores.get(n, 0))
            for n in names
        ]
        if with_semble:
            cells.append(f"{s.semble.overall.ndcg10:.3f}" if s.semble is not None else "")
        lines.append(
            "| "
            + " | ".join([s.mode, s.chunking, s.tokenizer, str(s.n), *cells, f"{s.search_ms:.1f}"])
            + " |"
        )
    if with_semble:
        lines += ["", SEMBLE_NOTE]
    comparison = _comparison_rows(report)
    budget_note = _budget_note(report)
    if budget_note:
        lines += ["", budget_note]
    for title, table_head, rows in [
        *_packed_table(report),
        *_budget_tables(report),
        *_language_tables(report),
        *_semble_tables(report),
        *([comparison] if comparison else []),
    ]:
        lines += [
            "",
            f"**{title}**",
            "",
            "| " + " | ".join(table_head) + " |",
            "|" + "---|" * len(table_head),
        ]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _write_text(path: Path, text: str, flag: str, repo: Path) -> None:
    """Write a report whole, never through a symbolic link (a repository may commit one)."""
    from coderag_tui.core.safe_write import UnsafePath, write_atomically

    try:
        write_atomically(path, text, guarded=repo)
    except UnsafePath as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:
        raise UserError(f"cannot write {path} ({exc.strerror}): choose another {flag}.") from exc


def _csv_text(report: EvalReport) -> str:
    rows = report.csv_rows()
    columns: list[str] = []
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
