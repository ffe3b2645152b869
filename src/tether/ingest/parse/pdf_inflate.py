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

Inline images (`BI <dict> ID <data> EI` in the inflated bytes of any stream) are inflated
and counted too: PDFium inflates one to find where it ends and, when its data inflates past
its declared size (width x height x components x bits), takes some 60 times the excess in
memory (measured: a 1 x 1 image whose data inflates to 20 MB took 1.3 GB). One may inflate to
its declared size plus `INLINE_SLACK` bytes; one whose data runs past the end of its stream
(the rest would come from the page's next content stream) is refused, and so are more than
`MAX_OPEN_INLINE` overlapping ones.

An encrypted file (read with the empty user password) is counted again on its decrypted
stream data, with pypdf's decryption (`decrypter`).

What it cannot do: DCT, JPX, JBIG2 and CCITT image data is not decoded (PDF libraries decode
images to draw them, not to read text); a stream's `/DecodeParms` predictors are not applied
(they never add more than a byte a row); it bounds inflated bytes, not what a library builds
from them (a font or a content stream of many operators within the limits still costs what it
costs); a stream whose filter names an object that lives in an object stream is tried with the
usual filter chains instead; a file that hides a stream from this byte scan (a dictionary
this parser cannot read yet a library can) is counted by guesses.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from tether.errors import ParseError

MAX_STREAM_INFLATED = 100_000_000  # bytes one stream may inflate to
MAX_INFLATED = 200_000_000  # bytes all the streams of one PDF may inflate to (as a DOCX's parts)
INLINE_SLACK = 1_000_000  # bytes an inline image may inflate to beyond its declared size
MAX_OPEN_INLINE = 32  # inline images being inflated at once in one stream
MAX_UNREADABLE = 64  # `stream` keywords after a dictionary that cannot be read
_PIECE = 1 << 16  # bytes fed or produced at a time

_WS = b"\x00\t\n\x0c\r "
# possessive: a run of "%" must not be split into comments every way (exponential backtracking)
_SKIP = re.compile(rb"(?:[\x00\t\n\x0c\r ]++|%[^\r\n]*+)*+")
_REGULAR = re.compile(rb"[^\x00\t\n\x0c\r ()<>\[\]{}/%]+")
_INTEGER = re.compile(rb"[+-]?\d+")
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)")
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
_GAP = rb"(?:[\x00\t\n\x0c\r ]|%[^\r\n]*+)+"
_OBJ = re.compile(
    rb"(?<![0-9])(\d{1,10})"
    + _GAP
    + rb"(\d{1,5})"
    + _GAP
    + rb"obj(?![^\x00\t\n\x0c\r ()<>\[\]{}/%])"
)
_STREAM = re.compile(rb"(?<![^\x00\t\n\x0c\r ()<>\[\]{}/%])stream(?=[\x00\t\n\x0c\r ])")
_ENDSTREAM = re.compile(rb"[\x00\t\n\x0c\r ]*endstream")
_BOUNDARY = frozenset(b"\x00\t\n\x0c\r ()<>[]{}/%")  # whitespace and delimiters
_ID = re.compile(rb"[\x00\t\n\x0c\r ]ID[\x00\t\n\x0c\r ]")
_MAX_INLINE_DICT = 4096

_FILTERS = {
    "FlateDecode": "Fl", "Fl": "Fl", "LZWDecode": "LZW", "LZW": "LZW",
    "RunLengthDecode": "RL", "RL": "RL", "ASCIIHexDecode": "AHx", "AHx": "AHx",
    "ASCII85Decode": "A85", "A85": "A85",
}  # fmt: skip
# a stream whose dictionary cannot be read: the chains it is tried with
_GUESSES: tuple[tuple[str, ...], ...] = (
    (), ("Fl",), ("AHx", "Fl"), ("A85", "Fl"), ("LZW",), ("RL",),
)  # fmt: skip


