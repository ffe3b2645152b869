"""What a website crawl is told (`WebSettings`, remembered with the source) and what it did
(`CrawlSummary`, the report's `crawl`).

What it cannot do: it holds no crawling logic (`tether.ingest.sources.web`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tether.errors import TetherError
from tether.ingest.sources.fetch import FetchSettings


@dataclass(frozen=True)
class WebSettings:
    """How a site is crawled; remembered with the source (`tether ingest URL` options)."""

    max_pages: int = 1000
    max_depth: int = 10
    max_page_bytes: int = 20_000_000
    max_bytes: int = 500_000_000
    delay: float = 0.5
    concurrency: int = 4
    timeout: float = 20.0
    retries: int = 2
    backoff: float = 1.0
    sitemap: bool = True  # False: follow links even when the site has a sitemap

    def __post_init__(self) -> None:
        for name in ("max_pages", "max_page_bytes", "max_bytes", "concurrency"):
            if getattr(self, name) < 1:
                raise TetherError(f"{name.replace('_', '-')} must be at least 1")
        for name in ("max_depth", "delay", "retries", "backoff"):
            if getattr(self, name) < 0:
                raise TetherError(f"{name.replace('_', '-')} must not be negative")
        if self.timeout <= 0:
            raise TetherError("timeout must be above 0 seconds")

    def fetching(self) -> FetchSettings:
        return FetchSettings(
            timeout=self.timeout,
            retries=self.retries,
            backoff=self.backoff,
            delay=self.delay,
            concurrency=self.concurrency,
        )

    @classmethod
    def of(cls, recorded: Mapping[str, Any], **given: Any) -> WebSettings:
        """Settings from a remembered source's `recorded` ones, `given` values (not None)
        winning; unknown recorded keys are ignored."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in recorded.items() if k in names}
        values.update({k: v for k, v in given.items() if v is not None})
        try:
            return cls(**values)
        except TypeError:  # a damaged record: a value of the wrong type
            raise TetherError(f"the remembered settings are damaged ({values})") from None


@dataclass
class CrawlSummary:
    """What a crawl did, for the report (`tether ingest URL --json`'s `crawl`)."""

    start: str
    mode: str = "links"  # "sitemap" or "links"
    robots: str = ""
    sitemaps: list[str] = field(default_factory=list)
    delay_s: float = 0.0
    requests: int = 0  # every request: robots.txt, sitemaps, pages, redirect hops and retries
    pages_requested: int = 0
    fetched: int = 0  # 200
    not_modified: int = 0  # 304
    failed: int = 0
    gone: int = 0  # 404 / 410
    bytes: int = 0
    seconds: float = 0.0
    pages_per_s: float = 0.0
    stopped_by: str | None = None  # the cap that stopped the crawl: max-pages, max-bytes
    not_fetched: int = 0  # pages queued when a cap stopped the crawl
    disallowed: list[str] = field(default_factory=list)  # by robots.txt (first few)
    disallowed_count: int = 0
    other_hosts: int = 0  # links to another host, not followed
    outside_path: int = 0  # links on the host but outside the start path, not followed
    too_deep: int = 0  # links past max-depth, not followed
    redirects: list[list[str]] = field(default_factory=list)  # [from, to]
    copies: int = 0  # pages read already at another URL (the same bytes, or their canonical)
    noindex: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
