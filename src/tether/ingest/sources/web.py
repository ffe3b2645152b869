"""A website as a source: `tether ingest https://docs.example.com/guide/`.

`WebSource(url, WebSettings(...))` is a `tether.ingest.sources.base.Source`. Its `collect`:
1. reads the host's robots.txt (`tether.ingest.sources.robots`; a site that cannot be reached
   stops the sync with one line, before anything changes) and takes its Crawl-delay when it
   is longer than `delay`;
2. reads the site's sitemaps (`tether.ingest.sources.sitemap`): when they list pages under
   the start URL's path, those pages are the crawl ("sitemap" mode); else it follows links
   from the start URL, breadth first, staying under its path ("links" mode);
3. fetches pages `concurrency` at a time through one `Fetcher` (`delay` seconds between
   request starts), never outside the start host, never a path robots.txt disallows, never a
   link to an image, style sheet, script or archive;
4. hands each page over as an `Item` under its URL: the `<link rel=canonical>` when it is on
   the same host, else where redirects ended (they are followed within the host and listed in
   the summary); the format comes from the Content-Type (HTML, PDF, DOCX, Markdown, text);
   a page marked `<meta name=robots content=noindex>` is not indexed, and one marked
   `nofollow` leads nowhere.

Incremental: the state it leaves in the index holds each page's ETag, Last-Modified, depth,
sitemap `lastmod` and source; the next crawl sends `If-None-Match` / `If-Modified-Since`
for each page the index holds, so an unchanged page costs a 304 and is neither parsed nor
embedded. In links mode, the pages of the last crawl are fetched again even when no changed
page links to them (an unchanged page's links are not read again).

Gone: a page the index holds that answers 404 or 410 stays at the first sync that finds it
gone (a problem says so) and is removed at the second in a row; one dropped from the
sitemap, now disallowed by robots.txt, marked noindex, or now indexed under another URL
(its canonical or redirect changed) is removed at once.

One page, one document: a page whose bytes were already read at another URL (`/guide/` and
`/guide/index.html`), or whose canonical URL was, is a copy, counted and not indexed again;
the first URL read keeps it.

Caps (`WebSettings`): `max_pages` page requests, `max_depth` links from the start URL,
`max_page_bytes` per page, `max_bytes` in all; a crawl stopped by a cap keeps the previous
version of every page it did not reach, and the summary says which cap stopped it.

What it cannot do: no JavaScript (a page built by scripts yields its static HTML); no login;
in links mode a page still served but no longer linked from anywhere stays until it is gone;
the sitemap's `lastmod` and `<meta name=description>` are kept in the crawl's state and
summary, not as document fields (a document has none for them).
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from typing import Any, ClassVar

from tether.errors import TetherError, UpstreamError
from tether.ingest.sources.base import Collected, Item, Sink
from tether.ingest.sources.fetch import Fetched, Fetcher
from tether.ingest.sources.links import (
    Scope,
    format_for,
    media_type,
    normal,
    origin,
    page_links,
    same_host,
    skippable,
)
from tether.ingest.sources.robots import Robots, read_robots
from tether.ingest.sources.sitemap import read_sitemaps
from tether.ingest.sources.web_settings import CrawlSummary, WebSettings
from tether.types import FileState, Progress

GONE_AFTER = 2  # syncs in a row a page must answer 404/410 before it is removed
STATE_VERSION = 1
EXAMPLES = 5  # URLs named for each kind of page left out


class WebSource:
    """A website under a start URL (see the module docstring)."""

    kind: ClassVar[str] = "web"

    def __init__(self, url: str, settings: WebSettings | None = None) -> None:
        start = normal(url)
        if start is None:
            raise TetherError(f"not an http(s) URL: {url}")
        self.start = start
        self.scope = Scope(start)
        self.options = settings or WebSettings()
        self.summary = CrawlSummary(start)
        self._pages: dict[str, dict[str, Any]] = {}  # url -> its record, this crawl
        self._previous: dict[str, dict[str, Any]] = {}
        self._visited: set[str] = set()
        self._fresh: set[str] = set()  # URLs whose record holds this crawl's validators (200)
        self._gone: set[str] = set()

    @property
    def location(self) -> str:
        return self.start

    def settings(self) -> dict[str, Any]:
        return asdict(self.options)

    def holds(self, state: Mapping[str, Any]) -> set[str]:
        return {r["source"] for r in _pages_of(state).values() if r.get("kind") == "page"}

    def state(self, failed: set[str]) -> dict[str, Any]:
        pages: dict[str, dict[str, Any]] = {  # not reached (a cap): as they were
            url: record
            for url, record in self._previous.items()
            if url not in self._visited and record["source"] not in self._gone
        }
        for url, record in self._pages.items():
            if url in self._fresh and record["source"] in failed:
                # not written (a parse problem, a doc_id another page holds): its new
                # validators must not stand, or the next crawl would take it as unchanged
                old = self._previous.get(url)
                pages[url] = old or {
                    **record,
                    "kind": "problem",
                    "etag": None,
                    "last_modified": None,
                }
                continue
            pages[url] = record
        return {"version": STATE_VERSION, "mode": self.summary.mode, "pages": pages}

    def collect(
        self,
        state: Mapping[str, Any],
        known: Mapping[str, FileState],
        sink: Sink,
        progress: Progress,
    ) -> Collected:
        began = time.perf_counter()
        self._previous = _pages_of(state)
        crawl = _Crawl(self, known, sink, progress)
        with Fetcher(
            self.options.fetching(), on_host=self.scope.on_host, allowed=crawl.allowed
        ) as fetcher:
            try:
                crawl.run(fetcher)
                self._gone = set(crawl.collected.gone)
            finally:
                s = self.summary
                s.requests, s.bytes = fetcher.requests, fetcher.bytes
                s.seconds = round(time.perf_counter() - began, 3)
                done = s.fetched + s.not_modified
                s.pages_per_s = round(done / s.seconds, 2) if s.seconds else 0.0
        return crawl.collected


def _pages_of(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    pages = state.get("pages") if state.get("version") == STATE_VERSION else None
    if not isinstance(pages, dict):
        return {}
    return {
        u: r for u, r in pages.items() if isinstance(r, dict) and isinstance(r.get("source"), str)
    }


class _Crawl:
    """One crawl's queue and bookkeeping (the main thread's; fetches run in a pool)."""

    def __init__(
        self, web: WebSource, known: Mapping[str, FileState], sink: Sink, progress: Progress
    ) -> None:
        self.web, self.known, self.sink, self.progress = web, known, sink, progress
        self.s = web.summary
        self.opts = web.options
        self.robots = Robots()
        self.collected = Collected()
        self.queue: deque[tuple[str, int, str | None]] = deque()  # url, depth, linked from
        self.queued: set[str] = set()
        self.emitted: dict[str, str] = {}  # source -> the URL it was read from
        self.bodies: dict[bytes, str] = {}  # sha256 of a page's bytes -> its source
        self.left_out: set[str] = set()  # links not followed, counted once each
        self.lastmod: dict[str, str | None] = {}
        self.follow = True
        self.start_problem: str | None = None

    def allowed(self, url: str) -> bool:
        return self.robots.allowed(url)

    def run(self, fetcher: Fetcher) -> None:
        web, s = self.web, self.s
        self.robots = read_robots(fetcher, origin(web.start))
        s.robots = self.robots.note
        delay = max(self.opts.delay, self.robots.crawl_delay() or 0.0)
        fetcher.delay = s.delay_s = delay
        if delay > self.opts.delay:
            s.notes.append(f"robots.txt asks for {delay:g} s between requests: obeyed")
        listed: dict[str, str | None] = {}
        if self.opts.sitemap:
            maps = read_sitemaps(fetcher, self.robots.sitemaps, web.scope)
            s.sitemaps = maps.found
            listed = maps.pages
            for url, why in maps.problems:
                self.sink.warning(f"sitemap {url}: {why}")
            if maps.found and not listed:
                s.notes.append("the sitemap lists no page under the start path: links followed")
        previous = web._previous
        if listed:
            s.mode, self.follow, self.lastmod = "sitemap", False, listed
            for url in listed:
                self._enqueue(url, 1, None, previous)
            for url, record in previous.items():  # dropped from the sitemap
                if url not in listed and record.get("kind") == "page":
                    self.collected.gone.append(record["source"])
        else:
            self._enqueue(web.start, 0, None, previous)
            for url, record in sorted(previous.items(), key=lambda kv: kv[1].get("depth", 0)):
                self._enqueue(url, int(record.get("depth", 1)), None, previous)
        if not previous and not self.robots.allowed(web.start):
            raise TetherError(f"robots.txt disallows {web.start} to tether; nothing was crawled")
        self._fetch_all(fetcher)
        self._finish()
        if not previous and s.fetched + s.not_modified == 0 and self.start_problem:
            raise UpstreamError(f"{web.start}: {self.start_problem}; nothing was crawled")

    def _enqueue(
        self, url: str, depth: int, via: str | None, previous: Mapping[str, Any] | None = None
    ) -> None:
        if url in self.queued:
            return
        if not self.web.scope.within(url):
            if url not in self.left_out:
                self.left_out.add(url)
                if self.web.scope.on_host(url):
                    self.s.outside_path += 1
                else:
                    self.s.other_hosts += 1
            self._drop_recorded(url, previous)
            return
        if skippable(url):
            return
        if depth > self.opts.max_depth:
            if url not in self.left_out:
                self.left_out.add(url)
                self.s.too_deep += 1
            return
        self.queued.add(url)
        if not self.robots.allowed(url):
            self.s.disallowed_count += 1
            if len(self.s.disallowed) < EXAMPLES:
                self.s.disallowed.append(url)
            self._drop_recorded(url, previous)
            return
        self.queue.append((url, depth, via))

    def _drop_recorded(self, url: str, previous: Mapping[str, Any] | None) -> None:
        record = (previous or {}).get(url)
        if record is not None and record.get("kind") == "page":
            self.collected.gone.append(record["source"])

    def _fetch_all(self, fetcher: Fetcher) -> None:
        opts, s = self.opts, self.s
        inflight: dict[Future[Fetched], tuple[str, int, str | None]] = {}
        done_count = 0
        pool = ThreadPoolExecutor(max_workers=opts.concurrency, thread_name_prefix="crawl")
        try:
            while True:
                while self.queue and len(inflight) < opts.concurrency and s.stopped_by is None:
                    if s.pages_requested >= opts.max_pages:
                        s.stopped_by = "max-pages"
                        break
                    if fetcher.bytes >= opts.max_bytes:
                        s.stopped_by = "max-bytes"
                        break
                    url, depth, via = self.queue.popleft()
                    etag, modified = self._validators(self.web._previous.get(url, {}))
                    future = pool.submit(
                        fetcher.get,
                        url,
                        etag=etag,
                        last_modified=modified,
                        max_bytes=opts.max_page_bytes,
                    )
                    inflight[future] = (url, depth, via)
                    s.pages_requested += 1
                if not inflight:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for future in finished:
                    url, depth, via = inflight.pop(future)
                    self._handle(url, depth, via, future.result())
                    done_count += 1
                self.progress("fetch", done_count, done_count + len(inflight) + len(self.queue))
        except BaseException:  # Ctrl-C, a failed parse window: stop now, not at the timeouts
            pool.shutdown(wait=False, cancel_futures=True)
            fetcher.close()  # requests in flight fail at once
            raise
        pool.shutdown()
        if s.stopped_by is not None:
            s.not_fetched = len(self.queue)
            cap = {"max-pages": opts.max_pages, "max-bytes": opts.max_bytes}[s.stopped_by]
            self.sink.warning(
                f"the crawl stopped at --{s.stopped_by} {cap:,}: {s.not_fetched} queued pages"
                " were not fetched (those indexed before keep their previous version)"
            )
        if s.too_deep:
            self.sink.warning(
                f"{s.too_deep} link{'s' if s.too_deep != 1 else ''} deeper than --max-depth"
                f" {opts.max_depth} {'were' if s.too_deep != 1 else 'was'} not followed"
                " (raise --max-depth to read them)"
            )

    def _validators(self, record: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """The validators to send: only for a page whose document the index holds (else
        its bytes are needed), or a page that is not a document (noindex, another type)."""
        if record.get("kind") == "page" and record.get("source") not in self.known:
            return None, None
        return record.get("etag"), record.get("last_modified")

    def _handle(self, url: str, depth: int, via: str | None, got: Fetched) -> None:
        s, previous = self.s, self.web._previous.get(url)
        self.web._visited.add(url)
        if url == self.web.start and (got.problem or got.status not in (200, 304)):
            self.start_problem = got.problem or f"HTTP {got.status}"
        if got.redirects and got.final != url and got.problem is None:
            s.redirects.append([url, got.final])
        if got.problem is not None:
            s.failed += 1
            self._problem(url, depth, previous, got.problem, via)
        elif got.status == 304 and previous is not None:
            s.not_modified += 1
            self.web._pages[url] = {**previous, "depth": depth}
            if previous.get("kind") == "page":
                self.emitted.setdefault(previous["source"], url)
                self.sink.unchanged(previous["source"])
            elif previous.get("type"):
                kind = previous["type"]
                self.collected.unsupported[kind] = self.collected.unsupported.get(kind, 0) + 1
        elif got.status in (404, 410):
            s.gone += 1
            self._gone(url, previous, got, via)
        elif got.status != 200:
            s.failed += 1
            self._problem(url, depth, previous, f"HTTP {got.status}", via)
        else:
            s.fetched += 1
            self._page(url, depth, got, previous)

    def _problem(
        self,
        url: str,
        depth: int,
        previous: Mapping[str, Any] | None,
        problem: str,
        via: str | None,
    ) -> None:
        """A page that could not be read: its previous record stands (tried again next
        time, from where it stood); one never read is recorded to be tried again too, even
        when the page that links to it is unchanged."""
        if previous is not None:
            self.web._pages[url] = dict(previous)
        else:
            self.web._pages[url] = {"kind": "problem", "source": url, "depth": depth}
        source = previous["source"] if previous and previous.get("kind") == "page" else url
        linked = f" (linked from {via})" if via and source not in self.known else ""
        self.sink.problem(source, f"{problem}{linked}")

    def _gone(
        self, url: str, previous: Mapping[str, Any] | None, got: Fetched, via: str | None
    ) -> None:
        said = f"HTTP {got.status} {'Not Found' if got.status == 404 else 'Gone'}"
        if previous is None or previous.get("kind") != "page":
            linked = f" (linked from {via})" if via else ""
            self.sink.problem(url, f"{said}{linked}")
            return
        source = previous["source"]
        missing = int(previous.get("missing", 0)) + 1
        if missing >= GONE_AFTER or source not in self.known:
            self.collected.gone.append(source)
            return
        self.web._pages[url] = {**previous, "missing": missing, "etag": None, "last_modified": None}
        self.sink.problem(
            source,
            f"{said}: gone at this sync; its previous version is kept, and removed if it is"
            " still gone at the next one",
        )

    def _page(self, url: str, depth: int, got: Fetched, previous: Mapping[str, Any] | None) -> None:
        s, final = self.s, normal(got.final) or got.final
        fmt = format_for(got.content_type, final)
        record: dict[str, Any] = {
            "kind": "page",
            "source": final,
            "etag": got.etag,
            "last_modified": got.last_modified,
            "depth": depth,
            "lastmod": self.lastmod.get(url),
        }
        if final != url:
            self.queued.add(final)  # reached: not fetched again
        noindex = False
        if fmt == "html":
            links = page_links(got.body, final)
            if links.canonical and same_host(links.canonical, final):
                record["source"] = links.canonical
                self.queued.add(links.canonical)  # its content is this page's
            if links.description:
                record["description"] = links.description
            noindex = links.noindex
            if self.follow and not links.nofollow:
                for link in links.links:
                    self._enqueue(link, depth + 1, final)
        source = record["source"]
        old = previous.get("source") if previous and previous.get("kind") == "page" else None
        if fmt is None or noindex:
            kind = media_type(got.content_type) if fmt is None else ""
            if fmt is None:
                self.collected.unsupported[kind] = self.collected.unsupported.get(kind, 0) + 1
            else:
                s.noindex += 1
            self.web._pages[url] = {**record, "kind": "other", "type": kind}
            if old is not None:
                self.collected.gone.append(old)
            return
        digest = hashlib.sha256(got.body).digest()
        if self.bodies.setdefault(digest, source) != source or (
            source in self.emitted and self.emitted[source] != url
        ):  # `/guide/` and `/guide/index.html`, or a print view naming its page canonical
            s.copies += 1
            return
        if old is not None and old != source:  # now indexed under another URL
            self.collected.gone.append(old)
        self.emitted[source] = url
        self.web._pages[url] = record
        self.web._fresh.add(url)
        self.sink.item(Item(source, got.body, fmt, None, got.modified_ns))

    def _finish(self) -> None:
        """Sources recorded as gone that another URL still produced are not gone."""
        self.collected.gone = sorted(
            {g for g in self.collected.gone if g not in self.emitted and g in self.known}
        )
