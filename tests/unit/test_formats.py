"""Every file accounted for: unsupported files counted by suffix in the ingest summary, DOCX and
reStructuredText parsed with headings, anchors, lists, tables and offsets, and HTML boilerplate
(sidebars, dialogs, Next/Previous/Index bars, what lies outside <main>) left out."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import date
from pathlib import Path

import pytest
from test_documents import assert_offsets, parse_error, write
from typer.testing import CliRunner

from tether.errors import ParseError
from tether.ingest import parse_bytes
from tether.ingest.discover import scan

# --------------------------------------------------------------------------- unsupported files


def test_scan_counts_unsupported_files_by_suffix(tmp_path: Path) -> None:
    for rel in [
        "a.md", "b/archive.tar.gz", "c/logs.GZ", "d/picture.png", "Makefile",
        ".hidden.gz", ".tether/index.sqlite", "sub/.cache/x.bin", "inventory.csv",
    ]:  # fmt: skip
        write(tmp_path, rel, "x")
    found = scan(tmp_path)
    assert [p.name for p in found.files] == ["a.md"]
    assert found.unsupported == {".gz": 2, ".png": 1, "(no suffix)": 1}


def test_ingest_summary_lists_unsupported_files(tmp_path: Path) -> None:
    from tether.cli.main import app

    docs = tmp_path / "docs"
    write(docs, "guide.md", "# Guide\n\nRead me.\n")
    write(docs, "old/backup.gz", b"\x1f\x8b\x08\x00")
    write(docs, "old/backup2.gz", b"\x1f\x8b\x08\x00")
    write(docs, "logo.png", b"\x89PNG")
    index = str(tmp_path / "i.sqlite")
    result = CliRunner().invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"])
    assert result.exit_code == 0, result.output
    assert "not read: 3 files of a type tether does not read (.gz 2, .png 1)" in result.output
    assert ".docx" in result.output and ".rst" in result.output  # what it does read

    from tether.app import Workspace

    report = Workspace.open(Path(index)).ingest(docs, embed=False)
    assert report.unsupported == ((".gz", 2), (".png", 1))


# --------------------------------------------------------------------------- DOCX


def _docx(build) -> bytes:  # type: ignore[no-untyped-def]
    docx = pytest.importorskip("docx")
    document = docx.Document()
    build(document)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def _bookmark(paragraph, name: str) -> None:  # type: ignore[no-untyped-def]
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    mark = OxmlElement("w:bookmarkStart")
    mark.set(qn("w:id"), "0")
    mark.set(qn("w:name"), name)
    paragraph._p.insert(0, mark)


def _vpn_guide(d) -> None:  # type: ignore[no-untyped-def]
    d.core_properties.title = "VPN guide"
    d.core_properties.author = "IT desk"
    d.core_properties.keywords = "doc_id=vpn-guide; access=public; version=3"
    d.add_heading("VPN guide", 0)
    d.add_paragraph("Connect to the VPN before you open the intranet.")
    _bookmark(d.add_heading("Install the client", 1), "install")
    d.add_paragraph("Download the client from the portal.", style="List Bullet")
    d.add_paragraph("Run the installer as administrator.", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("System", "Client"), ("Windows", "4.2"), ("macOS", "4.1")]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    d.add_heading("Troubleshooting", 2)
    d.add_paragraph("Restart the client when the tunnel drops.")


def test_docx_headings_lists_tables_anchors_and_metadata() -> None:
    doc = parse_bytes(_docx(_vpn_guide), "it/vpn.docx", "docx")
    assert_offsets(doc)
    meta = doc.meta
    assert (meta.doc_id, meta.version, meta.access, meta.title, meta.owner, meta.format) == (
        "vpn-guide", "3", "public", "VPN guide", "IT desk", "docx",
    )  # fmt: skip
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "VPN guide"),
        ("paragraph", "Connect to the VPN before you open the intranet."),
        ("heading", "Install the client"),
        ("list_item", "Download the client from the portal."),
        ("list_item", "Run the installer as administrator."),
        ("table_row", "System | Client"),
        ("table_row", "Windows | 4.2"),
        ("table_row", "macOS | 4.1"),
        ("heading", "Troubleshooting"),
        ("paragraph", "Restart the client when the tunnel drops."),
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["Install the client"].level == 2  # below the document's Title
    assert by_text["Troubleshooting"].heading_path == (
        "VPN guide", "Install the client", "Troubleshooting",
    )  # fmt: skip
    assert by_text["Troubleshooting"].anchor == "install"  # inherited from its section
    rows = [b for b in doc.blocks if b.kind == "table_row"]
    assert [r.header_row for r in rows] == [True, False, False] and {r.table for r in rows} == {0}


def test_docx_without_metadata_is_staff_and_titled_by_its_first_heading() -> None:
    def build(d) -> None:  # type: ignore[no-untyped-def]
        d.add_heading("Printer setup", 1)
        d.add_paragraph("Add the printer by its queue name.")

    doc = parse_bytes(_docx(build), "it/printers.docx", "docx")
    assert doc.meta.access == "staff" and doc.meta.title == "Printer setup"


def test_docx_custom_property_beats_keywords_and_access_conflict_fails_closed() -> None:
    def build(d) -> None:  # type: ignore[no-untyped-def]
        d.core_properties.keywords = "doc_id=from-keywords; access=public"
        d.add_paragraph("Body text of the memo.")

    data = _docx(build)
    custom = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"'
        ' xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        '<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="DocId">'
        "<vt:lpwstr>memo-7</vt:lpwstr></property>"
        '<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="3" name="Access">'
        "<vt:lpwstr>staff</vt:lpwstr></property></Properties>"
    )
    doc = parse_bytes(_with_custom_part(data, custom), "memo.docx", "docx")
    assert doc.meta.doc_id == "memo-7"
    assert doc.meta.access == "staff" and any("access" in w for w in doc.warnings)


def test_docx_review_date_from_keywords_or_a_custom_property() -> None:
    def build(d) -> None:  # type: ignore[no-untyped-def]
        d.core_properties.keywords = "doc_id=memo; review_by=2027-01-31"
        d.add_paragraph("Body text of the memo.")

    data = _docx(build)
    assert parse_bytes(data, "memo.docx", "docx").meta.review_by == date(2027, 1, 31)
    custom = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"'
        ' xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        '<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="Next Review">'
        "<vt:lpwstr>2027-03-31</vt:lpwstr></property></Properties>"
    )
    doc = parse_bytes(_with_custom_part(data, custom), "memo.docx", "docx")
    assert doc.meta.review_by == date(2027, 3, 31)  # the custom property beats the keywords


def _with_custom_part(data: bytes, xml: str) -> bytes:
    """The .docx `data` with a docProps/custom.xml part (and its content type and relation)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            body = src.read(item.filename)
            if item.filename == "[Content_Types].xml":
                body = body.replace(
                    b"</Types>",
                    b'<Override PartName="/docProps/custom.xml" ContentType="application/'
                    b'vnd.openxmlformats-officedocument.custom-properties+xml"/></Types>',
                )
            elif item.filename == "_rels/.rels":
                body = body.replace(
                    b"</Relationships>",
                    b'<Relationship Id="rIdCustom" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/custom-properties"'
                    b' Target="docProps/custom.xml"/></Relationships>',
                )
            dst.writestr(item, body)
        dst.writestr("docProps/custom.xml", xml)
    return out.getvalue()


