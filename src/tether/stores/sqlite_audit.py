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
- an index written before the audit existed (schema 2) gets the table on its first record;
  listing one that has none lists nothing;
- a reader of audience public never gets an entry asked for staff (filtered in the query,
  so not even a count of them is read).

What it cannot do: the audit keeps the answer and the claims, not the passages' text (their
IDs only); a staff passage relabelled public later does not re-open older staff entries.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tether.errors import TetherError
from tether.stores.sqlite_open import clear_errors, connect
from tether.stores.sqlite_sql import AUDIT_TABLE, SCHEMA
from tether.types import AuditEntry, AuditQuery

AUDIT_TIMEOUT = 2.0  # seconds a record waits for another writer's lock

_COLUMNS = "id, at, who, audience, status, record"
_FIELDS = frozenset(f.name for f in dataclasses.fields(AuditEntry)) - {"id"}


class SqliteAuditLog:
    """The audit table of the index at `path` (see the module docstring)."""

    def __init__(
        self, path: Path | str, *, writable: bool = False, timeout: float | None = None
    ) -> None:
        self.path = Path(path)
        self.writable = writable
        wait = AUDIT_TIMEOUT if timeout is None else timeout
        self.db = connect(self.path, schema=SCHEMA, writable=writable, create=False,
                          timeout=wait)  # fmt: skip

    def close(self) -> None:
        self.db.close()

    def record(self, entry: AuditEntry, retention_days: int | None = None) -> int:
        """Write `entry` (and apply the retention) in one short transaction; its id."""
        if not self.writable:
            raise TetherError(f"{self.path} was opened for reading: the audit cannot be written")
        body = {k: v for k, v in entry.__dict__.items() if k not in ("id",)}
        with clear_errors(self.path, writing=True):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in AUDIT_TABLE:  # an index of schema 2 has none yet
                    self.db.execute(statement)
                cursor = self.db.execute(
                    "INSERT INTO audit (at, who, audience, status, flagged, flags, record)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (entry.at, entry.who, entry.audience, entry.status,
                     int(bool(entry.flags)), " ".join(entry.flags),
                     json.dumps(body, ensure_ascii=False, default=str)),
                )  # fmt: skip
                if retention_days is not None:
                    cutoff = datetime.now(UTC) - timedelta(days=retention_days)
                    self.db.execute(
                        "DELETE FROM audit WHERE at < ?", (cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"),)
                    )
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        return int(cursor.lastrowid or 0)

    def _has_table(self) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit'"
        ).fetchone()
        return row is not None

    def entries(self, query: AuditQuery) -> list[AuditEntry]:
        """The entries `query` selects (flagged first, then newest first)."""
        where, args = _where(query)
        sql = (
            f"SELECT {_COLUMNS} FROM audit WHERE {where}"
            " ORDER BY flagged DESC, at DESC, id DESC"
        )
        if query.limit:
            sql += f" LIMIT {int(query.limit)}"
        with clear_errors(self.path, writing=False):
            if not self._has_table():
                return []
            return [_entry(row) for row in self.db.execute(sql, args).fetchall()]

    def entry(self, entry_id: int, reader: str = "public") -> AuditEntry | None:
        """One entry by id, or None when there is none or `reader` may not see it."""
        sql = f"SELECT {_COLUMNS} FROM audit WHERE id = ?"
        args: list[object] = [entry_id]
        if reader != "staff":
            sql += " AND audience = 'public'"
        with clear_errors(self.path, writing=False):
            if not self._has_table():
                return None
            row = self.db.execute(sql, args).fetchone()
        return _entry(row) if row else None


def _where(query: AuditQuery) -> tuple[str, list[object]]:
    clauses: list[str] = ["1"]
    args: list[object] = []
    if query.reader != "staff":  # fail closed: anything but staff reads public entries only
        clauses.append("audience = 'public'")
    if query.audience is not None:
        clauses.append("audience = ?")
        args.append(query.audience)
    if query.since:
        clauses.append("at >= ?")
        args.append(query.since)
    if query.until:
        clauses.append("substr(at, 1, 10) <= ?")
        args.append(query.until[:10])
    if query.flagged_only:
        clauses.append("flagged = 1")
    if query.flag:
        # a flag kind (number_not_found) or a whole flag (number_not_found:7)
        clauses.append("((' ' || flags || ' ') LIKE ? ESCAPE '\\'"
                       " OR (' ' || flags || ' ') LIKE ? ESCAPE '\\')")  # fmt: skip
        kind = query.flag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        args += [f"% {kind} %", f"% {kind}:%"]
    return " AND ".join(clauses), args


def _entry(row: tuple) -> AuditEntry:
    entry_id, _at, _who, _audience, _status, record = row
    data = {k: v for k, v in json.loads(record).items() if k in _FIELDS}  # a later field: kept out
    data["passage_ids"] = tuple(data.get("passage_ids") or ())
    data["claims"] = tuple(data.get("claims") or ())
    return AuditEntry(id=int(entry_id), **data)

