"""`MemoryState`: a `tether.protocols.SharedState` in memory, standing for a PostgreSQL store
that several servers share (one object given to each), for the tests that need no database."""

from __future__ import annotations

import time
from collections.abc import Mapping

from tether.errors import UpstreamError
from tether.server.keys import RateLimiter


class MemoryState:
    """Rate buckets (one in-process RateLimiter per space, shared by whoever holds this
    object), metric totals, live workers and revoked digests in memory; `fail_adds` makes the
    next that many `add_counts` fail as an unreachable store would."""

    location = "memory://shared"

    def __init__(self) -> None:
        self.buckets: dict[str, RateLimiter] = {}
        self.totals: dict[tuple[str, str], float] = {}
        self.seen: dict[str, float] = {}
        self.digests: dict[str, str] = {}
        self.revoked_reads = 0
        self.fail_adds = 0
        self.closed = 0

    def limiter(self, space: str, rate: float, burst: int) -> RateLimiter:
        return self.buckets.setdefault(space, RateLimiter(rate, burst))

    def revoke(self, name: str, sha256: str) -> bool:
        fresh = sha256 not in self.digests
        self.digests.setdefault(sha256, name)
        return fresh

    def revoked(self) -> frozenset[str]:
        self.revoked_reads += 1
        return frozenset(self.digests)

    def add_counts(self, worker: str, deltas: Mapping[tuple[str, str], float]) -> None:
        if self.fail_adds:
            self.fail_adds -= 1
            raise UpstreamError("PostgreSQL at memory failed: gone")
        for key, value in deltas.items():
            self.totals[key] = self.totals.get(key, 0.0) + value
        self.seen[worker] = time.monotonic()

    def counts(self) -> dict[tuple[str, str], float]:
        return dict(self.totals)

    def live_workers(self, within_s: float) -> int:
        now = time.monotonic()
        return sum(now - at <= within_s for at in self.seen.values())

    def leave(self, worker: str) -> None:
        self.seen.pop(worker, None)

    def close(self) -> None:
        self.closed += 1
