"""PDF: the text of each page from PDFium (`pypdfium2`), its lines rebuilt from the page's text
boxes, a blank line where the gap above a line passes the page's line spacing (its tightest gap)
by `PARAGRAPH_GAP` of the usual line height; pypdf (layout mode, then plain) for a page PDFium cannot read, and pypdf for the file's
structure, encryption and info fields. Chosen by measurement (`bench/experiments/pdf_text.py`,
bench/results/pdf_text.md): on PDFs made by DocBook/dblatex (Debian's FAQ, the New
Maintainers' Guide), pypdf's layout mode ran words together ("Thisdocument maybeused...")
where PDFium ran none, and PDFium took far less time.

Per page, lines are grouped into paragraphs at blank lines and after a line that ends a
sentence (. ! ? : ;) and is shorter than 70% of the page's longest line. A line that starts
with a bullet (•, -, *, ...) starts a list item. A line is a heading when it is at most 80
characters and 12 words, has no final punctuation, starts with a capital letter or a section
number ("2.1 Meals", "Section 3 Scope"), and is either alone between blank lines or short
(under 70% of the longest line); an unnumbered one must also be Title-Cased or ALL CAPS unless
it is both alone and short. Its level is the depth of its number ("2" -> 1, "2.1" -> 2);
unnumbered headings are level 1. A page number alone on the first or last line of a page is
dropped, and so are running heads and feet (`_without_running_lines`: a line repeated at the
same edge of other pages, or carrying the page's number). Lines are joined with a space; a
line ending in "-" is joined without one (the hyphen is kept). Metadata comes from the info fields (Title, Author, Keywords "key=value" pairs and
custom keys such as /DocId).

Before pypdf or PDFium reads a stream, `tether.ingest.parse.pdf_inflate.check_inflation`
counts what every stream inflates to, in pieces: a file with a stream over 100 MB inflated
(`MAX_STREAM_INFLATED`), streams over 200 MB in all (`MAX_INFLATED`), or an inline image that
inflates past its declared size is refused with one line (a compression bomb), in a few MB of
memory whatever the bomb's size; an encrypted file is counted again decrypted.

What it cannot do: no OCR (a scanned PDF without a text layer is refused); tables come out as
paragraphs; reading order is top to bottom, then left to right, by text box (two columns side
by side interleave line by line); lines set closer than their font's height pick up fragments
of their neighbours' letters (PDFium reads a box's rectangle); headings are a guess.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tether.errors import ParseError
from tether.ingest.metadata import properties_meta, squash
from tether.ingest.parse.blocks import Builder, Parsed, short
from tether.ingest.parse.pdf_inflate import check_inflation, decrypter
from tether.types import BlockKind

_PAGE_NUMBER = re.compile(
    r"^[-–—(\s]*(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?[-–—)\s]*$", re.IGNORECASE
)
_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·*\-–—]|\(?[a-z0-9]{1,2}\))\s+(?=\S)", re.IGNORECASE)
_NUMBERED_ITEM = re.compile(r"^\d{1,2}[.)]\s+(?=\S)")  # "1. Book a repair", when no heading
_NUMBERED = re.compile(
    r"^(?:(?:section|chapter|article|part|annex|appendix)\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?\s+(?=\S)",
    re.IGNORECASE,
)
_SENTENCE_END = ".!?:;…"
_SHORT = 0.7


def _pdf_heading_level(line: str, longest: int, alone: bool) -> int | None:
    """The heading level of a PDF line, or None when it does not look like a heading."""
    if not 2 <= len(line) <= 80 or len(line.split()) > 12 or line[-1] in _SENTENCE_END + ",":
        return None
    if _PAGE_NUMBER.match(line) or sum(ch.isalpha() for ch in line) < 2:
        return None
    short = len(line) < _SHORT * longest
    numbered = _NUMBERED.match(line)
    if numbered:
        rest = line[numbered.end() :]
        if not rest[:1].isupper() or not (short or alone):
            return None
        return min(numbered.group(1).count(".") + 1, 6)
    if _BULLET.match(line) or not line[0].isupper():
        return None
    words = [w for w in line.split() if w[:1].isalpha() and len(w) > 3]
    titled = line.isupper() or (
        bool(words) and sum(w[0].isupper() for w in words) >= 0.5 * len(words)
    )
    return 1 if (alone and (short or titled)) or (short and titled) else None


def _join_lines(lines: list[str]) -> str:
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha():
            out += line
        else:
            out += " " + line
    return out


def _pdf_page_blocks(page_text: str) -> list[tuple[BlockKind, str, int | None]]:
    """(kind, text, heading level) for one page's extracted text."""
    lines = [" ".join(line.split()) for line in page_text.split("\n")]
    filled = [i for i, line in enumerate(lines) if line]
    for i in {filled[0], filled[-1]} if filled else set():
        if _PAGE_NUMBER.match(lines[i]):
            lines[i] = ""
    longest = max((len(line) for line in lines), default=0)
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line:
            chunks[-1].append(line)
        elif chunks[-1]:
            chunks.append([])
    out: list[tuple[BlockKind, str, int | None]] = []
    for chunk in chunks:
        para: list[str] = []
        kind: BlockKind = "paragraph"
        for j, line in enumerate(chunk):
            # alone: the only line between blank lines, or the first one and a list follows
            follows = chunk[j + 1] if j + 1 < len(chunk) else ""
            listed = bool(_BULLET.match(follows) or _NUMBERED_ITEM.match(follows))
            alone = len(chunk) == 1 or (j == 0 and listed)
            level = _pdf_heading_level(line, longest, alone=alone)
            if level is not None:
                if para:
                    out.append((kind, _join_lines(para), None))
                para, kind = [], "paragraph"
                out.append(("heading", line, level))
                continue
            bullet = _BULLET.match(line)
            if bullet or _NUMBERED_ITEM.match(line):
                if para:
                    out.append((kind, _join_lines(para), None))
                # a bullet goes; a step's number stays ("2. Bring the item")
                para, kind = [line[bullet.end() :] if bullet else line], "list_item"
            else:
                para.append(line)
            if line[-1] in _SENTENCE_END and len(line) < _SHORT * longest:
                out.append((kind, _join_lines(para), None))
                para, kind = [], "paragraph"
        if para:
            out.append((kind, _join_lines(para), None))
    return out


