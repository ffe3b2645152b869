"""How a check is asked for, in one place: the options, their defaults and the choices.

- `VerifierOptions`: how `tether.verify.check.check_answer` (and `check_inline`) checks an
  answer: audience, language, as_of, judge, precedence, threshold, embedder and the two
  cosines of the embedder's Profile;
- `CheckOptions`: how `Workspace.check` checks given claims (audience, as_of, language,
  question, whether the learned judge scores them); `POST /v1/check` carries the same choices
  in its own body, `tether.server.requests.CheckRequest`;
- `JUDGES`: the judge names `tether eval --verifier --judge` and `Workspace.judge_named`
  accept (built by `tether.answering.pipeline.make_judge`);
- the defaults: `DEFAULT_JUDGE_THRESHOLD`, `SAME_POINT_COSINE`, `CROSS_LANGUAGE_CUT` (the
  last two the default Profile's, `tether.config.Profile`) and `DEFAULT_PRECEDENCE` (from
  `tether.standing`, which retrieval reads too).

What it cannot do: it holds values and checks none of them: `check_answer` reads an audience
other than "staff" as public (fail closed), `Workspace.check` refuses an unknown audience, and
`make_judge` an unknown judge name; an index's own Profile replaces the two cosine defaults
only where the caller passes its values (`ask` and `Workspace.check` do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from tether.config import DEFAULT_PROFILE
from tether.protocols import Embedder, Judge
from tether.standing import DEFAULT_PRECEDENCE
from tether.types import Audience

__all__ = [
    "CROSS_LANGUAGE_CUT",
    "DEFAULT_JUDGE_THRESHOLD",
    "DEFAULT_PRECEDENCE",
    "JUDGES",
    "SAME_POINT_COSINE",
    "CheckOptions",
    "VerifierOptions",
]

# the judges a name chooses: the learned judge (the alignment's word features; the reader,
# tether's own cross-encoder, where words cannot judge: a claim in another language than its
# passages), the same with a language model as a second opinion, the reader on every claim
# (combined with the words model), the word features alone (never the reader), the embedding
# judge, the language model alone, none
JUDGES = ("align", "align+llm", "reader", "words", "embedding", "llm", "none")
# the entailment score under which `not_entailed` fires, for a judge without its own threshold
DEFAULT_JUDGE_THRESHOLD = 0.5
# cosine (chunk vectors) from which two passages make the same point: `lower_precedence`
SAME_POINT_COSINE = DEFAULT_PROFILE.same_point_cosine
# cosine (claim as query, sentence as passage) under which a claim whose cited passages are
# all in another language is flagged `unsupported:cos=C` (calibration: `tether.verify.claims`)
CROSS_LANGUAGE_CUT = DEFAULT_PROFILE.cross_language_cut


@dataclass(frozen=True)
class VerifierOptions:
    """How `check_answer` checks an answer.

    `audience` ("public" or "staff") decides `not_allowed`; `language` is the answer's;
    `as_of` is the question's date (its year and month count as found; the full date when a
    claim speaks of the present); `judge` scores entailment (`not_entailed` under
    `threshold`, else the judge's own `threshold`, else `DEFAULT_JUDGE_THRESHOLD`);
    `precedence` orders source types for `lower_precedence`; `embedder` judges claims whose
    cited passages are all in another language (None: the judge's `embedder` when it has
    one, else word matching only, which undercounts across languages)."""

    audience: str
    language: str
    as_of: date | None = None
    judge: Judge | None = None
    precedence: Sequence[str] = DEFAULT_PRECEDENCE
    threshold: float | None = None
    embedder: Embedder | None = None
    same_point_cosine: float = SAME_POINT_COSINE  # the embedder's Profile values
    cross_language_cut: float = CROSS_LANGUAGE_CUT


@dataclass(frozen=True)
class CheckOptions:
    """How `Workspace.check` checks claims: the `audience` (public by default), the date
    the claims speak of (`as_of`), their `language` (detected when None), the `question`
    they answer (its numbers count as found) and whether the learned alignment `judge`
    scores each claim."""

    audience: Audience = "public"
    as_of: date | None = None
    language: str | None = None
    question: str = ""
    judge: bool = True
