"""`tether health` on a copy of the demo collection with faults planted: a stale document, a
document in force past its review date (not a replaced version past its own, nor one whose
review is ahead), an unlabelled one with a link to a missing file, a contradiction, and ten
refused questions in three subjects in the audit (plus a wrong verdict): each is found, with
its owner; the report as JSON (the `health` schema), as text, as HTML; `GET /v1/health` for
staff keys only (a public key gets 404)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from health_parts import ANSWERED, AS_OF, REFUSED, REVIEW_OVERDUE, UNLABELLED, planted_index

from tether.app import Workspace
from tether.config import Settings


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_index(tmp_path_factory.mktemp("health"))


def _report(index: Path, **options: object):
    with Workspace.open(index, settings=Settings(provider="extractive")) as ws:
        return ws.health(AS_OF, **options)


def test_the_planted_faults_are_found_with_their_owners(planted: Path) -> None:
    report = _report(planted, contradictions=False)
    gaps = report.of("gap")
    # ten refused questions in three subjects and one answer marked wrong
    assert sum(g.count for g in gaps) == 11
    big = [g for g in gaps if g.count >= 3]
    subjects = {s for g in big for s, qs in REFUSED.items() if set(g.examples) <= set(qs)}
    assert subjects == set(REFUSED), [(g.title, g.examples) for g in gaps]
    assert all(g.evidence and g.owners for g in big)  # the nearest passages and their owners
    wrong = [g for g in gaps if "marked wrong" in g.detail]
    assert [g.examples for g in wrong] == [("How long does standard delivery take?",)]
    stale = report.of("stale")
    storage = [f for f in stale if f.doc_ids == ("bike-storage-offer",)]
    assert storage and storage[0].owners == ("Service Workshop",)
    assert "renew it" in storage[0].detail  # a policy, not a notice
    overdue = [f for f in stale if "review overdue" in f.title]
    assert [(f.doc_ids, f.owners) for f in overdue] == [((REVIEW_OVERDUE,), ("Customer Care",))]
    assert overdue[0].title == "Warranty policy: review overdue since 2026-06-30"
    assert "returns-policy" not in {d for f in stale for d in f.doc_ids}  # v3 replaced, v4 ahead
    links = report.of("missing_link")
    assert len(links) == 1 and links[0].detail == "safety-sheet.md"
    assert links[0].doc_ids == ("workshop-checklist",)
    unlabelled = report.of("unlabelled")
    assert [f.doc_ids for f in unlabelled] == [("workshop-checklist",)]
    assert "indexed as staff" in unlabelled[0].detail
    assert [f.doc_ids for f in report.of("instructions")] == [("kestrel-tr2200-sheet",)]
    assert ANSWERED not in {q for g in gaps for q in g.examples}
    assert report.notes == (
        "1 refused question would be answered by the documents as they are now (not counted"
        " as gaps): see `tether audit`", "contradictions not looked for",
    )  # fmt: skip
    assert report.looked_at["marked_wrong"] == 1 and report.looked_at["audit_entries"] == 12


def test_a_relabelled_file_leaves_the_unlabelled_list_and_problems_are_kept(
    planted: Path, tmp_path: Path
) -> None:
    """The ingest's record follows the folder: a file given a label is no longer unlabelled,
    and a file that cannot be read is reported until it can."""
    index = tmp_path / "index.sqlite"
    shutil.copy(planted, index)
    with Workspace.open(index, settings=Settings(provider="extractive")) as ws:
        folder = Path(json.loads(ws.store.meta_value("ingest:state") or "{}")["folder"])
    docs = tmp_path / "docs"
    shutil.copytree(folder, docs)
    checklist = docs / "guides" / "workshop-checklist.md"
    checklist.write_text(UNLABELLED.replace("owner:", "access: staff\nowner:"))
    (docs / "help" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with Workspace.open(index, settings=Settings(provider="extractive")) as ws:
        ws.ingest(docs)
    report = _report(index, contradictions=False)
    assert report.of("unlabelled") == []
    assert [f.title for f in report.of("unreadable")] == ["help/broken.pdf could not be read"]


def test_the_report_as_json_text_and_html(planted: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app
    from tether.schemas import WireHealthReport

    runner = CliRunner()
    args = ["health", "--index", str(planted), "--as-of", AS_OF, "--no-contradictions"]
    given = runner.invoke(app, [*args, "--json"])
    assert given.exit_code == 0, given.output
    wire = WireHealthReport.model_validate_json(given.stdout)
    assert wire.counts["gap"] >= 3 and wire.counts["missing_link"] == 1
    page = tmp_path / "health.html"
    text = runner.invoke(app, [*args, "--report", str(page)])
    assert text.exit_code == 0, text.output
    assert "Content gaps" in text.stdout and "People ask:" in text.stdout
    assert "not looked for (--no-contradictions)" in text.stdout
    html = page.read_text()
    assert "<script" not in html and "Summer bike storage offer ended" in html
    assert "Warranty policy: review overdue since 2026-06-30" in html
    documents = runner.invoke(app, ["documents", "--index", str(planted), "--json"])
    reviews = {(d["doc_id"], d["version"]): d["review_by"] for d in json.loads(documents.stdout)}
    assert reviews[("warranty-policy", "2")] == "2026-06-30"
    assert reviews[("returns-policy", "3")] == "2026-05-31" and reviews[("gift-cards", "2")] is None
    # every text is escaped: a question with markup stays text
    with Workspace.open(planted, settings=Settings(provider="extractive")) as ws:
        found = ws.health(AS_OF, contradictions=False)
    from tether.health.report import render_html
    from tether.types import Finding

    marked = replace(found, findings=(Finding("gap", "<img src=x onerror=alert(1)>"),))
    assert "<img" not in render_html(marked) and "&lt;img" in render_html(marked)


def test_the_server_gives_the_report_to_staff_keys_only(planted: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient
    from serving import serve_app

    staff, public = "tk_health-staff", "tk_health-public"
    app = serve_app(planted, {staff: "staff", public: "public"}, anonymous=True)
    with TestClient(app, raise_server_exceptions=False) as c:
        nobody = c.get("/v1/health")
        assert nobody.status_code == 404 and "gap" not in nobody.text
        refused = c.get("/v1/health", headers={"Authorization": f"Bearer {public}"})
        assert refused.status_code == 404
        assert refused.json()["detail"] == c.get("/v1/no-such-page").json()["detail"]
        given = c.get("/v1/health", params={"as_of": AS_OF},
                      headers={"Authorization": f"Bearer {staff}"})  # fmt: skip
        assert given.status_code == 200, given.text
        assert given.json()["counts"]["stale"] >= 1
        page = c.get("/v1/health", params={"as_of": AS_OF, "format": "html"},
                     headers={"Authorization": f"Bearer {staff}"})  # fmt: skip
        assert page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "style-src 'sha256-" in policy

