"""The served faces under attack (issue 25): each test reproduces one attack on `tether serve`
and asserts the one clear answer (a status and a one-line problem body, never a traceback).
A small lexical index (no model loaded) keeps them fast; the timeouts run against a real
uvicorn on a free loopback port, as `tether serve` starts it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from serving import serve_app

from tether.config import Settings

PUBLIC, STAFF = "tk_public-hardening", "tk_staff-hardening"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def is_problem(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["detail"] and "\n" not in body["detail"]
    assert "Traceback" not in response.text
    return body


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """One public page and one staff page, lexical only (no vectors, no model)."""
    from tether.app import Workspace

    root = tmp_path_factory.mktemp("hardening")
    folder = root / "docs"
    folder.mkdir()
    (folder / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    (folder / "fraud.md").write_text(
        "---\naccess: staff\n---\n# Fraud\n\nOrders over 900 euros are held for a check.\n"
    )
    path = root / "index.sqlite"
    Workspace.open(path, settings=Settings(), create=True).ingest(folder, embed=False)
    return path


def client(index: Path, *, anonymous: bool = True, **config: object) -> TestClient:
    app = serve_app(index, {PUBLIC: "public", STAFF: "staff"}, anonymous=anonymous, **config)
    return TestClient(app, raise_server_exceptions=False)


# ---- 1. security headers, no CDN by default ------------------------------------------------

SEARCH = {"query": "parking", "method": "bm25"}


def test_every_response_carries_the_security_headers(index) -> None:
    with client(index) as c:
        answers = [
            c.get("/"), c.get("/static/app.js"), c.get("/static/style.css"), c.get("/healthz"),
            c.post("/v1/search", json=SEARCH), c.get("/v1/nothing"), c.get("/openapi.json"),
            c.post("/v1/search", json=SEARCH, headers=bearer("tk_wrong")),
        ]  # fmt: skip
    for r in answers:
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, r.url
        assert "script-src 'self';" in csp and "unsafe-inline" not in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "no-referrer"


def test_the_page_needs_nothing_but_its_own_origin() -> None:
    """The CSP allows no inline script or style: the page has none, and loads only /static."""
    import re

    from tether.server.api import STATIC

    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/app.js" defer>']
    assert "<style" not in html and " style=" not in html and "on" + "click=" not in html
    assert re.findall(r'(?:src|href)="([^"]+)"', html) == ["/static/style.css", "/static/app.js"]
    script = (STATIC / "app.js").read_text()
    assert ".style" not in script and 'setAttribute("style"' not in script


def test_docs_is_off_by_default_and_opt_in_says_where_swagger_comes_from(index) -> None:
    with client(index) as c:
        is_problem(c.get("/docs"), 404)
        is_problem(c.get("/redoc"), 404)
        assert "/v1/search" in c.get("/openapi.json").json()["paths"]
    with client(index, docs=True) as c:
        page = c.get("/docs")
    assert page.status_code == 200 and "swagger-ui" in page.text
    csp = page.headers["content-security-policy"]
    assert "https://cdn.jsdelivr.net" in csp and "'sha256-" in csp
    assert "frame-ancestors 'none'" in csp and page.headers["x-content-type-options"] == "nosniff"


# ---- 2. failed authentications, per client address -----------------------------------------


def test_failed_keys_are_rate_limited_per_address(index) -> None:
    """An address that keeps showing wrong keys gets 429 with Retry-After, even for a right
    key, before its key is looked up; another address's valid key is served as before."""
    app = serve_app(index, {PUBLIC: "public", STAFF: "staff"}, anonymous=True,
                    failed_auth_per_minute=3)  # fmt: skip
    guesser = TestClient(app, raise_server_exceptions=False, client=("203.0.113.7", 4000))
    other = TestClient(app, raise_server_exceptions=False, client=("198.51.100.9", 4000))
    for n in range(3):
        is_problem(guesser.get("/v1/whoami", headers=bearer(f"tk_guess-{n}")), 401)
    refused = guesser.get("/v1/whoami", headers=bearer("tk_guess-3"))
    body = is_problem(refused, 429)
    assert body["detail"] == "too many failed authentications from this address"
    assert int(refused.headers["Retry-After"]) >= 1
    is_problem(guesser.get("/v1/whoami", headers={"Authorization": "Basic abc"}), 429)
    is_problem(guesser.get("/v1/whoami", headers=bearer(STAFF)), 429)  # not even looked up
    assert guesser.get("/v1/whoami").json()["name"] == "anonymous"  # no key: not affected
    for key, name in ((STAFF, "k2"), (PUBLIC, "k1")):
        assert other.get("/v1/whoami", headers=bearer(key)).json()["name"] == name
    is_problem(other.get("/v1/whoami", headers=bearer("tk_one-typo")), 401)  # its own bucket
    metrics = other.get("/metrics", headers=bearer(STAFF)).text
    assert 'tether_turned_away_total{reason="auth"} 3.0' in metrics


