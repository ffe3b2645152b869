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

With a reader (`tether.protocols.PairReader`: tether's own cross-encoder,
`tether.embeddings.reader`), the reader reads the claim against the cited passages' sentences
and a second regression (`judge_reader_model.json`, fitted by `training/reader/judge.py` on
the tuned-on labelled claims, its threshold out of fold) combines the words model's logit
with the reader's three: on every claim (`--judge reader`), or, as the default does
(`across_only`), only where the words model cannot judge: a claim in another language than
every passage it cites. Measured on the tuned-on sets the reader on every claim passed fewer
wrong claims and flagged more true ones, so it is not the default for claims in the passages'
language (bench/judge/bench_reader.py, bench/results/reader.md).

What it cannot do: it judges what the alignment features describe, no more: a paraphrase
with many words its passage does not use scores low, and a wrong claim whose every word and
number stands in its evidence sentence, in the same order and polarity, scores high.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tether.errors import UpstreamError
from tether.linear import LinearModel, clipped_logit, read_model
from tether.protocols import Judge, PairReader
from tether.types import Answer, Chunk, Claim, Context, DocMeta, Passage

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
# from which it passes a claim: chosen by bench/experiments/judge_second_opinion.py on the
# tuned-on sets' claims that no rule flags, as the band and score that make the fewest false
# passes plus false alarms there (its records: bench/results/second_opinion-tuned.jsonl).
SECOND_BAND = (0.0, 0.9)
SECOND_THRESHOLD = 0.3


JudgeModel = LinearModel  # the claim judge's name for the shared format


def load_model(path: Path | str = MODEL_PATH) -> JudgeModel:
    """The model stored at `path`; a missing or damaged file is a TetherError that says how
    to rebuild it."""
    from tether.verify.align import FEATURES

    # the claim judge's own file must hold the alignment's features (another model's file,
    # e.g. the answerability judge's, is read by its owner's names)
    features = FEATURES if Path(path) == MODEL_PATH else None
    return read_model(
        path, "the claim judge's model", "python -m tether.evaluation.judge_training", features
    )


READER_MODEL_PATH = Path(__file__).with_name("judge_reader_model.json")
READER_FEATURES = ("words", "reader_supported", "reader_contradicted", "reader_nei", "cross")


_logit = clipped_logit


def reading_features(words: float, probs: Sequence[float], same_language: bool) -> dict[str, float]:
    """What the combination reads: the words model's logit (0 across languages, where word
    features mean nothing), the reader's three logits, and whether the claim is in another
    language than every passage it cites."""
    return {
        "words": _logit(words) if same_language else 0.0,
        "reader_supported": _logit(probs[0]),
        "reader_contradicted": _logit(probs[1]),
        "reader_nei": _logit(probs[2]),
        "cross": 0.0 if same_language else 1.0,
    }


def _onto(p: float, t_from: float, t_to: float) -> float:
    """`p` on a scale whose threshold is `t_from`, mapped piecewise linearly onto one whose
    threshold is `t_to` (0, the threshold and 1 kept in place)."""
    if p < t_from:
        return t_to * p / t_from if t_from > 0 else 0.0
    return t_to + (1.0 - t_to) * (p - t_from) / (1.0 - t_from) if t_from < 1 else 1.0


def load_combination(path: Path | str = READER_MODEL_PATH) -> JudgeModel:
    """The regression that combines the words model and the reader (see `reading_features`);
    `python training/reader/judge.py` rebuilds it."""
    return read_model(
        path,
        "the claim judge's reader combination",
        "python training/reader/judge.py",
        READER_FEATURES,
    )


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
        reader: PairReader | None = None,
        combine: JudgeModel | None = None,
        across_only: bool = False,
    ) -> None:
        self.model = model if model is not None else load_model()
        self.reader = reader
        # with a reader, the words model's and the reader's probabilities are combined by a
        # regression fitted on labelled claims (`READER_MODEL_PATH`; `combine=` another one)
        self.combine = (combine or load_combination()) if reader is not None else None
        # `reads`: the checker gives `judge` the cited passages' sentences (and asks it for
        # claims whose passages are in another language too)
        self.reads = reader is not None
        default = self.combine.threshold if self.combine is not None else self.model.threshold
        self.threshold = default if threshold is None else threshold
        self.last_reading: dict[str, float] = {}  # the last claim's words and reader inputs
        # `across_only`: the reader is asked only where the words model cannot judge (a claim
        # in another language than every passage it cites); elsewhere the words model decides
        self.across_only = across_only
        self.second = second
        self.band = band
        self.second_threshold = second_threshold
        reads_all = reader is not None and not across_only
        self.name = ("reader" if reads_all else "align") + (
            f" + {getattr(second, 'name', 'second')}" if second else ""
        )
        self.last_note = ""  # "model" or "second opinion" for the last claim

    def judge(
        self,
        features: Mapping[str, float],
        claim: str,
        passages: Sequence[str],
        evidence: str = "",
        flagged: bool = False,
        sentences: Sequence[str] = (),
        rank: Callable[[], Sequence[int]] | None = None,
        same_language: bool = True,
    ) -> float:
        """P(supported) of a claim with these alignment features. Inside the uncertain band,
        when no rule has flagged the claim already (`flagged`), the second opinion decides:
        its score is mapped onto this judge's scale, piecewise linearly, so that
        `second_threshold` lands on `threshold` (above it passes, under it fails). A second
        opinion that fails upstream (`UpstreamError`: the model timed out or is overloaded) is
        no opinion: this judge's own probability decides, and `last_note` says so.

        With a reader, the reader reads the claim against `sentences` (the cited passages'
        sentences; when they do not all fit beside the claim, `rank()` gives their order, best
        first: the checker ranks them by e5 cosine), and P(supported) is the combination's
        (`reading_features`: the words model's logit where the claim and its passages share a
        language, the reader's three logits)."""
        reading = not (self.across_only and same_language)
        if self.reader is not None and self.combine is not None and sentences and reading:
            probs = self.reader.support(claim, sentences, rank)
            words = self.model.probability(features)
            self.last_reading = reading_features(words, [float(x) for x in probs], same_language)
            p = self.combine.probability(self.last_reading)
            self.last_note = "reader"
        else:
            p = self.model.probability(features)
            self.last_note = "model"
            if self.combine is not None:  # onto this judge's threshold (the combination's)
                p = _onto(p, self.model.threshold, self.threshold)
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
        (check,) = check_answer(
            answer, None, context, "", audience="staff", language="en", judge=self
        )
        return 0.0 if check.entailment is None else check.entailment
