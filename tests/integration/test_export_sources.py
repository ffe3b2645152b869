"""Exports as sources, read from fixtures that follow each tool's own format
(tests/fixtures/exports): a page of Zendesk's Help Center API (`articles.json`, with its
`sections`, `categories` and `users` sideloads), a Confluence space's HTML export (the `DOCS`
folder its zip holds) and a Notion workspace's Markdown & CSV export (pages named
`Title <32-hex id>.md`, a database as `.csv` and `_all.csv` with its rows' pages). The zips
are built from the fixture folders here; the hostile ones (a bomb, a `..` member, a damaged
member) are made by hand. Nothing is mocked: the real sync, parsers and index."""

from __future__ import annotations

import copy
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from tether import schemas
from tether.app import SearchOptions, Workspace
from tether.cli import app
from tether.errors import TetherError
from tether.ingest.sources.exports import export_at
from tether.ingest.sources.exports.common import ExportSource
from tether.types import SyncReport

FIXTURES = Path(__file__).parents[1] / "fixtures" / "exports"
ZENDESK = FIXTURES / "zendesk" / "articles.json"
HC = "https://acme.zendesk.com/hc"
RESET, REFUND, DRAFT, BILLING, SHIPPING = (f"{360001234567 + i}" for i in range(5))
WIKI = "https://acme.atlassian.net/wiki/pages/viewpage.action?pageId="
NOTION = "https://www.notion.so/"
RUNBOOK, FAQ = "3e4f5a6b7c8d49e0f1a2b3c4d5e6f7a8", "4f5a6b7c8d9e40f1a2b3c4d5e6f7a8b9"


def _zip(folder: Path, dest: Path, leave_out: str = "", method: int = zipfile.ZIP_DEFLATED) -> Path:
    """A zip of `folder` as the tool writes it (paths relative to it), without the members
    whose path holds `leave_out`."""
    with zipfile.ZipFile(dest, "w", method) as archive:
        for path in sorted(folder.rglob("*")):
            name = path.relative_to(folder).as_posix()
            if path.is_file() and not (leave_out and leave_out in name):
                archive.write(path, name)
    return dest


def _ingest(index: Path, path: Path, **options: Any) -> tuple[SyncReport, ExportSource]:
    """One `tether ingest EXPORT` through the Workspace (BM25 only, parsed in this process)."""
    source = export_at(path)
    assert source is not None
    ws = Workspace.open(index, create=True)
    try:
        options = {"embed": False, "executor": "serial", **options}
        return ws.ingest(source, **options), source
    finally:
        ws.close()


def _found(index: Path, query: str, audience: str = "public") -> list[Any]:
    ws = Workspace.open(index)
    try:
        return ws.search(query, SearchOptions(method="bm25", audience=audience, k=3))  # type: ignore[arg-type]
    finally:
        ws.close()


def _documents(index: Path) -> dict[str, Any]:
    ws = Workspace.open(index)
    try:
        return {d.meta.doc_id: d.meta for d in ws.documents(audience="staff")}
    finally:
        ws.close()


def _newer_zendesk(folder: Path, drop: str = "", draft: str = "", locale: str = "") -> Path:
    """A newer export of the fixture's articles, saved as a folder of one page: without the
    article `drop`, with `draft` unpublished, or only the articles of `locale`."""
    page = json.loads(ZENDESK.read_text(encoding="utf-8"))
    articles = copy.deepcopy(page["articles"])
    articles = [a for a in articles if str(a["id"]) != drop]
    articles = [a for a in articles if not locale or a["locale"] == locale]
    for a in articles:
        if str(a["id"]) == draft:
            a["draft"] = True
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "articles-1.json").write_text(json.dumps({**page, "articles": articles}))
    return folder


# ---- Zendesk ------------------------------------------------------------------------------


