"""Query embedding in a server: the batcher (`tether.embeddings.batching`), the cache of
query vectors (`tether.embeddings.cache`), and a request's deadline (`tether.deadlines`)
stopping the embedding and the retriever's stages.

The fake embedder below gives each text a vector of its own (from a hash of the text) and
can hold its call until the test lets it go, so that the other callers are seen waiting in
line before a batch runs: what is tested is which texts went in which call and what each
caller got back, never how long anything took.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from fakes import FakeSearchable, chunk

from tether import deadlines
from tether.deadlines import Deadline
from tether.embeddings.batching import BatchingEmbedder
from tether.embeddings.cache import CachedQueryEmbedder, QueryVectorCache, embedder_identity
from tether.errors import DeadlineError, ProviderError
from tether.types import Filters, Hit

DIM = 8


def vector_of(text: str) -> np.ndarray:
    """The fake's vector for `text`: unit length, a function of the text only."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class FakeEmbedder:
    """An `Embedder` whose query vectors are `vector_of(text)`; it records each call's texts,
    and with `hold` set its calls wait until `release()` (`started` says one is waiting)."""

    def __init__(self, name: str = "fake", *, hold: bool = False) -> None:
        self.name = name
        self.version = "1"
        self.dim = DIM
        self.calls: list[list[str]] = []
        self.fail: Exception | None = None  # raised by the next call
        self.on_call: Callable[[], None] | None = None
        self._gate = threading.Event()
        if not hold:
            self._gate.set()
        self.started = threading.Event()
        self._lock = threading.Lock()

    def release(self) -> None:
        self._gate.set()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(list(texts))
        self.started.set()
        assert self._gate.wait(30), "the test never released the fake embedder"
        if self.on_call is not None:
            self.on_call()
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        return np.stack([vector_of(t) for t in texts]) if texts else np.zeros((0, DIM))


def until(condition: Callable[[], bool]) -> None:
    """Wait (no timing asserted: a long safety limit) until `condition()` holds."""
    done = threading.Event()
    for _ in range(3000):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("the condition never held")


Started = tuple[list[threading.Thread], list[Any]]