class _Malformed(Exception):
    """Bytes that are not a PDF object."""


class _Name(str):
    """A PDF name (`/Filter`), `#xx` escapes decoded."""


class _Ref(NamedTuple):
    num: int
    gen: int


# ------------------------------------------------------------------------- reading objects


def _object(data: bytes, i: int, depth: int = 0) -> tuple[Any, int]:
    """The PDF object at `i` (after whitespace and comments) and the offset after it: a dict,
    a list, a `_Name`, an int or float, a `_Ref`, bytes for a string or a keyword."""
    if depth > 32:
        raise _Malformed("nested too deeply")
    i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
    if i >= len(data):
        raise _Malformed("truncated")
    if data.startswith(b"<<", i):
        found: dict[str, Any] = {}
        i += 2
        while True:
            i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
            if data.startswith(b">>", i):
                return found, i + 2
            key, i = _object(data, i, depth + 1)
            if not isinstance(key, _Name):
                raise _Malformed("a dictionary key that is not a name")
            found[key], i = _object(data, i, depth + 1)
    head = data[i : i + 1]
    if head == b"[":
        items: list[Any] = []
        i += 1
        while True:
            i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
            if data.startswith(b"]", i):
                return items, i + 1
            item, i = _object(data, i, depth + 1)
            items.append(item)
    if head == b"/":
        match = _REGULAR.match(data, i + 1)
        raw = match.group() if match else b""
        name = _NAME_ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), raw)
        return _Name(name.decode("latin-1")), i + 1 + len(raw)
    if head == b"(":
        return _literal_string(data, i)
    if head == b"<":
        end = data.find(b">", i)
        if end < 0:
            raise _Malformed("an unterminated string")
        return data[i + 1 : end], end + 1
    match = _REGULAR.match(data, i)
    if match is None:
        raise _Malformed(f"unexpected {head!r}")
    word, i = match.group(), match.end()
    if _INTEGER.fullmatch(word):  # "12 0 R" is a reference
        after = _SKIP.match(data, i).end()  # type: ignore[union-attr]
        gen = _REGULAR.match(data, after)
        if gen and _INTEGER.fullmatch(gen.group()):
            r = _SKIP.match(data, gen.end()).end()  # type: ignore[union-attr]
            keyword = _REGULAR.match(data, r)
            if keyword and keyword.group() == b"R":
                return _Ref(int(word), int(gen.group())), keyword.end()
        return int(word), i
    if _NUMBER.fullmatch(word):
        return float(word), i
    return word, i


def _literal_string(data: bytes, i: int) -> tuple[bytes, int]:
    depth, j = 0, i
    special = re.compile(rb"[()\\]")
    while True:
        match = special.search(data, j)
        if match is None:
            raise _Malformed("an unterminated string")
        j = match.end()
        char = match.group()
        if char == b"\\":
            j += 1
        elif char == b"(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return data[i + 1 : j - 1], j


# ------------------------------------------------------------------------------ decoders


