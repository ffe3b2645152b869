"""How `tether serve` runs its app under uvicorn: in one process or N, which proxies are
trusted, how long a request's headers may take.

- `Plan`: what a server is built from (the index or store, the keys file, the ServeConfig);
  `Plan.app()` builds the app. `serve(plan, …, workers=N)` runs it: with N 1 in this process;
  with N > 1 a supervisor (`tether.server.spread.Spread`, uvicorn's with workers of its own)
  starts N worker processes (spawned, not forked), restarts one that dies, and stops them all
  on SIGINT or SIGTERM. The supervisor binds the port once, without SO_REUSEPORT, so no other
  process can join it, accepts each connection and hands it to the workers in turn
  (`tether.server.spread`; where descriptors cannot be passed, the workers share the socket
  as uvicorn's supervisor has them do). The socket is marked TCP so that the accepted
  connections get TCP_NODELAY, as one process's do (with protocol 0, as uvicorn binds one,
  asyncio leaves Nagle's algorithm on, and each response on a kept-alive connection waited
  about 40 ms for the client's delayed ACK: uvicorn issue #3149). Each worker reads the
  plan from the environment (`WORKER_ENV`, JSON) and builds its app with `worker_app`, the
  factory uvicorn imports by name, so every option of `tether serve` holds in every worker.
  On a PostgreSQL collection the workers share rate limits, revocations and metrics through
  the store (`tether.server.shared`); on an index file each keeps its own.
- `uvicorn_config`: the uvicorn settings `tether serve` uses. Proxy headers
  (`X-Forwarded-For`, `X-Forwarded-Proto`) are read only from the peers named in
  `forwarded_allow_ips` (addresses, networks such as 10.0.0.0/8, or `*`); by default none is
  trusted, so a client cannot pick its own address (the anonymous rate-limit bucket, the
  failed-authentication bucket) by sending the header. uvicorn's own default trusts loopback
  and reads FORWARDED_ALLOW_IPS from the environment: neither applies here.
  The connection is `tether.server.protocol.HeaderDeadline` (h11 with a deadline on the
  request headers, 408 beyond) and a request head may be at most 16 KiB (400 beyond).
- `parse_forwarded_allow_ips`: the flag's comma-separated list, checked.

What it cannot do: behind a proxy that is trusted, the address is whatever that proxy puts
last in `X-Forwarded-For`; a proxy that passes a client's header through unchanged passes
the forgery on. Each worker loads its own models (N times the memory) and warms up on its
own; the supervisor restarts a worker that dies, but not one whose startup fails (then it
stops them all).
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.server.api import ServeConfig

DEFAULT_HEADER_TIMEOUT_S = 10.0  # seconds for a request's headers (HeaderDeadline is given it)
WORKER_ENV = "TETHER_SERVE_WORKER"  # the plan each worker process builds its app from
WORKER_APP = "tether.server.running:worker_app"
# seconds a worker may take to answer the supervisor's ping before it is killed and started
# again (uvicorn's default, 5, is short for a worker loading models on a busy machine)
WORKER_HEALTHCHECK_S = 10


@dataclass(frozen=True)
class Plan:
    """What a server's app is built from: the index file `index` or the server `store` (a
    postgresql:// URL; "" for a file), the keys file `keys` (None: every caller public) with
    `allow_anonymous`, and the ServeConfig."""

    index: Path | None
    store: str
    keys: Path | None
    allow_anonymous: bool
    config: ServeConfig

    def app(self) -> Any:
        """The FastAPI app of this plan (`tether.server.api.create_app`)."""
        from tether.server.api import create_app
        from tether.server.keys import key_ring

        ring = key_ring(self.keys, allow_anonymous=self.allow_anonymous)
        return create_app(self.index, ring, config=self.config, store=self.store)

    def to_json(self) -> str:
        """The plan as JSON (what `WORKER_ENV` holds)."""
        return json.dumps(
            {
                "index": str(self.index) if self.index is not None else None,
                "store": self.store,
                "keys": str(self.keys) if self.keys is not None else None,
                "allow_anonymous": self.allow_anonymous,
                "config": asdict(self.config),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """The plan `to_json` wrote."""
        from tether.server.api import ServeConfig

        data = json.loads(text)
        config = data["config"]
        return cls(
            index=Path(data["index"]) if data["index"] else None,
            store=data["store"],
            keys=Path(data["keys"]) if data["keys"] else None,
            allow_anonymous=bool(data["allow_anonymous"]),
            config=ServeConfig(**{**config, "cors_origins": tuple(config["cors_origins"])}),
        )


def worker_app() -> Any:
    """The app of one worker process of `tether serve --workers N` (uvicorn calls this
    factory in each): the plan in `WORKER_ENV`. A worker that cannot build it says why in one
    line and exits with uvicorn's startup-failure status, on which the supervisor stops every
    worker (any other exit would have it started again, and fail again)."""
    from uvicorn.config import STARTUP_FAILURE

    try:
        text = os.environ.get(WORKER_ENV)
        if not text:
            raise TetherError(f"{WORKER_ENV} is not set: the workers of `tether serve` read it")
        return Plan.from_json(text).app()
    except TetherError as exc:
        print(f"error: a worker of tether serve did not start: {exc}", file=sys.stderr)
        sys.exit(STARTUP_FAILURE)


def parse_forwarded_allow_ips(text: str | None) -> tuple[str, ...]:
    """The proxies in `text` ("10.0.0.1,10.0.0.0/8", "*", empty: none); a TetherError
    naming an item that is neither an address, a network nor `*`."""
    items = tuple(item.strip() for item in (text or "").split(",") if item.strip())
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise TetherError(f"{item!r} is not an IP address, a network or *") from None
    return items


def uvicorn_config(
    app: Any,
    host: str,
    port: int,
    *,
    forwarded_allow_ips: tuple[str, ...] = (),
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    workers: int = 1,
) -> Any:
    """The `uvicorn.Config` of `tether serve` for `app` (an ASGI app, or the import string of
    an app factory) on `host:port`, trusting proxy headers only from `forwarded_allow_ips`
    (none by default), giving a request's headers `header_timeout_s` seconds, with `workers`
    processes."""
    import uvicorn

    from tether.server.protocol import MAX_HEAD_BYTES, HeaderDeadline

    http: Any = HeaderDeadline.factory(header_timeout_s)  # picklable: it reaches the workers
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=30,
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=list(forwarded_allow_ips),  # never the environment's
        http=http,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        factory=isinstance(app, str),
        workers=workers,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
    )


def run(app: Any, host: str, port: int, **options: Any) -> None:
    """Serve `app` on `host:port` until interrupted (`options`: those of `uvicorn_config`)."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port, **options)).run()


