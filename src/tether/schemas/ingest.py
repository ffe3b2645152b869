"""Wire models of an ingest: the `IngestReport` of one `tether ingest`, its
`WireFileProblem`s, and for a website what its `Crawl` did.

What it cannot do: it converts a `SyncReport` (and a crawl's report, built by the CLI); it
ingests nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict

from tether.schemas.base import Wire, fields_of

if TYPE_CHECKING:
    from tether import types


class WireFileProblem(Wire):
    """A file that could not be ingested, and why."""

    model_config = ConfigDict(title="FileProblem")
    __qualname__ = "FileProblem"  # the name clients see (see `Wire`)

    source: str
    reason: str


class Crawl(Wire):
    """What the crawl of a website did (`tether ingest URL`): how it found pages (`sitemap` or
    `links`), its requests, pages by answer (`fetched` 200, `not_modified` 304, `gone` 404 or
    410, `failed`), bytes and time, the cap that stopped it if any, what it left out
    (disallowed by robots.txt, links to other hosts or outside the start path or past the
    depth cap), the redirects followed ([from, to]) and its notes."""

    start: str
    mode: Literal["sitemap", "links"]
    robots: str
    sitemaps: list[str]
    delay_s: float
    requests: int
    pages_requested: int
    fetched: int
    not_modified: int
    failed: int
    gone: int
    bytes: int
    seconds: float
    pages_per_s: float
    stopped_by: str | None
    not_fetched: int
    disallowed: list[str]  # the first few, of `disallowed_count`
    disallowed_count: int
    other_hosts: int
    outside_path: int
    too_deep: int
    redirects: list[list[str]]
    copies: int  # pages read already at another URL (same bytes, or canonical)
    noindex: int
    notes: list[str]


class IngestReport(Wire):
    """What one `ingest` did: the files added, updated, removed and unchanged (by source
    path, or a page's URL), the files it could not read, the warnings, and whether it was
    written; for a website, what its crawl did (`crawl`)."""

    index: str
    added: list[str]
    updated: list[str]
    removed: list[str]
    unchanged: list[str]
    problems: list[WireFileProblem]
    warnings: list[str]
    instructions: list[str]  # sources written that hold text addressed to AI assistants
    unlabelled: list[str]  # sources read this time that carry no access label...
    default_access: str  # ...and what they were indexed as
    unsupported: dict[str, int]  # files of a type tether does not read, by suffix
    chunks_written: int
    seconds: float  # reading, parsing, embedding and writing
    committed: bool
    calibration_seconds: float = 0.0  # the fusion and gate calibrations after the sync
    inventory_rows: int | None = None  # rows of the folder's inventory.csv (null: it has none)
    inventory_matched: int = 0  # of them, rows naming a file found (the others: warnings)
    crawl: Crawl | None = None  # a website's crawl (null: a folder)

    @classmethod
    def from_report(
        cls, r: types.SyncReport, index: str, crawl: Crawl | None = None
    ) -> IngestReport:
        problems = [WireFileProblem(source=p.source, reason=p.reason) for p in r.problems]
        rest = fields_of(r, cls, skip=("index", "problems", "unsupported", "crawl"))
        return cls(
            index=index, problems=problems, unsupported=dict(r.unsupported), crawl=crawl, **rest
        )