class _Flate:
    """FlateDecode: a zlib (or gzip) stream, else raw deflate; ends where the data ends."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)
        self._seen: bytearray | None = bytearray()  # input before any output: a retry as raw
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        if self._seen is not None:
            self._seen += data
            if len(self._seen) > _PIECE:
                self._seen = None
        pending = data
        while True:
            try:
                out = self._z.decompress(pending, _PIECE)
            except zlib.error:
                if self._seen is None:
                    self.done = True
                    return
                self._z, pending, self._seen = (
                    zlib.decompressobj(-zlib.MAX_WBITS),
                    bytes(self._seen),
                    None,
                )
                continue
            if out:
                self._seen = None
                yield out
            if self._z.eof:
                self.done = True
                return
            pending = self._z.unconsumed_tail
            if not pending and len(out) < _PIECE:
                return


class _AsciiHex:
    """ASCIIHexDecode: hex digits, whitespace ignored, up to ">" (or any other character)."""

    _END = re.compile(rb"[^0-9A-Fa-f\x00\t\n\x0c\r ]")

    def __init__(self) -> None:
        self._odd = b""
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        end = self._END.search(data)
        if end:
            data, self.done = data[: end.start()], True
        digits = self._odd + data.translate(None, _WS)
        whole = len(digits) // 2 * 2
        self._odd = digits[whole:]
        if whole:
            yield binascii.unhexlify(digits[:whole])


class _Ascii85:
    """ASCII85Decode: groups of five characters ("z" for four zero bytes), up to "~>"."""

    _END = re.compile(rb"[^!-uz\x00\t\n\x0c\r ]")

    def __init__(self) -> None:
        self._rest = b""
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        end = self._END.search(data)
        if end:
            data, self.done = data[: end.start()], True
        text = self._rest + data.translate(None, _WS).replace(b"z", b"!!!!!")
        whole = len(text) // 5 * 5
        self._rest = text[whole:]
        if whole:
            try:
                yield base64.a85decode(text[:whole])
            except ValueError:  # a group over 2**32: the data ends here
                self.done = True


class _RunLength:
    """RunLengthDecode: a length byte, then literal bytes or one byte repeated; 128 ends."""

    def __init__(self) -> None:
        self._literal = 0  # literal bytes still to copy
        self._repeat: int | None = None  # a repeat's length byte, waiting for its byte
        self.done = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        out = bytearray()
        i, n = 0, len(data)
        while i < n and not self.done:
            if self._literal:
                piece = data[i : i + self._literal]
                out += piece
                self._literal -= len(piece)
                i += len(piece)
            elif self._repeat is not None:
                out += data[i : i + 1] * (257 - self._repeat)
                self._repeat, i = None, i + 1
            else:
                length, i = data[i], i + 1
                if length == 128:
                    self.done = True
                elif length < 128:
                    self._literal = length + 1
                else:
                    self._repeat = length
            if len(out) >= _PIECE:
                yield bytes(out)
                out.clear()
        if out:
            yield bytes(out)


class _Lzw:
    """LZWDecode (codes of 9 to 12 bits, most significant bit first; `early` is the stream's
    EarlyChange); ends at its end-of-data code or at a code it cannot read."""

    def __init__(self, early: int = 1) -> None:
        self._early = 1 if early not in (0, 1) else early
        self._bits = 0
        self._held = 0  # bits read and not yet used
        self._table: list[bytes] = []
        self._width = 9
        self._prev = b""
        self._reset()
        self.done = False

    def _reset(self) -> None:
        self._table = [bytes((i,)) for i in range(256)] + [b"", b""]
        self._width = 9
        self._prev = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        out = bytearray()
        for byte in data:
            if self.done:
                break
            self._bits = (self._bits << 8) | byte
            self._held += 8
            while self._held >= self._width:
                self._held -= self._width
                code = self._bits >> self._held
                self._bits &= (1 << self._held) - 1
                if code == 256:
                    self._reset()
                    continue
                table = self._table
                if code == 257 or code > len(table) or (code == len(table) and not self._prev):
                    self.done = True
                    break
                entry = table[code] if code < len(table) else self._prev + self._prev[:1]
                if self._prev and len(table) < 4096:
                    table.append(self._prev + entry[:1])
                out += entry
                self._prev = entry
                if len(table) + self._early >= (1 << self._width) and self._width < 12:
                    self._width += 1
            if len(out) >= _PIECE:
                yield bytes(out)
                out.clear()
        if out:
            yield bytes(out)


_Decoder = _Flate | _AsciiHex | _Ascii85 | _RunLength | _Lzw


def _decoder(kind: str, early: int) -> _Decoder:
    if kind == "Fl":
        return _Flate()
    if kind == "LZW":
        return _Lzw(early)
    if kind == "RL":
        return _RunLength()
    if kind == "AHx":
        return _AsciiHex()
    return _Ascii85()


# ------------------------------------------------------------------------------ counting


class _Tally:
    """What one reading of one stream inflates to (its largest filter output, plus its inline
    images), checked against the file's limit as it grows."""

    def __init__(self, settled: int, max_total: int) -> None:
        self.settled = settled  # what the streams read before this one inflated to
        self.max_total = max_total
        self.amount = 0

    def add(self, n: int) -> None:
        self.amount += n
        if self.settled + self.amount > self.max_total:
            raise ParseError(
                f"PDF cannot be read: its streams inflate to more than {_mb(self.max_total)}"
                " in all, over the limit for one file (a compression bomb?)"
            )


