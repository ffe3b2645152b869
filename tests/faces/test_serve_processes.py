"""Two `tether serve` processes (real uvicorn subprocesses on free loopback ports) on one
PostgreSQL collection: an ingest through the Python API is seen by both without a restart,
and an answer asked through each is recorded in the shared audit with its key's name, both
listed by `tether audit --store … --audience staff`; they share one rate limit (the burst's
next request is refused by either), refuse a key revoked by `tether keys revoke` within a
couple of seconds, and show the totals of both in /metrics. `tether serve --workers 2` runs
two processes that share the port and, on PostgreSQL, one rate limit; on an index file it says
that each counts its own. Needs TETHER_TEST_PG_URL (skipped without it, failed in CI)."""

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


def _serve(
    url: str, keys: Path, home: Path, *options: str, rate: str = "0"
) -> tuple[subprocess.Popen, str]:
    """`tether serve` on the store `url` (an index file's path: `--index`), with the keys
    file `keys` and `options`, on a free port."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), TETHER_PROVIDER="extractive",
               XDG_CONFIG_HOME=str(home / "config"))  # fmt: skip
    where = ["--store", url] if "://" in url else ["--index", url]
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", *where, "--keys", str(keys),
         "--port", str(port), "--rate", rate, *options],
        env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, f"http://127.0.0.1:{port}"


def _stop(process: subprocess.Popen) -> str:
    """Stop a server as systemd or docker would (SIGTERM); what it wrote on stderr."""
    process.terminate()
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return stderr or ""


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
    Workspace.open(store=url, create=True).ingest(folder, embed=False)
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
        with Workspace.open(store=url) as writer:  # an ingest beside both servers
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


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text."""
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def _value(text: str, name: str, **labels: str) -> float:
    return sum(v for n, found, v in _samples(text) if n == name and labels.items() <= found.items())


def _get(url: str, **options: object) -> httpx.Response:
    """A GET that waits as long as a loaded CI machine may need (httpx's default is 5 s)."""
    return httpx.get(url, timeout=30, **options)  # type: ignore[arg-type]


def _refused_after(
    base: str, headers: dict[str, str], limit: float
) -> tuple[float, int, int]:
    """Seconds until `base` answers 401 to `headers` (polled every 0.25 s, at most `limit`),
    the requests it took, and how many of them the rate limit turned away (429: the key's
    burst is shared with the requests before, so a slow revocation can reach it)."""
    began, asked, limited = time.monotonic(), 0, 0
    while True:
        asked += 1
        status = _get(f"{base}/v1/whoami", headers=headers).status_code
        if status == 401:
            return time.monotonic() - began, asked, limited
        limited += status == 429
        assert time.monotonic() - began < limit, f"{base} still accepts a revoked key"
        time.sleep(0.25)


