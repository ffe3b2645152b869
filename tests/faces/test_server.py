"""The HTTP API of `tether serve` with the real app (FastAPI's TestClient): every endpoint,
its status codes, problem bodies, and the audience rule per endpoint and per retrieval method
(a public key never sees staff content, and a staff document asked for with a public key is
answered exactly as one that does not exist)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from serving import serve_app

from tether.config import Settings
from tether.server.api import create_app
from tether.server.keys import KeyRing, add_key, load_keys

PUBLIC, STAFF = "tk_public-test-key", "tk_staff-test-key"
STAFF_DOC = "fraud-check-procedure"
STAFF_QUESTION = "When is an online order held for a fraud check?"
METHODS = ("bm25", "dense", "hybrid", "rerank")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_client(index: Path, **config: object) -> TestClient:
    app = serve_app(index, {PUBLIC: "public", STAFF: "staff"}, anonymous=False, **config)
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(demo_store) -> TestClient:
    with make_client(demo_store.path) as c:
        yield c


@pytest.fixture(scope="module")
def staff_chunk(demo_store) -> str:
    return demo_store.chunks(STAFF_DOC)[0].chunk_id


def is_problem(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"]
    assert "Traceback" not in response.text
    return body


# ---- keys → audience -----------------------------------------------------------------------


def test_no_key_is_401_unless_anonymous_allowed(client, demo_store) -> None:
    is_problem(client.get("/v1/documents"), 401)
    is_problem(client.get("/v1/documents", headers=bearer("tk_wrong")), 401)
    is_problem(client.get("/v1/documents", headers={"Authorization": "Basic abc"}), 401)
    keys = KeyRing.of({STAFF: "staff"}, allow_anonymous=True)
    app = create_app(demo_store.path, keys, settings=Settings(provider="extractive"))
    with TestClient(app) as anon:
        r = anon.get("/v1/whoami")
        assert r.json() == {"name": "anonymous", "audience": "public"}
        assert r.headers["Tether-Audience"] == "public"


def test_every_response_carries_its_audience(client) -> None:
    assert client.get("/v1/whoami", headers=bearer(STAFF)).headers["tether-audience"] == "staff"
    r = client.post("/v1/search", json={"query": "refund", "view": "public"}, headers=bearer(STAFF))
    assert r.status_code == 200 and r.headers["tether-audience"] == "public"
    r = client.get("/v1/chunks/nope", headers=bearer(PUBLIC))
    assert r.status_code == 404 and r.headers["tether-audience"] == "public"


def test_audience_never_comes_from_the_body(client) -> None:
    is_problem(client.post("/v1/search", json={"query": "x", "audience": "staff"},
                           headers=bearer(PUBLIC)), 422)  # fmt: skip
    body = is_problem(
        client.post("/v1/search", json={"query": "x", "view": "staff"}, headers=bearer(PUBLIC)),
        403,
    )
    assert "public key" in body["detail"]


@pytest.mark.parametrize("method", METHODS)
def test_search_audience_per_method(client, method: str) -> None:
    query = {"query": STAFF_QUESTION, "k": 20, "method": method, "as_of": "none"}
    public = client.post("/v1/search", json=query, headers=bearer(PUBLIC))
    staff = client.post("/v1/search", json=query, headers=bearer(STAFF))
    assert public.status_code == staff.status_code == 200, public.text
    assert all(h["access"] == "public" for h in public.json())
    assert all(h["method"] == method for h in staff.json())
    assert STAFF_DOC in {h["doc_id"] for h in staff.json()}
    narrowed = client.post("/v1/search", json={**query, "view": "public"}, headers=bearer(STAFF))
    assert narrowed.json() == public.json()


@pytest.mark.parametrize("method", METHODS)
def test_ask_audience_per_method(client, method: str) -> None:
    body = {"question": STAFF_QUESTION, "method": method, "as_of": "2026-11-30"}
    public = client.post("/v1/ask", json=body, headers=bearer(PUBLIC)).json()
    staff = client.post("/v1/ask", json=body, headers=bearer(STAFF)).json()
    assert public["audience"] == "public" and staff["audience"] == "staff"
    text = json.dumps(public)
    assert STAFF_DOC not in text and "freight forwarder" not in text
    assert STAFF_DOC in json.dumps(staff)


def test_documents_and_chunks_hide_staff_exactly_like_absence(client, staff_chunk) -> None:
    public = client.get("/v1/documents", headers=bearer(PUBLIC)).json()
    staff = client.get("/v1/documents", headers=bearer(STAFF)).json()
    assert {d["access"] for d in public} == {"public"}
    assert STAFF_DOC in {d["doc_id"] for d in staff} and len(staff) > len(public)
    assert client.get(f"/v1/documents/{STAFF_DOC}", headers=bearer(STAFF)).status_code == 200
    hidden = client.get(f"/v1/documents/{STAFF_DOC}", headers=bearer(PUBLIC))
    absent = client.get("/v1/documents/no-such-doc", headers=bearer(PUBLIC))
    assert is_problem(hidden, 404) == {
        **is_problem(absent, 404),
        "detail": f"no document with doc_id {STAFF_DOC!r}",
    }
    assert hidden.headers.keys() == absent.headers.keys()
    r = client.get(f"/v1/chunks/{staff_chunk}", headers=bearer(STAFF))
    assert r.status_code == 200 and r.json()["doc_id"] == STAFF_DOC
    hidden = client.get(f"/v1/chunks/{staff_chunk}", headers=bearer(PUBLIC))
    absent = client.get("/v1/chunks/c-0000", headers=bearer(PUBLIC))
    assert is_problem(hidden, 404)["detail"] == f"no chunk with chunk_id {staff_chunk!r}"
    assert is_problem(absent, 404)["detail"] == "no chunk with chunk_id 'c-0000'"
    narrowed = client.get(f"/v1/chunks/{staff_chunk}?view=public", headers=bearer(STAFF))
    assert narrowed.status_code == 404


# ---- each endpoint -------------------------------------------------------------------------


def test_ask_answers_with_checked_claims_and_evidence_offsets(client, demo_store) -> None:
    body = {"question": "How long does standard delivery take?", "as_of": "2026-11-30"}
    r = client.post("/v1/ask", json=body, headers=bearer(PUBLIC))
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["status"] in ("answered", "flagged") and result["answer"]["claims"]
    passages = {p["chunk_id"]: p for p in result["context"]["passages"]}
    spans = [e for c in result["checks"] for e in c["evidence"]]
    assert spans
    for e in spans:  # the page marks passage.text[start - passage.start : end - passage.start]
        p = passages[e["chunk_id"]]
        assert p["text"][e["start"] - p["start"] : e["end"] - p["start"]] == e["text"]


def test_ask_refused_by_the_gate_says_why(client) -> None:
    body = {"question": "What is the airspeed of an unladen swallow?", "method": "bm25"}
    result = client.post("/v1/ask", json=body, headers=bearer(PUBLIC)).json()
    assert result["refused"] and result["refused_by"] == "gate"
    assert result["why_refused"].startswith("refused before the model")
    assert not result["gate"]["passed"] and result["answer"]["claims"] == []


def test_ask_stream_sends_each_stage(client) -> None:
    body = {"question": "How long does standard delivery take?", "as_of": "2026-11-30",
            "stream": True}  # fmt: skip
    with client.stream("POST", "/v1/ask", json=body, headers=bearer(PUBLIC)) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    names = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert names[:4] == ["retrieval", "gate", "answerability", "answer"] and names[-1] == "result"
    assert "check" in names
    last = text.strip().split("data: ")[-1]
    assert json.loads(last)["status"] in ("answered", "flagged")


def events_of(text: str) -> list[tuple[str, object]]:
    """(name, data) of each server-sent event in `text`."""
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_the_draft_streams_to_staff_only(client) -> None:
    """A staff reader gets the unchecked draft as `text` events before the `answer` event (the
    extractive answerer cannot stream: its whole draft in one piece); a public reader gets no
    draft, and no unchecked answer in the `answer` event: only the checked `result`."""
    body = {"question": "How long does standard delivery take?", "as_of": "2026-11-30",
            "stream": True}  # fmt: skip
    staff = events_of(client.post("/v1/ask", json=body, headers=bearer(STAFF)).text)
    names = [name for name, _ in staff]
    assert "text" in names and names.index("text") < names.index("answer")
    draft = "".join(data["text"] for name, data in staff if name == "text")
    answer = dict(staff)["answer"]
    assert draft and draft == answer["answer"]["answer"]
    public = events_of(client.post("/v1/ask", json=body, headers=bearer(PUBLIC)).text)
    assert "text" not in [name for name, _ in public]
    answer = dict(public)["answer"]
    assert answer["answer"] is None and answer["completion"] is None and answer["context"]
    assert dict(public)["result"]["answer"]["answer"]


def test_readyz_says_when_the_models_are_loaded(demo_store, monkeypatch) -> None:
    """503 "warming" while the warm-up runs, 200 "ready" after; a failed warm-up is 503
    "failed" saying why; with warm-up off, ready at once."""
    from tether.app import Workspace
    from tether.errors import TetherError

    release = threading.Event()
    real_warm = Workspace.warm

    def slow_warm(self) -> None:
        release.wait(30)
        real_warm(self)

    monkeypatch.setattr(Workspace, "warm", slow_warm)
    with make_client(demo_store.path) as c:
        first = c.get("/readyz")
        assert first.status_code == 503 and first.json()["status"] == "warming"
        assert first.json()["ready"] is False
        release.set()
        for _ in range(600):
            ready = c.get("/readyz")
            if ready.status_code == 200:
                break
            time.sleep(0.05)
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert ready.json()["detail"] == "the models are loaded"

    def broken(self) -> None:
        raise TetherError("the local model is not installed")

    monkeypatch.setattr(Workspace, "warm", broken)
    with make_client(demo_store.path) as c:
        for _ in range(600):
            failed = c.get("/readyz")
            if failed.json()["status"] != "warming":
                break
            time.sleep(0.05)
        assert failed.status_code == 503 and failed.json()["status"] == "failed"
        assert "not installed" in failed.json()["detail"]
    with make_client(demo_store.path, warm=False) as c:
        off = c.get("/readyz")
        assert off.status_code == 200 and "warm-up off" in off.json()["detail"]


def test_check_reuses_the_verifier_and_hides_staff_passages(
    client, demo_store, staff_chunk
) -> None:
    public = next(c for c in demo_store.chunks("delivery-policy") if "3 to 7" in c.text)
    claims = [
        {"text": "Standard delivery takes 3 to 7 business days.", "chunk_ids": [public.chunk_id]},
        {"text": "Standard delivery takes 45 business days.", "chunk_ids": [public.chunk_id]},
        {"text": "Orders are held over $800.", "chunk_ids": [staff_chunk]},
    ]
    body = {"claims": claims, "passage_ids": [public.chunk_id, staff_chunk], "as_of": "none"}
    checks = client.post("/v1/check", json=body, headers=bearer(PUBLIC)).json()
    assert checks[0]["ok"], checks[0]
    assert "number_not_found:45" in checks[1]["flags"]
    assert f"missing_id:{staff_chunk}" in checks[2]["flags"]
    assert checks[2]["evidence"] == []
    staff = client.post("/v1/check", json=body, headers=bearer(STAFF)).json()
    assert f"missing_id:{staff_chunk}" not in staff[2]["flags"]
    is_problem(client.post("/v1/check", json={"claims": [], "passage_ids": []},
                           headers=bearer(PUBLIC)), 422)  # fmt: skip
    # checking grows with the text: a 60 KB claim is refused before any work
    huge = {"claims": [{"text": "a" * 60_000, "chunk_ids": []}], "passage_ids": []}
    is_problem(client.post("/v1/check", json=huge, headers=bearer(PUBLIC)), 422)


def test_healthz_flags_and_page(client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    words = client.get("/v1/flags").json()
    assert "{arg}" in words["number_not_found"]
    page = client.get("/")
    assert page.status_code == 200 and "<textarea" in page.text
    assert client.get("/static/app.js").status_code == 200
    assert "/v1/ask" in client.get("/openapi.json").json()["paths"]
    assert client.get("/docs").status_code == 404  # Swagger UI only with --docs


def test_metrics_count_requests_and_refusals_for_staff_only(client) -> None:
    client.post("/v1/ask", json={"question": "What is the airspeed of a swallow?",
                                 "method": "bm25"}, headers=bearer(PUBLIC))  # fmt: skip
    is_problem(client.get("/metrics", headers=bearer(PUBLIC)), 403)
    text = client.get("/metrics", headers=bearer(STAFF)).text
    assert 'tether_requests_total{method="POST",route="/v1/ask",status="200"}' in text
    assert "tether_request_seconds_bucket" in text
    assert 'tether_refusals_total{by="gate"}' in text
    assert "tether_flagged_claims_total" in text and "tether_provider_errors_total" in text
    for _ in range(2):  # the query's vector: embedded once, then from a cache
        client.post("/v1/search", json={"query": "Is parking free on Sundays?",
                                        "method": "rerank"}, headers=bearer(PUBLIC))  # fmt: skip
    text = client.get("/metrics", headers=bearer(STAFF)).text
    assert 'tether_query_vector_cache_total{result="miss"}' in text
    assert 'tether_query_vector_cache_total{result="hit"}' in text
    assert "tether_query_vector_cache_entries" in text and "tether_query_batches_total" in text


# ---- bad requests --------------------------------------------------------------------------


def test_bad_requests_are_problems_never_tracebacks(client) -> None:
    h = bearer(PUBLIC)
    is_problem(
        client.post("/v1/search", content=b"{", headers={**h, "content-type": "application/json"}),
        422,
    )
    is_problem(client.post("/v1/search", json={"query": "x", "as_of": "yesterday"}, headers=h), 400)
    is_problem(client.post("/v1/ask", json={"question": ""}, headers=h), 422)
    is_problem(client.post("/v1/search", json={"query": "x", "k": 0}, headers=h), 422)
    is_problem(client.get("/v1/nothing", headers=h), 404)
    is_problem(client.delete("/v1/documents", headers=h), 405)
    big = {"query": "x" * 70_000}
    is_problem(client.post("/v1/search", json=big, headers=h), 413)
    chunked = client.post("/v1/search", content=iter([b'{"query": "', b"y" * 70_000, b'"}']),
                          headers={**h, "content-type": "application/json"})  # fmt: skip
    is_problem(chunked, 413)


def test_rate_limit_answers_429_with_retry_after(demo_store) -> None:
    with make_client(demo_store.path, rate=0.5, burst=2) as c:
        codes = [c.get("/v1/whoami", headers=bearer(PUBLIC)).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        r = c.get("/v1/whoami", headers=bearer(PUBLIC))
        is_problem(r, 429)
        assert int(r.headers["Retry-After"]) >= 1 and r.headers["Tether-Audience"] == "public"
        assert c.get("/v1/whoami", headers=bearer(STAFF)).status_code == 200  # per key


def test_a_full_model_queue_answers_503_and_a_deadline_504(demo_store, monkeypatch) -> None:
    from tether.app import Workspace

    gate = threading.Event()
    real = Workspace.ask

    def slow(self, *args, **kwargs):
        gate.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Workspace, "ask", slow)
    body = {"question": "How long does standard delivery take?"}
    with make_client(demo_store.path, model_slots=1, model_waiting=0, deadline_s=1.0) as c:
        first = c.post("/v1/ask", json=body, headers=bearer(PUBLIC))
        is_problem(first, 504)  # the first passed its deadline, and still holds the slot
        busy = c.post("/v1/ask", json=body, headers=bearer(PUBLIC))
        is_problem(busy, 503)
        assert int(busy.headers["Retry-After"]) >= 1
        gate.set()
        for _ in range(120):  # the first finishes in the background, then the line is free
            r = c.post("/v1/ask", json=body, headers=bearer(PUBLIC))
            if r.status_code != 503:
                break
            time.sleep(0.25)
        assert r.status_code in (200, 504)  # admitted again (on a slow machine, past 1 s)


def test_a_search_past_its_deadline_is_504_and_stops_before_the_reranker(
    demo_store, monkeypatch
) -> None:
    """The server gives up on a search at its deadline (504) and cancels the search's
    `Deadline`: the work still running stops at its next stage boundary, so the reranker
    never runs for it and the reader thread is free."""
    from tether.app import Workspace
    from tether.errors import DeadlineError
    from tether.retrieval.rerank import SentenceReranker
    from tether.retrieval.retriever import Retriever

    gate, ended = threading.Event(), threading.Event()
    reranked: list[str] = []
    outcome: list[BaseException | None] = []
    candidates, rerank = Retriever.rerank_candidates, SentenceReranker.rerank

    def held(self, query, *args, **kwargs):
        if query == "held":
            gate.wait(30)  # past the deadline: the server has answered 504 by now
        return candidates(self, query, *args, **kwargs)

    def counted(self, query, *args, **kwargs):
        reranked.append(query)
        return rerank(self, query, *args, **kwargs)

    real_search = Workspace.search

    def search(self, query, options=None):
        if query != "held":  # the warm-up's search, the next request's
            return real_search(self, query, options)
        try:
            found = real_search(self, query, options)
            outcome.append(None)
            return found
        except BaseException as exc:
            outcome.append(exc)
            raise
        finally:
            ended.set()

    monkeypatch.setattr(Retriever, "rerank_candidates", held)
    monkeypatch.setattr(SentenceReranker, "rerank", counted)
    monkeypatch.setattr(Workspace, "search", search)
    with make_client(demo_store.path, deadline_s=1.0) as c:
        body = {"query": "held", "method": "rerank"}
        is_problem(c.post("/v1/search", json=body, headers=bearer(PUBLIC)), 504)
        gate.set()
        assert ended.wait(30)
        assert isinstance(outcome[0], DeadlineError) and "held" not in reranked
        r = c.post("/v1/search", json={"query": "refund", "method": "rerank"},
                   headers=bearer(PUBLIC))  # fmt: skip
        assert r.status_code == 200 and reranked[-1] == "refund" and "held" not in reranked


def _parking_index(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with one public page and its lexical index."""
    from tether.app import Workspace

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    index = tmp_path / "index.sqlite"
    Workspace.open(index, settings=Settings(), create=True).ingest(folder, embed=False)
    return folder, index


