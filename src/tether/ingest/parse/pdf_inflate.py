"""PDF compression bombs: what a PDF's streams inflate to, counted before any PDF library
inflates one of them (`check_inflation`), so that a small file whose streams inflate to
gigabytes is refused with one line instead of taking the memory.

Every stream in the file is found in the file's bytes (each `stream` keyword that follows an
object's dictionary, `N G obj << ... >> stream`), whatever the cross-reference table says, and
its data is run through its filters (`/Filter`, a name or an array, indirect references
resolved, names with `#xx` escapes decoded) in pieces of 64 KiB: FlateDecode with
`zlib.decompressobj` and `max_length` (a zlib or gzip header, else raw deflate),
LZWDecode, RunLengthDecode, ASCIIHexDecode and ASCII85Decode; only counts are kept, so the
check holds a few megabytes whatever the stream inflates to. A stream's figure is the largest
output of any of its filters; a stream over `MAX_STREAM_INFLATED` bytes, or streams over
`MAX_INFLATED` in all, refuse the file (the limits are read when the check runs). A stream
whose dictionary cannot be read is tried with each usual filter chain and counted at the
largest; more than `MAX_UNREADABLE` such streams refuse the file.

Inline images (`BI <dict> ID <data> EI` in the inflated bytes of any stream) are inflated and
counted too: PDFium inflates one to find where it ends and, when its data inflates past its
declared size (width x height x components x bits), takes many times the excess in memory, so
one small file can exhaust it (the case tests/unit/test_pdf_bomb.py builds). One may inflate
to its declared size plus `INLINE_SLACK` bytes; one whose data runs past the end of its stream
(the rest would come from the page's next content stream) is refused, and so are more than
`MAX_OPEN_INLINE` overlapping ones.

An encrypted file (read with the empty user password) is counted again on its decrypted
stream data, with pypdf's decryption (`decrypter`).

The work is shared: `pdf_objects` reads objects and finds the streams, `pdf_decoders` holds
the filters, `pdf_counting` counts their output and the inline images; this module runs the
check over every stream and holds the file's limits.

What it cannot do: DCT, JPX, JBIG2 and CCITT image data is not decoded (PDF libraries decode
images to draw them, not to read text); a stream's `/DecodeParms` predictors are not applied
(they never add more than a byte a row); it bounds inflated bytes, not what a library builds
from them (a font or a content stream of many operators within the limits still costs what it
costs); a stream whose filter names an object that lives in an object stream is tried with the
usual filter chains instead; a file that hides a stream from this byte scan (a dictionary
this parser cannot read yet a library can) is counted by guesses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tether.errors import ParseError
from tether.ingest.parse.pdf_counting import INLINE_SLACK as INLINE_SLACK
from tether.ingest.parse.pdf_counting import MAX_OPEN_INLINE as MAX_OPEN_INLINE
from tether.ingest.parse.pdf_counting import Chain, InlineImages, Tally, mb
from tether.ingest.parse.pdf_decoders import PIECE
from tether.ingest.parse.pdf_objects import MAX_UNREADABLE as MAX_UNREADABLE
from tether.ingest.parse.pdf_objects import find_streams

MAX_STREAM_INFLATED = 100_000_000  # bytes one stream may inflate to
MAX_INFLATED = 200_000_000  # bytes all the streams of one PDF may inflate to (as a DOCX's parts)
# a stream whose dictionary cannot be read: the chains it is tried with
_GUESSES: tuple[tuple[str, ...], ...] = (
    (),
    ("Fl",),
    ("AHx", "Fl"),
    ("A85", "Fl"),
    ("LZW",),
    ("RL",),
)
Decrypt = Callable[[int, int, bytes], bytes]


def check_inflation(
    data: bytes,
    decrypt: Decrypt | None = None,
    *,
    max_stream: int | None = None,
    max_total: int | None = None,
) -> None:
    """Raise `ParseError` (one line) when a stream of `data` inflates to more than
    `max_stream` bytes (default `MAX_STREAM_INFLATED`), all of them to more than `max_total`
    (default `MAX_INFLATED`), or an inline image past its declared size (see the module
    docstring); `decrypt(num, gen, raw)` gives an encrypted file's stream data decrypted,
    counted beside the raw data."""
    max_stream = MAX_STREAM_INFLATED if max_stream is None else max_stream
    max_total = MAX_INFLATED if max_total is None else max_total
    view = memoryview(data)
    settled = 0
    for stream in find_streams(data):
        where = f"object {stream.num}"

        def over(n: int, where: str = where) -> ParseError:
            return ParseError(
                f"PDF cannot be read: a stream ({where}) inflates to more than"
                f" {mb(max_stream)}, over the limit for one stream (a compression bomb?)"
            )

        chains = [stream.chain] if stream.chain is not None else [(kinds, 1) for kinds in _GUESSES]
        sources: list[tuple[memoryview, bool]] = [(view, False)]
        if decrypt is not None:
            try:
                clear = decrypt(stream.num, stream.gen, bytes(view[stream.start : stream.end]))
            except Exception:  # a stream that does not decrypt (an xref stream is not encrypted)
                clear = None
            if clear is not None:
                sources.append((memoryview(clear), True))
        figure = 0
        for source, decrypted in sources:
            for kinds, early in chains:
                tally = Tally(settled, max_total)
                chain = Chain(kinds, early, max_stream, tally, over)
                images = InlineImages(where, max_stream, tally)
                begin = 0 if decrypted else stream.start
                # zlib finds where its data ends: a flate stream is fed on past a wrong /Length
                stop = len(source) if kinds[:1] == ("Fl",) or decrypted else stream.end
                for i in range(begin, stop, PIECE):
                    for out in chain.feed(bytes(source[i : min(i + PIECE, stop)])):
                        images.feed(out)
                    if chain.done:
                        break
                images.close()
                figure = max(figure, tally.amount)
        settled += figure


def decrypter(reader: Any) -> Decrypt | None:
    """A stream decrypter for an encrypted pypdf reader (decrypted with the empty password),
    or None when pypdf does not offer one."""
    encryption = getattr(reader, "_encryption", None)
    if encryption is None or not hasattr(encryption, "decrypt_object"):
        return None
    from pypdf.generic import StreamObject

    def decrypt(num: int, gen: int, raw: bytes) -> bytes:
        stream = StreamObject()
        stream._data = raw
        return bytes(encryption.decrypt_object(stream, num, gen)._data)

    return decrypt
