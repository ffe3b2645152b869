"""What the Store contract tests share: the backends (`FACTORIES`: SQLite, SQLite with the
HNSW graph forced, PostgreSQL on the server of `TETHER_TEST_PG_URL` (skipped with the reason
when none is set, failed in CI), also with its HNSW index forced), the fixtures that open a
fresh store per test, the small Markdown collection the tests ingest, and `BagOfWords`, a tiny
deterministic embedder behind the `Embedder` protocol (the feature under test is the store,
not the model)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pg_support import drop_collection, fresh_collection

from tether.ingest.sync import sync
from tether.protocols import Store
from tether.stores import open_store
from tether.stores.sqlite import SqliteStore
from tether.types import Filters

STAFF = Filters(as_of=None, audience="staff")
PUBLIC = Filters(as_of=None, audience="public")


# ---- the backends -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Factory:
    """How a backend is reached: a fresh location per test, and a store object on it."""

    name: str
    location: Callable[[Path], str]
    open: Callable[[str], Store]
    fingerprint: Callable[[str], str] = lambda loc: hashlib.sha256(
        Path(loc).read_bytes()
    ).hexdigest()  # changes when anything is written at the location
    drop: Callable[[str], None] | None = None  # removes what a test left at the location


def _sqlite_hnsw(location: str) -> Store:
    pytest.importorskip("faiss")
    return SqliteStore(location, ann="hnsw")


def _postgres_hnsw(location: str) -> Store:
    from tether.stores.postgres import PostgresStore

    return PostgresStore(location, ann="hnsw")


def _pg_fingerprint(location: str) -> str:
    """What a write to the collection would change: its generation and the row versions
    (xmin) of its rows."""
    import psycopg

    from tether.stores.postgres_db import parse_url

    conninfo, name, _ = parse_url(location)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT c.generation, (SELECT string_agg(x.xmin::text, ',' ORDER BY x.chunk_id)"
            " FROM tether_chunks x WHERE x.collection_id = c.id),"
            " (SELECT string_agg(m.xmin::text || m.key, ',' ORDER BY m.key) FROM tether_meta m"
            " WHERE m.collection_id = c.id) FROM tether_collections c WHERE c.name = %s",
            (name,),
        ).fetchone()
    return repr(row)


def _pg_location(tmp: Path) -> str:
    return fresh_collection()


FACTORIES = [
    Factory(
        "sqlite",
        lambda tmp: str(tmp / "index.sqlite"),
        lambda loc: open_store(loc, must_exist=False),
    ),
    Factory("sqlite-hnsw", lambda tmp: str(tmp / "index.sqlite"), _sqlite_hnsw),
    Factory(
        "postgres",
        _pg_location,
        lambda loc: open_store(loc, must_exist=False),
        _pg_fingerprint,
        drop_collection,
    ),
    Factory("postgres-hnsw", _pg_location, _postgres_hnsw, _pg_fingerprint, drop_collection),
]


@pytest.fixture(params=FACTORIES, ids=[f.name for f in FACTORIES])
def factory(request: pytest.FixtureRequest) -> Factory:
    return request.param


@pytest.fixture
def location(factory: Factory, tmp_path: Path):
    found = factory.location(tmp_path)
    yield found
    if factory.drop is not None:
        factory.drop(found)


@pytest.fixture
def store(factory: Factory, location: str):
    opened = factory.open(location)
    yield opened
    opened.close()


class BagOfWords:
    """Deterministic embedder: hashed word counts, L2-normalised."""

    name = "bag-of-words"
    version = "1"
    dim = 64
    sentence_vectors = True

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % (self.dim - 1)] += 1
            out[i, -1] += 0.01  # never the zero vector
            out[i] /= np.linalg.norm(out[i])
        return out

    embed_queries = embed_passages


EMBEDDER = BagOfWords()


def md(doc_id: str, body: str, version: str = "1", **meta: str) -> str:
    fields = {"doc_id": doc_id, "version": repr(version), "title": doc_id.title(), **meta}
    front = "\n".join(f"{k}: {v}" for k, v in fields.items())
    return f"---\n{front}\n---\n\n{body.strip()}\n"


def write_collection(folder: Path) -> Path:
    """Staff documents that match "zebra stripes savanna" best, public ones that match a
    little, an unlabelled one, two versions of a policy in force at different dates (with an
    owner and a review date each), filler."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(5):
        (folder / f"staff-{i}.md").write_text(
            md(f"staff-{i}", f"# Zebra {i}\n\nZebra stripes savanna zebra stripes savanna {i}.")
        )
    for i in range(4):
        (folder / f"public-{i}.md").write_text(
            md(f"public-{i}", f"# Animals {i}\n\nA zebra visits the farm {i}.", access="public")
        )
    (folder / "unlabelled.md").write_text(
        "# Night shifts\n\nUnlabelled roster notes about zebra night shifts.\n"
    )
    for version, start, end in (("1", "2025-01-01", "2025-12-31"), ("2", "2026-01-01", None)):
        dates = {"effective_from": start} | ({"effective_to": end} if end else {})
        dates |= {"owner": "Refunds Desk", "review_by": "2025-06-30" if end else "2026-06-30"}
        days = 30 if version == "1" else 45
        (folder / f"policy-v{version}.md").write_text(
            md(
                "policy",
                f"# Refunds\n\nThe refund window is {days} days.",
                version=version,
                access="public",
                **dates,
            )
        )
    for i in range(30):
        (folder / f"filler-{i:02d}.md").write_text(
            md(
                f"filler-{i:02d}",
                f"# Topic {i}\n\nKettle lantern pebble {i} meadow.",
                access="public",
            )
        )
    return folder


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    return write_collection(tmp_path / "docs")


def ingest(store: Store, folder: Path, **kwargs: Any):
    report = sync(store, folder, embedder=EMBEDDER, sentences=True, **kwargs)
    assert report.committed and not report.problems, report.problems
    return report


def query_vector(text: str) -> np.ndarray:
    return EMBEDDER.embed_queries([text])[0]


def state(store: Store) -> dict[str, Any]:
    """Everything a reader can see through the protocol."""
    ids, matrix = store.vectors()
    return {
        "generation": store.generation(),
        "documents": [
            (d.meta, d.chunks, d.content_hash, d.instructions) for d in store.documents()
        ],
        "chunks": [(c.chunk_id, c.text, c.meta, c.heading_path) for c in store.chunks()],
        "files": store.file_states(),
        "vector_hashes": store.vector_hashes(),
        "sentence_hashes": store.sentence_vector_hashes(),
        "vectors": (ids, matrix.tobytes()),
        "lexical": store.lexical_ranking("zebra refund kettle", 20, STAFF),
        "dense": store.search_dense(query_vector("zebra refund kettle"), 20, STAFF),
        "meta": {k: store.meta_value(k) for k in ("chunker", "embedder", "embedder_dim")},
    }
