"""PDF compression bombs (issue 47): what a PDF's streams inflate to is counted before pypdf or
PDFium inflates any of them, per stream and per file, through every filter tether knows
(Flate, LZW, RunLength, ASCIIHex, ASCII85, in chains, behind `#xx` name escapes and indirect
references, past a wrong /Length, encrypted), and inline images may not inflate past their
declared size; a bomb is refused with one line, in bounded memory (the slow test: a 1.1 GB
stream, under 1 GB of RSS)."""

from __future__ import annotations

import base64
import binascii
import io
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tether.errors import ParseError
from tether.ingest.parse import pdf_inflate
from tether.ingest.parse.dispatch import parse_bytes
from tether.ingest.parse.pdf_inflate import check_inflation

TEXT = b"BT /F1 12 Tf 72 720 Td (The bomb policy text.) Tj ET\n"
MB = 1_000_000


def deflated(size: int, prefix: bytes = TEXT, fill: bytes = b" ") -> bytes:
    """`prefix` and `size` bytes of `fill`, deflated piece by piece (a bomb, built small)."""
    z = zlib.compressobj(9)
    out = [z.compress(prefix)]
    block = fill * (1 << 20)
    left = size
    while left > 0:
        out.append(z.compress(block[: min(left, len(block))]))
        left -= len(block)
    out.append(z.flush())
    return b"".join(out)


def stream(entries: bytes, data: bytes, length: int | None = None) -> bytes:
    length = len(data) if length is None else length
    return b"<< " + entries + b" /Length %d >>\nstream\n" % length + data + b"\nendstream"


def pdf(contents: list[bytes], extra: list[bytes] = ()) -> bytes:  # type: ignore[assignment]
    """A one-page PDF whose page draws the content streams `contents` (objects 5, 6, ...);
    `extra` objects follow them."""
    first = 5
    refs = b" ".join(b"%d 0 R" % (first + i) for i in range(len(contents)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [" + refs + b"]"
        b" /Resources << /Font << /F1 4 0 R >> >> >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *contents,
        *extra,
    ]
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref,
    )  # fmt: skip
    return bytes(out)


def bomb(size: int) -> bytes:
    return pdf([stream(b"/Filter /FlateDecode", deflated(size))])


def refused(data: bytes, **limits: int) -> str:
    with pytest.raises(ParseError) as caught:
        check_inflation(data, **limits)
    reason = str(caught.value)
    assert "\n" not in reason and reason.startswith("PDF cannot be read: ")
    return reason


def run_length(data: bytes) -> bytes:
    """RunLengthDecode's encoding: runs of one byte, as long as it allows (128)."""
    out = bytearray()
    i = 0
    while i < len(data):
        run = 1
        while i + run < len(data) and run < 128 and data[i + run] == data[i]:
            run += 1
        out += bytes((257 - run, data[i])) if run > 1 else bytes((0, data[i]))
        i += run
    return bytes(out + b"\x80")


def lzw(data: bytes) -> bytes:
    """LZWDecode's encoding (codes of 9 to 12 bits, EarlyChange 1), without clear codes: for
    a test's few megabytes of one repeated byte, whose table never fills."""
    table = {bytes((i,)): i for i in range(256)}
    out, bits, held, width = bytearray(), 0, 0, 9

    def emit(code: int) -> None:
        nonlocal bits, held
        bits, held = (bits << width) | code, held + width
        while held >= 8:
            held -= 8
            out.append((bits >> held) & 0xFF)
        bits &= (1 << held) - 1

    emit(256)
    word = b""
    for byte in data:
        longer = word + bytes((byte,))
        if longer in table:
            word = longer
            continue
        emit(table[word])
        table[longer] = len(table) + 2  # 256 and 257 are the clear and end codes
        if len(table) + 2 >= 1 << width and width < 12:
            width += 1
        word = bytes((byte,))
    emit(table[word])
    emit(257)
    if held:
        out.append((bits << (8 - held)) & 0xFF)
    return bytes(out)


