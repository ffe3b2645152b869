"""The HTML report of `tether eval --report`: a Jinja2 template shipped with the package,
the key figures on the page, and escaping of what comes from a user's question file; and the library stemmer that replaced
the hand-written one."""

from __future__ import annotations

import html
import re
from importlib import resources
from pathlib import Path

import pytest

from tether.evaluation import report
from tether.evaluation.metrics import METRICS, EvalResult, QuestionRun

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & co'


def _result() -> EvalResult:
    def vals(x: float) -> dict:
        return {**{m: x for m in METRICS}, "n": 2}

    aggs = {
        "bm25": {"overall": vals(0.25), "by_kind": {"fact": vals(0.125)}, "by_language": {"en": vals(0.5)}},
        "rrf": {"overall": vals(0.75), "by_kind": {"fact": vals(0.625)}, "by_language": {"en": vals(1.0)}},
    }  # fmt: skip
    row = QuestionRun(
        id="q<7>", kind="fact", language="en", method="bm25",
        metrics={m: 0.0 for m in METRICS}, expected=("handbook § Leave",), ranks=(None,),
        top=("other v1 § x",), seconds=0.01, question=HOSTILE,
    )  # fmt: skip
    return EvalResult(
        methods=("bm25", "rrf"), k=5, rows=(row,), aggregates=aggs,
        timings={"bm25": {"median_ms": 1.25, "p95_ms": 9.75, "mean_ms": 2.0}},
        n_questions=3, skipped=(("q9", "no <passage> matched"),), index="demo.sqlite",
    )  # fmt: skip


def test_the_template_is_package_data() -> None:
    template = resources.files("tether.evaluation") / "templates" / report.TEMPLATE
    assert template.is_file()


def test_the_report_keeps_its_figures_and_escapes_a_hostile_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "_chart", lambda result, metric: f"PNG{metric}")
    page = report.write_report(_result(), tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "<img src=x" not in page
    assert html.escape(HOSTILE, quote=False) in page.replace("&#34;", '"')
    assert "<td>q&lt;7&gt;</td>" in page and "no &lt;passage&gt; matched" in page
    assert "k = 5 · methods: bm25, rrf" in page and "Questions: bundled set" in page
    overall = page.split("<h2>Overall</h2>")[1].split("</table>")[0]
    assert (
        "<tr><td>bm25</td><td>overall</td><td>2</td>" + "<td>0.250</td>" * len(METRICS) in overall
    )
    assert "<tr><td>rrf</td><td>overall</td><td>2</td>" + "<td>0.750</td>" * len(METRICS) in overall
    assert "<td>fact</td><td>2</td>" + "<td>0.625</td>" * len(METRICS) in page
    assert "<tr><td>bm25</td><td>1.2</td><td>9.8</td></tr>" in page  # "%.1f" as before
    assert page.count('src="data:image/png;base64,PNG') == len(METRICS)
    assert "@5" in page and "@k" not in page
    assert re.search(r"top 5\)</h2>", page)
    assert '<td colspan="2">none</td>' not in page  # one question was not scored


def test_stem_is_snowball_english_then_french() -> None:
    from tether.text import stem

    # the former 6-letter cut joined "warranty" and "warrant" and kept "polici" apart
    assert stem("warranty") != stem("warrant")
    assert stem("policies") == stem("policy") == "polic"
    assert stem("expire") == stem("expirent") == "expir"
    assert stem("jours") == stem("jour") and stem("shipped") == stem("ship")
