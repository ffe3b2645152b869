"""The PostgreSQL store beyond the contract tests: schema migrations (a newer tether
migrates, an older one refuses), the advisory lock between two writers, BM25 that ranks
codes and accents exactly as the SQLite store's FTS5, every retrieval method agreeing with
the SQLite store on the bundled questions, and the `--store` option / TETHER_STORE.

Needs `TETHER_TEST_PG_URL` (scripts/ci/postgres.sh start); skipped with the reason without
it, failed in CI."""

from __future__ import annotations

import json
import time
import uuid
from datetime import date
from pathlib import Path

import psycopg
import pytest
from pg_support import drop_collection, fresh_collection, pg_url
from typer.testing import CliRunner

from tether.cli.main import app
from tether.errors import TetherError
from tether.ingest.sync import sync
from tether.stores import open_store, postgres_db
from tether.stores.postgres import PostgresStore
from tether.stores.postgres_db import parse_url
from tether.types import Filters

runner = CliRunner()
STAFF = Filters(audience="staff")
PUBLIC = Filters(audience="public")


@pytest.fixture
def pg_collection():
    location = fresh_collection()
    yield location
    drop_collection(location)


@pytest.fixture
def pg_database():
    """A database of its own (the schema tests change the schema)."""
    base = pg_url()
    conninfo, _, _ = parse_url(base)
    name = f"tether_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = base.split("?", 1)
    url = parts[0].rsplit("/", 1)[0] + f"/{name}" + (f"?{parts[1]}" if len(parts) > 1 else "")
    yield url
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


SHIPPED = postgres_db.latest_version()  # the schema this tether writes
SHARED_TABLES = ("tether_rate_buckets", "tether_serve_counts", "tether_serve_workers",
                 "tether_revoked_keys")  # schema 7: what the servers share  # fmt: skip


def _before_7(conn: psycopg.Connection) -> None:
    """Drop what schema 7 added (a test taking a database back to an older schema)."""
    for table in SHARED_TABLES:
        conn.execute(f"DROP TABLE {table}")
NEXT = SHIPPED + 1


