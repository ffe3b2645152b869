"""Tests for tether.ingest (discover, metadata, parse): discovery, inventory, metadata and parsing of every format."""

from __future__ import annotations

import hashlib
import string
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tether.errors import ParseError, TetherError
from tether.ingest import load_inventory, parse_bytes, parse_file
from tether.ingest.discover import discover
from tether.types import Document

# --------------------------------------------------------------------------- helpers


def assert_offsets(doc: Document) -> None:
    """The invariant every stage downstream relies on."""
    assert doc.blocks, "a parsed document has blocks"
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text
        assert block.text and block.text == block.text.strip()
        if block.kind == "heading":
            assert block.heading_path[-1] == block.text
            assert block.level is not None and 1 <= block.level <= 6
    assert doc.text == "\n\n".join(b.text for b in doc.blocks)


def write(folder: Path, rel: str, content: str | bytes) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def parse_error(data: bytes, fmt: str = "markdown", **kwargs: object) -> str:
    with pytest.raises(ParseError) as info:
        parse_bytes(data, f"bad.{fmt}", fmt, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def blocks_of(doc: Document, kind: str) -> list:
    return [b for b in doc.blocks if b.kind == kind]


# --------------------------------------------------------------------------- discovery


def test_discover_lists_readable_files_sorted_and_skips_hidden(tmp_path: Path) -> None:
    for rel in [
        "b.md",
        "a.txt",
        "sub/c.html",
        "sub/deeper/d.PDF",
        "sub/e.htm",
        "notes.markdown",
        "inventory.csv",
        "report.xlsx",
        ".hidden.md",
        ".tether/index.md",
        "sub/.cache/x.md",
    ]:
        write(tmp_path, rel, "x")
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)]
    assert found == [
        "a.txt",
        "b.md",
        "notes.markdown",
        "sub/c.html",
        "sub/deeper/d.PDF",
        "sub/e.htm",
    ]


def test_discover_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(TetherError, match="collection folder not found"):
        discover(tmp_path / "nope")


# --------------------------------------------------------------------------- inventory


def test_load_inventory_reads_rows_and_drops_empty_cells(tmp_path: Path) -> None:
    assert load_inventory(tmp_path) == {}
    write(
        tmp_path,
        "inventory.csv",
        "\ufeffpath,doc_id,Version,access,effective-from,owner\n"
        "policies/returns.md,returns,4,public,2026-01-01,\n"
        "./guide.html,,2,,,Ops team\n"
        ",,,,,\n",
    )
    assert load_inventory(tmp_path) == {
        "policies/returns.md": {
            "doc_id": "returns",
            "version": "4",
            "access": "public",
            "effective_from": "2026-01-01",
        },
        "guide.html": {"version": "2", "owner": "Ops team"},
    }


def test_load_inventory_without_path_column(tmp_path: Path) -> None:
    write(tmp_path, "inventory.csv", "file,doc_id\na.md,a\n")
    with pytest.raises(ParseError, match=r"inventory.csv: no 'path' column"):
        load_inventory(tmp_path)


def test_load_inventory_unknown_column_and_repeated_path(tmp_path: Path) -> None:
    write(tmp_path, "inventory.csv", "path,efective_from\na.md,2026-01-01\n")
    with pytest.raises(ParseError, match="unknown column 'efective_from'"):
        load_inventory(tmp_path)
    write(tmp_path, "inventory.csv", "path,version\na.md,1\na.md,2\n")
    with pytest.raises(ParseError, match=r"path 'a.md' appears twice \(lines 2 and 3\)"):
        load_inventory(tmp_path)


# --------------------------------------------------------------------------- Markdown

RETURNS_MD = """\
---
doc_id: returns-policy
version: 3
title: Returns policy
doc_type: policy
access: public
effective_from: 2026-01-01
effective_to: 2026-12-31
owner: Customer care
tags: [returns, refunds]
---
# Returns policy

Customers may return **most items** within [30 days](https://example.com/returns) of
delivery. Use the `RET-30` form.

## Return window {#window}

- Unopened items: a full refund.
- Opened items:
  - electronics: store credit only;
  - clothing: a full refund.

<a name="fees"></a>

### Fees

| Item | Fee |
|------|-----|
| Shoes | 0 EUR |
| *Furniture* | 25 EUR |

```python
fee = 25  # furniture
if opened:
    fee += 5
```

## Exceptions

Gift cards cannot be returned.
"""


