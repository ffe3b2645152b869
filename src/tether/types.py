"""The small frozen data types every stage shares.

Defined once here and imported everywhere else; a stage never defines its own copy.
They carry data only: no I/O, no model calls. Dates are `datetime.date`; text offsets are
character offsets into `Document.text` (the parsed text of one document).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

Access = Literal["public", "staff"]
Audience = Literal["public", "staff"]
BlockKind = Literal["heading", "paragraph", "list_item", "table_row", "code"]
FileFormat = Literal["markdown", "html", "pdf", "text", "docx", "rst"]


@dataclass(frozen=True)
class DocMeta:
    """What a document says about itself (front matter, <meta>, PDF info, inventory)."""

    doc_id: str
    version: str
    title: str
    doc_type: str = "document"
    access: Access = "staff"
    language: str = "en"
    effective_from: date | None = None
    effective_to: date | None = None
    owner: str | None = None
    review_by: date | None = None  # when its owner is to review it next (the health report)
    source: str = ""  # path relative to the collection folder, with forward slashes
    format: FileFormat = "text"

    def in_force(self, on: date | None) -> bool:
        """True when this version is in force on `on` (always true when `on` is None)."""
        if on is None:
            return True
        if self.effective_from is not None and on < self.effective_from:
            return False
        return not (self.effective_to is not None and on > self.effective_to)


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document: a heading, paragraph, list item, table row
    or code block, with where it sits (heading path, anchor, page) and its offsets."""

    kind: BlockKind
    text: str
    heading_path: tuple[str, ...]  # the headings above this block, outermost first
    start: int  # Document.text[start:end] == text
    end: int
    anchor: str | None = None  # the location in force: its section's, or the latest anchor
    page: int | None = None  # 1-based PDF page
    level: int | None = None  # heading level (1-6) for headings
    header_row: bool = False  # a table row that is the table's header
    table: int | None = None  # which table (0-based, per document) a table row belongs to
    anchors: tuple[str, ...] = ()  # the locations (ids, named anchors) that start at this block
    term: bool = False  # a definition-list term (HTML `<dt>`): it opens an entry


@dataclass(frozen=True)
class Document:
    """A parsed file: metadata, the parsed text, and its blocks (offsets into `text`)."""

    meta: DocMeta
    text: str
    blocks: tuple[Block, ...]
    content_hash: str  # sha256 hex of the file's bytes
    warnings: tuple[str, ...] = ()  # what reading it resolved on the safe side (access labels)
    access_labelled: bool = True  # False: no access label, `default_access` decided


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage.

    Invariant: `text == (lead + "\\n" if lead else "") + document.text[start:end]`, where
    `lead` is a repeated table header row for a table split across chunks (else "").
    `anchors` lists every location (id or named anchor) the chunk covers, its section's first;
    `anchor` is the first of them (None when it covers none).
    """

    chunk_id: str
    meta: DocMeta
    text: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    ordinal: int  # position of the chunk in its document, 0-based
    anchor: str | None = None
    page: int | None = None
    lead: str = ""
    anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.anchor and self.anchor not in self.anchors:  # `anchor` is always among them
            object.__setattr__(self, "anchors", (self.anchor, *self.anchors))

    @property
    def doc_id(self) -> str:
        """The document's ID (from its metadata)."""
        return self.meta.doc_id

    @property
    def version(self) -> str:
        """The document's version (from its metadata)."""
        return self.meta.version

    @property
    def section(self) -> str:
        """The innermost heading, or the document title for text before any heading."""
        return self.heading_path[-1] if self.heading_path else self.meta.title


@dataclass(frozen=True)
class InstructionSpan:
    """Text addressed to AI assistants found in a chunk at ingest (`tether.instructions`):
    `start`/`end` are offsets in the chunk's text, `text` is that span as written."""

    chunk_id: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class DocumentInfo:
    """A document as the index sees it (with the instruction spans ingest found in it)."""

    meta: DocMeta
    chunks: int
    content_hash: str
    instructions: tuple[InstructionSpan, ...] = ()