def test_docx_table_of_contents_and_deleted_text_are_left_out() -> None:
    pytest.importorskip("docx")

    def build(d) -> None:  # type: ignore[no-untyped-def]
        from docx.oxml import parse_xml

        ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
        toc = parse_xml(
            f"<w:sdt {ns}><w:sdtPr><w:docPartObj><w:docPartGallery w:val='Table of Contents'/>"
            "</w:docPartObj></w:sdtPr><w:sdtContent><w:p><w:r><w:t>Contents 1</w:t></w:r></w:p>"
            "</w:sdtContent></w:sdt>"
        )
        d.element.body.insert(0, toc)
        p = d.add_paragraph("Kept text.")
        p._p.append(
            parse_xml(f"<w:del {ns} w:id='1' w:author='x'><w:r><w:t>GONE</w:t></w:r></w:del>")
        )

    doc = parse_bytes(_docx(build), "a.docx", "docx")
    assert doc.text == "Kept text."


def test_docx_hostile_files_are_refused_with_one_line() -> None:
    pytest.importorskip("docx")
    assert "not a zip archive" in parse_error(b"PK\x03\x04 not really a zip", "docx")
    plain_zip = io.BytesIO()
    with zipfile.ZipFile(plain_zip, "w") as z:
        z.writestr("hello.txt", "hi")
    assert parse_error(plain_zip.getvalue(), "docx").startswith("DOCX cannot be read")
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b"\0" * 210_000_000)
    assert "over the 200 MB limit" in parse_error(bomb.getvalue(), "docx")
    empty = _docx(lambda d: None)
    assert parse_error(empty, "docx").startswith("no text found")