def test_markdown_front_matter_and_blocks(tmp_path: Path) -> None:
    path = write(tmp_path, "policies/returns.md", RETURNS_MD)
    doc = parse_file(path, tmp_path)
    assert_offsets(doc)
    meta = doc.meta
    assert (meta.doc_id, meta.version, meta.title, meta.doc_type) == (
        "returns-policy",
        "3",
        "Returns policy",
        "policy",
    )
    assert meta.access == "public" and meta.owner == "Customer care"
    assert meta.effective_from == date(2026, 1, 1) and meta.effective_to == date(2026, 12, 31)
    assert meta.source == "policies/returns.md" and meta.format == "markdown"
    assert meta.language == "en"
    assert doc.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()

    assert [b.kind for b in doc.blocks] == [
        "heading",
        "paragraph",
        "heading",
        "list_item",
        "list_item",
        "list_item",
        "list_item",
        "heading",
        "table_row",
        "table_row",
        "table_row",
        "code",
        "heading",
        "paragraph",
    ]
    by_text = {b.text: b for b in doc.blocks}
    para = doc.blocks[1]
    assert para.text == (
        "Customers may return most items within 30 days of delivery. Use the RET-30 form."
    )
    assert para.heading_path == ("Returns policy",) and para.anchor is None

    window = by_text["Return window"]
    assert window.level == 2 and window.anchor == "window"
    assert window.heading_path == ("Returns policy", "Return window")
    assert by_text["electronics: store credit only;"].heading_path == window.heading_path
    assert by_text["Opened items:"].kind == "list_item"

    fees = by_text["Fees"]
    assert fees.anchor == "fees" and fees.heading_path == (
        "Returns policy",
        "Return window",
        "Fees",
    )
    rows = blocks_of(doc, "table_row")
    assert [r.text for r in rows] == ["Item | Fee", "Shoes | 0 EUR", "Furniture | 25 EUR"]
    assert [r.header_row for r in rows] == [True, False, False]
    assert {r.table for r in rows} == {0}
    assert all(r.anchor == "fees" for r in rows)

    (code,) = blocks_of(doc, "code")
    assert code.text == "fee = 25  # furniture\nif opened:\n    fee += 5"
    assert code.heading_path[-1] == "Fees"

    exceptions = by_text["Gift cards cannot be returned."]
    assert exceptions.heading_path == ("Returns policy", "Exceptions")
    assert exceptions.anchor is None


def test_markdown_without_metadata_uses_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path, "Travel-Guide.md", "Intro before any heading.\n\n# Travel guide\n\nBook early.\n"
    )
    doc = parse_file(path, tmp_path)
    assert_offsets(doc)
    assert doc.meta.doc_id == "Travel-Guide"
    assert doc.meta.version == "1"
    assert doc.meta.title == "Travel guide"
    assert doc.meta.doc_type == "document"
    assert doc.meta.access == "staff"  # fail-closed default
    assert doc.blocks[0].heading_path == ()
    assert doc.meta.effective_from is None and doc.meta.owner is None


def test_markdown_default_access_can_be_changed(tmp_path: Path) -> None:
    path = write(tmp_path, "faq.md", "# FAQ\n\nOpen to all.\n")
    assert parse_file(path, tmp_path, default_access="public").meta.access == "public"


def test_front_matter_scalars_stay_strings() -> None:
    doc = parse_bytes(
        b"---\nversion: 2.10\ntitle: No\ndoc-id: 007\nlanguage: en-GB\n---\nSome text here.\n",
        "a.md",
        "markdown",
    )
    assert (doc.meta.version, doc.meta.title, doc.meta.doc_id) == ("2.10", "No", "007")
    assert doc.meta.language == "en"


