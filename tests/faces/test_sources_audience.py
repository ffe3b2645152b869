"""An article an export marks for agents or signed-in users only, or a page a space export
brings in as staff, never reaches a public caller through the HTTP API (issue 46's audience
goal: the differential idea of tests/faces/test_differential.py extended to sources).

The Zendesk fixture (tests/fixtures/exports/zendesk, the Help Center API's JSON) is ingested
with `public` as the index's default access: its agents-only article (the KUMQUAT override
code, `user_segment_id` of agents) and its signed-in-only one (the quince plan) must still be
staff. The Confluence fixture (tests/fixtures/exports/confluence, zipped as the tool writes
it) is ingested with the default access (staff: the export carries no page restrictions).
Both are embedded with the default e5 model (as tests/faces/test_server.py's index is). Then
`/v1/search` is asked, with `bm25`, `dense`, `hybrid` and `rerank`, for a phrase only a restricted page
holds: with a public key, anonymously and as staff narrowed to the public view, it never comes
back (nor does any staff hit); with a staff key it does.

What it cannot do: `deep` (the reader's rerank) is not asked; other faces (CLI, MCP) share the retrieval under `/v1/search` and are
covered for folders by tests/faces/test_differential.py.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tether.app import Workspace, shared_models
from tether.config import settings_from_mapping
from tether.ingest.sources.exports import export_at
from tether.server.api import ServeConfig, create_app
from tether.server.keys import KeyRing

FIXTURES = Path(__file__).parents[1] / "fixtures" / "exports"
PUBLIC, STAFF = "tk_public-sources", "tk_staff-sources"
METHODS = ("bm25", "dense", "hybrid", "rerank")
# (export, its default access, a phrase only a restricted page holds, that page's doc_id,
#  a phrase a public page holds or None when every page is staff)
CASES = {
    "zendesk-agents": ("zendesk", "public", "KUMQUAT override code",
                       "zendesk/360001234568", "reset link spam folder"),
    "zendesk-signed-in": ("zendesk", "public", "quince plan", "zendesk/360001234570", None),
    "confluence": ("confluence", None, "kernel 4.18 disk space", "confluence/DOCS/65541", None),
}  # fmt: skip


def _confluence_zip(dest: Path) -> Path:
    """The Confluence fixture as the zip the tool writes (paths relative to the folder)."""
    folder = FIXTURES / "confluence"
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return dest


def _index(root: Path, export: str, default_access: str | None) -> Path:
    path = root / f"{export}-{default_access}.sqlite"
    if path.exists():
        return path
    where = (
        FIXTURES / "zendesk" / "articles.json"
        if export == "zendesk"
        else _confluence_zip(root / "Confluence-space-export-231.html.zip")
    )
    source = export_at(where)
    assert source is not None and source.kind == export
    ws = Workspace.open(path, settings=settings_from_mapping({}), models=shared_models())
    try:
        report = ws.ingest(source, executor="serial", default_access=default_access)
        assert report.added and not report.problems
        floors = {"bm25": 0.0, "dense": -1.0, "hybrid": -1.0, "rerank": -1e9}
        ws.set_gate_floors(floors)  # a few documents: no gate between the caller and the hits
    finally:
        ws.close()
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sources-audience")


def _client(index: Path) -> TestClient:
    keys = KeyRing.of({PUBLIC: "public", STAFF: "staff"}, allow_anonymous=True)
    app = create_app(index, keys, config=ServeConfig(rate=0.0), models=shared_models())
    return TestClient(app, raise_server_exceptions=False)


def _search(client: TestClient, query: str, method: str, key: str | None, **extra: str) -> list:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"query": query, "method": method, "k": 10, "as_of": "none", **extra}
    got = client.post("/v1/search", json=body, headers=headers)
    assert got.status_code == 200, got.text
    hits = got.json()
    assert isinstance(hits, list)
    return hits


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", CASES)
def test_a_restricted_page_never_reaches_a_public_caller(root: Path, case: str, method: str):
    export, default_access, phrase, doc_id, public_phrase = CASES[case]
    with _client(_index(root, export, default_access)) as client:
        staff = _search(client, phrase, method, STAFF)
        assert doc_id in {h["doc_id"] for h in staff}, staff  # the staff key finds it
        for who, extra in ((PUBLIC, {}), (None, {}), (STAFF, {"view": "public"})):
            hits = _search(client, phrase, method, who, **extra)
            assert doc_id not in {h["doc_id"] for h in hits}, (who, extra, hits)
            assert all(h["access"] == "public" for h in hits), (who, extra, hits)
            assert not any(phrase.split()[0].lower() in h["text"].lower() for h in hits)
        if public_phrase:  # the public articles of the same export do reach the public
            assert _search(client, public_phrase, method, PUBLIC)
            assert _search(client, public_phrase, method, None)
