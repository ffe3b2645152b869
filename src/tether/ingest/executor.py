"""Where a sync's slow work runs: parsing and chunking new or changed files, and embedding.

An executor runs the picklable units of `tether.ingest.tasks` and hands the results back to
`tether.ingest.sync`, which still builds ONE change set and has the store write it in one
transaction: executors never write.

- `SerialExecutor`: everything in this process, with the embedder the sync was given, but
  parsing: each file is parsed in a watched child process (`tether.ingest.guard`: a file
  that takes more than 768 MB or 120 s, or crashes its parser, is refused on its own).
- `ProcessExecutor` (the default of `tether ingest`): a pool of `workers` processes (default:
  the cores this process may use), started with `spawn` on first use. Each worker builds its
  own embedder in the pool's initialiser from `make_embedder(threads)`, a picklable factory
  (the Workspace passes `functools.partial(build_embedder, choice)`): models are never
  pickled. Each worker gets `cores // workers` threads.
  Small ingests stay in this process: starting the pool (a fresh interpreter per worker, each
  loading the model) costs more than embedding a small ingest's texts serially, and under
  heavy load the pool gained nothing (bench/ingest/ingest_throughput.py,
  bench/results/ingest_throughput.md, "The pool's start-up and `POOL_MIN_TEXTS`"), so below
  `POOL_MIN_TEXTS` (200) texts to embed or `POOL_MIN_BYTES` (2 MB) of files to parse the
  serial path is chosen automatically. Parsing does not use the pool: it runs in up to
  `workers` watched children (`tether.ingest.guard`) at once.
- `RayExecutor` (the `tether[ray]` extra): the same units on a Ray cluster, through Ray
  actors (one embedder per actor, built in its constructor). With `address` it joins that
  cluster (`ray.init(address=...)`); without, it uses the Ray already initialised in this
  process, else starts a local one. tether (the same version) must be importable on every
  node, and the pages' bytes travel to the workers (no shared file system is needed).

`build_executor(name, ...)` makes one by name: the built-in names are `tether.catalog.EXECUTORS`
(which the settings check TETHER_EXECUTOR against), each built by its factory in `FACTORIES`;
another name is looked up among the installed packages' entry points of the group
`tether.executors`, whose object is a factory `(make_embedder, workers, ray_address) ->
Executor` (a plugin that cannot be loaded is a one-line `TetherError` naming it).

An executor may also have `expect(texts)`: the sync tells it how many texts it will embed in
all before handing them over in the vector cache's batches (`ProcessExecutor` starts its pool
for the whole, not per batch); a plugin without it is called as before.

A worker that fails (an exception in an embedder, a process that dies, a model that cannot be
built) raises a `TetherError` naming the cause; the sync then writes nothing. A file that
cannot be parsed is a problem in the report, as in this process (`tether.ingest.tasks`).

The pool's workers never outlive the ingest: each one watches the process that started it
(`multiprocessing.parent_process().sentinel`) and ends itself at once when that process is
gone, however it went (SIGTERM, SIGKILL, a crash); each ignores SIGINT, so a Ctrl-C is the
parent's alone to handle (no traceback from every worker); and `ProcessExecutor.close()`
(which the Workspace calls however the ingest ended) stops the pool without waiting for work
still running: workers still alive after `STOP_GRACE_S` are terminated, then killed.

What it cannot do: it does not split one text across workers (a text is embedded whole by
one embedder); progress is reported per shard, not per batch, when workers embed; vectors
from different executors agree within float rounding (padding differs), not bit for bit;
an embedder given to the Workspace directly (not built from a choice) cannot be rebuilt in a
worker, so the Workspace uses `SerialExecutor` for it. A worker learns that its parent is
gone only through that pipe: a parent stopped (SIGSTOP) but alive keeps its workers.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

import numpy as np

from tether.catalog import EXECUTOR_PLUGINS, EXECUTORS, executor_names, load_plugin
from tether.errors import TetherError
from tether.ingest import guard
from tether.ingest.ray_executor import RayExecutor
from tether.ingest.shard_work import (
    SHARD_TEXTS,
    EmbedderFactory,
    EmbedProgress,
    Placer,
    failed_worker,
)
from tether.ingest.tasks import ParseOutcome, ParseTask, embed_shard, parse_task, shards
from tether.protocols import Embedder

# Below these the pool's start-up costs more than it saves (bench/ingest_throughput.py).
POOL_MIN_TEXTS = 200
POOL_MIN_BYTES = 2_000_000
STOP_GRACE_S = 2.0  # how long close() lets workers leave by themselves before ending them


class Executor(Protocol):
    """Runs ingest work; see the module docstring."""

    name: str

    def parse(self, tasks: list[ParseTask]) -> list[ParseOutcome]:
        """The outcome of each task, in order."""
        ...

    def embed(
        self, embedder: Embedder, texts: list[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        """Vectors of `texts` (float32 rows, in order); `embedder` is the sync's own (used
        where the work stays in this process)."""
        ...

    def close(self) -> None:
        """Stop the workers (a later call starts new ones)."""
        ...


class SerialExecutor:
    """All work in this process."""

    name = "serial"

    def parse(self, tasks: list[ParseTask]) -> list[ParseOutcome]:
        return guard.parse(tasks, 1, parse_task)  # one watched child at a time

    def embed(
        self, embedder: Embedder, texts: list[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        return embed_shard(embedder, texts, progress)[0]

    def close(self) -> None:
        pass


# The embedder of a pool worker process, set by `_init_worker` in that process only (the
# parent never reads or writes it): a process pool has no other place for per-worker state.
_worker_embedder: list[Embedder] = []


def _init_worker(make_embedder: EmbedderFactory | None, threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the pool
    _follow_parent()
    if make_embedder is not None:
        _worker_embedder.append(make_embedder(threads))


def _follow_parent() -> None:
    """In a pool worker: end this process as soon as its parent is gone (the parent's end of
    the spawn pipe closes however the parent ends, a SIGKILL included)."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)  # no cleanup to run: a worker writes nothing

    threading.Thread(target=watch, name="tether-parent-watch", daemon=True).start()


