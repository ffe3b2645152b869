"""Writing a ChangeSet into a PostgreSQL collection, inside the transaction the store holds.

The same tables and order as the SQLite store (`stores.sqlite_write`): files, documents,
chunks (each with its vector, kept across a rewrite of its file when its ID stays), the
lexical postings (tokenised by FTS5's tokenizer, `stores.lexical`), sentence vectors and
instruction spans; removing a source removes its rows everywhere (the postings and spans
go with their chunk). Rows are loaded with COPY, every file's at once, after every replaced
source was removed. At the end the collection's
lexical statistics (N, total tokens; of every chunk and of the public chunks) are recomputed and, when the vectors have a new
dimension, an HNSW index of that dimension is built (and the old one dropped) under a
database-wide advisory lock, so two collections' first ingests never deadlock on the DDL.

What it cannot do: it neither begins nor commits (the store does both, after taking the
collection's advisory lock); it trusts the change set (the planner refused duplicates).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import psycopg

from tether.stores.dense import HNSW_EF_CONSTRUCTION, HNSW_M
from tether.stores.lexical import lexical_columns, tokenize
from tether.types import ChangeSet, Chunk, DocMeta, FileChange, Progress

CHUNK_ROW = (
    "collection_id, chunk_id, doc_id, version, ordinal, heading_path, anchor, page, start,"
    ' "end", lead, text, access, effective_from, effective_to, lex_len, embedding, vector_hash,'
    " anchors"
)
_DATA_TABLES = (
    "tether_postings", "tether_instructions", "tether_sentence_embeddings", "tether_chunks",
    "tether_documents", "tether_files",
)  # fmt: skip


def write_changes(
    db: psycopg.Connection, cid: int, changes: ChangeSet, step: Progress, *, index: bool = False
) -> None:
    """Write `changes` into collection `cid` (the caller holds the transaction, and with
    `index` the schema lock: see `needs_new_index`)."""
    total = len(changes.files) + len(changes.removed)
    if changes.rebuild:
        for table in _DATA_TABLES:
            db.execute(f"DELETE FROM {table} WHERE collection_id = %s", (cid,))
    kept: dict[str, tuple[Any, str]] = {}
    for source in changes.removed:
        kept.update(delete_source(db, cid, source))
    for i, change in enumerate(changes.files):
        step("write", i, total)
        kept.update(delete_source(db, cid, change.file.source))
    pending = {v.chunk_id: (v.vector, v.text_hash) for v in changes.vectors}
    insert(db, cid, changes.files, changes.chunker, pending, kept)
    for state in changes.touched:
        db.execute(
            "UPDATE tether_files SET size = %s, mtime_ns = %s WHERE collection_id = %s"
            " AND source = %s",
            (state.size, state.mtime_ns, cid, state.source),
        )
    with db.cursor() as cur:
        cur.executemany(
            "UPDATE tether_chunks SET embedding = %s, vector_hash = %s"
            " WHERE collection_id = %s AND chunk_id = %s",
            [(_vec(v), h, cid, c) for c, (v, h) in pending.items()],
        )
    _write_sentences(db, cid, changes)
    set_meta_rows(db, cid, dict(changes.meta))
    _finish(db, cid, index)


def _write_sentences(db: psycopg.Connection, cid: int, changes: ChangeSet) -> None:
    ids = [s.chunk_id for s in changes.sentence_vectors]
    if ids:
        db.execute(
            "DELETE FROM tether_sentence_embeddings WHERE collection_id = %s"
            " AND chunk_id = ANY(%s)",
            (cid, ids),
        )
    with db.cursor().copy(
        'COPY tether_sentence_embeddings (collection_id, chunk_id, n, start, "end",'
        " text_hash, vector) FROM STDIN"
    ) as copy:
        for s in changes.sentence_vectors:
            for n, ((a, b), row) in enumerate(zip(s.spans, s.matrix, strict=True)):
                copy.write_row(
                    (cid, s.chunk_id, n, a, b, s.text_hash, np.asarray(row, np.float32).tobytes())
                )
    db.execute(
        "DELETE FROM tether_sentence_embeddings s WHERE collection_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM tether_chunks c WHERE c.collection_id = s.collection_id"
        " AND c.chunk_id = s.chunk_id)",
        (cid,),
    )


def needs_new_index(db: psycopg.Connection, cid: int, changes: ChangeSet) -> bool:
    """Whether applying `changes` builds an HNSW index (its vectors have a dimension the
    collection has no index for): the caller then takes the schema lock first."""
    if not changes.vectors:
        return False
    dim = len(changes.vectors[0].vector)
    row = db.execute("SELECT hnsw_dim FROM tether_collections WHERE id = %s", (cid,)).fetchone()
    return not row or row[0] != dim


def _finish(db: psycopg.Connection, cid: int, index: bool) -> None:
    """The collection's lexical statistics (N and total tokens, of every chunk and of the
    public ones: `postgres_sql.bm25_sql`); with `index` (the caller holds the schema lock),
    the HNSW index of the vectors' dimension is built and an index of another one dropped."""
    db.execute(
        "UPDATE tether_collections SET lex_rows = s.n, lex_tokens = s.t,"
        " lex_rows_public = s.np, lex_tokens_public = s.tp FROM (SELECT count(*) AS n,"
        " coalesce(sum(lex_len), 0) AS t, count(*) FILTER (WHERE access = 'public') AS np,"
        " coalesce(sum(lex_len) FILTER (WHERE access = 'public'), 0) AS tp"
        " FROM tether_chunks WHERE collection_id = %s) s WHERE id = %s",
        (cid, cid),
    )
    if not index:
        return
    row = db.execute(
        "SELECT vector_dims(embedding) FROM tether_chunks WHERE collection_id = %s"
        " AND embedding IS NOT NULL LIMIT 1",
        (cid,),
    ).fetchone()
    dim = int(row[0]) if row else None
    current = db.execute("SELECT hnsw_dim FROM tether_collections WHERE id = %s", (cid,)).fetchone()
    old = current[0] if current else None
    if old == dim:
        return
    if dim is not None:
        db.execute(
            f"CREATE INDEX IF NOT EXISTS {hnsw_index_name(cid, dim)} ON tether_chunks USING hnsw"
            f" ((embedding::vector({dim})) vector_cosine_ops)"
            f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            f" WHERE {hnsw_predicate(cid, dim)}"
        )
    if old is not None:
        db.execute(f"DROP INDEX IF EXISTS {hnsw_index_name(cid, old)}")
    db.execute("UPDATE tether_collections SET hnsw_dim = %s WHERE id = %s", (dim, cid))


