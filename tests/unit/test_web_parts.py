"""The parts of a website source that need no server: URLs and the crawl's fences, links and
canonical of a page, formats by Content-Type, sitemaps (gzip, indexes, text, entities never
expanded), robots.txt rules through Protego, doc_ids from URLs, settings and TLS wording.
The crawl against a real server is tests/integration/test_web_source.py."""

from __future__ import annotations

import gzip
import ssl

import httpx
import pytest
from protego import Protego

from tether.errors import TetherError
from tether.ingest.metadata import path_doc_id
from tether.ingest.sources import is_url, open_source
from tether.ingest.sources.fetch import _transport_problem, too_large
from tether.ingest.sources.links import (
    Scope,
    format_for,
    normal,
    page_links,
    same_host,
    skippable,
)
from tether.ingest.sources.robots import Robots
from tether.ingest.sources.sitemap import parse_sitemap
from tether.ingest.sources.web import WebSettings, WebSource


def test_one_spelling_per_url():
    assert normal("HTTPS://Docs.Example.com:443/Guide/a.html#part") == (
        "https://docs.example.com/Guide/a.html"
    )
    assert normal("http://h:8080") == "http://h:8080/"
    assert normal("http://h/x?b=2&a=1") == "http://h/x?b=2&a=1"
    for bad in ("mailto:a@b.c", "javascript:void(0)", "ftp://h/x", "http://", "http://h:99999/"):
        assert normal(bad) is None, bad
    assert is_url("https://x/") and is_url(" HTTP://x") and not is_url("docs/http")


def test_the_fences_of_a_crawl():
    assert Scope("https://h/guide/").prefix == "/guide/"
    assert Scope("https://h/guide/intro.html").prefix == "/guide/"
    assert Scope("https://h/guide").prefix == "/guide/"  # no dot: a folder
    assert Scope("https://h/").prefix == "/"
    scope = Scope("https://h/guide/")
    assert scope.within("https://h/guide/a/b.html") and scope.within("https://h/guide")
    assert not scope.within("https://h/guidebook/") and not scope.within("https://h/other/")
    assert not scope.within("https://evil.example/guide/") and scope.folder == "https://h/guide/"
    assert same_host("http://h/a", "https://h/b")  # http sent to https stays on the host
    assert not same_host("http://h:8080/a", "http://h:8081/a")
    assert not same_host("http://h:8080/a", "https://h/a")
    assert not same_host("https://h/", "https://h.evil.example/")
    assert not same_host("http://127.0.0.1/", "http://localhost/")


def test_a_page_s_links_canonical_and_robots_words():
    page = b"""<html><head><base href="/docs/"><link rel="Canonical" href="intro.html">
    <meta name="robots" content="NOINDEX, follow"><meta name="description" content=" A
    guide. "></head><body><a href="a.html#x">a</a><a href="a.html">again</a>
    <a href="https://other.example/z">z</a><a rel="nofollow" href="skip.html">s</a>
    <a href="mailto:x@y.z">m</a><map><area href="b.html"></map></body></html>"""
    found = page_links(page, "https://h/docs/intro.html?print=1")
    assert found.links == (
        "https://h/docs/a.html",
        "https://other.example/z",
        "https://h/docs/b.html",
    )
    assert found.canonical == "https://h/docs/intro.html"
    assert found.noindex and not found.nofollow and found.description == "A guide."
    elsewhere = b'<html><head><base href="https://evil.example/"></head><a href="a.html">a</a>'
    assert page_links(elsewhere, "https://h/d/x.html").links == ("https://h/d/a.html",)
    assert page_links(b"", "https://h/").links == ()


def test_formats_by_content_type_and_links_never_fetched():
    assert format_for("text/html; charset=ISO-8859-1", "https://h/a") == "html"
    assert format_for("application/pdf", "https://h/file") == "pdf"
    assert format_for("application/octet-stream", "https://h/r.docx") == "docx"
    assert format_for("text/plain", "https://h/readme.md") == "markdown"
    assert format_for("text/plain", "https://h/notes") == "text"
    assert format_for("", "https://h/a.html") == "html"
    assert format_for("image/png", "https://h/a.png") is None
    assert format_for("application/zip", "https://h/a.html") is None
    for never in ("a.png", "b.css", "c.js", "d.zip", "e.mp4", "f.woff2", "g.tar.gz", "h.svg"):
        assert skippable(f"https://h/{never}"), never
    for page in ("a.html", "b.pdf", "c", "d/", "e.php", "f.md", "g.docx", "h.aspx"):
        assert not skippable(f"https://h/{page}"), page


