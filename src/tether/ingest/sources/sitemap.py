"""Sitemaps: the pages a site lists, with their `lastmod`.

`read_sitemaps(fetcher, declared, scope)` reads the sitemaps robots.txt declares (`declared`),
or else looks for `sitemap.xml` in the start URL's folder, then at the host's root. A sitemap
index leads to its sitemaps (at most `MAX_SITEMAPS` files in all). Sitemaps may be XML (the
sitemaps.org schema, any namespace), gzip-compressed XML (inflated to at most
`MAX_SITEMAP_BYTES`) or plain text (one URL a line). Only URLs on the start host and under its
path are kept; a sitemap on another host is never fetched.

`parse_sitemap(data)` reads one file: ([(url, lastmod)], [child sitemap URLs]).

What it cannot do: it does not read RSS or Atom feeds given as sitemaps, nor the image, video
or news extensions; `lastmod` is kept as the site wrote it (checked only to be a W3C date,
YYYY-MM-DD first); `changefreq` and `priority` are ignored.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from tether.ingest.sources.fetch import Fetcher
from tether.ingest.sources.links import Scope, normal, origin

MAX_SITEMAPS = 50  # sitemap files read in one crawl, indexes included
MAX_SITEMAP_BYTES = 50_000_000  # the sitemaps.org limit, uncompressed
_W3C_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?")


@dataclass
class Sitemaps:
    """What the sitemaps of a site list under the crawl's scope."""

    found: list[str] = field(default_factory=list)  # the sitemap files read
    pages: dict[str, str | None] = field(default_factory=dict)  # url -> lastmod, in order
    outside: int = 0  # URLs listed on another host or outside the start path (not crawled)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (sitemap URL, why)


def parse_sitemap(data: bytes) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The pages ((url, lastmod)) and child sitemaps of one sitemap file; `ValueError` when
    it is neither a sitemap nor a list of URLs."""
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data)
    head = data.lstrip()[:200].lower()
    if not head.startswith(b"<"):
        lines = data.decode("utf-8", errors="replace").splitlines()
        urls = [line.strip() for line in lines if line.strip().startswith(("http://", "https://"))]
        if not urls:
            raise ValueError("not a sitemap (neither XML nor a list of URLs)")
        return [(u, None) for u in urls], []
    import lxml.etree

    parser = lxml.etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, recover=True, huge_tree=False
    )
    try:
        root = lxml.etree.fromstring(data, parser=parser)
    except lxml.etree.XMLSyntaxError as exc:
        raise ValueError(f"not a sitemap ({exc})") from None
    if root is None:
        raise ValueError("not a sitemap (no XML element)")
    kind = lxml.etree.QName(root).localname
    if kind not in ("urlset", "sitemapindex"):
        raise ValueError(f"not a sitemap (its root element is <{kind}>)")
    pages: list[tuple[str, str | None]] = []
    children: list[str] = []
    for entry in root:
        if not isinstance(entry.tag, str):
            continue
        values = {
            lxml.etree.QName(child).localname: (child.text or "").strip()
            for child in entry
            if isinstance(child.tag, str)
        }
        loc = values.get("loc", "")
        if not loc:
            continue
        if lxml.etree.QName(entry).localname == "sitemap":
            children.append(loc)
        elif lxml.etree.QName(entry).localname == "url":
            lastmod = values.get("lastmod") or None
            pages.append((loc, lastmod if lastmod and _W3C_DATE.fullmatch(lastmod) else None))
    return pages, children


def _gunzip(data: bytes) -> bytes:
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    try:
        out = inflater.decompress(data, MAX_SITEMAP_BYTES + 1)
    except zlib.error as exc:
        raise ValueError(f"a gzip sitemap that cannot be inflated ({exc})") from None
    if len(out) > MAX_SITEMAP_BYTES or inflater.unconsumed_tail:
        raise ValueError(f"a sitemap over {MAX_SITEMAP_BYTES // 1_000_000} MB once inflated")
    return out


def read_sitemaps(fetcher: Fetcher, declared: list[str], scope: Scope) -> Sitemaps:
    """The pages the site's sitemaps list under `scope` (see the module docstring)."""
    result = Sitemaps()
    guessing = not declared
    candidates = declared or [scope.folder + "sitemap.xml", origin(scope.start) + "/sitemap.xml"]
    queue = list(dict.fromkeys(u for u in (normal(c) for c in candidates) if u is not None))
    seen: set[str] = set()
    while queue and len(seen) < MAX_SITEMAPS:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        if not scope.on_host(url):
            result.problems.append((url, "a sitemap on another host; not fetched"))
            continue
        got = fetcher.get(url, max_bytes=MAX_SITEMAP_BYTES)
        if got.status != 200 or got.problem:
            if not (guessing and got.status in (404, 410)):
                result.problems.append((url, got.problem or f"HTTP {got.status}"))
            continue
        try:
            pages, children = parse_sitemap(got.body)
        except ValueError as exc:
            if not guessing:
                result.problems.append((url, str(exc)))
            continue
        result.found.append(url)
        for loc, lastmod in pages:
            page = normal(loc)
            if page is None or not scope.within(page):
                result.outside += 1
            else:
                result.pages.setdefault(page, lastmod)
        queue.extend(c for c in (normal(child) for child in children) if c is not None)
        if guessing and not children:
            break  # the folder's sitemap is the site's: the root's is not looked for
    if queue:
        result.problems.append(
            (queue[0], f"more than {MAX_SITEMAPS} sitemap files; the rest are not read")
        )
    return result