# --------------------------------------------------------------------------- reStructuredText

RST = """\
:doc_id: vpn-guide
:access: public
:version: 2

VPN guide
=========

Connect before you open the :ref:`intranet <intranet-label>` portal.

.. contents::

.. _install:

Install the client
------------------

- Download the client.
- Run the installer.

  - As administrator.

.. code-block:: shell

   vpn connect --profile office

.. versionadded:: 4.2
   The client reconnects by itself.

.. toctree::

   other-page

.. include:: /etc/passwd

+---------+--------+
| System  | Client |
+=========+========+
| Windows | 4.2    |
+---------+--------+

Tunnel
   The encrypted link to the office.

Troubleshooting
~~~~~~~~~~~~~~~

.. note:: Restart the client when the tunnel drops.
"""


def test_rst_sections_anchors_lists_tables_code_and_metadata() -> None:
    pytest.importorskip("docutils")
    doc = parse_bytes(RST.encode(), "it/vpn.rst", "rst")
    assert_offsets(doc)
    assert (doc.meta.doc_id, doc.meta.version, doc.meta.access, doc.meta.title) == (
        "vpn-guide", "2", "public", "VPN guide",
    )  # fmt: skip
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "VPN guide"),
        ("paragraph", "Connect before you open the intranet portal."),
        ("heading", "Install the client"),
        ("list_item", "Download the client."),
        ("list_item", "Run the installer."),
        ("list_item", "As administrator."),
        ("code", "vpn connect --profile office"),
        ("paragraph", "4.2"),
        ("paragraph", "The client reconnects by itself."),
        ("table_row", "System | Client"),
        ("table_row", "Windows | 4.2"),
        ("list_item", "Tunnel: The encrypted link to the office."),
        ("heading", "Troubleshooting"),
        ("paragraph", "Restart the client when the tunnel drops."),
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["VPN guide"].anchor == "vpn-guide"
    assert by_text["Install the client"].anchor == "install"  # the explicit label
    assert by_text["Troubleshooting"].heading_path == (
        "VPN guide", "Install the client", "Troubleshooting",
    )  # fmt: skip
    assert by_text["Troubleshooting"].anchor == "troubleshooting"
    assert [b.header_row for b in doc.blocks if b.kind == "table_row"] == [True, False]
    assert "root:" not in doc.text  # the include directive read nothing


def test_rst_hostile_and_empty_files() -> None:
    pytest.importorskip("docutils")
    assert parse_error(b".. a comment only\n", "rst").startswith("no text found")
    assert parse_error(b".. raw:: html\n\n   <b>x</b>\n", "rst").startswith("no text found")
    csv_file = b".. csv-table:: t\n   :file: /etc/passwd\n"
    assert parse_error(csv_file, "rst").startswith("no text found")
    deep = ("\n".join("  " * i + "- item" for i in range(400)) + "\n").encode()
    try:
        doc = parse_bytes(deep, "deep.rst", "rst")
    except ParseError as exc:
        assert "\n" not in str(exc)
    else:
        assert_offsets(doc)


def test_rst_title_that_breaks_the_nesting_keeps_its_text() -> None:
    pytest.importorskip("docutils")
    doc = parse_bytes(b"A\n=\n\nB\n-\n\nC\n=\n\nD\n~\n\nBody text.\n", "t.rst", "rst")
    assert doc.text.split("\n\n") == ["A", "B", "C", "D", "Body text."]


# --------------------------------------------------------------------------- HTML boilerplate

