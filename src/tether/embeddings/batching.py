"""Concurrent queries embedded together, behind the `Embedder` protocol.

`BatchingEmbedder(inner, window_s=..., max_batch=...)` is an `Embedder` whose `embed_queries`
puts each text in one line shared by every thread of the process. The first caller that finds
nobody embedding leads: it waits until `window_s` has passed since the first text in line
arrived (or until `max_batch` texts wait), takes at most `max_batch` of them, embeds the
distinct ones in one `inner.embed_queries` call, and hands each caller its own copy of its
rows; it leads again while texts of its own are still in line, then hands the lead over.
Texts that queue while a batch is embedded form the next batch at once: the window counts
from the first text's arrival, so under load no time is spent waiting in it. A lone caller
does not wait either: the window is waited only when the last batch held more than one text
(other callers were seen lately), so one client's query goes straight to the embedder.

- Each caller gets the rows of its own texts, in its order, as arrays of its own; a text
  asked by several callers at once is embedded once.
- An error of the inner call reaches every caller with a text in that batch (the same
  exception object, as `concurrent.futures` hands one to every waiter).
- A caller's deadline (`tether.deadlines.current()`) travels with its texts: a text whose
  deadline has passed when its batch forms is not embedded, and a caller stops waiting when
  its deadline passes (`DeadlineError`), so its thread is free at once.
- No thread of its own: the callers' threads do the work, so nothing is left running when
  the process stops and there is nothing to close.
- `embed_passages` and every other attribute (`token_count`, `max_tokens`...) go to `inner`.
- `counts()`: batches run, texts embedded, the largest batch, texts dropped past their
  deadline.

What it cannot do: a batch saves work only where one call of N texts costs less than N calls
(an OpenAI-compatible endpoint: one round trip). The e5 encoders run each text alone, so that
a vector never depends on the texts beside it (`tether.embeddings.fast_e5`); for them a batch
costs what its texts cost one by one (padded ONNX Runtime batches saved little CPU per query
over single runs, and change the vectors in their last bits: bench/experiments/embed_alone.py,
bench/results/embed_alone.md), and
the batcher's gains are one encoder call at a time instead of threads queueing on the
encoder's lock, and a text asked twice at once embedded once; the window then only adds its
wait to the first query after a burst (`window_s=0` turns it off). A text in a running batch
is embedded even when its caller has stopped waiting.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence

import numpy as np

from tether import deadlines
from tether.deadlines import Deadline
from tether.embeddings.cache import ForwardingEmbedder
from tether.errors import DeadlineError
from tether.protocols import Embedder

__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_WINDOW_S", "BatchingEmbedder"]

DEFAULT_WINDOW_S = 0.002  # how long the first query of a batch waits for others
DEFAULT_MAX_BATCH = 16  # queries embedded in one call at most
_POLL_S = 0.05  # how often a waiting caller looks at its deadline (a cancel sets no timer)


class _Query:
    """One text in line: its caller's deadline, and its vector or error once done."""

    __slots__ = ("abandoned", "arrived", "deadline", "done", "error", "text", "vector")

    def __init__(self, text: str, deadline: Deadline | None) -> None:
        self.text = text
        self.deadline = deadline
        self.arrived = time.monotonic()
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False
        self.abandoned = False  # its caller stopped waiting


