"""A help desk's first five minutes with its own documents, end to end through the `tether`
command: same-named READMEs in sub-folders, an HTML manual with navigation, a DOCX, an `.rst`,
files tether does not read, ingested with `--default-access public`; then documents, search,
ask, the Python API, a question set of one's own and `tether config`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app

docx = pytest.importorskip("docx")  # python-docx is a dependency: installed wherever tests run

runner = CliRunner()

NAV = "Next: Installing the dock Previous: Unpacking [Index]"


def _day_one(root: Path) -> Path:
    docs = root / "docs"
    for sub, text in (("kiosk", "The kiosk reboots nightly at 02:00."),
                      ("printer", "The label printer needs ribbon GX-420 for receipts.")):  # fmt: skip
        (docs / sub).mkdir(parents=True)
        (docs / sub / "README.md").write_text(f"# {sub.title()}\n\n## Care\n\n{text}\n")
    (docs / "manual.html").write_text(
        "<html><head><title>Dock manual</title></head><body>"
        f"<nav><a href='n'>{NAV}</a></nav>"
        "<main><h1>Dock manual</h1><h2 id='pairing'>Pairing</h2>"
        "<p>Hold the pairing button for eight seconds until the lamp blinks blue.</p></main>"
        "<footer>Copyright Harbourlight</footer></body></html>"
    )
    document = docx.Document()
    document.add_heading("Refund desk", level=1)
    document.add_heading("Cash refunds", level=2)
    document.add_paragraph("Cash refunds above 200 dollars need a supervisor signature.")
    document.save(str(docs / "refunds.docx"))
    (docs / "hours.rst").write_text(
        "Opening hours\n=============\n\n.. _weekend:\n\nWeekend\n-------\n\n"
        "The desk opens at nine on Saturdays and stays closed on Sundays.\n"
    )
    (docs / "old-logs.gz").write_bytes(b"\x1f\x8b\x08\x00binary")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\nxx")
    return docs


@pytest.fixture()
def day_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = _day_one(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user settings file
    monkeypatch.setenv("TETHER_PROVIDER", "extractive")
    monkeypatch.delenv("TETHER_INDEX", raising=False)
    monkeypatch.chdir(docs)  # as the README says: work from the collection folder
    return docs


def test_a_folder_of_ordinary_documents_on_day_one(day_one: Path) -> None:
    ingested = runner.invoke(
        app, ["ingest", ".", "--default-access", "public", "--no-embed", "--json"]
    )
    assert ingested.exit_code == 0, ingested.output
    report = json.loads(ingested.stdout)
    assert sorted(report["added"]) == [
        "hours.rst", "kiosk/README.md", "manual.html", "printer/README.md", "refunds.docx",
    ]  # fmt: skip
    assert report["problems"] == []
    assert report["unsupported"] == {".gz": 1, ".png": 1}  # every file is accounted for
    assert report["default_access"] == "public" and len(report["unlabelled"]) == 5

    listed = runner.invoke(app, ["documents", "--json"])  # the public audience by default
    assert listed.exit_code == 0, listed.output
    doc_ids = sorted(d["doc_id"] for d in json.loads(listed.stdout))
    assert doc_ids == ["hours", "kiosk/README", "manual", "printer/README", "refunds"]

    for query, doc_id in (("ribbon GX-420", "printer/README"), ("kiosk reboots", "kiosk/README"),
                          ("pairing button lamp", "manual"), ("supervisor signature", "refunds"),
                          ("Saturdays", "hours")):  # fmt: skip
        found = runner.invoke(app, ["search", query, "--json"])
        assert found.exit_code == 0, found.output
        hits = json.loads(found.stdout)
        assert hits and hits[0]["doc_id"] == doc_id, (query, hits)
        assert hits[0]["source"]  # where it came from
    navigation = runner.invoke(app, ["search", "Previous Unpacking Index", "--json"])
    assert all("Previous:" not in h["text"] for h in json.loads(navigation.stdout))
    anchored = runner.invoke(app, ["search", "Saturdays", "--json"])
    assert json.loads(anchored.stdout)[0]["anchor"] == "weekend"

    asked = runner.invoke(app, ["ask", "Which ribbon does the label printer need?", "--json"])
    data = json.loads(asked.stdout)
    assert asked.exit_code in (0, 4, 5), asked.output  # answered, flagged or refused: not 3
    assert data["status"] in ("answered", "flagged", "refused")
    assert asked.exit_code == {"answered": 0, "flagged": 4, "refused": 5}[data["status"]]

    assert runner.invoke(app, ["config"]).exit_code == 0


def test_the_python_api_and_a_question_set_of_ones_own(day_one: Path) -> None:
    from tether import Collection

    col = Collection(day_one)  # the public audience and today, as the CLI
    assert col.search("ribbon GX-420") == []  # built on first use: unlabelled is staff-only
    report = col.ingest(embed=False, default_access="public")
    assert report.default_access == "public" and len(report.unlabelled) == 5
    hits = col.search("ribbon GX-420")
    assert hits and hits[0].chunk.doc_id == "printer/README"

    template = runner.invoke(app, ["questions", "--template"])
    assert template.exit_code == 0
    mine = day_one / "mine.jsonl"
    mine.write_text(
        json.dumps({"id": "M1", "question": "Which ribbon does the label printer need?",
                    "audience": "staff", "relevant": [{"doc_id": "printer/README"}]}) + "\n"
    )  # fmt: skip
    before = set(os.listdir(day_one))
    scored = runner.invoke(app, ["eval", "--questions", str(mine), "--methods", "bm25", "--json"])
    assert scored.exit_code == 0, scored.output
    result = json.loads(scored.stdout)
    assert result["index"].endswith(os.path.join(".tether", "index.sqlite"))  # this folder's
    assert set(os.listdir(day_one)) == before  # no demo.sqlite written into the user's folder
