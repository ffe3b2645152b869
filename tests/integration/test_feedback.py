"""Feedback on answers (issue 28): the audit id an answer carries, `Workspace.feedback` (who may
give feedback on what, the note's rules, the right passage seen as its asker's audience sees
it, one verdict per entry and asker), both audit backends (SQLite and PostgreSQL, retention,
an index written before feedback existed), `POST /v1/feedback` (201, 404 exactly like an
unknown id, 422), `tether audit --feedback`, and the round trip `tether questions
--from-feedback > fb.jsonl && tether eval --questions fb.jsonl` on the demo index."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.pipeline import AskOptions
from tether.app import Workspace
from tether.cli.main import app
from tether.config import Settings, settings_from_mapping
from tether.errors import NotFoundError, TetherError
from tether.evaluation.questions import load_questions, matches, question_line
from tether.providers.extractive import ExtractiveProvider
from tether.stores import open_audit_log
from tether.types import AuditEntry, AuditQuery, Feedback

runner = CliRunner()
STAFF_TEXT = "Staff may approve refunds up to 250 dollars without a manager."
OPEN = AskOptions(floor=0.0)  # a small collection: BM25 scores sit under the demo's floor
DELIVERY = "How long does standard delivery take?"
STAFF = AuditQuery(reader="staff")


@pytest.fixture
def docs(tmp_path: Path, clean_env: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "delivery.md").write_text(
        "---\ndoc_id: delivery\nversion: '1'\naccess: public\n---\n# Delivery\n\n"
        "Standard delivery takes 3 to 7 business days.\n\n## Express\n\n"
        "Express delivery takes one business day and costs 15 dollars.\n"
    )
    (folder / "old.md").write_text(
        "---\ndoc_id: returns\nversion: '1'\naccess: public\neffective_to: 2020-12-31\n---\n"
        "# Returns\n\nReturns were accepted within 14 days.\n"
    )
    (folder / "refunds.md").write_text(
        f"---\ndoc_id: refunds-staff\nversion: '1'\naccess: staff\n---\n# Refunds\n\n{STAFF_TEXT}\n"
    )
    return folder


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, docs: Path):
    """The documents in each store: an index file, then a PostgreSQL collection."""
    if request.param == "sqlite":
        path = docs / ".tether" / "index.sqlite"
        Workspace.open(path).ingest(docs, embed=False)
        yield path
        return
    from pg_support import drop_collection, fresh_collection

    url = fresh_collection()
    Workspace.open(store=url, create=True).ingest(docs, embed=False)
    yield url
    drop_collection(url)


def _ws(location: Path | str, **env: str) -> Workspace:
    settings, provider = settings_from_mapping(env), ExtractiveProvider()
    if isinstance(location, str):
        return Workspace.open(settings=settings, store=location, provider=provider)
    return Workspace.open(location, settings=settings, provider=provider)


def _chunk(ws: Workspace, doc_id: str, words: str) -> str:
    return next(c.chunk_id for c in ws.store.chunks(doc_id) if words in c.text)


def test_an_answer_carries_its_audit_id_unless_not_recorded(location: Path | str):
    ws = _ws(location)
    first = ws.ask(DELIVERY, OPEN, who="desk")
    second = ws.ask(DELIVERY, OPEN, who="desk")
    assert first.audit_id is not None and second.audit_id == first.audit_id + 1
    assert ws.audit_entry(first.audit_id, "staff").who == "desk"
    assert ws.ask(DELIVERY, OPEN, audit=False).audit_id is None
    assert _ws(location, TETHER_AUDIT="false").ask(DELIVERY, OPEN).audit_id is None
    from tether.schemas import WireAskResult

    assert WireAskResult.from_ask_result(first).audit_id == first.audit_id


def test_feedback_is_stored_replaced_and_listed(location: Path | str):
    ws = _ws(location)
    entry_id = ws.ask(DELIVERY, OPEN, who="desk").audit_id
    express = _chunk(ws, "delivery", "Express delivery")
    given = ws.feedback(entry_id, "helpful", "  spot on\n", who="desk")
    assert (given.entry_id, given.who, given.verdict, given.note) == (entry_id, "desk", "helpful", "spot on")
    assert given.id is not None and given.entry is not None and given.entry.question == DELIVERY
    # a second verdict from the same asker replaces the first (same id); another asker adds one
    again = ws.feedback(entry_id, "wrong", None, express, who="desk")
    assert again.id == given.id and again.verdict == "wrong" and again.note is None
    assert again.chunk_id == express
    ws.feedback(entry_id, "helpful", who="lead", audience="staff")  # staff: any entry
    listed = ws.feedback_entries(STAFF)
    assert sorted((f.who, f.verdict) for f in listed) == [("desk", "wrong"), ("lead", "helpful")]
    # a public reader: feedback on public entries only, without ids or names
    public = ws.feedback_entries(AuditQuery())
    assert {(f.id, f.entry_id, f.who) for f in public} == {(None, 0, "")}
    assert all(f.entry is not None and f.entry.id is None for f in public)


def test_who_may_give_feedback_on_what(location: Path | str):
    """A public asker: its own public entries only; anything else reads as an unknown id, and
    a staff passage as an unknown passage."""
    ws = _ws(location)
    mine = ws.ask(DELIVERY, OPEN, who="desk").audit_id
    staff = ws.ask("Who may approve refunds?", AskOptions(audience="staff", floor=0.0),
                   who="desk").audit_id  # fmt: skip
    staff_chunk = _chunk(ws, "refunds-staff", "250 dollars")

    def refused(error: type[Exception], *args: object, **kwargs: object) -> str:
        with pytest.raises(error) as caught:
            ws.feedback(*args, **kwargs)  # type: ignore[arg-type]
        return str(caught.value)

    unknown = refused(NotFoundError, 999_999, "wrong", who="desk")
    assert unknown == "no audit entry 999999"
    assert refused(NotFoundError, mine, "wrong", who="someone-else") == f"no audit entry {mine}"
    assert refused(NotFoundError, staff, "wrong", who="desk") == f"no audit entry {staff}"
    hidden = refused(NotFoundError, mine, "wrong", chunk_id=staff_chunk, who="desk")
    absent = refused(NotFoundError, mine, "wrong", chunk_id="c0ffee000000", who="desk")
    assert hidden == absent.replace("c0ffee000000", staff_chunk)
    # a staff asker sees the staff passage, but the public question could never find it
    why = refused(TetherError, mine, "wrong", chunk_id=staff_chunk, who="lead", audience="staff")
    assert "public audience, which cannot see it" in why
    # a passage not in force on the date the question was asked for
    dated = ws.ask(DELIVERY, AskOptions(floor=0.0, as_of=None), who="desk")
    on_day = ws.ask("How long is the return window?", AskOptions(floor=0.0, as_of=date.fromisoformat("2026-06-01")),
                    who="desk").audit_id  # fmt: skip
    returns = _chunk(ws, "returns", "14 days")
    assert "not in force on 2026-06-01" in refused(TetherError, on_day, "wrong", chunk_id=returns,
                                                   who="desk")  # fmt: skip
    assert ws.feedback(dated.audit_id, "wrong", chunk_id=returns, who="desk").chunk_id == returns
    # the rules of a verdict and a note
    assert "not helpful or wrong" in refused(TetherError, mine, "meh", who="desk")
    assert "limit is 2,000" in refused(TetherError, mine, "wrong", "x" * 2001, who="desk")
    for bad in ("a\x1b[31m", "a\x00b", "a\u202eb"):
        assert "control character" in refused(TetherError, mine, "wrong", bad, who="desk")
    assert ws.feedback(mine, "wrong", "line one\n\tline two", who="desk").note == "line one\n\tline two"
    assert ws.feedback_entries(STAFF)[0].entry_id in (mine, dated.audit_id)


def test_retention_deletes_an_entrys_feedback_with_it(location: Path | str):
    log = open_audit_log(location, writable=True)
    old = log.record(AuditEntry("2020-01-01T00:00:00Z", "desk", "public", "old?", "answered"))
    log.add_feedback(Feedback(old, "2020-01-02T00:00:00Z", "desk", "helpful"))
    assert len(log.feedback(STAFF)) == 1
    with pytest.raises(TetherError, match="no audit entry 999999"):
        log.add_feedback(Feedback(999_999, "2020-01-02T00:00:00Z", "desk", "helpful"))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    new = log.record(AuditEntry(now, "desk", "public", "new?", "answered"), retention_days=30)
    assert log.feedback(STAFF) == []
    log.add_feedback(Feedback(new, now, "desk", "wrong"))
    assert [f.entry_id for f in log.feedback(STAFF)] == [new]
    assert log.feedback(AuditQuery(reader="staff", since="2999-01-01")) == []
    log.close()


def test_an_index_written_before_feedback_gains_its_table_in_place(docs: Path):
    """An index file whose audit has no feedback table (as the previous tether wrote it) lists
    no feedback, still records answers, and gets the table on its first feedback (a
    PostgreSQL schema is migrated by its writer: tests/integration/test_postgres.py)."""
    location = docs / ".tether" / "index.sqlite"
    Workspace.open(location).ingest(docs, embed=False)
    ws = _ws(location)
    entry_id = ws.ask(DELIVERY, OPEN, who="desk").audit_id
    ws.close()
    db = sqlite3.connect(location)
    db.execute("DROP TABLE audit_feedback")
    db.commit()
    db.close()
    ws = _ws(location)
    assert ws.feedback_entries(STAFF) == []
    assert ws.feedback(entry_id, "helpful", who="desk").id == 1
    assert ws.ask(DELIVERY, OPEN, who="desk").audit_id == entry_id + 1
    assert len(ws.feedback_entries(STAFF)) == 1 and len(ws.audit_entries(STAFF)) == 2


# ---- questions from feedback -------------------------------------------------------------


def test_feedback_becomes_questions_that_match_exactly(location: Path | str, tmp_path: Path):
    ws = _ws(location)
    helpful = ws.ask(DELIVERY, OPEN, who="desk")
    wrong = ws.ask("How much does express delivery cost?", OPEN, who="desk").audit_id
    bare = ws.ask("Do you deliver on Sundays?", OPEN, who="desk").audit_id
    refused = ws.ask("Do you ship to the Moon?", AskOptions(floor=0.99), who="desk")
    assert refused.status == "refused"
    express = _chunk(ws, "delivery", "Express delivery")
    ws.feedback(helpful.audit_id, "helpful", who="desk")
    ws.feedback(wrong, "wrong", "it is 15 dollars", express, who="desk")
    ws.feedback(bare, "wrong", who="desk")
    ws.feedback(refused.audit_id, "helpful", who="desk")
    qs, notes = ws.feedback_questions(STAFF)
    assert notes == []
    by_id = {q.id: q for q in qs}
    assert list(by_id) == [f"FB{helpful.audit_id}", f"FB{wrong}", f"FB{bare}", f"FB{refused.audit_id}"]
    good = by_id[f"FB{helpful.audit_id}"]
    assert good.reference_answer == helpful.answer.answer and good.tags == ("feedback:helpful",)
    cited = {c for ch in helpful.checks for c in ch.claim.chunk_ids}
    chunks = ws.store.chunks()
    for rel in good.relevant:  # each names exactly one chunk: a cited one
        assert {c.chunk_id for c in chunks if matches(c, rel)} <= cited
    assert len(good.relevant) == len(cited)
    fixed = by_id[f"FB{wrong}"]
    assert fixed.tags == ("feedback:wrong",) and fixed.extra["notes"] == ["it is 15 dollars"]
    (rel,) = fixed.relevant
    assert [c.chunk_id for c in chunks if matches(c, rel)] == [express]
    assert rel.version == "1" and rel.evidence and not rel.evidence.startswith("Express Express")
    assert by_id[f"FB{bare}"].relevant == () and by_id[f"FB{bare}"].tags == ("feedback:wrong",)
    assert by_id[f"FB{refused.audit_id}"].abstain
    # written as JSON Lines, read back as the same questions
    path = tmp_path / "fb.jsonl"
    path.write_text("".join(json.dumps(question_line(q)) + "\n" for q in qs))
    back = load_questions(path)
    assert back == qs and [q.extra for q in back] == [q.extra for q in qs]
    # a public reader: no entry ids, so the questions are numbered
    public, _ = ws.feedback_questions(AuditQuery())
    assert [q.id for q in public] == ["FBP1", "FBP2", "FBP3", "FBP4"]
    # a right passage a re-ingest retired: written without it, and said
    if isinstance(location, Path):
        (location.parent.parent / "delivery.md").write_text(
            "---\ndoc_id: delivery\nversion: '1'\naccess: public\n---\n# Delivery\n\n"
            "Standard delivery takes 3 to 7 business days.\n\n## Express\n\n"
            "Express delivery takes one business day and costs 16 dollars.\n"
        )
        ws.close()
        Workspace.open(location).ingest(location.parent.parent, embed=False)
        qs, notes = _ws(location).feedback_questions(STAFF)
        assert any(express in n and f"FB{wrong}" in n for n in notes)
        assert {q.id: q for q in qs}[f"FB{wrong}"].relevant == ()


def test_audit_feedback_cli_lists_it(location: Path | str):
    where = ["--store", location] if isinstance(location, str) else ["--index", str(location)]
    ws = _ws(location)
    entry_id = ws.ask(DELIVERY, OPEN, who="desk").audit_id
    ws.feedback(entry_id, "wrong", "see Express", _chunk(ws, "delivery", "Express"), who="desk")
    staff_id = ws.ask("Who may approve refunds?", AskOptions(audience="staff", floor=0.0),
                      who="lead").audit_id  # fmt: skip
    ws.feedback(staff_id, "helpful", "staff only note", who="lead", audience="staff")
    listed = runner.invoke(app, ["audit", "--feedback", "--audience", "staff", *where])
    assert listed.exit_code == 0, listed.output
    assert "see Express" in listed.stdout and "staff only note" in listed.stdout
    data = json.loads(runner.invoke(app, ["audit", "--feedback", "--json", "--audience", "staff",
                                          *where]).stdout)  # fmt: skip
    assert {(d["audit_id"], d["who"], d["verdict"]) for d in data} == {
        (entry_id, "desk", "wrong"), (staff_id, "lead", "helpful")
    }
    assert set(data[0]) == {"id", "audit_id", "at", "who", "verdict", "note", "chunk_id", "question"}
    public = runner.invoke(app, ["audit", "--feedback", "--json", *where])
    assert public.exit_code == 0 and "staff only note" not in public.stdout
    assert [(d["id"], d["audit_id"], d["who"]) for d in json.loads(public.stdout)] == [(0, 0, "")]
    lines = runner.invoke(app, ["questions", "--from-feedback", "--audience", "staff", *where])
    assert lines.exit_code == 0, lines.output
    ids = [json.loads(line)["id"] for line in lines.stdout.splitlines()]
    assert sorted(ids) == sorted([f"FB{entry_id}", f"FB{staff_id}"])
    mixed = runner.invoke(app, ["questions", "--from-feedback", "--kind", "x", *where])
    assert mixed.exit_code == 2


# ---- the round trip on the demo index -------------------------------------------------------


@pytest.fixture
def demo_copy(demo_store, tmp_path: Path) -> Path:
    """A copy of the session's demo index (the tests write its audit)."""
    path = tmp_path / "demo.sqlite"
    source, target = sqlite3.connect(demo_store.path), sqlite3.connect(path)
    source.backup(target)
    source.close()
    target.close()
    return path