def test_french_text_language_detected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "retours.txt",
        "Politique de retour\n===================\n\n"
        "Les clients peuvent retourner la plupart des articles dans un délai de trente jours "
        "après la livraison. Les cartes cadeaux ne sont ni reprises ni échangées.\n",
    )
    doc = parse_file(path, tmp_path)
    assert doc.meta.language == "fr"
    assert doc.meta.title == "Politique de retour"


# --------------------------------------------------------------------------- HTML

GUIDE_HTML = """<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>Expenses guide</title>
  <meta name="doc_id" content="expenses-guide">
  <meta name="version" content="5">
  <meta name="doc-type" content="guide">
  <meta name="access" content="public">
  <meta name="effective-from" content="2026-02-01">
  <meta name="author" content="Finance">
  <style>.x { color: red }</style>
  <script>var secret = "script text";</script>
</head>
<body>
  <header><a href="/">Intranet home</a> | Search</header>
  <nav><ul><li>Menu entry</li><li>Another entry</li></ul></nav>
  <main>
    <h1 id="expenses">Expenses guide</h1>
    <p>Claim expenses within <strong>30 days</strong>.<br>Keep receipts.</p>
    <div>Loose text in a div <em>with emphasis</em>.</div>
    <svg><text>svg label</text></svg>
    <a name="meals"></a>
    <h2>Meals</h2>
    <ul>
      <li>Breakfast is included
        <ul><li>Coffee only</li></ul>
      </li>
      <li hidden>Hidden item</li>
    </ul>
    <table>
      <thead><tr><th>Meal</th><th>Limit</th></tr></thead>
      <tbody>
        <tr><td>Lunch</td><td>20 EUR</td></tr>
        <tr><td>Dinner</td><td>35 EUR</td></tr>
      </tbody>
    </table>
    <section id="hotels">
      <h2>Hotels</h2>
      <h3><a name="abroad"></a>Abroad</h3>
      <pre>rate = 150
  if capital: rate = 200</pre>
    </section>
    <noscript>Enable JavaScript</noscript>
  </main>
  <footer>Copyright 2026 Example Corp</footer>
</body>
</html>
"""


