"""What a server knows of its own state beyond the warm-up, for `GET /readyz`, `/metrics` and
its log: whether its index can be used, and how its audit's writes are going.

- `IndexWatch`: a piece of work that found the index unusable (an `UnavailableError`: the
  file damaged, truncated, gone, its disk failing; `tether.server.workers.Lane` reports it)
  marks the index failing (not one that could not write it, an `UnwritableError`: reads
  still work). The first failure of an episode is logged with its message, path
  included; /readyz then answers 503 `failed` with `UnavailableError.public`, a sentence that
  names no file (/readyz needs no key), until a check passes: while failing, each /readyz
  starts one (`check`), at most every `PROBE_EVERY_S` seconds and one at a time, on a reader
  thread: a fresh connection (a rebuilt index is a new file) and, for an index file, a read of
  every page (`Workspace.check_intact`). The check that passes ends the
  episode (logged too). Meanwhile each request that meets the damage is answered 503 with the
  same sentence (`tether.server.http.problem_of`), and one that does not is answered.
- `Watch`: one server's IndexWatch, and the `AuditWrites` its Workspaces share
  (`tether.answering.audit`: an answer whose record cannot be written is served, the record
  counted as a failure, logged once an episode); `readiness` folds both into what /readyz
  says, `audit_fields` the audit's part of its body.

What it cannot do: a request that reads only sound pages of a damaged index succeeds and does
not end the episode (only a check does); the state is one process's (each worker of `--workers
N` keeps its own, and on a PostgreSQL store only the failure counts are added up in /metrics);
a check of a large index reads all of it (about a second a GB from disk).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tether.answering.audit import AuditWrites
from tether.errors import TetherError, UnavailableError, UnwritableError

if TYPE_CHECKING:
    from tether.app import Workspace

WarmStatus = Literal["warming", "ready", "failed"]  # a server's warm-up, as /readyz says it


class Lane(Protocol):
    """What a check runs on: a lane of worker threads, each with its Workspace
    (`tether.server.workers.Lane`)."""

    def submit(self, fn: Callable[[Workspace], None]) -> Future[None]: ...


PROBE_EVERY_S = 5.0  # while the index is failing, at most one check this often
log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True)
class IndexState:
    """`errors`: times work found the index unusable; `failing`: since the last passed check."""

    errors: int = 0
    failing: bool = False


def probe(ws: Workspace) -> None:
    """Whether `ws`'s index can be used now, read afresh: an UnavailableError when not."""
    ws.close()  # a fresh connection: the one before may read a file since replaced
    ws.check_intact()


class IndexWatch:
    """Whether the server's index can be used (see the module docstring). Thread-safe."""

    def __init__(self, every_s: float | None = None) -> None:
        self.every_s = PROBE_EVERY_S if every_s is None else every_s
        self._lock = threading.Lock()
        self._errors = 0
        self._failing = False
        self._checking = False
        self._checked = -float("inf")

    def failed(self, exc: TetherError) -> None:
        """Work found the index unusable (`exc` says why, naming the path); one that could
        not write it (an UnwritableError: a full disk) leaves the readiness alone, as reads
        still work (the audit's failures are counted apart)."""
        if isinstance(exc, UnwritableError):
            return
        with self._lock:
            self._errors += 1
            first, self._failing = not self._failing, True
        if first:
            log.error(
                "tether: the index cannot be used: %s (/readyz says not ready until a"
                " check passes)",
                exc,
            )

    def passed(self) -> None:
        """A check found the index usable: the episode ends."""
        with self._lock:
            was, self._failing = self._failing, False
        if was:
            log.warning("tether: the index can be used again (a check passed)")

    def check(self, lane: Lane) -> None:
        """While failing, start a check on `lane` (at most once every `every_s` seconds, one
        at a time); what it finds is read by the next `state`."""
        now = time.monotonic()
        with self._lock:
            if not self._failing or self._checking or now - self._checked < self.every_s:
                return
            self._checking, self._checked = True, now
        lane.submit(probe).add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._checking = False
        if not future.cancelled() and future.exception() is None:
            self.passed()

    def state(self) -> IndexState:
        with self._lock:
            return IndexState(self._errors, self._failing)


def _say_audit(line: str) -> None:
    log.warning("tether: %s", line)


class Watch:
    """One server's IndexWatch and the AuditWrites its Workspaces share (their failures
    logged, once an episode)."""

    def __init__(self, every_s: float | None = None) -> None:
        self.index = IndexWatch(every_s)
        self.audit = AuditWrites(say=_say_audit)

    def readiness(self, status: WarmStatus, detail: str, lane: Lane) -> tuple[WarmStatus, str]:
        """The warm-up's (`status`, `detail`), or ("failed", a sentence naming no file) while
        the index is failing, a check started on `lane` when one is due."""
        if not self.index.state().failing:
            return status, detail
        self.index.check(lane)
        return "failed", str(UnavailableError.public)

    def audit_fields(self) -> dict[str, Any]:
        """The audit's part of /readyz: `audit` ok or failing (the last write), the records
        not written (`audit_failures`), when the last failure was (`audit_last_failure`, UTC
        ISO 8601, or None)."""
        audit = self.audit.state()
        last = audit.last_failure
        return {
            "audit": "failing" if audit.failing else "ok",
            "audit_failures": audit.failures,
            "audit_last_failure": (
                datetime.fromtimestamp(last, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if last else None
            ),
        }
