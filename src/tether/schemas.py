"""The wire shape: pydantic models for everything tether prints as JSON (`--json`, an API).

One model per thing a consumer reads: a `Document` (its metadata and chunk count), a `Chunk`,
a search `Hit` (a chunk with its rank, score, method and signals, flat), a claim `Check`, an
`AskResult`, and the reports of `questions`, `info`, `calibrate` and `eval`. Each has a small
converter from the engine's dataclass (`Chunk.from_chunk`, `Hit.from_hit`,
`AskResult.from_ask_result`, ...); `model_dump(mode="json")` gives plain JSON data (dates as
ISO strings) and `model_json_schema()` its JSON Schema. `MODELS` names every model for
`tether schema`.

The keys are those the CLI printed before these models existed; the models only add keys
(a chunk's doc_type, dates and source; a hit inside an answer carries its text).

`AskResult.from_ask_result` is also where a public reader's view of an answer is decided,
for every face (the API's JSON and stream events, MCP, `ask --json`): a public reader never
receives the text of a claim the checks withheld (`Check.withheld_from_public`: no claim,
citations, evidence, details or entailment, and its flags without their arguments, which
quote the claim: a count and a reason), nor the model's unchecked reply: no `completion`
(its text, and its length in tokens and cost, which measure the reply; who answered stays in
`provider`, `model` and `provider_note`), and a problem's detail that quotes the reply is said
in general words. Staff readers get everything.

What it cannot do: it describes and converts, it never reads an index or calls a model; the
converters read the engine's dataclasses by attribute and do not validate what they mean (a
score is any float, a flag any string). What is withheld from a public reader is what the
checks marked `withheld` (`tether.verify.flags.withhold`): a claim they let through is shown
as it is, and an answer asked with the checks off (`verify` false) is not checked at all.
"""

from __future__ import annotations

from collections.abc import Container
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from tether import types


class _Wire(BaseModel):
    """Frozen, no unknown keys; inf/nan print as JSON's Infinity/NaN as `json.dumps` did."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_inf_nan="constants", defer_build=True
    )


class _Version(_Wire):
    """Which document version something belongs to, and what that version says of itself."""

    doc_id: str
    version: str
    title: str
    doc_type: str
    access: Literal["public", "staff"]
    language: str
    effective_from: date | None
    effective_to: date | None
    source: str


def _version_fields(m: types.DocMeta) -> dict[str, Any]:
    return _fields(m, _Version)


class Instruction(_Wire):
    """Text addressed to AI assistants that ingest found in a chunk: offsets in its text."""

    chunk_id: str
    start: int
    end: int
    text: str


class Document(_Version):
    """A document version as the index sees it: its metadata, how many chunks it has, and
    the text addressed to AI assistants found in it (never obeyed; see `Instruction`)."""

    owner: str | None
    review_by: date | None = Field(
        description="YYYY-MM-DD: when its owner is to review it next (null: not given)."
    )
    format: str
    chunks: int
    instructions: list[Instruction] = []

    @classmethod
    def from_info(cls, info: types.DocumentInfo) -> Document:
        m = info.meta
        return cls(
            **_version_fields(m),
            owner=m.owner,
            review_by=m.review_by,
            format=m.format,
            chunks=info.chunks,
            instructions=[Instruction(**vars(i)) for i in info.instructions],
        )


class Chunk(_Version):
    """A passage with where it sits: document version, heading path, offsets, page."""

    chunk_id: str
    heading_path: list[str]
    section: str
    anchor: str | None
    anchors: list[str] = Field(
        default_factory=list,
        description="Every location (id or named anchor) the passage covers; `anchor` first.",
    )
    page: int | None
    start: int
    end: int
    text: str

    @classmethod
    def from_chunk(cls, c: types.Chunk) -> Chunk:
        return cls(**_chunk_fields(c))


def _chunk_fields(c: types.Chunk) -> dict[str, Any]:
    return {**_version_fields(c.meta), **_fields(c, Chunk, skip=_Version.model_fields)}


class _Ranking(_Wire):
    """Where a retriever placed a chunk (a base of `Hit`: its keys print first)."""

    rank: int
    score: float
    method: str
    signals: dict[str, float]


class Hit(Chunk, _Ranking):
    """A search result: the chunk's keys, flat, with rank, score, method and the signals
    (component scores) that placed it."""

    @classmethod
    def from_hit(cls, h: types.Hit) -> Hit:
        return cls(
            rank=h.rank, score=h.score, method=h.method, signals=dict(h.signals),
            **_chunk_fields(h.chunk),
        )  # fmt: skip


class _Shown(_Wire):
    marker: int
    header: str
    tokens: int


class Passage(Chunk, _Shown):
    """A chunk as shown to the model: its [n] marker, header line and token count."""


class _Dropping(_Wire):
    reason: str


class Dropped(Chunk, _Dropping):
    """A retrieved chunk that did not reach the model, and why."""


class Context(_Wire):
    """The passages given to the model within a token budget, and those left out."""

    tokens: int
    budget: int
    tokenizer: str
    passages: list[Passage]
    dropped: list[Dropped]


class Gate(_Wire):
    """The support gate's decision, made before any model call."""

    passed: bool
    floor: float
    min_support: int
    supporting: int
    best: float
    reason: str