def hnsw_index_name(cid: int, dim: int) -> str:
    """The name of a collection's HNSW index over its vectors of `dim` dimensions."""
    return f"tether_chunks_hnsw_{int(cid)}_{int(dim)}"


def hnsw_predicate(cid: int, dim: int) -> str:
    """The rows of that partial index (a search repeats it so the planner can use it); rows
    of another dimension are outside it, so a change of embedder never breaks an insert."""
    return f"collection_id = {int(cid)} AND vector_dims(embedding) = {int(dim)}"


def set_meta_rows(db: psycopg.Connection, cid: int, values: dict[str, str]) -> None:
    """Insert or replace rows of the collection's meta."""
    with db.cursor() as cur:
        cur.executemany(
            "INSERT INTO tether_meta (collection_id, key, value) VALUES (%s, %s, %s)"
            " ON CONFLICT (collection_id, key) DO UPDATE SET value = excluded.value",
            [(cid, k, v) for k, v in values.items()],
        )


def delete_source(db: psycopg.Connection, cid: int, source: str) -> dict[str, tuple[Any, str]]:
    """Remove what the collection holds for one source file; returns the vectors of its
    chunks ({chunk_id: (vector, hash)}) so a chunk written again with the same ID keeps its
    vector, as the SQLite store's does."""
    row = db.execute(
        "DELETE FROM tether_files WHERE collection_id = %s AND source = %s"
        " RETURNING doc_id, version",
        (cid, source),
    ).fetchone()
    if row is None:
        return {}
    gone = db.execute(
        "DELETE FROM tether_chunks WHERE collection_id = %s AND doc_id = %s AND version = %s"
        " RETURNING chunk_id, embedding, vector_hash",
        (cid, *row),
    ).fetchall()
    ids = [r[0] for r in gone]
    for table in ("tether_postings", "tether_instructions"):
        db.execute(
            f"DELETE FROM {table} WHERE collection_id = %s AND chunk_id = ANY(%s)", (cid, ids)
        )
    db.execute(
        "DELETE FROM tether_documents WHERE collection_id = %s AND doc_id = %s AND version = %s",
        (cid, *row),
    )
    return {c: (v, h) for c, v, h in gone if v is not None}