def test_feedback_round_trips_into_eval(demo_copy: Path, clean_env: Path):
    """`tether questions --from-feedback > fb.jsonl && tether eval --questions fb.jsonl` runs on
    the same index and scores the questions feedback made."""
    ws = Workspace.open(demo_copy, settings=Settings(), provider=ExtractiveProvider())
    day = AskOptions(as_of=date.fromisoformat("2026-11-30"), method="bm25")
    helpful = ws.ask(DELIVERY, day, who="cli")
    assert helpful.status in ("answered", "flagged") and helpful.audit_id is not None
    wrong = ws.ask("How much does express delivery cost?", day, who="cli")
    right = ws.search("express delivery cost", _options(day))[0].chunk.chunk_id
    ws.feedback(helpful.audit_id, "helpful", who="cli")
    ws.feedback(wrong.audit_id, "wrong", "the express fee", right, who="cli")
    ws.close()
    made = runner.invoke(app, ["questions", "--from-feedback", "--index", str(demo_copy)])
    assert made.exit_code == 0, made.output
    fb = clean_env / "fb.jsonl"
    fb.write_text(made.stdout)
    assert [q.id for q in load_questions(fb)] == ["FBP1", "FBP2"]
    done = runner.invoke(app, ["eval", "--questions", str(fb), "--index", str(demo_copy),
                               "--methods", "bm25", "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["n_questions"] == 2 and report["n_scored"] == 2, report["skipped"]
    # the staff reader's set has the entry ids, and runs as well
    staff = runner.invoke(app, ["questions", "--from-feedback", "--audience", "staff",
                                "--index", str(demo_copy)])  # fmt: skip
    assert [json.loads(line)["id"] for line in staff.stdout.splitlines()] == [
        f"FB{helpful.audit_id}", f"FB{wrong.audit_id}"
    ]


def _options(ask: AskOptions):
    from tether.app import SearchOptions

    return SearchOptions(k=5, as_of=ask.as_of, method="bm25")


# ---- POST /v1/feedback ------------------------------------------------------------------------


PUBLIC_KEY, OTHER_KEY, STAFF_KEY = "tk_public-fb", "tk_other-fb", "tk_staff-fb"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "Traceback" not in response.text
    return response.json()


def test_post_feedback(demo_copy: Path, demo_store) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from serving import serve_app

    keys = {PUBLIC_KEY: "public", OTHER_KEY: "public", STAFF_KEY: "staff"}
    application = serve_app(demo_copy, keys, anonymous=True)
    staff_chunk = demo_store.chunks("fraud-check-procedure")[0].chunk_id
    public_chunk = next(c for c in demo_store.chunks("delivery-policy")
                        if "3 to 7" in c.text and c.meta.in_force(date(2026, 11, 30)))  # fmt: skip
    body = {"question": DELIVERY, "as_of": "2026-11-30", "method": "bm25"}
    with TestClient(application, raise_server_exceptions=False) as c:
        asked = c.post("/v1/ask", json=body, headers=_bearer(PUBLIC_KEY)).json()
        audit_id = asked["audit_id"]
        assert isinstance(audit_id, int)
        given = {"audit_id": audit_id, "verdict": "wrong", "note": "too vague",
                 "chunk_id": public_chunk.chunk_id}  # fmt: skip
        r = c.post("/v1/feedback", json=given, headers=_bearer(PUBLIC_KEY))
        assert r.status_code == 201, r.text
        stored = r.json()
        assert stored["audit_id"] == audit_id and stored["who"] == "k1"
        assert (stored["verdict"], stored["note"], stored["chunk_id"]) == (
            "wrong", "too vague", public_chunk.chunk_id
        )
        assert stored["question"] == DELIVERY and r.headers["Tether-Audience"] == "public"
        again = c.post("/v1/feedback", json={"audit_id": audit_id, "verdict": "helpful"},
                       headers=_bearer(PUBLIC_KEY)).json()  # fmt: skip
        assert again["id"] == stored["id"] and again["chunk_id"] is None
        # a staff key may give feedback on any entry
        assert c.post("/v1/feedback", json=given, headers=_bearer(STAFF_KEY)).status_code == 201
        # another key's entry, a staff entry, an unknown one: the same 404
        staff_asked = c.post("/v1/ask", json={**body, "question": "When is an online order"
                             " held for a fraud check?"}, headers=_bearer(STAFF_KEY)).json()  # fmt: skip
        other = _problem(c.post("/v1/feedback", json=given, headers=_bearer(OTHER_KEY)), 404)
        assert other["detail"] == f"no audit entry {audit_id}"
        staff_entry = {"audit_id": staff_asked["audit_id"], "verdict": "wrong"}
        hidden = _problem(c.post("/v1/feedback", json=staff_entry, headers=_bearer(PUBLIC_KEY)), 404)
        unknown = _problem(c.post("/v1/feedback", json={"audit_id": 10**9, "verdict": "wrong"},
                                  headers=_bearer(PUBLIC_KEY)), 404)  # fmt: skip
        assert hidden["detail"] == f"no audit entry {staff_asked['audit_id']}"
        assert unknown["detail"] == f"no audit entry {10**9}"
        assert {k for k in hidden if k != "detail"} == {k for k in unknown if k != "detail"}
        # a staff passage named by a public key reads as an unknown passage
        with_staff = {**given, "chunk_id": staff_chunk}
        seen = _problem(c.post("/v1/feedback", json=with_staff, headers=_bearer(PUBLIC_KEY)), 404)
        missing = _problem(c.post("/v1/feedback", json={**given, "chunk_id": "c0ffee000000"},
                                  headers=_bearer(PUBLIC_KEY)), 404)  # fmt: skip
        assert seen["detail"] == missing["detail"].replace("c0ffee000000", staff_chunk)
        # bad bodies: 422 (shape) or 400 (a rule), never a traceback
        for bad in ({"audit_id": audit_id, "verdict": "meh"}, {"audit_id": 0, "verdict": "wrong"},
                    {"audit_id": audit_id, "verdict": "wrong", "note": "x" * 2001},
                    {"audit_id": audit_id, "verdict": "wrong", "extra": 1}):  # fmt: skip
            _problem(c.post("/v1/feedback", json=bad, headers=_bearer(PUBLIC_KEY)), 422)
        control = {"audit_id": audit_id, "verdict": "wrong", "note": "a\x1bb"}
        assert "control character" in _problem(
            c.post("/v1/feedback", json=control, headers=_bearer(PUBLIC_KEY)), 400)["detail"]
        # anonymous callers share one name and could count answers by their ids: an
        # anonymous answer carries no id, and feedback needs a key
        anonymous = c.post("/v1/ask", json=body).json()
        assert anonymous["status"] and anonymous["audit_id"] is None
        refused = _problem(c.post("/v1/feedback", json={"audit_id": audit_id,
                                                        "verdict": "helpful"}), 403)  # fmt: skip
        assert "needs a key" in refused["detail"]
        assert _problem(c.post("/v1/feedback", json=given, headers=_bearer("tk_nope")), 401)
    with Workspace.open(demo_copy, settings=Settings()) as ws:
        found = ws.feedback_entries(STAFF)
    assert sorted((f.who, f.verdict) for f in found) == [("k1", "helpful"), ("k3", "wrong")]
