"""Wire models of `tether health --json` and `GET /v1/health`: the `WireHealthReport`, its
`HealthFinding`s and the `HealthQuote`s they quote.

What it cannot do: it converts the engine's `HealthReport`; it finds nothing.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field

from tether.schemas.base import Wire, fields_of

if TYPE_CHECKING:
    from tether import types


class HealthQuote(Wire):
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


class HealthFinding(Wire):
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


class WireHealthReport(Wire):
    """`tether health --json` and `GET /v1/health` (staff keys): a collection's findings on
    `as_of`, what was looked at, the seconds it took and notes on what was not checked."""

    model_config = ConfigDict(title="HealthReport")
    __qualname__ = "HealthReport"  # the name clients see (see `Wire`)

    collection: str
    as_of: date
    generated_at: str
    findings: list[HealthFinding]
    counts: dict[str, int] = Field(description="Findings per kind.")
    looked_at: dict[str, int]
    seconds: float
    notes: list[str]

    @classmethod
    def from_report(cls, r: types.HealthReport) -> WireHealthReport:
        findings = [
            HealthFinding(
                kind=f.kind,
                title=f.title,
                detail=f.detail,
                doc_ids=list(f.doc_ids),
                owners=list(f.owners),
                examples=list(f.examples),
                count=f.count,
                evidence=[HealthQuote(**fields_of(q, HealthQuote)) for q in f.evidence],
            )
            for f in r.findings
        ]
        counts: dict[str, int] = {}
        for f in r.findings:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        return cls(
            collection=r.collection,
            as_of=r.as_of,
            generated_at=r.generated_at,
            findings=findings,
            counts=counts,
            looked_at=dict(r.looked_at),
            seconds=round(r.seconds, 3),
            notes=list(r.notes),
        )
