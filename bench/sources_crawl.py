"""A website crawl against ingesting the same files from disk (`tether ingest URL`,
docs/sources.md).

`python bench/sources_crawl.py [CONCURRENCY]` (about a minute on 2 cores): serves Debian's
Apache HTTP Server manual (`apt-get install apache2-doc`: 244 English pages, 6.3 MB) from
/usr/share/doc/apache2-doc with a local `http.server` (ETag, Last-Modified, 304s), then
1. ingests /usr/share/doc/apache2-doc/manual/en from disk (no embeddings, parsed in this
   process), 2. crawls http://127.0.0.1:PORT/manual/en/ into a fresh index (links mode, no
   delay, CONCURRENCY requests at once, default 4), 3. crawls it again with nothing changed,
and prints the seconds of each, the crawl's pages per second and the requests answered 304.

What it cannot do: embeddings are left out (they cost the same for both, and dominate);
the server is on the same machine, so network latency is not measured.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

from tether.ingest.sources.sync import sync_source
from tether.ingest.sources.web import WebSettings, WebSource
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore

T = TypeVar("T")
ROOT = Path("/usr/share/doc/apache2-doc")
COUNTS = {"requests": 0, "304": 0}


class Manual(BaseHTTPRequestHandler):
    """The manual's files, with ETag and Last-Modified; 304 on a matching If-None-Match."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _head(self, status: int, **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()

    def do_GET(self) -> None:
        COUNTS["requests"] += 1
        path = self.path.split("?")[0]
        file = ROOT / path.lstrip("/")
        if path.endswith("/"):
            file = file / "index.html"
        if path == "/robots.txt" or not file.is_file():
            return self._head(404, Content_Length="0")
        body = file.read_bytes()
        etag = f'"{hashlib.sha1(body).hexdigest()[:16]}"'
        if self.headers.get("If-None-Match") == etag:
            COUNTS["304"] += 1
            return self._head(304, ETag=etag)
        kind = "text/html; charset=utf-8" if file.suffix == ".html" else "application/octet-stream"
        self._head(
            200, Content_Type=kind, ETag=etag, Content_Length=str(len(body)),
            Last_Modified=formatdate(int(file.stat().st_mtime), usegmt=True),
        )  # fmt: skip
        self.wfile.write(body)


def timed(run: Callable[[], T]) -> tuple[T, float]:
    """What `run` returns, and the seconds it took."""
    began = time.perf_counter()
    result = run()
    return result, time.perf_counter() - began


def main() -> None:
    concurrency = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    server = ThreadingHTTPServer(("127.0.0.1", 0), Manual)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = f"http://127.0.0.1:{server.server_address[1]}/manual/en/"
    folder, work = ROOT / "manual" / "en", Path(tempfile.mkdtemp())
    settings = WebSettings(delay=0, concurrency=concurrency, max_pages=2000, max_depth=30)

    disk_store = SqliteStore(work / "disk.sqlite")
    report, disk = timed(lambda: sync(disk_store, folder, default_access="public"))
    print(f"disk: {len(report.added)} files, {len(report.problems)} problems, {disk:.2f} s")

    web_store = SqliteStore(work / "web.sqlite")
    first = WebSource(start, settings)
    report, web = timed(lambda: sync_source(web_store, first, default_access="public"))
    s = first.summary
    print(
        f"web, first crawl: {len(report.added)} pages, {len(report.problems)} problems,"
        f" {web:.2f} s ({web / disk:.2f}x disk); the crawl alone {s.seconds:.2f} s,"
        f" {s.pages_per_s} pages/s, {s.requests} requests, {s.copies} copies"
    )
    COUNTS["requests"] = COUNTS["304"] = 0
    again = WebSource(start, settings)
    report, took = timed(lambda: sync_source(web_store, again, default_access="public"))
    print(
        f"web, nothing changed: {len(report.added)} added, {len(report.updated)} updated,"
        f" {len(report.unchanged)} unchanged in {took:.2f} s ({took / web:.1%} of the first);"
        f" {COUNTS['requests']} requests, {COUNTS['304']} answered 304,"
        f" {again.summary.fetched} pages fetched"
    )
    server.shutdown()


if __name__ == "__main__":
    main()
