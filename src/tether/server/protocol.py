"""The HTTP/1.1 connection of `tether serve`: uvicorn's h11 protocol with a deadline on the
request headers.

uvicorn times out an idle keep-alive connection, but not a client that opens a connection and
sends its request line and headers one byte at a time (or nothing at all): each byte resets
nothing and the connection is held for ever. `HeaderDeadline` gives every request
`header_timeout_s` seconds from its first byte (or from the connection, for the first request)
to finish its headers; past that it answers `408 Request Timeout` with a one-line problem body
and closes the connection. The body has its own deadline in the app (`tether.server.http.Guard`).

What it cannot do: it is the h11 protocol only (`tether serve` asks uvicorn for it, whether or
not httptools is installed); it bounds the time, not the number, of open connections; it
subclasses uvicorn's `H11Protocol` and so follows that class's internals (tested against the
uvicorn the project pins).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tether.server.http import SECURITY_HEADERS
from tether.server.running import DEFAULT_HEADER_TIMEOUT_S

MAX_HEAD_BYTES = 16 * 1024  # the largest request line and headers h11 buffers (400 beyond)


def timeout_response(seconds: float) -> bytes:
    """The raw 408 answer (problem body, security headers, `Connection: close`)."""
    body = json.dumps({
        "type": "about:blank", "title": "Request Timeout", "status": 408,
        "detail": f"the request headers did not arrive within {seconds:g} s",
    }).encode()  # fmt: skip
    head = [b"HTTP/1.1 408 Request Timeout", b"content-type: application/problem+json",
            b"content-length: " + str(len(body)).encode(), b"connection: close"]  # fmt: skip
    head += [name + b": " + value for name, value in SECURITY_HEADERS]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol; a request's headers must be complete within `header_timeout_s`
    (see the module docstring). `factory` makes it with a given deadline."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S

    @classmethod
    def factory(cls, seconds: float) -> Callable[..., HeaderDeadline]:
        """What uvicorn's `http` setting takes to make this protocol with a header deadline of
        `seconds`: a function that can be pickled (a class made on the fly cannot), so it
        reaches the worker processes of `tether serve --workers N`."""
        return functools.partial(_with_deadline, cls, float(seconds))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _watch_headers(self) -> None:
        """A timer while a request's headers are incomplete, none once they are."""
        if not self._waiting_for_headers():
            self._stop_watching()
        elif self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expired)

    def _stop_watching(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if not self._waiting_for_headers():
            return
        if self.cycle is None or self.cycle.response_complete:  # no answer under way
            self.transport.write(timeout_response(self.header_timeout_s))
        self.transport.close()


def _with_deadline(cls: type[HeaderDeadline], seconds: float, **kwargs: Any) -> HeaderDeadline:
    protocol = cls(**kwargs)
    protocol.header_timeout_s = seconds
    return protocol
