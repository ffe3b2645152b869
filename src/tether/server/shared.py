"""What the processes of `tether serve` share, and what each keeps alone.

A server over a PostgreSQL collection shares, through the store (`tether.protocols.SharedState`,
`tether.stores.postgres_shared`), with every other server on that collection, whether they
are workers of one `tether serve --workers N` or servers on several hosts:

- the rate limit per key (and per client address for anonymous callers) and the limit on
  failed authentications per client address: one token bucket per name in the store, so N
  servers allow what one allows (`Shared.limiter`, `Shared.failures`);
- key revocations (`tether keys revoke`): every server refuses a revoked key, as an unknown
  one (401), within `REVOKED_TTL_S` seconds (it reads the revoked digests at most that often);
- metrics (`SharedMetrics`): each server adds what its counters counted to the collection's
  totals in the store every `PUBLISH_EVERY_S` seconds, when it stops, and before it answers
  /metrics; /metrics shows the totals, so every server shows the same counts (the other
  servers' at most `PUBLISH_EVERY_S` old). The totals only grow (what a server added stays
  when it stops), as a Prometheus counter should: a sum over the live servers' own counts
  would fall each time one stopped, which Prometheus reads as a counter reset, so rate()
  over it would jump. A server that crashes loses what it counted since its last add. `tether_metrics_shared` is
  1 and `tether_serve_workers` counts the live servers: those that added (or noted
  themselves) in the last `LIVE_S` seconds (three times their interval: a server that stopped
  without leaving, killed or cut off, drops out after that).

Over an index file (SQLite) nothing is shared: each process keeps its own buckets and metrics
(`tether_metrics_shared` 0, `tether_serve_workers` 1) and a revoked key is refused once the
process restarts without it in its keys file.

What it cannot do: a shared bucket or revocation costs a round trip to the database per
request (run off the event loop); the latency histograms of several servers add up bucket by
bucket, which is exact for counts but says nothing of which server was slow; the anonymous
audit cap (`tether.server.limits.AuditQuota`) stays per process.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from starlette.concurrency import run_in_threadpool

from tether.errors import TetherError
from tether.protocols import Limiter, SampleKey, SharedState
from tether.server.http import Metrics
from tether.server.keys import RateLimiter
from tether.server.limits import FailedAuth

T = TypeVar("T")
REVOKED_TTL_S = 1.0  # how stale the revoked digests a server checks may be
PUBLISH_EVERY_S = 5.0  # how often a server adds its counts to the store's totals
LIVE_ADDS = 3  # a server is live while it added within the time of this many adds
LIVE_S = LIVE_ADDS * PUBLISH_EVERY_S
SUMMED = ("counter", "histogram")  # the metric types whose samples add up across servers
log = logging.getLogger("tether.server")


def worker_name() -> str:
    """This process's name among the servers: host, process id and a random tail (a pid
    comes back after a restart)."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"


class Revocations:
    """The revoked digests of `state`, read again when `ttl_s` seconds old."""

    def __init__(self, state: SharedState, ttl_s: float = REVOKED_TTL_S) -> None:
        self.state, self.ttl_s = state, ttl_s
        self._digests: frozenset[str] = frozenset()
        self._at: float | None = None
        self._lock = threading.Lock()

    def __contains__(self, sha256: object) -> bool:
        with self._lock:
            now = time.monotonic()
            if self._at is None or now - self._at >= self.ttl_s:
                self._digests, self._at = self.state.revoked(), now
            return sha256 in self._digests


def _key(sample: Any) -> SampleKey:
    return sample.name, json.dumps(sample.labels, sort_keys=True)


def counted(metrics: Metrics) -> dict[SampleKey, float]:
    """The samples of `metrics`' counters and histograms (not their `_created` times)."""
    return {
        _key(s): float(s.value)
        for family in metrics.registry.collect()
        if family.type in SUMMED
        for s in family.samples
        if not s.name.endswith("_created")
    }


def _order(item: tuple[SampleKey, float]) -> tuple[str, str, float]:
    """Samples in exposition order: by labels (without `le`), then name, buckets by bound."""
    (name, labels), _ = item
    parsed = json.loads(labels)
    le = parsed.pop("le", None)
    return json.dumps(parsed, sort_keys=True), name, float(le) if le is not None else 0.0