def _live_workers(url: str) -> int:
    import psycopg

    from tether.stores.postgres_db import parse_url

    conninfo, name, _ = parse_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM tether_serve_workers w JOIN tether_collections c"
            " ON c.id = w.collection_id WHERE c.name = %s",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_two_servers_on_one_collection_behave_as_one(collection, tmp_path: Path) -> None:
    """One rate limit (a burst of 4 across both, the 5th refused by either), a revoked key
    refused by both within a couple of seconds, and /metrics showing what both counted, after
    one of them stopped."""
    url, _ = collection
    keys = tmp_path / "keys.toml"
    made = {name: add_key(keys, name, audience)
            for name, audience in (("ops", "staff"), ("widget", "public"), ("kiosk", "public"))}  # fmt: skip
    auth = {name: {"Authorization": f"Bearer {key}"} for name, key in made.items()}
    servers = [
        _serve(url, keys, tmp_path, "--burst", "4", "--no-warm", rate="0.01") for _ in range(2)
    ]
    asked = 0  # the API requests made (not /healthz)
    try:
        for process, base in servers:
            _wait_up(process, base)
        (_, base_a), (process_b, base_b) = servers
        codes = [
            _get(f"{(base_a, base_b)[n % 2]}/v1/whoami", headers=auth["widget"])
            for n in range(6)
        ]
        asked += len(codes)
        assert [c.status_code for c in codes] == [200, 200, 200, 200, 429, 429], codes
        assert int(codes[-1].headers["Retry-After"]) > 60  # a token every 100 s

        for base in (base_a, base_b):
            assert _get(f"{base}/v1/whoami", headers=auth["kiosk"]).status_code == 200
        asked += 2
        revoked = CliRunner().invoke(
            app, ["keys", "revoke", "kiosk", "--file", str(keys), "--store", url]
        )
        assert revoked.exit_code == 0, revoked.output
        assert "every server on it refuses the key" in revoked.output
        waits = []
        limited = 2  # the widget's 5th and 6th
        for base in (base_a, base_b):
            seconds, polls, turned_away = _refused_after(base, auth["kiosk"], limit=10.0)
            waits.append(seconds)
            asked += polls
            limited += turned_away
        print(f"revoked key refused after {waits[0]:.2f} s (A), {waits[1]:.2f} s more (B)")

        stopped = _stop(process_b)  # B adds its last counts as it stops
        assert "Traceback" not in stopped, stopped
        shown = _get(f"{base_a}/metrics", headers=auth["ops"])
        assert shown.status_code == 200, shown.text
    finally:
        for process, _ in servers:
            if process.poll() is None:
                _stop(process)
    text = shown.text
    counted = sum(
        v for n, labels, v in _samples(text)
        if n == "tether_requests_total" and labels["route"] not in ("/healthz", "/metrics")
    )  # fmt: skip
    assert counted == asked, text  # every request made to A or B, in A's /metrics
    assert _value(text, "tether_requests_total", route="/v1/whoami", status="429") == limited
    assert _value(text, "tether_turned_away_total", reason="rate") == limited
    assert _value(text, "tether_metrics_shared") == 1
    assert _value(text, "tether_serve_workers") == 1, text  # B left as it stopped


def test_workers_share_the_port_and_one_rate_limit(collection, tmp_path: Path) -> None:
    """`tether serve --workers 2` on PostgreSQL: two processes, both noted live in the store,
    serving one port; a burst of 3 across them, then 429 (each request on a connection of
    its own, so either worker may answer it); both leave the store when stopped."""
    url, _ = collection
    keys = tmp_path / "keys.toml"
    made = {name: add_key(keys, name, audience)
            for name, audience in (("ops", "staff"), ("widget", "public"))}  # fmt: skip
    auth = {name: {"Authorization": f"Bearer {key}"} for name, key in made.items()}
    process, base = _serve(url, keys, tmp_path, "--workers", "2", "--burst", "3", "--no-warm",
                           rate="0.01")  # fmt: skip
    try:
        _wait_up(process, base)
        began = time.monotonic()
        while _live_workers(url) < 2:
            assert time.monotonic() - began < 120, "the second worker did not start"
            time.sleep(0.3)
        codes = [_get(f"{base}/v1/whoami", headers=auth["widget"]).status_code
                 for _ in range(8)]  # fmt: skip
        assert codes == [200, 200, 200] + [429] * 5
        text = _get(f"{base}/metrics", headers=auth["ops"]).text
        assert _value(text, "tether_serve_workers") == 2
        assert _value(text, "tether_metrics_shared") == 1
    finally:
        stderr = _stop(process)
    assert "Traceback" not in stderr, stderr
    assert _live_workers(url) == 0  # each worker left as it stopped


