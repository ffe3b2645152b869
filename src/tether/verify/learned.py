"""The learned claim judge: a logistic regression over the alignment features of
`tether.verify.align`, fitted on claim–passage pairs made from real document collections
(`tether.evaluation.judge_training`, one command: `python -m tether.evaluation.judge_training`)
and shipped as `judge_model.json` beside this module (a few hundred bytes: a weight per
feature, the feature scaling, the threshold chosen on the training data's held-back part).

`AlignmentJudge()` loads it offline; `probability(features)` is P(supported) for one claim;
`verify.check_answer` asks it through `judge(...)` with the claim's alignment, because the
features need the cited chunks (their sentences, table rows, headings), not only their text.
The `Judge` protocol's `score(claim, passages)` is also served (passages given as text are
read as untitled chunks), so the judge can stand wherever another judge stands.

An optional second opinion (`second`, e.g. `LLMJudge` on the local model) is asked only when
no rule has flagged the claim and the probability falls in the uncertain band (`band`,
default `SECOND_BAND`): its score, against `second_threshold`, then decides. It costs one
model call for each such claim, and nothing for the others.

Why a linear model and not a cross-encoder: docs/verification.md ("The judge").

What it cannot do: it judges what the alignment features describe, no more: a paraphrase
with many words its passage does not use scores low, and a wrong claim whose every word and
number stands in its evidence sentence, in the same order and polarity, scores high.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tether.errors import UpstreamError
from tether.linear import LinearModel, read_model
from tether.protocols import Judge

__all__ = [
    "MODEL_PATH",
    "SECOND_BAND",
    "SECOND_THRESHOLD",
    "AlignmentJudge",
    "JudgeModel",
    "load_model",
]

MODEL_PATH = Path(__file__).with_name("judge_model.json")
# Where the second opinion is asked (the judge's probability in [low, high)) and the score
# from which it passes a claim: chosen by bench/judge_second_opinion.py on the tuned-on sets
# (171 claims no rule flags; the local model's P(yes): false passes 27 → 14, false alarms
# 0 → 1, asked for 169 of them, 2.6 s each).
SECOND_BAND = (0.0, 0.9)
SECOND_THRESHOLD = 0.3


JudgeModel = LinearModel  # the claim judge's name for the shared format


def load_model(path: Path | str = MODEL_PATH) -> JudgeModel:
    """The model stored at `path`; a missing or damaged file is a TetherError that says how
    to rebuild it."""
    return read_model(path, "the claim judge's model", "python -m tether.evaluation.judge_training")


class AlignmentJudge:
    """P(supported) from a claim's alignment features (see the module docstring)."""

    aligned = True  # `verify.check_answer` gives it the alignment, not only passage texts

    def __init__(
        self,
        model: JudgeModel | None = None,
        *,
        threshold: float | None = None,
        second: Judge | None = None,
        band: tuple[float, float] = SECOND_BAND,
        second_threshold: float = SECOND_THRESHOLD,
    ) -> None:
        self.model = model if model is not None else load_model()
        self.threshold = self.model.threshold if threshold is None else threshold
        self.second = second
        self.band = band
        self.second_threshold = second_threshold
        self.name = "align" + (f" + {getattr(second, 'name', 'second')}" if second else "")
        self.last_note = ""  # "model" or "second opinion" for the last claim

    def judge(
        self,
        features: Mapping[str, float],
        claim: str,
        passages: Sequence[str],
        evidence: str = "",
        flagged: bool = False,
    ) -> float:
        """P(supported) of a claim with these alignment features. Inside the uncertain band,
        when no rule has flagged the claim already (`flagged`), the second opinion decides:
        its score is mapped onto this judge's scale, piecewise linearly, so that
        `second_threshold` lands on `threshold` (above it passes, under it fails). A second
        opinion that fails upstream (`UpstreamError`: the model timed out or is overloaded) is
        no opinion: this judge's own probability decides, and `last_note` says so."""
        p = self.model.probability(features)
        self.last_note = "model"
        lo, hi = self.band
        if self.second is not None and lo <= p < hi and passages and not flagged:
            try:
                q = float(self.second.score(claim, passages))
            except UpstreamError:  # the model failed (timeout, overload): this judge decides
                self.last_note = "model (the second opinion failed)"
                return p
            self.last_note = "second opinion"
            t2, t = self.second_threshold, self.threshold
            if q < t2:
                return t * q / t2
            return t + (1.0 - t) * (q - t2) / (1.0 - t2)
        return p

    def score(self, claim: str, passages: Sequence[str]) -> float:
        """The `Judge` protocol: passages given as plain text, read as untitled chunks."""
        from tether.types import Answer, Chunk, Claim, Context, DocMeta, Passage
        from tether.verify.check import check_answer

        chunks = [
            Chunk(
                chunk_id=f"p{i}",
                meta=DocMeta(doc_id=f"p{i}", version="1", title=""),
                text=text,
                heading_path=(),
                start=0,
                end=len(text),
                ordinal=0,
            )
            for i, text in enumerate(passages)
        ]
        context = Context(tuple(Passage(c, "", 0, i + 1) for i, c in enumerate(chunks)))
        answer = Answer(True, claim, (Claim(claim, tuple(c.chunk_id for c in chunks)),))
        (check,) = check_answer(answer, None, context, "", audience="staff", language="en",
                                judge=self)  # fmt: skip
        return 0.0 if check.entailment is None else check.entailment