def _with_migration_2(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = postgres_db.migrations()
    extra = (NEXT, f"{NEXT:03d}_test.sql", "CREATE TABLE tether_test_extra (x integer);")
    monkeypatch.setattr(postgres_db, "migrations", lambda: [*shipped, extra])


def test_the_schema_is_created_migrated_and_refused_by_an_older_tether(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
):
    with pytest.raises(TetherError, match="no tether index in the database"):
        open_store(pg_database)  # a reader never creates the schema
    PostgresStore(pg_database).close()
    conninfo, _, _ = parse_url(pg_database)
    with psycopg.connect(conninfo) as conn:
        found = conn.execute("SELECT version FROM tether_schema ORDER BY 1").fetchall()
        assert found == [(n,) for n in range(1, SHIPPED + 1)]

    _with_migration_2(monkeypatch)  # a newer tether
    older = rf"older tether schema \({SHIPPED}; this tether reads {NEXT}\)"
    with pytest.raises(TetherError, match=older):
        open_store(pg_database)  # a reader does not migrate
    PostgresStore(pg_database).close()  # a writer does
    with psycopg.connect(conninfo) as conn:
        assert [r[0] for r in conn.execute("SELECT version FROM tether_schema ORDER BY 1")] == [
            *range(1, NEXT + 1)
        ]
        assert conn.execute("SELECT to_regclass('tether_test_extra')").fetchone() != (None,)
    open_store(pg_database).close()
    monkeypatch.undo()  # the older tether again

    for args in (["search", "x", "--store", pg_database], ["ingest", ".", "--store", pg_database]):
        done = runner.invoke(app, args)
        assert done.exit_code == 1, done.output
        assert f"newer than this tether reads ({SHIPPED}): upgrade tether" in done.output
        assert "Traceback" not in done.output


def test_a_second_writer_waits_for_the_lock_then_stops_clearly(pg_collection: str):
    writer = PostgresStore(pg_collection, lock_timeout=0.5)
    conninfo, name, _ = parse_url(pg_collection)
    with psycopg.connect(conninfo) as holder:  # another ingest, mid-write
        holder.execute("SELECT pg_advisory_xact_lock(hashtext('tether:' || %s))", (name,))
        began = time.perf_counter()
        with pytest.raises(TetherError, match="another ingest is writing this collection"):
            writer.set_meta({"x": "1"})
        assert 0.4 < time.perf_counter() - began < 10
        assert writer.meta_value("x") is None  # nothing was written
    writer.set_meta({"x": "1"})  # the lock is free again
    assert writer.meta_value("x") == "1"
    other = PostgresStore(pg_collection.replace("collection=", "collection=other-"))
    conninfo, _, _ = parse_url(other.location)
    with psycopg.connect(conninfo) as holder:  # a lock on one collection leaves others free
        holder.execute("SELECT pg_advisory_xact_lock(hashtext('tether:' || %s))", (name,))
        other.set_meta({"y": "2"})
    other.close()
    drop_collection(pg_collection.replace("collection=", "collection=other-"))
    writer.close()


CODES_AND_ACCENTS = {
    "sheet.md": "# Kestrel PW-2200-07 sheet\n\nThe PW-2200-07 pump fits the TR2200. Part PW-2200-07B.",
    "spaced.md": "# Spares\n\nOrder pw 2200 07 or PW220007 from the depot.",
    "other.md": "# Other\n\nThe PW-2200-08 is a different part; 2200 units shipped in 07.",
    "hiver.md": "# Vélo d'hiver\n\nRangez le vélo à l'abri l'été comme l'hiver. Écoles fermées.",
    "velo.md": "# Velo care\n\nA velo needs oiling. Shipping policies and shipped parcels.",
}
QUERIES = [
    "PW-2200-07", "pw220007", "PW 2200 07", "pw-2200-07 pump", "TR2200", "TR-2200",
    "vélo", "velo", "ete", "été hiver", "Ecoles", "ship policy", "shipping policies", "2200",
    "zzz", "", "the of", "PW-2200-08 pump",
]  # fmt: skip


def test_codes_and_accents_rank_exactly_as_in_the_sqlite_store(tmp_path: Path, pg_collection):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, body in CODES_AND_ACCENTS.items():
        (docs / name).write_text(f"---\naccess: public\n---\n{body}\n", encoding="utf-8")
    sqlite = open_store(tmp_path / "index.sqlite", must_exist=False)
    pg = open_store(pg_collection, must_exist=False)
    for store in (sqlite, pg):
        assert sync(store, docs).committed
    for query in QUERIES:
        for filters in (STAFF, PUBLIC):
            a = sqlite.lexical_ranking(query, 10, filters)
            b = pg.lexical_ranking(query, 10, filters)
            assert [c for c, _ in a] == [c for c, _ in b], query
            assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9), query
            assert sqlite.count_lexical(query, filters) == pg.count_lexical(query, filters)
    found = {h.chunk.doc_id for h in pg.search_lexical("pw220007", 10, STAFF)}
    assert {"sheet", "spaced"} <= found and "other" not in found
    assert pg.lexical_ranking("vélo", 5, STAFF) and pg.lexical_ranking("velo", 5, STAFF)
    sqlite.close()
    pg.close()


AUDIENCE_DOCS = {
    "alloys.md": ("public", "# Alloys\n\nZirconium alloys resist corrosion in the pump housing."),
    "pumps.md": ("public", "# Pumps\n\nThe pump housing is cast steel; seals last two years."),
    "seals.md": ("public", "# Seals\n\nReplace the seals of a pump every two years."),
    "valves.md": ("public", "# Valves\n\nA valve of the housing is checked yearly."),
}
STAFF_DOC = ("staff", "# Supplier\n\nOur zirconium supplier charges extra for pump housing seals.")
AUDIENCE_QUERIES = ["zirconium", "zirconium pump", "pump housing seals", "seals two years"]


def _write_docs(folder: Path, docs: dict[str, tuple[str, str]]) -> None:
    for name, (access, body) in docs.items():
        (folder / name).write_text(f"---\naccess: {access}\n---\n{body}\n", encoding="utf-8")


