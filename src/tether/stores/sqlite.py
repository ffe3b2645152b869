"""The embedded default Store: one SQLite file holding documents, chunks, an FTS5 table for
BM25 and, when the index was built with an embedder, one vector per chunk (and per sentence).

- reads see one committed generation: each read runs in one read transaction and first reads
  the `generation` counter of the meta table; when it moved (a write by this object, another
  object or another process) the in-memory caches (document metadata, the vector matrix, the
  dense index, filter masks, the `CHUNKS_KEPT` chunks `get_many` and the sentence vectors
  `sentence_vectors` read last) are dropped and rebuilt on demand (and after a write,
  committed or rolled back);
- writes: `apply(changes)` writes a `ChangeSet` (planned by `tether.ingest.sync`) in ONE
  transaction and bumps the generation, so a crash, a kill or an exception mid-apply leaves
  the index as it was; `set_meta` records values such as the gate floors the same way;
- schema: an index of an older schema is migrated when opened to be written (`create=True`,
  as ingest does) and, opened to be read, served as it is from `READS_FROM` on (today none
  older: readers need schema 4's anchors; schemas 4 and 5 read with no review dates, the
  column schema 6 added) and refused with what to run when older; a newer one is refused;
- instructions: `documents()` lists with each document the spans addressed to AI assistants
  that ingest recorded (`InstructionSpan`); `info()` counts them;
- search: `search_lexical`/`lexical_ranking` rank with BM25 over heading, text and codes;
  `search_dense` ranks by cosine through `stores.dense.DenseIndex` (brute force, or a faiss
  HNSW graph cached beside the file); both apply the filters (as_of, audience) BEFORE ranking.

The lexical tokenizer is FTS5 `porter unicode61 remove_diacritics 2` (accented and unaccented
French match; English stems), plus a column of codes written without separators so a code such
as PW-2200-07 is found whether typed with or without its dashes; in queries a code becomes an
exact phrase.

Opening (`stores.sqlite_open`): read-only (`writable=False`, SQLite `mode=ro`) for readers, so
a read never creates or changes anything; a file that is not a tether index is refused; SQLite
errors reach the caller as one-line TetherErrors and a failed write is rolled back.

What it cannot do: it serves one writer at a time (a second concurrent apply waits up to the
lock timeout, 30 s by default, then stops with "another ingest is writing this index"), and a
commit can hold readers up to the same timeout; lexical search has no French stemming (plural folding is left to the porter stemmer,
which is English); filters are on effective dates and access only.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tether._version import __version__
from tether.errors import NotFoundError, TetherError
from tether.lru import LRU
from tether.stores.dense import ANN_THRESHOLD, DenseIndex, hnsw_cache_path, remove_hnsw_caches
from tether.stores.rows import bm25_hits, document_infos, spans_by_document
from tether.stores.sqlite_open import LOCK_TIMEOUT, clear_errors, connect, meta_int
from tether.stores.sqlite_sql import (
    META_COLUMNS,
    SCHEMA,
    batches,
    filter_sql,
    fts_query,
    remember,
    row_meta,
)
from tether.stores.sqlite_write import (
    check_upgrade,
    migrate,
    rollback,
    set_meta_rows,
    write_changes,
)
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

SCHEMA_VERSION = 6  # 2: the instructions table; 3: the audit table; 4: every anchor of a chunk;
# 5: the public lexical table (BM25 statistics of public chunks only); 6: documents.review_by
READS_FROM = 4  # the oldest schema a reader serves as it is (a reader needs the anchors column)


CHUNKS_KEPT = 2048  # chunks `get_many` keeps per store object and generation (about 1-3 KB each)
# chunks whose sentence vectors `sentence_vectors` keeps (1.5 KB a sentence of 384 dimensions)
SENTENCES_KEPT = 1024
Sentences = tuple[list[tuple[int, int]], np.ndarray]  # spans in the chunk's text, vectors


def _kept_chunks() -> LRU[str, Chunk]:
    return LRU(CHUNKS_KEPT)


def _kept_sentences() -> LRU[str, Sentences]:
    return LRU(SENTENCES_KEPT)


@dataclass
class _Caches:
    """What one store object keeps in memory for one generation of the index."""

    metas: dict[tuple[str, str], DocMeta] | None = None
    vectors: tuple[list[str], np.ndarray] | None = None
    rows: dict[str, int] | None = None
    dense: DenseIndex | None = None
    allowed: dict[tuple[Any, str], set[str]] = field(default_factory=dict)
    masks: dict[tuple[Any, str], np.ndarray] = field(default_factory=dict)
    public_lexicon: bool | None = None  # whether the public lexical table exists (schema 5)
    review_by: bool | None = None  # whether documents has the review_by column (schema 6)
    has_vectors: bool | None = None  # whether any chunk has a vector
    chunks: LRU[str, Chunk] = field(default_factory=_kept_chunks)  # by ID, read by get_many
    sentences: LRU[str, Sentences] = field(default_factory=_kept_sentences)  # read-only arrays
    no_sentences: LRU[str, bool] = field(default_factory=lambda: LRU(SENTENCES_KEPT))  # none


class SqliteStore:
    """The embedded default Store: one SQLite file (see the module docstring).

    `ann`/`ann_threshold` choose how `search_dense` ranks (see `stores.dense.DenseIndex`).
    The caches belong to this object; open one object per thread (a SQLite connection is not
    shared between threads).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        create: bool = True,
        writable: bool = True,
        ann: str = "auto",
        ann_threshold: int = ANN_THRESHOLD,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.writable = writable or create
        self.ann = ann
        self.ann_threshold = ann_threshold
        self._depth = 0  # nesting of `_reading`
        self._generation = -1
        self._cache = _Caches()
        self.db = connect(
            self.path, schema=SCHEMA, writable=writable, create=create, timeout=lock_timeout
        )
        with self._errors():
            if self.writable:
                self._create_schema()
            self.db.execute("PRAGMA foreign_keys = ON")
            version = self.meta_value("schema_version")
        with self._errors():
            self._generation = self._stored_generation()
            self._data_version = self.db.execute("PRAGMA data_version").fetchone()[0]
        if version is not None and version != str(SCHEMA_VERSION):
            readable = version.isdigit() and READS_FROM <= int(version) < SCHEMA_VERSION
            if self.writable or not readable:
                self._upgrade(version)

    def _upgrade(self, version: str) -> None:
        """An index of another schema: an older one opened to be written is migrated in one
        transaction; a newer one, or an older one opened to read, is refused."""
        try:
            old = int(version)
            check_upgrade(self.path, old, SCHEMA_VERSION, writer=self.writable)
        except (TetherError, ValueError) as exc:
            self.db.close()
            if isinstance(exc, TetherError):
                raise
            raise TetherError(
                f"{self.path} is damaged (schema version {version!r}): re-ingest with --rebuild"
            ) from exc
        with self._errors():
            self.db.executescript(SCHEMA)  # the tables this schema adds (IF NOT EXISTS)
            with self._writing() as db:
                migrate(db, old)
                set_meta_rows(db, {"schema_version": str(SCHEMA_VERSION)})

    def _create_schema(self) -> None:
        """Create tether's tables (none exist yet, or they all do) and record the schema
        version of a new index, in one transaction; an index that has one is left alone."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        if "meta" in tables and self.meta_value("schema_version") is not None:
            return
        try:
            self.db.executescript(
                f"BEGIN IMMEDIATE; {SCHEMA}; INSERT OR IGNORE INTO meta (key, value)"
                f" VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
            )
        except BaseException:
            rollback(self.db)
            raise

    def _errors(self) -> AbstractContextManager[None]:
        """SQLite errors inside become one clear TetherError (see `sqlite_open.explain`)."""
        return clear_errors(self.path, writing=self.writable)

    def close(self) -> None:
        self.db.close()

    # ---- generations and read transactions -------------------------------------------------

    def _has_public_lexicon(self) -> bool:
        """Whether the index has the public lexical table (schema 5; checked once per
        generation, so a reader sees a writer's migration)."""
        if self._cache.public_lexicon is None:
            row = self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts_public'"
            ).fetchone()
            self._cache.public_lexicon = row is not None
        return self._cache.public_lexicon

    def _has_review_by(self) -> bool:
        """Whether the documents table has the review_by column (schema 6; an older index
        read as it is has none: its documents read with no review date)."""
        if self._cache.review_by is None:
            columns = {r[1] for r in self.db.execute("PRAGMA table_info(documents)")}
            self._cache.review_by = "review_by" in columns
        return self._cache.review_by

    def _stored_generation(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return meta_int(row[0], "generation", self.path) if row else 0

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction (nested calls share it); the caches are dropped first when
        the generation moved since they were filled. SQLite errors become TetherErrors."""
        outer = self._depth == 0 and not self.db.in_transaction
        if not outer:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        with self._errors():
            self.db.execute("BEGIN")
            self._depth += 1
            try:
                generation = self._stored_generation()
                if generation != self._generation:
                    self._generation = generation
                    self._cache = _Caches()
                yield
            except BaseException:
                rollback(self.db)
                raise
            finally:
                self._depth -= 1
            if self.db.in_transaction:
                self.db.execute("COMMIT")

    def _fresh(self) -> None:
        """For reads served from memory: drop the caches when another connection committed
        since the last look. One `PRAGMA data_version` (it moves only on other connections'
        commits; this connection's own writes reset the caches in `_writing`), no transaction."""
        if self._depth or self.db.in_transaction:
            return
        with self._errors():
            version = self.db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._data_version:
                self._data_version = version
                generation = self._stored_generation()
                if generation != self._generation:
                    self._generation = generation
                    self._cache = _Caches()

    def generation(self) -> int:
        """The index's write counter: it moves with every committed apply or set_meta."""
        self._fresh()
        return self._generation

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state of the index (one read transaction; see
        `StoreReader.snapshot`)."""
        with self._reading():
            yield

    # ---- writing ----------------------------------------------------------------------------

    def apply(self, changes: ChangeSet, progress: Progress | None = None) -> None:
        """Write a change set in one transaction and bump the generation (all or nothing)."""
        step = progress or _quiet
        total = len(changes.files) + len(changes.removed)
        with self._writing() as db:
            write_changes(db, changes, step)
            set_meta_rows(
                db,
                {
                    "schema_version": str(SCHEMA_VERSION),
                    "tether_version": __version__,
                    "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                },
            )
        if changes.rebuild or changes.files or changes.removed or changes.vectors:
            remove_hnsw_caches(self.path)  # graphs of vectors that may have changed
        step("write", total, total)

    def set_meta(self, values: Mapping[str, str]) -> None:
        """Record values in the index meta (one transaction; the generation moves)."""
        with self._writing() as db:
            set_meta_rows(db, {k: str(v) for k, v in values.items()})

    def set_gate_floors(self, floors: dict[str, float]) -> None:
        """Store the support gate's calibrated floor per retrieval method."""
        self.set_meta({f"gate_floor:{m}": repr(float(f)) for m, f in floors.items()})

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction that bumps the generation; on any error it is rolled back
        (the first error is the one raised) and a SQLite error becomes a TetherError."""
        if not self.writable:
            raise TetherError(f"{self.path} was opened for reading: nothing can be written")
        db = self.db
        with self._errors():
            db.execute("BEGIN IMMEDIATE")
            try:
                generation = self._stored_generation() + 1
                yield db
                set_meta_rows(db, {"generation": str(generation)})
                db.execute("COMMIT")
            except BaseException:
                rollback(db)
                self._cache = _Caches()  # nothing read inside the rolled-back write stays
                raise
        self._generation = generation
        self._cache = _Caches()

    # ---- what the index is -------------------------------------------------------------------

    def meta_value(self, key: str) -> str | None:
        with self._reading():
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def info(self) -> dict[str, object]:
        """What the index holds and how it was built."""
        with self._reading():
            one = self.db.execute
            docs = one("SELECT COUNT(*) FROM documents").fetchone()[0]
            chunks = one("SELECT COUNT(*) FROM chunks").fetchone()[0]
            vectors = one("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            by_access = dict(one("SELECT access, COUNT(*) FROM documents GROUP BY access"))
            by_lang = dict(one("SELECT language, COUNT(*) FROM documents GROUP BY language"))
            by_format = dict(one("SELECT format, COUNT(*) FROM documents GROUP BY format"))
            flagged = one(
                "SELECT COUNT(*) FROM (SELECT DISTINCT c.doc_id, c.version FROM instructions"
                " JOIN chunks c USING (chunk_id))"
            ).fetchone()[0]
            spans = one("SELECT COUNT(*) FROM instructions").fetchone()[0]
            meta = dict(one("SELECT key, value FROM meta").fetchall())
        return {
            "path": str(self.path),
            "size_bytes": self.path.stat().st_size if self.path.exists() else 0,
            "documents": docs,
            "chunks": chunks,
            "vectors": vectors,
            "by_access": by_access,
            "by_language": by_lang,
            "by_format": by_format,
            "documents_with_instructions": flagged,
            "instruction_spans": spans,
            **meta,
        }

    def file_states(self) -> dict[str, FileState]:
        """What the index recorded of each source file at the last sync."""
        with self._reading():
            rows = self.db.execute(
                "SELECT source, fingerprint, size, mtime_ns, doc_id, version FROM files"
            ).fetchall()
        return {r[0]: FileState(*r) for r in rows}

    def vector_hashes(self) -> dict[str, str]:
        """{chunk_id: text hash} of every stored chunk vector."""
        with self._reading():
            return dict(self.db.execute("SELECT chunk_id, text_hash FROM embeddings").fetchall())

    def sentence_vector_hashes(self) -> dict[str, str | None]:
        """{chunk_id: text hash of its sentence vectors, or None when it has none} for every
        chunk in the index."""
        with self._reading():
            return dict(
                self.db.execute(
                    "SELECT c.chunk_id, s.text_hash FROM chunks c LEFT JOIN sentence_embeddings s"
                    " ON s.chunk_id = c.chunk_id AND s.n = 0"
                ).fetchall()
            )

    # ---- reading ----------------------------------------------------------------------------

    def _meta_map(self) -> dict[tuple[str, str], DocMeta]:
        if self._cache.metas is None:
            columns = META_COLUMNS.format(
                review_by="review_by" if self._has_review_by() else "NULL"
            )
            rows = self.db.execute(f"SELECT {columns} FROM documents").fetchall()
            self._cache.metas = {(r[0], r[1]): row_meta(r) for r in rows}
        return self._cache.metas

    def documents(self) -> list[DocumentInfo]:
        with self._reading():
            counts = {
                (d, v): n
                for d, v, n in self.db.execute(
                    "SELECT doc_id, version, COUNT(*) FROM chunks GROUP BY doc_id, version"
                )
            }
            hashes = {
                (d, v): h
                for d, v, h in self.db.execute(
                    "SELECT doc_id, version, content_hash FROM documents"
                )
            }
            metas = self._meta_map()
            spans = self._instruction_spans()
        return document_infos(metas, counts, hashes, spans)

    def _instruction_spans(self) -> dict[tuple[str, str], list[InstructionSpan]]:
        """The instruction spans ingest recorded, by document version, in reading order."""
        return spans_by_document(
            self.db.execute(
                'SELECT i.chunk_id, c.doc_id, c.version, i.start, i."end", c.text FROM'
                " instructions i JOIN chunks c USING (chunk_id)"
                " ORDER BY c.doc_id, c.version, c.ordinal, i.start"
            )
        )

    def versions(self, doc_id: str) -> list[DocMeta]:
        with self._reading():
            return [m for (d, _), m in sorted(self._meta_map().items()) if d == doc_id]

    def document_text(self, doc_id: str, version: str) -> str:
        with self._reading():
            row = self.db.execute(
                "SELECT text FROM documents WHERE doc_id = ? AND version = ?", (doc_id, version)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no document {doc_id!r} version {version!r} in the index")
        return row[0]

    def _chunk(self, row: Sequence) -> Chunk:
        cid, doc_id, version, ordinal, path, anchor, page, start, end, lead, text, anchors = row
        return Chunk(
            chunk_id=cid,
            meta=self._meta_map()[(doc_id, version)],
            text=text,
            heading_path=tuple(json.loads(path)),
            start=start,
            end=end,
            ordinal=ordinal,
            anchor=anchor,
            page=page,
            lead=lead,
            anchors=tuple(json.loads(anchors)),
        )

    _CHUNK_COLS = (
        "c.chunk_id, c.doc_id, c.version, c.ordinal, c.heading_path, c.anchor, c.page, c.start,"
        ' c."end", c.lead, c.text, c.anchors'
    )

    def get(self, chunk_id: str) -> Chunk | None:
        with self._reading():
            row = self.db.execute(
                f"SELECT {self._CHUNK_COLS} FROM chunks c WHERE c.chunk_id = ?", (chunk_id,)
            ).fetchone()
            return self._chunk(row) if row else None

    def get_many(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        """The chunks of these IDs that exist (in the order asked), in one read: those read
        since the generation last moved from memory (`CHUNKS_KEPT`), the others from the file."""
        with self._reading():
            kept = self._cache.chunks
            found: dict[str, Chunk | None] = {cid: kept.get(cid) for cid in chunk_ids}
            missing = [cid for cid, c in found.items() if c is None]
            for part in batches(missing):
                marks = ",".join("?" * len(part))
                for row in self.db.execute(
                    f"SELECT {self._CHUNK_COLS} FROM chunks c WHERE c.chunk_id IN ({marks})", part
                ):
                    found[row[0]] = kept.put(row[0], self._chunk(row))
        return {cid: c for cid, c in found.items() if c is not None}

    def chunks(self, doc_id: str | None = None, version: str | None = None) -> list[Chunk]:
        """Chunks of one document (all versions unless `version`), or of the whole index."""
        sql = f"SELECT {self._CHUNK_COLS} FROM chunks c"
        args: list[str] = []
        if doc_id is not None:
            sql += " WHERE c.doc_id = ?"
            args.append(doc_id)
            if version is not None:
                sql += " AND c.version = ?"
                args.append(version)
        sql += " ORDER BY c.doc_id, c.version, c.ordinal"
        with self._reading():
            return [self._chunk(r) for r in self.db.execute(sql, args)]

    # ---- filters ----------------------------------------------------------------------------

    def allowed_ids(self, filters: Filters) -> set[str]:
        """IDs of every chunk the filters let through (a copy: the caller may change it)."""
        with self._reading():
            return set(self._allowed(filters))

    def _allowed(self, filters: Filters) -> set[str]:
        """The allowed IDs, cached for this generation (callers must not change the set)."""
        key = (filters.as_of, filters.audience)
        found = self._cache.allowed.get(key)
        if found is None:
            where, args = filter_sql(filters)
            found = {
                r[0]
                for r in self.db.execute(
                    "SELECT c.chunk_id FROM chunks c JOIN documents d USING (doc_id, version)"
                    f" WHERE {where}",
                    args,
                )
            }
            remember(self._cache.allowed, key, found)
        return found

    def _mask(self, filters: Filters) -> np.ndarray:
        """The rows of the vector matrix the filters let through, cached for this generation."""
        key = (filters.as_of, filters.audience)
        mask = self._cache.masks.get(key)
        if mask is None:
            ids, _ = self.vectors()
            position = self._vector_rows()
            mask = np.zeros(len(ids), dtype=bool)
            for cid in self._allowed(filters):
                row = position.get(cid)
                if row is not None:
                    mask[row] = True
            remember(self._cache.masks, key, mask)
        return mask

    # ---- lexical search ---------------------------------------------------------------------

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]:
        """BM25 over heading, text and codes, keeping only what the filters allow; best first."""
        chunks: dict[str, Chunk] = {}

        def allowed(ids: list[str]) -> set[str]:
            chunks.update(self.get_many(i for i in ids if i not in chunks))
            return {i for i in ids if filters.allows(chunks[i].meta)}

        with self._reading():
            ranked = self._bm25(query, k, allowed, filters.public)
        return bm25_hits(ranked, chunks)

    def lexical_ranking(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        """The ranking of `search_lexical` as (chunk_id, score) pairs, without building
        chunks (for fusing rankings: hybrid search)."""
        with self._reading():
            allowed = self._allowed(filters)
            return self._bm25(query, k, lambda ids: allowed, filters.public)

    def count_lexical(self, query: str, filters: Filters) -> int:
        """How many chunks the filters allow match `query` lexically: a count only, so a
        caller can say why a filtered search found nothing without showing what matched."""
        match = fts_query(query)
        if not match:
            return 0
        with self._reading():
            allowed = self._allowed(filters)
            rows = self.db.execute(
                "SELECT chunk_id FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
            )
            return sum(1 for (cid,) in rows if cid in allowed)

    # ---- vectors and dense search ---------------------------------------------------------

    def has_vectors(self) -> bool:
        """Whether any chunk has a vector (read once a generation)."""
        self._fresh()
        if self._cache.has_vectors is None:
            with self._reading():
                row = self.db.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone()
                self._cache.has_vectors = row is not None
        return self._cache.has_vectors

    def vectors(self) -> tuple[list[str], np.ndarray]:
        """Every stored vector as (chunk IDs, float32 matrix), cached for this generation."""
        with self._reading():
            if self._cache.vectors is None:
                rows = self.db.execute(
                    "SELECT chunk_id, vector FROM embeddings ORDER BY rowid"
                ).fetchall()
                dim = meta_int(self.meta_value("embedder_dim") or 0, "embedder_dim", self.path)
                matrix = (
                    np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                        len(rows), dim
                    )
                    if rows
                    else np.zeros((0, dim), dtype=np.float32)
                )
                self._cache.vectors = ([r[0] for r in rows], matrix)
            return self._cache.vectors

    def _vector_rows(self) -> dict[str, int]:
        """The row of each chunk ID in the matrix of `vectors()` (cached with it)."""
        if self._cache.rows is None:
            ids, _ = self.vectors()
            self._cache.rows = {c: i for i, c in enumerate(ids)}
        return self._cache.rows

    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The stored vector of one chunk, or None when it has none."""
        return self.vectors_of((chunk_id,)).get(chunk_id)

    def vectors_of(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks, in one read (chunks without one are absent)."""
        self._fresh()
        if self._cache.vectors is None or self._cache.rows is None:
            with self._reading():
                self._vector_rows()
        rows, vectors = self._cache.rows, self._cache.vectors
        assert rows is not None and vectors is not None
        matrix = vectors[1]
        return {c: matrix[r] for c in chunk_ids if (r := rows.get(c)) is not None}

    def dense_index(self) -> DenseIndex:
        """The dense index over `vectors()` (cached for this generation)."""
        with self._reading():
            if self._cache.dense is None:
                ids, matrix = self.vectors()
                self._cache.dense = DenseIndex(
                    matrix,
                    ann=self.ann,
                    threshold=self.ann_threshold,
                    cache_path=hnsw_cache_path(self.path, ids),
                )
            return self._cache.dense

    def search_dense(self, vector: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        """The top k (chunk_id, cosine) to `vector` among the chunks the filters let through
        (the rows they refuse are masked before the top k is taken); best first."""
        with self._reading():
            ids, _ = self.vectors()
            rows, scores = self.dense_index().search(vector, k, self._mask(filters))
            return [(ids[r], float(s)) for r, s in zip(rows, scores, strict=True)]

    def sentence_vectors(self, chunk_ids: Iterable[str]) -> dict[str, Sentences]:
        """Sentence vectors of the given chunks: {chunk_id: (spans in the chunk's text,
        float32 matrix, read-only)}; chunks without sentence vectors are absent. Those read
        since the generation last moved come from memory (`SENTENCES_KEPT` chunks)."""
        with self._reading():
            kept, none = self._cache.sentences, self._cache.no_sentences
            out: dict[str, Sentences] = {}
            ids = []
            for cid in dict.fromkeys(chunk_ids):
                held = kept.get(cid)
                if held is not None:
                    out[cid] = held
                elif cid not in none:
                    ids.append(cid)
            if not ids:
                return out
            read = self._read_sentences(ids)
            for cid in ids:
                if cid in read:
                    out[cid] = kept.put(cid, read[cid])
                else:
                    none.put(cid, True)
        return out

    def _read_sentences(self, ids: list[str]) -> dict[str, Sentences]:
        found: dict[str, tuple[list[tuple[int, int]], list[bytes]]] = {}
        with self._reading():
            dim = meta_int(self.meta_value("embedder_dim") or 0, "embedder_dim", self.path)
            for part in batches(ids):
                marks = ",".join("?" * len(part))
                for cid, start, end, blob in self.db.execute(
                    'SELECT chunk_id, start, "end", vector FROM sentence_embeddings'
                    f" WHERE chunk_id IN ({marks}) ORDER BY chunk_id, n",
                    part,
                ):
                    spans, blobs = found.setdefault(cid, ([], []))
                    spans.append((start, end))
                    blobs.append(blob)
        return {
            cid: (spans, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dim))
            for cid, (spans, blobs) in found.items()
        }

    def _bm25(
        self,
        query: str,
        k: int,
        allowed: Callable[[list[str]], Container[str]],
        public: bool = True,
    ) -> list[tuple[str, float]]:
        """The top k (chunk_id, BM25 score) among the IDs `allowed` lets through; for a
        `public` caller from the public lexical table, whose statistics (chunk count, mean
        length, document frequencies) no staff passage enters (an index of schema 4, read
        without being migrated, has none: the whole table serves then).

        The FTS table is ranked alone (a join per match costs 4x), over a candidate window
        that grows until k allowed chunks are found or the matches run out."""
        match = fts_query(query)
        if not match:
            return []
        table = "chunks_fts_public" if public and self._has_public_lexicon() else "chunks_fts"
        sql = (
            f"SELECT chunk_id, bm25({table}, 2.0, 1.0, 4.0) AS s FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY s LIMIT ?"
        )
        window = max(50, 10 * k)
        while True:
            rows = self.db.execute(sql, (match, window)).fetchall()
            ok = allowed([cid for cid, _ in rows])
            kept = [(cid, -float(s)) for cid, s in rows if cid in ok]
            if len(kept) >= k or len(rows) < window:
                return kept[:k]
            window *= 4


def _quiet(phase: str, done: int, total: int) -> None:
    """The progress callback when none is given."""
