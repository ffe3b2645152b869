"""A request's deadline, checked between the stages of the engine's work (cooperative
cancellation).

- `Deadline`: a `time.monotonic()` instant (or none) and a cancel flag; `check(stage)` raises
  `DeadlineError` once the instant has passed or `cancel()` was called (by the server, from
  its event loop, when it has stopped waiting for the answer).
- `bound(deadline)`: a context manager that makes `deadline` the current one for the work
  done inside it, in this thread (a context variable); `check(stage)` checks the current one
  and does nothing when none is bound; `current()` returns it.

The engine checks at its stage boundaries: the query embedder before embedding and while a
query waits for its batch (`tether.embeddings.batching`), the retriever before and after its
reranker, `Workspace.search` before it starts, `ask` between its stages. A request past its
deadline stops at the next check, so the thread it held serves the next request instead of
finishing work nobody will read. Two waits read `remaining()` instead: a remote provider's
try gets at most the time left and is given up there, its connection closed
(`tether.providers.base`), and a served question waits for the model's slot at most until
its deadline (`tether.server.slots`).

What it cannot do: a stage already running (an ONNX Runtime call, a SQL query, a local model
call) runs to its end, as Python cannot stop a thread from outside; a context variable does not
follow work handed to another thread unless that thread is given the deadline (the batcher is
given it with each query).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tether.errors import DeadlineError

__all__ = ["Deadline", "bound", "check", "current"]


class Deadline:
    """A `time.monotonic()` instant `at` (None: no instant, only `cancel`) past which the work
    of one request stops at its next check."""

    def __init__(self, at: float | None = None) -> None:
        self.at = at
        self._cancelled = threading.Event()

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """A deadline `seconds` from now."""
        return cls(time.monotonic() + seconds)

    def cancel(self) -> None:
        """Stop the work at its next check, whatever the time (any thread may call this)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """Whether `cancel` was called."""
        return self._cancelled.is_set()

    @property
    def expired(self) -> bool:
        """Whether the work should stop: cancelled, or past the instant."""
        return self.cancelled or (self.at is not None and time.monotonic() > self.at)

    def remaining(self) -> float | None:
        """Seconds left before the instant (0 when cancelled or past it; None: no instant)."""
        if self.cancelled:
            return 0.0
        if self.at is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def check(self, stage: str) -> None:
        """Raise `DeadlineError` when the work should stop (before or after `stage`)."""
        if self.expired:
            why = "was cancelled" if self.cancelled else "ran past its deadline"
            raise DeadlineError(f"the request {why} at {stage}; stopped there")


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "tether_deadline", default=None
)


def current() -> Deadline | None:
    """The deadline bound in this context, or None."""
    return _CURRENT.get()


@contextmanager
def bound(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Make `deadline` the current one inside the block (None: none, as outside any block)."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def check(stage: str) -> None:
    """`Deadline.check(stage)` on the current deadline; nothing when none is bound."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check(stage)
