"""What both audit tables share (`sqlite_audit`, `postgres_audit`): an entry's row values, the
WHERE clause of an `AuditQuery` (with the backend's placeholder), the retention cut-off, and
an `AuditEntry` read back from a row.

- a reader that is not staff reads public entries only (fail closed), in the query itself, so
  not even a count of staff entries is read;
- `flag` matches a flag kind (number_not_found) or a whole flag (number_not_found:7) in the
  space-separated `flags` column.

What it cannot do: it runs no SQL; the placeholder and the SQL dialect's `TRUE` are the
caller's (both dialects accept `||`, `substr` and `LIKE … ESCAPE`).
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tether.types import AuditEntry, AuditQuery

COLUMNS = "id, at, who, audience, status, record"
_FIELDS = frozenset(f.name for f in dataclasses.fields(AuditEntry)) - {"id"}


def row_values(entry: AuditEntry) -> tuple[Any, ...]:
    """(at, who, audience, status, flagged, flags, record JSON) for an INSERT."""
    body = {k: v for k, v in entry.__dict__.items() if k != "id"}
    return (
        entry.at, entry.who, entry.audience, entry.status, int(bool(entry.flags)),
        " ".join(entry.flags), json.dumps(body, ensure_ascii=False, default=str),
    )  # fmt: skip


def cutoff(retention_days: int) -> str:
    """The `at` before which entries are deleted when keeping `retention_days` days."""
    return (datetime.now(UTC) - timedelta(days=retention_days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def where(query: AuditQuery, mark: str = "?") -> tuple[str, list[object]]:
    """The WHERE clause (without the keyword) and its arguments for `query`."""
    clauses: list[str] = ["1 = 1"]
    args: list[object] = []
    if query.reader != "staff":  # fail closed: anything but staff reads public entries only
        clauses.append("audience = 'public'")
    if query.audience is not None:
        clauses.append(f"audience = {mark}")
        args.append(query.audience)
    if query.since:
        clauses.append(f"at >= {mark}")
        args.append(query.since)
    if query.until:
        clauses.append(f"substr(at, 1, 10) <= {mark}")
        args.append(query.until[:10])
    if query.flagged_only:
        clauses.append("flagged = 1")
    if query.flag:
        clauses.append(f"((' ' || flags || ' ') LIKE {mark} ESCAPE '\\'"
                       f" OR (' ' || flags || ' ') LIKE {mark} ESCAPE '\\')")  # fmt: skip
        kind = query.flag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        args += [f"% {kind} %", f"% {kind}:%"]
    return " AND ".join(clauses), args


def order_by(query: AuditQuery) -> str:
    """Flagged first, then newest first (and the query's limit)."""
    text = " ORDER BY flagged DESC, at DESC, id DESC"
    return text + (f" LIMIT {int(query.limit)}" if query.limit else "")


def entry_of(row: tuple) -> AuditEntry:
    """An AuditEntry from (id, at, who, audience, status, record); a field this tether does not
    know (written by a later one) is left out."""
    entry_id, _at, _who, _audience, _status, record = row
    data = {k: v for k, v in json.loads(record).items() if k in _FIELDS}
    data["passage_ids"] = tuple(data.get("passage_ids") or ())
    data["claims"] = tuple(data.get("claims") or ())
    return AuditEntry(id=int(entry_id), **data)
