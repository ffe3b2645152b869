"""Wire models of an answer: `WireAskResult`, everything one question produced, and its parts
(the gate, the answerability decision, the passages shown and dropped, the request and
completion, the answer and its problem, the agent loop's trace).

`WireAskResult.from_ask_result` is where a public reader's view of an answer is decided, for
every face (the API's JSON and stream events, MCP, `ask --json`): a public reader never
receives the text of a claim the checks withheld (`Check.withheld_from_public`), nor the
model's unchecked reply (no `completion`), and a problem's detail that quotes the reply is said
in general words (`public_problem_detail`). Staff readers get everything.

What it cannot do: what is withheld from a public reader is what the checks marked `withheld`
(`tether.verify.flags.withhold`): a claim they let through is shown as it is, and an answer
asked with the checks off (`verify` false) is not checked at all.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field

from tether.schemas.base import Wire, fields_of, optional
from tether.schemas.checks import Check, WireClaim
from tether.schemas.documents import WireChunk, WireHit, chunk_fields

if TYPE_CHECKING:
    from tether import types


class _Shown(Wire):
    marker: int
    header: str
    tokens: int


class WirePassage(WireChunk, _Shown):
    """A chunk as shown to the model: its [n] marker, header line and token count."""

    model_config = ConfigDict(title="Passage")
    __qualname__ = "Passage"  # the name clients see (see `Wire`)


class _Dropping(Wire):
    reason: str


class WireDropped(WireChunk, _Dropping):
    """A retrieved chunk that did not reach the model, and why."""

    model_config = ConfigDict(title="Dropped")
    __qualname__ = "Dropped"  # the name clients see (see `Wire`)


class WireContext(Wire):
    """The passages given to the model within a token budget, and those left out."""

    model_config = ConfigDict(title="Context")
    __qualname__ = "Context"  # the name clients see (see `Wire`)

    tokens: int
    budget: int
    tokenizer: str
    passages: list[WirePassage]
    dropped: list[WireDropped]


class WireGate(Wire):
    """The support gate's decision, made before any model call."""

    model_config = ConfigDict(title="Gate")
    __qualname__ = "Gate"  # the name clients see (see `Wire`)

    passed: bool
    floor: float
    min_support: int
    supporting: int
    best: float
    reason: str


class WireAnswerability(Wire):
    """The answerability judge's decision, made after the gate and before any model call:
    P(answerable) against the threshold, the answer type asked for, and why not."""

    model_config = ConfigDict(title="Answerability")
    __qualname__ = "Answerability"  # the name clients see (see `Wire`)

    answerable: bool
    probability: float
    threshold: float
    asked: str
    reason: str
    second: float | None = None  # a language model's P(yes) when it was asked (it decided)


class Request(Wire):
    """What was asked of the model: the prompt file's ID, the purpose, the passages shown."""

    prompt_id: str
    purpose: str
    chunk_ids: list[str]


class WireCompletion(Wire):
    """What came back from the model: its text, tokens, latency and cost; a staff reader's
    only (a public reader's AskResult has none: the raw reply is unchecked, may hold the claims
    the checks withhold, and is as long as the model made it)."""

    model_config = ConfigDict(title="Completion")
    __qualname__ = "Completion"  # the name clients see (see `Wire`)

    model: str
    provider: str
    finish_reason: str
    input_tokens: int
    output_tokens: int
    latency_s: float
    cost_usd: float
    cost_known: bool = True  # False: no listed price for the model (cost_usd is then 0)
    note: str
    text: str


class WireAnswer(Wire):
    """The model's answer: answerable or not, a short answer, claims with citations."""

    model_config = ConfigDict(title="Answer")
    __qualname__ = "Answer"  # the name clients see (see `Wire`)

    answerable: bool
    answer: str
    mode: Literal["json", "inline", "select"]
    claims: list[WireClaim]


class Problem(Wire):
    """Why a completion could not be read as an answer (for a public reader, a detail that
    would quote the model's reply is said in general words)."""

    kind: str
    detail: str


class WireAgentStep(Wire):
    """One step of the agent loop: the action, its argument, the chunk IDs it saw."""

    model_config = ConfigDict(title="AgentStep")
    __qualname__ = "AgentStep"  # the name clients see (see `Wire`)

    action: str
    argument: str
    chunk_ids: list[str]
    tokens: int
    seconds: float
    note: str


class WireAgentTrace(Wire):
    """What the agent loop (`ask --agent`) did: its steps, its caps and those it reached,
    the passages it read (the only ones its claims may cite) and the tokens it used."""

    model_config = ConfigDict(title="AgentTrace")
    __qualname__ = "AgentTrace"  # the name clients see (see `Wire`)

    steps: list[WireAgentStep]
    caps: dict[str, float]
    caps_reached: list[str]
    read: list[str]
    tokens: int

    @classmethod
    def from_trace(cls, t: types.AgentTrace) -> WireAgentTrace:
        return cls(
            steps=[WireAgentStep(**fields_of(s, WireAgentStep)) for s in t.steps],
            caps=dict(t.caps),
            caps_reached=list(t.caps_reached),
            read=list(t.read),
            tokens=t.tokens,
        )


