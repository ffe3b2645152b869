"""Stores: where an index lives. `open_store(location)` is the one factory; every store
implements `tether.protocols.Store` (reads, filtered lexical and dense search, `apply` of a
change set, generations) and passes the contract tests in tests/contract/.

- `sqlite`: the embedded default, one SQLite file (writing in `sqlite_write`);
- `dense`: cosine search over the vectors (brute force or a faiss HNSW graph);
- `sqlite_audit`, `postgres_audit`: the audit of answered questions (`open_audit_log`), a
  table beside the index (`audit_rows`: what the two share);
- `postgres_shared`: what the `tether serve` processes on one PostgreSQL collection share
  (rate-limit buckets, metric totals, key revocations: `open_shared_state`); the SQLite file
  keeps none (its servers keep them per process);
- `postgres`: a collection in a PostgreSQL database with pgvector, for a location
  `postgresql://user@host/db?collection=NAME` (connection, migrations and errors in
  `postgres_db`, SQL in `postgres_sql`, writing in `postgres_write`); `lexical` holds what
  both stores' BM25 rankings share (query phrases, FTS5's tokenizer).

Read commands open the index read-only (`open_store(location)`); only writers (ingest,
calibration) pass `writable=True` or `must_exist=False`.

What it cannot do: other URL schemes are refused; importing this package loads no backend
until `open_store` is called.
"""

from __future__ import annotations

from pathlib import Path

from tether.config import DEFAULT_LOCK_TIMEOUT as LOCK_TIMEOUT
from tether.errors import TetherError
from tether.protocols import AuditLog, SharedState, Store


def open_store(
    location: Path | str,
    *,
    must_exist: bool = True,
    writable: bool = False,
    lock_timeout: float | None = None,
    replace_damaged: bool = False,
) -> Store:
    """Open the index at `location`: a file path, or a `postgresql://` URL (one collection
    of a PostgreSQL database: `?collection=NAME`, default "default").

    It is opened read-only (nothing can be created or written in it) unless `writable`, or
    unless `must_exist` is False, in which case a missing index is created (and the store can
    write). A missing index is a clear error when `must_exist`; a file that is not a tether
    index is refused either way. `lock_timeout` bounds the wait for another writer's lock
    (seconds; default `LOCK_TIMEOUT`). `replace_damaged` (for a rebuild) sets a damaged file
    (or an index of another schema version) aside and starts a new index in its place."""
    text = str(location)
    if "://" in text:
        from tether.stores.postgres_db import is_postgres

        if not is_postgres(text):
            raise TetherError(
                f"{text.split('://')[0]}:// stores are not supported: pass a file or a"
                " postgresql:// URL"
            )
        from tether.stores.postgres import PostgresStore

        return PostgresStore(
            text,
            create=not must_exist,
            writable=writable or not must_exist,
            lock_timeout=LOCK_TIMEOUT if lock_timeout is None else lock_timeout,
        )
    from tether.stores.sqlite import SCHEMA_VERSION, SqliteStore
    from tether.stores.sqlite_open import set_aside_for_rebuild

    if replace_damaged:
        set_aside_for_rebuild(Path(location), str(SCHEMA_VERSION))
    return SqliteStore(
        location,
        create=not must_exist,
        writable=writable or not must_exist,
        lock_timeout=LOCK_TIMEOUT if lock_timeout is None else lock_timeout,
    )


def open_audit_log(location: Path | str, *, writable: bool = False) -> AuditLog:
    """The audit of the index at `location` (which must exist; a file, or a `postgresql://`
    collection): read-only to list, `writable` to record (its own connection, with a short
    wait for a lock)."""
    if "://" in str(location):
        from tether.stores.postgres_db import is_postgres

        if not is_postgres(str(location)):
            raise TetherError(f"{str(location).split('://')[0]}:// stores are not supported")
        from tether.stores.postgres_audit import PostgresAuditLog

        return PostgresAuditLog(str(location), writable=writable)
    from tether.stores.sqlite_audit import SqliteAuditLog

    return SqliteAuditLog(location, writable=writable)


def open_shared_state(location: Path | str) -> SharedState | None:
    """What the servers on the index at `location` share (`tether.protocols.SharedState`,
    its own connection): for a `postgresql://` collection, which must exist, the store's
    tables; None for an index file, whose servers keep rate limits, metrics and revocations
    per process."""
    if "://" not in str(location):
        return None
    from tether.stores.postgres_db import is_postgres

    if not is_postgres(str(location)):
        raise TetherError(f"{str(location).split('://')[0]}:// stores are not supported")
    from tether.stores.postgres_shared import PostgresSharedState

    return PostgresSharedState(str(location))
