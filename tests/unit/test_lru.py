"""The small least-recently-used map (`tether.lru`) the caches share: what is kept, what is
dropped, what is counted, and threads sharing one."""

from __future__ import annotations

import threading

from tether.lru import LRU


def test_the_least_recently_used_value_goes_first() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)  # b goes
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3
    assert lru.get("b") is None
    assert lru.counts() == {"hits": 3, "misses": 1, "entries": 2}
    assert "a" in lru and lru.counts()["hits"] == 3  # `in` neither marks nor counts


def test_put_replaces_and_marks_and_size_zero_keeps_nothing() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.put("a", 10) == 10  # replaced, and now the most recent
    lru.put("c", 3)
    assert lru.get("a") == 10 and "b" not in lru
    lru.clear()
    assert len(lru) == 0 and lru.counts()["hits"] == 1
    none: LRU[str, int] = LRU(0)
    assert none.put("a", 1) == 1 and len(none) == 0 and none.get("a") is None


def test_threads_share_one_map_within_its_size() -> None:
    lru: LRU[int, int] = LRU(50)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(2000):
                key = (i * 7 + offset) % 120
                found = lru.get(key)
                assert found is None or found == key * 2
                lru.put(key, key * 2)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(lru) == 50
    counts = lru.counts()
    assert counts["hits"] + counts["misses"] == 8000
