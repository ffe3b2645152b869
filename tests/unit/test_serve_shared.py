"""What the servers on one store share (`tether.server.shared`), against an in-memory store
(`fakes_shared.MemoryState`): metric totals that add up and outlive a server, revocations read
at most once a TTL, the process's own limits without a store; the keys file's `remove_key`
and `revoke_key`; the plan each worker of `tether serve --workers N` builds its app from."""

from __future__ import annotations

import asyncio
import json
import pickle
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fakes_shared import MemoryState

from tether.errors import NotFoundError, TetherError, UpstreamError
from tether.server.http import Metrics
from tether.server.keys import add_key, digest, load_keys, remove_key, revoke_key
from tether.server.shared import Revocations, Shared, SharedMetrics


def _samples(text: bytes) -> dict[str, float]:
    """The samples of a Prometheus text, by their line's name and labels."""
    found = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def _serve(metrics: Metrics, route: str, status: str, n: int) -> None:
    for _ in range(n):
        metrics.requests.labels(route, "GET", status).inc()
        metrics.latency.labels(route).observe(0.03)


def test_the_metrics_of_two_servers_add_up_and_stay_when_one_stops() -> None:
    store = MemoryState()
    one, two = Metrics(), Metrics()
    a, b = SharedMetrics(one, store, "a"), SharedMetrics(two, store, "b")
    _serve(one, "/v1/search", "200", 3)
    _serve(two, "/v1/search", "200", 2)
    _serve(two, "/v1/ask", "429", 1)
    b.publish()
    shown = _samples(a.render())  # a adds its own counts first
    assert shown['tether_requests_total{method="GET",route="/v1/search",status="200"}'] == 5
    assert shown['tether_requests_total{method="GET",route="/v1/ask",status="429"}'] == 1
    assert shown['tether_request_seconds_count{route="/v1/search"}'] == 5
    assert shown['tether_request_seconds_bucket{le="0.05",route="/v1/search"}'] == 5
    assert shown['tether_request_seconds_bucket{le="0.025",route="/v1/search"}'] == 0
    assert shown["tether_metrics_shared"] == 1 and shown["tether_serve_workers"] == 2
    assert not any(name.endswith("_created") for name in shown)
    assert _samples(b.render()) == shown  # every server shows the same totals

    _serve(two, "/v1/search", "200", 4)
    b.stop()  # its last counts are added as it leaves
    _serve(one, "/v1/search", "200", 1)
    shown = _samples(a.render())
    assert shown['tether_requests_total{method="GET",route="/v1/search",status="200"}'] == 10
    assert shown["tether_serve_workers"] == 1
    a.publish()
    a.publish()  # nothing new: nothing added twice
    assert store.totals[("tether_requests_total", json.dumps(
        {"method": "GET", "route": "/v1/search", "status": "200"}, sort_keys=True))] == 10  # fmt: skip


def test_counts_that_could_not_be_added_are_added_next_time() -> None:
    store = MemoryState()
    metrics = Metrics()
    shared = SharedMetrics(metrics, store, "a")
    _serve(metrics, "/v1/search", "200", 2)
    store.fail_adds = 1
    with pytest.raises(UpstreamError):
        shared.publish()
    _serve(metrics, "/v1/search", "200", 1)
    shared.publish()
    key = ("tether_requests_total", '{"method": "GET", "route": "/v1/search", "status": "200"}')
    assert store.totals[key] == 3


def test_the_publishing_thread_adds_counts_and_survives_a_failure() -> None:
    store = MemoryState()
    metrics = Metrics()
    shared = SharedMetrics(metrics, store, "a", every_s=0.02)
    store.fail_adds = 1
    shared.start()
    _serve(metrics, "/healthz", "200", 1)
    began = time.monotonic()
    while not store.totals and time.monotonic() - began < 5:
        time.sleep(0.01)
    assert store.live_workers(5) == 1
    shared.stop()
    assert store.live_workers(5) == 0  # it left
    assert sum(v for (name, _), v in store.totals.items() if name == "tether_requests_total") == 1


def test_without_a_store_the_limits_and_metrics_are_the_process_own() -> None:
    metrics = Metrics()
    shared = Shared(None, metrics, rate=0.01, burst=1, failed_auth_per_minute=10)
    assert not shared.remote and not shared.revoked(digest("tk_anything"))
    assert shared.limiter.take("k") == 0 and shared.limiter.take("k") > 0
    shown = _samples(shared.render())
    assert shown["tether_metrics_shared"] == 0 and shown["tether_serve_workers"] == 1
    shared.start()
    shared.close()