def test_reingest_is_seen_without_restart(tmp_path) -> None:
    from tether.app import Workspace

    folder, index = _parking_index(tmp_path)
    with make_client(index) as c:
        query = {"query": "lighthouse tours", "method": "bm25"}
        assert c.post("/v1/search", json=query, headers=bearer(PUBLIC)).json() == []
        (folder / "b.md").write_text(
            "---\naccess: public\n---\n# Tours\n\nLighthouse tours start at noon.\n"
        )
        with Workspace.open(index, settings=Settings()) as writer:
            assert writer.ingest(folder, embed=False).committed
        hits = c.post("/v1/search", json=query, headers=bearer(PUBLIC)).json()
        assert hits and "Lighthouse tours" in hits[0]["text"]


def test_every_answer_is_audited_with_the_key_name_and_audience(tmp_path) -> None:
    """/v1/ask and its stream record who asked (the key's name, "anonymous" without a key) and
    the audience the answer was computed for, never the server's OS user."""
    from tether.app import Workspace
    from tether.types import AuditQuery

    _, index = _parking_index(tmp_path)
    app = serve_app(index, {PUBLIC: "public", STAFF: "staff"}, anonymous=True)
    question = {"question": "Is parking free on Sundays?", "method": "bm25"}
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.post("/v1/ask", json=question, headers=bearer(PUBLIC)).status_code == 200
        assert c.post("/v1/ask", json=question, headers=bearer(STAFF)).status_code == 200
        viewed = c.post("/v1/ask", json={**question, "view": "public"}, headers=bearer(STAFF))
        assert viewed.status_code == 200
        assert c.post("/v1/ask", json=question).status_code == 200
        streamed = c.post("/v1/ask", json={**question, "stream": True}, headers=bearer(STAFF))
        assert "event: result" in streamed.text
    with Workspace.open(index, settings=Settings()) as ws:
        found = ws.audit_entries(AuditQuery(reader="staff"))
    asked = sorted((e.who, e.audience) for e in found)
    assert asked == sorted([("k1", "public"), ("k2", "staff"), ("k2", "public"),
                            ("anonymous", "public"), ("k2", "staff")])  # fmt: skip


