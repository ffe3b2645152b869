"""A website as a source, against real parts: a real HTTP server (`http.server` in a thread)
serving a copy of a real public manual (tests/fixtures/website: nine pages of the Apache
HTTP Server manual, Apache-2.0), with what a crawl must cope with added around it: ETag and
Last-Modified, robots.txt with a Disallow rule, a sitemap, a redirect, a 404, a link and a
redirect to another host (a second server, whose log must stay empty), a slow page, a PDF
served without a suffix, and a page that names another as canonical. Nothing of the
crawler's HTTP is mocked; the tests read the servers' logs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from tether import schemas
from tether.app import SearchOptions, Workspace
from tether.cli import app
from tether.errors import TetherError, UpstreamError
from tether.ingest.sources import source_at
from tether.ingest.sources.web import WebSettings, WebSource
from tether.types import SyncReport

MANUAL = Path(__file__).parents[1] / "fixtures" / "website"
HOWTO = "/manual/en/howto/"
PAGES = sorted(p.name for p in (MANUAL / HOWTO.strip("/")).glob("*.html"))
FAST = WebSettings(delay=0, timeout=1.0, retries=0, backoff=0)
EPOCH = 1_700_000_000  # the manual's pages' Last-Modified, one second apart


@dataclass
class Hit:
    path: str
    host: str
    agent: str
    etag: str | None
    since: str | None
    status: int = 0


@dataclass
class Site:
    """What the test server serves and what it was asked (`log`)."""

    other: str = ""  # the other host's base URL (http://localhost:PORT)
    log: list[Hit] = field(default_factory=list)
    removed: set[str] = field(default_factory=set)  # paths answering 404
    changed: dict[str, bytes] = field(default_factory=dict)  # path -> new body
    sitemap: bool = False
    robots_elsewhere: bool = False  # robots.txt redirects to the other host
    unlisted: set[str] = field(default_factory=set)  # pages left out of the sitemap
    fail_first: dict[str, int] = field(default_factory=dict)  # path -> 503s before a 200
    slow_s: float = 3.0
    url: str = ""
    elsewhere: list[str] = field(default_factory=list)  # what the other host was asked
    extras: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # `_extras`

    @property
    def start(self) -> str:
        return self.url + HOWTO

    def asked(self, path: str) -> list[Hit]:
        return [h for h in self.log if h.path == path]

    def pages_asked(self) -> list[Hit]:
        return [h for h in self.log if h.path.startswith(HOWTO) and "sitemap" not in h.path]


def _extras(site: Site) -> dict[str, tuple[str, bytes]]:
    """The pages the test adds beside the manual: path -> (content type, body)."""
    hub = f"""<!DOCTYPE html><html lang="en"><head><title>Extras</title>
<meta name="description" content="Pages a crawler must cope with"></head><body><main>
<h1>Extras</h1><p>Hub of the test site's additions.</p><ul>
<li><a href="private/secret.html">secret</a></li><li><a href="old-name.html">old</a></li>
<li><a href="missing.html">missing</a></li><li><a href="slow.html">slow</a></li>
<li><a href="offsite.html">offsite</a></li><li><a href="{site.other}/trap.html">trap</a></li>
<li><a href="../../mod/mod_rewrite.html">outside</a></li><li><a href="logo.png">logo</a></li>
<li><a href="handbook">handbook</a></li><li><a href="print-cgi.html">print</a></li>
<li><a href="flaky.html">flaky</a></li></ul></main></body></html>"""
    moved = """<!DOCTYPE html><html lang="en"><head><title>Moved page</title></head><body>
<main><h1>Moved</h1><p id="zebra">The page that used to be called old-name now lives here;
its zebra crossing protocol sentence is unique to it.</p></main></body></html>"""
    cgi = (MANUAL / HOWTO.strip("/") / "cgi.html").read_bytes()
    printed = cgi.replace(b"<head>", b'<head><link rel="canonical" href="cgi.html">', 1)
    flaky = b"""<html lang="en"><head><title>Flaky</title></head><body><main><h1>Flaky</h1>