def test_a_page_s_doc_id_is_its_url_path_read_as_a_file_s():
    assert path_doc_id("https://h/guide/setup/intro.html") == "guide/setup/intro"
    assert path_doc_id("https://h/guide/") == "guide/index"
    assert path_doc_id("https://h") == "index"
    assert path_doc_id("https://h/cal.html?m=2") == "cal?m=2"
    assert path_doc_id("https://h/a%20b.pdf") == "a b"
    assert path_doc_id("guides/setup/README.md") == "guides/setup/README"


SITEMAP = b"""<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc> https://h/a.html </loc><lastmod>2024-05-01</lastmod></url>
<url><loc>https://h/b.html</loc><lastmod>last tuesday</lastmod></url><url><lastmod>x</lastmod></url>
</urlset>"""


def test_sitemaps_indexes_gzip_and_text():
    pages, children = parse_sitemap(SITEMAP)
    assert pages == [("https://h/a.html", "2024-05-01"), ("https://h/b.html", None)]
    assert children == []
    assert parse_sitemap(gzip.compress(SITEMAP))[0] == pages
    index = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
    <sitemap><loc>https://h/s1.xml</loc></sitemap></sitemapindex>"""
    assert parse_sitemap(index) == ([], ["https://h/s1.xml"])
    assert parse_sitemap(b"https://h/a\n\nhttps://h/b\n")[0] == [
        ("https://h/a", None), ("https://h/b", None),
    ]  # fmt: skip
    for bad in (b"<html><body>hi</body></html>", b"just words", b"\x1f\x8bnot gzip"):
        with pytest.raises(ValueError):
            parse_sitemap(bad)


def test_a_sitemap_s_entities_are_never_expanded():
    xxe = b"""<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/hostname">
    <!ENTITY y "https://h/expanded.html">]>
    <urlset><url><loc>&x;</loc></url><url><loc>&y;</loc></url></urlset>"""
    pages, _ = parse_sitemap(xxe)
    assert all("expanded" not in url and "\n" not in url for url, _ in pages)


def test_robots_rules_through_protego():
    rules = Protego.parse(
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\n"
        "User-agent: tether\nDisallow: /drafts/\nAllow: /drafts/public.html\nCrawl-delay: 900\n"
        "Sitemap: https://h/sitemap.xml\n"
    )
    robots = Robots(rules, sitemaps=[str(s) for s in rules.sitemaps])
    assert robots.allowed("https://h/private/x.html")  # tether's own group applies, not *'s
    assert not robots.allowed("https://h/drafts/a.html")
    assert robots.allowed("https://h/drafts/public.html")
    assert robots.crawl_delay() == 60.0  # capped
    assert robots.sitemaps == ["https://h/sitemap.xml"]
    assert Robots().allowed("https://h/anything")


def test_settings_are_checked_and_remembered():
    with pytest.raises(TetherError, match="max-pages must be at least 1"):
        WebSettings(max_pages=0)
    with pytest.raises(TetherError, match="delay must not be negative"):
        WebSettings(delay=-1)
    kept = WebSettings.of({"max_pages": 7, "delay": 0.0, "unknown": 1}, max_pages=None, timeout=3)
    assert (kept.max_pages, kept.delay, kept.timeout) == (7, 0.0, 3)
    source = open_source("web", "https://h/guide/", {"max_depth": 2})
    assert isinstance(source, WebSource) and source.options.max_depth == 2
    assert source.location == "https://h/guide/"
    with pytest.raises(TetherError, match="unknown kind 'gopher'"):
        open_source("gopher", "x")
    with pytest.raises(TetherError, match="not an http"):
        WebSource("ftp://h/x")


def test_failures_are_one_line():
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "self-signed certificate"
    wrapped = httpx.ConnectError("boom")
    wrapped.__cause__ = verify
    assert _transport_problem(wrapped) == (
        "TLS error: certificate verify failed: self-signed certificate", False,
    )  # fmt: skip
    refused = httpx.ConnectError("[Errno 111] Connection refused")
    assert _transport_problem(refused) == ("cannot connect: connection refused", True)
    assert too_large(25_000_000, 20_000_000) == (
        "page is over the 20 MB limit (25,000,000 bytes; --max-page-bytes)"
    )
