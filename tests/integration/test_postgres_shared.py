"""What the servers on one PostgreSQL collection share (`tether.stores.postgres_shared`,
migration 7): the token bucket taken in one SQL statement answers as the in-process
RateLimiter does, holds under takes that race from several connections, refills on the
database's clock and is pruned once full; metric totals that two servers add to; live servers;
revoked digests; and migration 7 on a database at schema 6.

Needs `TETHER_TEST_PG_URL` (scripts/ci/postgres.sh start); skipped with the reason without
it, failed in CI."""

from __future__ import annotations

import math
import threading
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from pg_support import drop_collection, fresh_collection, pg_url

from tether.errors import TetherError
from tether.server.keys import RateLimiter
from tether.stores import open_shared_state, open_store
from tether.stores.postgres import PostgresStore
from tether.stores.postgres_db import parse_url
from tether.stores.postgres_shared import PostgresSharedState


@pytest.fixture
def collection():
    location = fresh_collection()
    PostgresStore(location).close()  # the collection exists (as after an ingest)
    yield location
    drop_collection(location)


@pytest.fixture
def shared(collection):
    state = open_shared_state(collection)
    assert isinstance(state, PostgresSharedState)
    yield state
    state.close()


def _rows(location: str, sql: str, *args: object) -> list[tuple]:
    conninfo, _, _ = parse_url(location)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return conn.execute(sql, args).fetchall()


def test_the_store_bucket_answers_as_the_in_process_one(shared) -> None:
    """The same takes and peeks, on several names, give the same answers (the waits agree to
    a millisecond's refill: the two clocks are read at slightly different times)."""
    rate, burst = 0.01, 3
    store, local = shared.limiter("rate", rate, burst), RateLimiter(rate, burst)
    assert store.remote and not local.remote
    script = [("take", "a")] * 4 + [("peek", "a"), ("peek", "b"), ("take", "b"), ("take", "a"),
                                    ("peek", "a"), ("take", "c")]  # fmt: skip
    for op, name in script:
        mine, theirs = getattr(store, op)(name), getattr(local, op)(name)
        assert math.isclose(mine, theirs, abs_tol=0.01), (op, name, mine, theirs)
    assert store.take("a") == pytest.approx(1 / rate, rel=0.01)  # a refused take takes nothing
    unlimited = shared.limiter("rate", 0, 1)
    assert all(unlimited.take("a") == 0 for _ in range(5)) and unlimited.peek("a") == 0


def test_the_bucket_refills_on_the_database_clock(shared) -> None:
    limiter = shared.limiter("rate", 20.0, 2)  # a token every 50 ms
    assert limiter.take("desk") == 0 and limiter.take("desk") == 0
    wait = limiter.take("desk")
    assert 0 < wait <= 0.05
    time.sleep(wait + 0.02)
    assert limiter.peek("desk") == 0 and limiter.take("desk") == 0


def test_takes_that_race_from_several_connections_take_burst_tokens(collection) -> None:
    """8 threads on 4 connections (as 4 servers) take 40 times from one bucket of 20 that
    refills once in 1,000 s: exactly 20 are given."""
    states = [open_shared_state(collection) for _ in range(4)]
    limiters = [s.limiter("rate", 0.001, 20) for s in states if s is not None]
    given: list[bool] = []
    lock = threading.Lock()

    def take(n: int) -> None:
        for _ in range(5):
            ok = limiters[n % 4].take("shared-key") == 0
            with lock:
                given.append(ok)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in states:
        assert s is not None
        s.close()
    assert len(given) == 40 and sum(given) == 20


def test_spaces_are_apart_and_full_buckets_are_pruned(shared, collection) -> None:
    rate_limit = shared.limiter("rate", 1000.0, 1)  # refills in a millisecond
    auth = shared.limiter("auth", 0.001, 1)
    assert rate_limit.take("10.0.0.1") == 0 and auth.take("10.0.0.1") == 0
    assert auth.peek("10.0.0.1") > 0 and rate_limit.peek("10.0.0.1") == 0
    time.sleep(0.01)
    assert rate_limit.prune() == 1  # full again: the same as no row
    assert auth.prune() == 0  # still empty: kept
    spaces = _rows(collection, "SELECT space FROM tether_rate_buckets b JOIN tether_collections c"
                   " ON c.id = b.collection_id WHERE c.name = %s", parse_url(collection)[1])  # fmt: skip
    assert spaces == [("auth",)]


