"""The curves of an eval run, as data, and drawn as one self-contained HTML file.

The figures follow "Practical Code RAG at Scale" (its Figure 2): a metric against chunk size,
one curve per budget (the share of completion rows whose definition reached the prompt) or
per mode (file Acc@k), and the same per category and per language where rows carry them.
Each point carries a 95% bootstrap interval of its mean over rows (the resampling eval's
comparisons use), drawn as a bar.

The HTML is drawn here as inline SVG rather than by a plotting library: a page that a browser
opens offline must not fetch scripts or fonts, and the libraries that write such pages
(matplotlib, plotly, bokeh) are large, bring their own dependencies, or embed a script; a line
chart with error bars is a hundred lines of SVG. Every text from the repository or the run
(paths, names, queries, notes) is escaped before it enters the page.
"""

from __future__ import annotations

import html
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coderag_tui.core.eval.metrics import paired_bootstrap

if TYPE_CHECKING:
    from coderag_tui.core.eval.budget import BudgetScore
    from coderag_tui.core.eval.completion import CompletionTask
    from coderag_tui.core.eval.evaluation import EvalReport, InstanceResult

RESAMPLES = 2000
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


@dataclass(frozen=True, slots=True)
class Point:
    """A curve's value at one chunking (0-1), its 95% interval and how many rows it averages."""

    x: str
    value: float
    low: float
    high: float
    n: int


@dataclass(frozen=True, slots=True)
class Curve:
    name: str
    points: tuple[Point, ...]
    dashed: bool = False  # a baseline, drawn dashed


@dataclass(frozen=True, slots=True)
class Figure:
    """A metric against chunk size (or prompt budget): the xs in grid order and one curve
    per series."""

    title: str
    metric: str
    xs: tuple[str, ...]
    curves: tuple[Curve, ...]
    x_label: str = "chunking"


def budget_name(budget: int) -> str:
    """128, 1k, 4k, 16k: the budget as the paper's legends name it."""
    return f"{budget // 1000}k" if budget >= 1000 and budget % 1000 == 0 else str(budget)


def _point(x: str, values: Sequence[float]) -> Point:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Point(x, mean, mean, mean, len(values))
    interval = paired_bootstrap([0.0] * len(values), values, resamples=RESAMPLES)
    return Point(x, mean, interval.low, interval.high, len(values))


def _curve(
    name: str,
    xs: Sequence[str],
    items: Sequence[InstanceResult],
    value: Callable[[InstanceResult], float | None],
) -> Curve | None:
    by_x: dict[str, list[float]] = defaultdict(list)
    for r in items:
        v = value(r)
        if v is not None:
            by_x[r.chunking].append(v)
    points = tuple(_point(x, by_x[x]) for x in xs if by_x.get(x))
    return Curve(name, points) if points else None


def _series(r: InstanceResult) -> str:
    """A mode and, when it matters, its tokenizer: `bm25`, `bm25 split`."""
    return r.mode if r.tokenizer in ("default", "-") else f"{r.mode} {r.tokenizer}"


