"""Writing a ChangeSet into the SQLite index, inside the transaction `SqliteStore.apply` holds.

Every table and index a document reaches is written here and nowhere else: `files`,
`documents`, `chunks`, the FTS5 table `chunks_fts` (heading, text and a column of codes
written without separators, so PW-2200-07 is found typed with or without its dashes) and its
twin `chunks_fts_public`, which holds the chunks of public documents only (BM25's statistics
for a public caller come from it, so staff passages never move a public score),
`embeddings`, `sentence_embeddings` and `instructions` (the spans addressed to AI assistants
that ingest found in each chunk). Removing a source removes its rows from all of them.
`migrate` brings an index of an older schema up to this one.

What it cannot do: it neither begins nor commits (the caller does both, so a failure anywhere
rolls everything back); it trusts the change set (duplicates were refused by the planner).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping
from contextlib import suppress
from datetime import date
from pathlib import Path

import numpy as np

from tether.errors import ConflictError, OlderIndexError
from tether.stores.lexical import lexical_columns
from tether.types import ChangeSet, FileChange, Progress

_DATA_TABLES = (
    "instructions", "sentence_embeddings", "embeddings", "chunks_fts", "chunks_fts_public",
    "chunks", "documents", "files",
)  # fmt: skip
_BATCH = 500  # IDs per IN (...) clause


def write_changes(db: sqlite3.Connection, changes: ChangeSet, step: Progress) -> None:
    """Write `changes` (the order of `ChangeSet`'s docstring); the caller holds the
    transaction. `step("write", done, total)` is called once per source."""
    pause_file = os.environ.get("TETHER_TEST_PAUSE_MID_WRITE")
    total = len(changes.files) + len(changes.removed)
    if changes.rebuild:
        for table in _DATA_TABLES:
            db.execute(f"DELETE FROM {table}")
    for source in changes.removed:
        delete_source(db, source)
    for i, change in enumerate(changes.files):
        step("write", i, total)
        if pause_file and i == len(changes.files) // 2:
            Path(pause_file).write_text("paused")
            time.sleep(120)  # a test kills the process here
        delete_source(db, change.file.source)
        insert(db, change, changes.chunker)
    for state in changes.touched:
        db.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE source = ?",
            (state.size, state.mtime_ns, state.source),
        )
    for v in changes.vectors:
        db.execute(
            "INSERT OR REPLACE INTO embeddings (chunk_id, text_hash, vector) VALUES (?, ?, ?)",
            (v.chunk_id, v.text_hash, _blob(v.vector)),
        )
    db.execute("DELETE FROM embeddings WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)")
    for s in changes.sentence_vectors:
        db.execute("DELETE FROM sentence_embeddings WHERE chunk_id = ?", (s.chunk_id,))
        db.executemany(
            'INSERT INTO sentence_embeddings (chunk_id, n, start, "end", text_hash, vector)'
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                (s.chunk_id, n, a, b, s.text_hash, _blob(row))
                for n, ((a, b), row) in enumerate(zip(s.spans, s.matrix, strict=True))
            ],
        )
    db.execute(
        "DELETE FROM sentence_embeddings WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)"
    )
    set_meta_rows(db, dict(changes.meta))


def rollback(db: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already done so (after a full disk
    it has), never letting an error here hide the one that caused the rollback."""
    if db.in_transaction:
        with suppress(sqlite3.Error):  # the first error is the one to report
            db.execute("ROLLBACK")


def set_meta_rows(db: sqlite3.Connection, values: Mapping[str, str]) -> None:
    """Insert or replace rows of the meta table."""
    db.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value ="
        " excluded.value",
        list(values.items()),
    )


def delete_source(db: sqlite3.Connection, source: str) -> None:
    """Remove what the index holds for one source file (its vectors go with the sweep of
    `write_changes`)."""
    row = db.execute("SELECT doc_id, version FROM files WHERE source = ?", (source,)).fetchone()
    if row is None:
        return
    ids = [
        r[0]
        for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ? AND version = ?", row)
    ]
    for i in range(0, len(ids), _BATCH):
        part = ids[i : i + _BATCH]
        marks = ",".join("?" * len(part))
        db.execute(f"DELETE FROM chunks_fts WHERE chunk_id IN ({marks})", part)
        db.execute(f"DELETE FROM chunks_fts_public WHERE chunk_id IN ({marks})", part)
        db.execute(f"DELETE FROM instructions WHERE chunk_id IN ({marks})", part)
    db.execute("DELETE FROM chunks WHERE doc_id = ? AND version = ?", row)
    db.execute("DELETE FROM documents WHERE doc_id = ? AND version = ?", row)
    db.execute("DELETE FROM files WHERE source = ?", (source,))