# ---- the keys file -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["keys.toml", "keys.json"])
def test_keys_file_round_trip(tmp_path, name: str) -> None:
    path = tmp_path / name
    staff = add_key(path, "desk", "staff")
    public = add_key(path, "widget", "public")
    assert staff not in path.read_text() and public not in path.read_text()
    ring = load_keys(path)
    assert ring.lookup(staff).audience == "staff" and ring.lookup(public).audience == "public"
    assert ring.lookup("tk_other") is None and not ring.allow_anonymous
    assert load_keys(path, allow_anonymous=True).allow_anonymous
    from tether.errors import TetherError

    with pytest.raises(TetherError, match="already has"):
        add_key(path, "desk", "staff")
    with pytest.raises(TetherError, match="not public or staff"):
        add_key(path, "x", "admin")


def test_keys_file_errors_name_the_entry(tmp_path) -> None:
    from tether.errors import TetherError

    bad = tmp_path / "k.toml"
    bad.write_text('[[keys]]\nname = "a"\naudience = "root"\nsha256 = "' + "0" * 64 + '"\n')
    with pytest.raises(TetherError, match="'a' has audience 'root'"):
        load_keys(bad)
    bad.write_text("keys = [")
    with pytest.raises(TetherError, match="not valid TOML"):
        load_keys(bad)


# ---- the commands --------------------------------------------------------------------------


def test_keys_add_prints_the_key_once_and_serve_says_one_line(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    runner = CliRunner()
    path = tmp_path / "keys.toml"
    r = runner.invoke(app, ["keys", "add", "desk", "--audience", "staff", "--file", str(path)])
    assert r.exit_code == 0, r.output
    key = r.stdout.strip().splitlines()[0]
    assert key.startswith("tk_") and key not in path.read_text()
    assert load_keys(path).lookup(key).audience == "staff"
    r = runner.invoke(app, ["keys", "add", "desk", "--file", str(path)])
    assert r.exit_code == 1 and "error:" in r.output and "Traceback" not in r.output
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["serve", "--index", str(tmp_path / "none.sqlite"), "--keys", str(path)])
    assert r.exit_code == 1 and "error: no index at" in r.output


def test_the_page_never_parses_server_text_as_html() -> None:
    from tether.server.api import STATIC

    script = (STATIC / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "textContent" in script
