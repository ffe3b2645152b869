"""Engine data types of an answer: the passages shown to the model (`Context` of `Passage`,
and those `Dropped`), the support `Gate` and the `Answerability` decision made before any model
call, the model's `Answer` (or the `AnswerProblem` that kept it from being read), the agent
loop's `AgentTrace`, and the `AskResult` that holds everything one question produced, with its
`status` and who refused (`refused_by`).

Frozen data only. What it cannot do: it answers nothing; `tether.answering` fills these in,
and `status`/`refused_by` only read what it put there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from tether.types.checks import Claim, ClaimCheck
from tether.types.documents import Audience, Chunk, Hit
from tether.types.model_io import Completion, ModelRequest


@dataclass(frozen=True)
class Passage:
    """A chunk as shown to the model: its header line, text and token count."""

    chunk: Chunk
    header: str
    tokens: int
    marker: int  # 1-based position, used as [n] in inline-marker mode
    score: float = 0.0


@dataclass(frozen=True)
class Dropped:
    """A retrieved chunk that did not reach the model, and why."""

    chunk: Chunk
    reason: str  # e.g. "near-duplicate of 1a2b3c4d5e6f (0.97)", "over the token budget"


@dataclass(frozen=True)
class Context:
    """The passages given to the model, in rank order, within a token budget."""

    passages: tuple[Passage, ...]
    dropped: tuple[Dropped, ...] = ()
    budget: int = 0
    tokens: int = 0
    tokenizer: str = ""

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(p.chunk.chunk_id for p in self.passages)

    def render(self) -> str:
        return "\n\n".join(f"{p.header}\n{p.chunk.text}" for p in self.passages)


@dataclass(frozen=True)
class Answer:
    """What the model answered: answerable or not, a short answer, claims with citations."""

    answerable: bool
    answer: str
    claims: tuple[Claim, ...] = ()
    mode: Literal["json", "inline", "select"] = "json"


AskStatus = Literal["answered", "flagged", "refused", "no_answer"]
RefusedBy = Literal["gate", "answerability", "model", "strict", "verifier"]
AnswerProblemKind = Literal[
    "cut", "refused", "not_json", "not_schema", "provider_error", "too_long"
]


@dataclass(frozen=True)
class AnswerProblem:
    """Why a completion could not be read as an Answer."""

    kind: AnswerProblemKind
    detail: str


@dataclass(frozen=True)
class Gate:
    """The support gate's decision, made before any model call."""

    passed: bool
    floor: float
    min_support: int
    supporting: int  # passages whose support score cleared the floor
    best: float  # the best support score seen
    reason: str = ""


@dataclass(frozen=True)
class Answerability:
    """The answerability judge's decision, made after the gate and before any model call
    (`tether.answering.answerable`): whether a retrieved passage answers the question,
    P(answerable) against the judge's threshold, the type of answer the question asks for
    (money, duration, percent, measure, count, time, yes_no, other), when it does not, why
    in plain words, and the second opinion's P(yes) when a language model was asked (it then
    decided)."""

    answerable: bool
    probability: float
    threshold: float
    asked: str
    reason: str = ""
    second: float | None = None  # a language model's P(yes) when it was asked (else None)


@dataclass(frozen=True)
class AgentStep:
    """One step of the agent loop (`tether ask --agent`): the action the model chose
    (search, read, answer, or invalid), its argument, the chunk IDs it saw (search results,
    the passage read), its tokens and seconds, and a note (an unknown ID, a bad reply)."""

    action: str
    argument: str = ""
    chunk_ids: tuple[str, ...] = ()
    tokens: int = 0
    seconds: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class AgentTrace:
    """What the agent loop did: its steps, the caps it had and those it reached (steps,
    tokens, wall_s; each reached ends the exploration), and the passages it read (the only
    ones its claims may cite)."""

    steps: tuple[AgentStep, ...]
    caps: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    caps_reached: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    tokens: int = 0


@dataclass(frozen=True)
class AskResult:
    """Everything one question produced, for the CLI, the API, the server and eval;
    `audit_id` is the id of the audit entry `Workspace.ask` recorded for it (what feedback
    on the answer names), None when it was not recorded."""

    question: str
    as_of: date | None
    audience: Audience
    language: str
    method: str
    hits: tuple[Hit, ...] = ()
    gate: Gate | None = None
    answerability: Answerability | None = None  # None: not judged (refused before, or off)
    context: Context | None = None
    request: ModelRequest | None = None
    completion: Completion | None = None
    answer: Answer | None = None
    problem: AnswerProblem | None = None
    checks: tuple[ClaimCheck, ...] = ()
    provider: str = ""
    provider_note: str = ""
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    notice: str = ""  # what the reader was not shown and why ("2 claims withheld: ...")
    agent: AgentTrace | None = None  # the agent loop's trace (`ask --agent`), else None
    audit_id: int | None = None  # the audit entry recorded for it (feedback names it), else None

    @property
    def status(self) -> AskStatus:
        """answered (every claim shown passed its checks), flagged (an answer with a shown
        claim that did not; a claim --strict removed or withheld from a public reader is not
        shown, and `notice` says so), refused (see `refused_by`), or
        no_answer (the provider failed, or its output was unusable: cut, not JSON, not the
        answer schema, too long to check)."""
        if self.refused_by is not None:
            return "refused"
        if self.answer is None:
            return "no_answer"
        if any(not ch.ok and not ch.removed and not ch.withheld for ch in self.checks):
            return "flagged"
        return "answered"

    @property
    def refused_by(self) -> RefusedBy | None:
        """Who refused, when the answer is a refusal: the support gate (retrieval too weak, or
        nothing the audience may see matched: never told apart for a public asker, since
        blaming the audience would say that staff documents answer), answerability (no
        retrieved passage gives what the question asks for: `tether.answering.answerable`),
        the model (it said the passages do not answer, or its provider refused),
        strict (--strict removed every claim), or the verifier (every claim was withheld from
        a public reader, see `notice`). None when an answer was given, and when none could be
        produced (a provider error is never a refusal)."""
        if self.gate is not None and not self.gate.passed:
            return "gate"
        if self.answerability is not None and not self.answerability.answerable:
            return "answerability"
        if self.problem is not None:
            return "model" if self.problem.kind == "refused" else None
        if self.answer is None or self.answer.answerable:
            return None
        if any(ch.withheld for ch in self.checks):
            return "verifier"
        return "strict" if any(ch.removed for ch in self.checks) else "model"

    @property
    def refused(self) -> bool:
        """True when the answer is a refusal (`refused_by` says whose); False when an answer
        was given and when none could be produced (status no_answer)."""
        return self.refused_by is not None

    @property
    def model_called(self) -> bool:
        """True when a language model was asked anything for this result: for the answer (its
        request or reply), by the agent loop, or as the answerability judge's second opinion
        (`answerability.second`). False for a refusal by the gate, or by the answerability
        judge alone: what "refused before the model" means."""
        return (
            self.request is not None
            or self.completion is not None
            or (self.agent is not None and bool(self.agent.steps))
            or (self.answerability is not None and self.answerability.second is not None)
        )
