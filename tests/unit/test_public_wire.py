"""The wire form of an answer for its reader (`tether.schemas.WireAskResult.from_ask_result`, the
one conversion every face prints): a public reader gets no text of a claim the checks
withheld (no claim, citations, evidence, details, entailment or flag arguments: a count and
a reason) and nothing of the raw model reply (no `completion`: its text, and its length in
tokens); a staff reader gets everything (issue 47)."""

from __future__ import annotations

import json

from tether import schemas
from tether.types import (
    Answer,
    AnswerProblem,
    AskResult,
    Audience,
    Claim,
    ClaimCheck,
    Completion,
    Detail,
    Evidence,
    Flag,
    Gate,
)
from tether.verify.flags import withhold

GOOD = Claim("Items go back within 30 days.", ("c1",))
NUMBER = Claim("Items go back within 9137 days.", ("c1",))
STAFF = Claim("Employees get 25 percent off.", ("5taffc0ffee0",))
AUDIENCES: tuple[Audience, ...] = ("public", "staff")
REPLY = json.dumps({"answerable": True, "answer": "...", "claims": [NUMBER.text, STAFF.text]})


def _result(audience: Audience) -> AskResult:
    checks = [
        ClaimCheck(GOOD, evidence=(Evidence("c1", GOOD.text, 0, 29, 1.0),), entailment=0.9),
        ClaimCheck(
            NUMBER, flags=(Flag("number_not_found", "9137"),), entailment=0.2,
            evidence=(Evidence("c1", GOOD.text, 0, 29, 0.8),),
            details=(Detail("number", "9137 days", "30 days", "c1"),),
        ),
        ClaimCheck(STAFF, flags=(Flag("missing_id", "5taffc0ffee0"), Flag("number_not_found", "25"))),
    ]  # fmt: skip
    answer = Answer(True, f"{GOOD.text} {NUMBER.text} {STAFF.text}", (GOOD, NUMBER, STAFF))
    shown, marked, notice = withhold(answer, checks, audience=audience)
    return AskResult(
        "How long?", None, audience, "en", "bm25", gate=Gate(True, 0.0, 1, 1, 1.0),
        answer=shown, checks=tuple(marked), notice=notice, provider="fake",
        completion=Completion(REPLY, provider="fake", model="m", input_tokens=10),
    )  # fmt: skip


def test_a_public_reader_gets_no_withheld_claim_and_no_reply() -> None:
    wire = schemas.WireAskResult.from_ask_result(_result("public"))
    text = wire.model_dump_json()
    for secret in ("9137", "25 percent", "5taffc0ffee0", "number_not_found:"):
        assert secret not in text, secret
    good, number, staff = wire.checks
    assert good.claim == GOOD.text and good.evidence and good.entailment == 0.9
    assert number == schemas.Check(
        claim="", chunk_ids=[], ok=False, flags=["number_not_found"], entailment=None,
        removed=False, withheld=True, evidence=[], details=[],
    )  # fmt: skip
    assert staff.flags == ["missing_id", "number_not_found"] and staff.withheld
    assert wire.notice.startswith("2 claims withheld:") and wire.status == "answered"
    assert wire.completion is None and wire.model == "m" and wire.provider  # who answered


def test_a_staff_reader_gets_everything() -> None:
    result = _result("staff")
    wire = schemas.WireAskResult.from_ask_result(result)
    assert wire.completion is not None and wire.completion.text == REPLY
    assert [c.claim for c in wire.checks] == [GOOD.text, NUMBER.text, STAFF.text]
    assert wire.checks[1] == schemas.Check.from_check(result.checks[1])
    assert wire.checks[1].details[0].claim == "9137 days"


def test_a_problem_quoting_the_reply_is_said_in_general_words_to_the_public() -> None:
    """A reply that is not JSON, cut, or refused in the model's own words: the problem's
    detail (and `why_refused`) quotes it for staff only."""
    quoted = {
        "not_json": "Expecting value at character 0: 'Employees get 25 percent off'",
        "cut": "the answer hit the token limit (at character 9: 'Employees get 25 percent')",
        "refused": "I cannot say that employees get 25 percent off.",
        "not_schema": "claims: Field required",  # no reply in it: kept
    }
    for kind, detail in quoted.items():
        for audience in AUDIENCES:
            result = AskResult(
                "q", None, audience, "en", "bm25", gate=Gate(True, 0.0, 1, 1, 1.0),
                problem=AnswerProblem(kind, detail),  # type: ignore[arg-type]
                completion=Completion("Employees get 25 percent off", provider="fake", model="m"),
            )  # fmt: skip
            wire = schemas.WireAskResult.from_ask_result(result)
            assert wire.problem is not None
            text = wire.model_dump_json()
            if audience == "staff" or kind == "not_schema":
                assert wire.problem.detail == detail
            else:
                assert "25 percent" not in text and wire.problem.detail
            if kind == "refused":
                assert wire.why_refused is not None and wire.problem.detail in wire.why_refused