class BatchingEmbedder(ForwardingEmbedder):
    """`inner` with concurrent `embed_queries` calls embedded together (see the module
    docstring): a batch forms within `window_s` seconds of its first text and holds at most
    `max_batch` texts."""

    def __init__(
        self,
        inner: Embedder,
        *,
        window_s: float = DEFAULT_WINDOW_S,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        super().__init__(inner)
        self.window_s = max(0.0, float(window_s))
        self.max_batch = int(max_batch)
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # the leader's window: a text came
        self._finished = threading.Condition(self._lock)  # a batch ended, or the lead is free
        self._line: deque[_Query] = deque()
        self._leading = False
        self._last_batch = 0  # texts in the last batch: more than one, and the window is waited
        self._counts = {"batches": 0, "texts": 0, "distinct": 0, "largest": 0, "expired": 0}

    # ---- the Embedder protocol (all but queries go to `inner`: `ForwardingEmbedder`) ------

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of `texts` (rows in order), embedded with the other callers' queries
        that wait at the same time; `DeadlineError` when the current deadline passes first."""
        if not texts:
            return np.asarray(self.inner.embed_queries([]), dtype=np.float32)
        deadline = deadlines.current()
        if deadline is not None:
            deadline.check("query embedding")
        mine = [_Query(t, deadline) for t in texts]
        with self._lock:
            self._line.extend(mine)
            self._arrived.notify()
        self._wait(mine, deadline)
        for q in mine:
            if q.error is not None:
                raise q.error
        return np.stack([q.vector for q in mine])  # type: ignore[misc]

    def counts(self) -> dict[str, int]:
        """Batches run, texts embedded (`texts`; `distinct` after merging equal ones), the
        largest batch, texts dropped because their deadline had passed (`expired`)."""
        with self._lock:
            return dict(self._counts)

    # ---- the line ---------------------------------------------------------------------------

    def _wait(self, mine: list[_Query], deadline: Deadline | None) -> None:
        """Until every query of `mine` is done: lead when nobody does, else wait for the
        leader; `DeadlineError` (its queries abandoned) when `deadline` passes first."""
        while True:
            with self._lock:
                while not all(q.done for q in mine):
                    if not self._leading:
                        self._leading = True
                        break
                    if deadline is not None and deadline.expired:
                        self._abandon(mine)
                        deadline.check("query embedding")
                    left = deadline.remaining() if deadline is not None else None
                    self._finished.wait(_POLL_S if left is None else min(left, _POLL_S))
                else:
                    return
            try:
                self._lead(mine, deadline)
            finally:
                with self._lock:
                    self._leading = False
                    self._finished.notify_all()
            if deadline is not None and not all(q.done for q in mine) and deadline.expired:
                with self._lock:
                    self._abandon(mine)
                deadline.check("query embedding")

    def _abandon(self, mine: list[_Query]) -> None:
        """Take `mine` out of line (under the lock): its caller stops waiting."""
        for q in mine:
            q.abandoned = True
        kept = deque(q for q in self._line if not q.abandoned)
        self._counts["expired"] += len(self._line) - len(kept)
        self._line = kept

    def _lead(self, mine: list[_Query], deadline: Deadline | None) -> None:
        """Run batches from the head of the line until `mine` are done (or this caller's
        deadline passes between two batches)."""
        while True:
            with self._lock:
                if all(q.done for q in mine):
                    return
                if deadline is not None and deadline.expired:
                    return
                batch = self._take()
            if batch:
                self._run(batch)

    def _take(self) -> list[_Query]:
        """The next batch (under the lock): after the window, at most `max_batch` texts;
        those whose deadline has passed are done with a `DeadlineError` instead."""
        if self._line and self.window_s > 0 and self._last_batch > 1:
            until = self._line[0].arrived + self.window_s
            while len(self._line) < self.max_batch:
                left = until - time.monotonic()
                if left <= 0:
                    break
                self._arrived.wait(left)
        batch: list[_Query] = []
        expired = 0
        while self._line and len(batch) < self.max_batch:
            q = self._line.popleft()
            if q.deadline is not None and q.deadline.expired:
                q.error = DeadlineError(
                    "the request ran past its deadline before its query was embedded"
                )
                q.done = True
                expired += 1
            elif not q.abandoned:
                batch.append(q)
        if expired:
            self._counts["expired"] += expired
            self._finished.notify_all()  # their callers stop waiting
        return batch

    def _run(self, batch: list[_Query]) -> None:
        """Embed `batch`'s distinct texts in one inner call; every query gets its row or the
        call's error."""
        texts = list(dict.fromkeys(q.text for q in batch))
        error: BaseException | None = None
        vectors: np.ndarray | None = None
        try:
            vectors = np.asarray(self.inner.embed_queries(texts), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                raise ValueError(
                    f"the embedder returned shape {vectors.shape} for {len(texts)} queries"
                )
        except Exception as exc:
            error = exc
        except BaseException:  # an interrupt here: the callers waiting must not hang on it
            error = RuntimeError("the query batch was interrupted")
            raise
        finally:
            row = {t: i for i, t in enumerate(texts)}
            with self._lock:
                for q in batch:
                    if error is None and vectors is not None:
                        q.vector = vectors[row[q.text]].copy()
                    else:
                        q.error = error or RuntimeError("the query batch was interrupted")
                    q.done = True
                c = self._counts
                c["batches"] += 1
                c["texts"] += len(batch)
                c["distinct"] += len(texts)
                c["largest"] = max(c["largest"], len(batch))
                self._last_batch = len(batch)
                self._finished.notify_all()