def insert(
    db: psycopg.Connection,
    cid: int,
    files: Sequence[FileChange],
    chunker: str,
    pending: dict[str, tuple[Any, str]],
    kept: dict[str, tuple[Any, str]],
) -> None:
    """Write the files' documents, chunks (with their vectors: new ones from `pending`, else
    kept ones), postings, instruction spans and file states (one COPY per table)."""
    with db.cursor() as cur:
        cur.executemany(
            "INSERT INTO tether_documents (collection_id, doc_id, version, source, title,"
            " doc_type, access, language, effective_from, effective_to, owner, format,"
            " content_hash, text, chunker, review_by) VALUES"
            " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [_document_row(cid, f, chunker) for f in files],
        )
    chunks = [(f.document.meta, c) for f in files for c in f.chunks]
    tokens = tokenize([lexical_columns(m, c) for m, c in chunks])
    with db.cursor().copy(f"COPY tether_chunks ({CHUNK_ROW}) FROM STDIN") as copy:
        for (m, c), columns in zip(chunks, tokens, strict=True):
            vector, vhash = pending.pop(c.chunk_id, None) or kept.get(c.chunk_id) or (None, None)
            copy.write_row(_chunk_row(cid, m, c, sum(len(t) for t in columns), vector, vhash))
    with db.cursor().copy(
        "COPY tether_postings (collection_id, term, chunk_id, col, tf, pos) FROM STDIN"
    ) as copy:
        for (_, c), columns in zip(chunks, tokens, strict=True):
            for row in postings(cid, c.chunk_id, columns):
                copy.write_row(row)
    with db.cursor() as cur:
        cur.executemany(
            'INSERT INTO tether_instructions (collection_id, chunk_id, start, "end")'
            " VALUES (%s, %s, %s, %s)",
            [(cid, i.chunk_id, i.start, i.end) for f in files for i in f.instructions],
        )
        cur.executemany(
            "INSERT INTO tether_files (collection_id, source, fingerprint, size, mtime_ns,"
            " doc_id, version) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(cid, s.source, s.fingerprint, s.size, s.mtime_ns, s.doc_id, s.version)
             for s in (f.file for f in files)],
        )  # fmt: skip


def _document_row(cid: int, change: FileChange, chunker: str) -> tuple[Any, ...]:
    m, d = change.document.meta, change.document
    return (
        cid, m.doc_id, m.version, m.source, m.title, m.doc_type, m.access, m.language,
        m.effective_from, m.effective_to, m.owner, m.format, d.content_hash, d.text, chunker,
        m.review_by,
    )  # fmt: skip


def _chunk_row(
    cid: int, m: DocMeta, c: Chunk, lex_len: int, vector: Any, vhash: str | None
) -> tuple[Any, ...]:
    return (
        cid, c.chunk_id, m.doc_id, m.version, c.ordinal, list(c.heading_path), c.anchor,
        c.page, c.start, c.end, c.lead, c.text, m.access, m.effective_from, m.effective_to,
        lex_len, _vec(vector), vhash, list(c.anchors),
    )  # fmt: skip


def postings(
    cid: int, chunk_id: str, columns: Iterable[list[tuple[str, int]]]
) -> list[tuple[Any, ...]]:
    """The postings rows of one chunk: (collection, term, chunk, column, count, positions)."""
    rows = []
    for col, tokens in enumerate(columns):
        positions: dict[str, list[int]] = {}
        for term, pos in tokens:
            positions.setdefault(term, []).append(pos)
        rows += [(cid, t, chunk_id, col, len(p), p) for t, p in positions.items()]
    return rows


def _vec(vector: Any) -> Any:
    """A vector as pgvector's adapter writes it (None stays None)."""
    if vector is None:
        return None
    from pgvector import Vector

    return vector if isinstance(vector, Vector) else Vector(np.asarray(vector, np.float32))