class _Chain:
    """A stream's filters, one after the other, each output counted."""

    def __init__(self, kinds: tuple[str, ...], early: int, limit: int, tally: _Tally,
                 over: Callable[[int], ParseError]) -> None:  # fmt: skip
        self._decoders = [_decoder(kind, early) for kind in kinds]
        self._counts = [0] * len(kinds)
        self.peak = 0
        self._limit, self._tally, self._over = limit, tally, over

    @property
    def done(self) -> bool:
        return any(d.done for d in self._decoders)

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._push(0, data)

    def _push(self, stage: int, data: bytes) -> Iterator[bytes]:
        if stage == len(self._decoders):
            yield data
            return
        decoder = self._decoders[stage]
        if decoder.done:
            return
        for out in decoder.feed(data):
            self._counts[stage] += len(out)
            if self._counts[stage] > self.peak:
                self._tally.add(self._counts[stage] - self.peak)
                self.peak = self._counts[stage]
                if self.peak > self._limit:
                    raise self._over(self.peak)
            yield from self._push(stage + 1, out)


def _filters(
    value: Any, parms: Any, resolve: Callable[[Any], Any]
) -> tuple[tuple[str, ...], int] | None:
    """(the filters to inflate with, LZW's EarlyChange) of a /Filter and /DecodeParms value;
    None when they cannot be read. The chain stops at an image codec; /Crypt is passed over
    (an encrypted file's streams are counted again decrypted)."""
    value = resolve(value)
    names = value if isinstance(value, list) else [] if value is None else [value]
    kinds: list[str] = []
    early = 1
    parms = resolve(parms)
    for position, name in enumerate(names):
        name = resolve(name)
        if not isinstance(name, _Name):
            return None
        if name == "Crypt":
            continue
        kind = _FILTERS.get(name)
        if kind is None:
            break
        if kind == "LZW":
            parm = parms[position] if isinstance(parms, list) and position < len(parms) else parms
            parm = resolve(parm)
            if isinstance(parm, dict):
                found = resolve(parm.get("EarlyChange", 1))
                early = found if isinstance(found, int) else 1
        kinds.append(kind)
    return tuple(kinds), early


def _mb(n: int) -> str:
    """A size as the refusals say it: "100 MB", "4,096 bytes", "1 byte"."""
    if n >= 1_000_000:
        return f"{n / 1e6:g} MB"
    return "1 byte" if n == 1 else f"{n:,} bytes"


# ------------------------------------------------------------------------- inline images


_COMPONENTS = {
    "G": 1, "DeviceGray": 1, "CalGray": 1, "I": 1, "Indexed": 1,
    "RGB": 3, "DeviceRGB": 3, "CalRGB": 3, "Lab": 3, "CMYK": 4, "DeviceCMYK": 4,
}  # fmt: skip


def _declared_size(d: dict[str, Any]) -> int:
    """The bytes an inline image's dictionary says its samples take (0 when it does not)."""

    def number(*keys: str, default: int = 0) -> int:
        for key in keys:
            if isinstance(d.get(key), int | float):
                return max(0, min(int(d[key]), 1 << 20))
        return default

    width, height = number("W", "Width"), number("H", "Height")
    bits = number("BPC", "BitsPerComponent", default=8)
    space = d.get("CS", d.get("ColorSpace"))
    if isinstance(space, list) and space:
        space = space[0]
    components = _COMPONENTS.get(str(space), 4) if space is not None else 1
    if d.get("IM", d.get("ImageMask")) == b"true":
        bits, components = 1, 1
    return (width * bits * components + 7) // 8 * height


