"""Cut a parsed Document into Chunks with stable IDs.

Three chunkers:
- `structure` (default): one chunk per section (a heading and the blocks under it, up to the
  next heading). A section longer than `max_words` splits between blocks; a long table splits
  between rows with its header row repeated (as the chunk's `lead`); a single block longer than
  `max_words` splits between words. A section that holds only its heading (a title directly
  followed by a sub-heading) is carried into the next chunk instead of standing alone, and so is
  a heading whose first block alone fills a chunk (the chunk then passes `max_words` by the
  heading's words).
- `fixed`: windows of `max_words` words over the whole text, blind to structure.
- `overlap`: the same windows, each starting `max_words - overlap_words` words after the last.

A chunk ID is 12 hex characters of SHA-256 over (doc_id, version, heading path, normalized
text), so the same text in the same document version keeps its ID across re-ingests and edits
elsewhere in the file; a repeated identical section in one document gets `#2`, `#3` mixed in.

Sized by the embedder's tokens: given a `TokenWindow` (the embedder's token counter and its
window, passed in by the caller: this module imports no model), the structure chunker also
keeps every chunk, as the embedder sees it (`tether.text.embed_text`: title and heading path
above the text), within the window. Sections are packed by words first and each piece is
counted once; only a piece past the window is packed again by its blocks' token counts
(memoised per document), a block too long alone split between lines (code, table-like text) or
words; a piece whose estimate was short is halved between blocks until it fits. A heading path
that takes over three quarters of the window leaves the text a quarter of it (the chunk then
passes the window rather than fall apart into words). `oversized` lists the chunks that still
exceed it (a single "word" longer than the window: a key, a hash), for the ingest report.
Without a window, or where every piece fits, the chunks are exactly the words-only ones.

Entries: when a piece is full, it ends before the last entry that starts in it (a block where
a marked location begins: a reference page's `<dt id>`), so an entry moves whole into the next
chunk instead of being cut in two.

Anchors: a chunk's `anchors` are its section's anchor, then every location in force at or
starting in one of its blocks (`Block.anchor`, `Block.anchors`), in order; `anchor` is the
first. A chunk ID does not depend on them.

What it cannot do: without a window it counts words (whitespace-separated), not model tokens,
so a chunk of 200 dense words can still exceed an embedder's window; it does not split inside a
sentence except when one block alone exceeds the limit; the fixed and overlap chunkers count
words only.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from tether.text import embed_head, embed_text
from tether.types import Block, Chunk, ChunkerConfig, Document, TokenWindow

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\S+")
_LINE = re.compile(r"[^\n]*\S[^\n]*")


def normalize_text(text: str) -> str:
    """NFC, whitespace collapsed, stripped: the text form chunk IDs hash."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def chunk_id(doc_id: str, version: str, heading_path: Sequence[str], text: str) -> str:
    """12 hex characters of SHA-256 over (doc_id, version, heading path, normalized text)."""
    payload = "\x1f".join([doc_id, version, "\x1e".join(heading_path), normalize_text(text)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def chunk_document(
    doc: Document, config: ChunkerConfig | None = None, window: TokenWindow | None = None
) -> list[Chunk]:
    """Chunks of one document, in reading order, with unique stable IDs; with `window`, the
    structure chunker keeps each chunk within the embedder's token window."""
    config = config or ChunkerConfig()
    if config.max_words < 1:
        raise ValueError("max_words must be at least 1")
    if config.name == "structure":
        spans = list(_structure_spans(doc, config.max_words, window))
    elif config.name == "fixed":
        spans = list(_window_spans(doc, config.max_words, config.max_words))
    elif config.name == "overlap":
        if not 0 <= config.overlap_words < config.max_words:
            raise ValueError("overlap_words must be at least 0 and below max_words")
        spans = list(_window_spans(doc, config.max_words, config.max_words - config.overlap_words))
    else:
        raise ValueError(f"unknown chunker {config.name!r}")
    return _make_chunks(doc, spans)


def oversized(chunks: Sequence[Chunk], window: TokenWindow) -> list[tuple[Chunk, int]]:
    """The chunks the embedder would read past its window, with their token counts."""
    counts = ((c, window.count(embed_text(c))) for c in chunks)
    return [(c, n) for c, n in counts if n > window.limit]


@dataclass(frozen=True)
class _Span:
    """A chunk before its ID is assigned."""

    start: int
    end: int
    lead: str
    path: tuple[str, ...]
    anchor: str | None
    page: int | None
    anchors: tuple[str, ...]


def _make_chunks(doc: Document, spans: list[_Span]) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    meta = doc.meta
    for span in spans:
        body = doc.text[span.start : span.end]
        if not body.strip():
            continue
        text = f"{span.lead}\n{body}" if span.lead else body
        cid = chunk_id(meta.doc_id, meta.version, span.path, text)
        if cid in seen:
            seen[cid] += 1
            cid = chunk_id(meta.doc_id, meta.version, span.path, f"{text}#{seen[cid]}")
        else:
            seen[cid] = 1
        chunks.append(
            Chunk(
                chunk_id=cid,
                meta=meta,
                text=text,
                heading_path=span.path,
                start=span.start,
                end=span.end,
                ordinal=len(chunks),
                anchor=span.anchor or (span.anchors[0] if span.anchors else None),
                page=span.page,
                lead=span.lead,
                anchors=span.anchors,
            )
        )
    return chunks


def _sections(blocks: Sequence[Block]) -> Iterator[list[Block]]:
    """Blocks grouped by section; a heading-only section is carried into the next one."""
    current: list[Block] = []
    bare = True  # `current` holds headings only (kept as it grows: a page of 200,000 bare
    # headings was quadratic, minutes to chunk)
    for block in blocks:
        if block.kind == "heading" and current:
            if bare:
                current.append(block)  # carry the bare heading(s) into this section
                continue
            yield current
            current, bare = [], True
        current.append(block)
        bare = bare and block.kind == "heading"
    if current:
        yield current


class _Budget:
    """Words and (with a window) tokens of the piece being filled, against their limits.

    A block's token cost is counted alone, less the special tokens every count includes, so
    a piece's cost is close to the sum; `_fitted` checks each piece's exact count after."""

    def __init__(
        self, max_words: int, window: TokenWindow | None, head: str, memo: dict[str, int]
    ) -> None:
        self.max_words = max_words
        self.window = window
        self.memo = memo  # text -> cost, for this document (a block is weighed several times)
        self.base = window.count("") if window else 0
        # a heading path that fills most of the window leaves a quarter for the text: the
        # chunk passes the window (reported) rather than fall apart into single words
        room = window.limit - window.count(head + "\n") if window else 0
        self.limit = max(room, window.limit // 4) if window else 0
        self.words = self.tokens = 0

    def cost(self, text: str) -> int:
        if self.window is None or not text:
            return 0
        if text not in self.memo:
            self.memo[text] = self.window.count(text) - self.base + 1
        return self.memo[text]

    def fits(self, words: int, tokens: int) -> bool:
        over = self.window is not None and self.tokens + tokens > self.limit
        return self.words + words <= self.max_words and not over

    def take(self, words: int, tokens: int) -> None:
        self.words += words
        self.tokens += tokens


def _structure_spans(doc: Document, max_words: int, window: TokenWindow | None) -> Iterator[_Span]:
    """Sections packed by words; with a window, a piece whose exact token count passes it is
    packed again by its blocks' token costs (counting only where needed keeps it cheap)."""
    memo: dict[str, int] = {}
    for section in _sections(doc.blocks):
        last = section[-1]
        heads = [b for b in section if b.kind == "heading"]
        path = heads[-1].heading_path if heads else last.heading_path
        # a section without a heading (a page's opening) starts with the anchor in force at
        # its first block; its last block's may be a footer link far below
        anchor = heads[-1].anchor if heads else section[0].anchor
        head = embed_head(doc.meta.title, path)
        headers: dict[int | None, str] = {}  # table index -> its header row
        for piece, lead in _pack(section, _Budget(max_words, None, head, memo), "", headers):
            made = _span(piece, lead, path, anchor)
            if window is None or _fits(doc, made[0], window, head):
                yield made[0]
                continue
            tokens = _Budget(max_words, window, head, memo)
            for part, part_lead in _pack(piece, tokens, lead, dict(headers)):
                yield from _fitted(doc, _span(part, part_lead, path, anchor), window, head)


def _pack(
    blocks: Sequence[Block], budget: _Budget, lead: str, headers: dict[int | None, str]
) -> Iterator[tuple[list[Block], str]]:
    """Blocks in pieces within the budget, each with its lead (the header row repeated in a
    piece that continues a table; `headers` collects them); a full piece ends before an entry
    it would cut (`_entry_cut`)."""
    piece: list[Block] = []
    heads_only = True  # `piece` holds headings only (kept as it grows, not counted again)
    budget.words, budget.tokens = word_count(lead), budget.cost(lead)
    for block in _split_long_blocks(blocks, budget.max_words, budget):
        n, t = word_count(block.text), budget.cost(block.text)
        while piece and not budget.fits(n, t) and not heads_only:
            cut = _entry_cut(piece)
            if _only_headings(piece[:cut]):  # a heading never stands alone: keep it with its text
                cut = len(piece)
            yield piece[:cut], lead
            continues = block.kind == "table_row" and not block.header_row
            lead = headers.get(block.table, "") if continues and cut == len(piece) else ""
            piece = piece[cut:]  # an entry cut short moves whole into the next piece
            heads_only = _only_headings(piece)
            budget.words = word_count(lead) + sum(word_count(b.text) for b in piece)
            budget.tokens = budget.cost(lead) + sum(budget.cost(b.text) for b in piece)
        if block.kind == "table_row" and block.header_row:
            headers[block.table] = block.text
        piece.append(block)
        heads_only = heads_only and block.kind == "heading"
        budget.take(n, t)
    if piece:
        yield piece, lead


def _only_headings(piece: Sequence[Block]) -> bool:
    return all(b.kind == "heading" for b in piece)


def _entry_cut(piece: list[Block]) -> int:
    """Where a full piece ends: before the last entry that starts in it (a block where a
    marked location begins, such as a reference page's `<dt id>`, or a definition term, such
    as an AsciiDoc man page's `<dt class="hdlist1">--amend</dt>` with no id: several terms in
    a row open one entry), so an entry is not cut in two; at its end when none starts after
    its first block or a table follows."""
    for i in range(len(piece) - 1, 0, -1):
        if piece[i].kind == "table_row":
            break
        if piece[i].kind != "heading" and piece[i].anchor in piece[i].anchors:
            return i
        if piece[i].term and not piece[i - 1].term:
            return i
    return len(piece)


def _fitted(
    doc: Document, span: tuple[_Span, list[Block]], window: TokenWindow | None, head: str
) -> Iterator[_Span]:
    """The span, or (when its exact token count passes the window) its blocks in two halves,
    each fitted again; a single block is kept as it is (`oversized` reports it)."""
    made, blocks = span
    if window is None or len(blocks) < 2 or _fits(doc, made, window, head):
        yield made
        return
    half = len(blocks) // 2
    for part, lead in ((blocks[:half], made.lead), (blocks[half:], "")):
        yield from _fitted(doc, _span(part, lead, made.path, made.anchor), window, head)


def _fits(doc: Document, made: _Span, window: TokenWindow, head: str) -> bool:
    """Whether the span, as the embedder reads it (`embed_text`), is within the window: a
    text of fewer characters than half the window fits without being counted (a subword
    token holds at least one character; the margin covers special tokens, a prefix and
    normalisation that widens characters)."""
    body = doc.text[made.start : made.end]
    text = f"{head}\n{made.lead}\n{body}" if made.lead else f"{head}\n{body}"
    return 2 * len(text) + 16 <= window.limit or window.count(text) <= window.limit


def _span(
    piece: list[Block], lead: str, path: tuple[str, ...], anchor: str | None
) -> tuple[_Span, list[Block]]:
    pages = [b.page for b in piece if b.page is not None]
    found = [anchor] + [a for b in piece for a in (b.anchor, *b.anchors)]
    anchors = tuple(dict.fromkeys(a for a in found if a))
    made = _Span(
        piece[0].start, piece[-1].end, lead, path, anchor, pages[0] if pages else None, anchors
    )
    return made, piece


def _split_long_blocks(blocks: Sequence[Block], max_words: int, budget: _Budget) -> Iterator[Block]:
    """Blocks as they are, except one longer than max_words, or than the token budget, cut
    between lines (code, or a block of several lines) or words."""
    for block in blocks:
        matches = list(_WORD.finditer(block.text))
        too_long = budget.window is not None and budget.cost(block.text) > budget.limit
        if len(matches) <= max_words and not too_long:
            yield block
            continue
        for a, b in _cuts(block.text, matches, max_words, budget):
            yield replace(block, text=block.text[a:b], start=block.start + a, end=block.start + b)


def _cuts(
    text: str, words: list[re.Match[str]], max_words: int, budget: _Budget
) -> Iterator[tuple[int, int]]:
    """(start, end) offsets in `text` of pieces within max_words and the token budget: whole
    lines when the text has several, else words (a line too long alone is cut between words)."""
    if budget.window is None:
        for i in range(0, len(words), max_words):
            yield words[i].start(), words[min(i + max_words, len(words)) - 1].end()
        return
    units: list[tuple[int, int]] = []
    for line in _LINE.finditer(text):
        if budget.cost(line.group()) <= budget.limit and word_count(line.group()) <= max_words:
            units.append(line.span())
        else:
            units += [m.span() for m in words if line.start() <= m.start() < line.end()]
    start = end = -1
    n = t = 0
    for a, b in units:
        un, ut = word_count(text[a:b]), budget.cost(text[a:b])
        if start >= 0 and (n + un > max_words or t + ut > budget.limit):
            yield start, end
            start = -1
        if start < 0:
            start, n, t = a, 0, 0
        end, n, t = b, n + un, t + ut
    if start >= 0:
        yield start, end


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
        first = bisect.bisect_right(starts, start) - 1
        where = blocks[first] if first >= 0 else None
        path = where.heading_path if where else ()
        page = where.page if where else None
        inside = blocks[max(first, 0) : bisect.bisect_left(starts, end)]
        found = [a for b in inside for a in (b.anchor, *b.anchors)]
        anchors = tuple(dict.fromkeys(a for a in found if a))
        yield _Span(start, end, "", path, where.anchor if where else None, page, anchors)
        if i + size >= len(words):
            return
        i += step