def test_the_rate_limiter_forgets_refilled_buckets(monkeypatch) -> None:
    from tether.server.keys import RateLimiter

    monkeypatch.setattr(RateLimiter, "MAX_BUCKETS", 3)
    limiter = RateLimiter(rate=1e12, burst=1)
    for n in range(10):  # each bucket refills at once
        assert limiter.take(f"10.0.0.{n}") == 0.0
    assert len(limiter._buckets) <= 4
    slow = RateLimiter(rate=0.001, burst=1)
    assert slow.take("a") == 0.0 and slow.peek("a") > 0 and slow.take("a") > 0


# ---- 3. proxy headers only from named proxies ------------------------------------------------


def _whoami_codes(base: str, forged: list[str | None]) -> list[int]:
    import httpx

    codes = []
    for address in forged:
        headers = {"X-Forwarded-For": address} if address else {}
        codes.append(httpx.get(f"{base}/v1/whoami", headers=headers, timeout=10).status_code)
    return codes


def test_a_forged_forwarded_for_does_not_change_the_bucket_by_default(index) -> None:
    """Anonymous callers are counted per address: by default the peer's (loopback here), so a
    client sending X-Forwarded-For still lands in its own bucket; only a proxy named by
    --forwarded-allow-ips gets its header believed."""
    from serving import live_server

    pytest.importorskip("uvicorn")
    forged: list[str | None] = [None, "198.51.100.1", "198.51.100.2", "198.51.100.3"]
    app = serve_app(index, {}, anonymous=True, rate=0.01, burst=1)
    with live_server(app) as (host, port):
        assert _whoami_codes(f"http://{host}:{port}", forged) == [200, 429, 429, 429]
    app = serve_app(index, {}, anonymous=True, rate=0.01, burst=1)
    with live_server(app, forwarded_allow_ips=("127.0.0.1",)) as (host, port):
        assert _whoami_codes(f"http://{host}:{port}", forged) == [200, 200, 200, 200]


def test_forwarded_allow_ips_are_checked() -> None:
    from tether.errors import TetherError
    from tether.server.running import parse_forwarded_allow_ips

    assert parse_forwarded_allow_ips(None) == ()
    assert parse_forwarded_allow_ips(" 10.0.0.1, 10.0.0.0/8 ,*") == ("10.0.0.1", "10.0.0.0/8", "*")
    with pytest.raises(TetherError, match=r"'proxy\.local' is not an IP address"):
        parse_forwarded_allow_ips("10.0.0.1,proxy.local")
    from typer.testing import CliRunner

    from tether.cli.main import app

    r = CliRunner().invoke(app, ["serve", "--demo", "--forwarded-allow-ips", "proxy.local"])
    assert r.exit_code == 2 and "Traceback" not in r.output  # a bad option value: exit 2
    assert "error: --forwarded-allow-ips: 'proxy.local' is not an IP address" in r.output


# ---- 4. header and body read timeouts -------------------------------------------------------


def _trickle(
    address: tuple[str, int], head: bytes, drip: bytes, every: float
) -> tuple[bytes, float]:
    """Send `head`, then `drip` one byte every `every` s until the server answers or closes;
    what it answered and how long after `head` it did."""
    import socket
    import time

    with socket.create_connection(address, timeout=15) as s:
        s.sendall(head)
        began = time.monotonic()
        s.setblocking(False)
        answer = b""
        for byte in drip:
            time.sleep(every)
            try:
                s.send(bytes([byte]))
            except OSError:
                break  # closed by the server
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            answer += chunk
            if not chunk or b"\r\n\r\n" in answer:
                break
        s.setblocking(True)
        s.settimeout(5)
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except OSError:
            pass
        return answer, time.monotonic() - began


