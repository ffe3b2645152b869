"""A small least-recently-used map, thread-safe: the caches of query vectors (the retriever's,
the process's `tether.embeddings.cache`), of filter masks and of what the sentence reranker
derives from a chunk's text (`tether.retrieval.rerank`) are all one of these.

`LRU(size)` keeps the `size` most recently used values: `get` marks a value used (and counts
a hit or a miss), `put` stores one and drops the least recently used beyond `size` (a size
of 0 keeps nothing), `in` asks without marking. Every method takes one lock, so threads may
share one map; a value computed outside the lock by two threads at once is stored twice (the
last one stays), which is harmless for values that are a function of their key.

What it cannot do: it bounds the number of entries, not their bytes (a caller sizes it from
its values' typical size); entries leave only by disuse or `clear`, so a key must change
when what its value was derived from changes (no expiry by time, no invalidation by event).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """The `size` most recently used values by key (module docstring); thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = max(0, int(size))
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        """The value kept for `key`, marked most recently used (a hit), or None (a miss; so a
        value of None cannot be told from a missing one: keep none)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: K, value: V) -> V:
        """Keep `value` for `key` as the most recently used, dropping the least recently used
        beyond `size`; returns `value`."""
        if self.size == 0:
            return value
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        """Forget every value (the counts stay)."""
        with self._lock:
            self._items.clear()

    def counts(self) -> dict[str, int]:
        """Hits, misses and entries so far."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._items)}