def test_html_metadata_blocks_and_anchors(tmp_path: Path) -> None:
    path = write(tmp_path, "guides/expenses.html", GUIDE_HTML)
    doc = parse_file(path, tmp_path)
    assert_offsets(doc)
    meta = doc.meta
    assert (meta.doc_id, meta.version, meta.doc_type, meta.access) == (
        "expenses-guide",
        "5",
        "guide",
        "public",
    )
    assert meta.title == "Expenses guide" and meta.language == "en"
    assert meta.effective_from == date(2026, 2, 1) and meta.owner == "Finance"
    assert meta.format == "html" and meta.source == "guides/expenses.html"

    for dropped in [
        "Menu entry",
        "script text",
        "color",
        "svg label",
        "Hidden item",
        "Intranet home",
        "Copyright",
        "Enable JavaScript",
    ]:
        assert dropped not in doc.text

    texts = [(b.kind, b.text) for b in doc.blocks]
    assert texts == [
        ("heading", "Expenses guide"),
        ("paragraph", "Claim expenses within 30 days. Keep receipts."),
        ("paragraph", "Loose text in a div with emphasis."),
        ("heading", "Meals"),
        ("list_item", "Breakfast is included"),
        ("list_item", "Coffee only"),
        ("table_row", "Meal | Limit"),
        ("table_row", "Lunch | 20 EUR"),
        ("table_row", "Dinner | 35 EUR"),
        ("heading", "Hotels"),
        ("heading", "Abroad"),
        ("code", "rate = 150\n  if capital: rate = 200"),
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["Expenses guide"].anchor == "expenses"
    assert by_text["Meals"].anchor == "meals"
    assert by_text["Coffee only"].heading_path == ("Expenses guide", "Meals")
    assert by_text["Hotels"].anchor == "hotels"
    abroad = by_text["Abroad"]
    assert abroad.anchor == "abroad" and abroad.level == 3
    assert abroad.heading_path == ("Expenses guide", "Hotels", "Abroad")
    assert doc.blocks[-1].anchor == "abroad"
    rows = blocks_of(doc, "table_row")
    assert [r.header_row for r in rows] == [True, False, False]
    assert {r.table for r in rows} == {0}


def test_html_without_headings_parses(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "notice.html",
        "<html><body><div>The office is closed on Friday.</div>"
        "<p>Use the side entrance.</p>Plain body text.</body></html>",
    )
    doc = parse_file(path, tmp_path)
    assert_offsets(doc)
    assert [b.text for b in doc.blocks] == [
        "The office is closed on Friday.",
        "Use the side entrance.",
        "Plain body text.",
    ]
    assert all(b.heading_path == () and b.anchor is None for b in doc.blocks)
    assert doc.meta.title == "notice" and doc.meta.doc_id == "notice"
    assert doc.meta.access == "staff"


def test_html_declared_legacy_charset() -> None:
    data = '<meta charset="windows-1252"><p>Café prices</p>'.encode("cp1252")
    doc = parse_bytes(data, "menu.html", "html")
    assert doc.blocks[0].text == "Café prices"


# --------------------------------------------------------------------------- PDF


def make_pdf(path: Path, *, text: bool = True) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Travel Policy")
    pdf.set_author("HR Team")
    pdf.set_keywords("doc_id=travel-policy; version=2; access=public; effective_from=2026-03-01")
    pdf.add_page()
    if not text:
        pdf.rect(20, 20, 80, 40, style="F")
        pdf.output(str(path))
        return path
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "1. Travel", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(
        0,
        6,
        "Employees may book economy class for flights under six hours. Business class "
        "needs written approval from a director before the booking is made.",
    )
    pdf.ln(4)
    pdf.multi_cell(0, 6, "Hotels must be booked through the travel portal.")
    pdf.ln(4)
    pdf.set_font("Helvetica", "B", 13)
    pdf.cell(0, 8, "1.1 Meals", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Meals are reimbursed up to 40 EUR per day.")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "2. Expenses", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "Submit all receipts within 30 days of the trip.")
    pdf.output(str(path))
    return path


def test_pdf_metadata_pages_and_headings(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "travel.pdf")
    doc = parse_file(path, tmp_path)
    assert_offsets(doc)
    meta = doc.meta
    assert (meta.doc_id, meta.version, meta.access, meta.title, meta.owner) == (
        "travel-policy",
        "2",
        "public",
        "Travel Policy",
        "HR Team",
    )
    assert meta.effective_from == date(2026, 3, 1) and meta.format == "pdf"
    assert meta.language == "en"
    assert [(b.kind, b.page) for b in doc.blocks] == [
        ("heading", 1),
        ("paragraph", 1),
        ("paragraph", 1),
        ("heading", 1),
        ("paragraph", 1),
        ("heading", 2),
        ("paragraph", 2),
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["1.1 Meals"].level == 2
    assert by_text["Meals are reimbursed up to 40 EUR per day."].heading_path == (
        "1. Travel",
        "1.1 Meals",
    )
    assert by_text["Submit all receipts within 30 days of the trip."].heading_path == (
        "2. Expenses",
    )
    assert doc.blocks[1].text.startswith("Employees may book economy class")
    assert doc.blocks[1].text.endswith("before the booking is made.")


def test_pdf_custom_info_keys_beat_keywords(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    source = make_pdf(tmp_path / "src.pdf")
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.add_metadata(
        {"/DocId": "travel-2026", "/Effective-To": "2026-12-31", "/Access": "Staff"}
    )
    with open(tmp_path / "custom.pdf", "wb") as out:
        writer.write(out)
    doc = parse_file(tmp_path / "custom.pdf", tmp_path)
    assert doc.meta.doc_id == "travel-2026"
    assert doc.meta.access == "staff"
    assert doc.meta.effective_to == date(2026, 12, 31)
    assert doc.meta.version == "2"  # still from /Keywords


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "scan.pdf", text=False)
    with pytest.raises(ParseError, match=r"^PDF has no text layer \(a scanned image\?\)$"):
        parse_file(path, tmp_path)


def test_pdf_that_is_not_a_pdf() -> None:
    assert "PDF cannot be read" in parse_error(b"just some text", "pdf")
    assert "PDF cannot be read" in parse_error(b"%PDF-1.7\nbroken", "pdf")


# --------------------------------------------------------------------------- plain text


def test_plain_text_paragraphs_and_underlined_headings(tmp_path: Path) -> None:
    content = (
        "\ufeffOffice handbook\r\n===============\r\n\r\n"
        "Doors open at 8:00.\r\nThey close at 18:00.\r\n\r\n"
        "Parking\r\n-------\r\nSpaces are limited.\r\n\r\n"
        "Ask reception for a badge.\r\n"
    )
    doc = parse_file(write(tmp_path, "handbook.txt", content.encode("utf-8")), tmp_path)
    assert_offsets(doc)
    assert [(b.kind, b.text, b.heading_path) for b in doc.blocks] == [
        ("heading", "Office handbook", ("Office handbook",)),
        ("paragraph", "Doors open at 8:00. They close at 18:00.", ("Office handbook",)),
        ("heading", "Parking", ("Office handbook", "Parking")),
        ("paragraph", "Spaces are limited.", ("Office handbook", "Parking")),
        ("paragraph", "Ask reception for a badge.", ("Office handbook", "Parking")),
    ]
    assert [b.level for b in blocks_of(doc, "heading")] == [1, 2]
    assert doc.meta.format == "text" and doc.meta.title == "Office handbook"


def test_unicode_is_nfc_normalised() -> None:
    doc = parse_bytes("Cafe\u0301 ouvert.".encode(), "a.txt", "text")
    assert doc.blocks[0].text == "Café ouvert."


# --------------------------------------------------------------------------- inventory override


def test_inventory_overrides_file_metadata(tmp_path: Path) -> None:
    write(tmp_path, "policies/returns.md", RETURNS_MD)
    write(
        tmp_path,
        "inventory.csv",
        "path,version,access,owner,title\npolicies/returns.md,4,staff,,\n",
    )
    inventory = load_inventory(tmp_path)
    (path,) = discover(tmp_path)
    doc = parse_file(path, tmp_path, inventory)
    assert doc.meta.version == "4"  # inventory beats front matter
    assert doc.meta.access == "staff"
    assert doc.meta.owner == "Customer care"  # empty cell: front matter kept
    assert doc.meta.title == "Returns policy"
    assert doc.meta.doc_id == "returns-policy"


def test_inventory_values_are_validated(tmp_path: Path) -> None:
    path = write(tmp_path, "a.md", "# A\n\nText.\n")
    inventory = {"a.md": {"effective_from": "next week"}}
    with pytest.raises(ParseError, match=r"^inventory.csv: effective_from 'next week' is not"):
        parse_file(path, tmp_path, inventory)


# --------------------------------------------------------------------------- bad input


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=r"^empty file$"):
        parse_file(write(tmp_path, "empty.md", b""), tmp_path)
    assert parse_error(b"  \n\n ", "text").startswith("empty file")


def test_binary_file_named_md() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)) * 4
    assert parse_error(png) == "not a text file (binary content)"


