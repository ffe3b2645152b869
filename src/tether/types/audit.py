"""Engine data types of the audit: one answered question as the audit keeps it
(`AuditEntry`), a reader's verdict on it (`Feedback`), and which entries to list (`AuditQuery`).

Frozen data only. What it cannot do: it stores nothing; an `AuditLog` (`tether.protocols`)
writes and lists these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tether.types.documents import Audience


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