def _one_line_problem(answer: bytes, status: int) -> dict:
    import json

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer
    lowered = head.lower()
    assert b"content-type: application/problem+json" in lowered
    assert b"connection: close" in lowered and b"x-content-type-options: nosniff" in lowered
    problem = json.loads(body)
    assert problem["status"] == status and "\n" not in problem["detail"]
    return problem


def test_headers_sent_one_byte_at_a_time_are_cut_off(index) -> None:
    from serving import live_server

    pytest.importorskip("uvicorn")
    app = serve_app(index, {}, anonymous=True)
    with live_server(app, header_timeout_s=1.0) as address:
        head = b"POST /v1/search HTTP/1.1\r\nHost: x\r\n"
        answer, took = _trickle(address, head, b"X-Slow: " + b"a" * 60, every=0.1)
        problem = _one_line_problem(answer, 408)
        assert problem["detail"] == "the request headers did not arrive within 1 s"
        assert took < 4
        silent, took = _trickle(address, b"", b"", every=0)  # connects and says nothing
        assert _one_line_problem(silent, 408) and took < 4
        import httpx  # a normal request on the same server is served

        base = "http://{}:{}".format(*address)
        assert httpx.post(f"{base}/v1/search", json=SEARCH, timeout=10).status_code == 200


def test_a_head_over_16_kib_is_refused_whether_it_trickles_or_bursts(index) -> None:
    import socket

    from serving import live_server

    pytest.importorskip("uvicorn")
    app = serve_app(index, {}, anonymous=True)
    big = b"X-Big: " + b"a" * 100_000 + b"\r\n"
    request = b"POST /v1/search HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n"
    with live_server(app) as address:
        for chunk in (len(request), 4096):  # one burst (h11 alone let it through), then pieces
            with socket.create_connection(address, timeout=10) as s:
                try:
                    for at in range(0, len(request), chunk):
                        s.sendall(request[at : at + chunk])
                except OSError:
                    pass  # closed by the server mid-send
                answer = b""
                try:
                    while data := s.recv(65536):
                        answer += data
                except OSError:
                    pass
            assert answer.startswith(b"HTTP/1.1 400 "), (chunk, answer[:200])
        problem = _one_line_problem(answer, 400)
        assert "16 KiB" in problem["detail"]
        import httpx  # a request with ordinary headers on the same server is served

        base = "http://{}:{}".format(*address)
        headers = {"X-Fine": "b" * 8000}
        assert (
            httpx.post(f"{base}/v1/search", json=SEARCH, headers=headers, timeout=10).status_code
            == 200
        )


def test_a_body_sent_one_byte_a_second_is_cut_off(index) -> None:
    from serving import live_server

    pytest.importorskip("uvicorn")
    app = serve_app(index, {}, anonymous=True, body_timeout_s=1.0)
    body = b'{"query": "parking", "method": "bm25"}'
    head = (b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))  # fmt: skip
    with live_server(app) as address:
        answer, took = _trickle(address, head, body, every=0.2)
        problem = _one_line_problem(answer, 408)
        assert problem["detail"] == "the request body did not arrive within 1 s"
        assert took < 4
        at_once = head.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n") + body
        quick, took = _trickle(address, at_once, b"", every=0)
        assert quick.startswith(b"HTTP/1.1 200 ") and took < 4


# ---- 5. anonymous answers recorded per address and day, the rest counted ---------------------


