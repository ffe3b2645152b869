"""The whole flow on the demo collection: the gate, recorded real-model answers replayed end to
end, --strict, and the verifier measured on the labelled claim set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tether.answering.context import token_counter
from tether.answering.pipeline import AskOptions, ask, choose_judge
from tether.app import retriever_for, shared_models
from tether.embeddings.embedders import token_counter_of
from tether.errors import ProviderError
from tether.evaluation.calibration import calibrate_gate
from tether.evaluation.questions import load_questions
from tether.evaluation.verifier_eval import load_claims, run_verifier_eval
from tether.providers.replay import ReplayProvider
from tether.types import Capabilities, Completion, ModelRequest

RECORDINGS = Path(__file__).resolve().parents[2] / "src/tether/demo/recordings/local-qwen.jsonl"
# the options scripts/record_answers.py recorded with (json mode: see RECORDED_OPTIONS)
RECORD_OPTIONS = {"k": 4, "budget": 1000, "method": "hybrid", "mode": "json"}
QUESTIONS = {q.id: q for q in load_questions()}


class CountingProvider:
    name = "counting"

    def __init__(self, text: str = "") -> None:
        self.calls: list[ModelRequest] = []
        self.text = text

    def complete(self, request: ModelRequest) -> Completion:
        self.calls.append(request)
        return Completion(text=self.text, provider=self.name, model="fake")


class FailingProvider:
    name = "failing"

    def complete(self, request: ModelRequest) -> Completion:
        raise ProviderError("the model server timed out after 3 retries")


@pytest.fixture(scope="module")
def retriever(demo_store):
    return retriever_for(demo_store)


def options(q, **extra) -> AskOptions:
    return AskOptions(as_of=q.as_of, audience=q.audience, language=q.language, **extra)


def parts(retriever, provider) -> dict:
    """What a Workspace passes to `ask`: the retriever, the usual judge, the e5 token counter."""
    return {
        "retriever": retriever,
        "judge": choose_judge(retriever.embedder, provider),
        "tokens": token_counter(lambda: token_counter_of(shared_models().embedder())),
    }


def test_gate_refuses_before_any_model_call(each_demo_store):
    provider = CountingProvider()
    q = QUESTIONS["Q001"]
    retriever = retriever_for(each_demo_store)
    result = ask(
        q.question, each_demo_store, provider, options(q, floor=99.0), **parts(retriever, provider)
    )
    assert provider.calls == []
    assert result.refused and result.gate is not None and not result.gate.passed
    assert "retrieval too weak" in result.gate.reason
    assert result.completion is None and result.request is None


def test_provider_failure_is_reported_not_raised(demo_store, retriever):
    q = QUESTIONS["Q001"]
    provider = FailingProvider()
    result = ask(q.question, demo_store, provider, options(q), **parts(retriever, provider))
    assert result.problem is not None and result.problem.kind == "provider_error"
    assert "timed out" in result.problem.detail


@pytest.mark.parametrize("qid", ["Q001", "Q003", "Q004", "Q006"])
def test_recorded_real_model_answers_replay_end_to_end(each_demo_store, qid):
    """Recorded with Qwen2.5-Coder-1.5B-Instruct (local, 2026-11-30); replayed here, on each
    store (the same passages reach the model from both)."""
    q = QUESTIONS[qid]
    provider = ReplayProvider(RECORDINGS, mode="replay")
    retriever = retriever_for(each_demo_store)
    result = ask(
        q.question, each_demo_store, provider, options(q, **RECORD_OPTIONS),
        **parts(retriever, provider),
    )  # fmt: skip
    assert result.problem is None, result.problem
    assert result.answer is not None and result.answer.answerable
    assert result.completion is not None and "replayed" in result.completion.note
    for key in q.keys:
        assert re.search(key, result.answer.answer, re.IGNORECASE), (key, result.answer.answer)
    # every claim was checked against the passages the model saw
    assert len(result.checks) == len(result.answer.claims) > 0
    shown = set(result.context.chunk_ids)
    for check in result.checks:
        assert not any(f.startswith("not_in_context") for f in check.flags) or not (
            set(check.claim.chunk_ids) <= shown
        )


def test_a_recorded_claim_citing_a_passage_not_shown_is_withheld_from_the_public(
    demo_store, retriever
):
    """Q069's recording cites a passage that today's retrieval no longer puts in the context
    (not_in_context): the public reader is refused by the verifier, told why."""
    q = QUESTIONS["Q069"]
    provider = ReplayProvider(RECORDINGS, mode="replay")
    result = ask(
        q.question, demo_store, provider, options(q, **RECORD_OPTIONS), **parts(retriever, provider)
    )
    assert any(f.kind == "not_in_context" for f in result.checks[0].flags)
    assert result.checks[0].withheld and result.refused_by == "verifier"
    assert "may not cite" in result.notice


def test_strict_removes_claims_failing_exact_checks(demo_store, retriever):
    q = QUESTIONS["Q001"]
    text = (
        '{"answerable": true, "answer": "3 to 7 days.", "claims": ['
        '{"text": "Standard delivery takes 3 to 7 business days.", "chunk_ids": ["000000000000"]}]}'
    )
    provider = CountingProvider(text)
    result = ask(
        q.question, demo_store, provider, options(q, strict=True), **parts(retriever, provider)
    )
    assert result.checks[0].removed and "missing_id:000000000000" in result.checks[0].flags
    assert not result.answer.answerable  # every claim failed: turned into a refusal


def test_choose_judge_follows_the_provider_and_the_embedder(retriever):
    from tether.answering.pipeline import make_judge
    from tether.errors import TetherError
    from tether.verify.judges import EmbeddingJudge, LLMJudge
    from tether.verify.learned import AlignmentJudge

    provider = CountingProvider()
    other = choose_judge(retriever.embedder, provider)  # declares nothing: a remote model's
    assert isinstance(other, AlignmentJudge) and other.second is None
    assert isinstance(choose_judge(None, provider), AlignmentJudge)
    provider.capabilities = Capabilities(judge="align+llm")  # the local model's
    local = choose_judge(retriever.embedder, provider)
    assert isinstance(local, AlignmentJudge) and isinstance(local.second, LLMJudge)
    assert local.second.provider is provider
    assert isinstance(make_judge("embedding", retriever.embedder), EmbeddingJudge)
    assert make_judge("embedding", None) is None and make_judge("none", None) is None
    with pytest.raises(TetherError, match="unknown judge"):
        make_judge("oracle", None)


def test_labelled_claim_set_is_complete_and_exact_checks_are_never_wrong(demo_store):
    items = load_claims()
    assert len(items) >= 150
    kinds = {i["kind"] for i in items}
    for kind in ("made_up_id", "unseen_passage", "no_citation", "wrong_number", "negation",
                 "another_product", "staff_for_public", "injection", "lower_precedence", "computed"):  # fmt: skip
        assert kind in kinds, kind
    assert all(i["how"] for i in items) and {i["made"] for i in items} == {
        "constructed",
        "recorded",
    }
    result = run_verifier_eval(demo_store, items)
    # a staff passage is not in a public reader's context (as `ask` builds it), so citing it
    # reads as an unknown ID, exactly as `check` reads it
    exact = {"made_up_id": ("missing_id",), "unseen_passage": ("not_in_context",),
             "no_citation": ("no_citation",), "staff_for_public": ("not_allowed", "missing_id")}  # fmt: skip
    for row in result.rows:
        if row.kind in exact:
            assert any(f.startswith(exact[row.kind]) for f in row.flags), row
        if row.label == "supported":
            assert not any(
                f.split(":")[0] in ("missing_id", "not_in_context", "no_citation", "not_allowed")
                for f in row.flags
            ), row
    # the goals of the issue, as measured without a judge (see the README for the judges)
    assert result.false_alarm_rate <= 0.10
    assert result.false_pass_rate <= 0.10


def test_calibrated_gate_trades_refusals(demo_store, retriever):
    qs = [q for q in load_questions() if q.language == "en"][:60]
    cal = calibrate_gate(demo_store, retriever, qs, ("bm25", "hybrid"))
    for row in cal.chosen:
        assert row.wrongly_refused <= max(1, int(0.02 * row.answerable))
    assert set(cal.floors) == {"bm25", "hybrid"}


class SlowProvider(CountingProvider):
    """Answers just after `until` (a time.monotonic() instant): the request's deadline passes
    while the model works."""

    def __init__(self, text: str, until: float) -> None:
        super().__init__(text)
        self.until = until

    def complete(self, request: ModelRequest) -> Completion:
        import time

        time.sleep(max(0.0, self.until - time.monotonic()) + 0.1)
        return super().complete(request)


def test_a_request_past_its_deadline_stops_at_the_next_stage(demo_store, retriever):
    import time

    from tether.errors import DeadlineError

    q = QUESTIONS["Q001"]
    provider = CountingProvider()
    late = options(q, deadline=time.monotonic() - 1.0)
    with pytest.raises(DeadlineError, match="before retrieval"):
        ask(q.question, demo_store, provider, late, **parts(retriever, provider))
    assert provider.calls == []
    # the model outlives the deadline: the claims are not checked, nothing more is done
    reply = '{"answerable": true, "answer": "3 to 7 days.", "claims": []}'
    deadline = time.monotonic() + 8.0  # retrieval is done long before
    slow = SlowProvider(reply, deadline)
    soon = options(q, deadline=deadline, answerability=False)
    with pytest.raises(DeadlineError, match="before the checks"):
        ask(q.question, demo_store, slow, soon, **parts(retriever, slow))
    assert len(slow.calls) == 1