class Answerability(_Wire):
    """The answerability judge's decision, made after the gate and before any model call:
    P(answerable) against the threshold, the answer type asked for, and why not."""

    answerable: bool
    probability: float
    threshold: float
    asked: str
    reason: str
    second: float | None = None  # a language model's P(yes) when it was asked (it decided)


class Request(_Wire):
    """What was asked of the model: the prompt file's ID, the purpose, the passages shown."""

    prompt_id: str
    purpose: str
    chunk_ids: list[str]


class Completion(_Wire):
    """What came back from the model: its text, tokens, latency and cost; a staff reader's
    only (a public reader's AskResult has none: the raw reply is unchecked, may hold the claims
    the checks withhold, and is as long as the model made it)."""

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


class Claim(_Wire):
    text: str
    chunk_ids: list[str]


class Answer(_Wire):
    """The model's answer: answerable or not, a short answer, claims with citations."""

    answerable: bool
    answer: str
    mode: Literal["json", "inline", "select"]
    claims: list[Claim]


class Problem(_Wire):
    """Why a completion could not be read as an answer (for a public reader, a detail that
    would quote the model's reply is said in general words)."""

    kind: str
    detail: str


class Evidence(_Wire):
    """A sentence of a cited passage that supports a claim (offsets into the document text)."""

    chunk_id: str
    text: str
    start: int
    end: int
    score: float


class Detail(_Wire):
    """A detail of a flagged claim that its evidence does not match: its kind (number, cell,
    quantifier, condition, period, opposite, word, not_a_statement), the claim's words, and
    the evidence text it conflicts with."""

    kind: str
    claim: str
    evidence: str
    chunk_id: str


class Check(_Wire):
    """One claim's check: its flags (``kind`` or ``kind:arg``; none means ok), the evidence
    found, the judge's entailment score, whether --strict removed it and whether it was
    withheld from a public reader (what is shown: the claims with `withheld` false), and,
    for a flagged claim, the details its evidence does not match."""

    claim: str
    chunk_ids: list[str]
    ok: bool
    flags: list[str]
    entailment: float | None
    removed: bool
    withheld: bool = False
    evidence: list[Evidence]
    details: list[Detail] = []

    @classmethod
    def from_check(cls, ch: types.ClaimCheck) -> Check:
        return cls(
            claim=ch.claim.text, chunk_ids=list(ch.claim.chunk_ids), ok=ch.ok,
            flags=[str(f) for f in ch.flags], entailment=ch.entailment, removed=ch.removed,
            withheld=ch.withheld, evidence=[Evidence(**_fields(e, Evidence)) for e in ch.evidence],
            details=[Detail(**_fields(d, Detail)) for d in ch.details],
        )  # fmt: skip

    @classmethod
    def withheld_from_public(cls, ch: types.ClaimCheck) -> Check:
        """A check withheld from a public reader as that reader gets it: that a claim was
        withheld and the kinds of its flags (why), never what it said: no claim text, no
        citations, evidence, details or entailment, no flag arguments (a number, a word or an
        ID out of the claim)."""
        kinds = list(dict.fromkeys(_flag_kind(f) for f in ch.flags))
        return cls(
            claim="", chunk_ids=[], ok=ch.ok, flags=kinds, entailment=None, removed=ch.removed,
            withheld=True, evidence=[], details=[],
        )  # fmt: skip


