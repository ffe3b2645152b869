"""`tether serve --workers N` on Linux: one listening socket a worker, so that the kernel, not
a race between the workers, decides which worker takes a connection.

With one shared socket, every worker wakes when connections arrive and the first to run
accepts all that are waiting (asyncio accepts up to its backlog at each wake-up): 32 clients
that connect at once often all land on one worker, which then serves them on one core while
the other idles (measured: two workers gave no more answers a second than one, p95 2.6 times
one worker's; bench/results/serve_load.md). Here each worker has a socket of its own, bound
to the same address and port with SO_REUSEPORT; Linux hashes each new connection to one of
them, so N workers get about 1/N of the connections each.

- `spread_sockets(host, port, n)`: n TCP sockets bound to host:port with SO_REUSEPORT (port
  0: the first one's port), inheritable, or None where SO_REUSEPORT does not spread
  connections (not Linux).
- `Spread`: uvicorn's `Multiprocess` supervisor, but worker i is given socket i only, when it
  starts, is restarted after dying, or is replaced on SIGHUP. The sockets stay open in the
  supervisor, so a connection hashed to a worker that is being restarted waits in that
  socket's queue for the new worker instead of being refused.

What it cannot do: the spread is by a hash of the connection's addresses, not by load: a
long-lived connection stays with its worker, and a few connections can land unevenly (a
reverse proxy that keeps a pool of connections open spreads its requests only as evenly as
its pool's connections); while a worker restarts, the connections hashed to its socket wait;
SIGTTIN and SIGTTOU (add or remove a worker) are refused with a log line, as a new worker would
need a socket of its own; it follows `uvicorn.supervisors.Multiprocess`'s internals (tested
against the uvicorn the project pins).
"""

from __future__ import annotations

import logging
import socket
import sys

from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess, Process

logger = logging.getLogger("uvicorn.error")


def spread_sockets(host: str, port: int, n: int) -> list[socket.socket] | None:
    """`n` listening TCP sockets on `host:port`, each with SO_REUSEPORT (see the module
    docstring); None where that does not spread connections. An OSError when the address
    cannot be bound (the caller has checked that it can)."""
    if sys.platform != "linux" or not hasattr(socket, "SO_REUSEPORT") or n < 2:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            port = sock.getsockname()[1]  # port 0: the others take the first one's
            sock.set_inheritable(True)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


class Spread(Multiprocess):
    """uvicorn's supervisor, with worker i serving `sockets[i]` alone (see the module
    docstring); `config.workers` must be `len(sockets)`."""

    def _start(self, idx: int) -> Process:
        process = Process(self.config, [self.sockets[idx]])
        process.start()
        return process

    def init_processes(self) -> None:
        self.processes = [self._start(idx) for idx in range(len(self.sockets))]

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
        """SIGHUP: each worker replaced by a new one on its socket, the new one serving before
        the old one stops (as uvicorn does)."""
        for idx, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._start(idx)
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                if not self.should_exit.is_set():
                    logger.error(f"New child process [{new.pid}] was not ready in time; keeping"
                                 f" worker [{old.pid}] and stopping the restart.")  # fmt: skip
                return
            old.terminate()
            old.join()
            self.processes[idx] = new

    def handle_ttin(self) -> None:
        logger.warning("Received SIGTTIN: the number of workers is fixed (one socket each)")

    def handle_ttou(self) -> None:
        logger.warning("Received SIGTTOU: the number of workers is fixed (one socket each)")
