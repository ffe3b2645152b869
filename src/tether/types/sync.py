"""Engine data types of an ingest: how chunks are cut (`ChunkerConfig`, `TokenWindow`), what
one sync did (`SyncReport`, `FileProblem`), and the change set it writes: planned by ingest,
applied by a store in one go (`ChangeSet` of `FileChange`, `VectorChange`,
`SentenceVectorChange`, with the `FileState` the index records of each file).

Frozen data only: no I/O, no model calls. What it cannot do: a `ChangeSet` describes the
writes; the store applies them (`tether.protocols`), and nothing here checks that they agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tether.types.documents import Chunk, Document, InstructionSpan

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class TokenWindow:
    """The embedder's window, for sizing chunks: `count(text)` is the number of tokens the
    model reads for `text` as a passage (special tokens included), at most `limit` fit."""

    count: Callable[[str], int]
    limit: int


@dataclass(frozen=True)
class ChunkerConfig:
    """How chunks are cut; recorded in the index so a different chunker needs --rebuild."""

    name: Literal["structure", "fixed", "overlap"] = "structure"
    max_words: int = 200
    overlap_words: int = 50

    def describe(self) -> str:
        if self.name == "overlap":
            return f"overlap(max_words={self.max_words}, overlap_words={self.overlap_words})"
        return f"{self.name}(max_words={self.max_words})"


@dataclass(frozen=True)
class FileProblem:
    """A file that could not be ingested, and why (one line a person can act on)."""

    source: str
    reason: str


@dataclass(frozen=True)
class SyncReport:
    """What one `ingest` did."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    problems: tuple[FileProblem, ...] = ()
    chunks_written: int = 0
    seconds: float = 0.0  # reading, parsing, embedding and writing
    committed: bool = True
    calibration_seconds: float = 0.0  # the calibrations that follow a sync (fusion, gate)
    instructions: tuple[str, ...] = ()  # sources written that hold text addressed to AI
    # "path: why" for a file indexed on the safe side (conflicting access labels: staff),
    # and inventory rows that apply to no file
    warnings: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()  # sources read this time that carry no access label
    default_access: str = "staff"  # what those were indexed as (stored with the index)
    # files of a type tether does not read: (suffix, count), most frequent first
    unsupported: tuple[tuple[str, int], ...] = ()
    # the folder's inventory.csv, when it has one: its rows (None: no inventory.csv), and of
    # them those naming a file found (the others are named in `warnings`)
    inventory_rows: int | None = None
    inventory_matched: int = 0


Progress = Callable[[str, int, int], None]  # (phase, done, total); phase "embed:tokens" too


@dataclass(frozen=True)
class FileState:
    """What the index records of one source file, to tell at the next sync whether it changed."""

    source: str  # the path relative to the collection folder
    fingerprint: str  # sha256 of the bytes + ":" + hash of its inventory row and default access
    size: int
    mtime_ns: int
    doc_id: str
    version: str


@dataclass(frozen=True)
class FileChange:
    """A file whose new version is written: its state, the parsed document and its chunks.

    Applying it first removes what the index holds for `file.source` (an update)."""

    file: FileState
    document: Document
    chunks: tuple[Chunk, ...]
    added: bool  # False: the file was indexed before (an update)
    instructions: tuple[InstructionSpan, ...] = ()  # found in `chunks` (their chunk IDs)


@dataclass(frozen=True)
class VectorChange:
    """The embedding of one chunk (float32, L2-normalised), keyed by the hash of what was
    embedded so that an unchanged chunk is not embedded again."""

    chunk_id: str
    text_hash: str
    vector: np.ndarray


@dataclass(frozen=True)
class SentenceVectorChange:
    """The sentence embeddings of one chunk: spans in the chunk's text and one row per span;
    they replace the chunk's previous sentence vectors."""

    chunk_id: str
    text_hash: str
    spans: tuple[tuple[int, int], ...]
    matrix: np.ndarray


@dataclass(frozen=True)
class ChangeSet:
    """Everything one sync writes; a store applies it in one transaction (all or nothing).

    Order of application: `rebuild` empties the index; `removed` sources leave (document,
    chunks, lexical entries, vectors); each of `files` replaces its source's previous version;
    `touched` refreshes the size and mtime of files whose bytes did not change; `vectors` and
    `sentence_vectors` are written; vectors of chunks no longer in the index are dropped;
    `meta` entries are recorded."""

    files: tuple[FileChange, ...] = ()
    removed: tuple[str, ...] = ()
    touched: tuple[FileState, ...] = ()
    vectors: tuple[VectorChange, ...] = ()
    sentence_vectors: tuple[SentenceVectorChange, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    rebuild: bool = False
    chunker: str = ""  # `ChunkerConfig.describe()` of the chunker that cut `files`

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(f.file.source for f in self.files if f.added)

    @property
    def updated(self) -> tuple[str, ...]:
        return tuple(f.file.source for f in self.files if not f.added)

    @property
    def empty(self) -> bool:
        """True when applying it would change nothing."""
        return not (
            self.files
            or self.removed
            or self.touched
            or self.vectors
            or self.sentence_vectors
            or self.meta
            or self.rebuild
        )