def test_invalid_utf8_after_a_utf8_bom() -> None:
    # a UTF-8 BOM declares the encoding: bad bytes after it are not second-guessed
    data = b"\xef\xbb\xbf# Title\n\nCaf\xe9 ok\n"
    assert parse_error(data) == "not valid UTF-8 (byte 0xe9 at position 15)"


def test_invalid_utf8_in_a_declared_utf8_page() -> None:
    data = b'<meta charset="utf-8"><p>Caf\xe9 ok</p>'
    assert parse_error(data, "html").startswith("not valid UTF-8 (byte 0xe9")


FRENCH = (
    "# Politique de congés\n\nLes employés ont droit à vingt-cinq jours de congé payé par "
    "année. Les « jours fériés » ne sont pas décomptés — voir l’annexe. Coût : 12 €.\n"
)


@pytest.mark.parametrize("fmt", ["markdown", "text", "html"])
def test_a_cp1252_file_without_a_declared_charset_is_detected(fmt: str) -> None:
    body = FRENCH if fmt != "html" else "<h1>Politique de congés</h1><p>" + FRENCH[23:] + "</p>"
    doc = parse_bytes(body.encode("cp1252"), f"conges.{fmt}", fmt)  # type: ignore[arg-type]
    assert "Les employés ont droit à vingt-cinq jours de congé payé" in doc.text
    assert "« jours fériés »" in doc.text and "l’annexe" in doc.text and "12 €" in doc.text


