"""The SQLite store's SQL: the schema, the FTS5 query built from a free-text query, the filter
clause, reading a documents row, and small helpers for batches and per-generation caches.

What it cannot do: it runs no query itself (`tether.stores.sqlite` does); the FTS5 query ORs
every content word, so it ranks but never requires all words.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date
from typing import Any

from tether.stores.lexical import query_parts
from tether.types import DocMeta, Filters

CACHED_FILTERS = 32  # filter masks and allowed-ID sets kept per generation
BATCH = 500  # IDs per IN (...) clause

AUDIT_TABLE = (
    "CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, at TEXT NOT NULL,"
    " who TEXT NOT NULL, audience TEXT NOT NULL, status TEXT NOT NULL, flagged INTEGER NOT NULL,"
    " flags TEXT NOT NULL, record TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at)",
    "CREATE TABLE IF NOT EXISTS audit_feedback (id INTEGER PRIMARY KEY,"
    " entry_id INTEGER NOT NULL, at TEXT NOT NULL, who TEXT NOT NULL, verdict TEXT NOT NULL,"
    " note TEXT, chunk_id TEXT, UNIQUE (entry_id, who))",
)
"""The audit of answered questions (`tether.stores.sqlite_audit`), added in schema 3, and the
feedback on its entries (one per entry and asker), added beside it without a new schema
version: both are created by the audit's first write when an index lacks them."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  source TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL, doc_id TEXT NOT NULL, version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
  doc_id TEXT NOT NULL, version TEXT NOT NULL, source TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL, doc_type TEXT NOT NULL, access TEXT NOT NULL, language TEXT NOT NULL,
  effective_from TEXT, effective_to TEXT, owner TEXT, format TEXT NOT NULL,
  content_hash TEXT NOT NULL, text TEXT NOT NULL, chunker TEXT NOT NULL,
  review_by TEXT,
  PRIMARY KEY (doc_id, version)
);
CREATE TABLE IF NOT EXISTS chunks (
  chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, version TEXT NOT NULL,
  ordinal INTEGER NOT NULL, heading_path TEXT NOT NULL, anchor TEXT, page INTEGER,
  start INTEGER NOT NULL, "end" INTEGER NOT NULL, lead TEXT NOT NULL, text TEXT NOT NULL,
  anchors TEXT NOT NULL DEFAULT '[]',
  FOREIGN KEY (doc_id, version) REFERENCES documents (doc_id, version)
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id, version, ordinal);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
  heading, text, codes, chunk_id UNINDEXED,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts_public USING fts5 (
  heading, text, codes, chunk_id UNINDEXED,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS embeddings (
  chunk_id TEXT PRIMARY KEY, text_hash TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS sentence_embeddings (
  chunk_id TEXT NOT NULL, n INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  text_hash TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (chunk_id, n)
);
CREATE TABLE IF NOT EXISTS instructions (
  chunk_id TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  PRIMARY KEY (chunk_id, start)
);
""" + "".join(statement + ";\n" for statement in AUDIT_TABLE)


def fts_query(query: str) -> str:
    """An FTS5 MATCH expression for a free-text query: every content word and code, ORed.

    A code (PW-2200-07) becomes the exact phrase "pw 2200 07" or its collapsed form in the
    codes column; words are quoted so FTS5 syntax in a query is never interpreted."""
    return " OR ".join(
        f'("{p.phrase}" OR codes : "{p.code}")' if p.code else f'"{p.phrase}"'
        for p in query_parts(query)
    )


def filter_sql(filters: Filters) -> tuple[str, list[str]]:
    clauses = ["1"]
    args: list[str] = []
    if filters.public:  # any audience but "staff" (fail closed)
        clauses.append("d.access = 'public'")
    if filters.as_of is not None:
        day = filters.as_of.isoformat()
        clauses.append("(d.effective_from IS NULL OR d.effective_from <= ?)")
        clauses.append("(d.effective_to IS NULL OR d.effective_to >= ?)")
        args += [day, day]
    return " AND ".join(clauses), args


META_COLUMNS = (
    "doc_id, version, title, doc_type, access, language, effective_from, effective_to, owner,"
    " source, format, {review_by}"
)
"""The documents columns a DocMeta is read from (`row_meta`); `{review_by}` is the column, or
NULL for an index of schema 5 or older read as it is (the column came with schema 6)."""


def row_meta(r: Sequence) -> DocMeta:
    """A DocMeta from a row of META_COLUMNS."""
    return DocMeta(
        doc_id=r[0],
        version=r[1],
        title=r[2],
        doc_type=r[3],
        access=r[4],
        language=r[5],
        effective_from=date.fromisoformat(r[6]) if r[6] else None,
        effective_to=date.fromisoformat(r[7]) if r[7] else None,
        owner=r[8],
        source=r[9],
        format=r[10],
        review_by=date.fromisoformat(r[11]) if r[11] else None,
    )




def batches(ids: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(ids), BATCH):
        yield ids[i : i + BATCH]


def remember(cache: dict, key: Any, value: Any) -> None:
    """Keep `value` in a small per-generation cache (the oldest entry goes first)."""
    if len(cache) >= CACHED_FILTERS:
        cache.pop(next(iter(cache)))
    cache[key] = value