class WireAskResult(Wire):
    """Everything one question produced: the hits, the gate, the passages shown, the request
    and completion, the answer and its checked claims, whether (and why) it was refused, and
    the id of its audit entry (`audit_id`, null when not recorded)."""

    model_config = ConfigDict(title="AskResult")
    __qualname__ = "AskResult"  # the name clients see (see `Wire`)

    question: str
    as_of: date | None
    audience: Literal["public", "staff"]
    language: str
    method: str
    hits: list[WireHit]
    gate: WireGate | None
    answerability: WireAnswerability | None = None  # null: not judged (refused before, or off)
    context: WireContext | None
    request: Request | None
    completion: WireCompletion | None  # null: no model call, or a public reader (see Completion)
    answer: WireAnswer | None
    problem: Problem | None
    checks: list[Check]
    # answered: every claim shown passed (a public reader is not shown the withheld ones);
    # flagged: a shown claim did not; refused: see refused_by;
    # no_answer: the provider failed or its output was unusable (never a refusal)
    status: Literal["answered", "flagged", "refused", "no_answer"]
    refused: bool
    refused_by: Literal["gate", "answerability", "model", "strict", "verifier"] | None
    why_refused: str | None
    # what the reader was not shown and why (claims withheld from a public reader), or ""
    notice: str = ""
    provider: str
    model: str
    provider_note: str
    timings: dict[str, float]
    agent: WireAgentTrace | None = None  # the agent loop's trace (`ask --agent`), else null
    audit_id: int | None = Field(
        None,
        description="The audit entry recorded for this answer (what `POST /v1/feedback` names);"
        " null when it was not recorded.",
    )

    @classmethod
    def from_ask_result(cls, r: types.AskResult, *, provider_errors: bool = True) -> WireAskResult:
        """The wire form of `r` for its reader: a staff reader's holds everything; a public
        reader's never holds a withheld claim (`Check.withheld_from_public`) nor the model's
        unchecked reply (see the module docstring), nor, with `provider_errors` (a server's
        callers), the provider's own error message (`public_problem_detail`)."""
        public = r.audience != "staff"
        completion = None if public else optional(r.completion, WireCompletion)
        problem = optional(r.problem, Problem)
        if public and problem is not None:
            detail = public_problem_detail(
                problem.kind, problem.detail, r.audience, provider_errors=provider_errors
            )
            problem = problem.model_copy(update={"detail": detail})
        checks = [
            Check.withheld_from_public(ch) if public and ch.withheld else Check.from_check(ch)
            for ch in r.checks
        ]
        return cls(
            question=r.question,
            as_of=r.as_of,
            audience=r.audience,
            language=r.language,
            method=r.method,
            hits=[WireHit.from_hit(h) for h in r.hits],
            gate=optional(r.gate, WireGate),
            context=_context(r.context),
            answerability=optional(r.answerability, WireAnswerability),
            request=optional(r.request, Request),
            completion=completion,
            answer=_answer(r.answer),
            problem=problem,
            checks=checks,
            status=r.status,
            refused=r.refused,
            refused_by=r.refused_by,
            why_refused=_why_refused(r, problem.detail if problem is not None else ""),
            notice=r.notice,
            provider=r.provider,
            model=r.completion.model if r.completion is not None else "",
            provider_note=r.provider_note,
            timings=dict(r.timings),
            agent=None if r.agent is None else WireAgentTrace.from_trace(r.agent),
            audit_id=r.audit_id,
        )


# The problems whose detail quotes the model's reply (a slice of it, or its refusal in its own
# words) or the provider's error (its message, the server's model URL), and what a public
# reader is told instead: the reply is unchecked, the provider's words are the operator's.
_REPLY_QUOTED: dict[str, str] = {
    "not_json": "the model's reply was not JSON",
    "cut": "the model's reply hit the token limit",
    "refused": "the provider refused to answer",
    "provider_error": "the model's provider failed; the server's log says why",
}


def public_problem_detail(
    kind: str, detail: str, audience: str, *, provider_errors: bool = True
) -> str:
    """A problem's detail as a reader of `audience` may see it (see `_REPLY_QUOTED`); without
    `provider_errors` a provider's error is said as it is (the command line: the one who runs
    it configured the provider, and has no server log to read)."""
    if audience == "staff" or (kind == "provider_error" and not provider_errors):
        return detail
    return _REPLY_QUOTED.get(kind, detail)


def _context(ctx: types.Context | None) -> WireContext | None:
    if ctx is None:
        return None
    return WireContext(
        tokens=ctx.tokens,
        budget=ctx.budget,
        tokenizer=ctx.tokenizer,
        passages=[
            WirePassage(marker=p.marker, header=p.header, tokens=p.tokens, **chunk_fields(p.chunk))
            for p in ctx.passages
        ],
        dropped=[WireDropped(reason=d.reason, **chunk_fields(d.chunk)) for d in ctx.dropped],
    )


def _answer(a: types.Answer | None) -> WireAnswer | None:
    if a is None:
        return None
    claims = [WireClaim(text=c.text, chunk_ids=list(c.chunk_ids)) for c in a.claims]
    return WireAnswer(answerable=a.answerable, answer=a.answer, mode=a.mode, claims=claims)


def _why_refused(r: types.AskResult, detail: str) -> str | None:
    """One line saying why no answer was given (None when one was); `detail` is the
    problem's, as the reader may see it."""
    if not r.refused:
        return None
    if r.gate is not None and not r.gate.passed:
        return f"refused before the model: {r.gate.reason}"
    if r.answerability is not None and not r.answerability.answerable:
        before = "" if r.model_called else " before the model"  # a second opinion asks one
        return f"refused{before}: {r.answerability.reason}"
    if r.problem is not None:
        return f"the provider refused: {detail}"
    if r.refused_by == "strict":
        return "--strict removed every claim (each failed an exact check)"
    if r.refused_by == "verifier":
        return f"every claim was withheld from the public reader: {r.notice}"
    return "not answerable from the passages"