PAGE = """<!doctype html><html lang="en"><head><title>Returns | Shop</title></head><body>
<div class="cookie" role="dialog">We use cookies. <button>Accept</button></div>
<header><a href="/">Shop</a><nav><a href="/a">Garden</a></nav></header>
<div class="nav-bar"><p>Next: <a href="b.html">Refunds</a>, Previous: <a href="a.html">Orders</a>,
Up: <a href="index.html">Top</a> &nbsp; [<a href="toc.html">Contents</a>][<a href="ix.html">Index</a>]
</p></div>
<main><article><h1 id="returns">Returns</h1>
<p>Return an item within 30 days. See the <a href="ix.html">Index of forms</a> for the form.</p>
<aside class="tip"><p>Tip: keep the receipt.</p></aside>
</article>
<aside><h2>Related articles</h2><ul><li><a href="/c">Contact us</a></li></ul></aside></main>
<p><a href="a.html">&laquo; Previous</a> | <a href="b.html">Next &raquo;</a></p>
<footer><p>&copy; 2026 Shop</p></footer></body></html>"""


def test_html_boilerplate_is_left_out_and_main_content_kept() -> None:
    doc = parse_bytes(PAGE.encode(), "returns.html", "html")
    assert_offsets(doc)
    assert [b.text for b in doc.blocks] == [
        "Returns",
        "Return an item within 30 days. See the Index of forms for the form.",
        "Tip: keep the receipt.",
    ]


def test_html_link_bar_outside_main_and_title_outside_main() -> None:
    page = (
        "<body><p>Next: <a href='n.html'>Setup</a> Previous: <a href='p.html'>Intro</a></p>"
        "<h1>Printer guide</h1><div role='main'><p>Add the printer by name.</p>"
        "<p><a href='x.html'>Download the driver</a></p></div></body>"
    )
    doc = parse_bytes(page.encode(), "printers.html", "html")
    assert_offsets(doc)
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Printer guide"),
        ("paragraph", "Add the printer by name."),
        ("paragraph", "Download the driver"),
    ]


def test_html_empty_main_is_not_taken_for_the_content() -> None:
    page = b"<body><main id='app'></main><div><h1>Guide</h1><p>Real text here.</p></div></body>"
    doc = parse_bytes(page, "spa.html", "html")
    assert [b.text for b in doc.blocks] == ["Guide", "Real text here."]


def test_rst_fields_after_the_title_are_its_metadata_as_docutils_reads_them() -> None:
    pytest.importorskip("docutils")
    text = (
        "Leave policy\n============\n\n:doc_id: leave\n:access: public\n:version: 3\n\n"
        "Staff take 25 days a year.\n\nCarry-over\n----------\n\n:note: not a field list"
        " at the top\n\nUp to 5 days.\n"
    )
    doc = parse_bytes(text.encode(), "hr/leave.rst", "rst")
    assert (doc.meta.doc_id, doc.meta.version, doc.meta.access) == ("leave", "3", "public")
    assert doc.access_labelled and "doc_id" not in doc.text and "25 days" in doc.text
    assert "not a field list at the top" in doc.text  # a later field list stays text
    assert doc.blocks[0].text == "Leave policy" and doc.blocks[0].kind == "heading"


FIXTURE_PDF = Path(__file__).parents[1] / "fixtures" / "pdf" / "dblatex-maint-guide-p9.pdf"


def test_a_dblatex_pdf_keeps_the_spaces_between_its_words() -> None:
    """Page 9 of Debian's New Maintainers' Guide (DocBook/dblatex, GPL-2+): pypdf's layout
    mode ran about a tenth of its words together ("Beforeyoustartanything")."""
    doc = parse_bytes(FIXTURE_PDF.read_bytes(), "maint-guide-p9.pdf", "pdf")
    text = " ".join(doc.text.split())
    assert "Before you start anything, you should make sure that you have" in text
    long = [w for w in text.split() if re.search(r"[A-Za-z]{20,}", w) and "://" not in w]
    assert long == []
    assert doc.meta.doc_id == "maint-guide-p9" and doc.meta.access == "public"
    assert any(
        b.kind == "heading" and b.text.endswith("Programs needed for development")
        for b in doc.blocks
    )
    paragraphs = [b for b in doc.blocks if b.kind == "paragraph"]
    assert len(paragraphs) >= 4  # the gaps between paragraphs are kept