@dataclass(frozen=True)
class Filters:
    """Applied before ranking: the version in force on `as_of` and what `audience` may see.
    The audience defaults to public, and any value but "staff" is read as public (fail
    closed): only an explicit staff audience sees staff documents."""

    as_of: date | None = None
    audience: Audience = "public"

    @property
    def public(self) -> bool:
        """Whether only public documents may be seen (every audience but "staff")."""
        return self.audience != "staff"

    def allows(self, meta: DocMeta) -> bool:
        """Whether a document with `meta` passes these filters."""
        if self.public and meta.access != "public":
            return False
        return meta.in_force(self.as_of)


@dataclass(frozen=True)
class Hit:
    """A chunk returned by a retriever, with its score and rank (1-based) for one method."""

    chunk: Chunk
    score: float
    rank: int
    method: str
    signals: dict[str, float] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class TokenWindow:
    """The embedder's window, for sizing chunks: `count(text)` is the number of tokens the
    model reads for `text` as a passage (special tokens included), at most `limit` fit."""

    count: Callable[[str], int]
    limit: int


@dataclass(frozen=True)
class ChunkerConfig:
    """How chunks are cut; recorded in the index so a different chunker needs --rebuild."""

    name: Literal["structure", "fixed", "overlap"] = "structure"
    max_words: int = 200
    overlap_words: int = 50

    def describe(self) -> str:
        if self.name == "overlap":
            return f"overlap(max_words={self.max_words}, overlap_words={self.overlap_words})"
        return f"{self.name}(max_words={self.max_words})"


@dataclass(frozen=True)
class FileProblem:
    """A file that could not be ingested, and why (one line a person can act on)."""

    source: str
    reason: str


@dataclass(frozen=True)
class SyncReport:
    """What one `ingest` did."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    problems: tuple[FileProblem, ...] = ()
    chunks_written: int = 0
    seconds: float = 0.0  # reading, parsing, embedding and writing
    committed: bool = True
    calibration_seconds: float = 0.0  # the calibrations that follow a sync (fusion, gate)
    instructions: tuple[str, ...] = ()  # sources written that hold text addressed to AI
    # "path: why" for a file indexed on the safe side (conflicting access labels: staff),
    # and inventory rows that apply to no file
    warnings: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()  # sources read this time that carry no access label
    default_access: str = "staff"  # what those were indexed as (stored with the index)
    # files of a type tether does not read: (suffix, count), most frequent first
    unsupported: tuple[tuple[str, int], ...] = ()
    # the folder's inventory.csv, when it has one: its rows (None: no inventory.csv), and of
    # them those naming a file found (the others are named in `warnings`)
    inventory_rows: int | None = None
    inventory_matched: int = 0


# ---- the change set: what one sync writes, planned by ingest, applied by a store in one go

Progress = Callable[[str, int, int], None]  # (phase, done, total); phase "embed:tokens" too


@dataclass(frozen=True)
class FileState:
    """What the index records of one source file, to tell at the next sync whether it changed."""

    source: str  # the path relative to the collection folder
    fingerprint: str  # sha256 of the bytes + ":" + hash of its inventory row and default access
    size: int
    mtime_ns: int
    doc_id: str
    version: str


@dataclass(frozen=True)
class FileChange:
    """A file whose new version is written: its state, the parsed document and its chunks.

    Applying it first removes what the index holds for `file.source` (an update)."""

    file: FileState
    document: Document
    chunks: tuple[Chunk, ...]
    added: bool  # False: the file was indexed before (an update)
    instructions: tuple[InstructionSpan, ...] = ()  # found in `chunks` (their chunk IDs)


@dataclass(frozen=True)
class VectorChange:
    """The embedding of one chunk (float32, L2-normalised), keyed by the hash of what was
    embedded so that an unchanged chunk is not embedded again."""

    chunk_id: str
    text_hash: str
    vector: np.ndarray


@dataclass(frozen=True)
class SentenceVectorChange:
    """The sentence embeddings of one chunk: spans in the chunk's text and one row per span;
    they replace the chunk's previous sentence vectors."""

    chunk_id: str
    text_hash: str
    spans: tuple[tuple[int, int], ...]
    matrix: np.ndarray


