"""Engine data types of the health report (`tether health`): the passages a finding quotes
(`Quote`), a `Contradiction` between two documents, one `Finding`, and the `HealthReport` of a
collection on a date.

Frozen data only. What it cannot do: it finds nothing; `tether.health` fills these in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from tether.types.documents import Access


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
    "gap",
    "contradiction",
    "stale",
    "superseded_cited",
    "missing_link",
    "unlabelled",
    "instructions",
    "near_duplicate",
    "over_window",
    "unreadable",
    "feedback",
]


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
