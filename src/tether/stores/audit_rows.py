"""What both audit tables share (`sqlite_audit`, `postgres_audit`): an entry's row values, the
WHERE clause of an `AuditQuery` (with the backend's placeholder), the retention cut-off, an
`AuditEntry` read back from a row, and the same for a feedback row joined with its entry.

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

from tether.types import AuditEntry, AuditQuery, Feedback

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


def where(
    query: AuditQuery, mark: str = "?", entry: str = "", dated: str = ""
) -> tuple[str, list[object]]:
    """The WHERE clause (without the keyword) and its arguments for `query`; `entry` prefixes
    the entry's columns and `dated` the `at` the dates apply to (a feedback listing joins the
    entry as "a." and dates the feedback, "f.")."""
    clauses: list[str] = ["1 = 1"]
    args: list[object] = []
    if query.reader != "staff":  # fail closed: anything but staff reads public entries only
        clauses.append(f"{entry}audience = 'public'")
    if query.audience is not None:
        clauses.append(f"{entry}audience = {mark}")
        args.append(query.audience)
    if query.since:
        clauses.append(f"{dated}at >= {mark}")
        args.append(query.since)
    if query.until:
        clauses.append(f"substr({dated}at, 1, 10) <= {mark}")
        args.append(query.until[:10])
    if query.flagged_only:
        clauses.append(f"{entry}flagged = 1")
    if query.flag:
        flags = f"(' ' || {entry}flags || ' ')"
        clauses.append(f"({flags} LIKE {mark} ESCAPE '\\' OR {flags} LIKE {mark} ESCAPE '\\')")
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


FEEDBACK_COLUMNS = (
    "f.id, f.entry_id, f.at, f.who, f.verdict, f.note, f.chunk_id,"
    " a.id, a.at, a.who, a.audience, a.status, a.record"
)
"""A feedback row (table alias f) joined with its entry (alias a), for `feedback_of`."""


def feedback_of(row: tuple) -> Feedback:
    """A Feedback, its entry attached, from a row of `FEEDBACK_COLUMNS`."""
    fid, entry_id, at, who, verdict, note, chunk_id, *entry = row
    return Feedback(
        entry_id=int(entry_id), at=at, who=who, verdict=verdict, note=note, chunk_id=chunk_id,
        id=int(fid), entry=entry_of(tuple(entry)),
    )  # fmt: skip


def feedback_order(query: AuditQuery) -> str:
    """Newest feedback first (and the query's limit)."""
    text = " ORDER BY f.at DESC, f.id DESC"
    return text + (f" LIMIT {int(query.limit)}" if query.limit else "")


def feedback_values(feedback: Feedback) -> tuple[Any, ...]:
    """(entry_id, at, who, verdict, note, chunk_id) for an INSERT."""
    f = feedback
    return (f.entry_id, f.at, f.who, f.verdict, f.note, f.chunk_id)