def test_with_a_store_every_server_takes_from_its_buckets() -> None:
    store = MemoryState()
    servers = [
        Shared(store, Metrics(), rate=0.01, burst=3, failed_auth_per_minute=2) for _ in range(2)
    ]
    assert all(s.remote for s in servers)
    answers = [servers[n % 2].limiter.take("desk") for n in range(5)]
    assert answers[:3] == [0, 0, 0] and all(wait > 0 for wait in answers[3:])
    servers[0].failures.failed("10.0.0.1")
    servers[1].failures.failed("10.0.0.1")
    assert servers[0].failures.blocked("10.0.0.1") > 0  # the two failures were counted as one
    for s in servers:
        s.close()
    assert store.closed == 2


def test_revocations_are_read_again_when_their_ttl_passes() -> None:
    store = MemoryState()
    seen = Revocations(store, ttl_s=0.05)
    assert digest("tk_a") not in seen
    store.revoke("a", digest("tk_a"))
    assert digest("tk_a") not in seen  # within the TTL: the digests read before
    assert store.revoked_reads == 1
    time.sleep(0.06)
    assert digest("tk_a") in seen and store.revoked_reads == 2


def test_remove_key_keeps_the_rest_of_a_toml_file(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    add_key(keys, "desk", "staff")
    add_key(keys, "widget", "public")
    add_key(keys, "kiosk", "public")
    block = '[[keys]]\nname = "widget"'
    keys.write_text(keys.read_text().replace(block, "# the web widget\n" + block))
    before = {k.name: d for d, k in load_keys(keys).keys.items()}
    assert remove_key(keys, "widget") == before["widget"]
    after = {k.name: d for d, k in load_keys(keys).keys.items()}
    assert after == {n: d for n, d in before.items() if n != "widget"}
    assert "# the web widget" in keys.read_text() and "allow_anonymous = false" in keys.read_text()
    with pytest.raises(NotFoundError, match="no key named 'widget'"):
        remove_key(keys, "widget")


def test_remove_key_from_a_json_file_and_a_toml_file_it_cannot_edit(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    add_key(keys, "desk", "staff")
    add_key(keys, "widget", "public")
    remove_key(keys, "desk")
    assert [k.name for k in load_keys(keys).keys.values()] == ["widget"]
    inline = tmp_path / "inline.toml"
    entries = [f'{{name = "{n}", audience = "staff", sha256 = "{digest(n)}"}}' for n in "ab"]
    inline.write_text(f"keys = [{', '.join(entries)}]\n")
    with pytest.raises(TetherError, match="delete its entry by hand"):
        remove_key(inline, "a")
    assert len(load_keys(inline).keys) == 2  # untouched


def test_revoke_key_records_the_digest_before_it_edits_the_file(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    key = add_key(keys, "desk", "staff")
    add_key(keys, "widget", "public")

    class Down(MemoryState):
        def revoke(self, name: str, sha256: str) -> bool:
            raise UpstreamError("PostgreSQL at memory failed: gone")

    with pytest.raises(UpstreamError):
        revoke_key(keys, "desk", Down())
    assert "desk" in {k.name for k in load_keys(keys).keys.values()}  # the file keeps it
    store = MemoryState()
    assert revoke_key(keys, "desk", store) is True
    assert store.digests == {digest(key): "desk"}
    assert {k.name for k in load_keys(keys).keys.values()} == {"widget"}
    assert revoke_key(keys, "widget") is None  # no store: the file only


def test_the_plan_of_the_workers_goes_through_the_environment(tmp_path: Path) -> None:
    from uvicorn.server import ServerState

    from tether.server.api import ServeConfig
    from tether.server.running import Plan, uvicorn_config

    config = ServeConfig(rate=3, burst=7, cors_origins=("https://a.example",), warm=False,
                         deadline_s=12, body_timeout_s=3, model_waiting=2)  # fmt: skip
    plan = Plan(tmp_path / "index.sqlite", "", tmp_path / "keys.toml", True, config)
    assert Plan.from_json(plan.to_json()) == plan
    pg = Plan(None, "postgresql://u@h/db?collection=x", None, False, config)
    assert Plan.from_json(pg.to_json()) == pg
    workers = uvicorn_config("tether.server.running:worker_app", "127.0.0.1", 0, workers=2,
                             forwarded_allow_ips=("10.0.0.0/8",), header_timeout_s=2.5)  # fmt: skip
    assert workers.factory and workers.workers == 2
    copied = pickle.loads(pickle.dumps(workers))  # as each spawned worker gets it
    assert copied.forwarded_allow_ips == ["10.0.0.0/8"]
    one = uvicorn_config(_app, "127.0.0.1", 0)
    one.load()
    protocol = copied.http(config=one, server_state=ServerState(), app_state={},
                           _loop=asyncio.new_event_loop())  # fmt: skip
    assert protocol.header_timeout_s == 2.5


async def _app(scope, receive, send) -> None:  # a plain ASGI app for a config to load
    return None
