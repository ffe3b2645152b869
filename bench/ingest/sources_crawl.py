"""A website crawl against ingesting the same files from disk (`tether ingest URL`,
docs/sources.md).

`python bench/ingest/sources_crawl.py [CONCURRENCY] [--out bench/results/sources.md]` (about a
minute on 2 cores): serves Debian's
Apache HTTP Server manual (`apt-get install apache2-doc`: 244 English pages, 6.3 MB) from
/usr/share/doc/apache2-doc with a local `http.server` (ETag, Last-Modified, 304s), then
1. ingests /usr/share/doc/apache2-doc/manual/en from disk (no embeddings, parsed in this
   process), 2. crawls http://127.0.0.1:PORT/manual/en/ into a fresh index (links mode, no
   delay, CONCURRENCY requests at once, default 4), 3. crawls it again with nothing changed,
and prints the seconds of each, the crawl's pages per second, the requests answered 304 and
the requests that were conditional (If-None-Match or If-Modified-Since). `--out PATH` also
writes them as a Markdown page, with the goals of issue #46, the date and the load average,
and its JSON beside it (the run's date, commit, machine, load and figures).

What it cannot do: embeddings are left out (they cost the same for both, and dominate);
the server is on the same machine, so network latency is not measured.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import threading
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: bench.*
from bench.harness import load_average, make_record, render_page, timed, write_record
from tether.ingest.sources.sync import sync_source
from tether.ingest.sources.web import WebSettings, WebSource
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore

ROOT = Path("/usr/share/doc/apache2-doc")
COUNTS = {"requests": 0, "304": 0, "conditional": 0, "404": 0}
UNCONDITIONAL: list[str] = []  # the paths asked for without a validator


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
        if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
            COUNTS["conditional"] += 1
        else:
            UNCONDITIONAL.append(self.path)
        path = self.path.split("?")[0]
        file = ROOT / path.lstrip("/")
        if path.endswith("/"):
            file = file / "index.html"
        if path == "/robots.txt" or not file.is_file():
            COUNTS["404"] += 1
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


def page(f: dict[str, float | int | str]) -> str:
    """The figures `main` measured, as bench/results/sources.md."""
    return f"""# Sources: a website crawl against ingesting the same files from disk

`python bench/ingest/sources_crawl.py {f["concurrency"]} --out bench/results/sources.md` on {f["date"]},
2 shared cores, load average {f["load"]} (1, 5, 15 min) at the start. Debian's Apache HTTP
Server manual (`apache2-doc`, /usr/share/doc/apache2-doc/manual/en) served by a local
`http.server` with ETags and Last-Modified; the crawl in links mode, `--delay 0`,
{f["concurrency"]} requests at once; no embeddings (they cost the same either way).

| | measured | goal (issue #46) |
|---|---|---|
| ingest from disk | {f["disk_files"]} files in {f["disk_s"]:.2f} s | |
| first crawl and ingest | {f["web_pages"]} pages in {f["web_s"]:.2f} s = **{f["ratio"]:.2f}x disk** (the crawl alone {f["crawl_s"]:.2f} s, {f["pages_per_s"]} pages/s; {f["web_requests"]} requests, {f["copies"]} copies, {f["web_404"]} answered 404) | ≤ 1.5x disk |
| re-crawl, nothing changed: pages parsed | **{f["again_fetched"]}** fetched with a body ({f["again_added"]} added, {f["again_updated"]} updated, {f["again_unchanged"]} unchanged) | 0 parsed or embedded |
| re-crawl: requests conditional | **{f["cond"]} of {f["again_requests"]}** ({f["again_304"]} answered 304; not conditional: {f["unconditional"]}) | every request |
| re-crawl: time | {f["again_s"]:.2f} s = **{f["share"]:.1%} of the first** | ≤ 10% |

Watch (not measured here; docs/ingest.md, demo collection, 38 documents, 2 shared cores,
`tether watch` with a 1 s debounce): a saved file searchable after 1.2-1.3 s (2.1 s the
first time, 5.2 s for a dense search while the embedder loads), a deleted one gone after
1.1-1.2 s; goal ≤ 10 s each.

What it cannot do: the server is on the same machine (no network latency); one run, on
shared cores, so a second run can differ by a third (docs/sources.md shows two).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="A crawl against a disk ingest.")
    parser.add_argument("concurrency", nargs="?", type=int, default=4)
    parser.add_argument(
        "--out", type=Path, help="also write the figures as Markdown (and JSON) here"
    )
    args = parser.parse_args()
    concurrency = args.concurrency
    load_before = load_average()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Manual)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = f"http://127.0.0.1:{server.server_address[1]}/manual/en/"
    folder, work = ROOT / "manual" / "en", Path(tempfile.mkdtemp())
    settings = WebSettings(delay=0, concurrency=concurrency, max_pages=2000, max_depth=30)

    disk_store = SqliteStore(work / "disk.sqlite")
    report, disk = timed(lambda: sync(disk_store, folder, default_access="public"))
    f: dict[str, float | int | str] = {"concurrency": concurrency, "load": load, "date": date}
    f.update(disk_files=len(report.added), disk_s=disk)
    print(f"disk: {len(report.added)} files, {len(report.problems)} problems, {disk:.2f} s")

    web_store = SqliteStore(work / "web.sqlite")
    first = WebSource(start, settings)
    report, web = timed(lambda: sync_source(web_store, first, default_access="public"))
    s = first.summary
    f.update(
        web_pages=len(report.added), web_s=web, ratio=web / disk, crawl_s=s.seconds,
        pages_per_s=s.pages_per_s, web_requests=s.requests, copies=s.copies,
        web_404=COUNTS["404"],
    )  # fmt: skip
    print(
        f"web, first crawl: {len(report.added)} pages, {len(report.problems)} problems,"
        f" {web:.2f} s ({web / disk:.2f}x disk); the crawl alone {s.seconds:.2f} s,"
        f" {s.pages_per_s} pages/s, {s.requests} requests, {s.copies} copies"
    )
    for key in COUNTS:
        COUNTS[key] = 0
    UNCONDITIONAL.clear()
    again = WebSource(start, settings)
    report, took = timed(lambda: sync_source(web_store, again, default_access="public"))
    f.update(
        again_added=len(report.added), again_updated=len(report.updated),
        again_unchanged=len(report.unchanged), again_s=took, share=took / web,
        again_requests=COUNTS["requests"], again_304=COUNTS["304"],
        cond=COUNTS["conditional"], again_fetched=again.summary.fetched,
        unconditional=", ".join(sorted(set(UNCONDITIONAL))) or "none",
    )  # fmt: skip
    print(
        f"web, nothing changed: {len(report.added)} added, {len(report.updated)} updated,"
        f" {len(report.unchanged)} unchanged in {took:.2f} s ({took / web:.1%} of the first);"
        f" {COUNTS['requests']} requests, {COUNTS['conditional']} conditional,"
        f" {COUNTS['304']} answered 304, {again.summary.fetched} pages fetched"
    )
    server.shutdown()
    if args.out is not None:
        record = make_record(args.out.stem, f, load_before)
        write_record(args.out.with_suffix(".json"), record)
        args.out.write_text(render_page(record, lambda r: page(r["figures"])), encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