def _scores(store, filters: Filters) -> dict[str, list[tuple[str, float]]]:
    """Per query, the ranking as (doc_id, score) pairs."""
    return {
        q: [(h.chunk.doc_id, h.score) for h in store.search_lexical(q, 10, filters)]
        for q in AUDIENCE_QUERIES
    }


def test_a_staff_passage_never_moves_a_public_score(tmp_path: Path, pg_collection: str):
    """A public search scores with the public chunks' statistics (N, avgdl, each phrase's
    n), so adding a staff document with a rare public word changes no public score; a staff
    search scores with the whole collection's, so its scores move."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _write_docs(docs, AUDIENCE_DOCS)
    pg = open_store(pg_collection, must_exist=False)
    assert sync(pg, docs).committed
    public_before, staff_before = _scores(pg, PUBLIC), _scores(pg, STAFF)
    assert public_before == staff_before  # every chunk is public: the same statistics
    assert public_before["zirconium"] and all(public_before.values())

    _write_docs(docs, {"supplier.md": STAFF_DOC})
    assert sync(pg, docs).committed
    public_after, staff_after = _scores(pg, PUBLIC), _scores(pg, STAFF)
    assert public_after == public_before  # the same chunks, the same scores, to the bit
    assert all("supplier" not in c for q in AUDIENCE_QUERIES for c, _ in public_after[q])
    for query in AUDIENCE_QUERIES:  # a staff search sees the staff chunk and its statistics
        assert any("supplier" in c for c, _ in staff_after[query]), query
        public_ids = dict(public_before[query])
        moved = [s != public_ids[c] for c, s in staff_after[query] if c in public_ids]
        assert moved and all(moved), query

    conninfo, _, _ = parse_url(pg_collection)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT lex_rows, lex_tokens, lex_rows_public, lex_tokens_public,"
            " (SELECT count(*) FROM tether_chunks c WHERE c.collection_id = t.id"
            "  AND c.access = 'public')"
            " FROM tether_collections t WHERE id = %s",
            (pg.cid,),
        ).fetchone()
    assert row is not None and row[2] == row[4] and 0 < row[2] < row[0] and row[3] < row[1]

    public_only = tmp_path / "public"  # FTS5 over the public chunks alone: the same scores
    public_only.mkdir()
    _write_docs(public_only, AUDIENCE_DOCS)
    sqlite = open_store(tmp_path / "index.sqlite", must_exist=False)
    assert sync(sqlite, public_only).committed
    for query in AUDIENCE_QUERIES:
        a, b = sqlite.lexical_ranking(query, 10, STAFF), pg.lexical_ranking(query, 10, PUBLIC)
        assert [c for c, _ in a] == [c for c, _ in b], query
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9), query
    sqlite.close()

    (docs / "supplier.md").unlink()  # removed: the statistics are the public ones again
    assert sync(pg, docs).committed
    assert _scores(pg, STAFF) == public_before == _scores(pg, PUBLIC)
    pg.close()


def test_migration_4_fills_the_public_statistics_of_an_existing_collection(
    tmp_path: Path, pg_database: str
):
    """A collection written under schema 3 (no public statistics) is migrated by the next
    writer: the public statistics are counted from its chunks, and public scores are those
    of a collection written under schema 4."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _write_docs(docs, {**AUDIENCE_DOCS, "supplier.md": STAFF_DOC})
    location = f"{pg_database}?collection=old"
    pg = open_store(location, must_exist=False)
    assert sync(pg, docs).committed
    expected = _scores(pg, PUBLIC)
    pg.close()
    conninfo, _, _ = parse_url(location)
    with psycopg.connect(conninfo) as conn:  # as tether at schema 3 left it
        stats = conn.execute(
            "SELECT lex_rows_public, lex_tokens_public FROM tether_collections"
        ).fetchall()
        conn.execute(
            "ALTER TABLE tether_collections DROP COLUMN lex_rows_public,"
            " DROP COLUMN lex_tokens_public"
        )
        conn.execute("DROP TABLE tether_audit_feedback")  # schema 5 came after
        conn.execute("ALTER TABLE tether_documents DROP COLUMN review_by")  # and 6
        _before_7(conn)  # and 7
        conn.execute("DELETE FROM tether_schema WHERE version >= 4")
    with pytest.raises(TetherError, match="older tether"):
        open_store(location)  # a reader does not migrate
    PostgresStore(location).close()  # a writer does
    with psycopg.connect(conninfo) as conn:
        found = conn.execute("SELECT lex_rows_public, lex_tokens_public FROM tether_collections")
        assert found.fetchall() == stats and stats[0][0] > 0
    pg = open_store(location)
    assert _scores(pg, PUBLIC) == expected
    pg.close()


