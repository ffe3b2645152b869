"""Two apps of `tether serve` on one shared state behave as one server: one rate limit, one
set of revoked keys (a revoked key is answered exactly as an unknown one), one set of metric
totals. The shared state is in memory (`fakes_shared.MemoryState`, what a PostgreSQL store
gives its servers); tests/faces/test_serve_processes.py does the same with real processes on
a real PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fakes_shared import MemoryState
from fastapi.testclient import TestClient
from serving import serve_app

from tether.app import Workspace
from tether.config import Settings
from tether.server.keys import digest

STAFF, PUBLIC, OTHER = "tk_staff-shared", "tk_public-shared", "tk_other-shared"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("shared")
    folder = root / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    path = root / "index.sqlite"
    Workspace.open(path, settings=Settings(), create=True).ingest(folder, embed=False)
    return path


@pytest.fixture
def two_servers(index: Path, monkeypatch: pytest.MonkeyPatch):
    store = MemoryState()
    monkeypatch.setattr(Workspace, "open_shared_state", lambda self: store)
    keys = {STAFF: "staff", PUBLIC: "public", OTHER: "public"}
    apps = [
        serve_app(index, keys, anonymous=False, rate=0.01, burst=3, metrics_every_s=60)
        for _ in range(2)
    ]
    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        yield store, a, b


def test_two_servers_on_one_store_share_one_rate_limit(two_servers) -> None:
    _, a, b = two_servers
    codes = [(a, b)[n % 2].get("/v1/whoami", headers=bearer(PUBLIC)).status_code for n in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    refused = b.get("/v1/whoami", headers=bearer(PUBLIC))
    assert int(refused.headers["Retry-After"]) > 0
    assert a.get("/v1/whoami", headers=bearer(OTHER)).status_code == 200  # its own bucket


def test_a_revoked_key_is_refused_by_both_as_an_unknown_key(two_servers) -> None:
    store, a, b = two_servers
    assert a.get("/v1/whoami", headers=bearer(OTHER)).json()["name"] == "k3"
    unknown = b.get("/v1/whoami", headers=bearer("tk_never-issued"))
    store.revoke("k3", digest(OTHER))
    time.sleep(1.1)  # the revoked digests a server checks are at most a second old
    for server in (a, b):
        refused = server.get("/v1/whoami", headers=bearer(OTHER))
        assert refused.status_code == 401
        assert refused.json() == unknown.json()
        assert refused.headers["WWW-Authenticate"] == "Bearer"
    assert a.get("/v1/whoami", headers=bearer(PUBLIC)).status_code == 200  # others unaffected


def test_metrics_are_the_totals_of_both_servers(two_servers) -> None:
    _, a, b = two_servers
    query = {"query": "parking"}
    for server, key in ((a, PUBLIC), (a, PUBLIC), (b, OTHER)):
        assert server.post("/v1/search", json=query, headers=bearer(key)).status_code == 200
    b.get("/metrics", headers=bearer(STAFF))  # b adds its counts before it answers /metrics
    text = a.get("/metrics", headers=bearer(STAFF)).text
    assert 'tether_requests_total{method="POST",route="/v1/search",status="200"} 3.0' in text
    assert "tether_metrics_shared 1.0" in text and "tether_serve_workers 2.0" in text
