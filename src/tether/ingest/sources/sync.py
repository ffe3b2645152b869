"""One sync of a `Source` (a website): its documents into an index, the way a folder's are.

`sync_source(store, source, ...)` asks the source for its documents (`Source.collect`), then
plans, parses, chunks, embeds and writes them with the folder sync's own parts
(`tether.ingest.sync`), so both behave alike:
- incremental: what the source confirms unchanged (a 304) is neither read, parsed nor
  embedded; an item whose bytes hash as before is not parsed again (its size and date are
  refreshed); only new or changed chunks are embedded;
- atomic: one `ChangeSet`, written in one transaction with the source's new state and its
  entry among the remembered sources (`SOURCES_META`); a sync that fails or is killed writes
  nothing, and the next one starts from the last committed state;
- forgiving: a document with a problem is reported and its previous version stays; `strict`
  writes nothing when there is any problem;
- fenced: it removes only what the source says is gone among the sources it holds, and
  leaves every other document of the index (a folder's files, another site's pages) as it
  is; they keep their doc_ids (a newcomer that claims one is refused, as between files).

What it cannot do: `rebuild` empties the whole index (other sources' documents too) before
writing this source's; a source's documents are parsed as they arrive, in windows of
`tether.ingest.sync.PARSE_WINDOW_BYTES`, by this process when chunks are sized to an
embedder's window (as for folders), else by the executor.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.ingest.executor import Executor, SerialExecutor
from tether.ingest.metadata import META_FIELDS
from tether.ingest.sources.base import (
    SOURCES_META,
    STATE_META_PREFIX,
    Collected,
    Item,
    Sink,
    Source,
    source_key,
)
from tether.ingest.sync import (
    DEFAULT_ACCESS_META,
    PARSE_WINDOW_BYTES,
    _blank,
    _keep_previous,
    _lookalikes,
    _parse_window,
    _Plan,
    _refuse_duplicates,
    access_default,
    check_build,
    embedder_label,
    plan_changes,
)
from tether.ingest.tasks import ParseTask
from tether.ingest.vector_cache import VectorCache
from tether.protocols import Embedder, Store, StoreReader
from tether.types import ChunkerConfig, FileState, Progress, SyncReport, TokenWindow

DOC_ID_SCHEME = "url path nfkc"  # `tether.ingest.metadata.path_doc_id` on a URL


def sync_source(
    store: Store,
    source: Source,
    *,
    chunker: ChunkerConfig | None = None,
    embedder: Embedder | None = None,
    rebuild: bool = False,
    strict: bool = False,
    default_access: str | None = None,
    progress: Progress | None = None,
    sentences: bool | None = None,
    executor: Executor | None = None,
    window: TokenWindow | None = None,
    vector_cache: Path | str | None = None,
) -> SyncReport:
    """Bring the index of `store` in line with `source` (see the module docstring); the
    options mean what they mean for `tether.ingest.sync.sync`."""
    began = time.perf_counter()
    chunker = chunker or ChunkerConfig()
    default_access = access_default(store, default_access)
    check_build(store, chunker, embedder, rebuild)
    step = progress or _quiet
    key = source_key(source)
    states = store.file_states()
    previous = {} if rebuild else load_state(store, key)
    plan = _Plan(known={} if rebuild else dict(states), indexed=states)
    run = SerialExecutor() if window is not None else executor or SerialExecutor()
    taker = _Taker(plan, chunker, window, default_access, run)
    mine = {s for s in source.holds(previous) if s in plan.known}
    collected = source.collect(previous, {s: plan.known[s] for s in mine}, taker.sink(), step)
    taker.flush()
    _settle(plan, taker, collected, mine)
    plan.files = _refuse_duplicates(plan)
    plan.warnings += _lookalikes(plan)
    plan.unsupported = tuple(sorted(collected.unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
    ours = mine | taker.seen
    unchanged = tuple(sorted({s for s in plan.unchanged if s in ours}))
    if strict and plan.problems:
        return SyncReport(
            problems=tuple(plan.problems),
            unchanged=unchanged,
            seconds=time.perf_counter() - began,
            committed=False,
            warnings=tuple(plan.warnings),
            default_access=default_access,
            unsupported=plan.unsupported,
        )
    if sentences is None:
        sentences = bool(getattr(embedder, "sentence_vectors", False))
    cache = (
        VectorCache(vector_cache, f"{embedder_label(embedder)} {embedder.dim}", embedder.dim)
        if vector_cache is not None and embedder is not None
        else None
    )
    try:
        changes = plan_changes(store, plan, chunker, embedder, rebuild, sentences, step, run, cache)
    finally:
        if cache is not None:
            cache.close()
    failed = {p.source for p in plan.problems}
    meta = dict(changes.meta)
    if rebuild or store.meta_value(DEFAULT_ACCESS_META) != default_access:
        meta[DEFAULT_ACCESS_META] = default_access
    meta[STATE_META_PREFIX + key] = json.dumps(source.state(failed), separators=(",", ":"))
    report = SyncReport(
        added=changes.added,
        updated=changes.updated,
        removed=changes.removed,
        unchanged=unchanged,
        problems=tuple(plan.problems),
        chunks_written=sum(len(f.chunks) for f in changes.files),
        instructions=tuple(f.file.source for f in changes.files if f.instructions),
        warnings=tuple(plan.warnings),
        unlabelled=tuple(f.file.source for f in changes.files if not f.document.access_labelled),
        default_access=default_access,
        unsupported=plan.unsupported,
    )
    meta[SOURCES_META] = _remembered(store, source, key, report, rebuild)
    changes = replace(changes, meta=tuple(meta.items()))
    store.apply(changes, progress=step)
    return replace(report, seconds=time.perf_counter() - began)


class _Taker:
    """The `Sink` of one sync: items become parse tasks (or unchanged files), in windows."""

    def __init__(
        self,
        plan: _Plan,
        chunker: ChunkerConfig,
        window: TokenWindow | None,
        default_access: str,
        run: Executor,
    ) -> None:
        self.plan, self.chunker, self.window = plan, chunker, window
        self.default_access, self.run = default_access, run
        self.seen: set[str] = set()
        self.batch: list[ParseTask] = []

    def sink(self) -> Sink:
        return Sink(self.item, self.unchanged, self.problem, self.plan.warnings.append)

    def item(self, item: Item) -> None:
        plan, source = self.plan, item.source
        if source in self.seen:
            plan.warnings.append(f"{source} was handed over twice; read once")
            return
        self.seen.add(source)
        old = plan.known.get(source)
        if old is not None and (blank := _blank(item.data)):
            _keep_previous(plan, source, f"empty ({blank}); its previous version is still served")
            return
        fingerprint = (
            hashlib.sha256(item.data).hexdigest()
            + ":"
            + row_hash(item.row, self.default_access, item.trail)
        )
        size, mtime = len(item.data), item.modified_ns
        if old is not None and old.fingerprint == fingerprint:
            plan.unchanged.append(source)
            if (old.size, old.mtime_ns) != (size, mtime):
                plan.touched.append(replace(old, size=size, mtime_ns=mtime))
            return
        state = FileState(source, fingerprint, size, mtime, "", "")
        self.batch.append(
            ParseTask(
                state,
                item.data,
                item.fmt,
                dict(item.row) if item.row else None,
                self.default_access,
                self.chunker,
                old is None,
                self.window,
                item.trail,
            )
        )
        if sum(len(t.data) for t in self.batch) >= PARSE_WINDOW_BYTES:
            self.flush()

    def unchanged(self, source: str) -> None:
        if source not in self.seen and source in self.plan.known:
            self.seen.add(source)
            self.plan.unchanged.append(source)

    def problem(self, source: str, reason: str) -> None:
        if source in self.seen:
            return
        self.seen.add(source)
        _keep_previous(self.plan, source, reason)

    def flush(self) -> None:
        if self.batch:
            _parse_window(self.plan, self.batch, self.run)


def _settle(plan: _Plan, taker: _Taker, collected: Collected, mine: set[str]) -> None:
    """What the source did not hand over: its gone sources leave, the rest of its sources
    stay unchanged (a crawl stopped by a cap), and every other document of the index holds
    its place (unchanged, not reported)."""
    gone = {s for s in collected.gone if s in plan.known and s not in taker.seen}
    plan.removed = sorted(gone)
    for source in plan.known:
        if source not in taker.seen and source not in gone:
            plan.unchanged.append(source)


def row_hash(
    row: Mapping[str, str] | None, default_access: str, trail: tuple[str, ...] = ()
) -> str:
    """What besides an item's bytes decides its document (the folder sync's rule, with the
    URL's doc_id scheme, and its place in an export's tree when it has one)."""
    fields: list[Any] = [sorted((row or {}).items()), default_access, DOC_ID_SCHEME]
    fields += [list(META_FIELDS), *([list(trail)] if trail else [])]
    payload = json.dumps(fields, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def load_state(store: StoreReader, key: str) -> dict[str, Any]:
    """The state a source left at its last committed sync ({} when none, or damaged)."""
    try:
        value = json.loads(store.meta_value(STATE_META_PREFIX + key) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def remembered_sources(store: StoreReader) -> dict[str, dict[str, Any]]:
    """The sources the index remembers: key -> {kind, location, settings, synced_at, last}."""
    try:
        value = json.loads(store.meta_value(SOURCES_META) or "{}")
    except ValueError:
        return {}
    return (
        {k: v for k, v in value.items() if isinstance(v, dict)} if isinstance(value, dict) else {}
    )


def _remembered(
    store: StoreReader, source: Source, key: str, report: SyncReport, rebuild: bool
) -> str:
    entries = {} if rebuild else remembered_sources(store)
    entries[key] = {
        "kind": source.kind,
        "location": source.location,
        "settings": source.settings(),
        "synced_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "last": {
            "added": len(report.added),
            "updated": len(report.updated),
            "removed": len(report.removed),
            "unchanged": len(report.unchanged),
            "problems": len(report.problems),
        },
    }
    return json.dumps(entries, ensure_ascii=False)


def _quiet(phase: str, done: int, total: int) -> None:
    """The progress callback when none is given."""
