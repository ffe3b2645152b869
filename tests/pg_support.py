"""The PostgreSQL server the tests use: `TETHER_TEST_PG_URL` (scripts/ci/postgres.sh prints
one). Without it the PostgreSQL tests skip with the reason, except in CI (`CI=true`), where
they fail: there the server must run."""

from __future__ import annotations

import os
import uuid

import pytest

VARIABLE = "TETHER_TEST_PG_URL"


def pg_url() -> str:
    """The test server's URL; skips the test (fails it in CI) when none is set."""
    url = os.environ.get(VARIABLE, "").strip()
    if not url:
        reason = f"{VARIABLE} is not set (start a server with scripts/ci/postgres.sh start)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; in CI the PostgreSQL tests must run", pytrace=False)
        pytest.skip(reason)
    return url


def fresh_collection() -> str:
    """The URL of a collection no other test uses."""
    url = pg_url()
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}collection=test-{uuid.uuid4().hex[:12]}"


def drop_collection(location: str) -> None:
    """Remove a test's collection (and its rows) from the test database."""
    import psycopg

    from tether.stores.postgres_db import parse_url

    conninfo, name, _ = parse_url(location)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('tether_collections')").fetchone() == (None,):
            return
        row = conn.execute("SELECT id FROM tether_collections WHERE name = %s", (name,)).fetchone()
        if row is None:
            return
        with conn.transaction():
            for (index,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE %s",
                (f"tether\\_chunks\\_hnsw\\_{row[0]}\\_%",),
            ).fetchall():
                conn.execute(f"DROP INDEX IF EXISTS {index}")
            for table in ("tether_sentence_embeddings", "tether_instructions", "tether_postings",
                          "tether_chunks"):  # fmt: skip
                conn.execute(f"DELETE FROM {table} WHERE collection_id = %s", (row[0],))
            conn.execute("DELETE FROM tether_collections WHERE id = %s", (row[0],))


class StoredVectors:
    """An embedder that serves the passage vectors another store already holds (chunk and
    sentence vectors, found by the text they were computed from), so a second store of the
    same collection gets the same vectors without running the model again."""

    def __init__(self, store, like) -> None:
        import numpy as np

        from tether.text import embed_text, sentence_text

        self.name, self.version, self.dim = like.name, like.version, like.dim
        self.like = like
        self.known: dict[str, np.ndarray] = {}
        chunks = store.chunks()
        vectors = store.vectors_of(c.chunk_id for c in chunks)
        sentences = store.sentence_vectors(c.chunk_id for c in chunks)
        for c in chunks:
            if c.chunk_id in vectors:
                self.known[embed_text(c)] = vectors[c.chunk_id]
            spans, matrix = sentences.get(c.chunk_id, ([], None))
            for (a, b), row in zip(spans, matrix if matrix is not None else [], strict=True):
                self.known[sentence_text(c, a, b)] = row

    def embed_passages(self, texts):
        import numpy as np

        missing = [t for t in texts if t not in self.known]
        if missing:
            self.known.update(zip(missing, self.like.embed_passages(missing), strict=True))
        return np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, self.dim))

    def embed_queries(self, texts):
        return self.like.embed_queries(texts)
