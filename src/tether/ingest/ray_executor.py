"""The Ray executor: a sync's parsing and embedding on a Ray cluster (the `tether[ray]` extra).

`RayExecutor(make_embedder, workers, address=...)` starts `workers` Ray actors (default: the
cluster's CPUs), each building its own embedder in its constructor from the picklable factory
(`tether.ingest.executor` says how it is made), and hands them shards of texts and files' bytes through a
`ray.util.ActorPool`, results in input order. It joins the cluster at `address`
(`tether ingest --executor ray --ray-address ray://head:10001`, or `auto`), else uses the Ray
this process already initialised, else starts a local Ray (stopped again by `close`).

What it cannot do: tether (the same version, with its model files) must be installed on every
node; it does not ship code (no runtime_env). Actors ask for one CPU each and wait while the
cluster has none free. A failed actor or task raises a `TetherError` and nothing is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tether.errors import TetherError, UpstreamError
from tether.extras import install_hint
from tether.ingest.shard_work import (
    SHARD_TEXTS,
    EmbedderFactory,
    EmbedProgress,
    Placer,
    failed_worker,
)
from tether.ingest.tasks import ParseOutcome, ParseTask, embed_shard, parse_task, shards
from tether.protocols import Embedder


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise TetherError(
            f"--executor ray needs Ray: {install_hint('ray')} (or use --executor process)"
        ) from exc
    return ray


class _Worker:
    """One Ray actor: an embedder built here, from its factory (never pickled)."""

    def __init__(self, make_embedder: EmbedderFactory | None, threads: int) -> None:
        self.embedder = make_embedder(threads) if make_embedder is not None else None

    def parse(self, tasks: list[ParseTask]) -> list[ParseOutcome]:
        return [parse_task(t) for t in tasks]

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int]:
        if self.embedder is None:
            raise RuntimeError("this worker has no embedder")
        return embed_shard(self.embedder, texts)


class RayExecutor:
    """Ray actors, one embedder each (see the module docstring)."""

    name = "ray"

    def __init__(
        self,
        make_embedder: EmbedderFactory | None,
        workers: int | None = None,
        *,
        address: str | None = None,
    ) -> None:
        self.ray = _ray()
        self.make_embedder = make_embedder
        self.address = address
        self.workers = workers
        self._owns_ray = False
        self._pool: Any = None
        self._actors: list[Any] = []

    def _started(self) -> Any:
        if self._pool is not None:
            return self._pool
        ray = self.ray
        if not ray.is_initialized():
            try:
                if self.address:
                    ray.init(address=self.address, log_to_driver=False)
                else:
                    ray.init(include_dashboard=False, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local Ray"
                raise UpstreamError(f"cannot start or reach Ray at {where}: {exc}") from exc
            self._owns_ray = True
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, self.workers or cpus)
        threads = max(1, cpus // count)
        actor = ray.remote(num_cpus=1)(_Worker)
        self._actors = [actor.remote(self.make_embedder, threads) for _ in range(count)]
        self._pool = ray.util.ActorPool(self._actors)
        return self._pool

    def _run(self, method: str, values: list[Any], each: Any = None) -> list[Any]:
        pool = self._started()
        out: list[Any] = []
        try:
            results = pool.map(lambda a, v: getattr(a, method).remote(v), values)
            for i, result in enumerate(results):
                out.append(result)
                if each is not None:
                    each(i, result)
        except TetherError:
            raise
        except Exception as exc:
            self.close()
            raise failed_worker(getattr(exc, "cause", None) or exc) from exc
        return out

    def parse(self, tasks: list[ParseTask]) -> list[ParseOutcome]:
        groups = [tasks[i : i + 16] for i in range(0, len(tasks), 16)]
        return [o for group in self._run("parse", groups) for o in group]

    def embed(
        self, embedder: Embedder, texts: list[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        if self.make_embedder is None:
            return embed_shard(embedder, texts, progress)[0]
        self._started()
        cuts = shards(texts, SHARD_TEXTS, len(self._actors))
        place = Placer(texts, embedder.dim, cuts, progress)
        self._run("embed", [[texts[i] for i in idx] for idx in cuts], place)
        return place.out

    def close(self) -> None:
        for actor in self._actors:
            self.ray.kill(actor)
        self._actors = []
        self._pool = None
        if self._owns_ray:
            self.ray.shutdown()
            self._owns_ray = False