def test_a_flate_bomb_is_refused_before_a_pdf_library_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pypdf
    import pypdfium2

    def untouched(*_: object, **__: object) -> None:
        raise AssertionError("a PDF library read the bomb")

    monkeypatch.setattr(pdf_inflate, "MAX_STREAM_INFLATED", MB)
    monkeypatch.setattr(pypdf, "PdfReader", untouched)
    monkeypatch.setattr(pypdfium2, "PdfDocument", untouched)
    data = bomb(3 * MB)
    assert len(data) < 10_000
    with pytest.raises(ParseError) as caught:
        parse_bytes(data, "bomb.pdf", "pdf")
    assert str(caught.value) == (
        "PDF cannot be read: a stream (object 5) inflates to more than 1 MB, over the limit"
        " for one stream (a compression bomb?)"
    )


def test_a_pdf_within_the_limits_is_read() -> None:
    doc = parse_bytes(bomb(3 * MB), "big.pdf", "pdf")
    assert "bomb policy text" in doc.text
    check_inflation(bomb(MB - len(TEXT)), max_stream=MB)  # exactly at the limit: read


def test_streams_over_the_file_limit_in_all_are_refused() -> None:
    data = pdf([stream(b"/Filter /FlateDecode", deflated(600_000)) for _ in range(3)])
    check_inflation(data, max_stream=MB)  # each one is within the limit for one stream
    assert "inflate to more than 1.5 MB in all, over the limit for one file" in refused(
        data, max_stream=MB, max_total=1_500_000
    )


SPACES = b" " * 200_000  # inflated, twice the limit the next test sets


@pytest.mark.parametrize(
    ("entries", "make"),
    [
        pytest.param(b"/Filter [/ASCIIHexDecode /FlateDecode]",
                     lambda: binascii.hexlify(zlib.compress(SPACES)) + b">", id="hex-then-flate"),
        pytest.param(b"/Filter [/A85 /Fl]", lambda: base64.a85encode(zlib.compress(SPACES)) + b"~>",
                     id="a85-then-flate-abbreviated"),
        pytest.param(b"/Filter /Fl#61teDecode", lambda: zlib.compress(SPACES), id="escaped-name"),
        pytest.param(b"/Filter 6 0 R", lambda: binascii.hexlify(run_length(SPACES)) + b">",
                     id="indirect-filter"),  # a chain no guess tries: read through object 6
        pytest.param(b"/Filter /RunLengthDecode", lambda: run_length(SPACES), id="run-length"),
        pytest.param(b"/Filter /LZWDecode", lambda: lzw(SPACES), id="lzw"),
        pytest.param(b"/Filter /FlateDecode", lambda: zlib.compress(SPACES, 9)[2:-4],
                     id="raw-deflate"),
    ],
)  # fmt: skip
def test_every_filter_and_disguise_is_counted(entries: bytes, make: Callable[[], bytes]) -> None:
    made = pdf([stream(entries, make())], extra=[b"[/AHx /RL]"])  # object 6: a filter chain
    assert "(object 5) inflates to more than 100,000 bytes" in refused(made, max_stream=100_000)
    check_inflation(made, max_stream=len(SPACES))


def test_a_wrong_length_does_not_hide_a_stream() -> None:
    data = deflated(2 * MB)
    for length in (10, 0, 10**9):
        made = pdf([stream(b"/Filter /FlateDecode", data, length=length)])
        assert "inflates to more than 1 MB" in refused(made, max_stream=MB)


def test_a_stream_whose_dictionary_cannot_be_read_is_tried_with_each_filter() -> None:
    broken = b"<< /Filter /FlateDecode /Length ( >>\nstream\n" + deflated(2 * MB) + b"\nendstream"
    assert "inflates to more than 1 MB" in refused(pdf([broken]), max_stream=MB)


def inline_image(width: int, height: int, data: bytes, filters: bytes = b"/F /Fl") -> bytes:
    return (
        b"BI /W %d /H %d /BPC 8 /CS /G " % (width, height) + filters + b" ID\n" + data + b"\nEI\n"
    )


