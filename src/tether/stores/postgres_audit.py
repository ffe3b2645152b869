"""`PostgresAuditLog`: the audit of answered questions (`tether.protocols.AuditLog`) for one
collection of a PostgreSQL store, in the table `tether_audit` (migration 003), with the same
semantics as the SQLite audit (`stores.sqlite_audit`, rows shared in `stores.audit_rows`).

- its own connection (read-only sessions unless `writable`), so the store's connection and
  its transactions are never touched; a record takes no advisory lock and never moves the
  collection's generation, so it neither waits for an ingest nor drops any reader's cache;
- a record is one short transaction bounded by `timeout` seconds (`AUDIT_TIMEOUT`) of
  statement and lock time, then fails with a TetherError the caller reports: an answer is
  never held up long nor lost because of its audit;
- retention: `record(entry, retention_days)` deletes, in the same transaction, the
  collection's entries older than that many days (their feedback with them);
- feedback on an entry (`add_feedback`, `feedback`) is kept in `tether_audit_feedback`
  (migration 005), one row per entry and asker (a second verdict from the same asker
  replaces the first), bounded by the same timeout;
- a reader of audience public never gets an entry asked for staff, nor feedback on one
  (filtered in the query).

What it cannot do: several servers write one table, so ids are unique but their order is only
roughly the order of the answers; retention applies to this collection's entries only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tether.errors import NotFoundError, TetherError
from tether.stores.audit_rows import (
    COLUMNS,
    FEEDBACK_COLUMNS,
    cutoff,
    entry_of,
    feedback_of,
    feedback_order,
    feedback_values,
    order_by,
    row_values,
    where,
)
from tether.stores.postgres_db import (
    clear_errors,
    collection_id,
    connect,
    ensure_schema,
    parse_url,
)
from tether.types import AuditEntry, AuditQuery, Feedback

AUDIT_TIMEOUT = 2.0  # seconds a record may take (lock waits included)


class PostgresAuditLog:
    """The audit of the collection at `url` (see the module docstring)."""

    def __init__(self, url: str, *, writable: bool = False, timeout: float | None = None) -> None:
        conninfo, self.collection, self.location = parse_url(url)
        self.writable = writable
        self.timeout = AUDIT_TIMEOUT if timeout is None else timeout
        self.db = connect(conninfo, self.location, writable=writable)
        try:
            ensure_schema(self.db, self.location, writable=False)  # the store migrates
            self.cid = collection_id(self.db, self.collection, self.location)
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """One short write transaction under the lock and statement timeouts; a TetherError
        saying `what` cannot be written when the log was opened for reading."""
        if not self.writable:
            raise TetherError(f"{self.location} was opened for reading: {what} cannot be written")
        ms = max(1, int(self.timeout * 1000))
        with clear_errors(self.location, writing=True), self.db.transaction():
            self.db.execute(f"SET LOCAL lock_timeout = {ms}")
            self.db.execute(f"SET LOCAL statement_timeout = {ms}")
            yield

    def record(self, entry: AuditEntry, retention_days: int | None = None) -> int:
        """Write `entry` (and apply the retention) in one short transaction; its id."""
        with self._writing("the audit"):
            row = self.db.execute(
                "INSERT INTO tether_audit (collection_id, at, who, audience, status, flagged,"
                " flags, record) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (self.cid, *row_values(entry)),
            ).fetchone()
            if retention_days is not None:
                self.db.execute(
                    "DELETE FROM tether_audit WHERE collection_id = %s AND at < %s",
                    (self.cid, cutoff(retention_days)),
                )
        return int(row[0]) if row else 0

    def add_feedback(self, feedback: Feedback) -> Feedback:
        """Store `feedback` on its entry in one short transaction, replacing the asker's earlier
        verdict on that entry; the stored record (with its id and entry). A TetherError when
        the entry is not in this collection's audit (deleted by retention meanwhile)."""
        with self._writing("feedback"):
            row = self.db.execute(
                "INSERT INTO tether_audit_feedback (entry_id, at, who, verdict, note, chunk_id)"
                " SELECT %s, %s, %s, %s, %s, %s FROM tether_audit"
                " WHERE id = %s AND collection_id = %s"
                " ON CONFLICT (entry_id, who) DO UPDATE SET at = excluded.at,"
                " verdict = excluded.verdict, note = excluded.note,"
                " chunk_id = excluded.chunk_id RETURNING id",
                (*feedback_values(feedback), feedback.entry_id, self.cid),
            ).fetchone()
            stored = self._feedback_by_id(int(row[0])) if row else None
        if stored is None:
            raise NotFoundError(f"no audit entry {feedback.entry_id} (see `tether audit`)")
        return stored

    def feedback(self, query: AuditQuery) -> list[Feedback]:
        """The feedback on the entries `query` selects (its dates are the feedback's), newest
        first, each with its entry."""
        clause, args = where(query, "%s", entry="a.", dated="f.")
        sql = (
            f"SELECT {FEEDBACK_COLUMNS} FROM tether_audit_feedback f"
            f" JOIN tether_audit a ON a.id = f.entry_id"
            f" WHERE a.collection_id = %s AND {clause}{feedback_order(query)}"
        )
        with clear_errors(self.location):
            rows = self.db.execute(sql, [self.cid, *args]).fetchall()
        return [feedback_of(tuple(row)) for row in rows]

    def _feedback_by_id(self, feedback_id: int) -> Feedback | None:
        sql = (
            f"SELECT {FEEDBACK_COLUMNS} FROM tether_audit_feedback f"
            " JOIN tether_audit a ON a.id = f.entry_id WHERE f.id = %s"
        )
        row = self.db.execute(sql, (feedback_id,)).fetchone()
        return feedback_of(tuple(row)) if row else None

    def entries(self, query: AuditQuery) -> list[AuditEntry]:
        """The entries `query` selects (flagged first, then newest first)."""
        clause, args = where(query, "%s")
        sql = (
            f"SELECT {COLUMNS} FROM tether_audit WHERE collection_id = %s AND {clause}"
            f"{order_by(query)}"
        )
        with clear_errors(self.location):
            rows = self.db.execute(sql, [self.cid, *args]).fetchall()
        return [entry_of(tuple(row)) for row in rows]

    def entry(self, entry_id: int, reader: str = "public") -> AuditEntry | None:
        """One entry by id, or None when there is none or `reader` may not see it."""
        sql = f"SELECT {COLUMNS} FROM tether_audit WHERE collection_id = %s AND id = %s"
        if reader != "staff":
            sql += " AND audience = 'public'"
        with clear_errors(self.location):
            row = self.db.execute(sql, (self.cid, entry_id)).fetchone()
        return entry_of(tuple(row)) if row else None