def _flag_kind(flag: str) -> str:
    """`flag`'s kind, without its argument (`number_not_found:45` → `number_not_found`)."""
    return flag.partition(":")[0]


class AgentStep(_Wire):
    """One step of the agent loop: the action, its argument, the chunk IDs it saw."""

    action: str
    argument: str
    chunk_ids: list[str]
    tokens: int
    seconds: float
    note: str


class AgentTrace(_Wire):
    """What the agent loop (`ask --agent`) did: its steps, its caps and those it reached,
    the passages it read (the only ones its claims may cite) and the tokens it used."""

    steps: list[AgentStep]
    caps: dict[str, float]
    caps_reached: list[str]
    read: list[str]
    tokens: int

    @classmethod
    def from_trace(cls, t: types.AgentTrace) -> AgentTrace:
        return cls(
            steps=[AgentStep(**_fields(s, AgentStep)) for s in t.steps], caps=dict(t.caps),
            caps_reached=list(t.caps_reached), read=list(t.read), tokens=t.tokens,
        )  # fmt: skip


class AskResult(_Wire):
    """Everything one question produced: the hits, the gate, the passages shown, the request
    and completion, the answer and its checked claims, whether (and why) it was refused, and
    the id of its audit entry (`audit_id`, null when not recorded)."""

    question: str
    as_of: date | None
    audience: Literal["public", "staff"]
    language: str
    method: str
    hits: list[Hit]
    gate: Gate | None
    answerability: Answerability | None = None  # null: not judged (refused before, or off)
    context: Context | None
    request: Request | None
    completion: Completion | None  # null: no model call, or a public reader (see Completion)
    answer: Answer | None
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
    agent: AgentTrace | None = None  # the agent loop's trace (`ask --agent`), else null
    audit_id: int | None = Field(
        None,
        description="The audit entry recorded for this answer (what `POST /v1/feedback` names);"
        " null when it was not recorded.",
    )

    @classmethod
    def from_ask_result(cls, r: types.AskResult, *, provider_errors: bool = True) -> AskResult:
        """The wire form of `r` for its reader: a staff reader's holds everything; a public
        reader's never holds a withheld claim (`Check.withheld_from_public`) nor the model's
        unchecked reply (see the module docstring), nor, with `provider_errors` (a server's
        callers), the provider's own error message (`public_problem_detail`)."""
        public = r.audience != "staff"
        completion = None if public else _optional(r.completion, Completion)
        problem = _optional(r.problem, Problem)
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
            question=r.question, as_of=r.as_of, audience=r.audience, language=r.language,
            method=r.method, hits=[Hit.from_hit(h) for h in r.hits],
            gate=_optional(r.gate, Gate), context=_context(r.context),
            answerability=_optional(r.answerability, Answerability),
            request=_optional(r.request, Request), completion=completion,
            answer=_answer(r.answer), problem=problem,
            checks=checks, status=r.status,
            refused=r.refused, refused_by=r.refused_by,
            why_refused=_why_refused(r, problem.detail if problem is not None else ""),
            notice=r.notice, provider=r.provider,
            model=r.completion.model if r.completion is not None else "",
            provider_note=r.provider_note, timings=dict(r.timings),
            agent=None if r.agent is None else AgentTrace.from_trace(r.agent),
            audit_id=r.audit_id,
        )  # fmt: skip


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