def test_a_latin1_file_is_detected() -> None:
    data = "Où déposer la note de frais ? À l'accueil, près de l'entrée.\n".encode("latin-1")
    assert "Où déposer la note de frais ? À l'accueil" in parse_bytes(data, "a.txt", "text").text


def test_cp1252_wins_a_tie_with_cp1250() -> None:
    # charset-normalizer ranks cp1250 first on this text, where 0xe0 would read "ŕ", not "à"
    data = ("Les employés ont droit à des congés payés. " * 200).encode("cp1252")
    assert parse_bytes(data, "a.txt", "text").text.startswith("Les employés ont droit à des")


def test_damaged_utf8_is_refused_not_guessed() -> None:
    data = ("Les employés ont droit à des congés. " * 50).encode() + b"\xff end"
    assert parse_error(data, "text") == "not valid UTF-8 (byte 0xff at position 2000)"


def test_bytes_that_fit_no_encoding_stay_refused() -> None:
    noise = bytes(range(128, 256)) * 8  # no NUL, no control bytes: only detection can say no
    assert parse_error(noise, "text").startswith("not valid UTF-8 (byte 0x80")


def test_front_matter_not_yaml() -> None:
    message = parse_error(b"---\ntitle: Returns\nversion: [3\naccess: public\n---\n# Body\n")
    assert message.startswith("front matter is not valid YAML: ")
    assert "line " in message


def test_front_matter_not_a_mapping() -> None:
    assert "must be a mapping" in parse_error(b"---\n- a\n- b\n---\nText.\n")


def test_date_that_is_not_a_date() -> None:
    message = parse_error(b"---\neffective_from: soon\n---\nText.\n")
    assert message == "effective_from 'soon' is not a date (use YYYY-MM-DD)"
    message = parse_error(b"---\neffective_to: 2026-02-30\n---\nText.\n")
    assert message == "effective_to '2026-02-30' is not a date (use YYYY-MM-DD)"


def test_effective_to_before_effective_from() -> None:
    message = parse_error(
        b"---\neffective_from: 2026-03-01\neffective_to: 2026-01-01\n---\nText.\n"
    )
    assert message == "effective_to 2026-01-01 is before effective_from 2026-03-01"


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:
        f.truncate(50_000_000)  # a 50 MB file, refused before it is read
    with pytest.raises(ParseError, match=r"^file is 50\.0 MB, over the 20 MB limit$"):
        parse_file(path, tmp_path)


def test_access_value_not_allowed() -> None:
    assert (
        parse_error(b"---\naccess: secret\n---\nText.\n")
        == "access 'secret' is not public or staff"
    )
    assert "is not public or staff" in parse_error(b"Text.\n", default_access="everyone")


def test_bad_language_and_unsupported_suffix(tmp_path: Path) -> None:
    assert "not a language code" in parse_error(b"---\nlanguage: English!\n---\nText.\n")
    with pytest.raises(ParseError, match=r"unsupported file type '\.xlsx'"):
        parse_file(write(tmp_path, "a.xlsx", "x"), tmp_path)


def test_front_matter_without_body() -> None:
    assert parse_error(b"---\ndoc_id: x\n---\n\n").startswith("no text found")


# --------------------------------------------------------------------------- review dates


def test_review_by_in_front_matter_and_its_aliases() -> None:
    """`review_by` (any case or separator) is a date; review_date, next_review and
    next-review-date are aliases a canonical spelling beats."""
    for key in ("review_by", "Review-By", "ReviewBy", "review_date", "next_review",
                "Next Review Date", "review due"):  # fmt: skip
        doc = parse_bytes(f"---\n{key}: 2027-01-31\n---\nText.\n".encode(), "a.md", "markdown")
        assert doc.meta.review_by == date(2027, 1, 31), key
    both = b"---\nnext_review: 2027-06-30\nreview_by: 2027-01-31\n---\nText.\n"
    assert parse_bytes(both, "a.md", "markdown").meta.review_by == date(2027, 1, 31)
    plain = parse_bytes(b"---\nowner: IT\n---\nText.\n", "a.md", "markdown")
    assert plain.meta.review_by is None


