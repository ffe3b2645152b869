"""The Workspace: one index and its caches (query vectors, filter masks, the verifier's
prepared passages), the provider, the judge, the token counter and the Profile of tuned
values for the index's embedder, each built on first use (listing documents never loads a
model). This module holds its lifecycle (`Workspace.open`, whose body is
`tether.app.opening`'s, the store, `close`, the context manager); its other methods are the
rooms' functions: `tether.app.public` (what the index holds), `.parts` (models, provider,
judges), `.asking` (search, ask, check), `.writing` (ingest, calibrations) and `.records`
(audit, feedback, health). A long docstring is written once, on the room's function, and
given to the method by `same_doc`.

What it cannot do: a Workspace is meant for one thread at a time (the store's connection,
the caches); a server holds one per worker thread over shared `Models`. It does not watch
the folder: `ingest()` syncs when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.app import asking, opening, parts, public, records, writing
from tether.app.asking import SearchOptions
from tether.app.locate import AsOf
from tether.app.opening import same_doc
from tether.app.parts import Models, index_profile, shared_models
from tether.app.records import AuditLogs
from tether.config import Profile, Settings, load_settings
from tether.places import DEFAULT_INDEX, DEMO_INDEX
from tether.stores import open_shared_state, open_store
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
    from tether.protocols import Embedder, Judge, Provider, SharedState, Store
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
        self._audits = AuditLogs(self.location)  # opened on first use; a reader never records
        self._answerability: tuple[Provider, AnswerabilityJudge] | None = None

    @classmethod
    @same_doc(opening.open_workspace)
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
        return opening.open_workspace(
            cls,
            index,
            store=store,
            demo=demo,
            create=create,
            settings=settings,
            models=models,
            provider=provider,
            model=model,
            embedder=embedder,
            refresh_demo=refresh_demo,
            progress=progress,
            on_demo=on_demo,
        )

    def _demo_ready(
        self,
        refresh: bool,
        progress: Progress | None,
        on_demo: Callable[[SyncReport, Path], None] | None,
    ) -> None:
        """Ingest the bundled demo into this index when needed (`tether.app.writing`)."""
        writing.demo_ready(self, refresh, progress, on_demo)

    @property
    def is_demo(self) -> bool:
        """Whether this Workspace reads the bundled demo's index (the bundled questions' IDs
        and dates apply to it)."""
        return isinstance(self.location, Path) and (self.location.resolve() == DEMO_INDEX.resolve())

    # ---- the index ------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The index, opened read-only on first use (a missing index is an error unless
        `create`, which builds an empty one); only `ingest` and `set_gate_floors` reopen it
        for writing."""
        if self._store is None:
            create = self.create and not self._exists()
            self._store = open_store(
                self.location, must_exist=not create, lock_timeout=self.settings.lock_timeout
            )
            self._writable = create
        return self._store

    def _store_for_writing(self, *, rebuild: bool = False) -> Store:
        """The index opened for writing (created when missing): a read-only store is closed
        and reopened; with `rebuild`, a damaged file is set aside for a new index."""
        if self._store is not None and (not self._writable or rebuild):
            self.close()
        if self._store is None:
            self._store = open_store(
                self.location,
                must_exist=False,
                lock_timeout=self.settings.lock_timeout,
                replace_damaged=rebuild,
            )
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
        self._audits.close()
        if self._store is not None:
            self._store.close()
            self._store = None
            self._retriever = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what the index holds, as an audience may see it (`tether.app.public`) -------------

    def documents(self, audience: Audience = "public") -> list[DocumentInfo]:
        """The documents `audience` may see (public by default: staff ones are not listed)."""
        return public.documents(self, audience)

    def chunks(
        self, doc_id: str, version: str | None = None, audience: Audience = "public"
    ) -> list[Chunk]:
        """The chunks of one document that `audience` may see; a TetherError when there are
        none, worded for a document the audience may not see exactly as for an unknown one."""
        return public.chunks(self, doc_id, version, audience)

    def read(self, chunk_id: str, audience: Audience = "public") -> Chunk | None:
        """The chunk with this ID when `audience` may see it (public by default); None for an
        unknown ID and, alike, for one the audience may not see."""
        return public.read(self, chunk_id, audience)

    @same_doc(public.info)
    def info(self, audience: Audience = "public") -> dict[str, Any]:
        return public.info(self, audience)

    # ---- models (`tether.app.parts`) ------------------------------------------------------

    def embedder(self) -> Embedder:
        """The embedder for ingest and queries (Settings' choice), loaded once."""
        return parts.embedder(self)

    def query_embedder(self) -> Embedder | None:
        """The embedder for queries when the index has vectors, else None (lexical search
        only): the one given to this Workspace as it is, else the Models' (Settings' choice)
        behind their query-vector cache and batcher (`Models.query_embedder`)."""
        return parts.query_embedder(self)

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
        return parts.make_provider(self, name, model)

    def use_provider(self, provider: Provider) -> None:
        """Answer with `provider` from now on (instead of the one from Settings)."""
        self._provider = provider

    def judge_named(self, name: str) -> Judge | None:
        """The judge called `name` (`tether.answering.judging.JUDGES`); the LLM judges use
        the local model."""
        return parts.judge_named(self, name)

    def judge(self) -> Judge | None:
        """The judge that suits the provider (see `choose_judge`)."""
        return parts.judge(self)

    def answerability_judge(self) -> AnswerabilityJudge:
        """The answerability judge (`tether.answering.answerable`), with the provider as its
        second opinion on uncertain questions when its capabilities say that costs no paid
        call (the local model, already loaded; any other provider would cost one a question)."""
        return parts.answerability_judge(self)

    def tokens(self) -> TokenCounter:
        """How the context budget is counted: the embedder's tokenizer, else an estimate."""
        return parts.tokens(self)

    def verifier(self) -> VerifierParts:
        """The checker's parts kept by this Workspace: its cache of prepared passages (valid
        while the index's generation stays) and the embedder it may need for cross-language
        claims on an index without vectors."""
        return parts.verifier(self)

    def _embedder_if_available(self) -> Embedder | None:
        return parts.embedder_if_available(self)

    @same_doc(asking.warm)
    def warm(self) -> None:
        asking.warm(self)

    # ---- retrieval (`tether.app.asking`) --------------------------------------------------

    @same_doc(asking.retriever)
    def retriever(
        self, *, rewrite: Callable[[str], str] | None = None, dense: bool = True
    ) -> Retriever:
        return asking.retriever(self, rewrite, dense)

    def search(self, query: str, options: SearchOptions | None = None) -> list[Hit]:
        """The top hits for `query` after the filters (public audience by default); BM25
        loads no embedder."""
        return asking.search(self, query, options)

    def filtered_out(self, query: str, filters: Filters) -> str:
        """Why the filters left nothing that matches `query` (passages the audience may see
        but none in force on the date; for a public asker a hint about unlabelled documents
        that tells nothing of staff content), or "" (`tether.answering.gate.filtered_out`)."""
        return asking.filtered_out(self, query, filters)

    # ---- writing (`tether.app.writing`) ---------------------------------------------------

    @same_doc(writing.ingest)
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
        return writing.ingest(
            self,
            folder,
            embed=embed,
            chunker=chunker,
            rebuild=rebuild,
            strict=strict,
            default_access=default_access,
            progress=progress,
            follow_links=follow_links,
            executor=executor,
        )

    def calibrate_fusion(self) -> dict[str, Any]:
        """Measure the collection's BM25 weight in the fusion on pseudo-questions made from
        its own public sentences (how far dense search keeps up with BM25 on them), and store
        it in the index (`tether.retrieval.calibrate`); the retriever uses it from then on."""
        return writing.calibrate_fusion(self)

    def ingest_executor(self, name: str | None, embedder: Embedder | None) -> Executor:
        """The executor of an ingest (`tether.ingest.executor`): `name` or the Settings'
        choice, with the Settings' workers and Ray address; its workers build their own
        embedder like `embedder` (an embedder not built from a choice stays in this process)."""
        return writing.ingest_executor(self, name, embedder)

    def calibrate_self(self) -> SelfCalibration:
        """Fit the support gate's floors on the index itself and store them in it (ingest does
        this after every change; `tether.evaluation.calibration.self_calibrate`)."""
        return writing.calibrate_self(self)

    def self_calibration(self) -> dict[str, Any] | None:
        """The gate's self-calibration recorded in the index (what was fitted on what), or
        None when ingest has not fitted one."""
        return writing.self_calibration(self)

    def set_gate_floors(self, floors: dict[str, float], record: dict | None = None) -> None:
        """Store calibrated gate floors in the index (reopening it for writing), with `record`
        (which question set, when, the trade-off chosen) for `tether info`."""
        writing.set_gate_floors(self, floors, record)

    def record_eval(self, summary: dict[str, Any]) -> str | None:
        """Keep an answer evaluation's summary with the index (`tether info` shows it);
        None when written, else why not (an index that cannot be written here)."""
        return writing.record_eval(self, summary)

    def handoff(self, audience: Audience = "public") -> dict[str, Any]:
        """What a person taking over the index needs (`tether.evaluation.handoff`), as
        `audience` may see it."""
        return writing.handoff(self, audience)

    # ---- the audit (`tether.app.records`) -------------------------------------------------

    @same_doc(records.record)
    def record(self, result: AskResult, who: str | None = None) -> int | None:
        return records.record(self, result, who)

    @same_doc(records.record_dropped)
    def record_dropped(self, count: int, who: str = "anonymous") -> int | None:
        return records.record_dropped(self, count, who)

    @cached_property
    def audit_writes(self) -> AuditWrites:
        """How this Workspace's audit writes are going (`tether.answering.audit.AuditWrites`:
        a failure said once an episode, on stderr); a server gives all its Workspaces one."""
        from tether.answering.audit import AuditWrites

        return AuditWrites()

    @same_doc(records.audit_entries)
    def audit_entries(self, query: AuditQuery) -> list[AuditEntry]:
        return records.audit_entries(self, query)

    def audit_entry(self, entry_id: int, reader: Audience = "public") -> AuditEntry:
        """One audit entry for a staff reader (a public one sees no ids); else a TetherError."""
        return records.audit_entry(self, entry_id, reader)

    @same_doc(records.feedback)
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
        return records.feedback(self, entry_id, verdict, note, chunk_id, who, audience)

    def feedback_entries(self, query: AuditQuery) -> list[Feedback]:
        """The feedback on the entries `query` selects (dated by the feedback, newest first),
        each with its entry, as the query's reader may see them: a public reader gets the
        feedback on public entries without ids or names, as for `audit_entries`."""
        return records.feedback_entries(self, query)

    @same_doc(records.feedback_questions)
    def feedback_questions(self, query: AuditQuery) -> tuple[list[Question], list[str]]:
        return records.feedback_questions(self, query)

    # ---- what the servers on this index share ----------------------------------------------

    def open_shared_state(self) -> SharedState | None:
        """What the `tether serve` processes on this index share (rate-limit buckets, metric
        totals, key revocations: `tether.protocols.SharedState`), opened anew on its own
        connection for the caller to close; None when the index keeps none (an index file:
        its servers keep them per process). A PostgreSQL collection must exist."""
        return open_shared_state(self.location)

    # ---- the health report (`tether.app.records`) ------------------------------------------

    @same_doc(records.health)
    def health(
        self,
        as_of: AsOf = "today",
        *,
        since: str | None = None,
        contradictions: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> HealthReport:
        return records.health(self, as_of, since, contradictions, progress)

    # ---- answering (`tether.app.asking`) -------------------------------------------------

    @same_doc(asking.ask)
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
        return asking.ask(self, question, options, events, who, audit, on_text)

    @same_doc(asking.ask_agent)
    def ask_agent(
        self,
        question: str,
        options: AskOptions | None = None,
        caps: AgentCaps | None = None,
        *,
        who: str | None = None,
        audit: bool = True,
    ) -> AskResult:
        return asking.ask_agent(self, question, options, caps, who, audit)

    @same_doc(asking.check)
    def check(
        self,
        claims: Sequence[Claim],
        passage_ids: Sequence[str],
        options: CheckOptions | None = None,
    ) -> list[ClaimCheck]:
        return asking.check(self, claims, passage_ids, options)


def shared_state_of(store: str | None) -> SharedState | None:
    """What the `tether serve` processes on the server store `store` share (None: the
    settings' TETHER_STORE), opened on its own connection for the caller to close; None when
    no server store is named (`Workspace.open_shared_state`). `tether keys revoke` asks it."""
    with Workspace(store=store) as ws:
        return ws.open_shared_state()
