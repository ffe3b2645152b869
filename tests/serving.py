"""What the tests of `tether serve` share: the app over an index with the extractive answerer,
no rate limit unless asked, and the given keys; a live uvicorn on loopback for the tests that
need real sockets; and a fake OpenAI-compatible model server (`fake_openai`) whose reply a
test writes from the prompt it receives (what `tether` sends a real one: the passages, each
under its `[chunk_id]` header)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def serve_app(index: Path, keys: dict[str, Any], *, anonymous: bool, **config: Any) -> Any:
    """`create_app` over `index` with `keys` ({key: audience}), the extractive answerer and
    ServeConfig(rate=0, **config)."""
    from tether.config import Settings
    from tether.server.api import ServeConfig, create_app
    from tether.server.keys import KeyRing

    ring = KeyRing.of(keys, allow_anonymous=anonymous)
    conf = ServeConfig(**{"rate": 0.0, **config})
    return create_app(index, ring, config=conf, settings=Settings(provider="extractive"))


@contextmanager
def live_server(app: Any, **options: Any) -> Iterator[tuple[str, int]]:
    """`app` under uvicorn, configured as `tether serve` configures it
    (`tether.server.running.uvicorn_config` with `options`), on a free loopback port, in a
    thread; yields (host, port) once it listens, and stops it after."""
    import uvicorn

    from tether.server.running import uvicorn_config

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(400):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield "127.0.0.1", port
    finally:
        server.should_exit = True
        thread.join(10)


PASSAGE_ID = re.compile(r"^\[([0-9a-f]{12})\] ", re.M)


def passage_ids(prompt: str) -> list[str]:
    """The chunk IDs of the passages in a prompt tether sent, in their order."""
    return PASSAGE_ID.findall(prompt)


@contextmanager
def fake_openai(reply: Callable[[str], str]) -> Iterator[str]:
    """An OpenAI-compatible chat-completions server on loopback whose answer to each request
    is `reply(prompt)` (the prompt: the request's messages' text, joined); yields its base URL
    (`.../v1`, what TETHER_BASE_URL takes) and stops it after. It answers whole (no stream)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            text = reply(prompt)
            data = json.dumps({
                "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                          "total_tokens": (len(prompt) + len(text)) // 4},
            }).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
