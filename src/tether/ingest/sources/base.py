"""What a source of documents is, beside a folder: the `Source` protocol that
`tether.ingest.sources.sync.sync_source` brings an index in line with.

A source (a website today; a help center's or a wiki's export next) hands over documents as
`Item`s (bytes, the format to parse them as, where they are indexed, and metadata it knows
as an inventory row), says which documents it holds are unchanged or gone, and reports
problems; `sync_source` parses, chunks, embeds and writes them exactly as a folder's files
are (`tether.ingest.sync`), in one transaction. Each source keeps a state of its own in the
index (a website: each page's ETag and Last-Modified), handed back to it at the next sync,
and is remembered with its settings under its `key` (`SOURCES_META`), so it can be synced
again with no options.

A source's items are indexed under their `source` string (a page's URL), never a folder path;
every source string holds "://", which no collection-relative path does, so a folder's sync
leaves them alone.

What it cannot do: a source is read by the `tether ingest` process (the slow parts still go
through the executor); it cannot hand over a document in pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from tether.types import FileFormat, FileState, Progress

SOURCES_META = "sources"  # the index meta key: {key: {kind, location, settings, last sync}}
STATE_META_PREFIX = "source:"  # + key: the source's own state (JSON)


@dataclass(frozen=True)
class Item:
    """A document a source hands over."""

    source: str  # where it is indexed (a page's URL); holds "://"
    data: bytes
    fmt: FileFormat
    row: Mapping[str, str] | None = None  # metadata the source gives, read as an inventory row
    modified_ns: int = 0  # when it last changed, as the source says (0: unknown)
    trail: tuple[str, ...] = ()  # the pages above it in an export's tree (its sections)


@dataclass
class Sink:
    """Where a source's `collect` hands what it finds (called from one thread)."""

    item: Callable[[Item], None]
    unchanged: Callable[[str], None]  # a source indexed before, confirmed unchanged
    problem: Callable[[str, str], None]  # (source, one-line reason); its previous version stays
    warning: Callable[[str], None]


@dataclass
class Collected:
    """What a source found besides its items."""

    gone: list[str] = field(default_factory=list)  # indexed sources to remove
    unsupported: dict[str, int] = field(default_factory=dict)  # kind -> count, not read


@runtime_checkable
class Source(Protocol):
    """A place documents come from (see the module docstring)."""

    kind: ClassVar[str]  # "web"

    @property
    def location(self) -> str:
        """Where it is (a URL), as it is remembered."""
        ...

    def settings(self) -> dict[str, Any]:
        """What is remembered to sync it again (JSON values)."""
        ...

    def holds(self, state: Mapping[str, Any]) -> set[str]:
        """The sources (index keys) its `state` says it indexed."""
        ...

    def collect(
        self,
        state: Mapping[str, Any],
        known: Mapping[str, FileState],
        sink: Sink,
        progress: Progress,
    ) -> Collected:
        """Find its documents, handing each to `sink`: `state` is what `state()` returned at
        the last committed sync ({} the first time or on a rebuild), `known` the index's file
        states of the sources it holds."""
        ...

    def state(self, failed: set[str]) -> dict[str, Any]:
        """What to remember until the next sync, after `collect`; `failed` are the sources
        that were not written (a problem), whose previous state must be kept."""
        ...


def source_key(source: Source) -> str:
    """The key a source is remembered under: `web:https://docs.example.com/guide/`."""
    return f"{source.kind}:{source.location}"
