"""Retrieval metrics on constructed rankings, the eval runner on the bundled set (JSON and the
HTML report, also through `tether eval`), and the Larkfield benchmark's scored/skipped counts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.app import retriever_for
from tether.cli.main import app
from tether.evaluation.metrics import DEPTH, METRICS, QuestionRun, aggregate, ranking_metrics
from tether.evaluation.questions import larkfield_collection, load_questions
from tether.evaluation.report import write_report
from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.ingest.sync import sync
from tether.retrieval.retriever import METHODS as ALL_METHODS
from tether.retrieval.retriever import Retriever
from tether.stores.sqlite import SqliteStore

# the deep rerank reads 20 candidates a question: tests/integration/test_deep_rerank.py
# measures it on part of the set
METHODS = tuple(m for m in ALL_METHODS if m != "deep")

L2 = math.log2


# ---- metrics arithmetic ---------------------------------------------------------------------


def test_metrics_on_a_ranking_with_two_relevant_passages():
    # ranks 2 and 4 match passage 0, rank 5 passage 1, rank 7 passage 1 again
    covers = [set(), {0}, set(), {0}, {1}, set(), {1}]
    m = ranking_metrics(covers, 2, 5)
    assert m["hit"] == 1.0
    assert m["recall"] == 1.0
    assert m["precision"] == pytest.approx(3 / 5)
    assert m["mrr"] == pytest.approx(1 / 2)
    # gains only where a passage is matched for the first time (ranks 2 and 5)
    assert m["ndcg"] == pytest.approx((1 / L2(3) + 1 / L2(6)) / (1 + 1 / L2(3)))
    m3 = ranking_metrics(covers, 2, 3)
    assert m3["recall"] == pytest.approx(1 / 2)
    assert m3["precision"] == pytest.approx(1 / 3)
    assert m3["mrr"] == pytest.approx(1 / 2)  # MRR reads the whole list, not only the top k
    assert m3["ndcg"] == pytest.approx((1 / L2(3)) / (1 + 1 / L2(3)))


def test_metrics_at_the_extremes():
    assert ranking_metrics([{0}], 1, 5) == {
        "hit": 1.0,
        "recall": 1.0,
        "precision": pytest.approx(0.2),
        "mrr": 1.0,
        "ndcg": 1.0,
    }
    nothing = ranking_metrics([set()] * DEPTH, 3, 5)
    assert all(v == 0.0 for v in nothing.values())
    late = ranking_metrics([set()] * 9 + [{0, 1}], 2, 5)  # found only at rank 10
    assert late["hit"] == 0.0 and late["recall"] == 0.0 and late["mrr"] == pytest.approx(0.1)
    # one chunk matching both passages at rank 1: recall 1, ideal needs two places
    both = ranking_metrics([{0, 1}], 2, 5)
    assert both["recall"] == 1.0 and both["ndcg"] == pytest.approx(1 / (1 + 1 / L2(3)))
    with pytest.raises(ValueError):
        ranking_metrics([{0}], 0, 5)


def test_aggregate_by_kind_and_language():
    def run(qid, kind, lang, hit):
        metrics = {m: float(hit) for m in METRICS}
        return QuestionRun(
            qid, kind, lang, "bm25", metrics, ("d § s",), (1 if hit else None,), (), 0
        )

    rows = [run("a", "table", "en", 1), run("b", "table", "fr", 0), run("c", "code", "en", 1)]
    agg = aggregate(rows, ["bm25"])["bm25"]
    assert agg["overall"]["recall"] == pytest.approx(2 / 3) and agg["overall"]["n"] == 3
    assert agg["by_kind"]["table"]["hit"] == 0.5 and agg["by_kind"]["code"]["mrr"] == 1.0
    assert agg["by_language"]["fr"]["ndcg"] == 0.0 and agg["by_language"]["en"]["n"] == 2
    assert rows[1].why(5) == f"expected d § s: not in top {DEPTH}"
    assert rows[0].why(5) == "expected d § s: ranked 1"


# ---- the runner on the bundled set --------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled(demo_store: SqliteStore):
    questions = load_questions()
    seen: list[tuple[int, int]] = []
    result = run_retrieval_eval(
        demo_store,
        retriever_for(demo_store),
        questions,
        METHODS,
        5,
        progress=lambda done, total: seen.append((done, total)),
    )
    return questions, result, seen


def test_eval_on_the_bundled_set(bundled):
    questions, result, seen = bundled
    with_passages = [q for q in questions if q.relevant]
    abstaining = [q for q in questions if q.abstain and not q.relevant]
    assert result.n_questions == len(questions)
    assert result.n_scored == len(with_passages)  # every listed passage exists in the index
    assert len(result.skipped) == len(questions) - len(with_passages)
    assert sum("abstention" in why for _, why in result.skipped) == len(abstaining)
    assert not result.partial, result.partial  # a relevant passage not in the index: a bad label
    assert len(result.rows) == len(with_passages) * len(METHODS)
    assert seen[-1] == (len(result.rows), len(result.rows))
    for method in METHODS:
        agg = result.aggregates[method]
        assert set(agg) == {"overall", "by_kind", "by_language"}
        assert {"en", "fr"} <= set(agg["by_language"])
        assert 0.0 <= agg["overall"]["recall"] <= 1.0
        for r in result.failures(method):
            assert "expected" in r.why(5) and ("ranked" in r.why(5) or "not in top" in r.why(5))
    best = max(result.aggregates[m]["overall"]["recall"] for m in METHODS)
    assert best >= 0.85
    code = result.aggregates["bm25"]["by_kind"]["exact-code"]
    assert code["hit"] == 1.0


def test_eval_json_and_html_report(bundled, tmp_path: Path):
    _, result, _ = bundled
    data = json.loads(result.to_json())
    assert data["n_scored"] == result.n_scored and data["k"] == 5
    assert {r["method"] for r in data["rows"]} == set(METHODS)
    failing = [r for r in data["rows"] if r["hit"] == 0]
    assert all("why" in r for r in failing)
    page = write_report(result, tmp_path / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(METRICS)
    assert "http://" not in page and "https://" not in page  # self-contained
    for method in METHODS:
        assert f"<td>{method}</td>" in page


def test_tether_eval_command(demo_store: SqliteStore, tmp_path: Path):
    from tether.evaluation.questions import demo_questions

    subset = tmp_path / "some.jsonl"  # a few questions: the bundled run is tested above
    subset.write_text("\n".join(demo_questions().read_text().splitlines()[:12]) + "\n")
    report = tmp_path / "eval.html"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "eval", "--index", str(demo_store.path), "--questions", str(subset),
            "--methods", "bm25,rerank", "--k", "3", "--json", "--report", str(report),
        ],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["methods"] == ["bm25", "rerank"] and data["k"] == 3
    assert data["n_questions"] == 12
    assert report.read_text().startswith("<!doctype html>")
    table = runner.invoke(app, ["eval", "--index", str(demo_store.path), "--methods", "bm25"])
    assert table.exit_code == 0, table.output
    assert "recall@5" in table.stdout and "per kind and language" in table.stdout
    bad = runner.invoke(app, ["eval", "--index", str(demo_store.path), "--methods", "magic"])
    assert bad.exit_code == 2


# ---- Larkfield: only questions whose passages are present ----------------------------------------


def test_larkfield_scores_only_questions_with_passages_present(larkfield: Path, tmp_path: Path):
    folder = larkfield_collection(larkfield, tmp_path / "larkfield")
    store = SqliteStore(tmp_path / "index.sqlite")
    report = sync(store, folder)  # BM25 only: the counts do not depend on the method
    assert not report.problems and len(report.added) == 9
    questions = load_questions(larkfield / "questions" / "questions.jsonl")
    assert len(questions) == 67
    staff = run_retrieval_eval(store, Retriever(store), questions, ["bm25"], 5, audience="staff")
    assert staff.n_scored == 27
    assert len(staff.skipped) == 40
    assert sum("abstention" in why for _, why in staff.skipped) == 8
    assert sum("not in the index" in why for _, why in staff.skipped) == 32
    assert len(staff.partial) == 10  # scored on the passages that are present
    assert "27 of 67 questions scored" in staff.notes[0]
    # its `section` relevance is by heading: Q13 names a French section heading
    q13 = next(r for r in staff.rows if r.id == "Q13")
    assert q13.expected == ("garantie-legale-quebec v1 § Garantie prolongée",)
    # with each question's own audience (public by default), staff-only passages are out of
    # reach, and the reason never tells a public run "filtered" from "absent" (an oracle for
    # guessing staff text through `evidence`)
    public = run_retrieval_eval(store, Retriever(store), questions, ["bm25"], 5)
    assert public.n_scored < staff.n_scored
    public_why = [why for _, why in public.skipped if "not in what the audience public" in why]
    assert public_why and not any("refused by the filters" in why for _, why in public.skipped)
    assert not any("not in the index" in why for _, why in public.skipped)
