"""The SQLite index: sync (incremental, atomic, forgiving), deletions, filters, lexical search."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from tether.errors import TetherError
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore, fts_query
from tether.text import embed_text
from tether.types import ChunkerConfig, Filters

STAFF = Filters(as_of=None, audience="staff")


def md(doc_id: str, version: str, body: str, **meta: str) -> str:
    fields = {"doc_id": doc_id, "version": version, "title": doc_id.replace("-", " ").title()}
    fields.update(meta)
    front = "\n".join(f"{k}: {v!r}" if k == "version" else f"{k}: {v}" for k, v in fields.items())
    return f"---\n{front}\n---\n\n{textwrap.dedent(body).strip()}\n"


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "returns-v3.md").write_text(
        md(
            "returns-policy",
            "3",
            """
            # Returns policy
            ## Return window
            You can return items within 30 days of delivery.
            ## Refunds
            Refunds go back to the original payment method.
            """,
            access="public",
            effective_from="2025-01-01",
            effective_to="2026-02-28",
        )
    )
    (folder / "returns-v4.md").write_text(
        md(
            "returns-policy",
            "4",
            """
            # Returns policy
            ## Return window
            You can return items within 45 days of delivery.
            ## Refunds
            Refunds go back to the original payment method.
            """,
            access="public",
            effective_from="2026-03-01",
        )
    )
    (folder / "parts.md").write_text(
        md(
            "parts-catalogue",
            "1",
            """
            # Parts
            ## Derailleur hanger
            The replacement hanger for the Trailhead frame is part PW-2200-07.
            ## Garantie
            La garantie couvre les défauts de fabrication pendant deux ans.
            """,
            access="public",
        )
    )
    (folder / "fraud.md").write_text(
        md(
            "fraud-checks",
            "1",
            """
            # Fraud checks
            ## When to escalate
            Escalate any refund above 500 dollars to a manager.
            """,
            access="staff",
        )
    )
    return folder


def snapshot(path: Path) -> dict[str, list]:
    db = sqlite3.connect(path)
    tables = ["files", "documents", "chunks", "embeddings", "meta"]
    snap = {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    snap["fts"] = sorted(db.execute("SELECT chunk_id, text FROM chunks_fts").fetchall())
    snap["meta"] = [r for r in snap["meta"] if r[0] != "updated_at"]
    db.close()
    return snap


def test_ingest_then_search_with_filters(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    report = sync(store, collection)
    assert len(report.added) == 4 and not report.problems
    hits = store.search_lexical("return window days", 5, Filters(date(2026, 11, 30), "public"))
    assert hits[0].chunk.doc_id == "returns-policy" and hits[0].chunk.version == "4"
    assert all(h.chunk.version != "3" for h in hits if h.chunk.doc_id == "returns-policy")
    old = store.search_lexical("return window days", 5, Filters(date(2025, 6, 1), "public"))
    assert {h.chunk.version for h in old if h.chunk.doc_id == "returns-policy"} == {"3"}
    # the public never sees a staff chunk; staff does
    public = store.search_lexical("escalate refund manager", 5, Filters(None, "public"))
    assert public and all(h.chunk.meta.access == "public" for h in public)
    assert (
        store.search_lexical("escalate refund manager", 5, STAFF)[0].chunk.doc_id == "fraud-checks"
    )


def test_codes_are_exact_and_accents_fold(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    for query in ("PW-2200-07", "pw220007", "which part is PW-2200-07?"):
        hits = store.search_lexical(query, 3, STAFF)
        assert hits and "PW-2200-07" in hits[0].chunk.text, query
    assert not store.search_lexical("PW-2200-08", 3, STAFF)
    for query in ("défauts de fabrication", "defauts de fabrication", "GARANTIE"):
        hits = store.search_lexical(query, 3, STAFF)
        assert hits and hits[0].chunk.section == "Garantie", query


def test_fts_query_never_passes_syntax_through():
    assert fts_query('"; DROP TABLE chunks; -- NEAR(') == '"drop" OR "table" OR "chunks" OR "near"'
    assert fts_query("the of and") == ""


def test_second_ingest_reads_nothing_and_reports_unchanged(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    before = snapshot(store.path)
    report = sync(store, collection)
    assert len(report.unchanged) == 4 and not (report.added or report.updated or report.removed)
    assert snapshot(store.path) == before


def test_touched_file_with_same_bytes_is_unchanged(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    f = collection / "parts.md"
    os.utime(f, (time.time() + 100, time.time() + 100))
    report = sync(store, collection)
    assert report.unchanged and not report.updated


def test_edit_keeps_ids_of_other_sections_and_delete_reaches_every_table(
    tmp_path: Path, collection: Path
):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    before = {c.section: c.chunk_id for c in store.chunks("parts-catalogue")}
    f = collection / "parts.md"
    f.write_text(f.read_text().replace("deux ans", "trois ans"))
    report = sync(store, collection)
    assert report.updated == ("parts.md",)
    after = {c.section: c.chunk_id for c in store.chunks("parts-catalogue")}
    assert after["Derailleur hanger"] == before["Derailleur hanger"]
    assert after["Garantie"] != before["Garantie"]

    (collection / "fraud.md").unlink()
    report = sync(store, collection)
    assert report.removed == ("fraud.md",)
    db = sqlite3.connect(store.path)
    for table, col in (("documents", "doc_id"), ("chunks", "doc_id"), ("files", "doc_id")):
        n = db.execute(f"SELECT COUNT(*) FROM {table} WHERE {col} = 'fraud-checks'").fetchone()[0]
        assert n == 0, table
    fts = db.execute("SELECT COUNT(*) FROM chunks_fts WHERE text LIKE '%Escalate%'").fetchone()[0]
    assert fts == 0


def test_bad_files_are_reported_and_the_rest_syncs(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    good = collection / "parts.md"
    good_before = snapshot(store.path)["chunks"]
    (collection / "empty.md").write_bytes(b"")
    (collection / "binary.md").write_bytes(bytes(range(256)) * 10)
    # a UTF-8 BOM then Latin-1 bytes (undeclared Latin-1 alone is detected and read)
    (collection / "latin1.txt").write_bytes(b"\xef\xbb\xbf" + "caf\xe9 cr\xe8me".encode("latin-1"))
    (collection / "badyaml.md").write_text("---\ntitle: [unclosed\n---\n\nbody\n")
    (collection / "baddate.md").write_text(md("x", "1", "# X\ntext", effective_from="soon"))
    (collection / "backwards.md").write_text(
        md("y", "1", "# Y\ntext", effective_from="2026-05-01", effective_to="2026-01-01")
    )
    (collection / "new.md").write_text(md("brand-new", "1", "# New\n## Hello\nfresh text"))
    # an edit that breaks a file already indexed keeps its previous version
    good.write_text("---\ntitle: [broken\n---\n")
    report = sync(store, collection)
    reasons = {p.source: p.reason for p in report.problems}
    assert set(reasons) == {
        "empty.md",
        "binary.md",
        "latin1.txt",
        "badyaml.md",
        "baddate.md",
        "backwards.md",
        "parts.md",
    }
    assert report.added == ("new.md",)
    assert "parts.md" in report.unchanged
    assert [r for r in snapshot(store.path)["chunks"] if r[1] == "parts-catalogue"] == [
        r for r in good_before if r[1] == "parts-catalogue"
    ]
    assert store.chunks("brand-new")


def test_strict_writes_nothing_when_a_file_is_bad(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    before = snapshot(store.path)
    (collection / "empty.md").write_bytes(b"")
    (collection / "new.md").write_text(md("brand-new", "1", "# New\ntext"))
    report = sync(store, collection, strict=True)
    assert not report.committed and report.problems
    assert snapshot(store.path) == before


def test_duplicate_doc_id_and_version_is_refused(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    before = snapshot(store.path)
    (collection / "copy.md").write_text(
        md("returns-policy", "4", "# Copy\n## Return window\n90 days!", access="public")
    )
    report = sync(store, collection)
    assert [p.source for p in report.problems] == ["copy.md"]
    assert "also in returns-v4.md" in report.problems[0].reason
    # nothing of the index changed; only the health report's record names the file
    health = {"ingest:state", "generation"}
    after = snapshot(store.path)
    assert {**after, "meta": [r for r in after["meta"] if r[0] not in health]} == {
        **before, "meta": [r for r in before["meta"] if r[0] not in health]
    }
    state = json.loads(store.meta_value("ingest:state") or "{}")
    assert list(state["problems"]) == ["copy.md"]


def test_different_chunker_needs_rebuild(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    sync(store, collection)
    with pytest.raises(TetherError, match="--rebuild"):
        sync(store, collection, chunker=ChunkerConfig("fixed", 50))
    report = sync(store, collection, chunker=ChunkerConfig("fixed", 50), rebuild=True)
    assert len(report.added) == 4
    assert store.info()["chunker"] == "fixed(max_words=50)"


class CountingEmbedder:
    name = "counting"
    version = "1"
    dim = 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_passages(self, texts):
        self.seen.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    def embed_queries(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_only_new_or_changed_chunks_are_embedded(tmp_path: Path, collection: Path):
    store = SqliteStore(tmp_path / "index.sqlite")
    emb = CountingEmbedder()
    sync(store, collection, embedder=emb)
    first = len(emb.seen)
    assert store.info()["chunks"] == store.info()["vectors"]
    # a text that stands twice (a section two versions share) is embedded once
    assert first == len({embed_text(c) for c in store.chunks()}) < store.info()["chunks"]
    sync(store, collection, embedder=emb)
    assert len(emb.seen) == first
    f = collection / "parts.md"
    f.write_text(f.read_text().replace("deux ans", "trois ans"))
    sync(store, collection, embedder=emb)
    assert len(emb.seen) == first + 1  # only the edited section
    ids, matrix = store.vectors()
    assert matrix.shape == (store.info()["chunks"], 4) and set(ids) == {
        c.chunk_id for c in store.chunks()
    }


def kill_mid_write(index: Path, collection: Path, flag: Path, setup: str = "") -> None:
    """Run a sync of `collection` into `index` in another process and kill it (SIGKILL)
    halfway through its write; `setup` is Python run on the store `s` first."""
    env = {**os.environ, "TETHER_TEST_PAUSE_MID_WRITE": str(flag)}
    code = (
        "from tether.ingest.sync import sync; from tether.stores import open_store;"
        f" s = open_store({str(index)!r}, writable=True); {setup or 'pass'};"
        f" sync(s, {str(collection)!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.time() + 60
        while not flag.exists():
            assert proc.poll() is None, "sync ended before pausing"
            assert time.time() < deadline, "sync never reached the write phase"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_kill_mid_sync_leaves_index_as_it_was(tmp_path: Path, collection: Path):
    index = tmp_path / "index.sqlite"
    sync(SqliteStore(index), collection)
    before = snapshot(index)
    for i in range(6):
        (collection / f"extra{i}.md").write_text(
            md(f"extra-{i}", "1", f"# Extra {i}\n## S\ntext {i}")
        )
    (collection / "parts.md").unlink()
    kill_mid_write(index, collection, tmp_path / "paused")
    assert snapshot(index) == before
    # and the next sync completes normally
    report = sync(SqliteStore(index), collection)
    assert len(report.added) == 6 and report.removed == ("parts.md",)


def test_missing_folder_and_missing_index_are_clear(tmp_path: Path):
    with pytest.raises(TetherError, match="no such folder"):
        sync(SqliteStore(tmp_path / "i.sqlite"), tmp_path / "nope")
    with pytest.raises(TetherError, match="tether ingest"):
        SqliteStore(tmp_path / "missing.sqlite", create=False)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(TetherError, match="not a tether index"):
        SqliteStore(junk)


def test_the_generation_is_persisted_and_a_sync_that_changes_nothing_keeps_it(
    tmp_path: Path, collection: Path
):
    store = SqliteStore(tmp_path / "index.sqlite")
    assert store.generation() == 0
    sync(store, collection)
    moved = store.generation()
    assert moved > 0 and SqliteStore(store.path).generation() == moved
    sync(store, collection)
    assert store.generation() == moved
    store.set_gate_floors({"bm25": 0.25})
    assert SqliteStore(store.path).meta_value("gate_floor:bm25") == "0.25"
    assert store.generation() == moved + 1


def test_an_apply_that_changes_vectors_removes_the_cached_hnsw_graph(
    tmp_path: Path, collection: Path
):
    pytest.importorskip("faiss")
    store = SqliteStore(tmp_path / "index.sqlite", ann="hnsw")
    sync(store, collection, embedder=CountingEmbedder())
    store.search_dense(np.ones(4, dtype=np.float32) / 2, 1, STAFF)
    assert len(list(tmp_path.glob("index.sqlite.hnsw-*"))) == 1
    (collection / "fraud.md").unlink()
    sync(store, collection, embedder=CountingEmbedder())
    assert not list(tmp_path.glob("index.sqlite.hnsw-*"))


def test_an_index_of_schema_5_reads_without_review_dates_until_the_ingest_that_upgrades_it(
    tmp_path: Path, collection: Path, monkeypatch: pytest.MonkeyPatch
):
    """An index written before `review_by` (schema 5: no column; fingerprints that hash the
    metadata fields of then) is served as it is, with no review dates; the ingest that
    migrates it (schema 6) parses every file again once and reads the review dates the files
    already carried, keeping every chunk ID and vector; the next ingest reads nothing."""
    from tether.ingest import sync as sync_module
    from tether.stores.sqlite import SCHEMA_VERSION

    v4 = collection / "returns-v4.md"
    v4.write_text(v4.read_text().replace("access:", "review_by: 2026-06-30\naccess:"))
    index = tmp_path / "index.sqlite"
    emb = CountingEmbedder()
    then = tuple(f for f in sync_module.META_FIELDS if f != "review_by")
    monkeypatch.setattr(sync_module, "META_FIELDS", then)  # the fingerprints of then
    store = SqliteStore(index)
    sync(store, collection, embedder=emb)
    chunk_ids = sorted(c.chunk_id for c in store.chunks())
    store.close()
    monkeypatch.undo()
    with sqlite3.connect(index) as db:  # the documents table as schema 5 had it
        db.execute("ALTER TABLE documents DROP COLUMN review_by")
        db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    db.close()

    reader = SqliteStore(index, create=False, writable=False)  # served as it is
    assert [m.review_by for m in reader.versions("returns-policy")] == [None, None]
    reader.close()
    assert SCHEMA_VERSION == 6
    writer = SqliteStore(index)  # as ingest opens it: migrated
    assert writer.meta_value("schema_version") == "6"
    embedded = len(emb.seen)
    report = sync(writer, collection, embedder=emb)
    assert sorted(report.updated) == sorted(p.name for p in collection.iterdir())
    assert [m.review_by for m in writer.versions("returns-policy")] == [None, date(2026, 6, 30)]
    assert sorted(c.chunk_id for c in writer.chunks()) == chunk_ids
    assert len(emb.seen) == embedded  # no chunk embedded again
    assert not sync(writer, collection, embedder=emb).updated  # once only
    writer.close()
