"""`tether serve --workers N` shares one socket that uvicorn binds with protocol 0; asyncio
then leaves Nagle's algorithm on for the connections the workers accept, and each response on
a kept-alive connection waited about 40 ms for the client's delayed ACK (one process's
connections had TCP_NODELAY). `tcp_listener` marks the socket TCP, so the accepted
connections get TCP_NODELAY as one process's do."""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("uvicorn")

import uvicorn

from tether.server.running import tcp_listener


async def _accepted_nodelay(listener: socket.socket) -> int:
    """TCP_NODELAY of the connection an asyncio server on `listener` accepts."""
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Report(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Report, sock=listener)
    port = listener.getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await asyncio.wait_for(seen, 30)
    finally:
        writer.close()
        server.close()


def _bound() -> socket.socket:
    """A listener bound as uvicorn's supervisor binds it for its workers."""
    return uvicorn.Config(lambda *a: None, host="127.0.0.1", port=0).bind_socket()


def test_uvicorns_listener_alone_sets_nagle_as_its_protocol_says() -> None:
    """Before uvicorn fixed its issue #3149 its listener was not marked TCP and the accepted
    connections kept Nagle on (what made the workers' responses wait); a uvicorn that binds
    it as TCP itself (0.55 on) gives them TCP_NODELAY. Either way the marked one does (below)."""
    sock = _bound()
    fixed = sock.proto == socket.IPPROTO_TCP
    assert asyncio.run(_accepted_nodelay(sock)) == (1 if fixed else 0)


def test_the_marked_listener_gives_accepted_connections_tcp_nodelay() -> None:
    raw = _bound()
    address = raw.getsockname()
    sock = tcp_listener(raw)
    assert sock.proto == socket.IPPROTO_TCP
    assert sock.getsockname() == address and sock.get_inheritable()  # the same descriptor
    assert asyncio.run(_accepted_nodelay(sock)) == 1
    assert tcp_listener(sock) is sock  # already TCP: as it is


def test_a_unix_socket_is_left_as_it_is() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    try:
        assert tcp_listener(left) is left
    finally:
        left.close()
        right.close()