def _worker_embed(texts: list[str]) -> tuple[np.ndarray, int]:
    return embed_shard(_worker_embedder[0], texts)


def _gather(
    futures: Iterable[Future[Any]], each: Callable[[int, Any], None] | None = None
) -> list[Any]:
    """Results of `futures` in order; the first failure cancels the rest and is raised."""
    futures = list(futures)
    out: list[Any] = []
    try:
        for i, future in enumerate(futures):
            out.append(future.result())
            if each is not None:
                each(i, out[-1])
    except Exception as exc:
        for future in futures:
            future.cancel()
        raise failed_worker(exc) from exc
    return out


def available_cores() -> int:
    """Cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class ProcessExecutor:
    """A pool of worker processes, one embedder each (see the module docstring)."""

    name = "process"

    def __init__(
        self,
        make_embedder: EmbedderFactory | None,
        workers: int | None = None,
        *,
        min_texts: int = POOL_MIN_TEXTS,
        min_bytes: int = POOL_MIN_BYTES,
    ) -> None:
        cores = available_cores()
        self.workers = max(1, workers or cores)
        self.threads = max(1, cores // self.workers)
        self.make_embedder = make_embedder
        self.min_texts = min_texts
        self.min_bytes = min_bytes
        self._pool: ProcessPoolExecutor | None = None
        self._serial = SerialExecutor()
        self._expected = 0  # texts the sync said it will embed in all (`expect`)

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.make_embedder, self.threads),
            )
        return self._pool

    def parse(self, tasks: list[ParseTask]) -> list[ParseOutcome]:
        # watched children (`tether.ingest.guard`), up to `workers` at once; a small batch
        # in one (a child starts in milliseconds, but each parses at its own pace)
        if sum(len(t.data) for t in tasks) < self.min_bytes:
            return guard.parse(tasks, 1, parse_task)
        return guard.parse(tasks, self.workers, parse_task)

    def expect(self, texts: int) -> None:
        """The sync is about to embed `texts` texts in all, in several calls (batches kept in
        the vector cache as they finish): the pool is started for the batches when the whole
        is past `min_texts`, as one call of that size would be."""
        self._expected = texts

    def embed(
        self, embedder: Embedder, texts: list[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        small = self._pool is None and max(len(texts), self._expected) < self.min_texts
        if small or self.make_embedder is None:
            return self._serial.embed(embedder, texts, progress)
        pool = self._started()
        cuts = shards(texts, SHARD_TEXTS, self.workers)
        try:
            futures = [pool.submit(_worker_embed, [texts[i] for i in idx]) for idx in cuts]
        except BrokenProcessPool as exc:
            raise failed_worker(exc) from exc
        place = Placer(texts, embedder.dim, cuts, progress)
        _gather(futures, place)
        return place.out

    def close(self) -> None:
        """Stop the pool: queued work is cancelled, idle workers leave, and workers still
        busy after `STOP_GRACE_S` (the ingest failed or was interrupted) are terminated."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        # the pool's own processes and thread: shutdown(wait=False) lets go of them
        processes = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        _stop(processes, STOP_GRACE_S)
        if manager is not None:
            manager.join(STOP_GRACE_S)  # it ends once its workers have


def _stop(processes: list[Any], grace: float) -> None:
    """Wait up to `grace` seconds for `processes` to end, then terminate (SIGTERM) and, a
    second later, kill the ones left."""
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for ending in ("terminate", "kill"):
        left = [p for p in processes if p.is_alive()]
        if not left:
            return
        for process in left:
            getattr(process, ending)()
        for process in left:
            process.join(1.0)


ExecutorFactory = Callable[[EmbedderFactory | None, int | None, str | None], Executor]
"""(make_embedder, workers, ray_address) -> an executor: how each name is built."""


def _ray(
    make_embedder: EmbedderFactory | None, workers: int | None, address: str | None
) -> Executor:
    return RayExecutor(make_embedder, workers, address=address)


FACTORIES: dict[str, ExecutorFactory] = {
    "process": lambda make_embedder, workers, address: ProcessExecutor(make_embedder, workers),
    "serial": lambda make_embedder, workers, address: SerialExecutor(),
    "ray": _ray,
}
"""The built-in executors' factories, one for each name of `tether.catalog.EXECUTORS`."""
if list(FACTORIES) != list(EXECUTORS):  # the catalog is the one list of names
    raise ImportError(f"the executors built here ({list(FACTORIES)}) are not tether.catalog's")


def build_executor(
    name: str,
    make_embedder: EmbedderFactory | None,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
) -> Executor:
    """The executor called `name` (a built-in one, else an installed plugin's); a
    `TetherError` for another name (listing them) or a plugin that cannot be loaded."""
    name = (name or "process").strip().lower()
    factory = FACTORIES.get(name)
    if factory is None:
        found = load_plugin(EXECUTOR_PLUGINS, name)
        if found is None:
            raise TetherError(f"executor {name!r}: expected one of {', '.join(executor_names())}")
        factory, origin = found
        if not callable(factory):
            raise TetherError(
                f"{EXECUTOR_PLUGINS} plugin {name!r} ({origin}) is a {type(factory).__name__},"
                " not a factory (make_embedder, workers, ray_address) -> executor"
            )
    return factory(make_embedder, workers, ray_address)
