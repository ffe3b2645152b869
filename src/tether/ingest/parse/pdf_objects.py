"""PDF objects and streams read from a file's bytes, for the inflation check
(`tether.ingest.parse.pdf_inflate`): `read_object` reads one PDF object (dictionaries, arrays,
names with `#xx` escapes decoded, numbers, references, strings), `filter_chain` reads a
stream's `/Filter` and `/DecodeParms`, and `find_streams` finds every stream in the file
(each `stream` keyword that follows an object's dictionary, `N G obj << ... >> stream`),
whatever the cross-reference table says, with where its data starts and ends.

What it cannot do: it is no PDF library: it reads no cross-reference table or object stream
(an object stored in one is not found: the caller guesses the filters), no encryption, and no
object nested deeper than 32 levels; a dictionary it cannot read is counted, and more than
`MAX_UNREADABLE` such streams refuse the file.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from tether.errors import ParseError

MAX_UNREADABLE = 64  # `stream` keywords after a dictionary that cannot be read
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
_FILTERS = {
    "FlateDecode": "Fl",
    "Fl": "Fl",
    "LZWDecode": "LZW",
    "LZW": "LZW",
    "RunLengthDecode": "RL",
    "RL": "RL",
    "ASCIIHexDecode": "AHx",
    "AHx": "AHx",
    "ASCII85Decode": "A85",
    "A85": "A85",
}


class Malformed(Exception):
    """Bytes that are not a PDF object."""


class _Name(str):
    """A PDF name (`/Filter`), `#xx` escapes decoded."""


class _Ref(NamedTuple):
    num: int
    gen: int


def read_object(data: bytes, i: int, depth: int = 0) -> tuple[Any, int]:
    """The PDF object at `i` (after whitespace and comments) and the offset after it: a dict,
    a list, a `_Name`, an int or float, a `_Ref`, bytes for a string or a keyword."""
    if depth > 32:
        raise Malformed("nested too deeply")
    i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
    if i >= len(data):
        raise Malformed("truncated")
    if data.startswith(b"<<", i):
        found: dict[str, Any] = {}
        i += 2
        while True:
            i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
            if data.startswith(b">>", i):
                return found, i + 2
            key, i = read_object(data, i, depth + 1)
            if not isinstance(key, _Name):
                raise Malformed("a dictionary key that is not a name")
            found[key], i = read_object(data, i, depth + 1)
    head = data[i : i + 1]
    if head == b"[":
        items: list[Any] = []
        i += 1
        while True:
            i = _SKIP.match(data, i).end()  # type: ignore[union-attr]
            if data.startswith(b"]", i):
                return items, i + 1
            item, i = read_object(data, i, depth + 1)
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
            raise Malformed("an unterminated string")
        return data[i + 1 : end], end + 1
    match = _REGULAR.match(data, i)
    if match is None:
        raise Malformed(f"unexpected {head!r}")
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
            raise Malformed("an unterminated string")
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


def filter_chain(
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


@dataclass(frozen=True)
class _Stream:
    """One stream of the file: its object, where its data starts and ends, its filters (None:
    its dictionary could not be read)."""

    num: int
    gen: int
    start: int
    end: int
    chain: tuple[tuple[str, ...], int] | None


def find_streams(data: bytes) -> list[_Stream]:
    """Every stream in the file's bytes, in file order."""
    headers = [(m.end(), int(m.group(1)), int(m.group(2)), m.start()) for m in _OBJ.finditer(data)]
    ends = [h[0] for h in headers]
    latest = {(num, gen): end for end, num, gen, _ in headers}  # an update's object wins
    parsed: dict[int, tuple[Any, int] | None] = {}

    def value_at(end: int) -> tuple[Any, int] | None:
        if end not in parsed:
            try:
                parsed[end] = read_object(data, end)
            except (Malformed, RecursionError, ValueError):
                parsed[end] = None
        return parsed[end]

    def resolve(value: Any, depth: int = 0) -> Any:
        while isinstance(value, _Ref) and depth < 8:
            where = latest.get((value.num, value.gen))
            found = value_at(where) if where is not None else None
            if found is None:
                raise Malformed("an object that is not in the file's bytes")
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
                chain = filter_chain(value.get("Filter"), value.get("DecodeParms"), resolve)
            except Malformed:  # a filter in an object stream: tried with each usual chain
                chain = None
            try:
                length = resolve(value.get("Length"))
            except Malformed:  # a length in an object stream: up to `endstream`
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
