"""The stream filters the PDF inflation check runs (`tether.ingest.parse.pdf_inflate`), each fed
and yielding pieces of at most `PIECE` bytes so that only counts need be kept: FlateDecode
(`zlib.decompressobj` with `max_length`; a zlib or gzip header, else raw deflate), LZWDecode
(with EarlyChange), RunLengthDecode, ASCIIHexDecode and ASCII85Decode.

What it cannot do: no image codecs (DCT, JPX, JBIG2, CCITT) and no `/DecodeParms`
predictors; a decoder stops at the first malformed input (`done`), it does not repair it.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator

PIECE = 1 << 16  # bytes fed or produced at a time
_WS = b"\x00\t\n\x0c\r "


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
            if len(self._seen) > PIECE:
                self._seen = None
        pending = data
        while True:
            try:
                out = self._z.decompress(pending, PIECE)
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
            if not pending and len(out) < PIECE:
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
            if len(out) >= PIECE:
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
            if len(out) >= PIECE:
                yield bytes(out)
                out.clear()
        if out:
            yield bytes(out)


_Decoder = _Flate | _AsciiHex | _Ascii85 | _RunLength | _Lzw


def make_decoder(kind: str, early: int) -> _Decoder:
    if kind == "Fl":
        return _Flate()
    if kind == "LZW":
        return _Lzw(early)
    if kind == "RL":
        return _RunLength()
    if kind == "AHx":
        return _AsciiHex()
    return _Ascii85()