def _parking_index(tmp_path: Path) -> Path:
    """An index file of one unlabelled document, without vectors."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text("# Parking\n\nParking is free on Sundays.\n")
    index = tmp_path / "index.sqlite"
    Workspace.open(index, create=True).ingest(folder, embed=False)
    return index


def test_workers_on_an_index_file_say_each_counts_its_own(tmp_path: Path) -> None:
    """`tether serve --workers 2` over an index file: allowed, says in one line that rate
    limits, metrics and revocations are per process, and /metrics says so too."""
    index = _parking_index(tmp_path)
    keys = tmp_path / "keys.toml"
    ops = {"Authorization": f"Bearer {add_key(keys, 'ops', 'staff')}"}
    process, base = _serve(str(index), keys, tmp_path, "--workers", "2", "--no-warm")
    try:
        _wait_up(process, base)
        text = _get(f"{base}/metrics", headers=ops).text
        assert _value(text, "tether_metrics_shared") == 0
        assert _value(text, "tether_serve_workers") == 1
    finally:
        stderr = _stop(process)
    said = [line for line in stderr.splitlines() if "per process" in line]
    assert said == [
        "rate limits, metrics and key revocations are per process on an index file (each"
        " worker counts its own; a PostgreSQL store shares them)"
    ], stderr
    assert "2 processes" in " ".join(stderr.split())


def _tcp_inodes(port: int, state: str) -> set[str]:
    """The socket inodes of /proc/net/tcp's entries on local `port` in `state` (01:
    ESTABLISHED, 0A: LISTEN)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == state:
            found.add(fields[9])
    return found


def _children_sockets(supervisor: int) -> dict[int, set[str]]:
    """The socket inodes each child process of `supervisor` holds (from /proc)."""
    held: dict[int, set[str]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) != supervisor:
                continue
            links = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:  # gone meanwhile
            continue
        held[int(proc.name)] = {link[8:-1] for link in links if link.startswith("socket:[")}
    return held


def _connections_by_worker(supervisor: int, port: int) -> dict[int, int]:
    """The established connections to `port` that each child process of `supervisor` holds."""
    inodes = _tcp_inodes(port, "01")
    held = {pid: len(socks & inodes) for pid, socks in _children_sockets(supervisor).items()}
    return {pid: n for pid, n in held.items() if n}


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_workers_each_take_a_share_of_connections_opened_at_once(tmp_path: Path) -> None:
    """16 kept-alive connections opened at once to `tether serve --workers 2` are served 8 by
    each worker (the supervisor hands them out in turn; with one shared socket the first
    worker to wake often took them all). A connection handed to a worker still starting waits
    for it."""
    index = _parking_index(tmp_path)
    keys = tmp_path / "keys.toml"
    add_key(keys, "ops", "staff")
    process, base = _serve(str(index), keys, tmp_path, "--workers", "2", "--no-warm")
    port = int(base.rsplit(":", 1)[1])
    opened: list[socket.socket] = []
    try:
        _wait_up(process, base)
        opened = [socket.create_connection(("127.0.0.1", port), timeout=120) for _ in range(16)]
        for conn in opened:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        for conn in opened:
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        held = _connections_by_worker(process.pid, port)
        assert sorted(held.values()) == [8, 8], held
    finally:
        for conn in opened:
            conn.close()
        stderr = _stop(process)
    assert "Traceback" not in stderr, stderr


def test_workers_that_cannot_start_stop_the_server_with_one_line(tmp_path: Path) -> None:
    """Workers that cannot build their app (here: a collection that does not exist, which the
    CLI would have refused before starting them) each say why in one line, and the supervisor
    stops instead of starting them again for ever."""
    from pg_support import pg_url

    missing = f"{pg_url()}{'&' if '?' in pg_url() else '?'}collection=never-{os.getpid()}"
    script = (
        "import sys\n"
        "from tether.errors import TetherError\n"
        "from tether.server.api import ServeConfig\n"
        "from tether.server.running import Plan, serve\n"
        f"plan = Plan(None, {missing!r}, None, False, ServeConfig(warm=False))\n"
        "try:\n"
        f"    serve(plan, '127.0.0.1', {_free_port()}, workers=2)\n"
        "except TetherError as exc:\n"
        "    sys.exit(f'stopped: {exc}')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(PYTHONPATH=str(SRC), XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, timeout=120,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if "did not start" in line]
    assert lines[-1] == "stopped: the workers of tether serve did not start (the reason is above)"
    assert any(line.startswith("error: a worker of tether serve did not start: no collection")
               for line in lines), done.stderr  # fmt: skip
    assert "Traceback" not in done.stderr