def figures(report: EvalReport) -> list[Figure]:
    """Every figure the run can draw, in reading order (empty when no row was scored)."""
    items = list(report.instances)
    if not items:
        return []
    xs = tuple(dict.fromkeys(r.chunking for r in items))
    series = list(dict.fromkeys(_series(r) for r in items))
    out: list[Figure] = []
    budgets = sorted({b for r in items if r.packed for b in r.packed})
    for name in series:
        mine = [r for r in items if _series(r) == name and r.packed is not None]
        if not mine or not budgets:
            continue
        curves = [_curve(budget_name(b), xs, mine, _metric_of("packed", b)) for b in budgets]
        out.append(
            Figure(
                f"Definition packed in the prompt, by budget: {name}",
                "packed",
                xs,
                tuple(c for c in curves if c),
            )
        )
    for metric in ("acc@1", "acc@5", "acc@10"):
        curves = [
            _curve(name, xs, [r for r in items if _series(r) == name], _score_of(metric))
            for name in series
        ]
        out.append(
            Figure(
                f"File {metric.replace('acc', 'Acc')} by mode",
                metric,
                xs,
                tuple(c for c in curves if c),
            )
        )
    out += _budget_figures(items)
    metric = "packed" if budgets else "acc@5"
    middle = budgets[len(budgets) // 2] if budgets else 0
    for label, key in (("category", _category), ("language", _language)):
        groups = sorted({g for r in items if (g := key(r)) is not None})
        if len(groups) < 2:
            continue
        curves = []
        for name in series:
            for group in groups:
                mine = [r for r in items if _series(r) == name and key(r) == group]
                curves.append(_curve(f"{name} · {group}", xs, mine, _metric_of(metric, middle)))
        what = f"packed at {budget_name(middle)}" if budgets else "file Acc@5"
        out.append(Figure(f"{what} per {label}", metric, xs, tuple(c for c in curves if c)))
    return [f for f in out if f.curves]


def _budget_figures(items: Sequence[InstanceResult]) -> list[Figure]:
    """Recall against the prompt's budget: one curve per mode (and chunking, when the run has
    several), the grep-and-read baseline dashed; gold files, then gold lines."""
    from coderag_tui.core.eval.budget import READ_WHOLE

    with_budgets = [r for r in items if r.budgets]
    if not with_budgets:
        return []
    budgets = sorted({b for r in with_budgets for b in r.budgets or {}})
    xs = tuple(budget_name(b) for b in budgets)
    several = len({r.chunking for r in with_budgets}) > 1

    def name_of(r: InstanceResult) -> str:
        return _series(r) + (f" {r.chunking}" if several else "")

    series = list(dict.fromkeys(name_of(r) for r in with_budgets))
    wholes: dict[tuple[str, str], Mapping[int, BudgetScore]] = {}
    for r in items:
        if r.whole is not None:
            wholes.setdefault((r.id, r.chunking), r.whole.at)
    out = []
    for what, title in (("file_recall", "Gold files"), ("line_recall", "Gold lines")):
        curves = [
            _budget_curve(
                name,
                [r.budgets for r in with_budgets if r.budgets and name_of(r) == name],
                zip(budgets, xs, strict=True),
                what,
            )
            for name in series
        ]
        baseline = READ_WHOLE
        rows = list(wholes.values())
        curves.append(
            _budget_curve(baseline, rows, zip(budgets, xs, strict=True), what, dashed=True)
        )
        kept = tuple(c for c in curves if c)
        if kept:
            out.append(
                Figure(
                    f"{title} in the prompt, by budget",
                    what,
                    xs,
                    kept,
                    x_label="prompt budget (tokens)",
                )
            )
    return out


def _budget_curve(
    name: str,
    rows: Sequence[Mapping[int, BudgetScore]],
    at: Iterable[tuple[int, str]],
    what: str,
    *,
    dashed: bool = False,
) -> Curve | None:
    """One curve of `what` (a `BudgetScore` field) over rows, at each (budget, x label)."""
    points = []
    for budget, x in at:
        values = [
            float(v)
            for row in rows
            if budget in row and (v := getattr(row[budget], what)) is not None
        ]
        if values:
            points.append(_point(x, values))
    return Curve(name, tuple(points), dashed) if points else None


def _category(r: InstanceResult) -> str | None:
    return r.category


def _language(r: InstanceResult) -> str | None:
    return r.language


def _score_of(metric: str) -> Callable[[InstanceResult], float | None]:
    def value(r: InstanceResult) -> float | None:
        return r.scores.get(metric)

    return value


def _metric_of(metric: str, budget: int) -> Callable[[InstanceResult], float | None]:
    if metric != "packed":
        return _score_of(metric)

    def value(r: InstanceResult) -> float | None:
        return float(r.packed.get(budget, False)) if r.packed is not None else None

    return value


# --- drawing ----------------------------------------------------------------------------------

_W, _H = 560, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 150, 16, 40


def _e(text: object) -> str:
    """Escaped for an HTML text node or a quoted attribute."""
    return html.escape(str(text), quote=True)


def svg(figure: Figure) -> str:
    """One figure as an inline SVG: axes 0-100%, a line per curve with interval bars, a legend."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    n = len(figure.xs)

    def x_at(i: int) -> float:
        return _LEFT + (plot_w * (i + 0.5) / n if n else 0)

    def y_at(v: float) -> float:
        return _TOP + plot_h * (1 - max(0.0, min(1.0, v)))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" aria-label="{_e(figure.title)}">',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = y_at(tick)
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
            f"{tick:.0%}</text>"
        )
    for i, label in enumerate(figure.xs):
        parts.append(
            f'<text x="{x_at(i):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle" '
            f'font-size="11">{_e(label)}</text>'
        )
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_H - 6}" text-anchor="middle" '
        f'font-size="11">{_e(figure.x_label)}</text>'
    )
    index = {x: i for i, x in enumerate(figure.xs)}
    for c_index, curve in enumerate(figure.curves):
        colour = PALETTE[c_index % len(PALETTE)]
        # curves side by side by a few pixels, so their interval bars do not hide each other
        dodge = 4 * (c_index - (len(figure.curves) - 1) / 2)
        coords = [(x_at(index[p.x]) + dodge, p) for p in curve.points]
        path = " ".join(f"{x:.1f},{y_at(p.value):.1f}" for x, p in coords)
        dash = ' stroke-dasharray="6 4"' if curve.dashed else ""
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for x, p in coords:
            title = f"{curve.name} at {p.x}: {p.value:.1%} [{p.low:.1%}, {p.high:.1%}], n={p.n}"
            parts.append(
                f'<line x1="{x:.1f}" y1="{y_at(p.low):.1f}" x2="{x:.1f}" '
                f'y2="{y_at(p.high):.1f}" stroke="{colour}" stroke-opacity="0.5"/>'
                f'<circle cx="{x:.1f}" cy="{y_at(p.value):.1f}" r="3" fill="{colour}">'
                f"<title>{_e(title)}</title></circle>"
            )
        ly = _TOP + 14 * c_index + 8
        parts.append(
            f'<line x1="{_W - _RIGHT + 10}" y1="{ly}" x2="{_W - _RIGHT + 26}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{_W - _RIGHT + 30}" y="{ly + 4}" font-size="11">{_e(curve.name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 72em; }
figure { display: inline-block; margin: 0 1em 1.5em 0; }
figcaption { font-weight: 600; margin-bottom: .3em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
"""


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _summary_table(report: EvalReport) -> str:
    budgets = sorted({b for s in report.summaries if s.packed for b in s.packed})
    head = [
        "mode",
        "chunking",
        "tokenizer",
        "n",
        *(m.replace("acc", "Acc") for m in ("acc@1", "acc@5", "acc@10")),
        "MRR",
        *(f"packed {budget_name(b)}" for b in budgets),
        "median ms",
    ]
    rows = [
        [
            s.mode,
            s.chunking,
            s.tokenizer,
            s.n,
            *(f"{100 * s.scores.get(m, 0.0):.1f}" for m in ("acc@1", "acc@5", "acc@10")),
            f"{s.scores.get('mrr', 0.0):.3f}",
            *(f"{100 * (s.packed or {}).get(b, 0.0):.1f}" for b in budgets),
            f"{s.search_ms:.1f}",
        ]
        for s in report.summaries
    ]
    return _table(head, rows)


def html_report(report: EvalReport, task: CompletionTask | None = None, title: str = "") -> str:
    """The run as one HTML page that needs nothing else: figures, the summary table, the task
    and its first rows (completion), notes. Nothing in it loads from anywhere."""
    heading = title or (f"coderag eval: completion on {task.repo}" if task else "coderag eval")
    body = [f"<h1>{_e(heading)}</h1>"]
    if task is not None:
        body.append(
            f"<p>{len(task.rows)} rows drawn (seed {task.seed}) from {task.available} target "
            f"lines in {task.files} files; queries are the {task.query_lines} lines before "
            "each target. Packed: the definition's line is in the prompt packed from the "
            "mode's ranking within the budget (retrieved code only; the retrieval side of "
            "exact match, no generator offline).</p>"
        )
    body.append("<h2>Figures</h2>")
    body.append(
        f"<p>Bars: 95% bootstrap interval of the mean over rows ({RESAMPLES} resamples).</p>"
    )
    for figure in figures(report):
        body.append(f"<figure><figcaption>{_e(figure.title)}</figcaption>{svg(figure)}</figure>")
    body.append(f"<h2>Summary (k={report.k}, Acc in %)</h2>")
    body.append(_summary_table(report))
    if task is not None and task.rows:
        body.append("<h2>Rows (first 20)</h2>")
        body.append(
            _table(
                ["row", "name", "kind", "defined in", "language"],
                [
                    [r.id, r.name, r.kind, f"{r.gold}:{r.gold_line}", r.language or ""]
                    for r in task.rows[:20]
                ],
            )
        )
        first = task.rows[0]
        body.append(f"<p>Sample query ({_e(first.id)}, uses {_e(first.name)}):</p>")
        body.append(f"<pre>{_e(first.query)}</pre>")
    if report.notes:
        body.append("<h2>Notes</h2><ul>")
        body += [f"<li>{_e(note)}</li>" for note in report.notes]
        body.append("</ul>")
    body.append(f"<p>Wall time {report.wall_s:.1f} s.</p>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(heading)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )
