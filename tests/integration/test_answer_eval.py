"""`tether eval --answers`: scoring one answer (keys, must_not, abstention, claims shown), the
summary's rates, the extractive answerer and the bundled recordings end to end on the demo
index (deterministic: no model runs), the CLI's --json and --report, and the summary kept
with the index for `tether info`."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.cli.main import app
from tether.evaluation.answer_eval import (
    RECORDED_OPTIONS,
    run_answer_eval,
    score,
    shown_claims,
    summarise,
)
from tether.evaluation.answer_report import render_answer_report
from tether.evaluation.questions import demo_questions, load_questions
from tether.providers.extractive import ExtractiveProvider
from tether.schemas import AnswerReport
from tether.types import (
    Answer,
    AnswerProblem,
    AskResult,
    Claim,
    ClaimCheck,
    Completion,
    Flag,
    Gate,
    Question,
)

QUESTIONS = {q.id: q for q in load_questions()}


def _result(text: str, *, answerable: bool = True, checks: tuple = (), gate=None, problem=None):
    claims = tuple(ch.claim for ch in checks)
    answer = None if problem else Answer(answerable, text, claims)
    return AskResult(
        "q", None, "public", "en", "bm25", gate=gate, answer=answer, problem=problem,
        checks=checks, completion=Completion(text, input_tokens=10, output_tokens=3,
                                             cost_usd=0.5),
    )  # fmt: skip


Q = Question(id="X1", question="How long?", keys=(r"3\s*to\s*7",), must_not=("never",))


def test_an_answer_is_right_when_every_key_matches_and_no_must_not_does():
    ok = ClaimCheck(Claim("It takes 3 to 7 days.", ("a",)))
    assert score(Q, _result("It takes 3 to 7 days.", checks=(ok,)), 1.0).correct
    short = ClaimCheck(Claim("It takes 3 days.", ("a",)))
    assert not score(Q, _result("It takes 3 days.", checks=(short,)), 1.0).correct
    # a claim counts as said even when the short answer leaves it out
    assert score(Q, _result("Soon.", checks=(ok,)), 1.0).correct
    bad = score(Q, _result("3 to 7 days, never more."), 1.0)
    assert not bad.correct
    refused = score(Q, _result("", answerable=False), 1.0)
    assert not refused.correct and refused.refused_by == "model"


def test_an_abstention_is_right_only_when_refused_and_says_by_whom():
    q = Question(id="X2", question="Moon?", abstain=True)
    gate = Gate(False, 0.8, 1, 0, 0.1, "retrieval too weak")
    row = score(q, _result("", gate=gate), 0.1)
    assert row.correct and row.refused_by == "gate" and row.status == "refused"
    assert not score(q, _result("We ship to the Moon."), 0.1).correct


def test_flagged_unsupported_and_shown_claims_are_counted():
    flagged = ClaimCheck(Claim("It takes 3 to 7 days.", ("a",)), (Flag("number_not_found", "7"),))
    source = ClaimCheck(Claim("Also 9 days.", ("b",)), (Flag("lower_precedence", "b"),))
    removed = ClaimCheck(Claim("Gone.", ("c",)), (Flag("missing_id", "c"),), removed=True)
    result = _result("It takes 3 to 7 days.", checks=(flagged, source, removed))
    row = score(Q, result, 2.0)
    assert (row.claims, row.flagged_claims, row.unsupported_claims) == (3, 3, 1)
    assert shown_claims(result) == (flagged, source)
    assert row.input_tokens == 10 and row.cost_usd == 0.5
    s = summarise([row, score(Q, _result("no"), 1.0)])
    assert s["accuracy"] == 0.5 and s["flagged_claim_rate"] == 3 / 3
    assert s["cost_usd"] == 1.0 and s["abstention_precision"] is None


def test_accuracy_of_what_is_shown_follows_the_claims_shown():
    # the short answer holds the key, the one claim that carries it was removed
    gone = ClaimCheck(Claim("3 to 7 days", ("a",)), (Flag("missing_id", "a"),), removed=True)
    kept = ClaimCheck(Claim("Delivery is by courier.", ("b",)))
    row = score(Q, _result("3 to 7 days by courier.", checks=(gone, kept)), 1.0)
    assert row.correct and not row.correct_shown


def test_a_provider_failure_is_listed_not_scored():
    failing = _result("", problem=AnswerProblem("provider_error", "no recording for this"))
    result = run_answer_eval([Q], lambda q: failing, provider="x")
    assert result.rows == () and result.errors == (("X1", "no recording for this"),)


@pytest.fixture
def demo_copy(demo_store, tmp_path: Path, clean_env: Path) -> Path:
    """A copy of the session's demo index (this test writes its meta)."""
    path = tmp_path / "demo.sqlite"
    shutil.copyfile(demo_store.path, path)
    return path


def _ask(ws: Workspace, options: dict):
    def ask(q):
        o = AskOptions(as_of=q.as_of, audience=q.audience, language=q.language, **options)
        return ws.ask(q.question, o, audit=False)

    return ask


def test_extractive_answers_are_scored_end_to_end(demo_copy: Path):
    ws = Workspace.open(demo_copy, provider=ExtractiveProvider())
    qs = [QUESTIONS[i] for i in ("Q001", "Q002", "Q116")]
    result = run_answer_eval(qs, _ask(ws, {}), provider="extractive")
    rows = {r.id: r for r in result.rows}
    assert rows["Q001"].correct and rows["Q001"].passages
    assert not rows["Q002"].correct  # the first sentence of the top passage (see the issue)
    assert rows["Q116"].abstain
    overall = result.summary["overall"]
    assert overall["answerable"] == 2 and overall["correct"] == 1
    assert set(result.summary["by_kind"]) == {"answerable", "staff-only"}
    html = render_answer_report(result)
    assert "Q002" in html and "data:image/png;base64," in html
    AnswerReport.model_validate(result.to_dict())


def test_recorded_local_answers_replay_labelled_with_model_and_date(demo_copy: Path):
    ws = Workspace.open(demo_copy)
    provider = ws.make_provider("recorded")
    ws.use_provider(provider)
    assert "qwen2.5-coder-1.5b-instruct-q4_k_m recorded 2026-11-30" in provider.recorded()
    qs = [QUESTIONS[i] for i in ("Q001", "Q003", "Q004")]
    result = run_answer_eval(qs, _ask(ws, RECORDED_OPTIONS), provider=provider.recorded())
    assert not result.errors
    # replayed (the session's index chunks a passage apart from the recording's: loose key)
    assert all(r.note.startswith("replayed") for r in result.rows), result.rows[0].note
    assert {r.id for r in result.rows if r.correct} >= {"Q001", "Q003"}


def test_eval_answers_cli_json_report_and_the_summary_kept_for_info(demo_copy: Path):
    qfile = demo_copy.parent / "q.jsonl"
    lines = [line for line in demo_questions().read_text().splitlines()
             if json.loads(line)["id"] in ("Q001", "Q002", "Q116", "Q102")]  # fmt: skip
    qfile.write_text("\n".join(lines) + "\n")
    report = demo_copy.parent / "answers.html"
    runner = CliRunner()
    done = runner.invoke(app, [
        "eval", "--answers", "--provider", "extractive", "--index", str(demo_copy),
        "--questions", str(qfile), "--json", "--report", str(report),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    data = AnswerReport.model_validate_json(done.stdout)
    assert data.n_scored == 4 and data.provider.startswith("extractive")
    assert data.summary["overall"]["must_refuse"] == 1
    assert report.read_text().startswith("<!doctype html>")
    # the summary is kept with the index, shown by info; Q102 is a staff question
    staff = json.loads(runner.invoke(app, ["info", "--index", str(demo_copy), "--json",
                                           "--audience", "staff"]).stdout)  # fmt: skip
    assert staff["handoff"]["last_eval"]["overall"]["n"] == 4
    public = json.loads(runner.invoke(app, ["info", "--index", str(demo_copy), "--json"]).stdout)
    assert "overall" not in (public["handoff"]["last_eval"] or {})
    assert "last_eval:answers" not in public and "by_access" not in public["handoff"]["collection"]
    table = runner.invoke(app, ["eval", "--answers", "--provider", "extractive", "--index",
                                str(demo_copy), "--questions", str(qfile)])  # fmt: skip
    assert table.exit_code == 0 and "wrong: Q002" in table.stdout and "keys: paypal" in table.stdout
    bad = runner.invoke(app, ["eval", "--answers", "--methods", "bm25,dense", "--index",
                              str(demo_copy), "--questions", str(qfile)])  # fmt: skip
    assert bad.exit_code == 2 and "--methods: --answers takes one retrieval method" in bad.output


def test_question_dates_are_kept():
    assert QUESTIONS["Q001"].as_of == date(2026, 11, 30)


def test_handoff_shows_the_calibration_and_hides_staff_figures_from_the_public(demo_copy: Path):
    ws = Workspace.open(demo_copy)
    record = {"questions": "mine.jsonl", "at": "2026-11-30T10:00:00Z",
              "chosen": [{"method": "bm25", "floor": 5.0, "wrongly_refused": "3/158"}]}
    ws.set_gate_floors({"bm25": 5.0}, record)
    staff, public = ws.handoff("staff"), ws.handoff("public")
    assert staff["calibration"]["floors"] == {"bm25": 5.0}
    assert staff["calibration"]["questions"] == "mine.jsonl" and staff["calibration"]["chosen"]
    assert public["calibration"]["questions"] == "mine.jsonl"
    assert "chosen" not in public["calibration"]
    assert staff["collection"]["by_access"]["staff"] > 0 and "by_access" not in public["collection"]
    assert public["collection"]["documents"] < staff["collection"]["documents"]
    assert public["models"]["embedder"].startswith("multilingual-e5-small")
    assert "calibration" not in ws.info("public") and "calibration" not in ws.info("staff")
    weak = {"at": "x", "staff_questions": False, "overall": {},
            "weakest_kinds": [{"kind": "computed", "value": 0.0}, {"kind": "table", "value": 0.8}]}
    ws.record_eval(weak)
    assert ws.handoff("public")["weaknesses"] == ["computed: 0%"]