def _fields(obj: object, model: type[BaseModel], skip: Container[str] = ()) -> dict[str, Any]:
    """The attributes of `obj` that `model` has as fields, but those in `skip` (tuples as
    lists)."""
    values = {name: getattr(obj, name) for name in model.model_fields if name not in skip}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def _optional(obj: object | None, model: type[_Wire]) -> Any:
    return None if obj is None else model(**_fields(obj, model))


def _context(ctx: types.Context | None) -> Context | None:
    if ctx is None:
        return None
    return Context(
        tokens=ctx.tokens, budget=ctx.budget, tokenizer=ctx.tokenizer,
        passages=[
            Passage(marker=p.marker, header=p.header, tokens=p.tokens, **_chunk_fields(p.chunk))
            for p in ctx.passages
        ],
        dropped=[Dropped(reason=d.reason, **_chunk_fields(d.chunk)) for d in ctx.dropped],
    )  # fmt: skip


def _answer(a: types.Answer | None) -> Answer | None:
    if a is None:
        return None
    claims = [Claim(text=c.text, chunk_ids=list(c.chunk_ids)) for c in a.claims]
    return Answer(answerable=a.answerable, answer=a.answer, mode=a.mode, claims=claims)


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


class Relevant(_Wire):
    """A passage that answers a question, by location."""

    doc_id: str
    version: str | None
    section: str | None
    anchor: str | None
    evidence: str | None


class Question(_Wire):
    """One line of a question set."""

    id: str
    question: str
    language: str
    as_of: date | None
    audience: Literal["public", "staff"]
    abstain: bool
    kind: str
    reference_answer: str
    keys: list[str]
    must_not: list[str]
    relevant: list[Relevant]
    tags: list[str]
    extra: dict[str, Any]

    @classmethod
    def from_question(cls, q: types.Question) -> Question:
        values = _fields(q, cls)
        values["relevant"] = [Relevant(**_fields(r, Relevant)) for r in q.relevant]
        return cls(**values)


class RelevantInput(BaseModel):
    """Where a question's answer is, in a question set you write: the document, and
    optionally its version, its section heading or anchor, and a phrase of the passage."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    doc_id: str = Field(description="The document's doc_id (see `tether documents`).")
    version: str | None = Field(None, description="Only this version counts (any when null).")
    section: str | None = Field(None, description="A heading the passage sits under.")
    anchor: str | None = Field(None, description="The passage's anchor (see `tether chunks`).")
    evidence: str | None = Field(None, description="Words the passage contains (spaces and case aside).")


class QuestionLine(BaseModel):
    """One line of a question set you write for `tether eval`/`calibrate`/`questions
    --questions`: only `id` and `question` are required; other keys are kept as they are."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(min_length=1, description="Unique in the file, e.g. Q001.")
    question: str = Field(min_length=1, description="The question as a user would ask it.")
    language: str = Field("en", description="The question's language code.")
    as_of: date | None = Field(None, description="YYYY-MM-DD: only versions in force then.")
    audience: Literal["public", "staff"] = Field("public", description="Who asks.")
    abstain: bool = Field(False, description="True when the documents do not answer it.")
    kind: str = Field("answerable", description="A group name the report counts by.")
    reference_answer: str = Field("", description="A model answer, for reading the report.")
    keys: list[str] = Field([], description="Regular expressions a good answer matches.")
    must_not: list[str] = Field([], description="Regular expressions a good answer avoids.")
    relevant: list[RelevantInput] = Field([], description="The passages that answer it.")
    tags: list[str] = Field([], description="Free labels.")


class Setting(_Wire):
    """`tether config --json`: one variable, its effective value as text (API keys masked
    as ****; null when unset), and where it came from: environment, file PATH, or default."""

    variable: str
    field: str
    value: str | None
    source: str

    @classmethod
    def from_source(cls, row: Any) -> Setting:
        return cls(variable=row.variable, field=row.field, value=row.value, source=row.source)