@dataclass(frozen=True)
class ChangeSet:
    """Everything one sync writes; a store applies it in one transaction (all or nothing).

    Order of application: `rebuild` empties the index; `removed` sources leave (document,
    chunks, lexical entries, vectors); each of `files` replaces its source's previous version;
    `touched` refreshes the size and mtime of files whose bytes did not change; `vectors` and
    `sentence_vectors` are written; vectors of chunks no longer in the index are dropped;
    `meta` entries are recorded."""

    files: tuple[FileChange, ...] = ()
    removed: tuple[str, ...] = ()
    touched: tuple[FileState, ...] = ()
    vectors: tuple[VectorChange, ...] = ()
    sentence_vectors: tuple[SentenceVectorChange, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    rebuild: bool = False
    chunker: str = ""  # `ChunkerConfig.describe()` of the chunker that cut `files`

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(f.file.source for f in self.files if f.added)

    @property
    def updated(self) -> tuple[str, ...]:
        return tuple(f.file.source for f in self.files if not f.added)

    @property
    def empty(self) -> bool:
        """True when applying it would change nothing."""
        return not (
            self.files or self.removed or self.touched or self.vectors
            or self.sentence_vectors or self.meta or self.rebuild
        )  # fmt: skip


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ModelRequest:
    """What is sent to a language model: provider-neutral, hashable for record/replay."""

    messages: tuple[Message, ...]
    json_schema: dict | None = field(default=None, compare=False, hash=False)
    schema_name: str = "answer"
    max_tokens: int = 512
    temperature: float = 0.0
    purpose: str = "answer"  # answer | closed_book | rewrite | judge | rerank
    prompt_id: str = ""  # name@sha256[:12] of the prompt file that built it
    chunk_ids: tuple[str, ...] = ()  # the passages shown, in order (for replay notes)
    logprobs: bool = False  # ask for top log-probabilities of the first token (judges)
    # For answerers that read passages directly instead of a prompt (the extractive one):
    question: str = field(default="", compare=False)
    passages: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (chunk_id, text)
    # ... and the question's e5 cosine to each sentence span of those passages, from the
    # index's sentence vectors: (chunk_id, start, end, cosine); empty without vectors
    closeness: tuple[tuple[str, int, int, float], ...] = field(default=(), compare=False)
    # ... and the reader's P(the sentence answers the question) for the spans closest to it
    # (`tether.embeddings.reader`, the relevance head): (chunk_id, start, end, probability);
    # empty without the reader
    answers: tuple[tuple[str, int, int, float], ...] = field(default=(), compare=False)
    # Tools a provider with tool calls may offer instead of `json_schema` (the agent's
    # actions): (name, description, JSON Schema of the arguments); a call comes back as the
    # JSON text {"action": name, ...arguments}.
    tools: tuple[tuple[str, str, dict], ...] = field(default=(), compare=False, hash=False)


@dataclass(frozen=True)
class Completion:
    """What came back from a model (or from a non-model answerer)."""

    text: str
    finish_reason: str = "stop"  # stop | length | refusal | error
    refusal: str | None = None
    model: str = ""
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cost_known: bool = True  # False: no listed price for the model, cost_usd is not a figure
    note: str = ""
    top_logprobs: dict[str, float] = field(default_factory=dict, compare=False, hash=False)


AnswerMode = Literal["select", "json"]  # what "auto" resolves to (`Capabilities`)


@dataclass(frozen=True)
class Capabilities:
    """What a provider is and can do, so behaviour follows the provider's class, never its
    name: each provider class declares `capabilities = Capabilities(...)`, and a wrapper (the
    replay provider) reports those of what it wraps. The defaults are a remote language model's.

    `answer_mode`: what answer mode "auto" resolves to (select: the model picks numbered
    sentences; json: it writes the answer and its claims). `judge`: the judge "auto" picks:
    `align+llm` when the model is already loaded in this process, so its second opinion on an
    uncertain claim (and on an uncertain question's answerability) costs no paid call, else
    `align`. `model`: it is a language model (the extractive answerer is not: it cannot
    rewrite a query). `tool_use`: it can choose the agent loop's actions. `recorded`: it answers
    only the requests it holds recordings of (a replay), so an evaluation asks only those."""

    answer_mode: AnswerMode = "json"
    judge: Literal["align", "align+llm"] = "align"
    model: bool = True
    tool_use: bool = True
    recorded: bool = False

    @property
    def second_opinion(self) -> bool:
        """A model's second opinion on uncertain cases is free (the judge `align+llm`)."""
        return self.judge == "align+llm"


@dataclass(frozen=True)
class Relevant:
    """A passage that answers a question, by location (so any chunker can be scored)."""

    doc_id: str
    version: str | None = None
    section: str | None = None
    anchor: str | None = None
    evidence: str | None = None


@dataclass(frozen=True)
class Question:
    """One line of a question set (JSON Lines; unknown fields kept in `extra`)."""

    id: str
    question: str
    language: str = "en"
    as_of: date | None = None
    audience: Audience = "public"
    abstain: bool = False
    kind: str = "answerable"
    reference_answer: str = ""
    keys: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()
    relevant: tuple[Relevant, ...] = ()
    tags: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)


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
class Claim:
    """One statement of an answer and the chunk IDs it cites."""

    text: str
    chunk_ids: tuple[str, ...] = ()


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
class Evidence:
    """The sentence(s) of a cited passage that best support a claim."""

    chunk_id: str
    text: str
    start: int  # character offsets into the parsed document's text
    end: int
    score: float = 0.0


