"""DOCX (python-docx): the body's paragraphs, headings, lists and tables in document order, and
metadata from the core properties (title, author, language, `key=value;` pairs in the keywords,
as in a PDF) and the custom properties (a `doc_id` or `access` property), which win over the
keywords.

A paragraph is a heading when its style, or a style it is based on, is "Heading N" (level N)
or "Title" (level 1; the headings after a title then sit one level below it), or when it
carries an outline level; its anchor is the first bookmark in
it (Word's hidden `_GoBack` excepted). A paragraph is a list item when it is numbered or
bulleted (its own numbering or a "List ..." style). A paragraph in a code style ("Code",
"HTML Preformatted", "Macro Text"...) is code. Each table row is one `table_row` block (cells
joined by " | ", a cell's merged span once); the first row of a table is its header row, and so
is every row marked "repeat as header row". Content controls are read through; a table of
contents (its content control, or paragraphs in a "TOC N" style) is left out as navigation.

What it cannot do: headers, footers, footnotes, comments, text boxes and tracked deletions are
not read; numbering is not rendered ("1." is not part of a list item's text); heading levels
come from styles only (a paragraph made to look like a heading by direct formatting stays a
paragraph); a file whose parts unpack to more than `MAX_UNPACKED` bytes is refused (a zip
bomb).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from tether.errors import ParseError
from tether.ingest.metadata import properties_meta
from tether.ingest.parse.blocks import Builder, Parsed, short
from tether.types import BlockKind

MAX_UNPACKED = 200_000_000  # bytes all the parts of one .docx may unpack to
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_CODE_STYLES = re.compile(r"code|preformatted|macro|source|verbatim", re.IGNORECASE)
_TOC_STYLE = re.compile(r"^(toc|contents)\s*(heading|\d)", re.IGNORECASE)
_CUSTOM_PART = "/docProps/custom.xml"


def _check_zip(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ParseError(f"DOCX cannot be read: not a zip archive ({short(exc)})") from None
    if unpacked > MAX_UNPACKED:
        raise ParseError(
            f"DOCX cannot be read: its parts unpack to {unpacked / 1e6:.0f} MB,"
            f" over the {MAX_UNPACKED / 1e6:g} MB limit"
        )


class _Styles:
    """Style id -> (heading level | None, list style, code style, toc style), through the
    styles a style is based on."""

    def __init__(self, document: Any) -> None:
        self.by_id: dict[str, Any] = {}
        for style in document.styles:
            if style.style_id:
                self.by_id[style.style_id] = style

    def chain(self, style_id: str | None) -> Iterator[tuple[str, str]]:
        seen: set[str] = set()
        style = self.by_id.get(style_id or "")
        while style is not None and style.style_id not in seen:
            seen.add(style.style_id)
            yield style.style_id or "", style.name or ""
            style = style.base_style

    def kind(self, style_id: str | None) -> tuple[BlockKind | None, int]:
        for sid, name in self.chain(style_id):
            for label in (name, sid):
                match = _HEADING.match(label.strip())
                if match:
                    return "heading", int(match.group(1))
                if label.strip().lower() == "title":
                    return "heading", 0
                if _TOC_STYLE.match(label.strip()):
                    return None, 0
                if label.strip().lower().startswith("list"):
                    return "list_item", 0
                if _CODE_STYLES.search(label):
                    return "code", 0
        return "paragraph", 0


def _val(el: Any, path: str) -> str | None:
    found = el.find(path)
    return None if found is None else found.get(f"{_W}val")


def _paragraph_text(p: Any) -> str:
    """The visible text of a <w:p>: runs (hyperlinks and fields included), tabs and breaks as
    spaces or newlines, deleted text left out."""
    parts: list[str] = []
    for el in p.iter(f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"):
        if any(a.tag == f"{_W}del" for a in el.iterancestors()):
            continue
        if el.tag == f"{_W}t":
            parts.append(el.text or "")
        else:
            parts.append("\t" if el.tag == f"{_W}tab" else "\n")
    return "".join(parts)


def _bookmark(p: Any) -> str | None:
    for mark in p.iter(f"{_W}bookmarkStart"):
        name = (mark.get(f"{_W}name") or "").strip()
        if name and name != "_GoBack":
            return name
    return None


def _is_toc(sdt: Any) -> bool:
    gallery = sdt.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
    return gallery is not None and "contents" in (gallery.get(f"{_W}val") or "").lower()


class _DocxWalker:
    def __init__(self, builder: Builder, styles: _Styles) -> None:
        self.b = builder
        self.styles = styles
        self.tables = 0
        self.shift = 0  # 1 once a "Title" paragraph is met: its headings nest below it

    def body(self, parent: Any) -> None:
        for el in parent:
            if el.tag == f"{_W}p":
                self.paragraph(el)
            elif el.tag == f"{_W}tbl":
                self.table(el)
            elif el.tag == f"{_W}sdt" and not _is_toc(el):
                content = el.find(f"{_W}sdtContent")
                if content is not None:
                    self.body(content)

    def paragraph(self, p: Any) -> None:
        kind, level = self.styles.kind(_val(p, f"{_W}pPr/{_W}pStyle"))
        if kind is None:
            return
        outline = _val(p, f"{_W}pPr/{_W}outlineLvl")
        if kind != "heading" and outline is not None and outline.isdigit() and int(outline) < 9:
            kind, level = "heading", int(outline) + 1
        text = _paragraph_text(p)
        if kind == "heading":
            if level == 0 and self.b.heading(text, 1, _bookmark(p)):
                self.shift = 1
            elif level:
                self.b.heading(text, min(6, level + self.shift), _bookmark(p))
        else:
            if kind == "paragraph" and p.find(f"{_W}pPr/{_W}numPr") is not None:
                kind = "list_item"
            self.b.add(kind, text)

    def table(self, tbl: Any) -> None:
        index = self.tables
        self.tables += 1
        for number, tr in enumerate(tbl.iter(f"{_W}tr")):
            if next((a for a in tr.iterancestors(f"{_W}tbl")), None) is not tbl:
                continue  # a nested table's row: its text is in the outer cell
            cells = [
                " ".join(_paragraph_text(p) for p in tc.iter(f"{_W}p"))
                for tc in tr.findall(f"{_W}tc")
            ]
            header = number == 0 or tr.find(f"{_W}trPr/{_W}tblHeader") is not None
            texts = [" ".join(c.split()) for c in cells]
            if any(texts):
                self.b.add("table_row", " | ".join(texts), header_row=header, table=index)


def _core_meta(document: Any) -> dict[str, Any]:
    core = document.core_properties
    fields: list[tuple[str, Any]] = []
    for key, value in (
        ("title", core.title),
        ("author", core.author),
        ("language", core.language),
        ("version", core.version),
    ):
        if isinstance(value, str) and value.strip():
            fields.append((key, value.strip()))
    return properties_meta(fields, core.keywords or "", _custom_properties(document))


def _custom_properties(document: Any) -> list[tuple[str, Any]]:
    """The (name, text) of each custom property (docProps/custom.xml), when there is one."""
    for part in document.part.package.iter_parts():
        if str(part.partname) == _CUSTOM_PART:
            import lxml.etree

            parser = lxml.etree.XMLParser(resolve_entities=False, no_network=True)
            root = lxml.etree.fromstring(part.blob, parser=parser)
            return [
                (prop.get("name"), "".join(prop.itertext()).strip())
                for prop in root
                if prop.get("name") and "".join(prop.itertext()).strip()
            ]
    return []


def parse(data: bytes) -> Parsed:
    _check_zip(data)
    try:
        import docx
    except ImportError:
        raise ParseError("DOCX needs the python-docx package (pip install python-docx)") from None

    try:
        document = docx.Document(io.BytesIO(data))
        b = Builder()
        _DocxWalker(b, _Styles(document)).body(document.element.body)
        meta = _core_meta(document)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("DOCX cannot be read: its structure is nested too deeply") from None
    except Exception as exc:  # python-docx and lxml raise many types on malformed files
        raise ParseError(f"DOCX cannot be read: {short(exc)}") from None
    return b.result(meta, "no text found (the document has no text in its body)")
