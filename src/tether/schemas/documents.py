"""Wire models of documents and passages: a `WireDocument` (its metadata, chunk count and the
text addressed to AI assistants found in it), a `WireChunk`, and a search `WireHit` (a chunk with
its rank, score, method and signals, flat).

What it cannot do: it converts the engine's dataclasses by attribute; it reads no index.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from tether.schemas.base import Version, Wire, fields_of, version_fields

if TYPE_CHECKING:
    from tether import types


class Instruction(Wire):
    """Text addressed to AI assistants that ingest found in a chunk: offsets in its text."""

    chunk_id: str
    start: int
    end: int
    text: str


class WireDocument(Version):
    """A document version as the index sees it: its metadata, how many chunks it has, and
    the text addressed to AI assistants found in it (never obeyed; see `Instruction`)."""

    model_config = ConfigDict(title="Document")
    __qualname__ = "Document"  # the name clients see (see `Wire`)

    owner: str | None
    review_by: date | None = Field(
        description="YYYY-MM-DD: when its owner is to review it next (null: not given)."
    )
    format: str
    chunks: int
    instructions: list[Instruction] = Field([])

    @classmethod
    def from_info(cls, info: types.DocumentInfo) -> WireDocument:
        m = info.meta
        return cls(
            **version_fields(m),
            owner=m.owner,
            review_by=m.review_by,
            format=m.format,
            chunks=info.chunks,
            instructions=[Instruction(**vars(i)) for i in info.instructions],
        )


class WireChunk(Version):
    """A passage with where it sits: document version, heading path, offsets, page."""

    model_config = ConfigDict(title="Chunk")
    __qualname__ = "Chunk"  # the name clients see (see `Wire`)

    chunk_id: str
    heading_path: list[str]
    section: str
    anchor: str | None
    anchors: list[str] = Field(
        default_factory=list,
        description="Every location (id or named anchor) the passage covers; `anchor` first.",
    )
    page: int | None
    start: int
    end: int
    text: str

    @classmethod
    def from_chunk(cls, c: types.Chunk) -> WireChunk:
        return cls(**chunk_fields(c))


def chunk_fields(c: types.Chunk) -> dict[str, Any]:
    return {**version_fields(c.meta), **fields_of(c, WireChunk, skip=Version.model_fields)}


class _Ranking(Wire):
    """Where a retriever placed a chunk (a base of `WireHit`: its keys print first)."""

    rank: int
    score: float
    method: str
    signals: dict[str, float]


class WireHit(WireChunk, _Ranking):
    """A search result: the chunk's keys, flat, with rank, score, method and the signals
    (component scores) that placed it."""

    model_config = ConfigDict(title="Hit")
    __qualname__ = "Hit"  # the name clients see (see `Wire`)

    @classmethod
    def from_hit(cls, h: types.Hit) -> WireHit:
        return cls(
            rank=h.rank,
            score=h.score,
            method=h.method,
            signals=dict(h.signals),
            **chunk_fields(h.chunk),
        )