def _small_index(folder: Path) -> Path:
    from tether.app import Workspace

    docs = folder / "docs"
    docs.mkdir()
    (docs / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    path = folder / "index.sqlite"
    Workspace.open(path, settings=Settings(), create=True).ingest(docs, embed=False)
    return path


def test_anonymous_audit_rows_are_capped_per_address_and_the_dropped_counted(tmp_path) -> None:
    from typer.testing import CliRunner

    from tether.app import Workspace
    from tether.cli.main import app as cli
    from tether.types import AuditQuery

    path = _small_index(tmp_path)
    app = serve_app(path, {PUBLIC: "public"}, anonymous=True, anonymous_audit_per_day=2)
    question = {"question": "Is parking free on Sundays?", "method": "bm25"}
    other = TestClient(app, raise_server_exceptions=False, client=("198.51.100.9", 4000))
    with TestClient(app, raise_server_exceptions=False, client=("203.0.113.5", 4000)) as flood:
        for _ in range(5):  # every one is answered; 2 are recorded
            assert flood.post("/v1/ask", json=question).json()["answer"]
        streamed = flood.post("/v1/ask", json={**question, "stream": True})
        assert "event: result" in streamed.text
        assert other.post("/v1/ask", json=question).status_code == 200  # its own count
        for _ in range(3):  # a key is never capped
            assert flood.post("/v1/ask", json=question, headers=bearer(PUBLIC)).status_code == 200
    with Workspace.open(path, settings=Settings()) as ws:  # after the server stopped
        found = ws.audit_entries(AuditQuery(reader="staff"))
    answered = sorted(e.who for e in found if e.status != "dropped")
    assert answered == ["anonymous"] * 3 + ["k1"] * 3
    dropped = [e for e in found if e.status == "dropped"]
    assert sum(e.dropped for e in dropped) == 4 and all(e.question == "" for e in dropped)
    assert len(dropped) == 2  # the first drop at once, the other three when the server stopped
    listed = CliRunner().invoke(cli, ["audit", "--index", str(path), "--audience", "staff"])
    assert listed.exit_code == 0, listed.output
    assert "4 anonymous answers not recorded" in " ".join(listed.output.split())


def test_the_audit_quota_writes_drops_in_batches(monkeypatch) -> None:
    from tether.server.limits import AuditQuota

    quota = AuditQuota(1, flush_every=3, flush_s=3600)
    assert quota.admit("a") and not quota.admit("a") and quota.admit("b")
    assert [quota.dropped() for _ in range(7)] == [1, 0, 0, 3, 0, 0, 3]
    assert quota.dropped() == 0 and quota.pending() == 1 and quota.pending() == 0
    assert all(AuditQuota(0).admit("a") for _ in range(1000))  # 0: no cap
    monkeypatch.setattr("time.gmtime", lambda *a: __import__("time").struct_time(
        (2031, 1, 2, 0, 0, 0, 3, 2, 0)))  # fmt: skip
    assert quota.admit("a")  # a new day


# ---- 6. lanes: heavy requests never take a search's thread -----------------------------------


def test_a_search_runs_while_checks_and_answers_fill_their_lanes(index, monkeypatch) -> None:
    """With one reader thread, the checker's lane full (one running, one waiting) and the
    model's full, a search is still answered at once; one more check or answer is a 503
    with Retry-After. The slow work is the engine's own `check` and `ask`, held on an event
    (the lane is under test, not the verifier)."""
    import concurrent.futures
    import threading

    import httpx
    from serving import live_server

    from tether.app import Workspace

    pytest.importorskip("uvicorn")
    release, started = threading.Event(), threading.Semaphore(0)
    real_check, real_ask = Workspace.check, Workspace.ask

    def slow(real):
        def held(self, *args, **kwargs):
            started.release()
            release.wait(30)
            return real(self, *args, **kwargs)

        return held

    monkeypatch.setattr(Workspace, "check", slow(real_check))
    monkeypatch.setattr(Workspace, "ask", slow(real_ask))
    app = serve_app(index, {}, anonymous=True, readers=1, check_slots=1, check_waiting=1,
                    model_slots=1, model_waiting=0, deadline_s=60)  # fmt: skip
    check = {"claims": [{"text": "Parking is free on Sundays.", "chunk_ids": []}],
             "passage_ids": [], "judge": False}  # fmt: skip
    ask = {"question": "Is parking free on Sundays?", "method": "bm25"}
    with live_server(app) as (host, port), concurrent.futures.ThreadPoolExecutor(4) as pool:
        base = f"http://{host}:{port}"
        post = lambda path, body: httpx.post(base + path, json=body, timeout=60)  # noqa: E731
        heavy = [pool.submit(post, "/v1/check", check), pool.submit(post, "/v1/ask", ask)]
        for _ in range(2):  # one check and one answer are running (and held)
            assert started.acquire(timeout=20)
        heavy.append(pool.submit(post, "/v1/check", check))  # waits in the checker's line
        time.sleep(0.5)
        try:
            searched = post("/v1/search", SEARCH)
            assert searched.status_code == 200 and searched.elapsed.total_seconds() < 5
            assert "Parking" in searched.json()[0]["text"]
            for path, body in (("/v1/check", check), ("/v1/ask", ask)):
                busy = post(path, body)
                is_problem(busy, 503)
                assert int(busy.headers["Retry-After"]) >= 1
            assert "checker is busy" in post("/v1/check", check).json()["detail"]
        finally:
            release.set()
        assert [f.result().status_code for f in heavy] == [200, 200, 200]