def test_migration_5_adds_feedback_beside_an_existing_audit(pg_database: str):
    """A database at schema 4 (an audit, no feedback table) is refused to a reader and
    migrated by the next writer; its audit entries stay and take feedback."""
    from tether.stores import open_audit_log
    from tether.types import AuditEntry, AuditQuery, Feedback

    location = f"{pg_database}?collection=old"
    PostgresStore(location).close()
    log = open_audit_log(location, writable=True)
    entry_id = log.record(AuditEntry("2026-11-30T10:00:00Z", "desk", "public", "q?", "answered"))
    log.close()
    conninfo, _, _ = parse_url(location)
    with psycopg.connect(conninfo) as conn:  # as tether at schema 4 left it
        conn.execute("DROP TABLE tether_audit_feedback")
        conn.execute("ALTER TABLE tether_documents DROP COLUMN review_by")  # schema 6 came after
        _before_7(conn)  # and 7
        conn.execute("DELETE FROM tether_schema WHERE version >= 5")
    with pytest.raises(TetherError, match="older tether"):
        open_audit_log(location)  # a reader does not migrate
    PostgresStore(location).close()  # a writer does
    log = open_audit_log(location, writable=True)
    log.add_feedback(Feedback(entry_id, "2026-11-30T11:00:00Z", "desk", "wrong", "no"))
    (found,) = log.feedback(AuditQuery(reader="staff"))
    assert (found.entry_id, found.note, found.entry.question) == (entry_id, "no", "q?")
    log.close()


def test_migration_6_adds_review_dates_that_the_next_ingest_reads(
    tmp_path: Path, pg_database: str, monkeypatch: pytest.MonkeyPatch
):
    """A collection written at schema 5 (no review_by column; fingerprints that hash the
    metadata fields of then) is refused to a reader and migrated by the next writer; the
    ingest that migrates it parses every file again once and reads the review dates the files
    already carried, keeping every chunk ID."""
    from tether.ingest import sync as sync_module

    docs = tmp_path / "docs"
    docs.mkdir()
    _write_docs(docs, {**AUDIENCE_DOCS, "supplier.md": STAFF_DOC})
    first = sorted(docs.iterdir())[0]
    first.write_text(first.read_text().replace("---\n", "---\nreview_by: 2026-06-30\n", 1))
    location = f"{pg_database}?collection=old"
    then = tuple(f for f in sync_module.META_FIELDS if f != "review_by")
    monkeypatch.setattr(sync_module, "META_FIELDS", then)  # the fingerprints of then
    pg = open_store(location, must_exist=False)
    assert sync(pg, docs).committed
    chunk_ids = sorted(c.chunk_id for c in pg.chunks())
    pg.close()
    monkeypatch.undo()
    conninfo, _, _ = parse_url(location)
    with psycopg.connect(conninfo) as conn:  # as tether at schema 5 left it
        conn.execute("ALTER TABLE tether_documents DROP COLUMN review_by")
        _before_7(conn)  # schema 7 came after
        conn.execute("DELETE FROM tether_schema WHERE version >= 6")
    with pytest.raises(TetherError, match="older tether"):
        open_store(location)  # a reader does not migrate
    pg = open_store(location, must_exist=False, writable=True)  # as ingest opens it
    assert all(d.meta.review_by is None for d in pg.documents())  # not read yet
    report = sync(pg, docs)
    assert sorted(report.updated) == sorted(p.name for p in docs.iterdir())
    dated = {d.meta.source: d.meta.review_by for d in pg.documents() if d.meta.review_by}
    assert dated == {first.name: date(2026, 6, 30)}
    assert sorted(c.chunk_id for c in pg.chunks()) == chunk_ids
    assert not sync(pg, docs).updated  # once only
    pg.close()


