"""Cut a parsed Document into Chunks with stable IDs.

Three chunkers:
- `structure` (default): one chunk per section (a heading and the blocks under it, up to the
  next heading). A section longer than `max_words` splits between blocks; a long table splits
  between rows with its header row repeated (as the chunk's `lead`); a single block longer than
  `max_words` splits between words. A section that holds only its heading (a title directly
  followed by a sub-heading) is carried into the next chunk instead of standing alone.
- `fixed`: windows of `max_words` words over the whole text, blind to structure.
- `overlap`: the same windows, each starting `max_words - overlap_words` words after the last.

A chunk ID is 12 hex characters of SHA-256 over (doc_id, version, heading path, normalized
text), so the same text in the same document version keeps its ID across re-ingests and edits
elsewhere in the file; a repeated identical section in one document gets `#2`, `#3` mixed in.

What it cannot do: it counts words (whitespace-separated), not model tokens, so a chunk of 200
dense words can still exceed an embedder's window; it does not split inside a sentence except
when one block alone exceeds `max_words`.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence

from tether.types import Block, Chunk, ChunkerConfig, Document

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\S+")


def normalize_text(text: str) -> str:
    """NFC, whitespace collapsed, stripped: the text form chunk IDs hash."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def chunk_id(doc_id: str, version: str, heading_path: Sequence[str], text: str) -> str:
    """12 hex characters of SHA-256 over (doc_id, version, heading path, normalized text)."""
    payload = "\x1f".join([doc_id, version, "\x1e".join(heading_path), normalize_text(text)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def chunk_document(doc: Document, config: ChunkerConfig | None = None) -> list[Chunk]:
    """Chunks of one document, in reading order, with unique stable IDs."""
    config = config or ChunkerConfig()
    if config.max_words < 1:
        raise ValueError("max_words must be at least 1")
    if config.name == "structure":
        spans = list(_structure_spans(doc, config.max_words))
    elif config.name == "fixed":
        spans = list(_window_spans(doc, config.max_words, config.max_words))
    elif config.name == "overlap":
        if not 0 <= config.overlap_words < config.max_words:
            raise ValueError("overlap_words must be at least 0 and below max_words")
        spans = list(_window_spans(doc, config.max_words, config.max_words - config.overlap_words))
    else:
        raise ValueError(f"unknown chunker {config.name!r}")
    return _make_chunks(doc, spans)


# A span is (start, end, lead, heading_path, anchor, page) before IDs are assigned.
_Span = tuple[int, int, str, tuple[str, ...], "str | None", "int | None"]


def _make_chunks(doc: Document, spans: list[_Span]) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    meta = doc.meta
    for start, end, lead, path, anchor, page in spans:
        body = doc.text[start:end]
        if not body.strip():
            continue
        text = f"{lead}\n{body}" if lead else body
        cid = chunk_id(meta.doc_id, meta.version, path, text)
        if cid in seen:
            seen[cid] += 1
            cid = chunk_id(meta.doc_id, meta.version, path, f"{text}#{seen[cid]}")
        else:
            seen[cid] = 1
        chunks.append(
            Chunk(
                chunk_id=cid,
                meta=meta,
                text=text,
                heading_path=path,
                start=start,
                end=end,
                ordinal=len(chunks),
                anchor=anchor,
                page=page,
                lead=lead,
            )
        )
    return chunks


def _sections(blocks: Sequence[Block]) -> Iterator[list[Block]]:
    """Blocks grouped by section; a heading-only section is carried into the next one."""
    current: list[Block] = []
    for block in blocks:
        if block.kind == "heading" and current:
            if all(b.kind == "heading" for b in current):
                current.append(block)  # carry the bare heading(s) into this section
                continue
            yield current
            current = []
        current.append(block)
    if current:
        yield current


def _structure_spans(doc: Document, max_words: int) -> Iterator[_Span]:
    for section in _sections(doc.blocks):
        last = section[-1]
        heads = [b for b in section if b.kind == "heading"]
        path = heads[-1].heading_path if heads else last.heading_path
        anchor = heads[-1].anchor if heads else last.anchor
        piece: list[Block] = []
        words = 0
        lead = ""  # header row repeated in chunks that continue a table
        headers: dict[int | None, str] = {}  # table index -> its header row
        for block in _split_long_blocks(section, max_words):
            n = word_count(block.text)
            if piece and words + n > max_words:
                yield _span(piece, lead, path, anchor)
                continues = block.kind == "table_row" and not block.header_row
                lead = headers.get(block.table, "") if continues else ""
                piece, words = [], word_count(lead)
            if block.kind == "table_row" and block.header_row:
                headers[block.table] = block.text
            piece.append(block)
            words += n
        if piece:
            yield _span(piece, lead, path, anchor)


def _span(piece: list[Block], lead: str, path: tuple[str, ...], anchor: str | None) -> _Span:
    pages = [b.page for b in piece if b.page is not None]
    return (piece[0].start, piece[-1].end, lead, path, anchor, pages[0] if pages else None)


def _split_long_blocks(blocks: Sequence[Block], max_words: int) -> Iterator[Block]:
    """Blocks as they are, except one longer than max_words, cut between words."""
    for block in blocks:
        matches = list(_WORD.finditer(block.text))
        if len(matches) <= max_words:
            yield block
            continue
        for i in range(0, len(matches), max_words):
            group = matches[i : i + max_words]
            a, b = group[0].start(), group[-1].end()
            yield Block(
                kind=block.kind,
                text=block.text[a:b],
                heading_path=block.heading_path,
                start=block.start + a,
                end=block.start + b,
                anchor=block.anchor,
                page=block.page,
                level=block.level,
                header_row=block.header_row,
                table=block.table,
            )


def _window_spans(doc: Document, size: int, step: int) -> Iterator[_Span]:
    words = list(_WORD.finditer(doc.text))
    if not words:
        return
    blocks = sorted(doc.blocks, key=lambda b: b.start)
    starts = [b.start for b in blocks]
    i = 0
    while True:
        group = words[i : i + size]
        start, end = group[0].start(), group[-1].end()
        at = bisect.bisect_right(starts, start) - 1
        where = blocks[at] if at >= 0 else None
        path = where.heading_path if where else ()
        anchor = where.anchor if where else None
        page = where.page if where else None
        yield (start, end, "", path, anchor, page)
        if i + size >= len(words):
            return
        i += step