class _InlineImages:
    """Finds the inline images in a stream's inflated bytes, fed piece by piece, and inflates
    each image's data as it comes (several at once: the search goes on inside an image's data,
    so that nothing there is left unread)."""

    def __init__(self, where: str, limit: int, tally: _Tally) -> None:
        self._where, self._limit, self._tally = where, limit, tally
        self._carry = b""
        self._open: list[_Chain] = []

    def feed(self, piece: bytes) -> None:
        for chain in self._open:
            for _ in chain.feed(piece):
                pass
        self._open = [chain for chain in self._open if not chain.done]
        buf = self._carry + piece
        pos = 0
        self._carry = buf[-2:]  # a "BI" cut between two pieces
        while (start := _next_bi(buf, pos)) >= 0:
            if start + 2 >= len(buf):  # what follows "BI" is in the next piece
                self._carry = buf[max(0, start - 1) :]
                break
            end = _ID.search(buf, start + 2, start + 2 + _MAX_INLINE_DICT + 4)
            if end is None:
                if len(buf) - start < _MAX_INLINE_DICT:  # the rest is in the next piece
                    self._carry = buf[max(0, start - 1) :]
                    break
                pos = start + 2
                continue
            pos = end.end()
            self._open_image(buf[start + 2 : end.start()], buf[end.end() :])

    def _open_image(self, text: bytes, data: bytes) -> None:
        try:
            d, _ = _object(b"<<" + text + b">>", 0)
        except _Malformed:
            return
        chain = _filters(d.get("F", d.get("Filter")), d.get("DP", d.get("DecodeParms")), _same)
        if not chain or not chain[0]:
            return
        declared = _declared_size(d)
        limit = min(self._limit, declared + INLINE_SLACK)

        def over(n: int) -> ParseError:
            return ParseError(
                f"PDF cannot be read: an inline image in {self._where} inflates to more than"
                f" {_mb(limit)}, past the {_mb(declared)} its size declares (a compression"
                " bomb?)"
            )

        image = _Chain(chain[0], chain[1], limit, self._tally, over)
        for _ in image.feed(data):
            pass
        if not image.done:
            self._open.append(image)
            if len(self._open) > MAX_OPEN_INLINE:
                raise ParseError(
                    f"PDF cannot be read: more than {MAX_OPEN_INLINE} inline images overlap in"
                    f" {self._where} (a malformed or hostile file)"
                )

    def close(self) -> None:
        if self._open:
            raise ParseError(
                f"PDF cannot be read: an inline image in {self._where} runs past the end of its"
                " stream"
            )


def _next_bi(buf: bytes, pos: int) -> int:
    """Where the next `BI` operator starts in `buf` from `pos` (a word of its own: after
    whitespace or a delimiter, before whitespace or a name), or -1; one right at the end of
    `buf` counts (what follows it is in the next piece)."""
    while (at := buf.find(b"BI", pos)) >= 0:
        before_ok = at == 0 or buf[at - 1] in _BOUNDARY
        after_ok = at + 2 >= len(buf) or buf[at + 2] in b"\x00\t\n\x0c\r /"
        if before_ok and after_ok:
            return at
        pos = at + 1
    return -1


def _same(value: Any) -> Any:
    return value


# ------------------------------------------------------------------------------- streams


@dataclass(frozen=True)
class _Stream:
    """One stream of the file: its object, where its data starts and ends, its filters (None:
    its dictionary could not be read)."""

    num: int
    gen: int
    start: int
    end: int
    chain: tuple[tuple[str, ...], int] | None


