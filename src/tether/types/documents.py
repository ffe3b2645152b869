"""Engine data types of documents and passages: what a document says about itself
(`DocMeta`), its parsed `Document` and `Block`s, the retrievable `Chunk`, what the index says of
a document (`DocumentInfo`), the `Filters` applied before ranking, and a retriever's `Hit`.

Frozen data only: no I/O, no model calls. What it cannot do: it checks no invariant beyond
`Chunk`'s own (its `anchor` among its `anchors`); a parser or the index keeps the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

Access = Literal["public", "staff"]
Audience = Literal["public", "staff"]
BlockKind = Literal["heading", "paragraph", "list_item", "table_row", "code"]
FileFormat = Literal["markdown", "html", "pdf", "text", "docx", "rst"]


@dataclass(frozen=True)
class DocMeta:
    """What a document says about itself (front matter, <meta>, PDF info, inventory)."""

    doc_id: str
    version: str
    title: str
    doc_type: str = "document"
    access: Access = "staff"
    language: str = "en"
    effective_from: date | None = None
    effective_to: date | None = None
    owner: str | None = None
    review_by: date | None = None  # when its owner is to review it next (the health report)
    source: str = ""  # path relative to the collection folder, with forward slashes
    format: FileFormat = "text"

    def in_force(self, on: date | None) -> bool:
        """True when this version is in force on `on` (always true when `on` is None)."""
        if on is None:
            return True
        if self.effective_from is not None and on < self.effective_from:
            return False
        return not (self.effective_to is not None and on > self.effective_to)


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document: a heading, paragraph, list item, table row
    or code block, with where it sits (heading path, anchor, page) and its offsets."""

    kind: BlockKind
    text: str
    heading_path: tuple[str, ...]  # the headings above this block, outermost first
    start: int  # Document.text[start:end] == text
    end: int
    anchor: str | None = None  # the location in force: its section's, or the latest anchor
    page: int | None = None  # 1-based PDF page
    level: int | None = None  # heading level (1-6) for headings
    header_row: bool = False  # a table row that is the table's header
    table: int | None = None  # which table (0-based, per document) a table row belongs to
    anchors: tuple[str, ...] = ()  # the locations (ids, named anchors) that start at this block
    term: bool = False  # a definition-list term (HTML `<dt>`): it opens an entry


@dataclass(frozen=True)
class Document:
    """A parsed file: metadata, the parsed text, and its blocks (offsets into `text`)."""

    meta: DocMeta
    text: str
    blocks: tuple[Block, ...]
    content_hash: str  # sha256 hex of the file's bytes
    warnings: tuple[str, ...] = ()  # what reading it resolved on the safe side (access labels)
    access_labelled: bool = True  # False: no access label, `default_access` decided


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage.

    Invariant: `text == (lead + "\\n" if lead else "") + document.text[start:end]`, where
    `lead` is a repeated table header row for a table split across chunks (else "").
    `anchors` lists every location (id or named anchor) the chunk covers, its section's first;
    `anchor` is the first of them (None when it covers none).
    """

    chunk_id: str
    meta: DocMeta
    text: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    ordinal: int  # position of the chunk in its document, 0-based
    anchor: str | None = None
    page: int | None = None
    lead: str = ""
    anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.anchor and self.anchor not in self.anchors:  # `anchor` is always among them
            object.__setattr__(self, "anchors", (self.anchor, *self.anchors))

    @property
    def doc_id(self) -> str:
        """The document's ID (from its metadata)."""
        return self.meta.doc_id

    @property
    def version(self) -> str:
        """The document's version (from its metadata)."""
        return self.meta.version

    @property
    def section(self) -> str:
        """The innermost heading, or the document title for text before any heading."""
        return self.heading_path[-1] if self.heading_path else self.meta.title


@dataclass(frozen=True)
class InstructionSpan:
    """Text addressed to AI assistants found in a chunk at ingest (`tether.instructions`):
    `start`/`end` are offsets in the chunk's text, `text` is that span as written."""

    chunk_id: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class DocumentInfo:
    """A document as the index sees it (with the instruction spans ingest found in it)."""

    meta: DocMeta
    chunks: int
    content_hash: str
    instructions: tuple[InstructionSpan, ...] = ()


@dataclass(frozen=True)
class Filters:
    """Applied before ranking: the version in force on `as_of` and what `audience` may see.
    The audience defaults to public, and any value but "staff" is read as public (fail
    closed): only an explicit staff audience sees staff documents."""

    as_of: date | None = None
    audience: Audience = "public"

    @property
    def public(self) -> bool:
        """Whether only public documents may be seen (every audience but "staff")."""
        return self.audience != "staff"

    def allows(self, meta: DocMeta) -> bool:
        """Whether a document with `meta` passes these filters."""
        if self.public and meta.access != "public":
            return False
        return meta.in_force(self.as_of)


@dataclass(frozen=True)
class Hit:
    """A chunk returned by a retriever, with its score and rank (1-based) for one method."""

    chunk: Chunk
    score: float
    rank: int
    method: str
    signals: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