RUNNING_MAX_CHARS = 80  # a running head or foot is one short line
_DIVISION = re.compile(r"^(?:chapter|part|section|appendix|annex)\s+\S+$", re.IGNORECASE)
_ROMAN = re.compile(r"(?<!\S)[ivxlc]{1,6}(?!\S)")
_EDGE_NUMBER = re.compile(r"^(\d{1,4})\s+\S|\S\s+(\d{1,4})$")


def _shape(line: str) -> str:
    """A line with its numbers (digits; lower-case Roman numerals standing alone) as '#'."""
    return _ROMAN.sub("#", re.sub(r"\d+", "#", line))


def _edge_number(line: str) -> int | None:
    """The number a line starts or ends with, standing apart ("8 Installation"), or None."""
    found = _EDGE_NUMBER.search(line)
    return int(found.group(1) or found.group(2)) if found else None


def _without_running_lines(pages: list[str]) -> list[str]:
    """Each page's text without its running head and foot. The first or last line of a page
    (80 characters at most) goes when:
    - the same line (spaces aside) stands at that edge of another page ("Generated by
      Doxygen 1.9.4");
    - a line of its shape, numbers aside, stands there on three or more pages ("Debian New
      Maintainers' Guide 5 / 57");
    - it starts or ends with a number that runs with the pages: the number minus the page's
      index is the commonest such difference, seen on three or more pages ("8 Installation",
      "2.3 Compiling from source on Windows 9").
    A line that names a division alone ("Chapter 2" atop a chapter's first page) goes only
    when it repeats exactly. A head that names each page's section without a number (Debian's
    FAQ: "CHAPTER 3. CHOOSING A DEBIAN … 3.1. WHICH …") stays unless it repeats."""
    split = [page.split("\n") for page in pages]
    # per page, top / bottom: (line index, the line with its spaces squeezed, its edge number)
    edges: list[dict[str, tuple[int, str, int | None]]] = []
    for lines in split:
        filled = [i for i, line in enumerate(lines) if line.strip()]
        ends: dict[str, tuple[int, str, int | None]] = {}
        for where, i in (("top", filled[0]), ("bottom", filled[-1])) if filled else ():
            line = " ".join(lines[i].split())
            if len(line) <= RUNNING_MAX_CHARS:
                ends[where] = (i, line, _edge_number(line))
        edges.append(ends)
    seen: Counter[tuple[str, str]] = Counter()
    shapes: Counter[tuple[str, str]] = Counter()
    offsets: Counter[int] = Counter()
    for n, ends in enumerate(edges):
        for where, (_, line, _number) in ends.items():
            seen[(where, line)] += 1
            shapes[(where, _shape(line))] += 1
        numbers = {number for _, _, number in ends.values() if number is not None}
        offsets.update(number - n for number in numbers)
    common = offsets.most_common(1)
    running = common[0][0] if common and common[0][1] >= 3 else None
    for n, (lines, ends) in enumerate(zip(split, edges, strict=True)):
        for where, (i, line, number) in ends.items():
            if seen[(where, line)] >= 2 or (
                not _DIVISION.match(line)
                and (
                    shapes[(where, _shape(line))] >= 3
                    or (number is not None and number - n == running)
                )
            ):
                lines[i] = ""
    return ["\n".join(lines) for lines in split]


def _pdf_info_meta(info: Mapping[str, Any] | None) -> dict[str, Any]:
    if not info:
        return {}
    values: dict[str, str] = {}
    for key in list(info.keys()):
        try:
            value = info[key]
            value = value.get_object() if hasattr(value, "get_object") else value
        except Exception:
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if isinstance(value, str) and value.strip():
            values[str(key).lstrip("/")] = value.strip()
    fields: list[tuple[str, Any]] = []
    title = values.get("Title", "")
    if title and not re.search(r"^microsoft \w+ - |\.(docx?|pdf|odt|rtf)$|^untitled$", title, re.I):
        fields.append(("title", title))
    if values.get("Author"):
        fields.append(("author", values["Author"]))
    info_pairs = [
        (k, v) for k, v in values.items() if squash(k) not in ("title", "author", "keywords")
    ]
    return properties_meta(fields, values.get("Keywords", ""), info_pairs)


