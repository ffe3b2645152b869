"""How `tether serve` runs the engine's blocking work: lanes of worker threads, each thread
with a Workspace of its own, and bounded lines in front of the heavy work.

- `Lane`: `size` threads (a thread pool that lives as long as the app); each thread builds
  its own Workspace on first use (a Workspace, like its SQLite connection, serves the thread
  that made it) over one shared `Models`, so readers run in parallel without sharing a
  connection or a cache. Each Workspace sees a re-ingest on its next use (the store's
  generation moves, its caches are rebuilt).
- The server has three lanes: readers (searches and lookups), the model (`/v1/ask`) and the
  checker (`/v1/check`). A heavy request never takes a reader's thread, so searches keep
  their threads however many answers or checks are running or waiting.
- A heavy lane has `size` threads and admits at most `waiting` more requests; beyond that
  `admit` refuses at once (503 with Retry-After and the lane's `busy` sentence), so a burst
  cannot pile up unbounded work.
- `Lane.run` waits under a deadline (504 when it passes): work still in line is dropped;
  work already running is told to stop (its `tether.deadlines.Deadline` cancelled) and stops
  at its next stage boundary (a search: before or after its query embedding or its
  reranker), its result dropped.
- A piece of work that fails with an `UpstreamError` (PostgreSQL restarted, a connection
  cut) or an `UnavailableError` (the index file damaged, replaced, gone) closes its thread's
  Workspace, so that thread's next request opens a new connection instead of failing on the
  dead one (or reading a file since replaced) for as long as the process lives; an
  UnavailableError is reported to the server's `tether.server.watch.Watch` (/readyz), and
  every Workspace of a lane records its audit failures in the Watch's `AuditWrites`.
- `Warmup`: the warm-up's state for /readyz; a failed warm-up says why in one line that
  names no file (a TetherError's message, or its class's `public` sentence; "an unexpected
  error" otherwise), and logs the whole error.

What it cannot do: Python threads cannot be stopped from outside: an answer or a search past
its deadline stops at its next stage boundary (the request carries the deadline:
`AskOptions.deadline`, `SearchOptions.deadline`), but a stage already running (a model call,
a claim's checks, an encoder call, a SQL query) holds its thread and its place in the lane
until it returns; the lanes share the
process's cores and its interpreter lock, so heavy work slows a search down (it does not
stop it); the Workspaces' connections close with the process; the request that finds a
connection dead fails (502), once per thread, before the thread reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from tether.app import Workspace
from tether.deadlines import Deadline
from tether.errors import DeadlineError, TetherError, UnavailableError, UpstreamError
from tether.server.http import Refused
from tether.server.watch import WarmStatus

if TYPE_CHECKING:
    from tether.server.watch import Watch

T = TypeVar("T")


class Lane:
    """`size` worker threads, each with its own Workspace from `factory`; with `waiting`
    set, at most `size + waiting` requests admitted at once (`busy` says why the next is
    refused); `watch` hears of an unusable index and counts the audit's failures."""

    def __init__(
        self,
        name: str,
        factory: Callable[[], Workspace],
        size: int,
        waiting: int | None = None,
        busy: str = "the model is busy: too many questions are waiting",
        watch: Watch | None = None,
    ) -> None:
        self.name = name
        self.busy = busy
        self.watch = watch
        self._factory = factory
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"tether-{name}")
        self.size = size
        self.capacity = None if waiting is None else size + waiting
        self._admitted = 0
        self._lock = threading.Lock()
        self._seconds = 1.0  # a running mean of how long one piece of work takes

    def _workspace(self) -> Workspace:
        ws: Workspace | None = getattr(self._local, "workspace", None)
        if ws is None:
            ws = self._local.workspace = self._factory()
            if self.watch is not None:
                ws.audit_writes = self.watch.audit  # one count for the server
        return ws

    def admit(self) -> None:
        """Take a place in line, or `Refused` (503 with Retry-After) when it is full."""
        with self._lock:
            if self.capacity is not None and self._admitted >= self.capacity:
                wait = math.ceil(self._seconds * self._admitted / self.size)
                raise Refused(503, self.busy, headers={"Retry-After": str(max(1, wait))})
            self._admitted += 1

    def _leave(self, future: Future[Any]) -> None:
        with self._lock:
            self._admitted -= 1

    def _timed(self, fn: Callable[[Workspace], T]) -> T:
        began = time.perf_counter()
        ws = self._workspace()
        try:
            return fn(ws)
        except (UpstreamError, UnavailableError) as exc:
            with contextlib.suppress(Exception):  # the error to report is the first one
                ws.close()  # its store or audit failed: the next use opens them anew
            if isinstance(exc, UnavailableError) and self.watch is not None:
                self.watch.index.failed(exc)
            raise
        finally:
            spent = time.perf_counter() - began
            with self._lock:
                self._seconds = 0.8 * self._seconds + 0.2 * spent

    def submit(self, fn: Callable[[Workspace], T], *, admitted: bool = False) -> Future[T]:
        """Start `fn(workspace)` on one of this lane's threads (in line when all are busy).
        With `admitted`, the place taken by `admit` is given back when the work ends."""
        future = self._pool.submit(self._timed, fn)
        if admitted:
            future.add_done_callback(self._leave)
        return future

    async def run(
        self, fn: Callable[[Workspace], T], deadline: float, token: Deadline | None = None
    ) -> T:
        """`fn(workspace)` on one of this lane's threads, awaited under `deadline` seconds;
        `token`, the work's own deadline, is cancelled when the wait gives up."""
        return await wait(self.submit(fn), deadline, token)

    def close(self) -> None:
        """Stop taking work (running work finishes)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class Warmup:
    """The server's warm-up: `Workspace.warm` on the model lane at start-up, so the first
    question does not wait for the models to load; `readiness` says where it stands
    (`GET /readyz`). A failed warm-up is reported, not fatal: the first question tries again
    and fails with the same error."""

    def __init__(self) -> None:
        self.status: WarmStatus = "warming"
        self.detail = "loading the models"
        self._began = time.monotonic()
        self._seconds: float | None = None

    def start(self, lane: Lane, enabled: bool = True) -> None:
        """Warm up on `lane` (in the background), or, not `enabled`, report ready at once."""
        self._began = time.monotonic()
        if not enabled:
            self._finish("ready", "warm-up off: the first question loads the models")
            return
        lane.submit(lambda ws: ws.warm()).add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        if future.cancelled():
            self._finish("failed", "the warm-up was cancelled (the server is stopping)")
            return
        error = future.exception()
        log = logging.getLogger("uvicorn.error")
        if error is None:
            self._finish("ready", "the models are loaded")
            log.info("tether: %s (%.1f s)", self.detail, self._seconds or 0.0)
            return
        if isinstance(error, TetherError):
            said = error.public if error.public is not None else str(error)
        else:
            said = "an unexpected error (see the server's log)"
        self._finish("failed", f"the warm-up failed: {said}")
        log.error(
            "tether: the warm-up failed (%.1f s): %s",
            self._seconds or 0.0,
            error,
            exc_info=None if isinstance(error, TetherError) else error,
        )

    def _finish(self, status: WarmStatus, detail: str) -> None:
        self._seconds = time.monotonic() - self._began
        self.detail = detail
        self.status = status

    def readiness(self) -> tuple[WarmStatus, str, float]:
        """(status: warming, ready or failed; what it is doing or what went wrong; seconds
        taken, or taken so far)."""
        seconds = self._seconds if self._seconds is not None else time.monotonic() - self._began
        return self.status, self.detail, round(seconds, 3)


async def wait(future: Future[T], deadline: float, token: Deadline | None = None) -> T:
    """The result of `future`; a `DeadlineError` (504) past `deadline` s (work still in line
    is dropped; work already running is told to stop through `token`, which it checks at its
    stage boundaries, and finishes in the background when it has none)."""
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), deadline)
    except TimeoutError:
        future.cancel()
        if token is not None:
            token.cancel()
        message = f"the request took longer than its deadline ({deadline:g} s)"
        raise DeadlineError(message) from None
