"""The HTTP/1.1 connection of `tether serve`: uvicorn's h11 protocol with a deadline on the
request headers.

uvicorn times out an idle keep-alive connection, but not a client that opens a connection and
sends its request line and headers one byte at a time (or nothing at all): each byte resets
nothing and the connection is held for ever. `HeaderDeadline` gives every request
`header_timeout_s` seconds from its first byte (or from the connection, for the first request)
to finish its headers; past that it answers `408 Request Timeout` with a one-line problem body
and closes the connection. A request line and headers longer than `MAX_HEAD_BYTES` get `400`
the same way, whether they trickle in (h11 refuses to buffer more) or arrive in one burst
(h11 bounds only what it buffers incomplete, so the protocol counts the head's bytes itself). The body has its own deadline in the app (`tether.server.http.Guard`).

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

MAX_HEAD_BYTES = 16 * 1024  # the largest request line and headers h11 buffers (400 beyond)
LINGER_S = 2.0  # how long a refused connection's further bytes are read and dropped


def problem_response(status: int, title: str, detail: str) -> bytes:
    """A raw answer with a one-line problem body, the security headers and
    `Connection: close`."""
    problem = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    body = json.dumps(problem).encode()
    head = [
        f"HTTP/1.1 {status} {title}".encode(),
        b"content-type: application/problem+json",
        b"content-length: " + str(len(body)).encode(),
        b"connection: close",
    ]
    head += [name + b": " + value for name, value in SECURITY_HEADERS]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def timeout_response(seconds: float) -> bytes:
    """The raw 408 answer to headers that did not arrive in time."""
    detail = f"the request headers did not arrive within {seconds:g} s"
    return problem_response(408, "Request Timeout", detail)


def too_long_response() -> bytes:
    """The raw 400 answer to a request line and headers over `MAX_HEAD_BYTES`."""
    detail = f"the request line and headers are longer than {MAX_HEAD_BYTES // 1024} KiB"
    return problem_response(400, "Bad Request", detail)


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol; a request's headers must be complete within `header_timeout_s`
    (see the module docstring). It is made only by `factory`, which sets that deadline (the
    caller's: `tether.server.running.uvicorn_config` holds the default)."""

    header_timeout_s: float  # set by `factory` on each protocol it makes

    @classmethod
    def factory(cls, seconds: float) -> Callable[..., HeaderDeadline]:
        """What uvicorn's `http` setting takes to make this protocol with a header deadline of
        `seconds`: a function that can be pickled (a class made on the fly cannot), so it
        reaches the worker processes of `tether serve --workers N`."""
        return functools.partial(_with_deadline, cls, float(seconds))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0  # of the request head under way (no blank line seen yet)
        self._discarding = False  # refused: what else arrives is read and dropped
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        if self._waiting_for_headers() and self._head_too_long(data):
            self._refuse_long_head()
            return
        super().data_received(data)
        self._watch_headers()

    def _head_too_long(self, data: bytes) -> bool:
        """Whether the head under way, with `data`, passes `MAX_HEAD_BYTES` (a blank line
        split across two reads is counted as if it were not there: at most 3 bytes early)."""
        end = data.find(b"\r\n\r\n")
        size = self._head_bytes + (len(data) if end < 0 else end + 4)
        self._head_bytes = size if end < 0 else 0
        return size > MAX_HEAD_BYTES

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _refuse_long_head(self) -> None:
        """Answer 400, then close the way servers linger: say end-of-stream, read and drop
        what the client still sends for `LINGER_S` at most, then close. Closing at once with
        unread bytes would reset the connection, and the client could lose the answer."""
        self._stop_watching()
        if self.cycle is None or self.cycle.response_complete:  # no answer under way
            self.transport.write(too_long_response())
        self._discarding = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_S, self.transport.close)
        else:
            self.transport.close()

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
