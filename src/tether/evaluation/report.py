"""`write_report`: a retrieval evaluation as one self-contained HTML page (tables, one bar
chart per metric embedded as PNG, the failing questions with why, what was not scored).

What it cannot do: the charts are static images (matplotlib, Agg backend); the page shows one
`EvalResult`, not a comparison between runs.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from tether.evaluation.metrics import METRIC_NAMES, METRICS, EvalResult


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
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def write_report(result: EvalResult, path: Path | str) -> Path:
    """A self-contained HTML report: tables, one chart per metric (bars per method, overall
    and per kind) embedded as PNG, and the failing questions with why."""
    esc = html.escape
    k = result.k

    def table(title: str, key: str | None) -> str:
        head = "".join(f"<th>{esc(METRIC_NAMES[m].replace('@k', f'@{k}'))}</th>" for m in METRICS)
        body = []
        for method in result.methods:
            agg = result.aggregates[method]
            groups = {"overall": agg["overall"]} if key is None else agg[key]
            for group, vals in groups.items():
                cells = "".join(f"<td>{vals[m]:.3f}</td>" for m in METRICS)
                body.append(
                    f"<tr><td>{esc(method)}</td><td>{esc(group)}</td>"
                    f"<td>{int(vals['n'])}</td>{cells}</tr>"
                )
        return (
            f"<h2>{esc(title)}</h2><table><tr><th>method</th><th>group</th><th>n</th>{head}</tr>"
            + "".join(body)
            + "</table>"
        )

    charts = "".join(
        f'<figure><img alt="{esc(m)}" src="data:image/png;base64,{_chart(result, m)}"></figure>'
        for m in METRICS
    )
    fails = []
    for method in result.methods:
        for r in result.failures(method):
            fails.append(
                f"<tr><td>{esc(method)}</td><td>{esc(r.id)}</td><td>{esc(r.kind)}</td>"
                f"<td>{esc(r.question)}</td><td>{esc(r.why(k))}</td></tr>"
            )
    skipped = "".join(f"<tr><td>{esc(i)}</td><td>{esc(why)}</td></tr>" for i, why in result.skipped)
    timing = "".join(
        f"<tr><td>{esc(m)}</td><td>{t['median_ms']:.1f}</td><td>{t['p95_ms']:.1f}</td></tr>"
        for m, t in result.timings.items()
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tether eval: retrieval</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 75em; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }}
figure {{ display: inline-block; margin: 0.5em; }}
</style></head><body>
<h1>Retrieval evaluation</h1>
<p>Questions: {esc(result.questions_file or "bundled set")} · index: {esc(result.index)} ·
k = {k} · methods: {esc(", ".join(result.methods))}</p>
<p>{esc(" ".join(result.notes))}</p>
{table("Overall", None)}
<h2>Charts</h2>{charts}
{table("Per kind", "by_kind")}
{table("Per language", "by_language")}
<h2>Search time (ms per query)</h2>
<table><tr><th>method</th><th>median</th><th>p95</th></tr>{timing}</table>
<h2>Failing questions (no relevant passage in the top {k})</h2>
<table><tr><th>method</th><th>id</th><th>kind</th><th>question</th><th>why</th></tr>
{"".join(fails) or '<tr><td colspan="5">none</td></tr>'}</table>
<h2>Not scored</h2>
<table><tr><th>id</th><th>why</th></tr>{skipped or '<tr><td colspan="2">none</td></tr>'}</table>
</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
