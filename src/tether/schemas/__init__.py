"""The wire shape: pydantic models for everything tether prints as JSON (`--json`, an API).

One model per thing a consumer reads: a document (its metadata and chunk count), a chunk, a
search hit (a chunk with its rank, score, method and signals, flat), a claim `Check`, an
answer, and the reports of `questions`, `info`, `calibrate` and `eval`. Each has a small
converter from the engine's dataclass (`WireChunk.from_chunk`, `WireHit.from_hit`,
`WireAskResult.from_ask_result`, ...); `model_dump(mode="json")` gives plain JSON data (dates
as ISO strings) and `model_json_schema()` its JSON Schema. `MODELS` names every model for
`tether schema`.

A wire model that stands for an engine class of `tether.types` of the same name is called
`Wire<Name>` here (`WireHit` for `tether.types.Hit`), so the two are never confused in code;
JSON Schemas, the OpenAPI document and MCP still call it `<Name>` (see `tether.schemas.base`).
The modules, by concern: `documents` (document, chunk, hit), `checks` (claim, evidence, detail,
check), `answers` (the answer and its parts, and what a public reader is shown of it),
`questions`, `reports` (settings, index info, calibration, evaluation), `records` (audit and
feedback), `ingest` and `health`.

The keys are those the CLI printed before these models existed; the models only add keys
(a chunk's doc_type, dates and source; a hit inside an answer carries its text).

`WireAskResult.from_ask_result` is also where a public reader's view of an answer is decided,
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

from typing import Any

from pydantic import BaseModel

from tether.schemas.answers import (
    Problem,
    Request,
    WireAgentStep,
    WireAgentTrace,
    WireAnswer,
    WireAnswerability,
    WireAskResult,
    WireCompletion,
    WireContext,
    WireDropped,
    WireGate,
    WirePassage,
    public_problem_detail,
)
from tether.schemas.checks import Check, WireClaim, WireDetail, WireEvidence
from tether.schemas.documents import Instruction, WireChunk, WireDocument, WireHit
from tether.schemas.health import HealthFinding, HealthQuote, WireHealthReport
from tether.schemas.ingest import Crawl, IngestReport, WireFileProblem
from tether.schemas.questions import QuestionLine, RelevantInput, WireQuestion, WireRelevant
from tether.schemas.records import AuditRecord, WireFeedback
from tether.schemas.reports import (
    AnswerReport,
    AnswerRow,
    Calibration,
    GateRow,
    Handoff,
    IndexInfo,
    RetrievalReport,
    Setting,
    Skipped,
    VerifierReport,
    WrongVerdict,
)

__all__ = [
    "MODELS",
    "AnswerReport",
    "AnswerRow",
    "AuditRecord",
    "Calibration",
    "Check",
    "Crawl",
    "GateRow",
    "Handoff",
    "HealthFinding",
    "HealthQuote",
    "IndexInfo",
    "IngestReport",
    "Instruction",
    "Problem",
    "QuestionLine",
    "RelevantInput",
    "Request",
    "RetrievalReport",
    "Setting",
    "Skipped",
    "VerifierReport",
    "WireAgentStep",
    "WireAgentTrace",
    "WireAnswer",
    "WireAnswerability",
    "WireAskResult",
    "WireChunk",
    "WireClaim",
    "WireCompletion",
    "WireContext",
    "WireDetail",
    "WireDocument",
    "WireDropped",
    "WireEvidence",
    "WireFeedback",
    "WireFileProblem",
    "WireGate",
    "WireHealthReport",
    "WireHit",
    "WirePassage",
    "WireQuestion",
    "WireRelevant",
    "WrongVerdict",
    "json_schema",
    "public_problem_detail",
]

MODELS: dict[str, type[BaseModel]] = {
    "document": WireDocument,
    "chunk": WireChunk,
    "hit": WireHit,
    "check": Check,
    "ask-result": WireAskResult,
    "question": WireQuestion,
    "question-line": QuestionLine,
    "setting": Setting,
    "index-info": IndexInfo,
    "calibration": Calibration,
    "verifier-report": VerifierReport,
    "retrieval-report": RetrievalReport,
    "ingest-report": IngestReport,
    "answer-report": AnswerReport,
    "audit-record": AuditRecord,
    "feedback": WireFeedback,
    "health": WireHealthReport,
}
"""Every wire model by the name `tether schema NAME` takes."""


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the wire model called `name` (a key of `MODELS`)."""
    return MODELS[name].model_json_schema()