class _Totals:
    """A collector of the totals: the families of the local registry (for their names,
    types and help), each counter and histogram with the store's summed samples."""

    def __init__(self, metrics: Metrics, totals: dict[SampleKey, float]) -> None:
        self.metrics, self.totals = metrics, totals

    def collect(self) -> Iterator[Metric]:
        for family in self.metrics.registry.collect():
            if family.type not in SUMMED:
                yield family
                continue
            suffixes = ("_total",) if family.type == "counter" else ("_bucket", "_count", "_sum")
            names = {family.name + s for s in suffixes}
            mine = [item for item in self.totals.items() if item[0][0] in names]
            summed = Metric(family.name, family.documentation, family.type)
            for (name, labels), value in sorted(mine, key=_order):
                summed.add_sample(name, json.loads(labels), value)
            yield summed


class SharedMetrics:
    """The metrics of one server added to its collection's totals (see the module
    docstring): `publish` adds what was counted since the last add; `start` does so every
    `every_s` seconds on a thread of its own, `stop` once more and leaves; `render` is the
    Prometheus text of the totals."""

    def __init__(
        self, metrics: Metrics, state: SharedState, worker: str, every_s: float = PUBLISH_EVERY_S
    ) -> None:
        self.metrics, self.state, self.worker, self.every_s = metrics, state, worker, every_s
        self._sent: dict[SampleKey, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def publish(self) -> None:
        """Add to the store what was counted since the last add (kept for the next add when
        the store cannot be reached)."""
        with self._lock:
            now = counted(self.metrics)
            deltas = {  # a sample seen for the first time is sent even at 0 (a bucket's row)
                k: v - self._sent.get(k, 0.0)
                for k, v in now.items()
                if k not in self._sent or v != self._sent[k]
            }
            self.state.add_counts(self.worker, deltas)
            self._sent = now

    def start(self) -> None:
        """Publish now and every `every_s` seconds, until `stop`."""
        self._thread = threading.Thread(target=self._run, name="tether-metrics", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.publish()
            except TetherError as exc:
                log.warning(
                    "the metrics were not added to the store (next try in %gs): %s",
                    self.every_s,
                    exc,
                )
            if self._stop.wait(self.every_s):
                return

    def stop(self) -> None:
        """Stop publishing, add the last counts and leave the live servers."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            self.publish()
            self.state.leave(self.worker)
        except TetherError as exc:
            log.warning("the last metrics were not added to the store: %s", exc)

    def render(self) -> bytes:
        """The Prometheus text of the collection's totals (this server's counts added
        first), with the live servers."""
        self.publish()
        self.metrics.shared.set(1)
        self.metrics.workers.set(self.state.live_workers(LIVE_ADDS * self.every_s))
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Totals(self.metrics, self.state.counts()))
        return generate_latest(registry)


class Shared:
    """The limits, revocations and metrics of one server process: the store's `state` when
    it has one (shared with every server on it), else this process's own (see the module
    docstring). `remote`: its calls wait for the database (run them with `call`)."""

    def __init__(
        self,
        state: SharedState | None,
        metrics: Metrics,
        *,
        rate: float,
        burst: int,
        failed_auth_per_minute: float,
        publish_every_s: float = PUBLISH_EVERY_S,
    ) -> None:
        self.state = state
        self.metrics = metrics
        self.remote = state is not None

        def buckets(space: str) -> Callable[[float, int], Limiter]:
            """Token buckets from (rate, burst): this process's, or the store's `space`."""
            return RateLimiter if state is None else functools.partial(state.limiter, space)

        self.limiter: Limiter = buckets("rate")(rate, burst)
        self.failures = FailedAuth(failed_auth_per_minute, buckets=buckets("auth"))
        self._revoked = Revocations(state) if state is not None else None
        self._metrics = (
            SharedMetrics(metrics, state, worker_name(), publish_every_s)
            if state is not None
            else None
        )
        metrics.shared.set(0 if state is None else 1)
        metrics.workers.set(1)

    def revoked(self, sha256: str) -> bool:
        """Whether the key of digest `sha256` was revoked in the store (never, without one)."""
        return self._revoked is not None and sha256 in self._revoked

    def render(self) -> bytes:
        """The Prometheus text of /metrics: the store's totals, or this process's counts."""
        if self._metrics is None:
            return generate_latest(self.metrics.registry)
        return self._metrics.render()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, on a thread when it waits for the database (`remote`)."""
        if self.remote:
            return await run_in_threadpool(fn, *args)
        return fn(*args)

    def start(self) -> None:
        """Begin adding this process's counts to the store's totals."""
        if self._metrics is not None:
            self._metrics.start()

    def close(self) -> None:
        """Add the last counts, leave, close the store's connection."""
        if self._metrics is not None:
            self._metrics.stop()
        if self.state is not None:
            self.state.close()
