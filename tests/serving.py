"""What the tests of `tether serve` share: the app over an index with the extractive answerer,
no rate limit unless asked, and the given keys; a live uvicorn on loopback for the tests that
need real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
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