@pytest.mark.slow
def test_every_method_agrees_between_the_stores_on_the_bundled_questions(demo_store, demo_pg_store):
    """recall@5 of every method is the same on both stores (BM25 is the same formula on the
    same tokens; the vectors are the same; only ties and float rounding may differ)."""
    from tether.app import retriever_for
    from tether.evaluation.questions import load_questions
    from tether.evaluation.retrieval_eval import run_retrieval_eval
    from tether.retrieval.retriever import METHODS

    questions = load_questions()
    methods = [m for m in METHODS if m != "deep"]  # deep reads what rerank ranks: same inputs
    results = [
        run_retrieval_eval(s, retriever_for(s), questions, methods, 5)
        for s in (demo_store, demo_pg_store)
    ]
    for m in methods:
        a, b = (r.aggregates[m]["overall"] for r in results)
        assert abs(a["recall"] - b["recall"]) <= 1e-9, (m, a["recall"], b["recall"])
        tops = [{r.id: r.top for r in res.rows if r.method == m} for res in results]
        same = sum(tops[0][q] == tops[1].get(q) for q in tops[0])
        assert same >= 0.95 * len(tops[0]), (m, same, len(tops[0]))


def test_the_store_option_and_variable_select_the_postgres_store(
    tmp_path: Path, pg_collection: str, monkeypatch: pytest.MonkeyPatch
):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\naccess: public\n---\n# Parcels\n\nParcels wait 5 days.\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_STORE", raising=False)
    done = runner.invoke(
        app, ["ingest", str(docs), "--store", pg_collection, "--no-embed", "--json"]
    )
    assert done.exit_code == 0, done.output
    assert not (docs / ".tether").exists()  # nothing written beside the folder
    found = runner.invoke(app, ["search", "parcels", "--store", pg_collection, "--json"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["doc_id"] == "a"
    monkeypatch.setenv("TETHER_STORE", pg_collection)
    listed = runner.invoke(app, ["documents", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [d["doc_id"] for d in json.loads(listed.stdout)] == ["a"]
    bad = runner.invoke(app, ["search", "parcels", "--store", "mysql://x/y"])
    assert bad.exit_code == 2 and "postgresql://" in bad.output
    monkeypatch.setenv("TETHER_STORE", "not-a-url")
    wrong = runner.invoke(app, ["search", "parcels"])
    assert wrong.exit_code == 1 and "TETHER_STORE" in wrong.output


def test_a_password_is_never_shown_and_a_bad_server_is_one_line(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
):
    from tether.config import describe_settings

    monkeypatch.setenv("TETHER_STORE", "postgresql://me:s3cret@db.example/tether")
    rows = {r.variable: r.value for r in describe_settings()}
    assert rows["TETHER_STORE"] == "postgresql://me:****@db.example/tether"
    monkeypatch.setenv("TETHER_STORE", "mysql://me:s3cret@db.example/tether")
    done = runner.invoke(app, ["search", "x"])
    assert done.exit_code == 1 and "TETHER_STORE" in done.output and "s3cret" not in done.output
    _, name, shown = parse_url("postgresql://me:s3cret@127.0.0.1:1/db?sslmode=disable")
    assert name == "default" and "s3cret" not in shown and "me@127.0.0.1:1" in shown
    with pytest.raises(TetherError, match="cannot connect to PostgreSQL") as caught:
        PostgresStore("postgresql://me:s3cret@127.0.0.1:1/db?collection=x")
    assert "s3cret" not in str(caught.value)
    with pytest.raises(TetherError, match="not a valid name"):
        parse_url("postgresql://h/db?collection=a;drop")


def test_without_a_server_the_postgres_tests_skip_but_fail_in_ci(monkeypatch: pytest.MonkeyPatch):
    from pg_support import VARIABLE

    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="in CI the PostgreSQL tests must run"):
        pg_url()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match=f"{VARIABLE} is not set"):
        pg_url()
