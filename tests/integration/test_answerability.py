"""The answerability judge (`tether.answering.answerable`): its decision, its second opinion,
its refusals as every face reports them, select mode's abstention, its training, and the
3-file and 10-file help-desk collections of `tests/data` answered end to end."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tether.answering.answerable import (
    MODEL_PATH,
    AnswerabilityJudge,
    ModelAnswerability,
    Reading,
    question_terms,
)
from tether.answering.pipeline import AskOptions, chosen_answer
from tether.evaluation.answerability_training import FEATURES, MAX_WRONGLY_REFUSED, Row, fit
from tether.schemas import WireAskResult
from tether.types import Answer, Answerability, AskResult, Claim, Completion
from tether.verify.learned import JudgeModel, load_model

DATA = Path(__file__).parents[1] / "data"


def _model(threshold: float = 0.5) -> JudgeModel:
    """P(answerable) rises with typed_cover only: 0.5 at 0.5."""
    return JudgeModel(("typed_cover",), (0.5,), (0.1,), (4.0,), 0.0, threshold, {})


def _reading(cover: float) -> Reading:
    return Reading({"typed_cover": cover}, "duration", (), "", "", ("Returns: 30 days.",))


class _Second:
    """A second opinion that records what it was asked (a unit-test stand-in)."""

    def __init__(self, p: float) -> None:
        self.p = p
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def score(self, question: str, passages: tuple[str, ...]) -> float:
        self.asked.append((question, tuple(passages)))
        return self.p


def test_the_judge_refuses_under_its_threshold() -> None:
    judge = AnswerabilityJudge(_model())
    assert judge.decide(_reading(0.9)).answerable
    low = judge.decide(_reading(0.1))
    assert not low.answerable and low.probability < 0.5 and low.second is None


def test_the_second_opinion_decides_only_inside_its_band() -> None:
    second = _Second(0.9)
    judge = AnswerabilityJudge(
        _model(), second=second, band=(0.2, 0.8), second_weight=0.7, second_threshold=0.6  # type: ignore[arg-type]
    )
    inside = judge.decide(_reading(0.48), "How long?", ["Returns: 30 days."])
    assert inside.answerable and inside.second == 0.9 and len(second.asked) == 1
    outside = judge.decide(_reading(0.0), "How long?", ["Returns: 30 days."])
    assert not outside.answerable and outside.second is None and len(second.asked) == 1
    assert inside.threshold == 0.6  # the mix's threshold decided
    second.p = 0.5  # 0.7 x 0.5 + 0.3 x 0.69 < 0.6: refused although the features lean to yes
    assert not judge.decide(_reading(0.52), "How long?", ["x"]).answerable


class _YesNo:
    name = "fake"

    def __init__(self, logprobs: dict[str, float] | None, text: str = "") -> None:
        self.logprobs, self.text, self.requests = logprobs, text, []

    def complete(self, request):
        self.requests.append(request)
        return Completion(text=self.text, top_logprobs=self.logprobs)


def test_a_model_second_opinion_reads_p_yes_from_log_probabilities() -> None:
    provider = _YesNo({"Yes": -0.1, "No": -2.5})
    p = ModelAnswerability(provider).score("How long?", ["Returns take 30 days."])
    assert 0.85 < p < 0.95
    sent = provider.requests[0]
    assert sent.logprobs and sent.max_tokens == 1 and sent.prompt_id.startswith("answerable@")
    assert "How long?" in sent.messages[0].content and "Returns take 30 days." in sent.messages[0].content
    assert ModelAnswerability(_YesNo(None, "No.")).score("q", ["p"]) == 0.0
    assert ModelAnswerability(_YesNo(None, "???")).score("q", ["p"]) == 0.5


def test_a_refusal_says_why_in_plain_words_in_the_askers_language() -> None:
    unknown = Reading({}, "money", ("kayak",))
    assert "'kayak'" in unknown.reason("en") and "« kayak »" in unknown.reason("fr")
    typed = Reading({}, "duration", ())
    assert "length of time" in typed.reason("en") and "durée" in typed.reason("fr")
    assert "ask a person" in typed.reason("en")


def test_question_terms_keep_content_words_as_written() -> None:
    terms = question_terms("Combien coûte la numérisation d'une page ?")
    assert "numérisation" in terms.values() and "combien" not in terms.values()


def _result(**kw: object) -> AskResult:
    return AskResult("How long do refunds take?", date(2026, 11, 30), "public", "en", "rerank", **kw)  # type: ignore[arg-type]


def test_a_refusal_by_answerability_is_reported_as_such() -> None:
    verdict = Answerability(False, 0.12, 0.3, "duration", "none gives the length of time")
    result = _result(answer=Answer(False, "", ()), answerability=verdict)
    assert result.refused_by == "answerability" and result.status == "refused"
    wire = WireAskResult.from_ask_result(result)
    assert wire.refused_by == "answerability"
    assert wire.why_refused == "refused before the model: none gives the length of time"
    assert wire.answerability is not None and wire.answerability.probability == 0.12
    passed = _result(answer=Answer(True, "5 days.", ()), answerability=Answerability(True, 0.9, 0.3, "duration"))
    assert passed.refused_by is None


def test_select_mode_abstains_when_no_chosen_sentence_gives_what_is_asked() -> None:
    heading_like = Answer(True, "Refunds go back to your card.", (Claim("Refunds go back to your card.", ("c1",)),), mode="select")
    refused = chosen_answer(_result(answer=heading_like))
    assert refused.refused_by == "answerability" and refused.answer is not None
    assert not refused.answer.answerable and "do not give" in refused.answerability.reason  # type: ignore[union-attr]
    timed = Answer(True, "Refunds take 5 to 10 business days.", (Claim("Refunds take 5 to 10 business days.", ("c1",)),), mode="select")
    assert chosen_answer(_result(answer=timed)).refused_by is None


def test_the_shipped_model_reads_the_features_the_training_writes() -> None:
    model = load_model(MODEL_PATH)
    assert model.features == FEATURES
    assert model.trained["questions"] >= 200 and model.trained["must_refuse"] >= 40
    assert 0.0 < model.threshold < 1.0


def test_fit_chooses_a_threshold_that_refuses_few_answerable_questions() -> None:
    pytest.importorskip("sklearn")
    import random

    rng = random.Random(3)
    rows = []
    for i in range(200):
        answerable = i % 3 != 0
        base = 0.7 if answerable else 0.35
        features = {f: base + rng.gauss(0, 0.2) for f in FEATURES}
        rows.append(Row("synthetic", f"q{i}", "k", answerable, features))
    model = fit(rows)
    probabilities = [(model.probability(r.features), r.answerable) for r in rows]
    wrongly = sum(p < model.threshold for p, ok in probabilities if ok)
    refused = sum(p < model.threshold for p, ok in probabilities if not ok)
    answerable = sum(ok for _, ok in probabilities)
    assert wrongly <= MAX_WRONGLY_REFUSED * answerable + 3  # out of fold, then refitted
    assert refused > 0.5 * (len(rows) - answerable)


# ------------------------------------------------------------- small collections, end to end

# Questions the extractive answerer gets wrong today, measured, with why. strict: a question
# that starts passing fails here, so the list stays true.
KNOWN_WRONG = {
    "S3-05": "the US shipping price is in a French sentence; an English return-shipping one is quoted",
    "S3-08": "the motor's 5 years is in a French FAQ; the English 2-year warranty is quoted",
    "S3-09": "a G3 grinder (only the G2 exists): the judge lets it through and a support sentence is quoted",
    "S3-12": "a Bluetooth app that does not exist: the FAQ's intro line is quoted",
    "S10-01": "a table row's price: the pause-fee sentence shares more words",
    "S10-02": "'how far ahead' is read as a measurement; no sentence gives one",
    "S10-11": "dogs, asked in French of an English rule: the guest Wi-Fi sentence is quoted",
    "S10-15": "parcels, asked in French of an English rule: refused by answerability",
    "S10-16": "parking, no sentence shares the words or gives a number the question wants",
    "S10-17": "mail scanning by staff (not offered): the self-service 'scanning is free' is quoted",
    "S10-21": "a yearly discount (none): the pause-fee sentence is quoted",
    "S10-24": "a staff-only limit asked by the public: the public card price is quoted",
}


@pytest.fixture(scope="module")
def small_workspaces(tmp_path_factory: pytest.TempPathFactory):
    """The 3-file and 10-file collections ingested with the real embedder (once)."""
    from tether.app import Workspace, shared_models
    from tether.config import settings_from_mapping
    from tether.providers.extractive import ExtractiveProvider

    out = {}
    for name in ("small3", "small10"):
        ws = Workspace.open(
            tmp_path_factory.mktemp(name) / "index.sqlite",
            settings=settings_from_mapping({}),
            embedder=shared_models().embedder(),
            provider=ExtractiveProvider(),
            create=True,
        )
        report = ws.ingest(DATA / name / "docs", executor="serial")
        assert report.committed and not report.problems, report.problems
        out[name] = ws
    yield out
    for ws in out.values():
        ws.close()


def _questions() -> list:
    out = []
    for name in ("small3", "small10"):
        for line in (DATA / name / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            marks = (
                [pytest.mark.xfail(reason=KNOWN_WRONG[q["id"]], strict=True)]
                if q["id"] in KNOWN_WRONG
                else []
            )
            out.append(pytest.param(name, q["id"], id=q["id"], marks=marks))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("collection", "qid"), _questions())
def test_small_collection_question_is_answered_or_refused_as_expected(
    small_workspaces: dict, collection: str, qid: str
) -> None:
    from tether.evaluation.answer_eval import score
    from tether.evaluation.questions import load_questions

    q = next(q for q in load_questions(DATA / collection / "questions.jsonl") if q.id == qid)
    result = small_workspaces[collection].ask(
        q.question, AskOptions(as_of=q.as_of, audience=q.audience), audit=False
    )
    row = score(q, result, 0.0)
    if q.abstain:
        assert result.refused, f"must refuse, answered: {row.answer!r}"
    else:
        assert result.refused_by not in ("gate", "answerability"), result.refused_by
        assert row.correct, f"keys {q.keys} not in {row.answer!r} ({result.status})"


@pytest.mark.parametrize(
    ("question", "subjectless"),
    [("?", True), ("How much does it cost?", True), ("Combien ?", True),
     ("How long does it take?", True), ("How much does delivery cost?", False),
     ("Combien coûte la livraison ?", False)],
)  # fmt: skip
def test_a_question_that_names_nothing_is_refused_whatever_the_features(
    question: str, subjectless: bool
) -> None:
    from tether.answering.answerable import ASKING_WORDS
    from tether.text import fold

    terms = question_terms(question).values()
    assert all(fold(w) in ASKING_WORDS for w in terms) is subjectless
    reading = Reading({"typed_cover": 0.9}, "money", subjectless=subjectless)
    verdict = AnswerabilityJudge(_model()).decide(reading)
    assert verdict.answerable is not subjectless
    if subjectless:
        assert "does not say what it is about" in reading.reason("en")
        assert "ne dit pas de quoi" in reading.reason("fr")
