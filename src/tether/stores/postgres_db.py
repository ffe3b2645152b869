"""Reaching a PostgreSQL store: its URL, the connection, the schema migrations, the errors.

- `parse_url(url)`: a `postgresql://` URL with an optional `collection=NAME` query parameter
  (default "default") becomes (the connection string, the collection, the URL to show: no
  password);
- `connect(...)`: a psycopg 3 connection (autocommit: the store begins its own transactions;
  read-only sessions when the store only reads) with the pgvector adapter registered;
- `ensure_schema(...)`: the numbered migrations in `stores/migrations/postgres/NNN_*.sql`,
  recorded in the table `tether_schema`. A tether newer than the database's schema applies
  the missing ones in one transaction (under an advisory lock, so two processes never both
  migrate); one older than the schema refuses with one line; a reader never migrates;
- `clear_errors(location)`: a psycopg error becomes one `TetherError` line.

What it cannot do: a migration is never undone (there are no down migrations); it does not
create the database or the `vector` extension when the role may not (an administrator does:
see the README).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors

from tether.errors import ConflictError, OlderIndexError, TetherError, UpstreamError

DEFAULT_COLLECTION = "default"
SCHEMES = ("postgresql", "postgres")
SCHEMA_LOCK = 0x7E7E_0001  # advisory lock held while migrating or building an HNSW index
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def is_postgres(location: str) -> bool:
    """Whether `location` is a PostgreSQL URL."""
    return location.split("://", 1)[0].lower() in SCHEMES and "://" in location


def parse_url(url: str) -> tuple[str, str, str]:
    """(conninfo for psycopg, collection name, the URL to show without a password)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [v for k, v in query if k == "collection"]
    collection = names[-1] if names else DEFAULT_COLLECTION
    if not _COLLECTION_NAME.match(collection):
        raise TetherError(
            f"collection {collection!r} is not a valid name (letters, digits, _ . -; up to 100)"
        )
    rest = [(k, v) for k, v in query if k != "collection"]
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0] + "@" if len(netloc) == 2 else ""
    shown_query = urlencode([*rest, ("collection", collection)])
    shown = urlunsplit(parts._replace(netloc=user + netloc[-1], query=shown_query))
    return conninfo, collection, shown


def connect(conninfo: str, location: str, *, writable: bool) -> psycopg.Connection:
    """A connection (autocommit; read-only sessions unless `writable`) with pgvector's types."""
    options = "" if writable else "-c default_transaction_read_only=on"
    try:
        conn = psycopg.connect(conninfo, autocommit=True, options=options, connect_timeout=10)
    except psycopg.Error as exc:
        raise UpstreamError(
            f"cannot connect to PostgreSQL at {location}: {_first_line(exc)}"
        ) from None
    try:
        with clear_errors(location):
            _register_vector(conn, location)
    except BaseException:
        conn.close()
        raise
    return conn


def _register_vector(conn: psycopg.Connection, location: str) -> None:
    from pgvector.psycopg import register_vector

    row = conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
    if row is None:
        return  # registered after the first migration creates the extension
    register_vector(conn)


def collection_id(conn: psycopg.Connection, collection: str, location: str) -> int:
    """The id of `collection` (created already), else a TetherError saying to ingest first."""
    with clear_errors(location):
        row = conn.execute(
            "SELECT id FROM tether_collections WHERE name = %s", (collection,)
        ).fetchone()
    if row is None:
        raise TetherError(
            f"no collection {collection!r} at {location}: run"
            f" `tether ingest FOLDER --store {location}` first"
        )
    return int(row[0])


def migrations() -> list[tuple[int, str, str]]:
    """The shipped migrations as (number, name, SQL), in order."""
    folder = files("tether.stores.migrations") / "postgres"
    found = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d+)_.*\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def latest_version() -> int:
    """The schema version this tether writes (its last migration's number)."""
    return migrations()[-1][0]


def schema_version(conn: psycopg.Connection) -> int:
    """The database's schema version (0: no tether schema in it)."""
    row = conn.execute("SELECT to_regclass('tether_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM tether_schema").fetchone()
    return int(found[0]) if found and found[0] is not None else 0


def ensure_schema(conn: psycopg.Connection, location: str, *, writable: bool) -> int:
    """Check the schema, and migrate it when this tether is newer and may write."""
    latest = latest_version()
    with clear_errors(location):
        current = schema_version(conn)
        if current == latest:
            return current
        _refuse(current, latest, location, writable)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            current = schema_version(conn)  # another process may have migrated meanwhile
            _refuse(current, latest, location, writable)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS tether_schema (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for number, name, sql in migrations():
                if number > current:
                    conn.execute(sql.encode())
                    conn.execute(
                        "INSERT INTO tether_schema (version, name) VALUES (%s, %s)", (number, name)
                    )
        _register_vector(conn, location)
    return latest


def _refuse(current: int, latest: int, location: str, writable: bool) -> None:
    if current > latest:
        raise ConflictError(
            f"the database at {location} has tether schema {current}, newer than this tether"
            f" reads ({latest}): upgrade tether"
        )
    if current < latest and not writable:
        if current == 0:
            raise TetherError(
                f"no tether index in the database at {location}: run"
                f" `tether ingest FOLDER --store {location}` first"
            )
        raise OlderIndexError(
            f"the database at {location} has an older tether schema ({current}; this tether"
            f" reads {latest}): run `tether ingest FOLDER --store {location}` once to upgrade it"
        )


@contextmanager
def clear_errors(location: str, *, writing: bool = False) -> Iterator[None]:
    """A psycopg error inside becomes one TetherError line saying what to do."""
    try:
        yield
    except TetherError:
        raise
    except pg_errors.LockNotAvailable:
        raise ConflictError(
            f"another ingest is writing this collection ({location}) and it waited too long:"
            " try again when it has finished (TETHER_LOCK_TIMEOUT sets the wait)"
        ) from None
    except pg_errors.ReadOnlySqlTransaction:
        raise TetherError(f"{location} was opened for reading: nothing can be written") from None
    except pg_errors.InsufficientPrivilege as exc:
        raise TetherError(
            f"the PostgreSQL role lacks a privilege on {location} ({_first_line(exc)}): see"
            " the README's PostgreSQL section for what tether needs"
        ) from None
    except (pg_errors.UndefinedFile, pg_errors.FeatureNotSupported) as exc:
        raise TetherError(
            f"the vector extension (pgvector) is missing on {location} ({_first_line(exc)}):"
            " an administrator must install it and run CREATE EXTENSION vector"
        ) from None
    except psycopg.OperationalError as exc:
        raise UpstreamError(f"PostgreSQL at {location} failed: {_first_line(exc)}") from None
    except psycopg.Error as exc:
        raise UpstreamError(
            f"the store at {location} could not be used: {_first_line(exc)}"
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