def test_zendesk_articles_map_to_documents_and_audiences(tmp_path: Path):
    index = tmp_path / "i.sqlite"
    report, source = _ingest(index, ZENDESK)  # the index's default access: staff
    assert source.kind == "zendesk" and source.location == "https://acme.zendesk.com"
    folder = export_at(ZENDESK.parent)  # the folder of saved pages is the same export
    assert folder is not None and (folder.kind, folder.location) == (source.kind, source.location)
    assert set(report.added) == {
        f"{HC}/en-us/articles/{RESET}", f"{HC}/en-us/articles/{REFUND}",
        f"{HC}/fr/articles/{RESET}", f"{HC}/en-us/articles/{BILLING}",
        f"{HC}/en-us/articles/{SHIPPING}",
    }  # fmt: skip
    assert not report.problems and report.unlabelled == ()  # every article says its audience
    assert any("1 draft article(s) skipped" in w and DRAFT in w for w in report.warnings)
    docs = _documents(index)
    reset, french = docs[f"zendesk/{RESET}"], docs[f"zendesk/{RESET}/fr"]
    assert (reset.access, reset.language, reset.owner) == ("public", "en", "Dana Okafor")
    assert reset.version == "2024-02-10T14:30:00Z" and reset.title == "Resetting your password"
    assert (french.language, french.title) == ("fr", "Réinitialiser votre mot de passe")
    assert docs[f"zendesk/{SHIPPING}"].version == "2024-02-28T16:45:00Z"  # edited_at
    assert docs[f"zendesk/{REFUND}"].access == docs[f"zendesk/{BILLING}"].access == "staff"
    assert f"zendesk/{DRAFT}" not in docs

    (hit, *_) = _found(index, "reset link spam folder")
    assert hit.chunk.meta.source == f"{HC}/en-us/articles/{RESET}"  # the live article
    assert hit.chunk.heading_path[:3] == (
        "Getting started",
        "Your account",
        "Resetting your password",
    )
    # agents only, signed-in users only: never public, found by staff
    assert not _found(index, "KUMQUAT override code") and not _found(index, "quince plan")
    assert (
        _found(index, "KUMQUAT override code", "staff")[0].chunk.meta.doc_id == f"zendesk/{REFUND}"
    )
    # a draft is not indexed; text hidden by its style is dropped
    assert not _found(index, "marmalade", "staff") and not _found(index, "hedgehog", "staff")


def test_zendesk_reingest_reads_nothing_again_and_a_newer_export_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index = tmp_path / "i.sqlite"
    first, _ = _ingest(index, ZENDESK)
    parsed: list[str] = []
    import tether.ingest.executor as executor

    real = executor.parse_task
    monkeypatch.setattr(executor, "parse_task", lambda t: parsed.append(t.state.source) or real(t))
    again, _ = _ingest(index, ZENDESK)
    assert again.added == again.updated == again.removed == () and parsed == []
    assert set(again.unchanged) == set(first.added) and again.chunks_written == 0

    # a newer export, saved under another name: the article it no longer holds leaves
    newer, _ = _ingest(index, _newer_zendesk(tmp_path / "newer", drop=SHIPPING))
    assert newer.removed == (f"{HC}/en-us/articles/{SHIPPING}",) and parsed == []
    assert not _found(index, "Norway delivery", "staff")
    # an article unpublished since (a draft now) leaves too
    unpublished, _ = _ingest(index, _newer_zendesk(tmp_path / "n2", drop=SHIPPING, draft=REFUND))
    assert unpublished.removed == (f"{HC}/en-us/articles/{REFUND}",)
    # an export of the French articles alone leaves the English ones as they are
    french, _ = _ingest(index, _newer_zendesk(tmp_path / "fr", locale="fr"))
    assert french.removed == () and f"{HC}/en-us/articles/{RESET}" in french.unchanged


# ---- Confluence ---------------------------------------------------------------------------


