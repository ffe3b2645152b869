"""Access defaults that explain themselves: `--default-access` is stored with the index and
kept by later ingests; the ingest summary counts the documents without an access label and
says what that means; when the filters remove every match, `search` and `ask` say so in
counts only (never showing staff content) instead of blaming retrieval."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.answering.gate import PUBLIC_HINT, filtered_out
from tether.app import Models, Workspace
from tether.cli.ingest import access_note
from tether.cli.main import app
from tether.config import settings_from_mapping
from tether.errors import TetherError
from tether.ingest.sync import sync
from tether.stores.sqlite import SqliteStore
from tether.types import Filters

runner = CliRunner()
SECRET = "SECRET-7731"


def _folder(tmp_path: Path) -> Path:
    """Two unlabelled files, a labelled public one, a public policy in force from 2026."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(f"# Kiosk\n\nThe kiosk password rotates; code {SECRET}.\n")
    (docs / "b.md").write_text("# Kiosk reset\n\nReset the kiosk from the back office.\n")
    (docs / "c.md").write_text("---\naccess: public\n---\n# Hours\n\nOpen from 9 to 5.\n")
    (docs / "d.md").write_text(
        "---\naccess: public\neffective_from: 2026-01-01\n---\n# Layaway\n\nLayaway lasts 60 days.\n"
    )
    return docs


def test_the_default_access_is_stored_and_kept(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    store = SqliteStore(tmp_path / "i.sqlite")
    report = sync(store, docs, default_access="public")
    assert sorted(report.unlabelled) == ["a.md", "b.md"] and report.default_access == "public"
    assert store.meta_value("default_access") == "public"
    assert {d.meta.access for d in store.documents()} == {"public"}
    (docs / "e.md").write_text("# Later\n\nA later unlabelled file.\n")
    later = sync(store, docs)  # not told otherwise: the stored default holds
    assert later.unlabelled == ("e.md",) and later.default_access == "public"
    assert {d.meta.access for d in store.documents()} == {"public"}
    back = sync(store, docs, default_access="staff")  # told otherwise: every file read again
    assert sorted(back.unlabelled) == ["a.md", "b.md", "e.md"]
    access = {d.meta.source: d.meta.access for d in store.documents()}
    assert access == {"a.md": "staff", "b.md": "staff", "c.md": "public", "d.md": "public",
                      "e.md": "staff"}  # fmt: skip
    assert store.meta_value("default_access") == "staff"


def test_fail_closed_stays_the_default_and_an_odd_value_is_refused(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    store = SqliteStore(tmp_path / "i.sqlite")
    report = sync(store, docs)
    assert report.default_access == "staff" and sorted(report.unlabelled) == ["a.md", "b.md"]
    assert {d.meta.source for d in store.documents() if d.meta.access == "staff"} == {
        "a.md", "b.md"
    }  # fmt: skip
    note = access_note(report)
    assert note.startswith(
        "2 documents read have no access label (a.md, b.md): indexed as staff-only"
    )  # the files are named
    assert "--default-access public" in note and "public" in note
    with pytest.raises(TetherError, match="not public or staff"):
        sync(store, docs, default_access="Public")


def test_the_cli_ingest_takes_and_explains_the_default(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    index = str(tmp_path / "i.sqlite")
    result = runner.invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"])
    assert result.exit_code == 0, result.output
    assert "2 documents read have no access label" in result.output
    assert "a.md" in result.output and "--default-access public" in result.output
    again = runner.invoke(
        app, ["ingest", str(docs), "--index", index, "--no-embed", "--default-access", "public"]
    )
    assert again.exit_code == 0 and "indexed as public" in again.output
    bad = runner.invoke(app, ["ingest", str(docs), "--index", index, "--default-access", "x"])
    assert bad.exit_code == 2 and "--default-access" in bad.output


def test_filtered_out_says_why_and_tells_the_public_nothing_of_staff_content(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "i.sqlite")
    sync(store, _folder(tmp_path))
    public = Filters(as_of=None, audience="public")
    why = filtered_out(store, "kiosk", public)  # only staff passages match "kiosk"
    assert why == PUBLIC_HINT
    # the same words when nothing matches at all: no probe can tell staff content is there
    assert filtered_out(store, "zeppelin", public) == why
    assert filtered_out(store, "kiosk", Filters(as_of=None, audience="staff")) == ""
    assert filtered_out(store, "hours", public) == ""  # something allowed matches
    old = Filters(as_of=date(2025, 6, 1), audience="public")
    assert filtered_out(store, "layaway", old) == (
        "1 passage matched but none is in force on 2025-06-01"
    )
    staff_old = Filters(as_of=date(2025, 6, 1), audience="staff")
    assert filtered_out(store, "layaway", staff_old).startswith("1 passage matched but none")


def test_search_and_ask_blame_the_filters_not_retrieval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _folder(tmp_path)
    index = str(tmp_path / "i.sqlite")
    assert runner.invoke(app, ["ingest", str(docs), "--index", index, "--no-embed"]).exit_code == 0
    found = runner.invoke(app, ["search", "kiosk", "--index", index, "--json"])
    assert found.exit_code == 0
    assert "documents without an access label are staff-only" in found.output
    assert SECRET not in found.output

    monkeypatch.setenv("TETHER_PROVIDER", "extractive")
    asked = runner.invoke(app, ["ask", "kiosk password?", "--index", index, "--json"])
    assert SECRET not in asked.output
    data = json.loads(asked.stdout[asked.stdout.index("{") :])
    assert data["gate"]["passed"] is False
    assert data["gate"]["reason"].startswith("nothing the public audience may see matched")
    assert "retrieval too weak" not in data["gate"]["reason"]

    ws = Workspace.open(index, settings=settings_from_mapping({}), models=Models())
    result = ws.ask("kiosk password?")
    assert result.gate is not None and "staff-only" in result.gate.reason
    assert "2 " not in result.gate.reason  # no count of staff passages


def test_the_access_note_names_a_few_files_and_counts_the_rest(tmp_path: Path) -> None:
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(8):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nSome text {i}.\n", encoding="utf-8")
    report = sync(SqliteStore(tmp_path / "i.sqlite"), docs)
    note = access_note(report)
    assert "8 documents read have no access label (" in note and "and 3 more)" in note
    assert sum(f"n{i}.md" in note for i in range(8)) == 5