<p>This page answered 503 before it answered; the word quokka marks it.</p></main></body></html>"""
    html = "text/html; charset=utf-8"
    return {
        HOWTO + "extras.html": (html, hub.encode()),
        HOWTO + "moved.html": (html, moved.encode()),
        HOWTO + "private/secret.html": (html, b"<html><body><p>secret</p></body></html>"),
        HOWTO + "handbook": ("application/pdf", _pdf()),
        HOWTO + "print-cgi.html": (html, printed),
        HOWTO + "flaky.html": (html, flaky),
    }


def _pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, "Handbook. The narwhal clause of this handbook is served as a PDF.")
    return bytes(pdf.output())


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            hit = Hit(
                self.path, self.headers.get("Host", ""), self.headers.get("User-Agent", ""),
                self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since"),
            )  # fmt: skip
            site.log.append(hit)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(hit)  # the crawler may have given up waiting (the slow page)

        def _send(self, hit: Hit, status: int, body: bytes = b"", **headers: str) -> None:
            hit.status = status
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self, hit: Hit) -> None:
            path = hit.path
            if path == "/robots.txt" and site.robots_elsewhere:
                return self._send(hit, 301, Location=f"{site.other}/robots.txt")
            if path == "/robots.txt":
                text = f"User-agent: *\nDisallow: {HOWTO}private/\n"
                if site.sitemap:
                    text += f"Sitemap: {site.url}{HOWTO}sitemap.xml\n"
                return self._send(hit, 200, text.encode(), Content_Type="text/plain")
            if path in site.removed:
                return self._send(hit, 404, b"gone", Content_Type="text/plain")
            if path == HOWTO + "sitemap.xml" and site.sitemap:
                return self._send(hit, 200, _sitemap(site), Content_Type="application/xml")
            if path == HOWTO + "old-name.html":
                return self._send(hit, 301, Location="moved.html")
            if path == HOWTO + "offsite.html":
                return self._send(hit, 302, Location=f"{site.other}/landing.html")
            if path == HOWTO + "slow.html":
                time.sleep(site.slow_s)
                return self._send(hit, 200, b"<p>late</p>", Content_Type="text/html")
            if site.fail_first.get(path, 0) > 0:
                site.fail_first[path] -= 1
                return self._send(hit, 503, b"busy", Content_Type="text/plain")
            found = self._body(path)
            if found is None:
                return self._send(hit, 404, b"not found", Content_Type="text/plain")
            kind, body, modified = found
            etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
            stamp = formatdate(modified, usegmt=True)
            if hit.etag == etag or (
                hit.etag is None
                and hit.since
                and parsedate_to_datetime(hit.since).timestamp() >= modified
            ):
                return self._send(hit, 304, ETag=etag, Last_Modified=stamp)
            self._send(hit, 200, body, Content_Type=kind, ETag=etag, Last_Modified=stamp)

        def _body(self, path: str) -> tuple[str, bytes, int] | None:
            if path in site.changed:
                return "text/html; charset=utf-8", site.changed[path], EPOCH + 10_000
            if path in site.extras:
                return (*site.extras[path], EPOCH)
            name = "index.html" if path == HOWTO else path.removeprefix(HOWTO)
            if not path.startswith(HOWTO) or name not in PAGES:
                return None
            body = (MANUAL / HOWTO.strip("/") / name).read_bytes()
            if name == "index.html":  # the manual's index also leads to the test's additions
                body = body.replace(b"</body>", b'<p><a href="extras.html">Extras</a></p></body>')
            return "text/html; charset=utf-8", body, EPOCH + PAGES.index(name)

    return Handler


def _sitemap(site: Site) -> bytes:
    urls = "".join(
        f"<url><loc>{site.url}{HOWTO}{name}</loc><lastmod>2024-0{i % 9 + 1}-01</lastmod></url>"
        for i, name in enumerate(PAGES)
        if HOWTO + name not in site.unlisted
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}'
        f"<url><loc>{site.other}/elsewhere.html</loc></url></urlset>"
    ).encode()


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.block_on_close = False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def site() -> Iterator[Site]:
    """The manual on http://127.0.0.1:PORT, and another host (http://localhost:PORT2) that
    records every request it gets (`site.elsewhere`)."""
    state = Site()
    elsewhere = state.elsewhere

    class Other(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            elsewhere.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<p>another host</p>")

    other, other_port = _serve(Other)
    main, port = _serve(_handler(state))
    state.url, state.other = f"http://127.0.0.1:{port}", f"http://localhost:{other_port}"
    state.extras = _extras(state)
    yield state
    for server in (main, other):
        server.shutdown()
        server.server_close()


def _sync(
    index: Path, url: str, settings: WebSettings | None = FAST, **options: Any
) -> tuple[SyncReport, WebSource]:
    """One `tether ingest URL` through the Workspace (BM25 only, parsed in this process)."""
    ws = Workspace.open(index, create=True)
    try:
        source = WebSource(url, settings) if settings else source_at(ws.store, url)
        assert isinstance(source, WebSource)
        options = {"embed": False, "default_access": "public", "executor": "serial", **options}
        return ws.ingest(source, **options), source
    finally:
        ws.close()


def _url(site: Site, name: str) -> str:
    return site.url + HOWTO + name


def test_a_first_crawl_indexes_the_manual_and_stays_inside_its_fences(site: Site, tmp_path: Path):
    report, source = _sync(tmp_path / "i.sqlite", site.start)
    s = source.summary
    added = set(report.added)
    manual = {_url(site, n) for n in PAGES if n != "index.html"} | {site.start}
    assert manual <= added, sorted(manual - added)
    assert _url(site, "moved.html") in added and _url(site, "handbook") in added
    assert _url(site, "flaky.html") in added
    # robots.txt's Disallow: never asked; another host: never asked, link or redirect
    assert not site.asked(HOWTO + "private/secret.html") and s.disallowed_count == 1
    assert site.elsewhere == []
    assert s.other_hosts >= 1 and s.outside_path >= 1
    assert not [h for h in site.log if not h.path.startswith(HOWTO) and h.path != "/robots.txt"
                and h.path != "/sitemap.xml"]  # fmt: skip
    assert not site.asked(HOWTO + "logo.png")  # an image is never a document
    assert all(h.agent.startswith("tether/") for h in site.log)
    problems = {p.source: p.reason for p in report.problems}
    assert problems[_url(site, "missing.html")].startswith("HTTP 404 Not Found (linked from")
    assert problems[_url(site, "slow.html")] == (
        f"timed out after 1 s (linked from {_url(site, 'extras.html')})"
    )
    assert problems[_url(site, "offsite.html")].startswith(
        f"redirected to another host ({site.other}/landing.html); not followed"
    )
    assert len(problems) == 3, problems
    assert [_url(site, "old-name.html"), _url(site, "moved.html")] in s.redirects
    # the print page names cgi.html as canonical: one document, under the canonical URL
    assert _url(site, "print-cgi.html") not in added and s.copies == 2
    assert s.mode == "links" and s.fetched == len(added) + 2  # + the print copy and the hub

    ws = Workspace.open(tmp_path / "i.sqlite")
    docs = {d.meta.source: d.meta for d in ws.documents()}
    auth = docs[_url(site, "auth.html")]
    assert (auth.doc_id, auth.language, auth.format) == ("manual/en/howto/auth", "en", "html")
    assert auth.title.startswith("Authentication and Authorization")
    assert docs[site.start].doc_id == "manual/en/howto/index"
    assert docs[_url(site, "handbook")].format == "pdf"
    hits = ws.search("narwhal clause", SearchOptions(method="bm25"))
    assert hits and hits[0].chunk.meta.source == _url(site, "handbook")
    sentence = "Authentication is any process by which you verify that someone is who they"
    (hit,) = ws.search(f'"{sentence}"', SearchOptions(method="bm25", k=1))
    # a passage carries the page's URL and an anchor of the live page
    assert hit.chunk.meta.source.startswith(site.url + HOWTO)
    page = (MANUAL / HOWTO.strip("/") / hit.chunk.meta.source.rsplit("/", 1)[-1]).read_text()
    assert hit.chunk.anchor and f'id="{hit.chunk.anchor}"' in page
    ws.close()


def test_a_second_crawl_costs_304s_and_parses_nothing(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index = tmp_path / "i.sqlite"
    first, _ = _sync(index, site.start)
    parsed: list[str] = []
    import tether.ingest.executor as executor

    real = executor.parse_task
    monkeypatch.setattr(executor, "parse_task", lambda t: parsed.append(t.state.source) or real(t))
    site.log.clear()
    began = time.perf_counter()
    again, source = _sync(index, site.start, settings=None)  # the remembered settings
    took = time.perf_counter() - began
    assert again.added == again.updated == again.removed == () and parsed == []
    assert set(again.unchanged) == set(first.added) and again.chunks_written == 0
    pages = [h for h in site.pages_asked() if h.status in (200, 304)]
    indexed = [h for h in pages if h.path != HOWTO + "slow.html"]
    assert indexed and all(h.status == 304 and h.etag for h in indexed), [
        (h.path, h.status) for h in indexed if h.status != 304
    ]
    assert source.summary.not_modified == len(first.added) and source.summary.fetched <= 1
    # pages with a problem are tried again although the page linking to them is unchanged
    assert site.asked(HOWTO + "slow.html") and site.asked(HOWTO + "missing.html") == []
    assert took < 10

    site.changed[HOWTO + "ssi.html"] = (
        b'<html lang="en"><head><title>SSI</title></head><body><main><h1>Server Side'
        b" Includes</h1><p>Rewritten: the platypus directive replaces everything.</p></main>"
        b"</body></html>"
    )
    third, _ = _sync(index, site.start, settings=None)
    assert third.updated == (_url(site, "ssi.html"),) and parsed == [_url(site, "ssi.html")]


def test_a_page_gone_from_the_server_leaves_after_two_syncs(site: Site, tmp_path: Path):
    index = tmp_path / "i.sqlite"
    _sync(index, site.start)
    site.removed.add(HOWTO + "ssi.html")
    once, _ = _sync(index, site.start)
    ssi = _url(site, "ssi.html")
    assert ssi in once.unchanged and once.removed == ()
    reason = {p.source: p.reason for p in once.problems}[ssi]
    assert reason.startswith("HTTP 404 Not Found: gone at this sync; its previous version")
    twice, _ = _sync(index, site.start)
    assert twice.removed == (ssi,)
    ws = Workspace.open(index)
    assert ssi not in {d.meta.source for d in ws.documents()}
    ws.close()


def test_a_sitemap_names_the_pages_and_a_page_dropped_from_it_leaves(site: Site, tmp_path: Path):
    site.sitemap = True
    index = tmp_path / "i.sqlite"
    report, source = _sync(index, site.start)
    assert source.summary.mode == "sitemap"
    assert source.summary.sitemaps == [site.start + "sitemap.xml"]
    assert set(report.added) == {_url(site, n) for n in PAGES}  # no link followed
    assert site.elsewhere == []
    ws = Workspace.open(index)
    state = json.loads(ws.store.meta_value("source:web:" + site.start) or "{}")
    ws.close()
    assert state["pages"][_url(site, "auth.html")]["lastmod"].startswith("2024-0")
    site.unlisted.add(HOWTO + "cgi.html")
    again, _ = _sync(index, site.start)
    assert again.removed == (_url(site, "cgi.html"),)


def test_caps_hold(site: Site, tmp_path: Path):
    report, source = _sync(tmp_path / "a.sqlite", site.start, WebSettings(
        delay=0, timeout=1, retries=0, max_pages=3,
    ))  # fmt: skip
    assert len(site.pages_asked()) == 3 and len(report.added) <= 3
    assert source.summary.stopped_by == "max-pages" and source.summary.not_fetched > 0
    assert any("stopped at --max-pages 3" in w for w in report.warnings)
    site.log.clear()
    report, _ = _sync(tmp_path / "b.sqlite", site.start, WebSettings(delay=0, max_depth=0))
    assert report.added == (site.start,) and [h.path for h in site.pages_asked()] == [HOWTO]
    site.log.clear()
    report, _ = _sync(tmp_path / "c.sqlite", site.start, WebSettings(
        delay=0, timeout=1, retries=0, max_page_bytes=20_000,
    ))  # fmt: skip
    big = {p.source: p.reason for p in report.problems}[_url(site, "auth.html")]
    assert big.startswith("page is over the 20,000 bytes limit (36,205 bytes; --max-page-bytes)")
    assert _url(site, "access.html") in report.added  # 14,767 bytes


def test_a_5xx_is_retried_and_a_dead_site_or_bad_tls_is_one_line(site: Site, tmp_path: Path):
    site.fail_first[HOWTO + "flaky.html"] = 2
    report, _ = _sync(tmp_path / "a.sqlite", site.start, WebSettings(
        delay=0, timeout=1, retries=2, backoff=0,
    ))  # fmt: skip
    assert _url(site, "flaky.html") in report.added
    assert [h.status for h in site.asked(HOWTO + "flaky.html")] == [503, 503, 200]

    # a page that connects and then stalls costs one timeout, not one per try
    before = len(site.asked(HOWTO + "slow.html"))
    report, _ = _sync(tmp_path / "c.sqlite", site.start, WebSettings(
        delay=0, timeout=1, retries=2, backoff=0,
    ))  # fmt: skip
    assert len(site.asked(HOWTO + "slow.html")) == before + 1  # asked once, never retried
    assert "tries" not in {p.source: p.reason for p in report.problems}[_url(site, "slow.html")]

    index = tmp_path / "b.sqlite"
    dead = site.url.rsplit(":", 1)[0] + ":9"  # the discard port: nothing listens
    with pytest.raises(UpstreamError) as caught:
        _sync(index, dead + "/guide/")
    assert str(caught.value).startswith("cannot reach http://127.0.0.1:9: cannot connect:")
    assert "\n" not in str(caught.value)


def test_a_certificate_that_does_not_verify_is_one_line(tmp_path: Path):
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    try:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
             "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pytest.skip("openssl cannot make a certificate here")
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads, port = True, server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(UpstreamError) as caught:
            _sync(tmp_path / "i.sqlite", f"https://127.0.0.1:{port}/docs/")
    finally:
        server.shutdown()
        server.server_close()
    assert str(caught.value).startswith(
        f"cannot reach https://127.0.0.1:{port}: TLS error: certificate verify failed"
    )


def test_a_folder_ingest_keeps_a_site_s_pages_and_their_doc_ids(site: Site, tmp_path: Path):
    index = tmp_path / "i.sqlite"
    first, _ = _sync(index, site.start)
    docs = tmp_path / "docs"
    (docs / "manual/en/howto").mkdir(parents=True)
    (docs / "manual/en/howto/auth.md").write_text("# Auth\n\nA file claiming the page's id.\n")
    (docs / "notes.md").write_text("---\naccess: public\n---\n# Notes\n\nOwn text.\n")
    ws = Workspace.open(index)
    folder = ws.ingest(docs, embed=False)
    held = {d.meta.source for d in ws.store.documents()}
    ws.close()
    assert folder.added == ("notes.md",) and folder.removed == ()
    assert "://" not in "".join(folder.unchanged)
    assert set(first.added) <= held
    assert (
        "doc_id 'manual/en/howto/auth' version '1'"
        in {p.source: p.reason for p in folder.problems}["manual/en/howto/auth.md"]
    )


def test_the_command_line_crawls_remembers_its_settings_and_reports_json(
    site: Site, tmp_path: Path
):
    runner = CliRunner()
    index = str(tmp_path / "i.sqlite")
    args = ["ingest", site.start, "--index", index, "--no-embed", "--json"]
    done = runner.invoke(app, [*args, "--delay", "0", "--timeout", "1", "--retries", "0",
                               "--default-access", "public", "--max-pages", "40"])  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(schemas.IngestReport.model_json_schema()).validate(data)
    assert site.start in data["added"] and data["crawl"]["mode"] == "links"
    assert data["crawl"]["disallowed"] == [site.start + "private/secret.html"]
    began = time.perf_counter()
    again = runner.invoke(app, args)  # no options: the remembered ones (no delay, 1 s timeout)
    assert again.exit_code == 0, again.output
    assert time.perf_counter() - began < 10
    data = json.loads(again.stdout)
    assert data["added"] == [] and site.start in data["unchanged"]
    assert data["crawl"]["not_modified"] >= 10
    text = runner.invoke(app, ["ingest", site.start, "--index", index, "--no-embed"])
    said = " ".join(text.output.split())
    assert "following links: " in said and " unchanged (304)" in said, said
    wrong = runner.invoke(app, ["ingest", str(tmp_path), "--index", index, "--max-pages", "3"])
    assert wrong.exit_code == 2 and "--max-pages" in wrong.output
    synced = runner.invoke(app, ["sync", "--index", index, "--no-embed", "--json"])
    assert synced.exit_code == 0, synced.output
    (one,) = json.loads(synced.stdout)
    assert one["crawl"]["start"] == site.start and one["added"] == [] and one["unchanged"]
    quiet = runner.invoke(app, ["-q", "sync", "--index", index, "--no-embed"])
    assert quiet.exit_code == 0 and quiet.stdout.strip() == "", quiet.stdout  # -q: problems only
    info = runner.invoke(app, ["info", "--index", index, "--audience", "staff"]).output
    assert f"web {site.start} · last synced" in info and '"etag"' not in info
    bare = str(tmp_path / "bare.sqlite")
    runner.invoke(app, ["ingest", str(MANUAL / "manual"), "--index", bare, "--no-embed"])
    none = runner.invoke(app, ["sync", "--index", bare, "--no-embed"])
    assert none.exit_code == 1 and "remembers no source to sync" in none.output


def test_a_start_url_robots_txt_forbids_is_refused(site: Site, tmp_path: Path):
    with pytest.raises(TetherError, match=r"robots.txt disallows .*private/ to tether; nothing"):
        _sync(tmp_path / "i.sqlite", site.start + "private/")
    assert not site.asked(HOWTO + "private/")


@pytest.mark.slow
def test_an_unchanged_recrawl_embeds_nothing(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index, one_page = tmp_path / "i.sqlite", WebSettings(delay=0, max_depth=0)  # the index
    first, _ = _sync(index, site.start, one_page, embed=True)
    assert first.chunks_written > 0
    import tether.ingest.sync as folder_sync

    embedded: list[int] = []
    real = folder_sync.embed_chunks

    def counted(chunks: Any, *args: Any, **kwargs: Any) -> Any:
        embedded.append(len(chunks))
        return real(chunks, *args, **kwargs)

    monkeypatch.setattr(folder_sync, "embed_chunks", counted)
    again, _ = _sync(index, site.start, one_page, embed=True)
    assert again.unchanged == (site.start,) and again.chunks_written == 0
    assert embedded in ([], [0])  # no chunk handed to the embedder


def test_a_robots_txt_on_another_host_is_not_fetched(site: Site, tmp_path: Path):
    site.robots_elsewhere = True
    report, source = _sync(tmp_path / "i.sqlite", site.start, WebSettings(delay=0, max_depth=0))
    assert report.added == (site.start,) and site.elsewhere == []
    assert source.summary.robots.startswith("robots.txt not read (redirected to another host")


def _month(offset: int) -> str:
    """/cal/YYYY-MM.html, `offset` months after January 2026."""
    year, month = divmod(offset, 12)
    return f"/cal/{2026 + year:04d}-{month + 1:02d}.html"


def test_an_infinite_calendar_is_held_by_the_page_and_depth_caps(tmp_path: Path):
    """A link trap: each month's page, made on the fly, links to the month before and the
    month after, forever. Both caps end the crawl in bounded time, and the report says so."""
    asked: list[str] = []

    class Calendar(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            asked.append(self.path)
            name = self.path.removeprefix("/cal/").removesuffix(".html")
            try:
                year, month = (int(part) for part in name.split("-"))
            except ValueError:  # robots.txt and anything else
                body, status = b"not found", 404
            else:
                k = (year - 2026) * 12 + month - 1
                body, status = (
                    (
                        f"<html lang='en'><head><title>Calendar {name}</title></head><body><main>"
                        f"<h1>{name}</h1><p>Events of {name}: the meeting numbered {k}.</p>"
                        f"<a href='{_month(k - 1)}'>previous</a> <a href='{_month(k + 1)}'>next</a>"
                        "</main></body></html>"
                    ).encode(),
                    200,
                )
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server, port = _serve(Calendar)
    start = f"http://127.0.0.1:{port}{_month(0)}"
    try:
        began = time.perf_counter()  # the page cap: depth is no limit here
        report, source = _sync(tmp_path / "pages.sqlite", start, WebSettings(
            delay=0, timeout=1, retries=0, max_pages=15, max_depth=1000,
        ))  # fmt: skip
        assert time.perf_counter() - began < 15
        pages = [p for p in asked if p.startswith("/cal/") and "sitemap" not in p]
        assert len(pages) == 15 and len(report.added) == 15
        assert source.summary.stopped_by == "max-pages" and source.summary.not_fetched > 0
        assert any("stopped at --max-pages 15" in w for w in report.warnings)

        asked.clear()
        began = time.perf_counter()  # the depth cap: 5 links either way, 11 months
        report, source = _sync(tmp_path / "depth.sqlite", start, WebSettings(
            delay=0, timeout=1, retries=0, max_pages=15, max_depth=5,
        ))  # fmt: skip
        assert time.perf_counter() - began < 15
        within = {_month(k) for k in range(-5, 6)}
        assert {p for p in asked if p.startswith("/cal/") and "sitemap" not in p} == within
        assert len(report.added) == 11 and source.summary.too_deep == 2  # months -6 and +6
        assert source.summary.stopped_by is None  # the depth cap is counted, not a stop
        assert "2 links deeper than --max-depth 5 were not followed" in " ".join(report.warnings)

        runner = CliRunner()  # and what the command line reports
        args = ["ingest", start, "--no-embed", "--delay", "0", "--timeout", "1", "--retries",
                "0", "--default-access", "public", "--max-depth", "5"]  # fmt: skip
        index = ["--index", str(tmp_path / "cli.sqlite")]
        done = runner.invoke(app, [*args, *index, "--max-pages", "15"])
        said = " ".join(done.output.split())
        assert done.exit_code == 0 and "not read: 2 links past --max-depth" in said, said
        index = ["--index", str(tmp_path / "cli2.sqlite")]
        done = runner.invoke(app, [*args, *index, "--max-pages", "4", "--json"])
        assert done.exit_code == 0, done.output
        crawl = json.loads(done.stdout)["crawl"]
        assert crawl["stopped_by"] == "max-pages" and crawl["pages_requested"] == 4
    finally:
        server.shutdown()
        server.server_close()
