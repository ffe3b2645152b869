"""The shared parts of every parser: decoding bytes to text, cleaning block text, and the
`Builder` that accumulates blocks with their heading path, anchor and character offsets.

Guarantees: for every block, `text[b.start:b.end] == b.text`; block texts are NFC-normalised
and whitespace-collapsed (code keeps its lines and indentation); the text is the block texts
joined by a blank line. A block's anchor is the location in force where it stands: the
anchor of its innermost section that has one (inherited from an enclosing heading when the
innermost heading has none), or, after an anchor marked inside the section (`Builder.mark`:
an entry of a reference page, an `id` in the text), that anchor, until the next one or the
next heading. A block's `anchors` are the locations that start at it: a heading's own and
those marked just before it, or those marked before or inside a paragraph.

Decoding: UTF-16 with a BOM, else the encoding the file declares (HTML's `<meta charset>`),
else UTF-8; a file that declares nothing and is not valid UTF-8 (a Latin-1 or cp1252 export)
is decoded with the encoding charset-normalizer detects.

What it cannot do: detection is a guess from byte statistics: on a short file it may pick a
sibling code page (cp1250 for cp1252) that reads the same letters, and a file whose bytes
fit no encoding stays refused as "not valid UTF-8"; a declared encoding is never second-guessed.
"""

from __future__ import annotations

import codecs
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from tether.errors import ParseError
from tether.types import Block, BlockKind

_SNIFF_BYTES = 8192
PARA_SEP = "\n\n"


@dataclass
class Section:
    level: int
    text: str
    anchor: str | None


@dataclass
class Parsed:
    """What a format parser returns: raw metadata (field -> value) and the built blocks."""

    meta: dict[str, Any]
    text: str
    blocks: tuple[Block, ...]
    first_heading: str | None
    empty_reason: str | None = None


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")


def clean(text: str) -> str:
    """NFC, control characters removed, whitespace runs collapsed to one space, stripped."""
    text = unicodedata.normalize("NFC", text)
    return " ".join(_CONTROL.sub("", text).split())


def clean_code(text: str) -> str:
    """NFC, common indentation removed (relative indentation kept), trailing spaces and
    surrounding blank lines removed."""
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text))
    text = (
        text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    )
    lines = [line.rstrip() for line in textwrap.dedent(text).split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


@dataclass
class Builder:
    """Accumulates blocks, keeps the heading stack and the character offsets."""

    parts: list[str] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    stack: list[Section] = field(default_factory=list)
    pos: int = 0
    first_heading: str | None = None
    pending: list[str] = field(default_factory=list)  # marked, waiting for the next block
    current: str | None = None  # the latest location marked in the current section
    _moving: list[str] = field(default_factory=list)  # pending ones that move `current`

    def mark(self, *names: str | None, moves: bool = True) -> None:
        """Locations (ids, named anchors) that start at the next block; with `moves` the
        content after them belongs to the last one (else they are only recorded)."""
        for name in names:
            name = (name or "").strip()
            if name and name not in self.pending:
                self.pending.append(name)
                if moves:
                    self._moving.append(name)

    def _anchor(self) -> str | None:
        for section in reversed(self.stack):
            if section.anchor:
                return section.anchor
        return None

    def _append(self, text: str) -> tuple[int, int]:
        if self.parts:
            self.parts.append(PARA_SEP)
            self.pos += len(PARA_SEP)
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start, self.pos

    def heading(
        self,
        text: str,
        level: int,
        anchor: str | None = None,
        page: int | None = None,
        anchors: tuple[str, ...] = (),
    ) -> bool:
        """A heading; `anchors` are its other locations besides `anchor` (the pending marked
        ones join them, and the first of them stands for `anchor` when it has none)."""
        text = clean(text)
        if not text:
            return False
        level = max(1, min(6, level))
        while self.stack and self.stack[-1].level >= level:
            self.stack.pop()
        anchor = (anchor or "").strip() or None
        self.mark(anchor, *anchors)
        if anchor is None and self.pending:
            anchor = self.pending[0]
        self.stack.append(Section(level, text, anchor))
        self.current = None
        if self.first_heading is None:
            self.first_heading = text
        self._push("heading", text, page=page, level=level)
        return True

    def add(
        self,
        kind: BlockKind,
        text: str,
        *,
        page: int | None = None,
        header_row: bool = False,
        table: int | None = None,
        term: bool = False,
    ) -> bool:
        text = clean_code(text) if kind == "code" else clean(text)
        if not text:
            return False
        self._push(kind, text, page=page, header_row=header_row, table=table, term=term)
        return True

    def _push(self, kind: BlockKind, text: str, **fields: Any) -> None:
        """Append a block of cleaned, non-empty `text` under the current heading path; the
        pending marked locations start at it."""
        start, end = self._append(text)
        own = tuple(self.pending)
        if self._moving and kind != "heading":
            self.current = self._moving[0]
        self.pending, self._moving = [], []
        self.blocks.append(
            Block(
                kind=kind,
                text=text,
                heading_path=tuple(s.text for s in self.stack),
                start=start,
                end=end,
                anchor=self.current or self._anchor(),
                anchors=own,
                **fields,
            )
        )

    def result(self, meta: dict[str, Any], empty_reason: str | None = None) -> Parsed:
        return Parsed(
            meta=meta,
            text="".join(self.parts),
            blocks=tuple(self.blocks),
            first_heading=self.first_heading,
            empty_reason=empty_reason,
        )


def utf8_problem(data: bytes, exc: UnicodeDecodeError) -> str:
    return f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start})"


