"""What the ingest executors share (`tether.ingest.executor`'s process pool and
`tether.ingest.ray_executor`'s Ray actors): the size of a unit of embedding work
(`SHARD_TEXTS`), the types of an embedder factory and of embedding progress, the `Placer` that
puts each shard's vectors back in input order, and `failed_worker`, a worker's failure as the
one-line error the ingest raises.

It sits under both executors so that neither imports the other for these (the executor
registry imports the Ray executor, on first use, to build it).

What it cannot do: it runs no work and starts no worker; the executors do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from tether.errors import TetherError
from tether.protocols import Embedder

SHARD_TEXTS = 16  # texts per unit of embedding work sent to a worker (progress comes per unit)
EmbedderFactory = Callable[[int], Embedder]  # threads -> a new embedder
EmbedProgress = Callable[[int, int], None]  # (done_texts, done_tokens)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failed_worker(exc: BaseException) -> TetherError:
    """A worker's failure as the error the ingest raises: a `TetherError` keeps its class (so
    its exit status and problem type), with the ingest's words around its message."""
    if isinstance(exc, TetherError):
        message = f"an ingest worker failed: {exc}; nothing was written"
        try:
            return type(exc)(message)
        except TypeError:  # a subclass whose constructor takes other arguments
            return TetherError(message)
    if isinstance(exc, BrokenProcessPool):
        return TetherError(
            "an ingest worker process died (out of memory, killed, or its embedder could not"
            " be built); nothing was written; --executor serial runs in this process"
        )
    return TetherError(f"an ingest worker failed ({_one_line(exc)}); nothing was written")


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its last line when it spans several (a remote traceback
    ends with the cause), colour codes removed."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    if len(lines) > 1:
        return lines[-1]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class Placer:
    """Puts each shard's rows back at their input positions as shards finish, reporting
    progress per shard; `out` holds the vectors once every shard is placed."""

    def __init__(
        self, texts: list[str], dim: int, cuts: list[list[int]], progress: EmbedProgress | None
    ) -> None:
        self.out = np.empty((len(texts), dim), dtype=np.float32)
        self.cuts = cuts
        self.progress = progress
        self.done = self.tokens = 0

    def __call__(self, i: int, result: tuple[np.ndarray, int]) -> None:
        idx = self.cuts[i]
        matrix, used = result
        if matrix.shape != (len(idx), self.out.shape[1]):
            raise ValueError(
                f"vectors of shape {matrix.shape}, expected {(len(idx), self.out.shape[1])}"
            )
        self.out[idx] = matrix
        self.done += len(idx)
        self.tokens += used
        if self.progress is not None:
            self.progress(self.done, self.tokens)
