"""Dense search: cosine over L2-normalised vectors, optionally through a faiss HNSW graph.

`DenseIndex(matrix)` searches the rows of one float32 matrix: brute force, or above
`ANN_THRESHOLD` rows (or with `ann="hnsw"`) a faiss HNSW graph, searched with oversampling;
the rows a mask refuses are dropped, and when fewer than k survive the allowed rows are
searched by brute force, so filters always apply before ranking. The graph is cached in a
file beside the index (`hnsw_cache_path`: `<index>.hnsw-<signature of the row IDs>`), written
atomically; writing one removes the stale graphs of the same index.

What it cannot do: the HNSW graph is approximate (recall measured in bench/retrieval/bench_retrieval.py)
and takes minutes to build for hundreds of thousands of vectors; it holds every row, staff
ones too, so which allowed rows a search through it misses can move with the rows the mask
refuses (brute force, below `ANN_THRESHOLD` rows, depends on the allowed rows only); the matrix is held in memory
whole; it knows row numbers, not chunk IDs (the store maps them).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from tether.errors import TetherError

ANN_THRESHOLD = 50_000  # vectors above which ann="auto" builds an HNSW index
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
# chosen to meet the recall@10 and latency goals at 200,000 e5-like vectors:
# bench/retrieval/bench_retrieval.py, bench/results/retrieval.md
HNSW_EF_SEARCH = 384


class DenseIndex:
    """Cosine search over L2-normalised rows, optionally through a faiss HNSW graph.

    `ann`: "auto" (HNSW above `threshold` rows), "hnsw" (always), "none" (brute force only).
    `search(q, k, mask)` returns (row indices, cosines) best first, only rows where `mask` is
    true (all rows when `mask` is None).
    """

    def __init__(
        self,
        matrix: np.ndarray,
        *,
        ann: str = "auto",
        threshold: int = ANN_THRESHOLD,
        cache_path: Path | None = None,
        ef_search: int = HNSW_EF_SEARCH,
    ) -> None:
        if ann not in ("auto", "hnsw", "none"):
            raise TetherError(f"unknown ann {ann!r}: auto, hnsw or none")
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.n = self.matrix.shape[0]
        self.use_ann = ann == "hnsw" or (ann == "auto" and self.n > threshold and _has_faiss())
        self.hnsw: Any = None
        self.build_seconds = 0.0
        self.ef_search = ef_search
        self.cache_path = cache_path
        self.last_path = "brute"  # how the last search ran: brute | hnsw | hnsw+brute

    def _ensure_hnsw(self) -> Any:
        if self.hnsw is not None:
            return self.hnsw
        try:
            import faiss
        except ImportError as exc:  # pragma: no cover - faiss is a dependency
            raise TetherError(f"the ANN index needs faiss-cpu ({exc})") from exc

        began = time.perf_counter()
        index: Any = None  # a faiss.IndexHNSWFlat (its stubs do not name `hnsw`)
        if self.cache_path is not None and self.cache_path.exists():
            try:
                index = faiss.read_index(str(self.cache_path))
                if index.ntotal != self.n:
                    index = None
            except RuntimeError:
                index = None
        if index is None:
            index = faiss.IndexHNSWFlat(self.matrix.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            index.add(self.matrix)
            if self.cache_path is not None:
                _write_faiss(index, self.cache_path)
        index.hnsw.efSearch = self.ef_search
        self.hnsw = index
        self.build_seconds = time.perf_counter() - began
        return index

    def search(
        self, query: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        allowed = self.n if mask is None else int(mask.sum())
        k = min(k, allowed)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.use_ann and allowed > 4 * k and allowed / max(self.n, 1) >= 0.02:
            index = self._ensure_hnsw()
            fraction = allowed / self.n
            want = min(self.n, max(4 * k, math.ceil(2 * k / fraction), 64))
            index.hnsw.efSearch = max(self.ef_search, want)
            scores, rows = index.search(q[None, :], want)
            rows, scores = rows[0], scores[0]
            keep = rows >= 0
            if mask is not None:
                keep &= mask[np.maximum(rows, 0)]
            rows, scores = rows[keep], scores[keep]
            if len(rows) >= k:
                self.last_path = "hnsw"
                return rows[:k].astype(np.int64), scores[:k].astype(np.float32)
            self.last_path = "hnsw+brute"
        else:
            self.last_path = "brute"
        if mask is None:
            scores = self.matrix @ q
            rows = np.arange(self.n)
        else:
            rows = np.flatnonzero(mask)
            scores = self.matrix[rows] @ q
        top = _top_k(scores, k)
        return rows[top].astype(np.int64), scores[top].astype(np.float32)

    def brute(self, query: np.ndarray, k: int) -> np.ndarray:
        """Exact top-k row indices (for measuring the ANN recall)."""
        scores = self.matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
        return _top_k(scores, k)


def _has_faiss() -> bool:
    return importlib.util.find_spec("faiss") is not None


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first (ties by index)."""
    if k >= len(scores):
        return np.lexsort((np.arange(len(scores)), -scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((part, -scores[part]))]


def _write_faiss(index: Any, path: Path) -> None:
    import faiss

    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        faiss.write_index(index, str(tmp))
        os.replace(tmp, path)
        for stale in path.parent.glob(path.name.split(".hnsw-")[0] + ".hnsw-*"):
            if stale != path and not stale.name.endswith(".tmp"):
                stale.unlink(missing_ok=True)
    except (OSError, RuntimeError):
        tmp.unlink(missing_ok=True)


def hnsw_cache_path(index_path: Path, ids: list[str]) -> Path | None:
    """Where the HNSW graph of these row IDs is cached, beside the index file."""
    if not ids:
        return None
    sig = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
    return index_path.with_name(f"{index_path.name}.hnsw-{sig}")


def remove_hnsw_caches(index_path: Path) -> None:
    """Remove every cached HNSW graph of an index (its vectors changed)."""
    for path in index_path.parent.glob(f"{index_path.name}.hnsw-*"):
        path.unlink(missing_ok=True)
