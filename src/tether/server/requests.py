"""The bodies the HTTP API reads (what it answers is `tether.schemas`: AskResult, Hit,
Document, Chunk, Check, Feedback), and the two small answers of its own (`Health`, `Caller`).

None of them carries an audience: the caller's key decides it. `view` only narrows it (a
staff key may ask for the public view; a public key asking for the staff view is refused).

What it cannot do: it parses and bounds, it never checks a doc_id or chunk ID exists.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tether.answering.answer import MAX_CLAIM_CHARS, MAX_CLAIMS
from tether.answering.audit import MAX_NOTE_CHARS
from tether.answering.gate import MAX_QUESTION_CHARS

Method = Literal["auto", "bm25", "dense", "hybrid", "rerank", "deep"]
View = Literal["public", "staff"] | None
AS_OF = Field(
    "today",
    max_length=16,
    description="Only versions in force on this date: YYYY-MM-DD, today, or none (all).",
)
VIEW = Field(None, description="The audience view to compute for; at most the key's own (default).")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(_Body):
    """A question (`POST /v1/ask`)."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    as_of: str = AS_OF
    view: View = VIEW
    language: Literal["en", "fr"] | None = Field(None, description="Detected when null.")
    method: Method = "auto"
    k: int = Field(5, ge=1, le=20, description="Passages retrieved.")
    mode: Literal["json", "inline", "select", "auto"] = Field(
        "auto", description="auto: select with the local model, json with any other provider."
    )
    strict: bool = Field(False, description="Drop the claims that fail an exact check.")
    verify: bool = Field(True, description="Check each claim against its cited passages.")
    answerability: bool = Field(
        True,
        description="Refuse before the model when no passage gives what the question asks for.",
    )
    stream: bool = Field(
        False,
        description="Server-sent events: retrieval, gate, answer, one `check` per claim,"
        " then `result` (the AskResult) or `error` (a problem body).",
    )


class SearchRequest(_Body):
    """A search (`POST /v1/search`)."""

    query: str = Field(max_length=MAX_QUESTION_CHARS)
    k: int = Field(5, ge=1, le=100)
    as_of: str = AS_OF
    view: View = VIEW
    method: Method = "auto"


class CheckClaim(_Body):
    """One claim to check: its text (as long as a model's claim may be) and what it cites."""

    text: str = Field(max_length=MAX_CLAIM_CHARS)
    chunk_ids: list[str] = Field(max_length=50)


class CheckRequest(_Body):
    """Claims to check against passages (`POST /v1/check`), as `ask` checks an answer; a
    claim over `MAX_CLAIM_CHARS` characters, or more than `MAX_CLAIMS` claims, is a 422
    (checking grows with the text)."""

    claims: list[CheckClaim] = Field(min_length=1, max_length=MAX_CLAIMS)
    passage_ids: list[str] = Field(
        max_length=50, description="The chunk IDs the claims may cite (the context)."
    )
    question: str = Field("", max_length=MAX_QUESTION_CHARS)
    as_of: str = AS_OF
    language: Literal["en", "fr"] | None = None
    view: View = VIEW
    judge: bool = Field(True, description="Score entailment (when the index has vectors).")


class FeedbackRequest(_Body):
    """A verdict on one answer (`POST /v1/feedback`): the answer's `audit_id` (from its
    AskResult), helpful or wrong, an optional note, and for a wrong answer optionally the
    chunk ID of the passage that does answer."""

    audit_id: int = Field(ge=1, le=2**63 - 1, description="The AskResult's `audit_id`.")
    verdict: Literal["helpful", "wrong"]
    note: str | None = Field(
        None,
        max_length=MAX_NOTE_CHARS,
        description="Why, in a few words (no control characters but line breaks and tabs).",
    )
    chunk_id: str | None = Field(
        None, max_length=200, description="The chunk ID of the passage that answers the question."
    )


class Health(BaseModel):
    """`GET /healthz`."""

    status: Literal["ok"]
    version: str


class Readiness(BaseModel):
    """`GET /readyz`: whether the models are loaded and the index can be used (200), or the
    models are still loading or failed to, or a request found the index unusable and no check
    has passed since (503). `detail` says what is under way or what went wrong (never a
    file's name: the log has the rest); `seconds`, how long warming took (or has taken so
    far). `audit`: whether the last audit write failed (answers are served either way);
    `audit_failures`, the records not written since the process started; `audit_last_failure`,
    when the last one failed (UTC)."""

    ready: bool
    status: Literal["warming", "ready", "failed"]
    detail: str = ""
    seconds: float
    audit: Literal["ok", "failing"] = "ok"
    audit_failures: int = 0
    audit_last_failure: str | None = None


class Caller(BaseModel):
    """`GET /v1/whoami`: the key's name and the audience it sees."""

    name: str
    audience: Literal["public", "staff"]