class IndexInfo(BaseModel):
    """What an index holds; the keys the index records about itself (schema and tether
    version, chunker, embedder, ...) and the embedder report come as further keys. For a
    public reader only what does not move with staff documents: public counts, no
    `size_bytes` (null), no write counter or time, no staff floor."""

    model_config = ConfigDict(
        frozen=True, extra="allow", ser_json_inf_nan="constants", defer_build=True
    )

    path: str
    size_bytes: int | None = None  # the index file's size: staff readers only
    documents: int
    chunks: int
    vectors: int
    by_access: dict[str, int]
    by_language: dict[str, int]
    by_format: dict[str, int]
    documents_with_instructions: int = 0  # documents holding text addressed to AI assistants
    instruction_spans: int = 0
    handoff: Handoff | None = None


class GateRow(_Wire):
    """One floor's trade-off for one retrieval method."""

    method: str
    floor: float
    wrongly_refused: int
    answerable: int
    let_through: int
    must_refuse: int


class Calibration(_Wire):
    """The support gate's floor chosen per method, and the trade-off table it came from."""

    floors: dict[str, float]
    table: list[GateRow]
    warnings: list[str] = []

    @classmethod
    def from_calibration(cls, cal: Any) -> Calibration:
        return cls(
            floors=dict(cal.floors), table=[GateRow(**_fields(r, GateRow)) for r in cal.table],
            warnings=list(cal.warnings),
        )  # fmt: skip


class WrongVerdict(_Wire):
    """A labelled claim the verifier judged wrongly."""

    id: str
    kind: str
    label: str
    flags: list[str]


class VerifierReport(_Wire):
    """The citation checker measured on labelled claims: false passes and false alarms."""

    judge: str
    claims: int
    false_passes: int
    unsupported: int
    false_alarms: int
    supported: int
    false_pass_rate: float
    false_alarm_rate: float
    per_check: dict[str, dict[str, int]]
    per_kind: dict[str, dict[str, int]]
    median_ms_per_claim: float
    wrong: list[WrongVerdict]

    @classmethod
    def from_result(cls, result: Any) -> VerifierReport:
        wrong = [r for r in result.rows if r.passed == (r.label == "unsupported")]
        return cls(
            judge=result.judge, claims=len(result.rows), false_passes=result.false_passes,
            unsupported=result.unsupported, false_alarms=result.false_alarms,
            supported=result.supported, false_pass_rate=result.false_pass_rate,
            false_alarm_rate=result.false_alarm_rate, per_check=result.per_check,
            per_kind=result.per_kind, median_ms_per_claim=result.median_ms,
            wrong=[
                WrongVerdict(id=r.item_id, kind=r.kind, label=r.label, flags=list(r.flags))
                for r in wrong
            ],
        )  # fmt: skip


class Skipped(_Wire):
    id: str
    reason: str


class RetrievalReport(_Wire):
    """`tether eval`: retrieval metrics per method (overall, per kind, per language), timings,
    and one row per question and method (its metrics, expected passages and their ranks)."""

    k: int
    depth: int
    methods: list[str]
    questions_file: str
    index: str
    n_questions: int
    n_scored: int
    n_skipped: int
    skipped: list[Skipped]
    partial: list[Skipped]
    aggregates: dict[str, dict[str, Any]]
    timings: dict[str, dict[str, float]]
    notes: list[str]
    rows: list[dict[str, Any]]

    @classmethod
    def from_result(cls, result: Any) -> RetrievalReport:
        return cls.model_validate(result.to_dict())


class AnswerRow(_Wire):
    """One scored answer (`tether eval --answers`)."""

    id: str
    kind: str
    language: str
    audience: str
    question: str
    abstain: bool
    status: str
    refused_by: str | None
    correct: bool  # of what the model said
    correct_shown: bool  # of what the reader is shown
    answer: str
    keys: list[str]
    must_not: list[str]
    passages: list[str]
    claims: int
    flagged_claims: int
    unsupported_claims: int
    flags: list[str]
    seconds: float
    input_tokens: int
    output_tokens: int
    cost_usd: float
    note: str = ""


