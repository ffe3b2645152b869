"""`write_report`: a retrieval evaluation as one self-contained HTML page (tables, one bar
chart per metric embedded as PNG, the failing questions with why, what was not scored).
The page is the Jinja2 template `templates/report.html.j2`, rendered with autoescape on, so
a question, id or note from a user's file cannot inject markup.

What it cannot do: the charts are static images (matplotlib, Agg backend); the page shows one
`EvalResult`, not a comparison between runs.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import jinja2

from tether.evaluation.metrics import METRIC_NAMES, METRICS, EvalResult

TEMPLATE = "report.html.j2"  # in tether/evaluation/templates/, shipped as package data


def _chart(result: EvalResult, metric: str) -> str:
    """A grouped bar chart (overall and per kind, one bar per method) as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = ["overall", *sorted({r.kind for r in result.rows})]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) + 2), 3.2), dpi=100)
    width = 0.8 / max(1, len(result.methods))
    for i, method in enumerate(result.methods):
        agg = result.aggregates[method]
        values = [
            agg["overall"][metric] if g == "overall" else agg["by_kind"].get(g, {}).get(metric, 0)
            for g in groups
        ]
        xs = [j + (i - (len(result.methods) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, values, width, label=method)
    name = METRIC_NAMES.get(metric, metric).replace("@k", f"@{result.k}")
    ax.set_title(name, loc="left")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.legend(
        fontsize=8,
        ncols=len(result.methods),
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    return figure_png(fig)


def figure_png(fig: Any) -> str:
    """A matplotlib figure as a base64 PNG (the figure is closed)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def environment(k: int = 5) -> jinja2.Environment:
    """The template environment: the package's `templates/` folder, autoescape always on,
    and the `metric_name` filter ("Recall@k" read as "Recall@5" for k = 5)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tether.evaluation", "templates"),
        autoescape=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["metric_name"] = lambda m: METRIC_NAMES[m].replace("@k", f"@{k}")
    return env


def render_report(result: EvalResult) -> str:
    """The report page as HTML text (see `write_report`); every value from the result is
    escaped by the template engine."""
    env = environment(result.k)
    failures = [(method, r) for method in result.methods for r in result.failures(method)]
    return env.get_template(TEMPLATE).render(
        result=result,
        metrics=METRICS,
        charts=[(m, _chart(result, m)) for m in METRICS],
        failures=failures,
    )


def write_report(result: EvalResult, path: Path | str) -> Path:
    """A self-contained HTML report: tables, one chart per metric (bars per method, overall
    and per kind) embedded as PNG, and the failing questions with why."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(result), encoding="utf-8")
    return out
