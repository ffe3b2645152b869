"""How each act is asked for, in one module: the options of a search, an answer and a check,
their defaults, and the choices their text fields take.

- `SearchOptions`: what `Workspace.search` asks for (k, as_of, audience, method, deadline);
- `AskOptions`: how `tether.answering.pipeline.ask` answers (filters, language, method, k,
  context budget, support gate, answer mode, closed book, strict, verify, answerability,
  deadline);
- `CheckOptions`: how `Workspace.check` checks given claims; `VerifierOptions`: how
  `tether.verify.check.check_answer` checks an answer;
- the choices as `Literal`s, with their tuples (`Audience`/`AUDIENCES`, `Method`/`METHODS`,
  `AskMode`/`ASK_MODES`), written in `tether.catalog` (light enough for the command
  line's help to read without loading the engine) and re-exported here: the command line,
  `check_method` and the server build their choices and messages from them, so a new method
  is added in one place;
- the defaults the options use (`DEFAULT_BUDGET`, `DEFAULT_MIN_SUPPORT`,
  `DEFAULT_JUDGE_THRESHOLD`, and the default Profile's two cosines).

The engine modules re-export their options from here under their old names
(`tether.answering.pipeline.AskOptions`, `tether.app.SearchOptions`,
`tether.verify.options.*`, `tether.retrieval.retriever.METHODS`).

What it cannot do: it holds values and checks none of them: `check_answer` reads an audience
other than "staff" as public (fail closed), `Workspace.check` refuses an unknown audience,
`tether.retrieval.retriever.check_method` an unknown method; judges by name are the judge
registry's (`tether.answering.judging`), not a `Literal` here, because plugins may add
judges; an index's own Profile replaces the two cosine defaults only where the caller passes
its values (`ask` and `Workspace.check` do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from tether.catalog import ASK_MODES, AUDIENCES, METHODS, AskMode, Method
from tether.config import DEFAULT_PROFILE
from tether.deadlines import Deadline
from tether.protocols import Embedder, Judge
from tether.standing import DEFAULT_PRECEDENCE
from tether.types import Audience

__all__ = [
    "ASK_MODES",
    "AUDIENCES",
    "CROSS_LANGUAGE_CUT",
    "DEFAULT_BUDGET",
    "DEFAULT_JUDGE_THRESHOLD",
    "DEFAULT_MIN_SUPPORT",
    "DEFAULT_PRECEDENCE",
    "METHODS",
    "SAME_POINT_COSINE",
    "AskMode",
    "AskOptions",
    "Audience",
    "CheckOptions",
    "Method",
    "SearchOptions",
    "VerifierOptions",
]

DEFAULT_BUDGET = 1800  # tokens of passages in the context (headers included)
DEFAULT_MIN_SUPPORT = 1  # passages over the gate's floor an answer needs
# the entailment score under which `not_entailed` fires, for a judge without its own threshold
DEFAULT_JUDGE_THRESHOLD = 0.5
# cosine (chunk vectors) from which two passages make the same point: `lower_precedence`
SAME_POINT_COSINE = DEFAULT_PROFILE.same_point_cosine
# cosine (claim as query, sentence as passage) under which a claim whose cited passages are
# all in another language is flagged `unsupported:cos=C` (calibration: `tether.verify.claims`)
CROSS_LANGUAGE_CUT = DEFAULT_PROFILE.cross_language_cut


@dataclass(frozen=True)
class SearchOptions:
    """What a search asks for; the audience defaults to public (fail closed); `deadline`
    (`tether.deadlines.Deadline`): past it, the search stops at its next stage boundary with
    a `DeadlineError` (the server sets it)."""

    k: int = 5
    as_of: date | None = None
    audience: Audience = "public"
    method: str = "auto"  # one of `Method`
    deadline: Deadline | None = None


@dataclass(frozen=True)
class AskOptions:
    """How to ask: the filters (`as_of`, None for every version; `audience`, public by
    default), the answer `language` (detected when None), the retrieval `method` and `k`
    passages, the context `budget` in tokens, the support gate (`min_support` passages over
    `floor`, the index's calibrated floor when None), the answer `mode` (json or inline
    citations; select: the model chooses evidence sentences by number,
    `tether.answering.evidence`; auto: `answer_mode`), `closed_book` (no passages), `strict`
    (drop flagged claims), `verify`, and `answerability` (refuse before the model when the
    answerability judge finds no passage that answers; `tether.answering.answerable`), and a
    `deadline` (a `time.monotonic()` instant; past it `ask` raises `DeadlineError` at the next
    stage boundary instead of going on: the server sets it so a request it has given up on
    stops working). A public asker is never shown a claim that fails an
    exact, instruction, precedence or number check (`tether.verify.flags.withhold`; the
    result's `notice` says what was withheld)."""

    as_of: date | None = None
    audience: Audience = "public"
    language: str | None = None  # detected from the question when None
    method: str = "auto"  # one of `Method`: rerank when the index has vectors, else bm25
    k: int = 5
    budget: int = DEFAULT_BUDGET
    min_support: int = DEFAULT_MIN_SUPPORT
    floor: float | None = None  # None: the index's calibrated floor for the method
    mode: str = "auto"  # one of `AskMode`
    closed_book: bool = False
    strict: bool = False
    verify: bool = True
    answerability: bool = True  # refuse before the model when no passage answers
    deadline: float | None = None  # a time.monotonic() instant: past it, the next stage stops


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
