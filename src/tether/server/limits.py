"""What `tether serve` allows a client before it answers 429: failed authentications per
client address.

- `FailedAuth`: each client address may fail to authenticate (an unknown key, an
  Authorization header that is not `Bearer KEY`) `per_minute` times a minute, in bursts of as
  many. An address that has used them up gets 429 with Retry-After for every request that
  shows a key, before the key is looked up (so it cannot keep guessing), until its bucket
  refills; requests without a key (anonymous, when allowed) are not affected, nor is any
  other address.

The address is the one uvicorn gives the request: the peer's, or the `X-Forwarded-For` one
only when the peer is a proxy named by `--forwarded-allow-ips` (`tether.server.running`).

What it cannot do: it counts per process (several servers each count their own); clients
behind one NAT share one address, so a neighbour's failed keys can hold up a valid one for
the Retry-After; a caller with many addresses (IPv6) gets many buckets.
"""

from __future__ import annotations

import math

from tether.server.keys import RateLimiter


class FailedAuth:
    """Failed authentications per client address (see the module docstring); `per_minute`
    0: no limit."""

    def __init__(self, per_minute: float) -> None:
        self.per_minute = per_minute
        self._buckets = RateLimiter(per_minute / 60, max(1, math.ceil(per_minute)))

    def blocked(self, address: str) -> int:
        """0 when `address` may try a key now, else the whole seconds to wait."""
        wait = self._buckets.peek(address)
        return max(1, math.ceil(wait)) if wait else 0

    def failed(self, address: str) -> None:
        """Count one failed authentication from `address`."""
        self._buckets.take(address)
