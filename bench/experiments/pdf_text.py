"""PDF text extraction measured: pypdf (layout and plain modes, what tether used before),
PDFium (`pypdfium2`, what it uses now) and pdfminer.six, on real PDFs from several producers.

`python bench/experiments/pdf_text.py [PDF ...]` (default: Debian's FAQ and New Maintainers' Guide, made by
DocBook/dblatex, and Doxygen's manual, made by pdflatex, when their Debian packages
`debian-faq`, `maint-guide` and `doxygen-doc` are installed; and the bundled demo's two PDFs,
made by fpdf2) writes bench/results/pdf_text.md: per file and library, the tokens extracted,
the share of run-together tokens (20 or more letters in a row outside a URL: words whose
spaces were lost, "Thisdocumentmaybeused"), and the seconds; then tether's own parse of each
(tokens, run-together share, headings found).

What it cannot do: "run-together" is a proxy (a German compound or a long identifier counts
too; a lost space between two short words does not); headings and reading order are not
scored against a truth.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LONG = re.compile(r"[A-Za-z]{20,}")
DEFAULTS = (
    Path("/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz"),
    Path("/usr/share/doc/maint-guide/maint-guide.en.pdf"),
    Path("/usr/share/doc/doxygen/doxygen_manual.pdf"),
    ROOT / "src/tether/demo/collection/guides/pc300-bike-computer.pdf",
    ROOT / "src/tether/demo/collection/supplier/kestrel-tr2200-sheet.pdf",
)


def pypdf_layout(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [
        p.extract_text(extraction_mode="layout") or "" for p in PdfReader(io.BytesIO(data)).pages
    ]


def pypdf_plain(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() or "" for p in PdfReader(io.BytesIO(data)).pages]


def pdfium(data: bytes) -> list[str]:
    import pypdfium2

    doc = pypdfium2.PdfDocument(data)
    out = []
    for i in range(len(doc)):
        tp = doc[i].get_textpage()
        out.append(tp.get_text_bounded())
        tp.close()
    return out


def pdfminer(data: bytes) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        "".join(e.get_text() for e in page if isinstance(e, LTTextContainer))
        for page in extract_pages(io.BytesIO(data))
    ]


LIBRARIES: dict[str, Callable[[bytes], list[str]]] = {
    "pypdf (layout)": pypdf_layout,
    "pypdf (plain)": pypdf_plain,
    "pypdfium2": pdfium,
    "pdfminer.six": pdfminer,
}


def run_together(text: str) -> tuple[int, float]:
    tokens = text.split()
    long = [t for t in tokens if LONG.search(t) and "://" not in t and not t.startswith("www.")]
    return len(tokens), 100.0 * len(long) / max(1, len(tokens))


def read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def main() -> None:
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    from tether.ingest.parse.dispatch import parse_bytes

    paths = [Path(p) for p in sys.argv[1:]] or [p for p in DEFAULTS if p.is_file()]
    lines = [
        "# PDF text: which library reads the words right",
        "",
        f"Run on {date.today()}, {os.cpu_count()} cores (load average"
        f" {os.getloadavg()[0]:.1f}); `bench/experiments/pdf_text.py`. Run-together: tokens of 20 or more"
        " letters in a row outside a URL (words whose spaces were lost).",
        "",
        "| file | library | pages | tokens | run-together | seconds |",
        "|---|---|---|---|---|---|",
    ]
    parsed = ["", "tether's parse (PDFium, pypdf where PDFium fails):", "",
              "| file | tokens | run-together | headings |", "|---|---|---|---|"]  # fmt: skip
    for path in paths:
        data = read(path)
        name = path.name.removesuffix(".gz")
        for library, extract in LIBRARIES.items():
            try:
                began = time.perf_counter()
                pages = extract(data)
                seconds = time.perf_counter() - began
            except ImportError:
                continue
            n, share = run_together(" ".join(pages))
            lines.append(
                f"| {name} | {library} | {len(pages)} | {n} | {share:.2f}% | {seconds:.1f} |"
            )
            print(lines[-1], file=sys.stderr)
        doc = parse_bytes(data, name, "pdf", None, default_access="public")
        n, share = run_together(doc.text)
        heads = sum(b.kind == "heading" for b in doc.blocks)
        parsed.append(f"| {name} | {n} | {share:.2f}% | {heads} |")
    out = ROOT / "bench" / "results" / "pdf_text.md"
    out.write_text("\n".join(lines + parsed) + "\n", encoding="utf-8")
    print(out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
