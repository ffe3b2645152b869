"""The Workspace: one index and its caches (query vectors, filter masks, the verifier's
prepared passages), the provider, the judge, the token counter and the Profile of tuned
values for the index's embedder, each built on first use (listing documents never loads a
model). This module holds its lifecycle (`Workspace.open`, the store, `close`, the context
manager); its other methods are the rooms' functions: `tether.app.public` (what the index
holds), `.parts` (models, provider, judges), `.asking` (search, ask, check), `.writing`
(ingest, calibrations) and `.records` (audit, feedback, health).

What it cannot do: a Workspace is meant for one thread at a time (the store's connection,
the caches); a server holds one per worker thread over shared `Models`. It does not watch
the folder: `ingest()` syncs when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.app import asking, parts, public, records, writing
from tether.app.asking import SearchOptions
from tether.app.locate import AsOf, locate_index
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
        given: dict[str, Any] = {"models": models, "embedder": embedder}
        if isinstance(provider, str) or model is not None:
            given["choice"] = (provider, model)
        else:
            given["provider"] = provider
        if create:
            return cls(chosen, index=index, store=store, create=True, **given)
        server = None if demo else (store if store is not None else chosen.store)
        if server:
            return cls(chosen, store=server, **given)
        path = locate_index(index, demo=demo, settings=chosen)
        ws = cls(chosen, index=path, store="", **given)
        if demo:
            ws._demo_ready(refresh_demo, progress, on_demo)
        return ws

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

    def info(self, audience: Audience = "public") -> dict[str, Any]:
        """What the index holds and how it was built; the counts are those of what `audience`
        may see (public by default), with the Profile's note when it is not calibrated and,
        on an index with vectors, the embedder in use and its window report. A public reader
        sees nothing that moves with staff documents: counts of public documents only, and of
        the index's records those computed from public passages (not the file's size, its
        write counter or time, the staff floor, or when a calibration ran)."""
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

    def warm(self) -> None:
        """Load what answering a question loads on first use, now: the embedder and the
        reranker (one search), the judges, the token counter and the provider's model (when
        it has one to load, such as the local model), so the first question does not wait
        for them. Nothing is recorded in the audit."""
        asking.warm(self)

    # ---- retrieval (`tether.app.asking`) --------------------------------------------------

    def retriever(
        self, *, rewrite: Callable[[str], str] | None = None, dense: bool = True
    ) -> Retriever:
        """The retriever over the index, with the Profile's fusion weights; one is kept (and
        its caches with it) while the index's generation stays, unless a query rewriter or
        `dense=False` (BM25 only, no embedder loaded) is asked for. Its query vectors are
        the Models' query cache's (`Models.query_embedder`), or, with an embedder given to
        this Workspace, a cache of the retriever's own."""
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

    def record(self, result: AskResult, who: str | None = None) -> int | None:
        """Write `result` to the index's audit (`tether.answering.audit`), applying the
        retention setting; a failure (an ingest holding the lock, a read-only file) is
        reported (`audit_writes`: once an episode) and never raised: the answer stands. The
        entry's id, or None."""
        return records.record(self, result, who)

    def record_dropped(self, count: int, who: str = "anonymous") -> int | None:
        """Record that `count` public answers asked by `who` were not recorded (a server's daily
        cap on anonymous answers, `tether.server.limits.AuditQuota`): one small entry of status
        "dropped", so the audit says how many are missing. Like `record`: nothing when the
        setting TETHER_AUDIT is off, a failure reported as `record` reports it, never raised."""
        return records.record_dropped(self, count, who)

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
        return records.audit_entries(self, query)

    def audit_entry(self, entry_id: int, reader: Audience = "public") -> AuditEntry:
        """One audit entry for a staff reader (a public one sees no ids); else a TetherError."""
        return records.audit_entry(self, entry_id, reader)

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
        return records.feedback(self, entry_id, verdict, note, chunk_id, who, audience)

    def feedback_entries(self, query: AuditQuery) -> list[Feedback]:
        """The feedback on the entries `query` selects (dated by the feedback, newest first),
        each with its entry, as the query's reader may see them: a public reader gets the
        feedback on public entries without ids or names, as for `audit_entries`."""
        return records.feedback_entries(self, query)

    def feedback_questions(self, query: AuditQuery) -> tuple[list[Question], list[str]]:
        """A question set made from the feedback `query` selects
        (`tether.evaluation.feedback.feedback_questions`): one question per entry, and notes
        on what could not be used as given (a right passage no longer in the index). A public
        reader sees no entry ids: its questions are numbered FBP1, FBP2, ... instead of
        FB<entry id>."""
        return records.feedback_questions(self, query)

    # ---- what the servers on this index share ----------------------------------------------

    def open_shared_state(self) -> SharedState | None:
        """What the `tether serve` processes on this index share (rate-limit buckets, metric
        totals, key revocations: `tether.protocols.SharedState`), opened anew on its own
        connection for the caller to close; None when the index keeps none (an index file:
        its servers keep them per process). A PostgreSQL collection must exist."""
        return open_shared_state(self.location)

    # ---- the health report (`tether.app.records`) ------------------------------------------

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
        return records.health(self, as_of, since, contradictions, progress)

    # ---- answering (`tether.app.asking`) -------------------------------------------------

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
        return asking.ask(self, question, options, events, who, audit, on_text)

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
        return asking.ask_agent(self, question, options, caps, who, audit)

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
        return asking.check(self, claims, passage_ids, options)


def shared_state_of(store: str | None) -> SharedState | None:
    """What the `tether serve` processes on the server store `store` share (None: the
    settings' TETHER_STORE), opened on its own connection for the caller to close; None when
    no server store is named (`Workspace.open_shared_state`). `tether keys revoke` asks it."""
    with Workspace(store=store) as ws:
        return ws.open_shared_state()
