"""Issue 47, item 1: a damaged index. A server whose index file is damaged after it started
(truncated, overwritten) answered an anonymous search 400 with a detail naming the index's
path, and /readyz (no key needed) said the same. Now the caller gets 503 with a sentence
that names no file, /readyz says not ready (no file named either), the path and the real
error go to the server's log, and a check that passes once the index is rebuilt brings it
back. `tether serve` refuses a damaged index as it starts, in one line naming the path (exit
1), and `tether search` says so in one line too: there the user owns the file."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx
from serving import live_server, serve_app
from typer.testing import CliRunner

from tether.app import Workspace
from tether.cli.main import app
from tether.config import VARIABLES
from tether.errors import IndexLockedError, UnavailableError

STAFF = "tk_staff-damaged"
SEARCH = {"query": "parking", "method": "bm25"}
SRC = Path(__file__).resolve().parents[2] / "src"
runner = CliRunner()


def _ingest(folder: Path, index: Path, *, rebuild: bool = False) -> None:
    Workspace.open(index, create=True).ingest(folder, embed=False, rebuild=rebuild)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """(the documents' folder, an index of them: lexical only, no model)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    index = tmp_path / "helpdesk-index.sqlite"
    _ingest(folder, index)
    return folder, index


def _damage_page(index: Path, table: str) -> None:
    """Overwrite the first page of `table` with garbage (the rest of the file is sound)."""
    db = sqlite3.connect(index)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    db.close()
    data = bytearray(index.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[(root - 1) * size : root * size] = b"\xa5" * size
    index.write_bytes(bytes(data))


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def server_log() -> Iterator[Lines]:
    """What the server logs from now on (uvicorn's error log, where `tether serve` writes;
    heard once uvicorn has configured its logging, which replaces the handlers)."""
    handler = Lines()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def _says_no_file(response: httpx.Response, index: Path) -> None:
    for name in (str(index), index.name, str(index.parent), ".sqlite"):
        assert name not in response.text, response.text


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_a_damaged_index_is_503_without_its_path_and_readyz_says_not_ready(
    built, damage, monkeypatch
) -> None:
    folder, index = built
    monkeypatch.setattr("tether.server.watch.PROBE_EVERY_S", 0.2)
    app_ = serve_app(index, {STAFF: "staff"}, anonymous=True, warm=False)
    with (
        live_server(app_) as (host, port),
        server_log() as logged_lines,
        httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as c,
    ):
        assert c.post("/v1/search", json=SEARCH).status_code == 200
        assert c.get("/readyz").json()["ready"] is True
        size = index.stat().st_size
        if damage == "truncated":
            with index.open("r+b") as f:
                f.truncate(size // 3)
        else:
            index.write_bytes(b"\x00garbage" * (size // 8))

        found = c.post("/v1/search", json=SEARCH)  # anonymous
        assert found.status_code == 503, found.text
        body = found.json()
        assert found.headers["content-type"].startswith("application/problem+json")
        assert body["type"] == UnavailableError.problem_type()
        assert body["detail"] == UnavailableError.public
        _says_no_file(found, index)
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["ready"] is False
        assert ready.json()["status"] == "failed"
        assert ready.json()["detail"] == UnavailableError.public
        _says_no_file(ready, index)
        metrics = c.get("/metrics", headers={"Authorization": f"Bearer {STAFF}"}).text
        assert "tether_index_unavailable 1.0" in metrics
        assert "tether_index_errors_total" in metrics
        logged = "\n".join(logged_lines.lines)
        assert str(index) in logged and "cannot be used" in logged  # the operator's line
        for _ in range(3):  # every request fails alike; the log says it once, not each time
            assert c.post("/v1/search", json=SEARCH).status_code == 503
        assert sum("cannot be used" in line for line in logged_lines.lines) == 1

        index.unlink()
        _ingest(folder, index)  # rebuilt: a new file in its place
        for _ in range(100):
            ready = c.get("/readyz")  # each due one starts a check
            if ready.status_code == 200:
                break
            time.sleep(0.1)
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        assert c.post("/v1/search", json=SEARCH).status_code == 200
        assert any("can be used again" in line for line in logged_lines.lines)


def test_a_warm_up_on_a_damaged_index_fails_without_naming_it(built) -> None:
    from fastapi.testclient import TestClient

    _, index = built
    _damage_page(index, "meta")  # what opening the index reads
    with TestClient(serve_app(index, {}, anonymous=True), raise_server_exceptions=False) as c:
        for _ in range(200):
            ready = c.get("/readyz")
            if ready.json()["status"] != "warming":
                break
            time.sleep(0.05)
        assert ready.status_code == 503 and ready.json()["status"] == "failed"
        assert ready.json()["detail"].endswith(str(UnavailableError.public))
        _says_no_file(ready, index)


def test_a_locked_index_is_409_without_its_path(built, monkeypatch) -> None:
    from fastapi.testclient import TestClient

    _, index = built
    monkeypatch.setenv("TETHER_LOCK_TIMEOUT", "0.2")
    holder = sqlite3.connect(index, isolation_level=None)
    try:
        with TestClient(serve_app(index, {}, anonymous=True, warm=False)) as c:
            holder.execute("BEGIN EXCLUSIVE")
            found = c.get("/v1/documents")
            holder.execute("ROLLBACK")
        assert found.status_code == 409 and found.json()["detail"] == IndexLockedError.public
        _says_no_file(found, index)
    finally:
        holder.close()


def test_serve_refuses_a_damaged_index_in_one_line_naming_it(built, tmp_path: Path) -> None:
    """Damage that opening the index does not meet (a table's pages): `tether serve` reads
    every page as it starts and stops with one line (it served it before, to fail later)."""
    _, index = built
    _damage_page(index, "chunks")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run(
        [sys.executable, "-m", "tether", "serve", "--index", str(index), "--port", str(port),
         "--no-warm"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the index {index} is damaged ")
    assert "--rebuild" in lines[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize("table", ["chunks", "meta"])
def test_search_on_a_damaged_index_says_so_in_one_line_naming_it(built, table) -> None:
    _, index = built
    _damage_page(index, table)
    done = runner.invoke(app, ["search", "parking", "--index", str(index), "--method", "bm25"])
    assert done.exit_code == 1, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the index {index} is damaged")
