"""Issue 47, item 2: another process of the same user cannot join the port of `tether serve
--workers N`. The workers used to listen on sockets of their own bound with SO_REUSEPORT, and
any process of the same user that bound the port with SO_REUSEPORT joined the group and was
handed a share of the connections, keys in headers included. Now the supervisor alone binds
the port, without SO_REUSEPORT: the intruder's bind fails with EADDRINUSE and every
connection still reaches tether's workers."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

import httpx

from tether.app import Workspace
from tether.config import VARIABLES

SRC = Path(__file__).resolve().parents[2] / "src"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _intrude(port: int, *options: str) -> int | None:
    """Bind and listen on 127.0.0.1:`port` with `options` set, as another process would: the
    errno of the refusal, or None when it got in (it closes at once)."""
    with socket.socket() as intruder:
        for option in options:
            intruder.setsockopt(socket.SOL_SOCKET, getattr(socket, option), 1)
        try:
            intruder.bind(("127.0.0.1", port))
            intruder.listen()
        except OSError as exc:
            return exc.errno
    return None


@pytest.mark.skipif(not hasattr(socket, "SO_REUSEPORT"), reason="SO_REUSEPORT is Unix's")
def test_another_process_cannot_bind_the_port_of_the_workers(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    index = tmp_path / "index.sqlite"
    Workspace.open(index, create=True).ingest(folder, embed=False)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), TETHER_PROVIDER="extractive",
               XDG_CONFIG_HOME=str(tmp_path / "config"))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--index", str(index), "--port", str(port),
         "--allow-anonymous", "--workers", "2", "--no-warm", "--rate", "0"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        began = time.monotonic()
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() - began < 120, "tether serve did not start"
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        refused = {
            options: _intrude(port, *options)
            for options in (("SO_REUSEPORT",), ("SO_REUSEADDR", "SO_REUSEPORT"), ())
        }
        assert set(refused.values()) == {errno.EADDRINUSE}, refused
        with httpx.Client(base_url=base, timeout=60) as client:  # still served, by tether
            for _ in range(8):
                found = client.post("/v1/search", json={"query": "parking", "method": "bm25"})
                assert found.status_code == 200 and found.json()[0]["doc_id"] == "parking"
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
