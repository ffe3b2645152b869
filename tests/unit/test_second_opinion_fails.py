"""A second opinion that fails upstream (the model timed out, the provider is overloaded) is no
opinion: the claim judge and the answerability judge decide alone, and the answer is not lost."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tether.answering.answerable import AnswerabilityJudge, Reading
from tether.errors import DeadlineError, ProviderError
from tether.verify.learned import AlignmentJudge


class Failing:
    name = "failing"

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.asked = 0

    def score(self, claim: str, passages: Sequence[str]) -> float:
        self.asked += 1
        raise self.error


def test_the_claim_judge_decides_alone_when_its_second_opinion_fails():
    second = Failing(ProviderError("local model: timed out"))
    judge = AlignmentJudge(second=second, band=(0.0, 1.0))
    alone = AlignmentJudge(band=(0.0, 1.0))
    features: dict[str, float] = {}
    p = judge.judge(features, "Returns take 45 days.", ["You can return items within 45 days."])
    assert second.asked == 1
    assert p == alone.judge(features, "Returns take 45 days.", ["x"])
    assert judge.last_note == "model (the second opinion failed)"


def test_the_answerability_judge_decides_alone_when_its_second_opinion_fails():
    second = Failing(ProviderError("local model: overloaded"))
    judge = AnswerabilityJudge(second=second, band=(0.0, 1.0))  # type: ignore[arg-type]
    reading = Reading(features={}, asked="other")  # type: ignore[arg-type]
    verdict = judge.decide(reading, "How long do returns take?", ["Returns take 45 days."])
    assert second.asked == 1
    assert verdict == AnswerabilityJudge(band=(0.0, 1.0)).decide(reading)


def test_a_deadline_is_not_swallowed():
    judge = AlignmentJudge(second=Failing(DeadlineError("past the deadline")), band=(0.0, 1.0))
    with pytest.raises(DeadlineError):
        judge.judge({}, "Returns take 45 days.", ["You can return items within 45 days."])
