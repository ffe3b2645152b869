"""Wire models of question sets: a `WireQuestion` as tether read it (with its `WireRelevant`
passages), and the `QuestionLine` (with `RelevantInput`) a person writes, whose JSON Schema an
editor or a CI step can validate a file with.

What it cannot do: it reads no file; the question reader (`tether.evaluation`) does.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tether.schemas.base import Wire, fields_of

if TYPE_CHECKING:
    from tether import types


class WireRelevant(Wire):
    """A passage that answers a question, by location."""

    model_config = ConfigDict(title="Relevant")
    __qualname__ = "Relevant"  # the name clients see (see `Wire`)

    doc_id: str
    version: str | None
    section: str | None
    anchor: str | None
    evidence: str | None


class WireQuestion(Wire):
    """One line of a question set."""

    model_config = ConfigDict(title="Question")
    __qualname__ = "Question"  # the name clients see (see `Wire`)

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
    relevant: list[WireRelevant]
    tags: list[str]
    extra: dict[str, Any]

    @classmethod
    def from_question(cls, q: types.Question) -> WireQuestion:
        values = fields_of(q, cls)
        values["relevant"] = [WireRelevant(**fields_of(r, WireRelevant)) for r in q.relevant]
        return cls(**values)


class RelevantInput(BaseModel):
    """Where a question's answer is, in a question set you write: the document, and
    optionally its version, its section heading or anchor, and a phrase of the passage."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    doc_id: str = Field(description="The document's doc_id (see `tether documents`).")
    version: str | None = Field(None, description="Only this version counts (any when null).")
    section: str | None = Field(None, description="A heading the passage sits under.")
    anchor: str | None = Field(None, description="The passage's anchor (see `tether chunks`).")
    evidence: str | None = Field(
        None, description="Words the passage contains (spaces and case aside)."
    )


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