class AnswerReport(_Wire):
    """`tether eval --answers`: answers scored against their keys; `summary` holds the
    figures overall, by_kind and by_language (accuracy, accuracy_shown, abstention
    precision and recall, flagged and unsupported claim rates, seconds, tokens, cost)."""

    provider: str  # a replay says which model was recorded, and when
    questions_file: str
    index: str
    options: dict[str, Any]
    n_questions: int
    n_scored: int
    errors: list[Skipped]
    summary: dict[str, Any]
    weakest_kinds: list[dict[str, Any]]
    rows: list[AnswerRow]


class AuditRecord(_Wire):
    """One answered question as the audit keeps it (`tether audit`), or, with status
    "dropped", how many answers were not recorded."""

    id: int
    at: str
    who: str
    audience: str
    question: str
    status: str
    as_of: str | None
    method: str
    refused_by: str | None
    passage_ids: list[str]
    prompt_hash: str
    provider: str
    model: str
    answer: str
    claims: list[dict[str, Any]]
    flags: list[str]
    timings: dict[str, float]
    cost_usd: float
    dropped: int = Field(
        0, description='status "dropped": how many answers were not recorded (a daily cap)'
    )

    @classmethod
    def from_entry(cls, e: types.AuditEntry) -> AuditRecord:
        return cls(flags=list(e.flags), **{**e.__dict__, "id": e.id or 0})


class Feedback(_Wire):
    """A verdict on one recorded answer (`POST /v1/feedback`, `tether audit --feedback`): the
    audit entry it is about (`audit_id`, as the AskResult gave it), when and who gave it,
    helpful or wrong, the note and the chunk ID of the right passage (null when not given),
    and the entry's question. A public reader of `tether audit --feedback` gets no ids (0)
    and no asker (""), as for the audit itself."""

    id: int
    audit_id: int
    at: str
    who: str
    verdict: Literal["helpful", "wrong"]
    note: str | None
    chunk_id: str | None
    question: str

    @classmethod
    def from_feedback(cls, f: types.Feedback) -> Feedback:
        return cls(
            id=f.id or 0, audit_id=f.entry_id, at=f.at, who=f.who, verdict=f.verdict,
            note=f.note, chunk_id=f.chunk_id, question=f.entry.question if f.entry else "",
        )  # fmt: skip


class Handoff(_Wire):
    """What a person taking over an index needs (`tether info`), as the audience may see it."""

    collection: dict[str, Any]
    models: dict[str, Any]
    calibration: dict[str, Any]
    last_eval: dict[str, Any] | None
    weaknesses: list[str]


class FileProblem(_Wire):
    """A file that could not be ingested, and why."""

    source: str
    reason: str


class Crawl(_Wire):
    """What the crawl of a website did (`tether ingest URL`): how it found pages (`sitemap` or
    `links`), its requests, pages by answer (`fetched` 200, `not_modified` 304, `gone` 404 or
    410, `failed`), bytes and time, the cap that stopped it if any, what it left out
    (disallowed by robots.txt, links to other hosts or outside the start path or past the
    depth cap), the redirects followed ([from, to]) and its notes."""

    start: str
    mode: Literal["sitemap", "links"]
    robots: str
    sitemaps: list[str]
    delay_s: float
    requests: int
    pages_requested: int
    fetched: int
    not_modified: int
    failed: int
    gone: int
    bytes: int
    seconds: float
    pages_per_s: float
    stopped_by: str | None
    not_fetched: int
    disallowed: list[str]  # the first few, of `disallowed_count`
    disallowed_count: int
    other_hosts: int
    outside_path: int
    too_deep: int
    redirects: list[list[str]]
    copies: int  # pages read already at another URL (same bytes, or canonical)
    noindex: int
    notes: list[str]