def parse(data: bytes) -> Parsed:
    if b"%PDF-" not in data[:1024]:
        raise ParseError("PDF cannot be read: no %PDF header (not a PDF file)")
    check_inflation(data)  # before pypdf or PDFium inflates a stream (a compression bomb)
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                ok = bool(reader.decrypt(""))
            except Exception:
                ok = False
            if not ok:
                raise ParseError("PDF cannot be read: it is encrypted (password protected)")
            decrypt = decrypter(reader)
            if decrypt is None:
                raise ParseError(
                    "PDF cannot be read: it is encrypted, and this pypdf cannot decrypt its"
                    " streams to check what they inflate to"
                )
            check_inflation(data, decrypt)
        pages = list(reader.pages)
        try:
            info = reader.metadata
        except Exception:
            info = None
    except ParseError:
        raise
    except RecursionError:
        raise ParseError("PDF cannot be read: its structure is nested too deeply") from None
    except Exception as exc:  # pypdf raises many types on malformed files; all mean "bad file"
        raise ParseError(f"PDF cannot be read: {short(exc)}") from None
    if not pages:
        raise ParseError("PDF cannot be read: it has no pages")

    found = _pdfium_pages(data, len(pages)) or [None] * len(pages)
    texts = _without_running_lines(
        [
            _page_text(page) if text is None else text
            for page, text in zip(pages, found, strict=True)
        ]
    )
    b = Builder()
    for number, page_text in enumerate(texts, start=1):
        for kind, text, level in _pdf_page_blocks(page_text):
            if kind == "heading":
                b.heading(text, level or 1, page=number)
            else:
                b.add(kind, text, page=number)
    return b.result(_pdf_info_meta(info), "PDF has no text layer (a scanned image?)")


def _page_text(page: Any) -> str:
    try:
        return str(page.extract_text(extraction_mode="layout") or "")
    except Exception:
        pass
    try:
        return str(page.extract_text() or "")
    except Exception as exc:
        raise ParseError(f"PDF cannot be read: {short(exc)}") from None


# PDFium marks a hyphen that breaks a word at a line's end as U+0002 (U+FFFE in its ranges):
# a hyphen again, so that the lines join as pypdf's did ("co-" + "operation")
_SOFT_HYPHENS = re.compile("[\x02\ufffe]")
# a gap wider than the page's line spacing by this share of a line: a blank line
PARAGRAPH_GAP = 0.4


def _pdfium_pages(data: bytes, count: int) -> list[str | None] | None:
    """Each page's text by PDFium (None for a page it cannot read), or None when PDFium cannot
    open the file (pypdf then reads every page)."""
    try:
        import pypdfium2 as pdfium
    except ImportError:  # an install without it: pypdf alone
        return None
    try:
        doc = pdfium.PdfDocument(data, password="")
    except Exception:
        return None
    out: list[str | None] = []
    try:
        for i in range(min(count, len(doc))):
            try:
                out.append(_pdfium_page_text(doc[i]))
            except Exception:
                out.append(None)
    finally:
        doc.close()
    out += [None] * (count - len(out))
    return out


def _pdfium_page_text(page: Any) -> str:
    """A page's lines, top to bottom, each the page's text boxes at that height left to right;
    a blank line where the gap above passes the line spacing by `PARAGRAPH_GAP` of a line."""
    textpage = page.get_textpage()
    try:
        boxes = []
        for i in range(textpage.count_rects()):
            left, bottom, right, top = textpage.get_rect(i)
            raw = textpage.get_text_bounded(left, bottom, right, top)
            text = " ".join(_SOFT_HYPHENS.sub("-", raw).split())
            if text:
                boxes.append((left, bottom, right, top, text))
    finally:
        textpage.close()
    lines: list[list[tuple[float, float, float, float, str]]] = []
    for box in sorted(boxes, key=lambda b: (-(b[1] + b[3]) / 2, b[0])):
        middle = (box[1] + box[3]) / 2
        if lines and lines[-1][0][1] <= middle <= lines[-1][0][3]:
            lines[-1].append(box)
        else:
            lines.append([box])
    heights = sorted(b[3] - b[1] for line in lines for b in line)
    usual = heights[len(heights) // 2] if heights else 0.0
    tops = [max(b[3] for b in line) for line in lines]
    bottoms = [min(b[1] for b in line) for line in lines]
    gaps = [bottoms[i - 1] - tops[i] for i in range(1, len(lines))]
    # the page's tightest gap is its line spacing; a paragraph leaves more than that
    spacing = min((g for g in gaps if g >= 0), default=0.0)
    out: list[str] = []
    for i, line in enumerate(lines):
        if i and gaps[i - 1] > spacing + PARAGRAPH_GAP * usual:
            out.append("")
        out.append(" ".join(b[4] for b in sorted(line, key=lambda b: b[0])))
    return "\n".join(out)
