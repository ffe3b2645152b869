"""What every store's lexical (BM25) ranking shares, so all stores rank alike.

- `query_parts(query)`: the phrases of a free-text query: every content word, and each code
  (PW-2200-07) as the phrase of its tokens plus its collapsed form (pw220007) in the codes
  column, so a code is found typed with or without its separators;
- `lexical_columns(meta, chunk)`: the three indexed columns of a chunk (heading, text, codes)
  and their BM25 weights (`WEIGHTS`);
- `tokenize(rows)`: the tokens SQLite FTS5's `porter unicode61 remove_diacritics 2`
  tokenizer makes of each column of each row, with their positions. It runs FTS5 itself (an
  in-memory table and `fts5vocab`), so a store that keeps its own postings (PostgreSQL)
  tokenises exactly as the SQLite store's FTS5 table does: accents folded, English stems;
- `K1`, `B`: FTS5's BM25 constants (its `bm25()` uses these; the PostgreSQL store computes
  the same formula in SQL).

What it cannot do: FTS5's tokenizer has no French stemming; `tokenize` opens an in-memory
SQLite database per call (about a millisecond), so callers pass many rows at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from tether.text import codes, collapse_code, content_words, fold
from tether.types import Chunk, DocMeta

TOKENIZER = "porter unicode61 remove_diacritics 2"
COLUMNS = ("heading", "text", "codes")
WEIGHTS = (2.0, 1.0, 4.0)  # bm25(chunks_fts, 2.0, 1.0, 4.0): heading, text, codes
CODES_COLUMN = 2
K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class QueryPart:
    """One content word (`code` empty), or one code: the phrase of its tokens and its
    collapsed form (matched in the codes column)."""

    phrase: str
    code: str = ""


def query_parts(query: str) -> list[QueryPart]:
    """The parts of a free-text query, in order: codes first, then content words that are
    not a piece of a code (a code matches as a whole, not by its pieces)."""
    parts: list[QueryPart] = []
    in_codes: set[str] = set()
    for code in codes(query):
        tokens = fts_tokens(fold(code))
        in_codes.update(tokens)
        parts.append(QueryPart(" ".join(tokens), collapse_code(code)))
    for word in dict.fromkeys(content_words(query)):
        if word not in in_codes:
            parts.append(QueryPart(word))
    return parts


def fts_tokens(text: str) -> list[str]:
    """The tokens FTS5's unicode61 tokenizer makes of a folded code."""
    out: list[str] = []
    token = ""
    for ch in text:
        if ch.isalnum():
            token += ch
        elif token:
            out.append(token)
            token = ""
    if token:
        out.append(token)
    return out


def lexical_columns(meta: DocMeta, chunk: Chunk) -> tuple[str, str, str]:
    """The indexed columns of a chunk: heading (document title and heading path), text, and
    its codes written without separators."""
    heading = " ".join([meta.title, *chunk.heading_path])
    code_col = " ".join(collapse_code(x) for x in codes(chunk.text + " " + heading))
    return heading, chunk.text, code_col


def tokenize(rows: Sequence[Sequence[str]]) -> list[list[list[tuple[str, int]]]]:
    """For each row, for each of its columns, the (token, position) pairs FTS5 makes of it
    (positions count from 0 in each column; rows must have the same number of columns)."""
    if not rows:
        return []
    width = len(rows[0])
    names = [f"c{i}" for i in range(width)]
    out: list[list[list[tuple[str, int]]]] = [[[] for _ in range(width)] for _ in rows]
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE t USING fts5({', '.join(names)}, tokenize='{TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        marks = ", ".join("?" * (width + 1))
        db.executemany(
            f"INSERT INTO t (rowid, {', '.join(names)}) VALUES ({marks})",
            [(i, *row) for i, row in enumerate(rows)],
        )
        for term, doc, col, offset in db.execute("SELECT term, doc, col, offset FROM v"):
            out[doc][names.index(col)].append((term, offset))
    finally:
        db.close()
    for row in out:
        for column in row:
            column.sort(key=lambda pair: pair[1])
    return out
