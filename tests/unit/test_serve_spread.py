"""`tether serve --workers N` (`tether.server.spread`): the supervisor alone listens, without
SO_REUSEPORT, so no other process can bind the port and take a share of the connections
(issue 47); it hands each connection to the workers in turn (SCM_RIGHTS over a socket pair
per worker), and a worker's event loop serves its pair as if it were the listening socket.
Here one event loop plays two workers."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket

import pytest

pytest.importorskip("uvicorn")

from tether.server.spread import Channel, Dispatcher, listener, supported

unix = pytest.mark.skipif(not supported(), reason="passes descriptors over Unix sockets")


def test_the_listener_is_tcp_and_no_other_socket_can_join_its_port() -> None:
    """An intruder's bind fails with EADDRINUSE whatever it sets, SO_REUSEPORT included (with
    SO_REUSEPORT on the listener, the same user's bind would join and get connections)."""
    sock = listener("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port != 0 and sock.proto == socket.IPPROTO_TCP
        if hasattr(socket, "SO_REUSEPORT"):
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0
        for options in ((), ("SO_REUSEADDR",), ("SO_REUSEPORT",), ("SO_REUSEADDR", "SO_REUSEPORT")):
            if not all(hasattr(socket, o) for o in options):
                continue
            with socket.socket() as intruder:
                for option in options:
                    intruder.setsockopt(socket.SOL_SOCKET, getattr(socket, option), 1)
                with pytest.raises(OSError) as refused:
                    intruder.bind(("127.0.0.1", port))
                assert refused.value.errno == errno.EADDRINUSE, options
    finally:
        sock.close()


def test_a_port_in_use_by_another_listener_is_an_error() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(OSError):
            listener("127.0.0.1", other.getsockname()[1])


async def _served(channels: list[socket.socket], port: int, connections: int) -> list[list]:
    """What each channel's asyncio server accepts of `connections` opened at once: per
    channel, (TCP_NODELAY, peer address, the client's own address) of each connection."""
    seen: list[list] = [[] for _ in channels]
    servers = []
    for i, channel in enumerate(channels):

        class Note(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport, i: int = i) -> None:
                sock = transport.get_extra_info("socket")
                nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                seen[i].append((nodelay, transport.get_extra_info("peername")))

        servers.append(await asyncio.get_running_loop().create_server(Note, sock=channel))
    opened = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", port) for _ in range(connections))
    )
    for _ in range(250):
        if sum(map(len, seen)) == connections:
            break
        await asyncio.sleep(0.02)
    clients = {writer.get_extra_info("sockname") for _, writer in opened}
    for _, writer in opened:
        writer.close()
    for server in servers:
        server.close()
    assert {peer for found in seen for _, peer in found} == clients
    return seen


def _pairs(n: int) -> tuple[list[socket.socket], list[socket.socket]]:
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
    return [mine for mine, _ in pairs], [Channel.of(child) for _, child in pairs]


@unix
def test_connections_opened_at_once_are_handed_to_the_workers_in_turn() -> None:
    """32 connections at once: 16 to each of two workers (one listening socket shared by the
    workers gave them often all to the first to wake), each with TCP_NODELAY and its own
    client's address."""
    sock = listener("127.0.0.1", 0)
    mine, channels = _pairs(2)
    dispatcher = Dispatcher(sock, mine)
    dispatcher.start()
    try:
        seen = asyncio.run(_served(channels, sock.getsockname()[1], 32))
    finally:
        dispatcher.stop()
        for s in (sock, *mine, *channels):
            s.close()
    assert [len(found) for found in seen] == [16, 16]
    assert all(nodelay for found in seen for nodelay, _ in found)


@unix
def test_a_worker_that_is_not_running_is_skipped() -> None:
    sock = listener("127.0.0.1", 0)
    mine, channels = _pairs(2)
    dispatcher = Dispatcher(sock, mine, alive=lambda i: i == 1)
    dispatcher.start()
    try:
        seen = asyncio.run(_served(channels, sock.getsockname()[1], 6))
    finally:
        dispatcher.stop()
        for s in (sock, *mine, *channels):
            s.close()
    assert [len(found) for found in seen] == [0, 6]


@unix
def test_a_worker_whose_supervisor_is_gone_stops(monkeypatch) -> None:
    """The supervisor's end closed (it died): the worker signals itself to stop, once, and
    its loop is told there is nothing to accept."""
    mine, channels = _pairs(1)
    signals: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signals.append((pid, sig)))
    mine[0].close()
    for _ in range(2):
        with pytest.raises(BlockingIOError):
            channels[0].accept()
    channels[0].close()
    assert signals == [(os.getpid(), signal.SIGTERM)]


@unix
def test_nothing_handed_over_is_nothing_to_accept() -> None:
    mine, channels = _pairs(1)
    channels[0].setblocking(False)
    try:
        with pytest.raises(BlockingIOError):
            channels[0].accept()
        channels[0].listen(5)  # the supervisor listens: nothing happens here
    finally:
        for s in (*mine, *channels):
            s.close()


def test_workers_on_a_port_taken_meanwhile_stop_with_one_line() -> None:
    """The port checked free by `tether serve` but taken before the supervisor binds it: a
    TetherError naming the address (the CLI prints it as one line), no traceback."""
    from tether.errors import TetherError
    from tether.server.api import ServeConfig
    from tether.server.running import WORKER_ENV, Plan, serve

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        plan = Plan(None, "", None, False, ServeConfig(warm=False))
        with pytest.raises(TetherError, match=rf"cannot listen on 127\.0\.0\.1:{port} \("):
            serve(plan, "127.0.0.1", port, workers=2)
    assert WORKER_ENV not in os.environ  # nothing left for a later start
