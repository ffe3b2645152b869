"""A model call past its request's deadline does not hold up the server (issue 47): with a
model that takes far longer than `--deadline`, the question that waits for it gets its 504 at
the deadline, its HTTP request to the model is closed there (the next question's call reaches
the model at once), and a question refused before the model (by the gate) is answered at
once, never in line behind a model call. A model call that cannot be stopped (the local
model's) keeps its slot, and /metrics says so while the other questions are still served.

A real uvicorn on a loopback port and a real OpenAI-compatible server (`SlowModel`) that
notes when each request came and when its client closed the connection; a small lexical
index (no model loaded). Scaled down: the model takes 8 s, the deadline is 2 s."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from serving import live_server

from tether.app import Models, Workspace
from tether.config import Settings
from tether.server.api import ServeConfig, create_app
from tether.server.keys import KeyRing

DEADLINE_S = 2.0
MODEL_S = 8.0  # how long the model takes: four deadlines
SLACK_S = 1.5  # what a loaded test machine may add to a bound
STAFF = "tk_staff-lane"
NEEDS_MODEL = {"question": "Is parking free on Sundays?", "method": "bm25"}
REFUSED = {"question": "zyxwv qwertyuiop?", "method": "bm25"}  # no passage matches: the gate


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lane")
    docs = root / "docs"
    docs.mkdir()
    (docs / "parking.md").write_text(
        "---\naccess: public\n---\n# Parking\n\nParking is free on Sundays.\n"
    )
    path = root / "index.sqlite"
    ws = Workspace.open(path, settings=Settings(), create=True, models=Models())
    ws.ingest(docs, embed=False)
    ws.set_gate_floors({"bm25": 0.0})  # one document: BM25 scores are tiny
    ws.close()
    return path


class SlowModel:
    """An OpenAI-compatible chat-completions server on loopback that holds each request
    `hold_s` seconds before it answers; `arrived` and `closed` note (time.monotonic()) when
    each request came and when its client closed the connection (None: not closed)."""

    def __init__(self, hold_s: float) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.arrived: list[float] = []
        self.closed: list[float | None] = []
        self.stop = threading.Event()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                n = model.note_arrival()
                until = time.monotonic() + hold_s
                while time.monotonic() < until and not model.stop.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.02)
                    if readable and not _peek(self.connection):
                        model.closed[n] = time.monotonic()  # the client hung up
                        return
                self.reply()

            def reply(self) -> None:
                text = json.dumps({"answerable": True, "answer": "late", "claims": []})
                data = json.dumps({
                    "id": "slow", "object": "chat.completion", "created": 0, "model": "slow",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                }).encode()  # fmt: skip
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.lock = threading.Lock()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def note_arrival(self) -> int:
        with self.lock:
            self.arrived.append(time.monotonic())
            self.closed.append(None)
            return len(self.arrived) - 1

    @contextmanager
    def running(self) -> Iterator[SlowModel]:
        thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self.stop.set()
            self.httpd.shutdown()
            self.httpd.server_close()


def _peek(conn: socket.socket) -> bytes:
    try:
        return conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return b""


def serve(index: Path, url: str) -> Any:
    """The app over `index`, answering through the OpenAI-compatible server at `url` (two
    retries allowed: none may run past the deadline), one model call at a time."""
    settings = Settings(provider="openai", model="slow", base_url=url, api_key="sk-test",
                        max_retries=2, timeout=30)  # fmt: skip
    config = ServeConfig(rate=0.0, deadline_s=DEADLINE_S, model_slots=1, model_waiting=4)
    keys = KeyRing.of({STAFF: "staff"}, allow_anonymous=True)
    return create_app(index, keys, config=config, settings=settings, models=Models())


def ready(base: str) -> None:
    for _ in range(600):
        if httpx.get(base + "/readyz", timeout=30).status_code == 200:
            return
        time.sleep(0.1)
    raise AssertionError("the server did not warm up")


def ask(base: str, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    """The response to a question and the seconds it took."""
    began = time.monotonic()
    response = httpx.post(base + "/v1/ask", json=body, timeout=MODEL_S * 3)
    return response, time.monotonic() - began


def test_a_model_call_past_its_deadline_is_closed_and_holds_nobody_up(index: Path) -> None:
    with SlowModel(MODEL_S).running() as model, live_server(serve(index, model.url)) as where:
        base = "http://{}:{}".format(*where)
        ready(base)
        first, took = ask(base, NEEDS_MODEL)
        assert first.status_code == 504, first.text  # (a) at its deadline
        assert took < DEADLINE_S + SLACK_S
        refused, took = ask(base, REFUSED)  # (b) asked at once: no model call to wait for
        assert refused.status_code == 200, refused.text
        assert refused.json()["refused_by"] == "gate" and refused.json()["status"] == "refused"
        assert took < SLACK_S
        asked = time.monotonic()
        second, took = ask(base, NEEDS_MODEL)  # (c) the model is free again
        assert second.status_code == 504, second.text
        assert took < DEADLINE_S + SLACK_S
        for _ in range(40):  # the second call's connection closes as its 504 is sent
            if len(model.closed) == 2 and model.closed[1] is not None:
                break
            time.sleep(0.05)
        assert len(model.arrived) == 2  # one try each: no retry past the deadline
        assert model.arrived[1] - asked < SLACK_S  # it reached the model at once
        for came, closed in zip(model.arrived, model.closed, strict=True):
            assert closed is not None and closed - came < DEADLINE_S + SLACK_S


def test_a_provider_call_gives_up_at_the_requests_deadline(index: Path) -> None:
    """Under a request's deadline, the OpenAI-compatible provider stops at it with a
    DeadlineError (not the answer's provider_error, not retried) and closes its request."""
    from tether import deadlines
    from tether.errors import DeadlineError
    from tether.providers.openai import OpenAICompatibleProvider
    from tether.types import Message, ModelRequest

    request = ModelRequest(messages=(Message("user", "hello"),))
    with SlowModel(MODEL_S).running() as model:
        provider = OpenAICompatibleProvider("slow", base_url=model.url, timeout=30, max_retries=3)
        began = time.monotonic()
        with deadlines.bound(deadlines.Deadline.after(1.0)), pytest.raises(DeadlineError):
            provider.complete(request)
        assert time.monotonic() - began < 1.0 + SLACK_S
        for _ in range(40):
            if model.closed and model.closed[0] is not None:
                break
            time.sleep(0.05)
        assert len(model.arrived) == 1
        assert model.closed[0] is not None and model.closed[0] - began < 1.0 + SLACK_S


class Stuck:
    """A model call that cannot be stopped (as the local model's): it ends when `release` is
    set, whatever the deadline."""

    name = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def complete(self, request: Any) -> Any:
        from tether.types import Completion

        self.calls += 1
        self.release.wait(MODEL_S * 2)
        text = json.dumps({"answerable": False, "answer": "", "claims": []})
        return Completion(text=text, provider=self.name, model="stuck")


def test_a_call_that_cannot_be_stopped_keeps_its_slot_and_says_so(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stuck call's question gets its 504; /metrics shows the call running past its
    deadline; a question the gate refuses is still answered, one that needs the model gets
    its 504 at its own deadline without a second call; once the call ends the slot is free."""
    stuck = Stuck()
    monkeypatch.setattr(Workspace, "make_provider", lambda self, *a, **k: stuck)
    app = serve(index, "http://127.0.0.1:9/v1")
    staff = {"Authorization": f"Bearer {STAFF}"}
    with live_server(app) as where:
        base = "http://{}:{}".format(*where)
        ready(base)
        try:
            first, _ = ask(base, NEEDS_MODEL)
            assert first.status_code == 504, first.text
            metrics = httpx.get(base + "/metrics", headers=staff, timeout=30).text
            assert "tether_model_calls 1.0" in metrics
            assert "tether_model_calls_overdue 1.0" in metrics
            refused, took = ask(base, REFUSED)
            assert refused.status_code == 200 and refused.json()["refused_by"] == "gate"
            assert took < SLACK_S
            waited, took = ask(base, NEEDS_MODEL)
            assert waited.status_code == 504, waited.text  # it waited for the slot
            assert took < DEADLINE_S + SLACK_S and stuck.calls == 1
        finally:
            stuck.release.set()
        for _ in range(40):
            metrics = httpx.get(base + "/metrics", headers=staff, timeout=30).text
            if "tether_model_calls 0.0" in metrics:
                break
            time.sleep(0.05)
        assert "tether_model_calls_overdue 0.0" in metrics


def test_a_slotted_provider_is_what_it_wraps() -> None:
    """The slots' wrapper streams only when the provider does (the staff `text` events depend
    on it), and keeps its name, capabilities and other attributes."""
    from tether.protocols import StreamingProvider, capabilities_of
    from tether.server.slots import ModelSlots, slotted
    from tether.types import Capabilities, Completion, Message, ModelRequest

    class Whole:
        name = "whole"
        capabilities = Capabilities(answer_mode="select", model=True)

        def complete(self, request: Any) -> Completion:
            return Completion(text="done", provider=self.name)

        def describe(self) -> str:
            return "a whole answerer"

    class Streams(Whole):
        def stream(self, request: Any, on_text: Any) -> Completion:
            on_text("do")
            return self.complete(request)

    slots = ModelSlots(1)
    whole, streams = slotted(Whole(), slots), slotted(Streams(), slots)
    assert not isinstance(whole, StreamingProvider) and isinstance(streams, StreamingProvider)
    assert whole.name == "whole" and capabilities_of(whole) == Whole.capabilities
    assert whole.describe() == "a whole answerer"  # type: ignore[attr-defined]
    pieces: list[str] = []
    request = ModelRequest(messages=(Message("user", "q"),))
    assert isinstance(streams, StreamingProvider)
    assert streams.stream(request, pieces.append).text == "done"
    assert pieces == ["do"] and slotted(whole, slots) is whole
    assert slots.counts() == (0, 0, 0)  # every slot given back
