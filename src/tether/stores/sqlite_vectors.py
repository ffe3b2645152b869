"""Vectors and dense search of the SQLite Store (`tether.stores.sqlite.SqliteStore`): the
vector matrix of a generation, the dense index over it (`stores.dense.DenseIndex`: brute force
or a faiss HNSW graph cached beside the file), `search_dense` with the filters' mask applied
before the top k, and sentence vectors (the `SENTENCES_KEPT` cache).

What it cannot do: it writes nothing; the matrix is read whole into memory once a generation;
a chunk without a vector is never found by dense search.
"""

from collections.abc import Iterable

import numpy as np

from tether.stores.dense import DenseIndex, hnsw_cache_path
from tether.stores.sqlite_base import Sentences, SqliteBase
from tether.stores.sqlite_open import meta_int
from tether.stores.sqlite_sql import batches, remember
from tether.types import Filters


class SqliteVectors(SqliteBase):
    """Stored vectors, dense search and sentence vectors (see the module docstring)."""

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