class IngestReport(_Wire):
    """What one `ingest` did: the files added, updated, removed and unchanged (by source
    path, or a page's URL), the files it could not read, the warnings, and whether it was
    written; for a website, what its crawl did (`crawl`)."""

    index: str
    added: list[str]
    updated: list[str]
    removed: list[str]
    unchanged: list[str]
    problems: list[FileProblem]
    warnings: list[str]
    instructions: list[str]  # sources written that hold text addressed to AI assistants
    unlabelled: list[str]  # sources read this time that carry no access label...
    default_access: str  # ...and what they were indexed as
    unsupported: dict[str, int]  # files of a type tether does not read, by suffix
    chunks_written: int
    seconds: float  # reading, parsing, embedding and writing
    committed: bool
    calibration_seconds: float = 0.0  # the fusion and gate calibrations after the sync
    inventory_rows: int | None = None  # rows of the folder's inventory.csv (null: it has none)
    inventory_matched: int = 0  # of them, rows naming a file found (the others: warnings)
    crawl: Crawl | None = None  # a website's crawl (null: a folder)

    @classmethod
    def from_report(
        cls, r: types.SyncReport, index: str, crawl: Crawl | None = None
    ) -> IngestReport:
        problems = [FileProblem(source=p.source, reason=p.reason) for p in r.problems]
        rest = _fields(r, cls, skip=("index", "problems", "unsupported", "crawl"))
        return cls(
            index=index, problems=problems, unsupported=dict(r.unsupported), crawl=crawl, **rest
        )


class HealthQuote(_Wire):
    """A passage a health finding quotes: its document, version, title, section, chunk ID,
    the text, and the document's owner and access."""

    doc_id: str
    version: str
    title: str
    section: str
    chunk_id: str
    text: str
    owner: str | None
    access: Literal["public", "staff"]


class HealthFinding(_Wire):
    """One finding of `tether health`: its kind (gap, contradiction, stale (ended with no
    successor, or in force past its review date), superseded_cited, missing_link, unlabelled,
    instructions, near_duplicate, over_window, unreadable), a one-line title, the detail, the
    documents and their owners, the passages quoted, the questions asked (gaps), and how many
    times it was seen."""

    kind: str
    title: str
    detail: str
    doc_ids: list[str]
    owners: list[str]
    evidence: list[HealthQuote]
    examples: list[str]
    count: int


class HealthReport(_Wire):
    """`tether health --json` and `GET /v1/health` (staff keys): a collection's findings on
    `as_of`, what was looked at, the seconds it took and notes on what was not checked."""

    collection: str
    as_of: date
    generated_at: str
    findings: list[HealthFinding]
    counts: dict[str, int] = Field(description="Findings per kind.")
    looked_at: dict[str, int]
    seconds: float
    notes: list[str]

    @classmethod
    def from_report(cls, r: types.HealthReport) -> HealthReport:
        findings = [
            HealthFinding(
                kind=f.kind, title=f.title, detail=f.detail, doc_ids=list(f.doc_ids),
                owners=list(f.owners), examples=list(f.examples), count=f.count,
                evidence=[HealthQuote(**_fields(q, HealthQuote)) for q in f.evidence],
            )
            for f in r.findings
        ]  # fmt: skip
        counts: dict[str, int] = {}
        for f in r.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        return cls(
            collection=r.collection, as_of=r.as_of, generated_at=r.generated_at,
            findings=findings, counts=counts, looked_at=dict(r.looked_at),
            seconds=round(r.seconds, 3), notes=list(r.notes),
        )  # fmt: skip


MODELS: dict[str, type[BaseModel]] = {
    "document": Document,
    "chunk": Chunk,
    "hit": Hit,
    "check": Check,
    "ask-result": AskResult,
    "question": Question,
    "question-line": QuestionLine,
    "setting": Setting,
    "index-info": IndexInfo,
    "calibration": Calibration,
    "verifier-report": VerifierReport,
    "retrieval-report": RetrievalReport,
    "ingest-report": IngestReport,
    "answer-report": AnswerReport,
    "audit-record": AuditRecord,
    "feedback": Feedback,
    "health": HealthReport,
}
"""Every wire model by the name `tether schema NAME` takes."""


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the wire model called `name` (a key of `MODELS`)."""
    return MODELS[name].model_json_schema()
