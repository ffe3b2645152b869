"""Writing a ChangeSet into a PostgreSQL collection, inside the transaction the store holds.

The same tables and order as the SQLite store (`stores.sqlite_write`): files, documents,
chunks (each with its vector, kept across a rewrite of its file when its ID stays), the
lexical postings (tokenised by FTS5's tokenizer, `stores.lexical`), sentence vectors and
instruction spans; removing a source removes its rows everywhere (the postings and spans
follow their chunk by foreign key). Rows are loaded with COPY. At the end the collection's
lexical statistics (N, total tokens) are recomputed and its HNSW index is made to match the
vectors' dimension.

What it cannot do: it neither begins nor commits (the store does both, after taking the
collection's advisory lock); it trusts the change set (the planner refused duplicates).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import psycopg

from tether.stores.lexical import lexical_columns, tokenize
from tether.types import ChangeSet, Chunk, DocMeta, FileChange, Progress

CHUNK_ROW = (
    "collection_id, chunk_id, doc_id, version, ordinal, heading_path, anchor, page, start,"
    ' "end", lead, text, access, effective_from, effective_to, lex_len, embedding, vector_hash'
)
_DATA_TABLES = ("tether_sentence_embeddings", "tether_chunks", "tether_documents", "tether_files")


def write_changes(db: psycopg.Connection, cid: int, changes: ChangeSet, step: Progress) -> None:
    """Write `changes` into collection `cid` (the caller holds the transaction)."""
    total = len(changes.files) + len(changes.removed)
    if changes.rebuild:
        for table in _DATA_TABLES:
            db.execute(f"DELETE FROM {table} WHERE collection_id = %s", (cid,))
    kept: dict[str, tuple[Any, str]] = {}
    for source in changes.removed:
        kept.update(delete_source(db, cid, source))
    pending = {v.chunk_id: (v.vector, v.text_hash) for v in changes.vectors}
    for i, change in enumerate(changes.files):
        step("write", i, total)
        kept.update(delete_source(db, cid, change.file.source))
        insert(db, cid, change, changes.chunker, pending, kept)
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
    _finish(db, cid)


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


def _finish(db: psycopg.Connection, cid: int) -> None:
    """The collection's lexical statistics, and its HNSW index on the vectors' dimension."""
    db.execute(
        "UPDATE tether_collections SET lex_rows = s.n, lex_tokens = s.t FROM (SELECT count(*)"
        " AS n, coalesce(sum(lex_len), 0) AS t FROM tether_chunks WHERE collection_id = %s) s"
        " WHERE id = %s",
        (cid, cid),
    )
    row = db.execute(
        "SELECT vector_dims(embedding) FROM tether_chunks WHERE collection_id = %s"
        " AND embedding IS NOT NULL LIMIT 1",
        (cid,),
    ).fetchone()
    dim = int(row[0]) if row else None
    current = db.execute("SELECT hnsw_dim FROM tether_collections WHERE id = %s", (cid,)).fetchone()
    if current and current[0] == dim:
        return
    db.execute(f"DROP INDEX IF EXISTS {hnsw_index_name(cid)}")
    if dim is not None:
        db.execute(
            f"CREATE INDEX {hnsw_index_name(cid)} ON tether_chunks USING hnsw"
            f" ((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {int(cid)}"
        )
    db.execute("UPDATE tether_collections SET hnsw_dim = %s WHERE id = %s", (dim, cid))


def hnsw_index_name(cid: int) -> str:
    """The name of a collection's HNSW index (a partial index over its rows)."""
    return f"tether_chunks_hnsw_{int(cid)}"


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
    db.execute(
        "DELETE FROM tether_documents WHERE collection_id = %s AND doc_id = %s AND version = %s",
        (cid, *row),
    )
    return {c: (v, h) for c, v, h in gone if v is not None}


def insert(
    db: psycopg.Connection,
    cid: int,
    change: FileChange,
    chunker: str,
    pending: dict[str, tuple[Any, str]],
    kept: dict[str, tuple[Any, str]],
) -> None:
    """Write one file's document, chunks (with their vectors: new ones from `pending`, else
    kept ones), postings, instruction spans and file state."""
    m = change.document.meta
    db.execute(
        "INSERT INTO tether_documents (collection_id, doc_id, version, source, title, doc_type,"
        " access, language, effective_from, effective_to, owner, format, content_hash, text,"
        " chunker) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            cid, m.doc_id, m.version, m.source, m.title, m.doc_type, m.access, m.language,
            m.effective_from, m.effective_to, m.owner, m.format, change.document.content_hash,
            change.document.text, chunker,
        ),
    )  # fmt: skip
    tokens = tokenize([lexical_columns(m, c) for c in change.chunks])
    with db.cursor().copy(f"COPY tether_chunks ({CHUNK_ROW}) FROM STDIN") as copy:
        for c, columns in zip(change.chunks, tokens, strict=True):
            vector, vhash = pending.pop(c.chunk_id, None) or kept.get(c.chunk_id) or (None, None)
            copy.write_row(_chunk_row(cid, m, c, sum(len(t) for t in columns), vector, vhash))
    with db.cursor().copy(
        "COPY tether_postings (collection_id, term, chunk_id, col, tf, pos) FROM STDIN"
    ) as copy:
        for c, columns in zip(change.chunks, tokens, strict=True):
            for row in postings(cid, c.chunk_id, columns):
                copy.write_row(row)
    with db.cursor() as cur:
        cur.executemany(
            'INSERT INTO tether_instructions (collection_id, chunk_id, start, "end")'
            " VALUES (%s, %s, %s, %s)",
            [(cid, i.chunk_id, i.start, i.end) for i in change.instructions],
        )
    f = change.file
    db.execute(
        "INSERT INTO tether_files (collection_id, source, fingerprint, size, mtime_ns, doc_id,"
        " version) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (cid, f.source, f.fingerprint, f.size, f.mtime_ns, f.doc_id, f.version),
    )


def _chunk_row(
    cid: int, m: DocMeta, c: Chunk, lex_len: int, vector: Any, vhash: str | None
) -> tuple[Any, ...]:
    return (
        cid, c.chunk_id, m.doc_id, m.version, c.ordinal, list(c.heading_path), c.anchor,
        c.page, c.start, c.end, c.lead, c.text, m.access, m.effective_from, m.effective_to,
        lex_len, _vec(vector), vhash,
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
