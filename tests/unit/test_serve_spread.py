"""`tether serve --workers N` on Linux gives each worker a listening socket of its own, bound
to the port with SO_REUSEPORT (`tether.server.spread`): the kernel spreads connections over
them, where one shared socket let the first worker to wake accept every waiting connection."""

from __future__ import annotations

import asyncio
import os
import socket
import sys

import pytest

pytest.importorskip("uvicorn")

from tether.server.spread import spread_sockets

linux = pytest.mark.skipif(sys.platform != "linux", reason="SO_REUSEPORT spreads on Linux")


@linux
def test_the_sockets_share_one_port_and_are_tcp_and_inheritable() -> None:
    socks = spread_sockets("127.0.0.1", 0, 3)
    assert socks is not None and len(socks) == 3
    try:
        ports = {s.getsockname()[1] for s in socks}
        assert len(ports) == 1 and ports != {0}
        assert all(s.proto == socket.IPPROTO_TCP and s.get_inheritable() for s in socks)
    finally:
        for s in socks:
            s.close()


def test_one_worker_or_no_reuseport_keeps_the_shared_socket(monkeypatch) -> None:
    assert spread_sockets("127.0.0.1", 0, 1) is None
    monkeypatch.setattr(sys, "platform", "darwin")
    assert spread_sockets("127.0.0.1", 0, 2) is None


@linux
def test_a_port_in_use_by_another_listener_is_an_error_and_nothing_is_left_open() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(OSError):
            spread_sockets("127.0.0.1", other.getsockname()[1], 2)


async def _accepted_per_socket(socks: list[socket.socket], connections: int) -> list[int]:
    """How many of `connections` opened at once each socket's asyncio server accepts."""
    counts = [0] * len(socks)
    servers = []
    for i, sock in enumerate(socks):

        class Count(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport, i: int = i) -> None:
                counts[i] += 1

        servers.append(await asyncio.get_running_loop().create_server(Count, sock=sock))
    port = socks[0].getsockname()[1]
    opened = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", port) for _ in range(connections))
    )
    for _ in range(100):
        if sum(counts) == connections:
            break
        await asyncio.sleep(0.02)
    for _, writer in opened:
        writer.close()
    for server in servers:
        server.close()
    return counts


@linux
def test_connections_opened_at_once_are_spread_over_the_sockets() -> None:
    """32 connections at once: each of two sockets takes some (all on one: 2 in 2^32)."""
    socks = spread_sockets("127.0.0.1", 0, 2)
    assert socks is not None
    try:
        counts = asyncio.run(_accepted_per_socket(socks, 32))
    finally:
        for s in socks:
            s.close()
    assert sum(counts) == 32 and min(counts) >= 4, counts


@linux
def test_workers_on_a_port_taken_meanwhile_stop_with_one_line() -> None:
    """The port checked free by `tether serve` but taken before the workers' sockets are
    bound: a TetherError naming the address (the CLI prints it as one line), no traceback."""
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