def test_review_by_that_is_not_a_date_is_refused_like_an_effective_date(tmp_path: Path) -> None:
    message = parse_error(b"---\nreview_by: next spring\n---\nText.\n")
    assert message == "review_by 'next spring' is not a date (use YYYY-MM-DD)"
    message = parse_error(b"---\nreview_date: 2027-02-30\n---\nText.\n")
    assert message == "review_by '2027-02-30' is not a date (use YYYY-MM-DD)"
    path = write(tmp_path, "a.md", "# A\n\nText.\n")
    with pytest.raises(ParseError, match=r"^inventory.csv: review_by '31/01/2027' is not a date"):
        parse_file(path, tmp_path, {"a.md": {"review_by": "31/01/2027"}})


def test_review_by_in_html_meta_rst_fields_and_inventory(tmp_path: Path) -> None:
    page = (
        b"<html><head><meta name='review-by' content='2027-03-01'></head>"
        b"<body><h1>Guide</h1><p>Text of the guide.</p></body></html>"
    )
    assert parse_bytes(page, "g.html", "html").meta.review_by == date(2027, 3, 1)
    pytest.importorskip("docutils")
    rst = b"Leave policy\n============\n\n:review_by: 2027-04-01\n:owner: HR\n\nText.\n"
    doc = parse_bytes(rst, "leave.rst", "rst")
    assert (doc.meta.review_by, doc.meta.owner) == (date(2027, 4, 1), "HR")
    assert "review_by" not in doc.text
    write(tmp_path, "policies/returns.md", RETURNS_MD)
    write(tmp_path, "inventory.csv", "path,Review By\npolicies/returns.md,2027-05-01\n")
    inventory = load_inventory(tmp_path)
    assert inventory == {"policies/returns.md": {"review_by": "2027-05-01"}}
    (path,) = discover(tmp_path)
    assert parse_file(path, tmp_path, inventory).meta.review_by == date(2027, 5, 1)


def test_review_by_in_pdf_keywords_and_custom_info(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    source = make_pdf(tmp_path / "src.pdf")
    assert parse_file(source, tmp_path).meta.review_by is None
    for name, info in (
        ("keywords.pdf", {"/Keywords": "doc_id=travel-policy; review_by=2027-06-30"}),
        ("custom.pdf", {"/ReviewBy": "2027-06-30"}),
    ):
        writer = PdfWriter(clone_from=PdfReader(source))
        writer.add_metadata(info)
        with open(tmp_path / name, "wb") as out:
            writer.write(out)
        assert parse_file(tmp_path / name, tmp_path).meta.review_by == date(2027, 6, 30), name


# --------------------------------------------------------------------------- property

_WORD = st.text(
    alphabet=string.ascii_letters + string.digits + "*_`[]()!<>&.,:#-'\"éàü\\",
    min_size=1,
    max_size=8,
)
_LINE = st.lists(_WORD, min_size=1, max_size=8).map(" ".join)
_ELEMENT = st.one_of(
    st.tuples(st.integers(1, 6), _LINE).map(lambda t: "#" * t[0] + " " + t[1]),
    _LINE.map(lambda s: "Para " + s),
    st.lists(_LINE.map(lambda s: "- " + s), min_size=1, max_size=4).map("\n".join),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ELEMENT, min_size=1, max_size=12).map("\n\n".join))
def test_markdown_offsets_property(markdown: str) -> None:
    try:
        doc = parse_bytes(markdown.encode(), "random.md", "markdown")
    except ParseError as exc:  # only when every element rendered to nothing
        assume("no text found" not in str(exc))
        raise
    assert_offsets(doc)
    for block in doc.blocks:
        if block.kind != "heading":
            headings = [b for b in doc.blocks if b.kind == "heading" and b.end <= block.start]
            if headings:
                assert block.heading_path[-1] in {h.text for h in headings}