def in_threads(batcher: BatchingEmbedder, calls: list[list[str]]) -> Started:
    """Each of `calls` embedded in a thread of its own, started now (`joined` gives their
    results: an array or the exception, in order)."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = batcher.embed_queries(calls[i])
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    return threads, results


def joined(started: Started) -> list[Any]:
    threads, results = started
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    return results


def queued(batcher: BatchingEmbedder) -> int:
    with batcher._lock:
        return len(batcher._line)


# ---- the batcher ------------------------------------------------------------------------------


def test_concurrent_callers_get_their_own_vectors_equal_to_unbatched_ones() -> None:
    fake = FakeEmbedder(hold=True)
    batcher = BatchingEmbedder(fake, window_s=0, max_batch=32)
    first = in_threads(batcher, [["a lone question"]])
    until(fake.started.is_set)  # the first caller leads, its call held
    asks = [[f"question {i}"] for i in range(6)] + [["two texts", "in one call"], ["question 1"]]
    rest = in_threads(batcher, asks)
    until(lambda: queued(batcher) == 9)  # everyone else waits in line
    fake.release()
    lone = joined(first)[0]
    results = joined(rest)
    assert fake.calls[0] == ["a lone question"]
    assert len(fake.calls) == 2  # the eight callers in one batch
    assert sorted(fake.calls[1]) == sorted({t for a in asks for t in a})  # "question 1" once
    np.testing.assert_array_equal(lone, vector_of("a lone question")[None])
    for texts, got in zip(asks, results, strict=True):
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        np.testing.assert_array_equal(got, FakeEmbedder().embed_queries(texts))
    dup_a, dup_b = results[1], results[-1]  # "question 1" asked twice: equal, not shared
    np.testing.assert_array_equal(dup_a, dup_b)
    dup_a[0, 0] = 99.0
    assert dup_b[0, 0] != 99.0
    counts = batcher.counts()
    assert counts["batches"] == 2 and counts["texts"] == 10 and counts["largest"] == 9
    assert counts["distinct"] == 9


def test_a_batch_holds_at_most_max_batch_texts() -> None:
    fake = FakeEmbedder(hold=True)
    batcher = BatchingEmbedder(fake, window_s=0, max_batch=2)
    first = in_threads(batcher, [["first"]])
    until(fake.started.is_set)
    rest = in_threads(batcher, [[f"q{i}"] for i in range(5)])
    until(lambda: queued(batcher) == 5)
    fake.release()
    joined(first)
    assert all(isinstance(r, np.ndarray) for r in joined(rest))
    assert [len(c) for c in fake.calls] == [1, 2, 2, 1]


def test_a_lone_caller_does_not_wait_for_the_window() -> None:
    fake = FakeEmbedder()
    batcher = BatchingEmbedder(fake, window_s=600, max_batch=8)  # waited, the test would hang
    for text in ("one", "then another", "and a third"):
        batcher.embed_queries([text])
    assert fake.calls == [["one"], ["then another"], ["and a third"]]


def test_after_a_batch_of_several_the_window_gathers_the_next_callers() -> None:
    fake = FakeEmbedder()
    batcher = BatchingEmbedder(fake, window_s=600, max_batch=2)
    batcher.embed_queries(["a", "b"])  # a batch of two: callers were seen lately
    first = in_threads(batcher, [["c"]])
    until(lambda: queued(batcher) == 1)  # it waits in the window (600 s) for company
    second = in_threads(batcher, [["d"]])  # the batch is full: it runs at once
    joined(first)
    joined(second)
    assert fake.calls == [["a", "b"], ["c", "d"]]


def test_an_error_reaches_every_caller_of_the_failed_batch_only() -> None:
    fake = FakeEmbedder(hold=True)
    batcher = BatchingEmbedder(fake, window_s=0, max_batch=32)
    first = in_threads(batcher, [["first"]])
    until(fake.started.is_set)
    failing = in_threads(batcher, [[f"q{i}"] for i in range(4)])
    until(lambda: queued(batcher) == 4)
    error = ProviderError("the embeddings endpoint answered HTTP 500")

    def fail_the_second_call() -> None:
        if len(fake.calls) == 2:
            fake.fail = error

    fake.on_call = fail_the_second_call
    fake.release()
    assert isinstance(joined(first)[0], np.ndarray)  # the first batch was not the failed one
    assert all(r is error for r in joined(failing))
    again = batcher.embed_queries(["after the error"])  # the line still works
    np.testing.assert_array_equal(again[0], vector_of("after the error"))


def test_an_interrupt_in_the_leader_frees_the_other_callers() -> None:
    class Interrupt(BaseException):
        """Stands for KeyboardInterrupt (which pytest would take for its own)."""

    fake = FakeEmbedder(hold=True)
    batcher = BatchingEmbedder(fake, window_s=0, max_batch=32)
    leader = in_threads(batcher, [["first"]])
    until(fake.started.is_set)
    others = in_threads(batcher, [["q1"], ["q2"]])
    until(lambda: queued(batcher) == 2)

    def interrupt_the_second_call() -> None:
        if len(fake.calls) == 2:
            fake.fail = Interrupt()  # type: ignore[assignment]

    fake.on_call = interrupt_the_second_call
    fake.release()
    joined(leader)
    got = joined(others)
    # whoever led the second batch is interrupted; the other caller gets a plain error
    assert sorted(type(r).__name__ for r in got) == ["Interrupt", "RuntimeError"]
    assert isinstance(batcher.embed_queries(["after"]), np.ndarray)  # the line still works


def test_a_bad_shape_from_the_embedder_is_an_error_for_its_callers() -> None:
    class Short(FakeEmbedder):
        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts) - 1, DIM))

    with pytest.raises(ValueError, match="shape"):
        BatchingEmbedder(Short(), window_s=0).embed_queries(["a", "b"])


def test_the_batcher_leaves_no_thread_behind() -> None:
    before = set(threading.enumerate())
    fake = FakeEmbedder()
    batcher = BatchingEmbedder(fake, window_s=0.001, max_batch=4)
    joined(in_threads(batcher, [[f"q{i}"] for i in range(12)]))
    fake.fail = ProviderError("down")
    with pytest.raises(ProviderError):
        batcher.embed_queries(["one more"])
    assert set(threading.enumerate()) == before  # the callers did the work; none is left
    assert not batcher._leading and queued(batcher) == 0


def test_other_attributes_and_passages_go_to_the_inner_embedder() -> None:
    fake = FakeEmbedder()
    fake.token_count = len  # type: ignore[attr-defined]
    batcher = BatchingEmbedder(fake)
    assert (batcher.name, batcher.version, batcher.dim) == ("fake", "1", DIM)
    assert batcher.token_count("four") == 4
    batcher.embed_passages(["a passage"])
    assert fake.calls == [["a passage"]]
    assert batcher.embed_queries([]).shape == (0, DIM)
    with pytest.raises(AttributeError):
        batcher.name = "other"


# ---- deadlines --------------------------------------------------------------------------------


def test_a_query_past_its_deadline_is_not_embedded() -> None:
    fake = FakeEmbedder()
    batcher = BatchingEmbedder(fake, window_s=0)
    late = Deadline()
    late.cancel()
    with deadlines.bound(late), pytest.raises(DeadlineError):
        batcher.embed_queries(["too late"])
    assert fake.calls == []


def test_a_waiting_caller_stops_at_its_deadline_and_its_text_is_dropped() -> None:
    fake = FakeEmbedder(hold=True)
    batcher = BatchingEmbedder(fake, window_s=0, max_batch=32)
    first = in_threads(batcher, [["first"]])
    until(fake.started.is_set)
    token = Deadline()
    outcome: list[BaseException | None] = []

    def waiting() -> None:
        with deadlines.bound(token):
            try:
                batcher.embed_queries(["given up on"])
                outcome.append(None)
            except DeadlineError as exc:
                outcome.append(exc)

    waiter = threading.Thread(target=waiting)
    waiter.start()
    others = in_threads(batcher, [["still wanted"]])
    until(lambda: queued(batcher) == 2)
    token.cancel()  # the server gave up on that request
    waiter.join(30)
    assert isinstance(outcome[0], DeadlineError)  # its thread is free before the batch ran
    assert queued(batcher) == 1
    fake.release()
    joined(first)
    assert isinstance(joined(others)[0], np.ndarray)
    assert fake.calls == [["first"], ["still wanted"]]  # "given up on" never embedded
    assert batcher.counts()["expired"] == 1


def test_a_deadline_is_bound_to_its_block_only() -> None:
    token = Deadline()
    token.cancel()
    assert deadlines.current() is None
    with deadlines.bound(token):
        assert deadlines.current() is token
        with pytest.raises(DeadlineError, match="cancelled at the reranker"):
            deadlines.check("the reranker")
    deadlines.check("anything")  # none bound: nothing happens
    past = Deadline(at=0.0)  # an instant long gone
    assert past.expired and past.remaining() == 0.0
    assert Deadline().remaining() is None and not Deadline().expired


class VectorStore(FakeSearchable):
    """The fake store with chunk vectors (`vector_of` each chunk's text), searched by cosine."""

    def has_vectors(self) -> bool:
        return True

    def search_dense(self, vector: np.ndarray, k: int, filters: Filters) -> list[tuple[str, float]]:
        scored = [
            (c.chunk_id, float(vector_of(c.text) @ vector))
            for c in self.chunks_held
            if filters.allows(c.meta)
        ]
        return sorted(scored, key=lambda s: (-s[1], s[0]))[:k]

    def vectors_of(self, chunk_ids: Any) -> dict[str, np.ndarray]:
        held = {c.chunk_id: c for c in self.chunks_held}
        return {cid: vector_of(held[cid].text) for cid in chunk_ids if cid in held}


class CountingReranker:
    """A reranker that keeps the order and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: str = "public"
    ) -> list[Hit]:
        self.calls += 1
        return list(hits)[:k]


def _retriever(embedder: Any) -> tuple[Any, CountingReranker]:
    from tether.retrieval.retriever import Retriever

    store = VectorStore([chunk(f"c{i}", f"parking rule number {i}") for i in range(6)])
    reranker = CountingReranker()
    return Retriever(store, embedder, reranker), reranker  # type: ignore[arg-type]


def test_a_search_past_its_deadline_stops_before_the_reranker() -> None:
    fake = FakeEmbedder()
    retriever, reranker = _retriever(BatchingEmbedder(fake, window_s=0))
    hits = retriever.search("parking rule", 3, Filters(), method="rerank")
    assert len(hits) == 3 and reranker.calls == 1  # without a deadline: to the end

    token = Deadline()
    fake.on_call = token.cancel  # the deadline passes while the query is embedded
    with deadlines.bound(token), pytest.raises(DeadlineError):
        retriever.search("where may I park", 3, Filters(), method="rerank")
    assert fake.calls[-1] == ["where may I park"]  # embedded (a stage already running ends)
    assert reranker.calls == 1  # but the reranker never ran for it


def test_a_search_cancelled_before_it_starts_embeds_nothing() -> None:
    fake = FakeEmbedder()
    retriever, reranker = _retriever(BatchingEmbedder(fake, window_s=0))
    token = Deadline()
    token.cancel()
    with deadlines.bound(token), pytest.raises(DeadlineError):
        retriever.search("where may I park", 3, Filters(), method="rerank")
    assert fake.calls == [] and reranker.calls == 0


# ---- the cache --------------------------------------------------------------------------------


def test_the_cache_embeds_a_text_once_and_counts_hits_and_misses() -> None:
    fake = FakeEmbedder()
    cached = CachedQueryEmbedder(fake, QueryVectorCache(8))
    first = cached.embed_queries(["a", "b", "a"])
    assert fake.calls == [["a", "b"]]  # one call, each missing text once
    np.testing.assert_array_equal(first, fake.embed_queries(["a", "b", "a"]))
    fake.calls.clear()
    again = cached.embed_queries(["b", "c"])
    assert fake.calls == [["c"]]
    np.testing.assert_array_equal(again, fake.embed_queries(["b", "c"]))
    again[0, 0] = 99.0  # the caller's own array: the cached vector is untouched
    assert cached.embed_queries(["b"])[0, 0] != 99.0
    assert cached.cache.counts() == {"hits": 2, "misses": 4, "entries": 3}


def test_the_cache_drops_the_least_recently_used_vector() -> None:
    fake = FakeEmbedder()
    cached = CachedQueryEmbedder(fake, QueryVectorCache(2))
    cached.embed_queries(["a"])
    cached.embed_queries(["b"])
    cached.embed_queries(["a"])  # a is now the most recent
    cached.embed_queries(["c"])  # b goes
    fake.calls.clear()
    cached.embed_queries(["a"])
    cached.embed_queries(["b"])
    assert fake.calls == [["b"]]
    assert len(cached.cache) == 2


def test_one_cache_keeps_two_embedders_vectors_apart() -> None:
    cache = QueryVectorCache()

    class Other(FakeEmbedder):
        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            return -super().embed_queries(texts)

    one = CachedQueryEmbedder(FakeEmbedder("e5"), cache)
    two = CachedQueryEmbedder(Other("e5"), cache)  # same name and version, another class
    three = CachedQueryEmbedder(FakeEmbedder("other-model"), cache)
    a = one.embed_queries(["same text"])
    b = two.embed_queries(["same text"])
    c = three.embed_queries(["same text"])
    np.testing.assert_array_equal(b, -a)
    assert cache.counts()["misses"] == 3 and len(cache) == 3
    np.testing.assert_array_equal(c, a)  # the fakes' vectors agree; the keys still differ
    assert embedder_identity(BatchingEmbedder(one.inner)) == embedder_identity(one.inner)


def test_the_cache_in_front_of_the_batcher_sends_only_misses_to_the_line() -> None:
    fake = FakeEmbedder()
    batcher = BatchingEmbedder(fake, window_s=0)
    cached = CachedQueryEmbedder(batcher, QueryVectorCache())
    assert cached.identity() == embedder_identity(fake)
    cached.embed_queries(["a", "b"])
    cached.embed_queries(["a", "b", "c"])
    assert fake.calls == [["a", "b"], ["c"]]
    assert batcher.counts()["texts"] == 3


def test_a_retriever_over_a_shared_cache_keeps_none_of_its_own() -> None:
    """Over the server's cached embedder every search looks its query up in the shared cache
    once (so /metrics counts each search), and the retriever's own cache stays empty."""
    fake = FakeEmbedder()
    cache = QueryVectorCache()
    retriever, _ = _retriever(CachedQueryEmbedder(fake, cache))
    for _ in range(3):
        retriever.search("parking rule", 3, Filters(), method="rerank")
    assert fake.calls == [["parking rule"]]  # embedded once, by the shared cache
    assert cache.counts() == {"hits": 2, "misses": 1, "entries": 1}  # one lookup a search
    assert len(retriever._query_vectors) == 0
    retriever.clear_query_cache()  # a timing that must include the embedding: the shared one
    assert len(cache) == 0


def test_a_retriever_over_a_plain_embedder_keeps_its_own_cache() -> None:
    fake = FakeEmbedder()
    retriever, _ = _retriever(fake)
    for _ in range(3):
        retriever.search("parking rule", 3, Filters(), method="rerank")
    assert fake.calls == [["parking rule"]]
    np.testing.assert_array_equal(retriever.query_vector("parking rule"), vector_of("parking rule"))
    assert fake.calls == [["parking rule"]]  # outside a search too
    retriever.clear_query_cache()
    retriever.query_vector("parking rule")
    assert fake.calls == [["parking rule"]] * 2


# ---- wiring: Models and the server's metrics ----------------------------------------------


def test_models_build_one_query_embedder_per_choice_and_count_it(monkeypatch) -> None:
    from tether.app import Models

    fake = FakeEmbedder()
    models = Models(query_cache=16, batch_window_s=0)
    monkeypatch.setattr(models, "embedder", lambda choice="auto": fake)
    queries = models.query_embedder("auto")
    assert models.query_embedder("auto") is queries
    queries.embed_queries(["a"])
    queries.embed_queries(["a"])
    counts = models.query_counts()
    assert counts["hits"] == 1 and counts["misses"] == 1 and counts["entries"] == 1
    assert counts["batches"] == 1 and counts["batched_texts"] == 1


def test_the_metrics_show_the_query_counts() -> None:
    pytest.importorskip("fastapi")
    from prometheus_client import generate_latest

    from tether.server.http import Metrics

    metrics = Metrics()
    counts = {"hits": 3, "misses": 2, "entries": 2, "batches": 2, "batched_texts": 2,
              "largest_batch": 1, "expired": 1}  # fmt: skip
    metrics.watch_queries(lambda: counts)
    text = generate_latest(metrics.registry).decode()
    assert 'tether_query_vector_cache_total{result="hit"} 3.0' in text
    assert 'tether_query_vector_cache_total{result="miss"} 2.0' in text
    assert "tether_query_vector_cache_entries 2.0" in text
    assert "tether_query_batches_total 2.0" in text
    assert "tether_query_expired_total 1.0" in text
