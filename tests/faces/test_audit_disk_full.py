"""Issue 47, item 3: the audit cannot be written (the disk is full). Answers are served and
reported, not failed closed (a help desk keeps answering): /readyz stays ready and says the
audit is failing, with the records not written and when the last one failed; /metrics counts
them; the log says so once an episode, not once a request, and again when a record is written.

The disk is "filled" for the server alone, without filling a real one: `tether serve` runs
in a process of its own, and its file size limit (RLIMIT_FSIZE, set from outside with
prlimit once it answers) is lowered below the index's size, so the audit's first write
(its journal, then the index's pages) fails in SQLite's write, as it does when the disk is
full (SQLite reports EFBIG as an I/O error where ENOSPC is SQLITE_FULL; tether meets both in
`clear_errors` and `Workspace.record` alike). Raising the limit again is the space freed."""

from __future__ import annotations

import os
import resource
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
from tether.server.keys import add_key

SRC = Path(__file__).resolve().parents[2] / "src"
QUESTION = {"question": "Is parking free on Sundays?", "as_of": "none"}

pytestmark = pytest.mark.skipif(
    not hasattr(resource, "prlimit"), reason="sets another process's file size limit (Linux)"
)


def _metric(text: str, name: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert lines, f"{name} is not in /metrics"
    return float(lines[0].split()[1])


def test_answers_are_served_and_failed_audit_writes_reported(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    index = tmp_path / "index.sqlite"
    Workspace.open(index, create=True).ingest(folder, embed=False)
    keys = tmp_path / "keys.toml"
    staff = {"Authorization": f"Bearer {add_key(keys, 'desk', 'staff')}"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), TETHER_PROVIDER="extractive",
               XDG_CONFIG_HOME=str(tmp_path / "config"))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--index", str(index), "--port", str(port),
         "--keys", str(keys), "--no-warm", "--rate", "0"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        with httpx.Client(base_url=base, timeout=120) as c:
            began = time.monotonic()
            while True:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() - began < 120, "tether serve did not start"
                try:
                    if c.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.3)
            first = c.post("/v1/ask", json=QUESTION, headers=staff)  # loads what answers need
            assert first.status_code == 200 and first.json()["audit_id"], first.text
            ready = c.get("/readyz").json()
            assert ready["audit"] == "ok" and ready["audit_failures"] == 0

            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (4096, hard))  # "disk full"
            for _ in range(3):
                answered = c.post("/v1/ask", json=QUESTION, headers=staff)
                assert answered.status_code == 200, answered.text  # served all the same
                assert answered.json()["answer"] and answered.json()["audit_id"] is None
            ready = c.get("/readyz")
            assert ready.status_code == 200 and ready.json()["ready"] is True  # not failed closed
            assert ready.json()["audit"] == "failing" and ready.json()["audit_failures"] == 3
            assert ready.json()["audit_last_failure"].endswith("Z")
            metrics = c.get("/metrics", headers=staff).text
            assert _metric(metrics, "tether_audit_failures_total") == 3
            assert _metric(metrics, "tether_audit_failing") == 1
            assert (
                _metric(metrics, "tether_audit_last_failure_timestamp_seconds") > time.time() - 600
            )

            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (hard, hard))  # space freed
            again = c.post("/v1/ask", json=QUESTION, headers=staff)
            assert again.status_code == 200 and again.json()["audit_id"]
            ready = c.get("/readyz").json()
            assert ready["audit"] == "ok" and ready["audit_failures"] == 3  # the count stays
            assert _metric(c.get("/metrics", headers=staff).text, "tether_audit_failing") == 0
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    failed = [line for line in stderr.splitlines() if "not recorded in the audit" in line]
    assert len(failed) == 1, stderr  # once an episode, not once a request
    assert str(index) in failed[0]  # the operator's log names the file
    assert any("written again (3 records" in line for line in stderr.splitlines()), stderr
    assert "Traceback" not in stderr, stderr


def test_a_full_disk_is_an_unwritable_index_and_leaves_the_readiness_alone(tmp_path) -> None:
    """SQLite's own SQLITE_FULL (a page limit stands for the disk here) on a write is an
    UnwritableError: a server answers that write 503 with a sentence naming no file, and its
    /readyz stays ready, as reads still work (a damaged index makes it not ready)."""
    import sqlite3

    from tether.errors import UnavailableError, UnwritableError
    from tether.server.watch import IndexWatch
    from tether.stores.sqlite_open import clear_errors

    path = tmp_path / "full.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE t (x BLOB)")
    db.execute("PRAGMA max_page_count = 3")
    with (
        pytest.raises(UnwritableError, match="the disk is full") as full,
        clear_errors(path, writing=True),
    ):
        db.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    db.close()
    assert full.value.http_status == 503 and str(path) not in str(UnwritableError.public)
    watch = IndexWatch()
    watch.failed(full.value)
    assert not watch.state().failing  # reads still work: not "not ready"
    watch.failed(UnavailableError(f"the index {path} is damaged"))
    assert watch.state().failing and watch.state().errors == 1
