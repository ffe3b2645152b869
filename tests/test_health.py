"""`tether health` on a copy of the demo collection with faults planted: a stale document, an
unlabelled one with a link to a missing file, a contradiction, and ten refused questions in
three subjects in the audit (plus a wrong verdict): each is found, with its owner; the
report as JSON (the `health` schema), as text, as HTML; `GET /v1/health` for staff keys
only (a public key gets 404)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tether.app import Workspace
from tether.config import Settings
from tether.evaluation.questions import demo_collection
from tether.types import AskResult, Gate

AS_OF = "2026-11-30"
REFUSED = {  # subjects the demo's documents never mention
    "gift wrapping": ["Do you offer gift wrapping?", "Can you gift wrap my order?",
                      "How much does gift wrapping cost?", "Is gift wrap available online?"],
    "scuba": ["Do you sell scuba diving gear?", "Can I buy a scuba regulator from you?",
              "Do you service scuba tanks?"],
    "drones": ["Do you repair drones?", "Can I bring my camera drone in for a repair?",
               "How much is a drone propeller repair?"],
}  # fmt: skip
ANSWERED = "How many days do I have to return a bicycle?"
STALE = """---
doc_id: bike-storage-offer
version: "1"
title: Summer bike storage offer
doc_type: policy
access: public
effective_from: 2025-05-01
effective_to: 2026-09-30
owner: Service Workshop
---

# Summer bike storage offer

We store your bicycle in our Halifax workshop from May to September for $15 a month.
"""
UNLABELLED = """---
doc_id: workshop-checklist
version: "1"
title: Workshop opening checklist
owner: Service Workshop
---

# Workshop opening checklist

Turn on the compressor, check the stand clamps and read the [safety sheet](safety-sheet.md)
before the first repair of the day. The [tune-up guide](../policies/bike-assembly-and-tune-ups.md)
lists the prices.
"""


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return planted_index(tmp_path_factory.mktemp("health"))


def planted_index(root: Path) -> Path:
    """A copy of the demo collection in `root` with the faults planted, ingested with vectors,
    and ten refused questions plus a wrong verdict recorded in its audit."""
    docs = root / "docs"
    shutil.copytree(demo_collection(), docs)
    (docs / "policies" / "bike-storage-offer.md").write_text(STALE)
    (docs / "guides" / "workshop-checklist.md").write_text(UNLABELLED)
    index = root / "index.sqlite"
    with Workspace(Settings(provider="extractive"), index=index) as ws:
        report = ws.ingest(docs)
        assert report.committed and not report.problems, report.problems
        gate = Gate(False, 0.8, 1, 0, 0.41, "retrieval too weak")
        for questions in REFUSED.values():
            for q in questions:
                ws.record(AskResult(q, None, "public", "en", "rerank", gate=gate), "desk")
        # refused then, answered by the documents now: no gap
        ws.record(AskResult(ANSWERED, None, "public", "en", "rerank", gate=gate), "desk")
        answered = ws.ask("How long does standard delivery take?", who="desk")
        assert answered.audit_id is not None
        ws.feedback(answered.audit_id, "wrong", "it should say express too", who="desk")
    return index


def _report(index: Path, **options: object):
    with Workspace(Settings(provider="extractive"), index=index) as ws:
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
    with Workspace(Settings(provider="extractive"), index=index) as ws:
        folder = Path(json.loads(ws.store.meta_value("ingest:state") or "{}")["folder"])
    docs = tmp_path / "docs"
    shutil.copytree(folder, docs)
    checklist = docs / "guides" / "workshop-checklist.md"
    checklist.write_text(UNLABELLED.replace("owner:", "access: staff\nowner:"))
    (docs / "help" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with Workspace(Settings(provider="extractive"), index=index) as ws:
        ws.ingest(docs)
    report = _report(index, contradictions=False)
    assert report.of("unlabelled") == []
    assert [f.title for f in report.of("unreadable")] == ["help/broken.pdf could not be read"]


def test_the_report_as_json_text_and_html(planted: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app
    from tether.schemas import HealthReport

    runner = CliRunner()
    args = ["health", "--index", str(planted), "--as-of", AS_OF, "--no-contradictions"]
    given = runner.invoke(app, [*args, "--json"])
    assert given.exit_code == 0, given.output
    wire = HealthReport.model_validate_json(given.stdout)
    assert wire.counts["gap"] >= 3 and wire.counts["missing_link"] == 1
    page = tmp_path / "health.html"
    text = runner.invoke(app, [*args, "--report", str(page)])
    assert text.exit_code == 0, text.output
    assert "Content gaps" in text.stdout and "People ask:" in text.stdout
    assert "not looked for (--no-contradictions)" in text.stdout
    html = page.read_text()
    assert "<script" not in html and "Summer bike storage offer ended" in html
    # every text is escaped: a question with markup stays text
    with Workspace(Settings(provider="extractive"), index=planted) as ws:
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