def _check_not_binary(data: bytes) -> None:
    sample = data[:_SNIFF_BYTES]
    if b"\x00" in sample:
        raise ParseError("not a text file (binary content)")
    control = sum(1 for b in sample if (b < 32 and b not in (9, 10, 12, 13)) or b == 127)
    if sample and control / len(sample) > 0.1:
        raise ParseError("not a text file (binary content)")


_WESTERN = "cp1252"  # Windows Western: what Latin-1 exports are in practice (WHATWG agrees)


def _mostly_utf8(data: bytes) -> bool:
    """More valid non-ASCII UTF-8 characters than undecodable bytes."""
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    return sum(1 for ch in text if ord(ch) > 127) - bad > bad


def _detected(data: bytes, exc: UnicodeDecodeError) -> str:
    """`data` (no BOM, no declared encoding, not UTF-8) decoded with the encoding that
    charset-normalizer finds; ParseError (the UTF-8 problem) when it finds none, or when the
    file is mostly valid UTF-8 (damaged UTF-8: a guess would turn every "é" into "Ã©").

    Where cp1252 ties with the best guess (same chaos and coherence: cp1250 and cp1252 read
    French text alike except "à"), cp1252 is taken: ties are otherwise broken by list order.
    """
    from charset_normalizer import from_bytes

    if _mostly_utf8(data):
        raise ParseError(utf8_problem(data, exc))
    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        raise ParseError(utf8_problem(data, exc))
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    western = any(_WESTERN in m.could_be_from_charset for m in tied)
    try:
        return data.decode(_WESTERN if western else best.encoding)
    except (UnicodeError, LookupError):
        raise ParseError(utf8_problem(data, exc)) from None


def decode(data: bytes, encoding: str | None = None) -> str:
    """Bytes to text: UTF-16 with a BOM, else the declared `encoding`, else UTF-8 (BOM
    dropped), else the detected encoding when the file declares none and is not UTF-8.

    Newlines become "\\n". Raises ParseError for binary content, bad bytes or only whitespace.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise ParseError("not valid UTF-16 (the file starts with a UTF-16 BOM)") from None
    else:
        _check_not_binary(data)
        if encoding is None or codecs.lookup(encoding).name == "utf-8":
            try:
                text = data.decode("utf-8").removeprefix("\ufeff")
            except UnicodeDecodeError as exc:
                if encoding is not None or data.startswith(codecs.BOM_UTF8):
                    raise ParseError(utf8_problem(data, exc)) from None
                text = _detected(data, exc)
        else:
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ParseError(
                    f"not valid {encoding} (byte 0x{data[exc.start]:02x} at position {exc.start})"
                ) from None
            except (UnicodeError, LookupError) as exc:  # codecs such as punycode or undefined
                raise ParseError(f"not valid {encoding} ({short(exc)})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ParseError("empty file (only whitespace)")
    return text


def short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
