"""What `tether serve` allows a client: failed authentications per client address (429
beyond), anonymous answers recorded in the audit per client address and day.

- `FailedAuth`: each client address may fail to authenticate (an unknown key, an
  Authorization header that is not `Bearer KEY`) `per_minute` times a minute, in bursts of as
  many. An address that has used them up gets 429 with Retry-After for every request that
  shows a key, before the key is looked up (so it cannot keep guessing), until its bucket
  refills; requests without a key (anonymous, when allowed) are not affected, nor is any
  other address.
- `AuditQuota`: each client address may have `per_day` anonymous answers recorded in the
  audit per UTC day; beyond that its answers are still given, not recorded, and their count
  is written as entries of status "dropped" that staff see in `tether audit`.

The address is the one uvicorn gives the request: the peer's, or the `X-Forwarded-For` one
only when the peer is a proxy named by `--forwarded-allow-ips` (`tether.server.running`).

The failed authentications are counted per process over an index file, and in the store for
every server on a PostgreSQL collection (`tether.server.shared`).

What it cannot do: the audit cap counts per process (several servers each allow `per_day`);
clients behind one NAT share one address, so a neighbour's failed keys can hold up a valid
one for the Retry-After; a caller with many addresses (IPv6) gets many buckets.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from tether.protocols import Limiter
from tether.server.keys import RateLimiter


class FailedAuth:
    """Failed authentications per client address (see the module docstring); `per_minute`
    0: no limit. `buckets` makes the token buckets from (rate, burst): this process's own
    by default, the store's for servers that share them (`tether.server.shared`)."""

    def __init__(
        self, per_minute: float, buckets: Callable[[float, int], Limiter] = RateLimiter
    ) -> None:
        self.per_minute = per_minute
        self._buckets = buckets(per_minute / 60, max(1, math.ceil(per_minute)))

    def blocked(self, address: str) -> int:
        """0 when `address` may try a key now, else the whole seconds to wait."""
        wait = self._buckets.peek(address)
        return max(1, math.ceil(wait)) if wait else 0

    def failed(self, address: str) -> None:
        """Count one failed authentication from `address`."""
        self._buckets.take(address)


class AuditQuota:
    """How many anonymous answers each client address may have recorded in the audit per UTC
    day (`per_day`; 0: no cap), and the count of those left out, written as "dropped" entries
    (`Workspace.record_dropped`) in batches: the first drop at once, then whenever
    `flush_every` more have gathered or `flush_s` seconds have passed since the last write (at
    the next drop), and what is left when the server stops (`pending`).

    What it cannot do: it counts per process and forgets at a restart (several servers each
    allow `per_day`); a crash loses the drops not yet written; the dropped entries say how many
    answers are missing, not from which address (the audit keeps no addresses)."""

    def __init__(self, per_day: int, *, flush_every: int = 100, flush_s: float = 60.0) -> None:
        self.per_day = per_day
        self.flush_every = flush_every
        self.flush_s = flush_s
        self._day = ""
        self._recorded: dict[str, int] = {}
        self._pending = 0
        self._written_at: float | None = None
        self._lock = threading.Lock()

    def admit(self, address: str) -> bool:
        """True when an anonymous answer from `address` is to be recorded (and counted)."""
        if self.per_day <= 0:
            return True
        today = time.strftime("%Y-%m-%d", time.gmtime())
        with self._lock:
            if today != self._day:
                self._day, self._recorded = today, {}
            n = self._recorded.get(address, 0)
            if n >= self.per_day:
                return False
            self._recorded[address] = n + 1
            return True

    def dropped(self) -> int:
        """Count one answer left out; the number of drops to write now (0: not yet)."""
        now = time.monotonic()
        with self._lock:
            self._pending += 1
            due = (
                self._written_at is None
                or self._pending >= self.flush_every
                or now - self._written_at >= self.flush_s
            )
            if not due:
                return 0
            count, self._pending, self._written_at = self._pending, 0, now
            return count

    def pending(self) -> int:
        """The drops not yet written, taken (for the last write, when the server stops)."""
        with self._lock:
            count, self._pending = self._pending, 0
            return count
