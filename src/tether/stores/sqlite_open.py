"""Opening a SQLite index safely, and SQLite's errors as one clear line each.

- `connect(path, ...)` opens the file read-only (SQLite URI `mode=ro`: nothing is ever created
  or written through that connection) unless asked to write, recognises a tether index by its
  schema (a `meta` table holding `schema_version`, or only tether's own tables in an index
  created but not written yet) and refuses anything else, a 0-byte file included, before a
  single table is created in it. A write left half-done by a killed process (a hot journal) is
  undone first, as SQLite itself would on any open, so a read after a crash sees the last
  committed generation.
- `clear_errors(path)` turns a `sqlite3.Error` into a `TetherError` saying what happened and
  what to do: the write lock held by another ingest past the bounded wait (IndexLockedError),
  a full disk, a read-only file or folder (UnwritableError), a damaged file (UnavailableError,
  as is every refusal of a file here: missing, not an index, empty). SQLite rolls the transaction back,
  so the index stays as it was. The messages name the path: the CLI prints them, a server
  answers with the class's `public` sentence and logs them (`tether.errors`).
- `check_intact(path)` reads every page (`PRAGMA quick_check`): `tether serve` refuses a
  damaged index as it starts, and a server checks again before it reports ready after a
  request found its index unusable.
- `set_aside_for_rebuild(path, version)`: for `ingest --rebuild`, a damaged file (or an index
  of another schema version) is renamed `<name>.damaged` (`<name>.schema-<v>`) so a new index
  can be built in its place.

What it cannot do: it does not repair a damaged index (`--rebuild` builds a new one); it cannot
tell which other process holds the lock; a file that is not a SQLite file at all is refused,
never replaced.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from urllib.parse import quote

from tether.config import DEFAULT_LOCK_TIMEOUT as LOCK_TIMEOUT
from tether.errors import IndexLockedError, TetherError, UnavailableError, UnwritableError

_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_READ_ONLY = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM}
_CORE = frozenset({"meta", "files", "documents", "chunks"})  # what every tether schema has
_READONLY_ROLLBACK = 776  # SQLITE_READONLY_ROLLBACK: a hot journal a read-only open can't undo


def uri(path: Path, mode: str) -> str:
    """The SQLite URI of `path` opened with `mode` (ro, rw or rwc)."""
    return f"file:{quote(str(path.absolute()))}?mode={mode}"


@cache
def tether_tables(schema: str) -> frozenset[str]:
    """The tables `schema` creates (FTS5's shadow tables included)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(schema)
        return frozenset(r[0] for r in db.execute("SELECT name FROM sqlite_master"))
    finally:
        db.close()


def connect(
    path: Path, *, schema: str, writable: bool, create: bool, timeout: float = LOCK_TIMEOUT
) -> sqlite3.Connection:
    """A connection to the tether index at `path` (see the module docstring); a missing file
    is an error unless `create` (which implies `writable`)."""
    if not path.exists() and not create:
        raise UnavailableError(f"no index at {path}: run `tether ingest FOLDER` first")
    if path.exists() and not path.is_file():
        raise UnavailableError(f"{path} is not a file: pass the index file with --index")
    writable = writable or create
    if writable:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UnavailableError(f"cannot create the folder of {path}: {exc.strerror}") from None
    with clear_errors(path, writing=writable):
        db = _open(path, writable, create, timeout)
        try:
            _check_kind(db, path, schema, writable)
        except BaseException:
            db.close()
            raise
    return db


def _open(path: Path, writable: bool, create: bool, timeout: float) -> sqlite3.Connection:
    mode = "rwc" if create else "rw" if writable else "ro"
    db = sqlite3.connect(uri(path, mode), uri=True, isolation_level=None, timeout=timeout)
    try:
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        db.close()
        if getattr(exc, "sqlite_errorcode", None) != _READONLY_ROLLBACK:
            raise
        undo_interrupted_write(path, timeout)
        db = sqlite3.connect(uri(path, mode), uri=True, isolation_level=None, timeout=timeout)
    return db


def undo_interrupted_write(path: Path, timeout: float = LOCK_TIMEOUT) -> None:
    """Roll back the write a killed process left half-done (SQLite does so on the first read
    of a connection that may write); the index returns to its last committed generation."""
    try:
        fixer = sqlite3.connect(uri(path, "rw"), uri=True, timeout=timeout)
        try:
            fixer.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            fixer.close()
    except sqlite3.Error as exc:
        raise UnavailableError(
            f"{path} holds a write that was interrupted and cannot be undone here ({exc}):"
            " run `tether ingest` where the index and its folder can be written"
        ) from None


def _check_kind(db: sqlite3.Connection, path: Path, schema: str, writable: bool) -> None:
    """Refuse a file that is not a tether index (and, read-only, an empty one)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    if not tables:
        if writable:
            return  # a new (or 0-byte) file: the caller creates the schema
        raise UnavailableError(
            f"{path} is empty, not a tether index: build one with"
            f" `tether ingest FOLDER --index {path}`"
        )
    ours = tether_tables(schema)
    if _versioned(db, tables) or _unwritten(db, tables, ours):
        return
    foreign = ", ".join(sorted(tables - ours)[:3])
    what = f"with other tables: {foreign}" if foreign else "without tether's tables"
    raise UnavailableError(
        f"{path} is not a tether index (a SQLite file {what}): pass the index that"
        " `tether ingest` built"
    )


def set_aside_for_rebuild(path: Path, schema_version: str) -> Path | None:
    """For a rebuild: when `path` is a SQLite file whose content is damaged, or a tether index
    of another schema version, rename it `<name>.damaged` (or `<name>.schema-<v>`) and return
    the new name; None when it is sound, missing, or not SQLite (refused later, never moved)."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    suffix = None
    try:
        db = sqlite3.connect(uri(path, "rw"), uri=True, isolation_level=None)
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                suffix = "damaged"
            else:
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
                version = _schema_version(db) if _versioned(db, tables) else None
                if version is not None and version != schema_version:
                    suffix = f"schema-{quote(version, safe='')[:20]}"
                elif version is not None and not _numbers_ok(db):
                    suffix = "damaged"
        finally:
            db.close()
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_CORRUPT:
            return None  # not SQLite at all, locked, or unreadable: the open says why
        suffix = "damaged"
    if suffix is None:
        return None
    aside = path.with_name(f"{path.name}.{suffix}")
    path.replace(aside)
    for extra in ("-journal", "-wal", "-shm"):
        path.with_name(path.name + extra).unlink(missing_ok=True)
    return aside


def _versioned(db: sqlite3.Connection, tables: set[str]) -> bool:
    """Whether the file has tether's core tables and a schema_version in its meta table."""
    return tables >= _CORE and _schema_version(db) is not None


def _unwritten(db: sqlite3.Connection, tables: set[str], ours: frozenset[str]) -> bool:
    """Whether the file is a tether index created but never written (only tether's tables,
    a meta table of tether's shape, no schema_version yet)."""
    columns = {r[1] for r in db.execute("PRAGMA table_info(meta)")}
    return tables <= ours and columns == {"key", "value"} and _schema_version(db) is None


def _numbers_ok(db: sqlite3.Connection) -> bool:
    """Whether the meta values the store reads as numbers are whole numbers."""
    rows = db.execute("SELECT value FROM meta WHERE key IN ('generation', 'embedder_dim')")
    return all(str(v).strip().lstrip("-").isdigit() for (v,) in rows)


def _schema_version(db: sqlite3.Connection) -> str | None:
    """The `schema_version` in the meta table, or None (no such table, row or columns)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table, or one with other columns
        return None
    return None if row is None else str(row[0])


def meta_int(value: object, key: str, path: Path) -> int:
    """A whole number the index keeps in its meta table (anything else: a damaged index)."""
    try:
        return int(str(value))
    except ValueError:
        raise UnavailableError(
            f"the index {path} is damaged (its {key} is {str(value)[:20]!r}, not a number):"
            " re-ingest with `tether ingest FOLDER --rebuild`"
        ) from None


def check_intact(path: Path) -> None:
    """Read every page of the index at `path` (SQLite's `PRAGMA quick_check`: the B-trees,
    the pages' format, the free list; its time grows with the file's size):
    an UnavailableError naming the path and what to do when it is damaged (truncated, pages
    overwritten), as a search that met the damaged pages would say. It does not compare the
    index's content with its folder."""
    with clear_errors(path, writing=False):
        db = sqlite3.connect(uri(path, "ro"), uri=True, isolation_level=None)
        try:
            found = str(db.execute("PRAGMA quick_check(1)").fetchone()[0])
        finally:
            db.close()
    if found != "ok":  # "*** in database main ***\nPage 9: btreeInitPage() returns ...": one line
        lines = [line.strip() for line in found.splitlines() if not line.startswith("***")]
        raise UnavailableError(
            f"the index {path} is damaged ({'; '.join(filter(None, lines))}): re-ingest with"
            " `tether ingest FOLDER --rebuild` (the damaged file is kept as .damaged)"
        )


@contextmanager
def clear_errors(path: Path, *, writing: bool) -> Iterator[None]:
    """A `sqlite3.Error` inside becomes a `TetherError` with one line saying what to do (of
    the class `error_class` picks)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise error_class(exc, writing)(explain(exc, path, writing=writing)) from exc


def error_class(exc: sqlite3.Error, writing: bool = False) -> type[TetherError]:
    """IndexLockedError (a ConflictError) for a lock another process held too long (busy,
    locked); UnwritableError for a write the disk (full) or the file (read-only) refused;
    else UnavailableError: the file is damaged, on a failing disk, or could not be used for
    another reason. Their messages name the index's path, so a server answers with their
    `public` sentence instead (`tether.errors`)."""
    primary = getattr(exc, "sqlite_errorcode", -1) & 0xFF
    if primary in _BUSY:
        return IndexLockedError
    if writing and (primary == sqlite3.SQLITE_FULL or primary in _READ_ONLY):
        return UnwritableError
    return UnavailableError


def explain(exc: sqlite3.Error, path: Path, *, writing: bool) -> str:
    """What a SQLite error means for the user of the index at `path`, and what to do."""
    code = getattr(exc, "sqlite_errorcode", -1)
    primary = code & 0xFF
    if primary in _BUSY:
        waited = "waited for it" if writing else "it stayed locked"
        return (
            f"another ingest is writing this index ({path}) and {waited} too long:"
            " try again when it has finished (TETHER_LOCK_TIMEOUT sets the wait)"
        )
    if primary == sqlite3.SQLITE_FULL:
        return (
            f"the disk is full: {path} could not be written ({exc}); free some space and run"
            " the ingest again (the index is as it was)"
        )
    if primary in _DAMAGED:
        if code == sqlite3.SQLITE_NOTADB:
            return f"{path} is not a tether index (not a SQLite file: {exc})"
        return (
            f"the index {path} is damaged ({exc}): re-ingest with"
            " `tether ingest FOLDER --rebuild` (the damaged file is kept as .damaged)"
        )
    if code == _READONLY_ROLLBACK:
        return (
            f"{path} holds a write that was interrupted: run `tether ingest` where the index"
            " can be written to undo it"
        )
    if primary in _READ_ONLY:
        return (
            f"cannot write {path}: the file or its folder is read-only ({exc}); make both"
            " writable or pass another --index"
        )
    if primary == sqlite3.SQLITE_IOERR:
        return f"reading or writing {path} failed ({exc}): check the disk, then try again"
    return f"the index {path} could not be used ({exc})"