def test_metric_totals_add_up_over_servers_and_live_ones_are_counted(collection) -> None:
    a, b = open_shared_state(collection), open_shared_state(collection)
    assert a is not None and b is not None
    key = ("tether_requests_total", '{"method": "GET", "route": "/healthz", "status": "200"}')
    other = ("tether_turned_away_total", '{"reason": "rate"}')
    a.add_counts("host/1/aa", {key: 3.0})
    b.add_counts("host/2/bb", {key: 2.0, other: 1.0})
    assert a.counts() == {key: 5.0, other: 1.0} == b.counts()
    assert a.live_workers(15) == 2
    b.leave("host/2/bb")
    assert a.live_workers(15) == 1 and a.counts()[key] == 5.0  # what b added stays
    time.sleep(0.05)
    assert a.live_workers(0.01) == 0  # not noted since
    a.add_counts("host/1/aa", {})  # a heartbeat alone
    assert a.live_workers(15) == 1
    elsewhere = fresh_collection()
    PostgresStore(elsewhere).close()
    try:
        c = open_shared_state(elsewhere)
        assert c is not None and c.counts() == {}  # another collection's totals are its own
        c.close()
    finally:
        drop_collection(elsewhere)
    a.close()
    b.close()


def test_revocations_are_for_the_whole_database(collection) -> None:
    sha = uuid.uuid4().hex * 2
    a = open_shared_state(collection)
    assert a is not None
    assert a.revoke("desk", sha) is True and a.revoke("desk", sha) is False
    elsewhere = fresh_collection()
    PostgresStore(elsewhere).close()
    try:
        b = open_shared_state(elsewhere)
        assert b is not None and sha in b.revoked()
        b.close()
    finally:
        drop_collection(elsewhere)
        _rows(collection, "DELETE FROM tether_revoked_keys WHERE sha256 = %s RETURNING 1", sha)
    a.close()


def test_a_dropped_connection_is_opened_again(shared, collection) -> None:
    limiter = shared.limiter("rate", 0.001, 5)
    assert limiter.take("desk") == 0
    pid = shared._db.info.backend_pid
    _rows(collection, "SELECT pg_terminate_backend(%s)", pid)
    with pytest.raises(TetherError):
        limiter.take("desk")  # the call that finds it dead fails
    assert limiter.take("desk") == 0  # the next opens a new connection
    assert limiter.peek("desk") == 0  # 2 of 5 taken


def test_a_collection_that_does_not_exist_is_refused(collection) -> None:
    base = pg_url()
    joiner = "&" if "?" in base else "?"
    with pytest.raises(TetherError, match="no collection"):
        open_shared_state(f"{base}{joiner}collection=never-{uuid.uuid4().hex[:8]}")
    assert open_shared_state("/tmp/index.sqlite") is None  # an index file shares nothing


def test_migration_7_adds_the_shared_tables(collection) -> None:
    """A database at schema 6 is refused to a server (a reader) and migrated by the next
    writer, after which the servers share their state."""
    conninfo, _, _ = parse_url(pg_url())
    name = f"tether_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = pg_url().split("?", 1)
    url = parts[0].rsplit("/", 1)[0] + f"/{name}" + (f"?{parts[1]}" if len(parts) > 1 else "")
    try:
        location = f"{url}{'&' if '?' in url else '?'}collection=old"
        PostgresStore(location).close()
        db_conninfo, _, _ = parse_url(location)
        with psycopg.connect(db_conninfo) as conn:  # as tether at schema 6 left it
            for table in ("tether_rate_buckets", "tether_serve_counts", "tether_serve_workers",
                          "tether_revoked_keys"):  # fmt: skip
                conn.execute(f"DROP TABLE {table}")
            conn.execute("DELETE FROM tether_schema WHERE version >= 7")
        with pytest.raises(TetherError, match="older tether"):
            open_shared_state(location)  # a server does not migrate
        with pytest.raises(TetherError, match="older tether"):
            open_store(location)
        PostgresStore(location).close()  # a writer does
        state = open_shared_state(location)
        assert state is not None and state.limiter("rate", 1, 1).take("a") == 0
        state.close()
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_a_role_that_may_not_write_the_shared_tables_is_refused_naming_the_grant(
    collection,
) -> None:
    """A role that may only read (SELECT on every table) can open the store but not the
    shared state: the server would fail every request, so it is refused as it opens."""
    conninfo, _, _ = parse_url(collection)
    role = f"tether_reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    parts = urlsplit(collection)
    host = parts.netloc.rsplit("@", 1)[-1]
    reader = urlunsplit(parts._replace(netloc=f"{role}@{host}"))  # trust auth, as in CI
    try:
        open_store(reader).close()  # reading is allowed
        with pytest.raises(TetherError, match=r"may not INSERT tether_rate_buckets.*GRANT SELECT"):
            open_shared_state(reader)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