@dataclass(frozen=True)
class Detail:
    """One detail of a claim that its evidence does not match (`tether.verify.align`): its
    kind (number, quantifier, condition, negation, period, word, not_a_statement), the
    claim's words, and the evidence text it conflicts with."""

    kind: str
    claim: str
    evidence: str
    chunk_id: str = ""


class Flag(str):
    """One finding of a check: a `kind` (``not_allowed``, ``number_missing``) and an optional
    `arg` (the number, the chunk ID). It is a `str` whose form is ``kind`` or ``kind:arg``, so
    JSON, recordings and comparisons with plain strings stay what they were; code reads
    `.kind`/`.arg` instead of splitting the string again."""

    __slots__ = ()

    def __new__(cls, kind: str, arg: object | None = None) -> Flag:
        if not kind or ":" in kind:
            raise ValueError(f"a flag kind is one word without ':' (got {kind!r})")
        return super().__new__(cls, kind if arg is None else f"{kind}:{arg}")

    @classmethod
    def parse(cls, text: str) -> Flag:
        """The flag written as `text` (``kind`` or ``kind:arg``)."""
        kind, sep, arg = text.partition(":")
        return cls(kind, arg if sep else None)

    @property
    def kind(self) -> str:
        """What the check found (``number_missing``, ``not_allowed``, ...)."""
        return self.partition(":")[0]

    @property
    def arg(self) -> str | None:
        """What it found it about (a number, a chunk ID), or None."""
        _, sep, arg = self.partition(":")
        return arg if sep else None


@dataclass(frozen=True)
class ClaimCheck:
    """The result of checking one claim: flags (empty means ok) and the evidence found."""

    claim: Claim
    flags: tuple[Flag, ...] = ()  # e.g. Flag("missing_id", "abc"), shown as "missing_id:abc"
    evidence: tuple[Evidence, ...] = ()
    entailment: float | None = None
    removed: bool = False  # --strict removed this claim
    withheld: bool = False  # not shown to the public reader (`tether.verify.flags.withhold`)
    details: tuple[Detail, ...] = ()  # what its evidence does not match (`verify.align`)

    @property
    def ok(self) -> bool:
        """True when no check flagged the claim."""
        return not self.flags


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


