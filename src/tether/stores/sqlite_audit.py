"""`SqliteAuditLog`: the audit of answered questions (`tether.protocols.AuditLog`) in the
`audit` table of a SQLite index file, beside the index's own tables.

- its own connection, so the Store can stay read-only: opened read-only to list, read-write
  (never creating the file) to record; it writes only the `audit` table and never moves the
  index's generation, so a record does not drop any cache of the index;
- a record waits at most `timeout` seconds (`AUDIT_TIMEOUT`) for another writer (an ingest
  holds the write lock for its whole apply), then fails with a TetherError the caller
  reports: an answer is never held up long nor lost because of its audit;
- retention: `record(entry, retention_days)` deletes, in the same transaction, the entries
  older than that many days;
- feedback on an entry (`add_feedback`, `feedback`) is kept in the `audit_feedback` table,
  one row per entry and asker (a second verdict from the same asker replaces the first);
  retention deletes an entry's feedback with it;
- an index written before the audit existed (schema 2) gets the table on its first record,
  and one written before feedback existed gets `audit_feedback` on its first record or
  feedback (no schema version moves: older tethers read the index as before); listing one
  that has none lists nothing;
- a reader of audience public never gets an entry asked for staff, nor feedback on one
  (filtered in the query, so not even a count of them is read).

What it cannot do: the audit keeps the answer and the claims, not the passages' text (their
IDs only); a staff passage relabelled public later does not re-open older staff entries;
feedback names its right passage by chunk ID, which a re-ingest that changes the passage's
text retires.
"""

from __future__ import annotations

from pathlib import Path

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
from tether.stores.sqlite_open import clear_errors, connect
from tether.stores.sqlite_sql import AUDIT_TABLE, SCHEMA
from tether.types import AuditEntry, AuditQuery, Feedback

AUDIT_TIMEOUT = 2.0  # seconds a record waits for another writer's lock


class SqliteAuditLog:
    """The audit table of the index at `path` (see the module docstring)."""

    def __init__(
        self, path: Path | str, *, writable: bool = False, timeout: float | None = None
    ) -> None:
        self.path = Path(path)
        self.writable = writable
        wait = AUDIT_TIMEOUT if timeout is None else timeout
        self.db = connect(self.path, schema=SCHEMA, writable=writable, create=False, timeout=wait)

    def close(self) -> None:
        self.db.close()

    def record(self, entry: AuditEntry, retention_days: int | None = None) -> int:
        """Write `entry` (and apply the retention) in one short transaction; its id."""
        if not self.writable:
            raise TetherError(f"{self.path} was opened for reading: the audit cannot be written")
        with clear_errors(self.path, writing=True):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in AUDIT_TABLE:  # an index of schema 2 has none yet
                    self.db.execute(statement)
                cursor = self.db.execute(
                    "INSERT INTO audit (at, who, audience, status, flagged, flags, record)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row_values(entry),
                )
                if retention_days is not None:
                    old = cutoff(retention_days)
                    self.db.execute(
                        "DELETE FROM audit_feedback WHERE entry_id IN"
                        " (SELECT id FROM audit WHERE at < ?)",
                        (old,),
                    )
                    self.db.execute("DELETE FROM audit WHERE at < ?", (old,))
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        return int(cursor.lastrowid or 0)

    def add_feedback(self, feedback: Feedback) -> Feedback:
        """Store `feedback` on its entry in one short transaction, replacing the asker's earlier
        verdict on that entry; the stored record (with its id and entry). A TetherError when
        the entry is not in the audit (deleted by retention meanwhile)."""
        if not self.writable:
            raise TetherError(f"{self.path} was opened for reading: feedback cannot be written")
        with clear_errors(self.path, writing=True):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in AUDIT_TABLE:  # an index written before feedback has none
                    self.db.execute(statement)
                row = self.db.execute(
                    "INSERT INTO audit_feedback (entry_id, at, who, verdict, note, chunk_id)"
                    " SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM audit WHERE id = ?)"
                    " ON CONFLICT (entry_id, who) DO UPDATE SET at = excluded.at,"
                    " verdict = excluded.verdict, note = excluded.note,"
                    " chunk_id = excluded.chunk_id RETURNING id",
                    (*feedback_values(feedback), feedback.entry_id),
                ).fetchone()
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            if row is None:
                raise NotFoundError(f"no audit entry {feedback.entry_id} (see `tether audit`)")
            stored = self._feedback_by_id(int(row[0]))
        assert stored is not None  # just written, in this connection
        return stored

    def feedback(self, query: AuditQuery) -> list[Feedback]:
        """The feedback on the entries `query` selects (its dates are the feedback's), newest
        first, each with its entry."""
        clause, args = where(query, entry="a.", dated="f.")
        sql = (
            f"SELECT {FEEDBACK_COLUMNS} FROM audit_feedback f JOIN audit a ON a.id = f.entry_id"
            f" WHERE {clause}{feedback_order(query)}"
        )
        with clear_errors(self.path, writing=False):
            if not self._has_table("audit_feedback"):
                return []
            return [feedback_of(row) for row in self.db.execute(sql, args).fetchall()]

    def _feedback_by_id(self, feedback_id: int) -> Feedback | None:
        sql = (
            f"SELECT {FEEDBACK_COLUMNS} FROM audit_feedback f JOIN audit a ON a.id = f.entry_id"
            " WHERE f.id = ?"
        )
        row = self.db.execute(sql, (feedback_id,)).fetchone()
        return feedback_of(row) if row else None

    def _has_table(self, name: str = "audit") -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def entries(self, query: AuditQuery) -> list[AuditEntry]:
        """The entries `query` selects (flagged first, then newest first)."""
        clause, args = where(query)
        sql = f"SELECT {COLUMNS} FROM audit WHERE {clause}{order_by(query)}"
        with clear_errors(self.path, writing=False):
            if not self._has_table():
                return []
            return [entry_of(row) for row in self.db.execute(sql, args).fetchall()]

    def entry(self, entry_id: int, reader: str = "public") -> AuditEntry | None:
        """One entry by id, or None when there is none or `reader` may not see it."""
        sql = f"SELECT {COLUMNS} FROM audit WHERE id = ?"
        if reader != "staff":
            sql += " AND audience = 'public'"
        with clear_errors(self.path, writing=False):
            if not self._has_table():
                return None
            row = self.db.execute(sql, [entry_id]).fetchone()
        return entry_of(row) if row else None
