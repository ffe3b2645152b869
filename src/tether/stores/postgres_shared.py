"""`PostgresSharedState`: what the `tether serve` processes on one PostgreSQL collection share
(`tether.protocols.SharedState`), in the tables of migration 007, so that N servers, on one
host or many, behave as one.

- Rate limits (`limiter(space, rate, burst)`, a `tether.protocols.Limiter`): a token bucket
  per (collection, space, name) in `tether_rate_buckets`. `take` is ONE statement
  (INSERT … ON CONFLICT DO UPDATE … RETURNING): the row is locked while it refills the bucket
  by the time passed since its last take, on the database's clock (`clock_timestamp()`, read
  after the lock is held, so servers on hosts whose clocks differ agree, and two takes that
  race are applied one after the other), takes a token when there is one and says whether it
  did. Its semantics are those of the in-process `tether.server.keys.RateLimiter`: a name
  never seen has a full bucket, a refused take takes nothing, the answer is the seconds until
  a token. A bucket untouched for longer than its refill time (burst / rate) is full, the
  same as no row: such rows are deleted, at most once a minute per limiter.
- Metric totals (`add_counts`, `counts`): each server adds what its counters counted since it
  last added (`tether.server.shared.SharedMetrics` sends the differences), so the totals in
  `tether_serve_counts` only grow, whichever servers stop, start or crash (a crash loses what
  the server counted since its last add). The rows are added in one transaction, in the order
  of their keys, so two servers adding at once never deadlock.
- Live servers (`live_workers`): each add notes its server in `tether_serve_workers`;
  `leave` removes it; rows not noted for an hour are deleted.
- Key revocations (`revoke`, `revoked`): digests in `tether_revoked_keys`, for the whole
  database (a key is a secret of its own, not of one collection).

Each object is one connection, shared by its threads under a lock: read-write, statements
bounded by `STATEMENT_TIMEOUT_S`, commits that do not wait for the disk but a revocation's (a
database crash may lose the last moments of buckets and counts, never a revocation it
reported); a connection that fails is dropped and the next call opens a new one; a role that
may not write the tables it writes is refused when it opens, naming the grants. It never migrates (the store's writer does) and never takes the
collection's advisory lock nor moves its generation, so it neither waits for an ingest nor
drops a reader's cache.

What it cannot do: every take is a round trip to the database (a fraction of a millisecond
on a nearby server; one connection per server process serialises them); servers that give one space
different rates or bursts each refill the shared bucket by their own; a database that cannot
be reached fails the call (the server answers 502) rather than letting a request through.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress

import psycopg

from tether.errors import TetherError, UpstreamError
from tether.protocols import Limiter, SampleKey
from tether.stores.postgres_db import (
    clear_errors,
    collection_id,
    connect,
    ensure_schema,
    parse_url,
)

STATEMENT_TIMEOUT_S = 5.0  # a statement (a lock wait included) fails past this
PRUNE_EVERY_S = 60.0  # how often a limiter deletes the full buckets of its space
WORKERS_KEPT_S = 3600  # a server not noted for this long is forgotten

# The bucket's level after refilling since `at` on the database's clock: n is the clock.
_REFILLED = (
    "least(%(burst)s, b.tokens + %(rate)s"
    " * greatest(0.0, extract(epoch FROM (n.now - b.at))::float8))"
)
TAKE_SQL = f"""
INSERT INTO tether_rate_buckets AS b (collection_id, space, name, tokens, at, taken)
VALUES (%(cid)s, %(space)s, %(name)s, %(burst)s - 1, clock_timestamp(), true)
ON CONFLICT (collection_id, space, name) DO UPDATE SET (tokens, at, taken) = (
  SELECT CASE WHEN r.level >= 1 THEN r.level - 1 ELSE r.level END, r.now, r.level >= 1
  FROM (SELECT {_REFILLED} AS level, n.now
        FROM (SELECT clock_timestamp() AS now) AS n) AS r
)
RETURNING taken, tokens
"""
PEEK_SQL = f"""
SELECT {_REFILLED} FROM tether_rate_buckets AS b, (SELECT clock_timestamp() AS now) AS n
WHERE b.collection_id = %(cid)s AND b.space = %(space)s AND b.name = %(name)s
"""
PRUNE_SQL = """
DELETE FROM tether_rate_buckets WHERE collection_id = %(cid)s AND space = %(space)s
AND at < clock_timestamp() - make_interval(secs => %(refill)s)
"""
ADD_COUNTS_SQL = """
INSERT INTO tether_serve_counts AS c (collection_id, sample, labels, value)
SELECT %s, u.sample, u.labels, u.value
FROM unnest(%s::text[], %s::text[], %s::float8[]) AS u(sample, labels, value)
ORDER BY u.sample, u.labels
ON CONFLICT (collection_id, sample, labels) DO UPDATE SET value = c.value + excluded.value
"""
WRITTEN = ("tether_rate_buckets", "tether_serve_counts", "tether_serve_workers")
_NEEDED = [(t, p) for t in WRITTEN for p in ("SELECT", "INSERT", "UPDATE", "DELETE")]
_NEEDED.append(("tether_revoked_keys", "SELECT"))
MISSING_PRIVILEGES_SQL = (  # has_table_privilege with several privileges answers for any one
    "SELECT t, p FROM (VALUES "
    + ", ".join(f"('{t}', '{p}')" for t, p in _NEEDED)
    + ") AS v(t, p) WHERE NOT has_table_privilege(t, p)"
)
NOTE_WORKER_SQL = """
INSERT INTO tether_serve_workers (collection_id, worker, started, seen)
VALUES (%s, %s, clock_timestamp(), clock_timestamp())
ON CONFLICT (collection_id, worker) DO UPDATE SET seen = excluded.seen
"""


class PostgresSharedState:
    """The shared state of the collection at `url` (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self._conninfo, self.collection, self.location = parse_url(url)
        self._lock = threading.Lock()
        self._db: psycopg.Connection | None = None
        try:
            with self._session() as db:
                ensure_schema(db, self.location, writable=False)  # the store's writer migrates
                self.cid = collection_id(db, self.collection, self.location)
                missing = db.execute(MISSING_PRIVILEGES_SQL).fetchall()
            if missing:
                table, privilege = missing[0]
                raise TetherError(
                    f"the PostgreSQL role may not {privilege} {table} on {self.location}, where"
                    " the servers share rate limits and metrics: GRANT SELECT, INSERT, UPDATE,"
                    f" DELETE ON {', '.join(WRITTEN)} and SELECT ON tether_revoked_keys to it"
                )
        except BaseException:
            self.close()
            raise

    def _connect(self) -> psycopg.Connection:
        db = connect(self._conninfo, self.location, writable=True)
        ms = int(STATEMENT_TIMEOUT_S * 1000)
        try:
            with clear_errors(self.location):
                db.execute(f"SET statement_timeout = {ms}")
                db.execute(f"SET lock_timeout = {ms}")
                # a bucket or a count lost in a database crash costs nothing worth a disk flush
                # per request (a flush made a take several times slower); a
                # revocation is flushed (`revoke`)
                db.execute("SET synchronous_commit = off")
        except BaseException:
            db.close()
            raise
        return db

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection]:
        """The connection, under the lock (opened again when it was dropped); one that fails
        is dropped, psycopg's errors become TetherErrors."""
        with self._lock:
            if self._db is None or self._db.closed:
                self._db = self._connect()
            try:
                with clear_errors(self.location, writing=True):
                    yield self._db
            except UpstreamError:
                self._drop()
                raise

    def _drop(self) -> None:
        if self._db is not None:
            with suppress(psycopg.Error):
                self._db.close()
            self._db = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    # ---- rate limits ----------------------------------------------------------------------

    def limiter(self, space: str, rate: float, burst: int) -> Limiter:
        """The buckets of `space` in this collection, refilled at `rate` a second up to
        `burst`."""
        return StoreBuckets(self, space, rate, burst)

    def _take(self, space: str, name: str, rate: float, burst: int) -> tuple[bool, float]:
        args = {
            "cid": self.cid,
            "space": space,
            "name": name,
            "rate": float(rate),
            "burst": float(burst),
        }
        with self._session() as db:
            row = db.execute(TAKE_SQL, args).fetchone()
        assert row is not None  # an upsert with RETURNING always returns its row
        return bool(row[0]), float(row[1])

    def _peek(self, space: str, name: str, rate: float, burst: int) -> float:
        args = {
            "cid": self.cid,
            "space": space,
            "name": name,
            "rate": float(rate),
            "burst": float(burst),
        }
        with self._session() as db:
            row = db.execute(PEEK_SQL, args).fetchone()
        return float(burst) if row is None else float(row[0])

    def _prune(self, space: str, refill_s: float) -> int:
        with self._session() as db:
            done = db.execute(PRUNE_SQL, {"cid": self.cid, "space": space, "refill": refill_s})
            return max(0, done.rowcount)

    # ---- key revocations ------------------------------------------------------------------

    def revoke(self, name: str, sha256: str) -> bool:
        """Record the key of digest `sha256` (named `name`) as revoked; False when it was."""
        with self._session() as db, db.transaction():
            db.execute("SET LOCAL synchronous_commit = on")  # on disk before it is reported
            done = db.execute(
                "INSERT INTO tether_revoked_keys (sha256, name) VALUES (%s, %s)"
                " ON CONFLICT (sha256) DO NOTHING",
                (sha256, name),
            )
            return done.rowcount == 1

    def revoked(self) -> frozenset[str]:
        """Every revoked digest."""
        with self._session() as db:
            rows = db.execute("SELECT sha256 FROM tether_revoked_keys").fetchall()
        return frozenset(str(r[0]) for r in rows)

    # ---- metrics --------------------------------------------------------------------------

    def add_counts(self, worker: str, deltas: Mapping[SampleKey, float]) -> None:
        """Add `deltas` to the collection's totals (a sample not there yet starts at its
        delta) and note `worker` alive, in one transaction."""
        keys = sorted(deltas)  # a 0 makes the row (a histogram bucket nothing fell in)
        with self._session() as db, db.transaction():
            if keys:
                db.execute(
                    ADD_COUNTS_SQL,
                    (
                        self.cid,
                        [k[0] for k in keys],
                        [k[1] for k in keys],
                        [float(deltas[k]) for k in keys],
                    ),
                )
            db.execute(NOTE_WORKER_SQL, (self.cid, worker))
            db.execute(
                "DELETE FROM tether_serve_workers WHERE collection_id = %s"
                " AND seen < clock_timestamp() - make_interval(secs => %s)",
                (self.cid, WORKERS_KEPT_S),
            )

    def counts(self) -> dict[SampleKey, float]:
        """The collection's totals by (sample, labels)."""
        with self._session() as db:
            rows = db.execute(
                "SELECT sample, labels, value FROM tether_serve_counts WHERE collection_id = %s",
                (self.cid,),
            ).fetchall()
        return {(str(s), str(labels)): float(v) for s, labels, v in rows}

    def live_workers(self, within_s: float) -> int:
        """The servers noted in the last `within_s` seconds."""
        with self._session() as db:
            row = db.execute(
                "SELECT count(*) FROM tether_serve_workers WHERE collection_id = %s"
                " AND seen >= clock_timestamp() - make_interval(secs => %s)",
                (self.cid, float(within_s)),
            ).fetchone()
        return int(row[0]) if row else 0

    def leave(self, worker: str) -> None:
        """Forget `worker` (it stops)."""
        with self._session() as db:
            db.execute(
                "DELETE FROM tether_serve_workers WHERE collection_id = %s AND worker = %s",
                (self.cid, worker),
            )


class StoreBuckets:
    """The `Limiter` of one space of a `PostgresSharedState` (see the module docstring)."""

    remote = True

    def __init__(self, state: PostgresSharedState, space: str, rate: float, burst: int) -> None:
        self.state, self.space, self.rate, self.burst = state, space, rate, burst
        self._pruned_at = time.monotonic()
        self._prune_lock = threading.Lock()

    def take(self, name: str) -> float:
        """0 when `name` may make a request now (one token taken), else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        self._prune_when_due()
        taken, tokens = self.state._take(self.space, name, self.rate, self.burst)
        return 0.0 if taken else (1 - tokens) / self.rate

    def peek(self, name: str) -> float:
        """What `take` would answer, without taking a token."""
        if self.rate <= 0:
            return 0.0
        tokens = self.state._peek(self.space, name, self.rate, self.burst)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate

    def prune(self) -> int:
        """Delete the buckets that have refilled (the same as none); how many."""
        return self.state._prune(self.space, self.burst / self.rate) if self.rate > 0 else 0

    def _prune_when_due(self) -> None:
        now = time.monotonic()
        with self._prune_lock:
            if now - self._pruned_at < PRUNE_EVERY_S:
                return
            self._pruned_at = now
        self.prune()