@dataclass(frozen=True)
class AuditEntry:
    """One answered question as the audit keeps it (`tether.protocols.AuditLog`): when, who
    (a key name such as "cli", or an OS user) and for which audience, the filters and method,
    the passages given to the model, the prompt's hash, provider and model, the answer with
    each claim's checks, timings and cost. `id` is given by the log when it is written.
    An entry of status "dropped" is no answer: it says that `dropped` answers asked by `who`
    were not recorded (a server's daily cap on anonymous answers per client address)."""

    at: str  # UTC, ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)
    who: str
    audience: Audience
    question: str
    status: str  # answered, flagged, refused, no_answer
    as_of: str | None = None
    method: str = ""
    refused_by: str | None = None
    passage_ids: tuple[str, ...] = ()
    prompt_hash: str = ""
    provider: str = ""
    model: str = ""
    answer: str = ""
    claims: tuple[dict, ...] = ()  # {"text", "chunk_ids", "flags", "entailment", "removed"}
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    cost_usd: float = 0.0
    dropped: int = 0  # status "dropped": how many answers were not recorded
    id: int | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        """Every flag of every claim, sorted, once each."""
        return tuple(sorted({str(f) for c in self.claims for f in c.get("flags", ())}))


FeedbackVerdict = Literal["helpful", "wrong"]


@dataclass(frozen=True)
class Feedback:
    """A reader's verdict on one recorded answer (`Workspace.feedback`): the audit entry's id,
    when (UTC, ISO 8601) and who (a key name, an OS user) gave it, helpful or wrong, an
    optional note, and for a wrong answer optionally the chunk ID of the passage that does
    answer. One per entry and asker: a second one from the same asker replaces the first.
    `id` is given by the log when it is stored; `entry` is the audit entry when listed."""

    entry_id: int
    at: str
    who: str
    verdict: FeedbackVerdict
    note: str | None = None
    chunk_id: str | None = None
    id: int | None = None
    entry: AuditEntry | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class AuditQuery:
    """Which audit entries to list: by reader (a public reader never sees an entry asked
    for staff), date range (ISO dates, inclusive), asker's audience, a flag kind, flagged
    only; flagged entries first, then newest first; at most `limit` (0: all)."""

    reader: Audience = "public"
    since: str | None = None
    until: str | None = None
    audience: Audience | None = None
    flag: str | None = None
    flagged_only: bool = False
    limit: int = 50


# ---- the health report (`tether health`) -----------------------------------------------------


@dataclass(frozen=True)
class Quote:
    """A passage a health finding points at: its document (and version), where it sits, the
    text quoted, and the document's owner and access."""

    doc_id: str
    version: str
    title: str
    chunk_id: str
    text: str
    owner: str | None = None
    access: Access = "staff"
    section: str = ""


@dataclass(frozen=True)
class Contradiction:
    """Two documents in force on the same date that state different things about one subject:
    `kind` "number" (the same number slot with different values) or "rule" (one allows or
    requires what the other does not); `detail` says what differs ("$150 against $200");
    `score` how sure the finder is (0-1)."""

    kind: Literal["number", "rule"]
    subject: str
    a: Quote
    b: Quote
    detail: str
    score: float = 1.0


HealthKind = Literal[
    "gap", "contradiction", "stale", "superseded_cited", "missing_link", "unlabelled",
    "instructions", "near_duplicate", "over_window", "unreadable", "feedback",
]  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One thing the owners of the documents should look at: its kind, a one-line title, what
    shows it (`evidence`: quoted passages; `examples`: questions asked), the documents it is
    about and their owners, and how many times it was seen (`count`)."""

    kind: HealthKind
    title: str
    detail: str = ""
    doc_ids: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    evidence: tuple[Quote, ...] = ()
    examples: tuple[str, ...] = ()
    count: int = 1


@dataclass(frozen=True)
class HealthReport:
    """The health of one collection on `as_of`: the findings by kind (gaps, contradictions,
    staleness, hygiene, feedback), what was looked at, how long it took, and notes on what
    could not be checked."""

    collection: str
    as_of: date
    generated_at: str  # UTC, ISO 8601
    findings: tuple[Finding, ...]
    looked_at: dict[str, int] = field(default_factory=dict)  # documents, chunks, questions...
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    def of(self, kind: HealthKind) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]