def test_a_pdf_word_broken_at_a_line_end_is_joined_with_its_hyphen(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for line in ("The co-", "operation of well-", "known pumps."):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    path = tmp_path / "hyphen.pdf"
    pdf.output(str(path))
    doc = parse_bytes(path.read_bytes(), "hyphen.pdf", "pdf")
    assert "The co-operation of well-known pumps." in " ".join(doc.text.split())


LATEX_PDF = Path(__file__).parents[1] / "fixtures" / "pdf" / "pdflatex-doxygen-ch2.pdf"


def test_a_pdflatex_manual_loses_its_running_heads_and_feet() -> None:
    """Pages 25-28 of Doxygen 1.9.4's manual (pdflatex, GPL-2): every page ends "Generated by
    Doxygen 1.9.4" and the later ones start with a running head that carries the page number
    ("8 Installation", "2.3 Compiling from source on Windows 9"); none of them is content."""
    doc = parse_bytes(LATEX_PDF.read_bytes(), "doxygen-ch2.pdf", "pdf")
    texts = [b.text for b in doc.blocks]
    headings = [b.text for b in doc.blocks if b.kind == "heading"]
    assert not any("Generated by Doxygen" in t for t in texts)
    assert not any(re.fullmatch(r"\d+ Installation|.* Windows \d+", t) for t in texts)
    for section in ("Chapter 2", "Installation", "2.1 Compiling from source on UNIX",
                    "2.2 Installing the binaries on UNIX", "2.3 Compiling from source on Windows",
                    "2.4 Installing the binaries on Windows"):  # fmt: skip
        assert section in headings
    assert any("cmake tries to determine the platform you use" in t for t in texts)


def test_running_lines_by_repetition_shape_and_page_number() -> None:
    from tether.ingest.parse.pdf import _without_running_lines

    pages = [
        "Chapter 1\nIntroduction\nBody one.\nACME manual 1 / 4",
        "2 Introduction\nBody two.\nACME manual 2 / 4",
        "Setup guide 3\nChapter 2\nBody three.\nACME manual 3 / 4",
        "4 Setup\nBody four.\nACME manual 4 / 4",
    ]
    out = [p.split("\n") for p in _without_running_lines(pages)]
    assert out[0] == ["Chapter 1", "Introduction", "Body one.", ""]  # a division stays
    assert out[1] == ["", "Body two.", ""]  # "2 Introduction": the page number runs
    assert out[2] == ["", "Chapter 2", "Body three.", ""]
    assert out[3] == ["", "Body four.", ""]
    one = ["Title\nOnly page.\nFooter text"]
    assert _without_running_lines(one) == one  # a single page has nothing to compare with
    two = ["Notice\nFirst.", "Other\nSecond."]
    assert _without_running_lines(two) == two  # different lines, no running numbers


def test_a_libreoffice_pdf_keeps_its_headings_lists_and_steps() -> None:
    """A page written for this test and exported to PDF by LibreOffice Writer 7.4 (from a
    pandoc DOCX): its sections are headings, its bullets list items, and a numbered step keeps
    its number, even where the list follows its heading without a gap."""
    doc = parse_bytes(
        (FIXTURE_PDF.parent / "libreoffice-returns.pdf").read_bytes(), "returns.pdf", "pdf"
    )
    headings = [b.text for b in doc.blocks if b.kind == "heading"]
    items = [b.text for b in doc.blocks if b.kind == "list_item"]
    assert doc.meta.title == "Returns and repairs"
    for section in ("Returning an item", "Sending an item for repair", "Who to contact"):
        assert section in headings
    assert "Gift cards cannot be returned." in items
    assert "2. Bring the item, clean and dry, with its proof of purchase." in items


def test_a_scanned_page_without_a_text_layer_is_refused_with_its_reason() -> None:
    """An image of a page wrapped in a PDF by img2pdf: no text to read, and tether says so."""
    data = (FIXTURE_PDF.parent / "scanned-page.pdf").read_bytes()
    with pytest.raises(ParseError, match="no text layer"):
        parse_bytes(data, "scanned-page.pdf", "pdf")