def test_an_inline_image_may_not_inflate_past_its_declared_size() -> None:
    # PDFium inflates an inline image to find its end: 20 MB behind a 1 x 1 image took 1.3 GB
    hidden = inline_image(1, 1, deflated(2 * MB, prefix=b"", fill=b"\0"))
    for content in (
        stream(b"", TEXT + hidden),
        stream(b"/Filter /FlateDecode", zlib.compress(TEXT + hidden)),
    ):
        reason = refused(pdf([content]))
        assert "an inline image in object 5 inflates to more than 1 MB" in reason
        assert "past the 1 byte its size declares" in reason
    honest = inline_image(1500, 1000, deflated(1_500_000, prefix=b"", fill=b"\0"))
    check_inflation(pdf([stream(b"", TEXT + honest)]))


def test_an_inline_image_that_runs_into_the_next_content_stream_is_refused() -> None:
    head = stream(b"", TEXT + b"BI /W 1 /H 1 /BPC 8 /CS /G /F /Fl ID\n")
    tail = stream(b"", deflated(2 * MB, prefix=b"", fill=b"\0") + b"\nEI\n")
    assert "runs past the end of its stream" in refused(pdf([head, tail]))


def test_an_encrypted_bomb_is_counted_decrypted(monkeypatch: pytest.MonkeyPatch) -> None:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(bomb(3 * MB))))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    check_inflation(out.getvalue(), max_stream=MB)  # its bytes alone hide the bomb
    monkeypatch.setattr(pdf_inflate, "MAX_STREAM_INFLATED", MB)
    with pytest.raises(ParseError, match=r"inflates to more than 1 MB"):
        parse_bytes(out.getvalue(), "encrypted.pdf", "pdf")


def test_a_bomb_in_a_collection_is_a_problem_file_and_the_rest_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.ingest import guard
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    monkeypatch.setattr(pdf_inflate, "MAX_STREAM_INFLATED", MB)
    monkeypatch.setattr(guard, "ISOLATE", False)  # parse here: a child cannot see the patch
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.pdf").write_bytes(bomb(3 * MB))
    (docs / "good.md").write_text("---\naccess: public\n---\n# Good\n\nThe good text.\n")
    store = SqliteStore(tmp_path / "index.sqlite")
    report = sync(store, docs)
    assert report.added == ("good.md",)
    assert [(p.source, p.reason) for p in report.problems] == [
        (
            "bomb.pdf",
            "PDF cannot be read: a stream (object 5) inflates to more than 1 MB, over the limit"
            " for one stream (a compression bomb?)",
        )
    ]
    store.close()


FIXTURES = Path(__file__).parents[1] / "fixtures" / "pdf"


def test_real_pdfs_pass_the_check() -> None:
    for path in sorted(FIXTURES.glob("*.pdf")):
        check_inflation(path.read_bytes())


_MEASURE = """
import resource, sys
from tether.errors import ParseError
from tether.ingest.parse.dispatch import parse_bytes
data = open(sys.argv[1], "rb").read()
try:
    parse_bytes(data, "bomb.pdf", "pdf")
    print("read")
except ParseError as exc:
    print(exc)
# the peak of this process's own memory since exec (VmHWM): ru_maxrss keeps the peak of the
# process it was forked from (a test session with models loaded is gigabytes)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print(int(hwm[0].split()[1]) * 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


@pytest.mark.slow
def test_a_gigabyte_bomb_is_refused_under_one_gigabyte_of_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pdf"
    path.write_bytes(bomb(1_100_000_000))  # 1.1 GB of spaces, about 1 MB deflated
    assert path.stat().st_size < 2 * MB
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    reason, peak = done.stdout.strip().splitlines()
    assert "inflates to more than 100 MB, over the limit for one stream" in reason
    assert int(peak) < 1_000_000_000, f"peak RSS {int(peak) / 1e6:.0f} MB"
