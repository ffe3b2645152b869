"""`write_answer_report`: an answer evaluation as one self-contained HTML page: the figures
overall, per kind and per language, bar charts of accuracy and abstention per kind, and the
wrong answers with the answer, the keys and the passages. Rendered from the Jinja2 template
`templates/answers.html.j2` with autoescape on (the retrieval report's environment).

What it cannot do: the charts are static images; one run per page, no comparison.
"""

from __future__ import annotations

from pathlib import Path

from tether.evaluation.answer_eval import AnswerEvalResult
from tether.evaluation.report import environment, figure_png


def _chart(result: AnswerEvalResult, figure: str) -> str:
    """Bars per kind (and overall): answer accuracy and accuracy of what is shown, or
    abstention precision and recall."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.summary
    groups = ["overall", *s["by_kind"]]
    values = [s["overall"], *s["by_kind"].values()]
    series = (
        ("accuracy", "accuracy_shown")
        if figure == "accuracy"
        else ("abstention_precision", "abstention_recall")
    )
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) + 2), 3.2), dpi=100)
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, [v[name] or 0.0 for v in values], width, label=name.replace("_", " "))
    ax.set_title(figure, loc="left")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=8, ncols=2, loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return figure_png(fig)


def render_answer_report(result: AnswerEvalResult) -> str:
    """The page as HTML text; every value is escaped by the template engine."""
    s = result.summary
    groups = [("overall", s["overall"])]
    groups += [(f"kind: {k}", v) for k, v in s["by_kind"].items()]
    groups += [(f"language: {k}", v) for k, v in s["by_language"].items()]
    return (
        environment()
        .get_template("answers.html.j2")
        .render(
            result=result,
            groups=groups,
            failures=result.failures(),
            charts=[(c, _chart(result, c)) for c in ("accuracy", "abstention")],
        )
    )


def write_answer_report(result: AnswerEvalResult, path: Path | str) -> Path:
    """Write the page (see `render_answer_report`) to `path`."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_answer_report(result), encoding="utf-8")
    return out
