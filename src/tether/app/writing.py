"""Writing to a Workspace's index: the bodies of `Workspace.ingest` (a sync, then the
calibrations it calls for), `.calibrate_fusion`, `.ingest_executor`, `.calibrate_self`,
`.self_calibration`, `.set_gate_floors`, `.record_eval` and `.handoff`.

What it cannot do: it writes only through the Workspace's store opened for writing (one
writer at a time: the store's lock decides), and it does not watch a folder: an ingest syncs
when asked. The parsing, embedding and fitting modules load when first used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.answering.gate import SELF_CALIBRATION_KEY
from tether.app.locate import check_audience
from tether.app.parts import retriever_for
from tether.errors import OlderIndexError, TetherError
from tether.evaluation.handoff import handoff as handoff_of
from tether.evaluation.questions import demo_collection
from tether.ingest.sources.base import Source
from tether.retrieval.calibrate import calibrate_fusion as fit_fusion
from tether.retrieval.calibrate import load_calibration
from tether.types import Audience, ChunkerConfig, Progress, SyncReport

if TYPE_CHECKING:
    from tether.app.workspace import Workspace
    from tether.evaluation.calibration import SelfCalibration
    from tether.ingest.executor import Executor
    from tether.protocols import Embedder


def ingest(
    ws: Workspace,
    folder: Path | str | Source,
    *,
    embed: bool,
    chunker: ChunkerConfig | None,
    rebuild: bool,
    strict: bool,
    default_access: str | None,
    progress: Progress | None,
    follow_links: bool,
    executor: str | None,
) -> SyncReport:
    """Sync the index with `folder` (creating the index), embedding when `embed`;
    `follow_links` follows links that lead out of the folder; `default_access` (public or
    staff) is what a file without an access label is indexed as, stored with the index
    (None: the stored one, else staff); `executor` (serial, process or ray; None: the
    Settings' choice) runs the parsing and embedding (`ingest_executor`).; when embedding, chunks are sized to
    the embedder's token window. `folder` may be a `Source` instead (a website,
    `tether.ingest.sources`), synced by `sync_source` with the same options."""
    from tether.embeddings.embedders import token_window_of
    from tether.ingest.sources.sync import sync_source
    from tether.ingest.sync import sync

    store = ws._store_for_writing(rebuild=rebuild)
    embedder = ws.embedder() if embed else None
    run = ws.ingest_executor(executor, embedder)
    window = token_window_of(embedder) if embedder is not None else None
    try:
        if isinstance(folder, Source):
            report = sync_source(
                store,
                folder,
                chunker=chunker,
                embedder=embedder,
                rebuild=rebuild,
                strict=strict,
                default_access=default_access,
                progress=progress,
                executor=run,
                window=window,
                vector_cache=ws.settings.vector_cache,
            )
        else:
            report = sync(
                store,
                Path(folder),
                chunker=chunker,
                embedder=embedder,
                rebuild=rebuild,
                strict=strict,
                default_access=default_access,
                progress=progress,
                follow_links=follow_links,
                executor=run,
                window=window,
                vector_cache=ws.settings.vector_cache,
            )
    finally:
        run.close()
    began = time.perf_counter()
    vectors = store.has_vectors()
    changed = bool(report.added or report.updated or report.removed)
    fusion = (embed and vectors) and bool(
        report.chunks_written or report.removed or load_calibration(store) is None
    )
    gate = (report.committed and vectors) and (changed or not ws.self_calibration())
    steps = int(fusion) + int(gate)
    step = progress or (lambda phase, done, total: None)
    if steps:  # a phase of its own: seconds with nothing shown otherwise
        step("calibrate", 0, steps)
    if fusion:
        ws.calibrate_fusion()
        step("calibrate", 1, steps)
    if gate:
        ws.calibrate_self()
        step("calibrate", steps, steps)
    return replace(report, calibration_seconds=round(time.perf_counter() - began, 3))


def calibrate_fusion(ws: Workspace) -> dict[str, Any]:
    """Measure the collection's BM25 weight in the fusion and store it in the index
    (`Workspace.calibrate_fusion`, whose docstring says the rest)."""
    prior = retriever_for(ws.store, dense=False, adaptive_fusion=False).lexical_prior
    found = fit_fusion(ws.store, ws.retriever(), prior)
    ws._retriever = None  # built with the old prior
    return found


def ingest_executor(ws: Workspace, name: str | None, embedder: Embedder | None) -> Executor:
    """The executor of an ingest (`tether.ingest.executor`): `name` or the Settings' choice
    (`Workspace.ingest_executor`, whose docstring says the rest)."""
    from tether.embeddings.embedders import build_embedder, choice_of
    from tether.ingest.executor import build_executor

    choice = choice_of(embedder) if embedder is not None else None
    factory = partial(build_embedder, choice) if choice is not None else None
    return build_executor(
        name or ws.settings.executor,
        factory,
        workers=ws.settings.workers,
        ray_address=ws.settings.ray_address,
    )


def calibrate_self(ws: Workspace) -> SelfCalibration:
    """`Workspace.calibrate_self` (`tether.evaluation.calibration.self_calibrate`), stored
    in the index."""
    from tether.evaluation.calibration import self_calibrate

    store = ws._store_for_writing()
    found = self_calibrate(store, ws.retriever(), ws.profile)
    store.set_meta(found.meta())
    return found


def self_calibration(ws: Workspace) -> dict[str, Any] | None:
    """`Workspace.self_calibration`: the stored record, parsed, or None."""
    raw = ws.store.meta_value(SELF_CALIBRATION_KEY)
    return json.loads(raw) if raw else None


def set_gate_floors(ws: Workspace, floors: dict[str, float], record: dict | None) -> None:
    """`Workspace.set_gate_floors`: `gate_floor:METHOD` rows and the `calibration` record."""
    values = {f"gate_floor:{m}": repr(float(v)) for m, v in floors.items()}
    if record is not None:
        values["calibration"] = json.dumps(record, ensure_ascii=False)
    ws._store_for_writing().set_meta(values)


def record_eval(ws: Workspace, summary: dict[str, Any]) -> str | None:
    """`Workspace.record_eval`: None when written, else why not (the index closed again)."""
    try:
        ws._store_for_writing().set_meta({"last_eval:answers": json.dumps(summary)})
    except (TetherError, OSError) as exc:
        ws.close()
        return str(exc)
    return None


def handoff(ws: Workspace, audience: Audience) -> dict[str, Any]:
    """`Workspace.handoff` (`tether.evaluation.handoff.handoff`)."""
    return handoff_of(ws.store, ws.documents(check_audience(audience)), audience, ws.profile)


def demo_ready(
    ws: Workspace,
    refresh: bool,
    progress: Progress | None,
    on_demo: Callable[[SyncReport, Path], None] | None,
) -> None:
    """Ingest the bundled demo collection into the Workspace's index when it is missing,
    built by an older tether, or `refresh`; then read it (`Workspace.open(demo=True)`)."""
    path = ws.index
    build = refresh or not path.exists()
    if not build:
        try:
            ws.store  # noqa: B018 (opens it: a demo index of an older tether is rebuilt)
        except OlderIndexError:
            build = True  # ingest upgrades it in place
    if not build:
        return
    ws.close()
    try:  # `ingest` opens the index for writing (creating it) and calibrates it
        report = ws.ingest(demo_collection(), chunker=ChunkerConfig(), progress=progress)
    finally:
        ws.close()  # read from now on, like any index
    if on_demo is not None:
        on_demo(report, path)
