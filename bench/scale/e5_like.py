"""Synthetic vectors that sit where real e5 vectors sit, for the benches that need many.

`fit(real)` fits a Gaussian (mean and covariance) to real e5 vectors; `draw(g, n)` draws n
unit vectors from it, in blocks (memory stays flat), so they share e5's narrow cosine band
and its principal directions; `reference()` gives the real vectors to fit and the real
question vectors to query with: the bundled demo collection ingested into a temporary
SQLite store with the default embedder (chunk and sentence vectors, as `tether ingest`
writes them), and the bundled questions (plus Larkfield's when ../shared has them)
embedded as queries. Used by bench/retrieval/bench_retrieval.py (the faiss graph) and
bench/scale/pg_scale.py (the PostgreSQL store).

What it cannot do: a Gaussian has no clusters and no heavy tails, so the neighbours of a
query are spread as e5's are on average, not as they are in one real corpus.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LARKFIELD = ROOT.parent / "shared" / "benchmarks" / "larkfield"


@dataclass(frozen=True)
class Gaussian:
    mean: np.ndarray  # (dim,)
    basis: np.ndarray  # (dim, dim): the covariance's eigenvectors, as columns
    scale: np.ndarray  # (dim,): the square roots of its eigenvalues

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])


def fit(real: np.ndarray) -> Gaussian:
    """The Gaussian (mean and covariance) of the rows of `real`."""
    real = np.asarray(real, dtype=np.float64)
    mu = real.mean(axis=0)
    eig, vec = np.linalg.eigh(np.cov((real - mu).T))
    scale = np.sqrt(np.clip(eig, 0, None))
    return Gaussian(mu.astype(np.float32), vec.astype(np.float32), scale.astype(np.float32))


def draw(g: Gaussian, n: int, seed: int = 0, block: int = 50_000) -> np.ndarray:
    """n unit vectors (float32) drawn from `g`."""
    rng = np.random.default_rng(seed)
    matrix = np.empty((n, g.dim), dtype=np.float32)
    for i in range(0, n, block):
        z = rng.standard_normal((min(block, n - i), g.dim)).astype(np.float32)
        rows = g.mean + (z * g.scale) @ g.basis.T
        matrix[i : i + len(rows)] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return matrix


def store_vectors(store) -> np.ndarray:
    """Every chunk and sentence vector of a SQLite store, as one float32 matrix."""
    blobs = store.db.execute(
        "SELECT vector FROM embeddings UNION ALL SELECT vector FROM sentence_embeddings"
    ).fetchall()
    dim = int(store.meta_value("embedder_dim") or 384)
    return np.frombuffer(b"".join(r[0] for r in blobs), dtype=np.float32).reshape(-1, dim)


def reference(embedder=None, cache: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(real passage vectors, real question vectors) from the default embedder: see above;
    kept in `cache` (an .npz) when given, so a second run embeds nothing."""
    if cache is not None and cache.is_file():
        with np.load(cache) as saved:
            return saved["real"], saved["questions"]
    from tether.app import shared_models
    from tether.evaluation.questions import demo_collection, load_questions
    from tether.ingest.sync import sync
    from tether.stores.sqlite import SqliteStore

    embedder = embedder or shared_models().embedder()
    questions = [q.question for q in load_questions()]
    held = LARKFIELD / "questions" / "questions.jsonl"
    if held.is_file():
        questions += [q.question for q in load_questions(held)]
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "demo.sqlite")
        sync(store, demo_collection(), embedder=embedder, sentences=True)
        real = store_vectors(store).copy()
        store.close()
    asked = np.asarray(embedder.embed_queries(questions), dtype=np.float32)
    if cache is not None:
        np.savez(cache, real=real, questions=asked)
    return real, asked
