"""Build the demo collection's PDF files from their Markdown sources, reproducibly.

Each source in ``src/tether/demo/pdf_sources/*.md`` has YAML front matter with the
document's metadata and an ``output`` key (the PDF's path inside the collection folder).
The body uses a small subset of Markdown: ``#`` title, ``##`` section headings,
paragraphs (one per line) and ``- `` list items.

The metadata goes into the PDF document info dictionary: /Title, /Author (= owner),
/Subject (= doc_type) and /Keywords, which holds ``doc_id=...; version=...; doc_type=...;
access=...; language=...; effective_from=...; effective_to=...``. Headings are drawn in a
larger bold font and are also written to the PDF outline (bookmarks).

The output is byte-identical on every run: the creation date comes from the document's
effective_from date, the producer string is fixed, and the file ID is derived from the
source text. Usage::

    python scripts/build_demo_pdfs.py [--out DIR] [--src DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import yaml
from fpdf import FPDF

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "src" / "tether" / "demo"
DEFAULT_SRC = DEMO / "pdf_sources"
DEFAULT_OUT = DEMO / "collection"

KEYWORD_FIELDS = (
    "doc_id",
    "version",
    "doc_type",
    "access",
    "language",
    "effective_from",
    "effective_to",
)
PRODUCER = "tether scripts/build_demo_pdfs.py"


class DemoPDF(FPDF):
    """FPDF with a file ID fixed from the source text, so rebuilds are identical."""

    def __init__(self, file_id_seed: str) -> None:
        super().__init__(format="A4")
        digest = hashlib.md5(file_id_seed.encode("utf-8")).hexdigest().upper()
        self._fixed_id = f"<{digest}><{digest}>"

    def file_id(self) -> str:
        return self._fixed_id


def split_front_matter(text: str) -> tuple[dict, str]:
    if not text.startswith("---\n"):
        raise ValueError("source has no YAML front matter")
    head, _, body = text[4:].partition("\n---\n")
    meta = yaml.safe_load(head)
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    return meta, body


def as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def keywords(meta: dict) -> str:
    return "; ".join(f"{key}={as_text(meta.get(key))}" for key in KEYWORD_FIELDS)


def check_latin1(text: str, source: Path) -> None:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError as error:
        bad = text[error.start : error.end]
        raise ValueError(f"{source.name}: character {bad!r} is not in the PDF core font") from None


def build_one(source: Path, out_dir: Path) -> Path:
    raw = source.read_text(encoding="utf-8")
    check_latin1(raw, source)
    meta, body = split_front_matter(raw)
    for key in ("output", "doc_id", "version", "title", "doc_type", "access", "owner"):
        if not meta.get(key):
            raise ValueError(f"{source.name}: front matter lacks {key}")
    effective_from = meta.get("effective_from")
    if not isinstance(effective_from, date):
        raise ValueError(f"{source.name}: effective_from must be a YYYY-MM-DD date")

    pdf = DemoPDF(file_id_seed=raw)
    pdf.set_creation_date(
        datetime(effective_from.year, effective_from.month, effective_from.day, tzinfo=UTC)
    )
    pdf.set_title(as_text(meta["title"]))
    pdf.set_author(as_text(meta["owner"]))
    pdf.set_subject(as_text(meta["doc_type"]))
    pdf.set_keywords(keywords(meta))
    pdf.set_creator(PRODUCER)
    pdf.set_producer(PRODUCER)
    pdf.set_lang(as_text(meta.get("language") or "en"))
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.set_margins(20, 20, 20)
    pdf.add_page()

    for line in body.splitlines():
        line = line.rstrip()
        if not line:
            continue
        if line.startswith("# "):
            heading = line[2:].strip()
            pdf.start_section(heading, level=0)
            pdf.set_font("Helvetica", style="B", size=18)
            pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
        elif line.startswith("## "):
            heading = line[3:].strip()
            pdf.ln(4)
            pdf.start_section(heading, level=1)
            pdf.set_font("Helvetica", style="B", size=14)
            pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        elif line.startswith("- "):
            pdf.set_font("Helvetica", size=11)
            pdf.set_x(pdf.l_margin + 4)
            pdf.multi_cell(0, 5.5, "- " + line[2:].strip(), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        else:
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 5.5, line.strip(), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)

    target = out_dir / as_text(meta["output"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(pdf.output()))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="collection folder to write into (default: the bundled demo)",
    )
    parser.add_argument(
        "--src",
        type=Path,
        default=DEFAULT_SRC,
        help="folder of Markdown sources (default: demo/pdf_sources)",
    )
    args = parser.parse_args(argv)
    sources = sorted(args.src.glob("*.md"))
    if not sources:
        print(f"no sources in {args.src}", file=sys.stderr)
        return 1
    for source in sources:
        target = build_one(source, args.out)
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        print(f"{target}  sha256={digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
