"""The core of the SQLite Store (`tether.stores.sqlite.SqliteStore`): opening an index file,
creating or migrating its schema, the generation counter, read and write transactions, the
in-memory caches of one generation, the meta table and the access filters.

Reads see one committed generation (`_reading` reads the `generation` counter first and drops
the caches when it moved; `_fresh` does the same for reads served from memory with one
`PRAGMA data_version`); `_writing` is one write transaction that bumps the generation and is
rolled back whole on any error. The store's reads and searches (`sqlite_reads`,
`sqlite_vectors`) and its writes (`sqlite`) are built on these.

What it cannot do: it serves one writer at a time (see `tether.stores.sqlite`); it holds no
query of its own beyond the meta table and the filters; its caches belong to one object (open
one object per thread).
"""

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tether.errors import TetherError
from tether.lru import LRU
from tether.stores.dense import ANN_THRESHOLD, DenseIndex
from tether.stores.sqlite_open import LOCK_TIMEOUT, clear_errors, connect, meta_int
from tether.stores.sqlite_sql import SCHEMA, filter_sql, remember
from tether.stores.sqlite_write import check_upgrade, migrate, rollback, set_meta_rows
from tether.types import Chunk, DocMeta, Filters

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


class SqliteBase:
    """The connection, schema, generations, transactions, caches and filters of one
    SQLite index file (the base of `SqliteStore`; see the module docstring)."""

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

    def meta_value(self, key: str) -> str | None:
        with self._reading():
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

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
