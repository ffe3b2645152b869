"""The PostgreSQL Store: one collection of a PostgreSQL database with pgvector, many
processes and machines sharing it.

`PostgresStore("postgresql://user@host/db?collection=docs")` serves the collection `docs`
(default "default"); several collections share one database and its tables
(`stores/migrations/postgres/`, applied by `stores.postgres_db.ensure_schema`).

- reads: each read runs in one REPEATABLE READ, READ ONLY transaction (nested calls share
  it), so it sees one committed generation, never a mix of two; the collection's
  `generation` counter moves with every committed write, from any process, and the caches
  of this object (document metadata, the vector matrix) are dropped when it moves;
- writes: `apply(changes)` takes the collection's advisory lock (a second writer waits up to
  `lock_timeout` seconds, then stops with one clear line) and writes the whole change set in
  one transaction (`stores.postgres_write`), bumping the generation;
- dense search: cosine (`<=>`), with the filters (audience, as_of) in the WHERE clause
  before ranking. Up to `ann_threshold` vectors the ranking is exact; above it (or with
  `ann="hnsw"`), when k is under a quarter of the vectors, it uses the collection's HNSW index with pgvector 0.8's iterative scan
  (`hnsw.iterative_scan = relaxed_order`, re-sorted), so a filtered query still returns k rows;
- lexical search: BM25 computed in SQL from the postings the store keeps, tokenised by
  SQLite FTS5's own tokenizer, the same formula and weights as the SQLite store's FTS5
  (`stores.postgres_sql`): codes with or without their dashes, accents folded; a staff
  search scores with the whole collection's statistics, any other audience with the public
  chunks' only (schema 4), so a staff passage never moves a public score.

What it cannot do: the HNSW ranking is approximate (its recall is measured in
bench/scale/pg_scale.py); a store object is one connection, for one thread; the filters are on
effective dates and access only; the lexical ranking reads every posting of the query's
terms (as FTS5 does), so a very common word costs a scan of its postings.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from tether._version import __version__
from tether.config import DEFAULT_LOCK_TIMEOUT
from tether.errors import ConflictError, NotFoundError, TetherError
from tether.stores.dense import ANN_THRESHOLD, HNSW_EF_SEARCH
from tether.stores.lexical import query_parts, tokenize
from tether.stores.postgres_db import (
    SCHEMA_LOCK,
    clear_errors,
    collection_id,
    connect,
    ensure_schema,
    parse_url,
)
from tether.stores.postgres_sql import (
    CHUNK_COLS,
    META_COLS,
    Phrase,
    bm25_sql,
    count_sql,
    filter_sql,
    row_meta,
)
from tether.stores.postgres_write import (
    hnsw_predicate,
    needs_new_index,
    set_meta_rows,
    write_changes,
)
from tether.stores.rows import bm25_hits, document_infos, spans_by_document, version_key
from tether.types import (
    ChangeSet,
    Chunk,
    DocMeta,
    DocumentInfo,
    FileState,
    Filters,
    Hit,
    InstructionSpan,
    Progress,
)

EF_SEARCH = HNSW_EF_SEARCH  # hnsw.ef_search, as the SQLite store's faiss graph (raised to k)
# the type the HNSW graph is built over (`postgres_write.ensure_hnsw` builds `vector`);
# bench/scale/pg_scale.py sets "halfvec" while it measures a graph it built so (--builds M:EFC:halfvec)
HNSW_KIND = "vector"


@dataclass
class _Caches:
    """What one store object keeps for one generation of its collection."""

    metas: dict[tuple[str, str], DocMeta] | None = None
    vectors: tuple[list[str], np.ndarray] | None = None
    count: int | None = None  # vectors in the collection


class PostgresStore:
    """One collection in a PostgreSQL database (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        writable: bool = True,
        ann: str = "auto",
        ann_threshold: int = ANN_THRESHOLD,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        conninfo, self.collection, self.location = parse_url(url)
        if ann not in ("auto", "hnsw", "none"):
            raise TetherError(f"unknown ann {ann!r}: auto, hnsw or none")
        self.writable = writable or create
        self.ann, self.ann_threshold, self.lock_timeout = ann, ann_threshold, lock_timeout
        self._depth = 0
        self._generation = -1
        self._cache = _Caches()
        self.db = connect(conninfo, self.location, writable=self.writable)
        try:
            ensure_schema(self.db, self.location, writable=self.writable)
            self.cid = self._collection_id(create)
        except BaseException:
            self.db.close()
            raise

    def _collection_id(self, create: bool) -> int:
        with clear_errors(self.location):
            if create and self.writable:
                self.db.execute(
                    "INSERT INTO tether_collections (name) VALUES (%s) ON CONFLICT DO NOTHING",
                    (self.collection,),
                )
        return collection_id(self.db, self.collection, self.location)

    def close(self) -> None:
        self.db.close()

    # ---- generations and transactions ----------------------------------------------------

    def _stored_generation(self) -> int:
        row = self.db.execute(
            "SELECT generation FROM tether_collections WHERE id = %s", (self.cid,)
        ).fetchone()
        if row is None:
            raise ConflictError(
                f"the collection {self.collection!r} was removed from {self.location}"
            )
        return int(row[0])

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection]:
        """One REPEATABLE READ, READ ONLY transaction (nested calls share it); the caches
        are dropped first when the generation moved. psycopg errors become TetherErrors."""
        if self._depth:
            self._depth += 1
            try:
                yield self.db
            finally:
                self._depth -= 1
            return
        with clear_errors(self.location):
            self.db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._depth += 1
            try:
                generation = self._stored_generation()
                if generation != self._generation:
                    self._generation, self._cache = generation, _Caches()
                yield self.db
            except BaseException:
                self._rollback()
                raise
            finally:
                self._depth -= 1
            self.db.execute("COMMIT")

    def _rollback(self) -> None:
        if self.db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with suppress(psycopg.Error):  # the first error is the one to report
                self.db.execute("ROLLBACK")

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection]:
        """One READ COMMITTED write transaction under the collection's advisory lock (waited
        for up to `lock_timeout`), bumping the generation; rolled back on any error."""
        if not self.writable:
            raise TetherError(f"{self.location} was opened for reading: nothing can be written")
        with clear_errors(self.location, writing=True):
            self.db.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            try:
                ms = max(1, int(self.lock_timeout * 1000))
                self.db.execute(f"SET LOCAL lock_timeout = {ms}")
                self.db.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('tether:' || %s))", (self.collection,)
                )
                yield self.db
                row = self.db.execute(
                    "UPDATE tether_collections SET generation = generation + 1 WHERE id = %s"
                    " RETURNING generation",
                    (self.cid,),
                ).fetchone()
                self.db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        self._generation = int(row[0]) if row else -1
        self._cache = _Caches()

    def generation(self) -> int:
        """The collection's write counter: it moves with every committed apply or set_meta
        (one query outside a read; the caches are dropped when it moved)."""
        if self._depth:
            return self._generation
        with clear_errors(self.location):
            generation = self._stored_generation()
        if generation != self._generation:
            self._generation, self._cache = generation, _Caches()
        return self._generation

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state of the collection (one REPEATABLE READ
        transaction on this store's connection; see `StoreReader.snapshot`)."""
        with self._reading():
            yield

    # ---- writing ---------------------------------------------------------------------------

    def apply(self, changes: ChangeSet, progress: Progress | None = None) -> None:
        """Write a change set in one transaction and bump the generation (all or nothing)."""
        step = progress or _quiet
        total = len(changes.files) + len(changes.removed)
        with self._writing() as db:
            index = needs_new_index(db, self.cid, changes)
            if index:  # DDL on the shared table: one collection at a time (no deadlock)
                db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            db.execute("SET LOCAL lock_timeout = 0")
            write_changes(db, self.cid, changes, step, index=index)
            set_meta_rows(
                db,
                self.cid,
                {"tether_version": __version__, "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S")},
            )
        step("write", total, total)

    def set_meta(self, values: Mapping[str, str]) -> None:
        """Record values in the collection's meta (one transaction; the generation moves)."""
        with self._writing() as db:
            db.execute("SET LOCAL lock_timeout = 0")
            set_meta_rows(db, self.cid, {k: str(v) for k, v in values.items()})

    def set_gate_floors(self, floors: dict[str, float]) -> None:
        """Store the support gate's calibrated floor per retrieval method."""
        self.set_meta({f"gate_floor:{m}": repr(float(f)) for m, f in floors.items()})

    # ---- what the index is -----------------------------------------------------------------

    def meta_value(self, key: str) -> str | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT value FROM tether_meta WHERE collection_id = %s AND key = %s",
                (self.cid, key),
            ).fetchone()
        return row[0] if row else None

    def _count(self, sql: str) -> Any:
        row = self.db.execute(sql, {"cid": self.cid}).fetchone()
        return row[0] if row else 0

    def info(self) -> dict[str, object]:
        """What the collection holds and how it was built."""
        where = "WHERE collection_id = %(cid)s"
        with self._reading() as db:
            docs = self._count(f"SELECT count(*) FROM tether_documents {where}")
            chunks = self._count(f"SELECT count(*) FROM tether_chunks {where}")
            vectors = self._count(
                f"SELECT count(*) FROM tether_chunks {where} AND embedding IS NOT NULL"
            )

            def grouped(column: str) -> dict[str, int]:
                return dict(
                    db.execute(
                        f"SELECT {column}, count(*) FROM tether_documents {where} GROUP BY 1",
                        {"cid": self.cid},
                    ).fetchall()
                )

            by = {c: grouped(c) for c in ("access", "language", "format")}
            flagged = self._count(
                "SELECT count(*) FROM (SELECT DISTINCT c.doc_id, c.version FROM"
                " tether_instructions i JOIN tether_chunks c USING (collection_id, chunk_id)"
                " WHERE i.collection_id = %(cid)s) x"
            )
            spans = self._count(f"SELECT count(*) FROM tether_instructions {where}")
            size = self._count(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                " WHERE c.relname LIKE 'tether\\_%%' AND c.relkind = 'r'"
            )
            meta = dict(
                db.execute(f"SELECT key, value FROM tether_meta {where}", {"cid": self.cid})
            )
        return {
            "path": self.location,
            "size_bytes": int(size or 0),  # the tables of every collection in the database
            "documents": docs,
            "chunks": chunks,
            "vectors": vectors,
            "by_access": by["access"],
            "by_language": by["language"],
            "by_format": by["format"],
            "documents_with_instructions": flagged,
            "instruction_spans": spans,
            **meta,
        }

    def file_states(self) -> dict[str, FileState]:
        """What the collection recorded of each source file at the last sync."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT source, fingerprint, size, mtime_ns, doc_id, version FROM tether_files"
                " WHERE collection_id = %s",
                (self.cid,),
            ).fetchall()
        return {r[0]: FileState(*r) for r in rows}

    def vector_hashes(self) -> dict[str, str]:
        """{chunk_id: text hash} of every stored chunk vector."""
        with self._reading() as db:
            return dict(
                db.execute(
                    "SELECT chunk_id, vector_hash FROM tether_chunks WHERE collection_id = %s"
                    " AND embedding IS NOT NULL",
                    (self.cid,),
                ).fetchall()
            )

    def sentence_vector_hashes(self) -> dict[str, str | None]:
        """{chunk_id: text hash of its sentence vectors, or None} for every chunk."""
        with self._reading() as db:
            return dict(
                db.execute(
                    "SELECT c.chunk_id, s.text_hash FROM tether_chunks c LEFT JOIN"
                    " tether_sentence_embeddings s ON s.collection_id = c.collection_id"
                    " AND s.chunk_id = c.chunk_id AND s.n = 0 WHERE c.collection_id = %s",
                    (self.cid,),
                ).fetchall()
            )

    # ---- reading ---------------------------------------------------------------------------

    def _meta_map(self) -> dict[tuple[str, str], DocMeta]:
        if self._cache.metas is None:
            rows = self.db.execute(
                f"SELECT {META_COLS} FROM tether_documents WHERE collection_id = %s", (self.cid,)
            ).fetchall()
            self._cache.metas = {(r[0], r[1]): row_meta(r) for r in rows}
        return self._cache.metas

    def documents(self) -> list[DocumentInfo]:
        with self._reading() as db:
            counts = {
                (d, v): n
                for d, v, n in db.execute(
                    "SELECT doc_id, version, count(*) FROM tether_chunks WHERE collection_id = %s"
                    " GROUP BY doc_id, version",
                    (self.cid,),
                )
            }
            hashes = {
                (d, v): h
                for d, v, h in db.execute(
                    "SELECT doc_id, version, content_hash FROM tether_documents"
                    " WHERE collection_id = %s",
                    (self.cid,),
                )
            }
            metas = self._meta_map()
            spans = self._instruction_spans()
        return document_infos(metas, counts, hashes, spans)

    def _instruction_spans(self) -> dict[tuple[str, str], list[InstructionSpan]]:
        return spans_by_document(
            self.db.execute(
                'SELECT i.chunk_id, c.doc_id, c.version, i.start, i."end", c.text FROM'
                " tether_instructions i JOIN tether_chunks c USING (collection_id, chunk_id)"
                " WHERE i.collection_id = %s ORDER BY c.doc_id, c.version, c.ordinal, i.start",
                (self.cid,),
            )
        )

    def versions(self, doc_id: str) -> list[DocMeta]:
        with self._reading():
            metas = self._meta_map()
        return [
            metas[k]
            for k in sorted(metas, key=lambda k: (k[0], version_key(k[1])))
            if k[0] == doc_id
        ]

    def document_text(self, doc_id: str, version: str) -> str:
        with self._reading() as db:
            row = db.execute(
                "SELECT text FROM tether_documents WHERE collection_id = %s AND doc_id = %s"
                " AND version = %s",
                (self.cid, doc_id, version),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no document {doc_id!r} version {version!r} in the index")
        return str(row[0])

    def _chunk(self, row: Sequence[Any]) -> Chunk:
        cid, doc_id, version, ordinal, path, anchor, page, start, end, lead, text, anchors = row
        return Chunk(
            chunk_id=cid,
            meta=self._meta_map()[(doc_id, version)],
            text=text,
            heading_path=tuple(path),
            start=start,
            end=end,
            ordinal=ordinal,
            anchor=anchor,
            page=page,
            lead=lead,
            anchors=tuple(anchors),
        )

    def get(self, chunk_id: str) -> Chunk | None:
        return self.get_many([chunk_id]).get(chunk_id)

    def get_many(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        with self._reading() as db:
            rows = db.execute(
                f"SELECT {CHUNK_COLS} FROM tether_chunks c WHERE c.collection_id = %s"
                " AND c.chunk_id = ANY(%s)",
                (self.cid, ids),
            ).fetchall()
            return {r[0]: self._chunk(r) for r in rows}

    def chunks(self, doc_id: str | None = None, version: str | None = None) -> list[Chunk]:
        """Chunks of one document (all versions unless `version`), or of the whole collection."""
        sql = f"SELECT {CHUNK_COLS} FROM tether_chunks c WHERE c.collection_id = %s"
        args: list[Any] = [self.cid]
        if doc_id is not None:
            sql += " AND c.doc_id = %s"
            args.append(doc_id)
            if version is not None:
                sql += " AND c.version = %s"
                args.append(version)
        with self._reading() as db:
            rows = db.execute(sql + " ORDER BY c.doc_id, c.version, c.ordinal", args).fetchall()
            return [self._chunk(r) for r in rows]

    # ---- filters and lexical search ------------------------------------------------------

    def allowed_ids(self, filters: Filters) -> set[str]:
        """IDs of every chunk the filters let through."""
        where, args = filter_sql(filters, self.cid)
        with self._reading() as db:
            return {
                r[0]
                for r in db.execute(f"SELECT c.chunk_id FROM tether_chunks c WHERE {where}", args)
            }

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]:
        """BM25 over heading, text and codes among what the filters allow; best first."""
        with self._reading():
            ranked = self.lexical_ranking(query, k, filters)
            chunks = self.get_many(cid for cid, _ in ranked)
        return bm25_hits(ranked, chunks)

    def lexical_ranking(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        """The ranking of `search_lexical` as (chunk_id, score) pairs."""
        phrases = query_phrases(query)
        if not phrases or k <= 0:
            return []
        where, args = filter_sql(filters, self.cid)
        args |= {"cid": self.cid, "k": k}
        sql = bm25_sql(phrases, where, args, public=filters.public)
        with self._reading() as db:
            return [(c, float(s)) for c, s in db.execute(sql, args)]

    def count_lexical(self, query: str, filters: Filters) -> int:
        """How many chunks the filters allow match `query` lexically (a count only)."""
        phrases = query_phrases(query)
        if not phrases:
            return 0
        where, args = filter_sql(filters, self.cid)
        args["cid"] = self.cid
        with self._reading():
            return int(self._count_with(count_sql(phrases, where, args), args))

    def _count_with(self, sql: str, args: dict[str, Any]) -> int:
        row = self.db.execute(sql, args).fetchone()
        return int(row[0]) if row else 0

    # ---- vectors and dense search ---------------------------------------------------------

    def has_vectors(self) -> bool:
        with self._reading() as db:
            return (
                db.execute(
                    "SELECT 1 FROM tether_chunks WHERE collection_id = %s AND embedding IS NOT NULL"
                    " LIMIT 1",
                    (self.cid,),
                ).fetchone()
                is not None
            )

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """Every stored vector as (chunk IDs, float32 matrix), cached for this generation."""
        with self._reading() as db:
            if self._cache.vectors is None:
                rows = db.execute(
                    "SELECT chunk_id, embedding FROM tether_chunks WHERE collection_id = %s"
                    " AND embedding IS NOT NULL ORDER BY seq",
                    (self.cid,),
                ).fetchall()
                dim = int(self.meta_value("embedder_dim") or 0)
                matrix = (
                    np.stack([_array(r[1]) for r in rows])
                    if rows
                    else np.zeros((0, dim), dtype=np.float32)
                )
                self._cache.vectors = ([r[0] for r in rows], matrix)
            return self._cache.vectors

    def vector(self, chunk_id: str) -> np.ndarray | None:
        return self.vectors_of((chunk_id,)).get(chunk_id)

    def vectors_of(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]:
        ids = list(dict.fromkeys(chunk_ids))
        with self._reading() as db:
            rows = db.execute(
                "SELECT chunk_id, embedding FROM tether_chunks WHERE collection_id = %s"
                " AND chunk_id = ANY(%s) AND embedding IS NOT NULL",
                (self.cid, ids),
            ).fetchall()
        return {c: _array(v) for c, v in rows}

    def _vector_count(self) -> int:
        if self._cache.count is None:
            self._cache.count = int(
                self._count(
                    "SELECT count(*) FROM tether_chunks WHERE collection_id = %(cid)s"
                    " AND embedding IS NOT NULL"
                )
            )
        return self._cache.count

    def search_dense(self, vector: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        """The top k (chunk_id, cosine) among the chunks the filters let through; best first."""
        if k <= 0:
            return []
        from pgvector import Vector

        where, args = filter_sql(filters, self.cid)
        args |= {"q": Vector(np.asarray(vector, np.float32).reshape(-1)), "k": k}
        with self._reading() as db:
            dim = self._hnsw_dim()
            if dim is not None and self._use_ann(k):
                db.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(EF_SEARCH, k))}")
                db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                kind = HNSW_KIND
                distance = f"c.embedding::{kind}({dim}) <=> %(q)s::{kind}({dim})"
                sql = (
                    f"WITH nn AS MATERIALIZED (SELECT c.chunk_id, c.seq, {distance} AS d"
                    f" FROM tether_chunks c WHERE {where} AND {hnsw_predicate(self.cid, dim)}"
                    " ORDER BY d LIMIT %(k)s)"
                    " SELECT chunk_id, 1 - d FROM nn ORDER BY d, seq"
                )
            else:  # exact: `+ 0` keeps the planner off the HNSW index
                sql = (
                    "SELECT c.chunk_id, 1 - ((c.embedding <=> %(q)s) + 0) AS s FROM tether_chunks c"
                    f" WHERE {where} AND c.embedding IS NOT NULL ORDER BY s DESC, c.seq LIMIT %(k)s"
                )
            return [(c, float(s)) for c, s in db.execute(sql, args)]

    def _hnsw_dim(self) -> int | None:
        row = self.db.execute(
            "SELECT hnsw_dim FROM tether_collections WHERE id = %s", (self.cid,)
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def _use_ann(self, k: int) -> bool:
        """The HNSW index serves a search when asked to (or above the threshold) and k is
        well below the number of vectors (else the exact scan is as cheap), as in SQLite."""
        if self.ann == "none" or self._vector_count() <= 4 * k:
            return False
        return self.ann == "hnsw" or self._vector_count() > self.ann_threshold

    def sentence_vectors(
        self, chunk_ids: Iterable[str]
    ) -> dict[str, tuple[list[tuple[int, int]], np.ndarray]]:
        """Sentence vectors of the given chunks: {chunk_id: (spans, float32 matrix)}."""
        ids = list(dict.fromkeys(chunk_ids))
        found: dict[str, tuple[list[tuple[int, int]], list[bytes]]] = {}
        with self._reading() as db:
            for cid, start, end, blob in db.execute(
                'SELECT chunk_id, start, "end", vector FROM tether_sentence_embeddings'
                " WHERE collection_id = %s AND chunk_id = ANY(%s) ORDER BY chunk_id, n",
                (self.cid, ids),
            ):
                spans, blobs = found.setdefault(cid, ([], []))
                spans.append((start, end))
                blobs.append(bytes(blob))
        return {
            cid: (spans, np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs]))
            for cid, (spans, blobs) in found.items()
        }


def query_phrases(query: str) -> list[Phrase]:
    """The phrases BM25 scores for `query`, tokenised as FTS5 tokenises its MATCH phrases:
    each part's phrase over every column, and a code's collapsed form in the codes column."""
    texts: list[tuple[str, bool]] = []
    for part in query_parts(query):
        texts.append((part.phrase, False))
        if part.code:
            texts.append((part.code, True))
    if not texts:
        return []
    tokens = tokenize([[t] for t, _ in texts])
    return [
        (tuple(term for term, _ in row[0]), codes_only)
        for row, (_, codes_only) in zip(tokens, texts, strict=True)
        if row[0]
    ]


def _array(value: Any) -> np.ndarray:
    """A stored vector (pgvector's `Vector`, or an array) as float32."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def _quiet(phase: str, done: int, total: int) -> None:
    """The progress callback when none is given."""