def test_confluence_space_export(tmp_path: Path):
    space = _zip(FIXTURES / "confluence", tmp_path / "Confluence-space-export-231.html.zip")
    index = tmp_path / "i.sqlite"
    report, source = _ingest(index, space)
    assert (source.kind, source.location) == ("confluence", "DOCS")
    pages = {"65537", "65539", "65541", "65543", "98305"}
    assert set(report.added) == {WIKI + p for p in pages} and not report.problems
    # the export carries no page restrictions: no page is labelled, staff by default
    assert set(report.unlabelled) == set(report.added) and report.default_access == "staff"
    assert not _found(index, "kernel 4.18 disk space")
    (hit, *_) = _found(index, "kernel 4.18 disk space", "staff")
    assert (
        hit.chunk.meta.source == WIKI + "65541"
        and hit.chunk.anchor == "Installingtheagent-Requirements"
    )
    assert hit.chunk.heading_path == (
        "Home",
        "Getting started",
        "Installing the agent",
        "Requirements",
    )
    docs = _documents(index)
    agent = docs["confluence/DOCS/65541"]
    assert (agent.title, agent.owner, agent.version) == (
        "Installing the agent",
        "Lee Marsh",
        "2024-03-01",
    )
    assert docs["confluence/DOCS/98305"].language == "de"
    assert not _found(index, "walrus key", "staff")  # hidden in the page
    ws = Workspace.open(index)
    text = " ".join(c.text for c in ws.chunks("confluence/DOCS/65541", audience="staff"))
    ws.close()
    assert "Attachments" not in text and "Document generated by" not in text
    assert text.count("On Linux") == 1  # the table of contents macro is left out

    public, _ = _ingest(index, space, default_access="public")  # the user says: public
    assert set(public.updated) == set(report.added)
    assert _found(index, "kernel 4.18 disk space")[0].chunk.meta.source == WIKI + "65541"
    again, _ = _ingest(index, space)
    assert again.chunks_written == 0 and set(again.unchanged) == set(report.added)
    newer = _zip(FIXTURES / "confluence", tmp_path / "export-2.zip", leave_out="Release-notes")
    fewer, _ = _ingest(index, newer)
    assert fewer.removed == (WIKI + "65543",) and not _found(index, "latency percentiles", "staff")


def test_a_confluence_page_cannot_label_its_own_access(tmp_path: Path):
    """An HTML macro can put a `<meta name="access" content="public">` in a page's body: the
    page stays as the space is ingested (staff here), never public by its own say."""
    import shutil

    copy_ = shutil.copytree(FIXTURES / "confluence", tmp_path / "space")
    notes = copy_ / "DOCS" / "Release-notes_65543.html"
    notes.write_text(notes.read_text().replace(
        '<div class="table-wrap">', '<meta name="access" content="public"><div class="table-wrap">'
    ))  # fmt: skip
    index = tmp_path / "i.sqlite"
    _ingest(index, _zip(copy_, tmp_path / "space.zip"))
    assert _documents(index)["confluence/DOCS/65543"].access == "staff"
    assert not _found(index, "latency percentiles")


# ---- Notion -------------------------------------------------------------------------------


def _parts(dest: Path) -> Path:
    """The Notion fixture as a large export writes it: a zip of two part zips."""
    one = _zip(FIXTURES / "notion", dest.with_name("Part-1.zip"), leave_out="Product FAQ")
    two = dest.with_name("Part-2.zip")
    with zipfile.ZipFile(two, "w") as archive:
        faq = next((FIXTURES / "notion").glob("Product FAQ *.md"))
        archive.write(faq, faq.name)
    with zipfile.ZipFile(dest, "w") as archive:
        archive.write(one, "Export-0b7e-Part-1.zip")
        archive.write(two, "Export-0b7e-Part-2.zip")
    return dest


