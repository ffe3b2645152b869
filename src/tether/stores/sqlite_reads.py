"""Reads and lexical search of the SQLite Store (`tether.stores.sqlite.SqliteStore`): what the
index is (`info`, file states, vector hashes), documents and their versions and texts, chunks
(`get`, `get_many` with the `CHUNKS_KEPT` cache, `chunks`), and BM25 search
(`search_lexical`, `lexical_ranking`, `count_lexical`) over the FTS5 tables, the filters
applied before ranking.

What it cannot do: it writes nothing; lexical search has no French stemming (see
`tether.stores.sqlite`); every read runs inside the base's read transaction, so it sees one
committed generation and no more.
"""

import json
from collections.abc import Callable, Container, Iterable, Sequence

from tether.errors import NotFoundError
from tether.stores.rows import bm25_hits, document_infos, spans_by_document
from tether.stores.sqlite_base import SqliteBase
from tether.stores.sqlite_sql import META_COLUMNS, batches, fts_query, row_meta
from tether.types import Chunk, DocMeta, DocumentInfo, FileState, Filters, Hit, InstructionSpan


class SqliteReads(SqliteBase):
    """What the index is, its documents and chunks, and lexical search (see the module
    docstring)."""

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

        The FTS table is ranked alone (a join per match costs several times as much), over a
        candidate window
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
