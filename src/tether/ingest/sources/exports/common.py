"""What the three exports share: `ExportSource`, a `tether.ingest.sources.base.Source` over a
file the user downloaded (a Zendesk Help Center API page or folder of pages, a Confluence
space's HTML zip, a Notion workspace's Markdown & CSV zip), and `Page`, one document it holds.

An export source is remembered under what it is an export of (its `location`: a help
center's URL, a space's key, a Notion workspace), not under its file name, so a newer export
downloaded under another name replaces the older one; the path of the last one read is a
setting (`tether sync` reads it again).

A sync hands every page over (`Item`, with the page's place in the export's tree as its
`trail`); the sync skips what hashes as before, so an unchanged page is neither parsed nor
embedded. A page the index held that the export no longer holds is removed, but only within
what the export covers (`Page.scope`: a Zendesk locale, a Notion top-level page, the
Confluence space): a Zendesk export of the French articles alone leaves the English ones as
they are. A page with a problem (over the size limit) keeps its previous version.

What it cannot do: each sync reads the whole export again (a zip has no "changed since");
only the size of each page is bounded here (the archive's bounds are
`tether.ingest.sources.exports.archive`'s).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any, ClassVar

from tether.errors import ParseError
from tether.ingest.sources.base import Collected, Item, Sink
from tether.types import FileFormat, FileState, Progress

STATE_VERSION = 1


@dataclass
class Page:
    """One document of an export: where it is indexed (`source`, holding "://"), the part of
    the export it belongs to (`scope`), its bytes (read when handed over), format, metadata
    row, the pages above it (`trail`) and when it last changed."""

    source: str
    scope: str
    data: Callable[[], bytes]
    fmt: FileFormat
    row: dict[str, str] = field(default_factory=dict)
    trail: tuple[str, ...] = ()
    modified_ns: int = 0


class ExportSource:
    """The shared part of the export sources (see the module docstring); a subclass sets
    `kind` and `label`, and yields its pages from `pages`."""

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""  # "Zendesk Guide articles"

    def __init__(self, path: Path, identity: str, extra: Mapping[str, Any] | None = None) -> None:
        self.path = path.absolute()
        self.identity = identity
        self.extra: dict[str, Any] = dict(extra or {})
        self.scopes: set[str] = set()  # the parts of the export this sync covers
        self.counts: dict[str, int] = {}  # what the summary tells: "pages", "drafts"...
        self.notes: list[str] = []  # lines of the summary
        self.unsupported: dict[str, int] = {}
        self._previous: dict[str, dict[str, Any]] = {}
        self._held: dict[str, dict[str, Any]] = {}
        self._gone: set[str] = set()

    # ---- the Source protocol ----------------------------------------------------------

    @property
    def location(self) -> str:
        return self.identity

    def settings(self) -> dict[str, Any]:
        return {"path": str(self.path), **self.extra}

    def holds(self, state: Mapping[str, Any]) -> set[str]:
        return set(held_of(state))

    def collect(
        self,
        state: Mapping[str, Any],
        known: Mapping[str, FileState],
        sink: Sink,
        progress: Progress,
    ) -> Collected:
        self._previous = held_of(state)
        done = 0
        for page in self.pages(sink):
            self.scopes.add(page.scope)
            done += 1
            progress("read", done, max(done, self.expected()))
            if page.source in self._held:
                sink.warning(f"{page.source} is in the export twice; read once")
                continue
            self._held[page.source] = {"scope": page.scope}
            try:
                data = page.data()
            except ParseError as exc:  # too large: its previous version stays
                sink.problem(page.source, str(exc))
                continue
            sink.item(
                Item(page.source, data, page.fmt, page.row or None, page.modified_ns, page.trail)
            )
        self.counts["pages"] = len(self._held)
        self._gone = {
            source
            for source, record in self._previous.items()
            if source not in self._held and record.get("scope") in self.scopes
        }
        gone = sorted(s for s in self._gone if s in known)
        return Collected(gone=gone, unsupported=dict(self.unsupported))

    def state(self, failed: set[str]) -> dict[str, Any]:
        held = {  # the parts of the export this one did not cover: as they were
            s: r for s, r in self._previous.items() if s not in self._held and s not in self._gone
        }
        for source, record in self._held.items():
            if source in failed and source not in self._previous:
                continue  # never written: nothing of it to remember
            held[source] = record
        return {"version": STATE_VERSION, "held": held}

    # ---- for subclasses ---------------------------------------------------------------

    def pages(self, sink: Sink) -> Iterator[Page]:
        raise NotImplementedError

    def expected(self) -> int:
        """How many pages the export holds, as far as is known before reading them."""
        return 0

    def summary_lines(self) -> list[str]:
        """What the sync read, for the report (a line, then the notes)."""
        said = [f"{self.counts.get('pages', 0)} pages"]
        said += [f"{what}: {n}" for what, n in self.counts.items() if n and what != "pages"]
        return [
            f"read {self.label} {self.identity} from {self.path}: {', '.join(said)}",
            *self.notes,
        ]


def constant(data: bytes) -> Callable[[], bytes]:
    """A page's `data` when its bytes are at hand."""
    return lambda: data


def failing(exc: Exception) -> Callable[[], bytes]:
    """A page's `data` when its bytes cannot be had (too large): its problem."""

    def read() -> bytes:
        raise exc

    return read


def held_of(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    held = state.get("held") if state.get("version") == STATE_VERSION else None
    if not isinstance(held, dict):
        return {}
    return {s: r for s, r in held.items() if isinstance(s, str) and isinstance(r, dict)}


def iso_ns(value: Any) -> int:
    """An ISO 8601 time ("2024-03-01T10:20:30Z") in nanoseconds since the epoch; 0 when it
    is not one."""
    when = iso_time(value)
    return int(when.timestamp() * 1_000_000_000) if when else 0


def iso_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


_SPACES = re.compile(r"\s+")


def one_line(value: Any) -> str:
    """A metadata value as one clean line ("" for None)."""
    if value is None:
        return ""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", str(value))).strip()


def html_page(title: str, body: str, lang: str = "") -> bytes:
    """A page of HTML holding `body` under `title` as its `<main>` (the HTML parser reads only
    the `<main>`: the title's `<h1>` first, then the body)."""
    attr = f' lang="{escape(lang, quote=True)}"' if lang else ""
    page = (
        f'<!DOCTYPE html>\n<html{attr}><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title></head>\n<body><main><h1>{escape(title)}</h1>\n{body}\n</main></body></html>\n"
    )
    return page.encode("utf-8")