@pytest.mark.parametrize("nested", [False, True], ids=["one zip", "part zips"])
def test_notion_workspace_export(tmp_path: Path, nested: bool):
    dest = tmp_path / "Export-0b7e.zip"
    workspace = _parts(dest) if nested else _zip(FIXTURES / "notion", dest)
    index = tmp_path / "i.sqlite"
    report, source = _ingest(index, workspace, default_access="public")
    assert source.kind == "notion" and len(report.added) == 6 and not report.problems
    docs = _documents(index)
    remote = docs["notion/1c2d3e4f5a6b47c8d9e0f1a2b3c4d5e6"]
    assert (remote.title, remote.owner, remote.access) == (
        "Remote work policy",
        "Priya Shah",
        "public",
    )
    assert (
        remote.version == "2024-02-05T15:12Z"
        and remote.source == NOTION + "1c2d3e4f5a6b47c8d9e0f1a2b3c4d5e6"
    )
    # the row's Access column (read from _all.csv: the view's .csv lacks the row) keeps it staff
    assert docs[f"notion/{RUNBOOK}"].access == "staff"
    assert not _found(index, "pangolin signing key")
    assert (
        _found(index, "pangolin signing key", "staff")[0].chunk.meta.doc_id == f"notion/{RUNBOOK}"
    )
    (hit, *_) = _found(index, "meals travelling reimbursed")
    assert hit.chunk.heading_path[:3] == ("Team Handbook", "Policies", "Expense policy")
    again, _ = _ingest(index, workspace)
    assert again.chunks_written == 0 and len(again.unchanged) == 6
    # an export of one top-level page removes nothing under the others
    faq = tmp_path / "faq.zip"
    with zipfile.ZipFile(faq, "w") as archive:
        page = next((FIXTURES / "notion").glob("Product FAQ *.md"))
        archive.write(page, page.name)
    alone, _ = _ingest(index, faq)
    assert alone.removed == () and NOTION + FAQ in alone.unchanged
    fewer, _ = _ingest(index, _zip(FIXTURES / "notion", tmp_path / "n.zip", leave_out="Onboarding"))
    assert fewer.removed == (NOTION + "0a1b2c3d4e5f46a7b8c9d0e1f2a3b4c5",)


# ---- refusals -----------------------------------------------------------------------------


