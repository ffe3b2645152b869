"""Wire models of what tether says about itself and measures: a `Setting` (`tether config`),
`IndexInfo` with its `Handoff` (`tether info`), the gate's `Calibration`, and the reports of
`tether eval` (`VerifierReport`, `RetrievalReport`, `AnswerReport`).

What it cannot do: it converts the evaluation's results by attribute (typed `Any`: the
evaluation sits above this layer); it measures nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tether.schemas.base import Wire, fields_of


class Setting(Wire):
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


class GateRow(Wire):
    """One floor's trade-off for one retrieval method."""

    method: str
    floor: float
    wrongly_refused: int
    answerable: int
    let_through: int
    must_refuse: int


class Calibration(Wire):
    """The support gate's floor chosen per method, and the trade-off table it came from."""

    floors: dict[str, float]
    table: list[GateRow]
    warnings: list[str] = Field([])

    @classmethod
    def from_calibration(cls, cal: Any) -> Calibration:
        return cls(
            floors=dict(cal.floors),
            table=[GateRow(**fields_of(r, GateRow)) for r in cal.table],
            warnings=list(cal.warnings),
        )


class WrongVerdict(Wire):
    """A labelled claim the verifier judged wrongly."""

    id: str
    kind: str
    label: str
    flags: list[str]


class VerifierReport(Wire):
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
            judge=result.judge,
            claims=len(result.rows),
            false_passes=result.false_passes,
            unsupported=result.unsupported,
            false_alarms=result.false_alarms,
            supported=result.supported,
            false_pass_rate=result.false_pass_rate,
            false_alarm_rate=result.false_alarm_rate,
            per_check=result.per_check,
            per_kind=result.per_kind,
            median_ms_per_claim=result.median_ms,
            wrong=[
                WrongVerdict(id=r.item_id, kind=r.kind, label=r.label, flags=list(r.flags))
                for r in wrong
            ],
        )


class Skipped(Wire):
    id: str
    reason: str


class RetrievalReport(Wire):
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


class AnswerRow(Wire):
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


class AnswerReport(Wire):
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


class Handoff(Wire):
    """What a person taking over an index needs (`tether info`), as the audience may see it."""

    collection: dict[str, Any]
    models: dict[str, Any]
    calibration: dict[str, Any]
    last_eval: dict[str, Any] | None
    weaknesses: list[str]
