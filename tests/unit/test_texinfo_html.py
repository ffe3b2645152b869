"""Texinfo's HTML (makeinfo and texi2html): footnotes, redirect pages, headings that would
stand alone."""

from __future__ import annotations

import pytest

from tether.errors import ParseError
from tether.ingest.chunking import chunk_document
from tether.ingest.parse.dispatch import parse_bytes
from tether.types import ChunkerConfig

MAKEINFO = b"""<html><head><title>M4 Dependency (Lexical Analysis With Flex)</title></head>
<body lang="en"><div class="appendixsec" id="M4-Dependency">
<div class="header"><p>Next: <a href="a.html" rel="next">A</a>, Up: <a href="b.html">B</a>
&nbsp; [<a href="index.html#SEC_Contents">Contents</a>]</p></div><hr>
<h3 class="appendixsec">A.3 M4 Dependency</h3>
<p>The macro processor <code>m4</code><a id="DOCF8" href="#FOOT8"><sup>8</sup></a>
must be installed wherever flex is installed.</p>
</div>
<div class="footnote"><hr><h4 class="footnotes-heading">Footnotes</h4>
<h5><a id="FOOT8" href="#DOCF8">(8)</a></h5>
<p>The use of m4 is subject to change in future revisions of flex.</p></div>
</body></html>"""

TEXI2HTML = b"""<html><head><title>GNU gettext utilities: 11. The Programmer's View</title>
</head><body><h1>11. The Programmer's View</h1>
<p>On systems without it, the category gets the value 1729<a name="DOCF3"
href="gettext_fot.html#FOOT3">(3)</a> which is arbitrary.</p></body></html>"""

FOOTNOTES_PAGE = b"""<html><head><title>GNU gettext utilities: Footnotes</title></head><body>
<h1>Footnotes</h1><h3><a name="FOOT3" href="gettext_11.html#DOCF3">(3)</a></h3>
<p>Some text about the number 1729 and why it was chosen here.</p></body></html>"""


def _parse(data: bytes):
    return parse_bytes(data, "page.html", "html", None, default_access="public")


def test_a_footnote_mark_does_not_glue_to_the_word_before() -> None:
    doc = _parse(MAKEINFO)
    assert "m4 must be installed" in " ".join(doc.text.split())
    assert "m48" not in doc.text
    assert "1729 which" in " ".join(_parse(TEXI2HTML).text.split())


def test_a_footnote_is_text_under_footnotes_not_a_section_named_by_its_number() -> None:
    for data, label in ((MAKEINFO, "(8)"), (FOOTNOTES_PAGE, "(3)")):
        chunks = chunk_document(_parse(data))
        paths = {h for c in chunks for h in c.heading_path}
        assert label not in paths and "Footnotes" in paths
        note = next(c for c in chunks if "Footnotes" in c.heading_path)
        assert label in note.text  # the number stays, as text
        assert any(a.startswith("FOOT") for c in chunks for a in c.anchors)  # a location


def test_a_redirect_page_is_refused_with_its_target() -> None:
    page = b"""<html><head><meta http-equiv="Refresh" content="0; url=Options.html#x">
    </head><body><p>The node you are looking for is at <a href="Options.html#x">x</a>.</p>
    </body></html>"""
    with pytest.raises(ParseError, match=r"redirect to Options.html#x"):
        _parse(page)
    long = page.replace(b"</p>", b" " + b"More words of its own here. " * 10 + b"</p>")
    assert "More words" in _parse(long).text  # a page with content of its own is read


def test_a_heading_is_kept_with_a_first_block_that_fills_a_chunk() -> None:
    words = " ".join(f"w{i}" for i in range(40))
    page = f"<html><body><h2>16 Scanner Options</h2><p>{words}</p><p>tail words</p></body></html>"
    chunks = chunk_document(_parse(page.encode()), ChunkerConfig(max_words=40))
    assert chunks[0].text.startswith("16 Scanner Options") and "w0" in chunks[0].text
    assert all(c.text.strip() != "16 Scanner Options" for c in chunks)


def test_a_page_that_moves_on_later_or_only_without_scripts_is_read() -> None:
    later = b"""<html><head><meta http-equiv="refresh" content="300; url=login.html"></head>
    <body><h1>Account settings</h1><p>Change your password here.</p></body></html>"""
    assert "Change your password" in _parse(later).text
    fallback = b"""<html><head><noscript><meta http-equiv="refresh" content="0; url=x.html">
    </noscript></head><body><h1>App</h1><p>Welcome to the documentation.</p></body></html>"""
    assert "Welcome" in _parse(fallback).text
    scripted = (
        b'<html><head><meta http-equiv="refresh" content="0; url=x.html"></head><body>'
        b"<script>" + b"var a = 1; " * 60 + b"</script><p>Moved.</p></body></html>"
    )
    with pytest.raises(ParseError, match="redirect"):  # its script's words are not text
        _parse(scripted)