def insert(db: sqlite3.Connection, change: FileChange, chunker: str) -> None:
    """Write one file's document (recording the chunker that cut it), chunks, lexical
    entries and file state."""
    m = change.document.meta
    db.execute(
        "INSERT INTO documents (doc_id, version, source, title, doc_type, access, language,"
        " effective_from, effective_to, owner, format, content_hash, text, chunker, review_by)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            m.doc_id, m.version, m.source, m.title, m.doc_type, m.access, m.language,
            _iso(m.effective_from), _iso(m.effective_to), m.owner, m.format,
            change.document.content_hash, change.document.text, chunker, _iso(m.review_by),
        ),
    )  # fmt: skip
    for c in change.chunks:
        db.execute(
            'INSERT INTO chunks (chunk_id, doc_id, version, ordinal, heading_path, anchor,'
            ' page, start, "end", lead, text, anchors)'
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                c.chunk_id, m.doc_id, m.version, c.ordinal,
                json.dumps(list(c.heading_path), ensure_ascii=False), c.anchor, c.page,
                c.start, c.end, c.lead, c.text, json.dumps(list(c.anchors), ensure_ascii=False),
            ),
        )  # fmt: skip
        heading, _, code_col = lexical_columns(m, c)
        tables = ("chunks_fts", "chunks_fts_public") if m.access == "public" else ("chunks_fts",)
        for table in tables:
            db.execute(
                f"INSERT INTO {table} (heading, text, codes, chunk_id) VALUES (?, ?, ?, ?)",
                (heading, c.text, code_col, c.chunk_id),
            )
    _insert_instructions(db, [(i.chunk_id, i.start, i.end) for i in change.instructions])
    f = change.file
    db.execute(
        "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
        (f.source, f.fingerprint, f.size, f.mtime_ns, f.doc_id, f.version),
    )


def _insert_instructions(db: sqlite3.Connection, rows: list[tuple[str, int, int]]) -> None:
    db.executemany('INSERT INTO instructions (chunk_id, start, "end") VALUES (?, ?, ?)', rows)


def check_upgrade(path: Path, version: int, current: int, *, writer: bool) -> None:
    """Refuse an index of another schema unless it is older and opened to be written."""
    if version > current:
        raise ConflictError(
            f"{path} was written by a newer tether (index schema {version}; this one reads"
            f" {current}): upgrade tether, or ingest into a new index"
        )
    if not writer:
        raise OlderIndexError(
            f"{path} was built by an older tether (index schema {version}; this one reads"
            f" {current}): run `tether ingest FOLDER --index {path}` once to upgrade it"
        )


def migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring an index of schema `version` to this one (the caller holds the transaction):
    1 → 2 records the instruction spans of every chunk (`tether.instructions`), as ingest
    now does (the table itself is created with the schema); 2 → 3 adds the audit table, which
    the schema creates (nothing to copy); 3 → 4 adds the `anchors` column (each chunk's one
    anchor until then) and marks every HTML file as changed, so the ingest that upgrades the
    index parses and chunks them again with every anchor they hold (chunks whose text is
    unchanged keep their ID and their vectors); other formats keep their chunks; 4 → 5 fills
    `chunks_fts_public` (created with the schema) with the lexical rows of public documents;
    5 → 6 adds the `review_by` column of documents, empty until the ingest that upgrades the
    index parses every file again (the metadata fields are part of each file's fingerprint,
    `tether.ingest.sync`)."""
    if version < 6:
        columns = {r[1] for r in db.execute("PRAGMA table_info(documents)")}
        if "review_by" not in columns:
            db.execute("ALTER TABLE documents ADD COLUMN review_by TEXT")
    if version < 5:
        db.execute("DELETE FROM chunks_fts_public")
        db.execute(
            "INSERT INTO chunks_fts_public (heading, text, codes, chunk_id)"
            " SELECT f.heading, f.text, f.codes, f.chunk_id FROM chunks_fts f"
            " JOIN chunks c ON c.chunk_id = f.chunk_id"
            " JOIN documents d ON d.doc_id = c.doc_id AND d.version = c.version"
            " WHERE d.access = 'public'"
        )
    if version < 4:
        columns = {r[1] for r in db.execute("PRAGMA table_info(chunks)")}
        if "anchors" not in columns:
            db.execute("ALTER TABLE chunks ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]'")
        db.execute(
            "UPDATE chunks SET anchors = json_array(anchor) WHERE COALESCE(anchor, '') != ''"
        )
        db.execute(
            "UPDATE files SET fingerprint = 'schema-3:' || fingerprint, size = -1 WHERE source IN"
            " (SELECT source FROM documents WHERE format = 'html')"
        )
    if version < 2:
        # lazy: building its confusables table slows start-up (bench/serve/bench_startup.py)
        from tether.instructions import find_instructions

        db.execute("DELETE FROM instructions")
        for chunk_id, text in db.execute("SELECT chunk_id, text FROM chunks").fetchall():
            _insert_instructions(db, [(chunk_id, a, b) for a, b in find_instructions(text)])


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _iso(d: date | None) -> str | None:
    return d.isoformat() if d else None