def _lie(archive: Path, size: int, packed: int | None = None) -> None:
    """Make every member's central directory entry declare `size` bytes unpacked (and
    `packed` packed): what a crafted bomb says of itself."""
    data = bytearray(archive.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        if packed is not None:
            struct.pack_into("<I", data, at + 20, packed)
        struct.pack_into("<I", data, at + 24, size)
        at = data.find(b"PK\x01\x02", at + 4)
    archive.write_bytes(bytes(data))


def _hostile(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Archives to refuse, with what their error line says."""
    page = "Page 0123456789abcdef0123456789abcdef.md"
    made: dict[str, tuple[Path, str]] = {}
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"this is not a zip file at all\n" * 4)
    made["not a zip"] = (junk, "not a zip archive")
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(page, b"\0" * 30_000_000)  # 30 MB of zeros in about 30 KB
    made["bomb"] = (bomb, "a zip bomb; refused")
    declared = tmp_path / "declared.zip"
    with zipfile.ZipFile(declared, "w") as archive:
        for i in range(6):
            archive.writestr(
                f"Page {i} 0123456789abcdef0123456789abcde{i}.md", b"# Page\n\nText.\n"
            )
    _lie(declared, 190_000_000, packed=1_000_000)  # 6 x 190 MB, none inflating 200 times
    made["declared bomb"] = (declared, "over the 1000 MB limit (a zip bomb?); refused")
    escape = tmp_path / "escape.zip"
    with zipfile.ZipFile(escape, "w") as archive:
        archive.writestr(page, b"# Page\n\nText.\n")
        archive.writestr("../../outside.md", b"# Outside\n")
    made["traversal"] = (escape, "member '../../outside.md' leads outside the archive")
    neither = tmp_path / "neither.zip"
    with zipfile.ZipFile(neither, "w") as archive:
        archive.writestr("readme.txt", b"hello")
    made["neither"] = (neither, "a zip that is neither a Confluence space's HTML export")
    single = json.loads(ZENDESK.read_text(encoding="utf-8"))
    single.update(next_page=f"{HC}/api/v2/help_center/articles.json?page=2", page_count=2)
    partial = tmp_path / "page-1.json"
    partial.write_text(json.dumps(single))
    made["one page of two"] = (partial, "one page of 2 of the articles (more follow")
    other = tmp_path / "tickets.json"
    other.write_text(json.dumps({"tickets": []}))
    made["not articles"] = (other, "not a Zendesk Help Center API page")
    return made


def test_hostile_or_wrong_exports_are_one_error_line_and_write_nothing(tmp_path: Path):
    runner = CliRunner()
    for what, (path, said) in _hostile(tmp_path).items():
        index = tmp_path / f"{what}.sqlite"
        done = runner.invoke(app, ["ingest", str(path), "--index", str(index), "--no-embed"])
        lines = [line for line in done.output.splitlines() if line.strip()]
        assert done.exit_code == 1, (what, done.output)
        assert len(lines) == 1 and lines[0].startswith("error: "), (what, done.output)
        assert said in " ".join(done.output.split()), (what, done.output)
        assert "Traceback" not in done.output and not index.exists(), what


def test_a_damaged_member_stops_the_sync_before_anything_is_written(tmp_path: Path):
    index = tmp_path / "i.sqlite"
    good = _zip(FIXTURES / "notion", tmp_path / "good.zip", method=zipfile.ZIP_STORED)
    _ingest(index, good, default_access="public")
    data = bytearray(good.read_bytes())
    at = data.find(b"Submit receipts within 30 days")
    data[at] ^= 0x20  # one byte of the expense policy, its CRC left as it was
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(data))
    with pytest.raises(TetherError, match=r"cannot be read: Bad CRC-32 .*\(a damaged archive\)"):
        _ingest(index, damaged)
    assert _found(index, "receipts within 30 days")  # the index is as it was


# ---- the command line ---------------------------------------------------------------------


def test_the_command_line_reads_exports_remembers_them_and_syncs_them(tmp_path: Path):
    runner = CliRunner()
    index = str(tmp_path / "i.sqlite")
    done = runner.invoke(app, ["ingest", str(ZENDESK), "--index", index, "--no-embed", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    jsonschema.Draft202012Validator(schemas.IngestReport.model_json_schema()).validate(data)
    assert len(data["added"]) == 5 and data["crawl"] is None
    assert any("draft" in w for w in data["warnings"])
    space = _zip(FIXTURES / "confluence", tmp_path / "space.zip")
    text = runner.invoke(app, ["ingest", str(space), "--index", index, "--no-embed"])
    assert text.exit_code == 0, text.output
    said = " ".join(text.output.split())
    assert "read the Confluence space DOCS from" in said and "5 pages" in said
    assert "attachments not read: 1 files" in said
    wrong = runner.invoke(app, ["ingest", str(space), "--index", index, "--max-pages", "3"])
    assert wrong.exit_code == 2 and "--max-pages" in wrong.output
    synced = runner.invoke(app, ["sync", "--index", index, "--no-embed", "--json"])
    assert synced.exit_code == 0, synced.output
    reports = json.loads(synced.stdout)
    assert len(reports) == 2 and all(r["added"] == [] and r["unchanged"] for r in reports)
    info = runner.invoke(app, ["info", "--index", index, "--audience", "staff"]).output
    assert "confluence DOCS · last synced" in info
    assert "zendesk https://acme.zendesk.com · last synced" in info
    space.unlink()  # the export file is gone: that source is one line, the other still syncs
    gone = runner.invoke(app, ["sync", "--index", index, "--no-embed", "--json"])
    assert gone.exit_code == 1 and len(json.loads(gone.stdout)) == 1
    assert "DOCS: " in gone.stderr and "the confluence export is gone" in gone.stderr
    # a folder of documents is still a folder, not an export, whatever .json it holds
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "package.json").write_text("{not json")
    (tmp_path / "docs" / "guide" / "a.md").write_text("# A\n\nText of the guide.\n")
    docs = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--no-embed", "--json"])
    assert docs.exit_code == 0, docs.output
    assert json.loads(docs.stdout)["added"] == ["guide/a.md"]
    folder = runner.invoke(app, ["ingest", str(FIXTURES / "notion"), "--index",
                                 str(tmp_path / "f.sqlite"), "--no-embed", "--json"])  # fmt: skip
    assert folder.exit_code == 0 and any(
        s.endswith(".md") and "://" not in s for s in json.loads(folder.stdout)["added"]
    )


@pytest.mark.slow
def test_an_unchanged_export_embeds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    index = tmp_path / "i.sqlite"
    first, _ = _ingest(index, ZENDESK, embed=True)
    assert first.chunks_written > 0
    import tether.ingest.sync as folder_sync

    embedded: list[int] = []
    real = folder_sync.embed_chunks

    def counted(chunks: Any, *args: Any, **kwargs: Any) -> Any:
        embedded.append(len(chunks))
        return real(chunks, *args, **kwargs)

    monkeypatch.setattr(folder_sync, "embed_chunks", counted)
    again, _ = _ingest(index, ZENDESK, embed=True)
    assert again.chunks_written == 0 and embedded in ([], [0])