def serve(plan: Plan, host: str, port: int, *, workers: int = 1, **options: Any) -> None:
    """Serve `plan` on `host:port` until interrupted: in this process when `workers` is 1,
    else in `workers` processes that share the port (see the module docstring); `options`:
    those of `uvicorn_config`. A TetherError when the workers could not start."""
    if workers <= 1:
        run(plan.app(), host, port, **options)
        return
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from tether.server.spread import Spread, listener, supported

    config = uvicorn_config(WORKER_APP, host, port, workers=workers, **options)
    try:
        sock = listener(host, port)  # one, no SO_REUSEPORT: see tether.server.spread
    except OSError as exc:  # taken since `tether serve` checked it: one line, no traceback
        raise TetherError(f"cannot listen on {host}:{port} ({exc.strerror})") from None
    before = os.environ.get(WORKER_ENV)
    os.environ[WORKER_ENV] = plan.to_json()  # the spawned workers inherit it
    try:
        supervisor = Spread(config, sock) if supported() else Multiprocess(config, [sock])
        supervisor.run()
        if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
            raise TetherError("the workers of tether serve did not start (the reason is above)")
    finally:
        sock.close()
        if before is None:
            os.environ.pop(WORKER_ENV, None)
        else:
            os.environ[WORKER_ENV] = before
