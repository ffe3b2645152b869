"""Engine data types of a question set: one `Question` (a line of JSON Lines) and the
`Relevant` passages that answer it, by location so any chunker can be scored.

Frozen data only. What it cannot do: it reads no file and validates nothing; the question
reader (`tether.evaluation`) does, against `tether.schemas.QuestionLine`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from tether.types.documents import Audience


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
