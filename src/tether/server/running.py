"""How `tether serve` runs its app under uvicorn: which proxies are trusted, how long a
request's headers may take.

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
the forgery on.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tether.errors import TetherError

DEFAULT_HEADER_TIMEOUT_S = 10.0  # tether.server.protocol's (that module needs uvicorn)


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
) -> Any:
    """The `uvicorn.Config` of `tether serve` for `app` on `host:port`, trusting proxy headers
    only from `forwarded_allow_ips` (none by default), giving a request's headers
    `header_timeout_s` seconds."""
    import uvicorn

    from tether.server.protocol import MAX_HEAD_BYTES, HeaderDeadline

    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_keep_alive=30,
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=list(forwarded_allow_ips),  # never the environment's
        http=HeaderDeadline.with_timeout(header_timeout_s),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )  # fmt: skip


def run(app: Any, host: str, port: int, **options: Any) -> None:
    """Serve `app` on `host:port` until interrupted (`options`: those of `uvicorn_config`)."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port, **options)).run()