def _streams(data: bytes) -> list[_Stream]:
    """Every stream in the file's bytes, in file order."""
    headers = [(m.end(), int(m.group(1)), int(m.group(2)), m.start()) for m in _OBJ.finditer(data)]
    ends = [h[0] for h in headers]
    latest = {(num, gen): end for end, num, gen, _ in headers}  # an update's object wins
    parsed: dict[int, tuple[Any, int] | None] = {}

    def value_at(end: int) -> tuple[Any, int] | None:
        if end not in parsed:
            try:
                parsed[end] = _object(data, end)
            except (_Malformed, RecursionError, ValueError):
                parsed[end] = None
        return parsed[end]

    def resolve(value: Any, depth: int = 0) -> Any:
        while isinstance(value, _Ref) and depth < 8:
            where = latest.get((value.num, value.gen))
            found = value_at(where) if where is not None else None
            if found is None:
                raise _Malformed("an object that is not in the file's bytes")
            value, depth = found[0], depth + 1
        return value

    out: list[_Stream] = []
    unreadable = 0
    for token in _STREAM.finditer(data):
        k = bisect.bisect_right(ends, token.start()) - 1
        if k < 0:
            continue
        header_end, num, gen, _ = headers[k]
        found = value_at(header_end)
        chain: tuple[tuple[str, ...], int] | None = None
        length: Any = None
        if found is not None:
            value, after = found
            if not isinstance(value, dict):
                continue
            if after > token.start() or _SKIP.match(data, after).end() != token.start():  # type: ignore[union-attr]
                continue  # the word "stream" inside this object's dictionary or data
            try:
                chain = _filters(value.get("Filter"), value.get("DecodeParms"), resolve)
            except _Malformed:  # a filter in an object stream: tried with each usual chain
                chain = None
            try:
                length = resolve(value.get("Length"))
            except _Malformed:  # a length in an object stream: up to `endstream`
                length = None
        else:
            unreadable += 1
            if unreadable > MAX_UNREADABLE:
                raise ParseError(
                    f"PDF cannot be read: more than {MAX_UNREADABLE} streams whose dictionary"
                    " cannot be read (a malformed or hostile file)"
                )
        start = _data_start(data, token.end())
        out.append(_Stream(num, gen, start, _data_end(data, start, length), chain))
    return out


def _data_start(data: bytes, i: int) -> int:
    """Where a stream's data starts: after the end of line that follows `stream`."""
    if data.startswith(b"\r\n", i):
        return i + 2
    if data[i : i + 1] in (b"\n", b"\r"):
        return i + 1
    line = re.compile(rb"\r\n|\n|\r").search(data, i, i + 64)
    return line.end() if line else i + 1


def _data_end(data: bytes, start: int, length: Any) -> int:
    """Where a stream's data ends: its /Length when `endstream` follows it there (as PDF
    libraries read it), else the first `endstream`, else the end of the file."""
    fits = isinstance(length, int) and 0 <= length <= len(data) - start
    if fits and _ENDSTREAM.match(data, start + length):
        return start + length
    end = data.find(b"endstream", start)
    return len(data) if end < 0 else end


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
    for stream in _streams(data):
        where = f"object {stream.num}"

        def over(n: int, where: str = where) -> ParseError:
            return ParseError(
                f"PDF cannot be read: a stream ({where}) inflates to more than"
                f" {_mb(max_stream)}, over the limit for one stream (a compression bomb?)"
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
                tally = _Tally(settled, max_total)
                chain = _Chain(kinds, early, max_stream, tally, over)
                images = _InlineImages(where, max_stream, tally)
                begin = 0 if decrypted else stream.start
                # zlib finds where its data ends: a flate stream is fed on past a wrong /Length
                stop = len(source) if kinds[:1] == ("Fl",) or decrypted else stream.end
                for i in range(begin, stop, _PIECE):
                    for out in chain.feed(bytes(source[i : min(i + _PIECE, stop)])):
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
