"""The audit of answered questions: what `Workspace.ask` records (CLI and Python API), the
SQLite audit table (filters, flagged first, retention, a public reader never sees a staff
entry), the upgrade of a schema-2 index (still read as it is; the table added on write), a
write lock held by an ingest (the answer is still returned, the failure is on stderr), the
settings that turn it off, and `tether audit` list/show/export."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.cli.main import app
from tether.collection import Collection
from tether.config import settings_from_mapping
from tether.errors import TetherError
from tether.providers.extractive import ExtractiveProvider
from tether.stores import open_audit_log, open_store
from tether.stores.sqlite import SCHEMA_VERSION, SqliteStore
from tether.types import AuditEntry, AuditQuery

runner = CliRunner()
STAFF_TEXT = "Staff may approve refunds up to 250 dollars without a manager."


@pytest.fixture
def docs(tmp_path: Path, clean_env: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "delivery.md").write_text(
        "---\ndoc_id: delivery\nversion: '1'\naccess: public\n---\n# Delivery\n\n"
        "Standard delivery takes 3 to 7 business days.\n"
    )
    (folder / "refunds.md").write_text(
        f"---\ndoc_id: refunds-staff\nversion: '1'\naccess: staff\n---\n# Refunds\n\n{STAFF_TEXT}\n"
    )
    return folder


@pytest.fixture
def index(docs: Path) -> Path:
    path = docs / ".tether" / "index.sqlite"
    Workspace.open(path).ingest(docs, embed=False)
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, docs: Path):
    """The two documents in each store: the index file, then a PostgreSQL collection."""
    if request.param == "sqlite":
        yield request.getfixturevalue("index")
        return
    from pg_support import drop_collection, fresh_collection

    url = fresh_collection()
    Workspace.open(store=url, create=True).ingest(docs, embed=False)
    yield url
    drop_collection(url)


def _where(location: Path | str) -> list[str]:
    """The CLI option naming `location`."""
    return ["--store", location] if isinstance(location, str) else ["--index", str(location)]


OPEN = AskOptions(floor=0.0)  # two documents: BM25 scores sit under the demo's floor


def _ws(index: Path | str, **env: str) -> Workspace:
    settings, provider = settings_from_mapping(env), ExtractiveProvider()
    if isinstance(index, str):  # a PostgreSQL collection
        return Workspace.open(settings=settings, store=index, provider=provider)
    return Workspace.open(index, settings=settings, provider=provider)


def _entry(at: str, audience: str = "public", flags: tuple = (), question: str = "q") -> AuditEntry:
    claims = ({"text": "c", "chunk_ids": ["x"], "flags": list(flags)},)
    return AuditEntry(at=at, who="t", audience=audience, question=question,  # type: ignore[arg-type]
                      status="flagged" if flags else "answered", claims=claims)  # fmt: skip


def test_ask_records_who_audience_passages_prompt_hash_model_and_checks(location: Path | str):
    ws = _ws(location)
    generation = ws.store.generation()
    result = ws.ask("How long does standard delivery take?", OPEN, who="desk-key")
    assert result.answer is not None
    assert ws.store.generation() == generation  # an audit write drops no cache
    (entry,) = ws.audit_entries(AuditQuery(reader="staff"))
    assert entry.who == "desk-key" and entry.audience == "public"
    assert entry.passage_ids == tuple(result.context.chunk_ids)
    assert len(entry.prompt_hash) == 64 and entry.provider == "extractive"
    assert entry.model == result.completion.model and entry.status == result.status
    assert entry.answer == result.answer.answer
    assert [c["text"] for c in entry.claims] == [ch.claim.text for ch in result.checks]
    assert set(entry.timings) >= {"retrieve_s", "model_s"}
    assert ws.audit_entry(entry.id, "staff").question == entry.question
    ws.ask("Delivery?", OPEN)  # after a read, this Workspace still records
    assert len(ws.audit_entries(AuditQuery())) == 2
    if isinstance(location, Path):  # the Python API records too, as the OS user
        folder = location.parent.parent
        Collection(folder, provider=ExtractiveProvider()).ask("Delivery time?", floor=0)
        assert len(ws.audit_entries(AuditQuery())) == 3


def test_no_audit_when_turned_off(location: Path | str):
    _ws(location, TETHER_AUDIT="false").ask("How long does standard delivery take?", OPEN)
    _ws(location).ask("How long does standard delivery take?", OPEN, audit=False)
    assert _ws(location).audit_entries(AuditQuery()) == []


def test_a_public_reader_never_sees_a_staff_entry(location: Path | str):
    ws = _ws(location)
    staff = ws.ask("Who may approve refunds?", AskOptions(audience="staff", floor=0.0), who="lead")
    assert staff.answer is not None and STAFF_TEXT[:20] in staff.answer.answer
    ws.ask("How long does standard delivery take?", OPEN)
    public = ws.audit_entries(AuditQuery(reader="public"))
    assert [e.audience for e in public] == ["public"]
    everything = ws.audit_entries(AuditQuery(reader="staff"))
    assert {e.audience for e in everything} == {"public", "staff"}
    staff_id = next(e.id for e in everything if e.audience == "staff")
    with pytest.raises(Exception, match="for staff readers"):
        ws.audit_entry(staff_id, "public")  # a public reader sees no ids at all
    # no id (ids count staff entries too: a gap would show one) and no asker (a staff key
    # may ask for the public view; its name is not for public readers)
    assert [(e.id, e.who) for e in public] == [(None, "")]
    # through the CLI, a public reader's list, show and export hold no staff text
    for args in (["audit"], ["audit", "show", str(staff_id)], ["audit", "export"],
                 ["audit", "export", "--format", "csv"], ["audit", "--json"]):  # fmt: skip
        done = runner.invoke(app, [*args, *_where(location)])
        assert done.exit_code == 0 or args[1] == "show", done.output
        assert "250 dollars" not in done.output and "lead" not in done.output, args
    shown = runner.invoke(app, ["audit", "show", str(staff_id), "--audience", "staff",
                                *_where(location)])  # fmt: skip
    assert shown.exit_code == 0 and "250 dollars" in shown.output


def test_filters_flagged_first_and_retention(location: Path | str):
    log = open_audit_log(location, writable=True)
    log.record(_entry("2026-11-01T10:00:00Z", question="old"))
    log.record(_entry("2026-11-20T10:00:00Z", flags=("number_not_found:7",), question="flag"))
    log.record(_entry("2026-11-25T10:00:00Z", audience="staff", question="staff"))
    log.record(_entry("2026-11-28T10:00:00Z", question="new"))
    staff = AuditQuery(reader="staff")
    assert [e.question for e in log.entries(staff)] == ["flag", "new", "staff", "old"]
    since = AuditQuery(reader="staff", since="2026-11-21", until="2026-11-27")
    assert [e.question for e in log.entries(since)] == ["staff"]
    flagged = AuditQuery(reader="staff", flag="number_not_found")
    assert [e.question for e in log.entries(flagged)] == ["flag"]
    assert [e.question for e in log.entries(AuditQuery(reader="staff", flag="number"))] == []
    assert [e.question for e in log.entries(AuditQuery(reader="staff", audience="staff"))] == [
        "staff"
    ]
    assert [e.question for e in log.entries(AuditQuery(flagged_only=True))] == ["flag"]
    # retention: a write deletes what is older than the setting
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    log.record(_entry(now, question="today"), retention_days=1)
    assert [e.question for e in log.entries(staff)] == ["today"]
    log.close()


def test_retention_setting_is_applied_by_ask(location: Path | str):
    log = open_audit_log(location, writable=True)
    log.record(_entry("2020-01-01T00:00:00Z", question="ancient"))
    log.close()
    ws = _ws(location, TETHER_AUDIT_RETENTION_DAYS="30")
    ws.ask("How long does standard delivery take?", OPEN)
    assert [e.question for e in _ws(location).audit_entries(AuditQuery())] == [
        "How long does standard delivery take?"
    ]


def test_a_held_write_lock_does_not_stop_the_answer(index: Path, capsys, monkeypatch):
    monkeypatch.setattr("tether.stores.sqlite_audit.AUDIT_TIMEOUT", 0.2)
    ws = _ws(index)
    ws.store  # noqa: B018
    ingest = sqlite3.connect(index, isolation_level=None, timeout=0.1)
    ingest.execute("BEGIN IMMEDIATE")  # as an ingest's apply holds it
    try:
        began = time.perf_counter()
        result = ws.ask("How long does standard delivery take?", OPEN)
        assert time.perf_counter() - began < 10
    finally:
        ingest.execute("ROLLBACK")
        ingest.close()
    assert result.answer is not None and "3 to 7" in result.answer.answer
    assert "warning: the answer was not recorded in the audit" in capsys.readouterr().err
    ws.ask("How long does standard delivery take?", OPEN)  # the lock is free again: recorded
    assert len(ws.audit_entries(AuditQuery())) == 1


def _make_schema_2(path: Path) -> None:
    """An index as the previous tether wrote it: no audit table, schema 2."""
    db = sqlite3.connect(path)
    db.execute("DROP TABLE audit")
    db.execute("ALTER TABLE documents DROP COLUMN review_by")  # schema 6 came after
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()


def test_a_schema_2_index_is_refused_to_readers_and_upgraded_by_a_writer(index: Path, docs: Path):
    """Schema 4 (every anchor of a chunk) is needed to read; a writer upgrades 2 → 6, the
    audit table included, and the audit then records."""
    assert SCHEMA_VERSION == 6
    _make_schema_2(index)
    with pytest.raises(TetherError, match="older tether"):
        open_store(index)  # read-only: refused with what to run
    writer = SqliteStore(index, create=True)  # as ingest opens it: upgraded
    assert writer.meta_value("schema_version") == str(SCHEMA_VERSION)
    writer.close()
    ws = _ws(index)
    assert ws.audit_entries(AuditQuery()) == []
    ws.ask("How long does standard delivery take?", OPEN)
    assert len(ws.audit_entries(AuditQuery())) == 1
    ws.close()
    Workspace.open(index).ingest(docs, embed=False)
    assert len(_ws(index).audit_entries(AuditQuery())) == 1


def _public():
    from tether.types import Filters

    return Filters(audience="public")


def test_audit_cli_lists_shows_and_exports(index: Path):
    ask = runner.invoke(app, ["ask", "How long does standard delivery take?", "--provider",
                              "extractive", "--index", str(index)])  # fmt: skip
    assert ask.exit_code == 5, ask.output  # refused by the gate: recorded all the same
    listed = runner.invoke(app, ["audit", "--audience", "staff", "--index", str(index)])
    assert listed.exit_code == 0 and "cli" in listed.stdout and "delivery" in listed.stdout
    data = json.loads(runner.invoke(app, ["audit", "--json", "--audience", "staff", "--index", str(index)]).stdout)
    assert data[0]["who"] == "cli" and data[0]["status"] == "refused"
    shown = runner.invoke(app, ["audit", "show", str(data[0]["id"]), "--audience", "staff",
                                "--index", str(index)])
    assert shown.exit_code == 0 and "refused_by: gate" in shown.stdout
    lines = runner.invoke(app, ["audit", "export", "--audience", "staff", "--index", str(index)]).stdout.splitlines()
    assert json.loads(lines[0])["question"] == "How long does standard delivery take?"
    text = runner.invoke(app, ["audit", "export", "--format", "csv", "--audience", "staff",
                                 "--index", str(index)])
    rows = list(csv.DictReader(io.StringIO(text.stdout)))
    assert rows[0]["who"] == "cli" and rows[0]["refused_by"] == "gate"
    public = json.loads(runner.invoke(app, ["audit", "--json", "--index", str(index)]).stdout)
    assert public[0]["who"] == "" and public[0]["id"] == 0  # a public reader: no id, no asker
    bad = runner.invoke(app, ["audit", "export", "--format", "xml", "--index", str(index)])
    assert bad.exit_code == 2
    missing = runner.invoke(app, ["audit", "show", "999", "--audience", "staff", "--index",
                                  str(index)])  # fmt: skip
    assert missing.exit_code == 1 and "no audit entry 999" in missing.output
    public_show = runner.invoke(app, ["audit", "show", "1", "--index", str(index)])
    assert public_show.exit_code == 1 and "for staff readers" in public_show.output


def test_a_locked_postgresql_audit_does_not_stop_the_answer(docs: Path, capsys, monkeypatch):
    """PostgreSQL: a record that cannot take its lock in time warns; the answer stands."""
    import psycopg
    from pg_support import drop_collection, fresh_collection

    from tether.stores.postgres_db import parse_url

    monkeypatch.setattr("tether.stores.postgres_audit.AUDIT_TIMEOUT", 0.2)
    url = fresh_collection()
    Workspace.open(store=url, create=True).ingest(docs, embed=False)
    ws = _ws(url)
    conninfo, _, _ = parse_url(url)
    try:
        with psycopg.connect(conninfo) as holder:  # a transaction holding the audit table
            holder.execute("LOCK TABLE tether_audit IN ACCESS EXCLUSIVE MODE")
            began = time.perf_counter()
            result = ws.ask("How long does standard delivery take?", OPEN)
            assert time.perf_counter() - began < 10
        assert result.answer is not None and "3 to 7" in result.answer.answer
        assert "warning: the answer was not recorded in the audit" in capsys.readouterr().err
        ws.ask("How long does standard delivery take?", OPEN)  # free again: recorded
        assert len(ws.audit_entries(AuditQuery())) == 1
        assert ws.store.generation() == Workspace.open(store=url).store.generation()
    finally:
        ws.close()
        drop_collection(url)


def test_a_csv_export_never_carries_a_formula(index: Path):
    """OWASP CSV injection: a question a caller typed as a formula is exported inert."""
    for question in ("=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "+HYPERLINK(\"x\")",
                     "-2+3", "\tTAB"):  # fmt: skip
        runner.invoke(app, ["ask", question, "--provider", "extractive", "--index", str(index)])
    text = runner.invoke(app, ["audit", "export", "--format", "csv", "--audience", "staff",
                               "--index", str(index)]).stdout  # fmt: skip
    questions = [row["question"] for row in csv.DictReader(io.StringIO(text))]
    risky = [q for q in questions if q[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert not risky, risky
    assert "'=cmd|' /C calc'!A0" in questions  # kept, behind an apostrophe


def test_spreadsheet_safe_follows_the_owasp_rule():
    from tether.text import spreadsheet_safe

    assert spreadsheet_safe("=1+1") == "'=1+1" and spreadsheet_safe("@x") == "'@x"
    assert spreadsheet_safe("plain = text") == "plain = text" and spreadsheet_safe("") == ""
