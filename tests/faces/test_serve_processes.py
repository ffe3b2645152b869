"""Two `tether serve` processes (real uvicorn subprocesses on free loopback ports) on one
PostgreSQL collection: an ingest through the Python API is seen by both without a restart,
and an answer asked through each is recorded in the shared audit with its key's name, both
listed by `tether audit --store … --audience staff`. Needs TETHER_TEST_PG_URL (skipped
without it, failed in CI)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

import httpx
from pg_support import drop_collection, fresh_collection
from typer.testing import CliRunner

from tether.app import Workspace
from tether.cli.main import app
from tether.config import VARIABLES
from tether.server.keys import add_key

SRC = Path(__file__).resolve().parents[2] / "src"
QUERY = {"query": "lighthouse tours", "method": "bm25"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(url: str, keys: Path, home: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), TETHER_PROVIDER="extractive",
               XDG_CONFIG_HOME=str(home / "config"))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--store", url, "--keys", str(keys),
         "--port", str(port), "--rate", "0"],
        env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, f"http://127.0.0.1:{port}"


def _wait_up(process: subprocess.Popen, base: str, deadline: float = 120.0) -> None:
    began = time.monotonic()
    while time.monotonic() - began < deadline:
        if process.poll() is not None:
            pytest.fail(f"tether serve stopped: {process.stderr.read() if process.stderr else ''}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"tether serve at {base} did not start in {deadline:.0f} s")


@pytest.fixture
def collection(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    url = fresh_collection()
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    Workspace(store=url, create=True).ingest(folder, embed=False)
    yield url, folder
    drop_collection(url)


def test_two_servers_share_one_postgresql_store(collection, tmp_path: Path) -> None:
    url, folder = collection
    keys = tmp_path / "keys.toml"
    secrets = {"desk-a": add_key(keys, "desk-a", "staff"), "widget-b": add_key(keys, "widget-b", "public")}
    servers = [_serve(url, keys, tmp_path), _serve(url, keys, tmp_path)]
    try:
        for process, base in servers:
            _wait_up(process, base)
        (_, base_a), (_, base_b) = servers
        auth = {name: {"Authorization": f"Bearer {key}"} for name, key in secrets.items()}
        for base in (base_a, base_b):
            assert httpx.post(f"{base}/v1/search", json=QUERY, headers=auth["widget-b"]).json() == []
        (folder / "tours.md").write_text(
            "---\naccess: public\n---\n# Tours\n\nLighthouse tours start at noon.\n"
        )
        with Workspace(store=url) as writer:  # an ingest beside both servers
            assert writer.ingest(folder, embed=False).committed
        for base in (base_a, base_b):  # seen by both without a restart
            hits = httpx.post(f"{base}/v1/search", json=QUERY, headers=auth["widget-b"]).json()
            assert hits and "Lighthouse tours" in hits[0]["text"]
        question = {"question": "When do lighthouse tours start?", "method": "bm25"}
        for base, name in ((base_a, "desk-a"), (base_b, "widget-b")):
            asked = httpx.post(f"{base}/v1/ask", json=question, headers=auth[name], timeout=60)
            assert asked.status_code == 200, asked.text
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait(timeout=30)
    listed = CliRunner().invoke(app, ["audit", "--store", url, "--audience", "staff", "--json"])
    assert listed.exit_code == 0, listed.output
    asked_by = sorted((e["who"], e["audience"]) for e in json.loads(listed.stdout))
    assert asked_by == [("desk-a", "staff"), ("widget-b", "public")]
    public = CliRunner().invoke(app, ["audit", "--store", url, "--json"])
    # a public reader sees the public entry only, without its asker or id
    assert [(e["who"], e["audience"], e["id"]) for e in json.loads(public.stdout)] == [
        ("", "public", 0)
    ]


def _cut_connections(url: str, application_name: str) -> int:
    """Terminate the PostgreSQL sessions named `application_name` (as a restart or a
    firewall would); how many."""
    import psycopg

    from tether.stores.postgres_db import parse_url

    conninfo, _, _ = parse_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchall()
    return len(rows)


def test_a_server_reconnects_after_its_postgresql_sessions_are_cut(collection) -> None:
    """A cut connection fails the request that finds it (502, once per thread), and the next
    request on that thread opens a new one: the server does not need a restart."""
    from fastapi.testclient import TestClient

    from tether.config import Settings
    from tether.server.api import ServeConfig, create_app

    url, _ = collection
    name = f"tether-reconnect-{os.getpid()}"
    named = url + f"&application_name={name}"
    config = ServeConfig(rate=0, warm=False, readers=1, model_slots=1)  # one thread per lane
    app = create_app(store=named, config=config, settings=Settings(provider="extractive"))
    parking = {"query": "parking Sundays", "method": "bm25"}
    question = {"question": "Is parking free on Sundays?", "method": "bm25"}
    with TestClient(app) as client:
        assert client.post("/v1/search", json=parking).status_code == 200
        assert client.post("/v1/ask", json=question).status_code == 200
        assert _cut_connections(url, name) >= 2  # the reader's, the model lane's (and audit)
        failed = client.post("/v1/search", json=parking)
        assert failed.status_code == 502, failed.text
        assert failed.json()["type"].endswith("upstream-failed")
        hits = client.post("/v1/search", json=parking)
        assert hits.status_code == 200 and "free on Sundays" in hits.json()[0]["text"]
        assert client.post("/v1/ask", json=question).status_code == 502  # the model lane's turn
        assert client.post("/v1/ask", json=question).status_code == 200
