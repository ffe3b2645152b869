"""`tether serve --workers N`: the supervisor alone listens on the port, accepts each
connection and hands it to the next worker in turn, so that connections spread evenly over
the workers and no other process can take a share of them.

Why not SO_REUSEPORT. Each worker could listen on a socket of its own, all bound to the port
with SO_REUSEPORT, and Linux would hash each new connection to one of them; but any other
process of the same user may bind the port with SO_REUSEPORT too, join the group, and receive
its share of the connections, with the keys in their headers (issue 47). Here the port is
bound once, without SO_REUSEPORT, so another process's bind fails (EADDRINUSE) whatever
options it sets.

Why the supervisor accepts. Workers that share one listening socket all wake when
connections arrive, and the first to run accepts every connection waiting (asyncio accepts up
to its backlog at each wake-up): 32 clients that connected at once often all landed on one
worker, which served them on one core while the other idled (bench/results/serve_load.md).
Workers that accept one connection a wake-up spread them only as evenly as they get the CPU
(on 2 busy cores connections that arrived at once could still all land on one worker, and
kept-alive clients of /v1/search got fewer answers a second than from sockets of the workers'
own; measured with bench/serve/serve_load.py and serve_compare.py,
bench/results/serve_load.md). So the supervisor accepts, and sends each connection's descriptor
(SCM_RIGHTS, over a Unix socket pair per worker) to the workers in turn, skipping a worker
that is not running; the worker's event loop takes it as if it had accepted it itself
(the connections split evenly between the workers in every round, the answers a second
matched sockets of the workers' own within the noise of that machine, and a new connection
was no slower; bench/results/serve_load.md).

- `listener(host, port)`: the one TCP socket, bound without SO_REUSEPORT, listening (port 0:
  a free port); only the supervisor holds it.
- `Dispatcher`: the supervisor's thread that accepts and hands out the connections.
- `Channel`: a worker's end of its socket pair, as its event loop serves it: `accept` takes
  the next connection handed to it (its peer's address from the connection itself).
- `Spread`: uvicorn's `Multiprocess` supervisor, worker i serving channel i with asyncio's
  event loop (uvloop would treat the channel as a listening TCP socket); it starts, restarts
  one that dies, replaces them all on SIGHUP (the new worker reads the channel before the old
  one stops, so no connection is lost), as uvicorn does. A connection handed to a worker that
  dies meanwhile waits in its channel for the worker started in its place.

What it cannot do: the turn is by connection, not by load: a long-lived connection stays with
its worker, and a reverse proxy that keeps a pool of connections spreads its requests only as
evenly as its pool's connections; every connection goes through the supervisor's thread once
(an accept and a send, tens of microseconds); SIGTTIN and SIGTTOU (add or remove a worker)
are refused with a log line, as the channels are fixed when the server starts; it follows
`uvicorn.supervisors.Multiprocess`'s internals and asyncio's accept loop (it calls `accept`
on the socket it serves), tested against the versions the project pins; it needs Unix
sockets that pass descriptors (`supported`; elsewhere the workers share the listening socket
as uvicorn's own supervisor does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess, Process

logger = logging.getLogger("uvicorn.error")

BACKLOG = 2048  # connections the kernel keeps waiting to be accepted (uvicorn's default)
FULL_WAIT_S = 0.5  # how long the dispatcher waits for room when every channel is full


def supported() -> bool:
    """Whether connections can be handed to the workers here (Unix sockets with SCM_RIGHTS)."""
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "SCM_RIGHTS")


def listener(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """The listening TCP socket of `tether serve --workers N` on `host:port`, without
    SO_REUSEPORT (see the module docstring). An OSError when the address cannot be bound
    (another process listens there, say)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":  # a restart need not wait for the old connections' TIME_WAIT
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


class Dispatcher:
    """The supervisor's thread: accepts each connection on `sock` and sends it to the next
    of `channels` (the supervisor's ends) whose worker `alive(i)` says is running (any, when
    none is), then closes its own copy."""

    def __init__(
        self,
        sock: socket.socket,
        channels: list[socket.socket],
        alive: Callable[[int], bool] = lambda i: True,
    ) -> None:
        self.sock = sock
        self.channels = channels
        self.alive = alive
        self._turn = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tether-accept", daemon=True)
        for channel in channels:
            channel.setblocking(False)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting (a connection not yet accepted waits in the kernel's queue until the
        socket is closed)."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError as exc:
                if self._stopping.is_set():
                    return
                logger.warning("tether: accepting a connection failed: %s", exc)
                self._stopping.wait(0.1)  # out of descriptors, say: try again shortly
                continue
            with conn:
                self._hand(conn)

    def _order(self) -> list[int]:
        n = len(self.channels)
        turns = [(self._turn + k) % n for k in range(n)]
        running = [i for i in turns if self.alive(i)]
        return running or turns

    def _hand(self, conn: socket.socket) -> None:
        """Send `conn` to the next channel with room; wait while every one is full."""
        while not self._stopping.is_set():
            for i in self._order():
                try:
                    socket.send_fds(self.channels[i], [b"c"], [conn.fileno()])
                except (BlockingIOError, InterruptedError):
                    continue  # that worker has many waiting: the next one
                except OSError as exc:
                    logger.warning("tether: a connection was not handed to worker %d: %s", i, exc)
                    continue
                self._turn = (i + 1) % len(self.channels)
                return
            select.select([], self.channels, [], FULL_WAIT_S)


