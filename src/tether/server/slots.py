"""The model's slots in `tether serve`: at most `size` model calls at once in a process,
whatever else the answers are doing.

An answer runs on a thread of the answer lane (`tether.server.api.Server`) from its start:
retrieval, the support gate, the answerability judge and the checks run at once, and only
its model calls take turns for a slot. So a question refused before any model call (by the
gate or the answerability judge) is answered while another answer's model call runs.

- `ModelSlots(size)`: the slots; `call(fn)` runs one model call in a slot, waiting for one at
  most until the deadline of the request it works for (`tether.deadlines.current()`, bound
  by `Workspace.ask`; `DeadlineError` past it); `counts()` says how many calls run, how many
  of those are past their request's deadline, and how many wait (`/metrics`: `Gauges`).
- `slotted(provider, slots)`: `provider` with each `complete` and `stream` in a slot; every
  other attribute (its name, capabilities, `load`) is the provider's own, so the pipeline and
  the judges treat it as what it wraps.

A slot is held until its call returns. A remote provider (`tether.providers.base`) gives each
try at most the time its request has left and closes the connection there, so its slot is
free at the request's deadline.

What it cannot do: stop a call. The local model (llama.cpp in-process, through xllamacpp)
cannot be interrupted: a call past its request's deadline keeps its slot, and its answer's
thread, until the model stops (the request was answered 504 at its deadline); `/metrics`
says so (`tether_model_calls_overdue`), and questions that need the model meanwhile wait for
a slot until their own deadline (504), while those refused before the model are answered.
The slots are per process.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from tether import deadlines
from tether.deadlines import Deadline
from tether.errors import DeadlineError
from tether.protocols import Provider, StreamingProvider, capabilities_of
from tether.types import Capabilities, Completion, ModelRequest

T = TypeVar("T")
_STEP_S = 0.25  # how often a wait for a slot looks at its request's deadline (a cancel)


class ModelSlots:
    """`size` slots for model calls (see the module docstring)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._free = threading.Semaphore(self.size)
        self._lock = threading.Lock()
        self._running: dict[int, Deadline | None] = {}  # each call's request deadline
        self._waiting = 0
        self._ids = itertools.count()

    def call(self, fn: Callable[[], T]) -> T:
        """`fn()` (one model call) in a slot, once one is free; `DeadlineError` when the
        request's deadline passes first (the call is then never made)."""
        deadline = deadlines.current()
        self._take(deadline)
        key = next(self._ids)
        with self._lock:
            self._running[key] = deadline
        try:
            return fn()
        finally:
            with self._lock:
                del self._running[key]
            self._free.release()

    def _take(self, deadline: Deadline | None) -> None:
        with self._lock:
            self._waiting += 1
        try:
            while True:
                if deadline is not None:
                    deadline.check("the wait for the model")
                left = deadline.remaining() if deadline is not None else None
                step = _STEP_S if left is None else min(_STEP_S, left)
                if self._free.acquire(timeout=step if deadline is not None else None):
                    return
        except DeadlineError:
            raise DeadlineError(
                "the request ran past its deadline while it waited for the model"
                " (another answer's model call held it); stopped there"
            ) from None
        finally:
            with self._lock:
                self._waiting -= 1

    def counts(self) -> tuple[int, int, int]:
        """(model calls running, those of them past their request's deadline, requests
        waiting for a slot)."""
        with self._lock:
            running = list(self._running.values())
            waiting = self._waiting
        overdue = sum(d is not None and d.expired for d in running)
        return len(running), overdue, waiting


class Gauges:
    """The slots as Prometheus gauges, read at each collection (this process's own, also on a
    shared store: they are not counts to add up)."""

    def __init__(self, slots: ModelSlots) -> None:
        self.slots = slots

    def collect(self) -> Iterator[Metric]:
        running, overdue, waiting = self.slots.counts()
        yield GaugeMetricFamily(
            "tether_model_slots", "Model calls that may run at once", value=self.slots.size
        )
        yield GaugeMetricFamily("tether_model_calls", "Model calls running", value=running)
        yield GaugeMetricFamily(
            "tether_model_calls_overdue",
            "Model calls still running past their request's deadline (a call that cannot be"
            " stopped, such as the local model's, keeps its slot until it ends)",
            value=overdue,
        )
        yield GaugeMetricFamily(
            "tether_model_waiting", "Answers waiting for a model slot", value=waiting
        )


class _Slotted:
    """A provider whose model calls take a slot (see `slotted`)."""

    def __init__(self, inner: Provider, slots: ModelSlots) -> None:
        self.inner = inner
        self.name = inner.name
        self._slots = slots

    @property
    def capabilities(self) -> Capabilities:
        return capabilities_of(self.inner)

    def complete(self, request: ModelRequest) -> Completion:
        return self._slots.call(lambda: self.inner.complete(request))

    def __getattr__(self, name: str) -> Any:  # describe, model, load, selection, ...
        if name == "inner":  # not set yet (a copy being made): not the provider's
            raise AttributeError(name)
        return getattr(self.inner, name)


class _SlottedStreaming(_Slotted):
    """A streaming provider whose model calls take a slot."""

    inner: StreamingProvider  # type: ignore[assignment]

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> Completion:
        return self._slots.call(lambda: self.inner.stream(request, on_text))


def slotted(provider: Provider, slots: ModelSlots) -> Provider:
    """`provider` with each model call (`complete`, `stream` when it streams) in one of
    `slots`; a provider that does not stream stays one that does not."""
    if isinstance(provider, _Slotted):
        return provider
    if isinstance(provider, StreamingProvider):
        return _SlottedStreaming(provider, slots)
    return _Slotted(provider, slots)
