"""Wire models of what the audit records: an `AuditRecord` (one answered question, or how many
were not recorded) and a `WireFeedback` (a reader's verdict on one).

What it cannot do: it reads no audit; it converts the engine's `AuditEntry` and `Feedback`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from tether.schemas.base import Wire

if TYPE_CHECKING:
    from tether import types


class AuditRecord(Wire):
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


class WireFeedback(Wire):
    """A verdict on one recorded answer (`POST /v1/feedback`, `tether audit --feedback`): the
    audit entry it is about (`audit_id`, as the AskResult gave it), when and who gave it,
    helpful or wrong, the note and the chunk ID of the right passage (null when not given),
    and the entry's question. A public reader of `tether audit --feedback` gets no ids (0)
    and no asker (""), as for the audit itself."""

    model_config = ConfigDict(title="Feedback")
    __qualname__ = "Feedback"  # the name clients see (see `Wire`)

    id: int
    audit_id: int
    at: str
    who: str
    verdict: Literal["helpful", "wrong"]
    note: str | None
    chunk_id: str | None
    question: str

    @classmethod
    def from_feedback(cls, f: types.Feedback) -> WireFeedback:
        return cls(
            id=f.id or 0,
            audit_id=f.entry_id,
            at=f.at,
            who=f.who,
            verdict=f.verdict,
            note=f.note,
            chunk_id=f.chunk_id,
            question=f.entry.question if f.entry else "",
        )