class Channel(socket.socket):
    """A worker's end of its socket pair, served by its event loop as if it were the
    listening socket: `accept` returns the next connection the supervisor handed over."""

    _orphaned = False

    @classmethod
    def of(cls, sock: socket.socket) -> Channel:
        """`sock`'s descriptor as a Channel (the same socket; `sock` gives it up)."""
        return cls(sock.family, sock.type, sock.proto, fileno=sock.detach())

    def listen(self, backlog: int = 0, /) -> None:
        """Nothing: the supervisor listens."""

    def accept(self) -> tuple[socket.socket, Any]:
        """The next connection handed over, and its peer's address; BlockingIOError when none
        is waiting. When the supervisor is gone this worker stops (SIGTERM to itself)."""
        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        data, fds, _, _ = socket.recv_fds(self, 1, 1, flags)
        if not fds:
            if not data and not self._orphaned:  # the supervisor closed its end: it is gone
                self._orphaned = True
                logger.error("tether: the supervisor is gone; this worker stops")
                os.kill(os.getpid(), signal.SIGTERM)
            raise BlockingIOError("no connection handed over")
        conn = socket.socket(fileno=fds[0])
        for extra in fds[1:]:
            os.close(extra)
        try:
            return conn, conn.getpeername()
        except OSError:  # closed by its client meanwhile
            conn.close()
            raise BlockingIOError("the connection handed over was closed") from None


class Worker(Process):
    """One worker process: uvicorn's, serving its channel (`Channel`) with asyncio's loop."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover
        self.config.loop = "asyncio"  # in the worker: its own copy of the config
        super().target([Channel.of(sock) for sock in sockets or []])


class Spread(Multiprocess):
    """uvicorn's supervisor with the connections handed out by a `Dispatcher` from `sock`
    (a `listener`) to `config.workers` workers (see the module docstring)."""

    def __init__(self, config: Any, sock: socket.socket) -> None:
        pairs = [
            socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(config.workers)
        ]
        super().__init__(config, [child for _, child in pairs])
        self.dispatcher = Dispatcher(sock, [mine for mine, _ in pairs], self._alive)
        self._ends = [end for pair in pairs for end in pair]

    def _alive(self, idx: int) -> bool:
        processes = self.processes
        return idx < len(processes) and processes[idx].process.is_alive()

    def _start(self, idx: int) -> Process:
        process = Worker(self.config, [self.sockets[idx]])
        process.start()
        return process

    def run(self) -> None:
        self.dispatcher.start()
        try:
            super().run()
        finally:
            self.dispatcher.stop()
            for end in self._ends:
                end.close()

    def init_processes(self) -> None:
        self.processes = [self._start(idx) for idx in range(len(self.sockets))]

    def terminate_all(self) -> None:
        """Stop handing out connections, then stop the workers (they finish what they have)."""
        self.dispatcher.stop()
        super().terminate_all()

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for idx, process in enumerate(self.processes):
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()  # hung: killed
            process.join()
            if process.exitcode == STARTUP_FAILURE:  # it would fail the same way again
                logger.error(f"Child process [{process.pid}] failed to start, stopping the parent.")
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            logger.info(f"Child process [{process.pid}] died")
            self.processes[idx] = self._start(idx)

    def restart_all(self) -> None:
        """SIGHUP: each worker replaced by a new one on its channel, the new one serving
        before the old one stops (as uvicorn does)."""
        for idx, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._start(idx)
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                if not self.should_exit.is_set():
                    logger.error(
                        f"New child process [{new.pid}] was not ready in time; keeping"
                        f" worker [{old.pid}] and stopping the restart."
                    )
                return
            old.terminate()
            old.join()
            self.processes[idx] = new

    def handle_ttin(self) -> None:
        logger.warning("Received SIGTTIN: the number of workers is fixed (one channel each)")

    def handle_ttou(self) -> None:
        logger.warning("Received SIGTTOU: the number of workers is fixed (one channel each)")
