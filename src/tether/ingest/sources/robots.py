"""robots.txt, read once per crawl with Protego, as RFC 9309 says.

`read_robots(fetcher, origin)` returns the `Robots` of the host:
- 200: its rules, parsed by Protego and matched against tether's token (`ROBOTS_TOKEN`);
  the `Crawl-delay` of the group that applies and the `Sitemap:` lines are read too;
- a 4xx (404 included): no robots.txt, everything may be fetched;
- a 5xx or 429 after retries: the host asks not to be crawled now (RFC 9309: assume
  everything is disallowed), so the crawl stops with `UpstreamError` before changing anything;
- no response at all (refused, timed out, a TLS error): the site cannot be reached, the same
  error, said in one line;
- a redirect to another host: not followed (a crawl never leaves its host), so read as no
  robots.txt, and said in the crawl's notes.

What it cannot do: it reads the host's robots.txt only (a redirect within the host is
followed); rules are read as Protego reads them (longest match, `Allow` winning ties, `*`
and `$` patterns); `Request-rate` and `Visit-time` are not obeyed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protego import Protego

from tether.errors import UpstreamError
from tether.ingest.sources.fetch import ROBOTS_TOKEN, Fetcher

MAX_ROBOTS_BYTES = 2_000_000  # RFC 9309 asks that at least 500 KiB be read
MAX_CRAWL_DELAY_S = 60.0  # a longer Crawl-delay is read as this


@dataclass
class Robots:
    """What a host's robots.txt allows (`rules` None: everything)."""

    rules: Protego | None = None
    note: str = ""  # how it was read, for the crawl's notes
    sitemaps: list[str] = field(default_factory=list)

    def allowed(self, url: str) -> bool:
        return self.rules is None or bool(self.rules.can_fetch(url, ROBOTS_TOKEN))

    def crawl_delay(self) -> float | None:
        """The Crawl-delay that applies to tether (capped at `MAX_CRAWL_DELAY_S`), or None."""
        if self.rules is None:
            return None
        delay = self.rules.crawl_delay(ROBOTS_TOKEN)
        return None if delay is None else min(float(delay), MAX_CRAWL_DELAY_S)


def read_robots(fetcher: Fetcher, origin: str) -> Robots:
    """The robots.txt of `origin` (`https://host[:port]`); see the module docstring."""
    url = origin.rstrip("/") + "/robots.txt"
    got = fetcher.get(url, max_bytes=MAX_ROBOTS_BYTES)
    if got.problem and 300 <= got.status < 400:  # a hop refused: another host, or too many
        return Robots(note=f"robots.txt not read ({got.problem}): everything is allowed")
    if got.status == 0:
        raise UpstreamError(f"cannot reach {origin}: {got.problem}")
    if got.problem and (got.status >= 500 or got.status == 429):
        raise UpstreamError(
            f"{url} answered {got.problem}: the site asks not to be crawled now (RFC 9309);"
            " nothing was fetched or changed"
        )
    if got.problem:  # the file is over the size limit
        raise UpstreamError(f"{url} cannot be read: {got.problem}")
    if got.status != 200:
        return Robots(note=f"no robots.txt (HTTP {got.status}): everything is allowed")
    rules = Protego.parse(got.body.decode("utf-8", errors="replace"))
    return Robots(rules, "robots.txt read", [str(s) for s in rules.sitemaps])
