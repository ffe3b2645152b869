"""Counting what a PDF stream inflates to, for the inflation check
(`tether.ingest.parse.pdf_inflate`): `Chain` runs a stream's filters one after the other and
counts each output, `Tally` holds a stream's figure against the file's limit, and
`InlineImages` finds the inline images (`BI <dict> ID <data> EI`) in the inflated bytes and
inflates each against its declared size plus `INLINE_SLACK`.

What it cannot do: it counts bytes, not what a library builds from them; an inline image's
declared size is read from its `W`, `H`, `BPC` and colour space only (an unknown colour space
counts as 4 components); more than `MAX_OPEN_INLINE` overlapping images refuse the stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from tether.errors import ParseError
from tether.ingest.parse.pdf_decoders import make_decoder
from tether.ingest.parse.pdf_objects import Malformed, filter_chain, read_object

INLINE_SLACK = 1_000_000  # bytes an inline image may inflate to beyond its declared size
MAX_OPEN_INLINE = 32  # inline images being inflated at once in one stream
_BOUNDARY = frozenset(b"\x00\t\n\x0c\r ()<>[]{}/%")  # whitespace and delimiters
_ID = re.compile(rb"[\x00\t\n\x0c\r ]ID[\x00\t\n\x0c\r ]")
_MAX_INLINE_DICT = 4096


class Tally:
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
                f"PDF cannot be read: its streams inflate to more than {mb(self.max_total)}"
                " in all, over the limit for one file (a compression bomb?)"
            )


class Chain:
    """A stream's filters, one after the other, each output counted."""

    def __init__(
        self,
        kinds: tuple[str, ...],
        early: int,
        limit: int,
        tally: Tally,
        over: Callable[[int], ParseError],
    ) -> None:
        self._decoders = [make_decoder(kind, early) for kind in kinds]
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


def mb(n: int) -> str:
    """A size as the refusals say it: "100 MB", "4,096 bytes", "1 byte"."""
    if n >= 1_000_000:
        return f"{n / 1e6:g} MB"
    return "1 byte" if n == 1 else f"{n:,} bytes"


_COMPONENTS = {
    "G": 1,
    "DeviceGray": 1,
    "CalGray": 1,
    "I": 1,
    "Indexed": 1,
    "RGB": 3,
    "DeviceRGB": 3,
    "CalRGB": 3,
    "Lab": 3,
    "CMYK": 4,
    "DeviceCMYK": 4,
}


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


class InlineImages:
    """Finds the inline images in a stream's inflated bytes, fed piece by piece, and inflates
    each image's data as it comes (several at once: the search goes on inside an image's data,
    so that nothing there is left unread)."""

    def __init__(self, where: str, limit: int, tally: Tally) -> None:
        self._where, self._limit, self._tally = where, limit, tally
        self._carry = b""
        self._open: list[Chain] = []

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
            d, _ = read_object(b"<<" + text + b">>", 0)
        except Malformed:
            return
        chain = filter_chain(d.get("F", d.get("Filter")), d.get("DP", d.get("DecodeParms")), _same)
        if not chain or not chain[0]:
            return
        declared = _declared_size(d)
        limit = min(self._limit, declared + INLINE_SLACK)

        def over(n: int) -> ParseError:
            return ParseError(
                f"PDF cannot be read: an inline image in {self._where} inflates to more than"
                f" {mb(limit)}, past the {mb(declared)} its size declares (a compression"
                " bomb?)"
            )

        image = Chain(chain[0], chain[1], limit, self._tally, over)
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
