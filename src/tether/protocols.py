"""Every swappable part on one screen: the protocols a backend, a model or a test implements.

`Store` is the whole list of what the engine asks of an index, made of three roles
(`StoreReader`, `SearchableStore`, `SyncTarget`); a collaborator takes the narrowest role it
uses. A second backend (PostgreSQL) implements the same members and passes the same contract
tests, one file per role (`tests/contract/`). Nothing outside `tether.stores` names a concrete
store class.

What it cannot do: a protocol states names and types, not behaviour; the contract tests state
the behaviour (filters before ranking, fail-closed audience, atomic apply, generations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tether.types import (
    Audience,
    AuditEntry,
    AuditQuery,
    Capabilities,
    ChangeSet,
    Chunk,
    Completion,
    DocMeta,
    DocumentInfo,
    Feedback,
    FileState,
    Filters,
    Hit,
    ModelRequest,
    Progress,
)

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; `name`/`version` are recorded in the index."""

    name: str
    version: str
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class SharedQueryCache(Protocol):
    """An `Embedder` whose `embed_queries` answers from a cache of query vectors shared with
    other callers (`tether.embeddings.cache.CachedQueryEmbedder`): a retriever over it keeps
    no cache of its own, so each search's lookup is seen (and counted) there."""

    def clear_query_cache(self) -> None:
        """Forget the cached query vectors (every caller's)."""
        ...


@runtime_checkable
class StoreReader(Protocol):
    """The index read by ID: chunks, documents and their versions, and what the index is.

    Reads see one committed generation: `generation()` changes after every committed write
    (also one made by another process), and caches keyed on it stay valid until it moves.
    No audience filter applies here: a caller that serves an audience filters what it gets
    (`Filters.allows`), or searches through `SearchableStore`.
    """

    location: str  # the file path or the database URL (without a password), for messages

    def get(self, chunk_id: str) -> Chunk | None: ...

    def get_many(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]: ...

    def chunks(self, doc_id: str | None = None, version: str | None = None) -> list[Chunk]: ...

    def documents(self) -> list[DocumentInfo]: ...

    def versions(self, doc_id: str) -> list[DocMeta]: ...

    def document_text(self, doc_id: str, version: str) -> str: ...

    def meta_value(self, key: str) -> str | None: ...

    def info(self) -> dict[str, object]: ...

    def generation(self) -> int: ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A scope whose reads (by this object, in this thread) all see one committed state
        of the index, read once: one read transaction, `generation()` asked of the index once
        (a search's several reads pay for one). Nested scopes share the outer one. Reads
        outside a scope each see the latest state."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class SearchableStore(StoreReader, Protocol):
    """The index searched: filters (as_of, audience) are applied before ranking in every
    search, and a public caller's lexical scores use statistics of public passages only (no
    staff passage moves them); the stored vectors, by chunk and by sentence."""

    def allowed_ids(self, filters: Filters) -> set[str]: ...

    def search_lexical(self, query: str, k: int, filters: Filters) -> list[Hit]: ...

    def lexical_ranking(
        self, query: str, k: int, filters: Filters
    ) -> list[tuple[str, float]]: ...

    def count_lexical(self, query: str, filters: Filters) -> int:
        """How many chunks the filters allow match `query` lexically (a count, no content)."""
        ...

    def search_dense(
        self, vector: np.ndarray, k: int, filters: Filters
    ) -> list[tuple[str, float]]: ...

    def has_vectors(self) -> bool: ...

    def vectors(self) -> tuple[list[str], np.ndarray]: ...

    def vector(self, chunk_id: str) -> np.ndarray | None: ...

    def vectors_of(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]: ...

    def sentence_vectors(
        self, chunk_ids: Iterable[str]
    ) -> dict[str, tuple[list[tuple[int, int]], np.ndarray]]: ...


@runtime_checkable
class SyncTarget(Protocol):
    """What a sync (`tether.ingest.sync`) reads before planning and how it writes: `apply`
    writes a whole `ChangeSet` or nothing; `vector_hashes` is {chunk_id: text hash} of the
    stored chunk vectors, `sentence_vector_hashes` {chunk_id: text hash or None} for every
    chunk; `set_meta` writes index-level values (calibrations) in one transaction."""

    def file_states(self) -> dict[str, FileState]: ...

    def vector_hashes(self) -> dict[str, str]: ...

    def sentence_vector_hashes(self) -> dict[str, str | None]: ...

    def apply(self, changes: ChangeSet, progress: Progress | None = None) -> None: ...

    def set_meta(self, values: Mapping[str, str]) -> None: ...


@runtime_checkable
class Store(SearchableStore, SyncTarget, Protocol):
    """The whole index, as a backend implements it: read (`StoreReader`), searched
    (`SearchableStore`) and written (`SyncTarget`). A collaborator asks for the narrowest
    role it uses, so a test's fake implements only that role; the contract tests
    (`tests/contract/`) check each role on every backend."""


@runtime_checkable
class AuditLog(Protocol):
    """Where answered questions are recorded (`tether audit`), apart from `Store` so a
    backend can offer one or not. `record` writes one entry and, with `retention_days`,
    deletes the entries older than that many days, and returns the new entry's id; it must
    not hold the index's write lock for long (it runs beside an answer). `entries` and `entry`
    read for a reader: a public reader never gets an entry asked for staff (as if absent).
    `add_feedback` stores a verdict on an existing entry (one per entry and asker: a second
    replaces the first; an unknown entry is a TetherError) and returns it as stored;
    `feedback` lists the feedback on the entries a query selects (dated by the feedback),
    newest first, each with its entry; retention deletes an entry's feedback with it. The
    log checks no permission: `Workspace.feedback` decides who may give feedback on what."""

    def record(self, entry: AuditEntry, retention_days: int | None = None) -> int: ...

    def entries(self, query: AuditQuery) -> list[AuditEntry]: ...

    def entry(self, entry_id: int, reader: str = "public") -> AuditEntry | None: ...

    def add_feedback(self, feedback: Feedback) -> Feedback: ...

    def feedback(self, query: AuditQuery) -> list[Feedback]: ...

    def close(self) -> None: ...


@runtime_checkable
class Limiter(Protocol):
    """A token bucket per name (a key's name, a client address): `rate` tokens a second up to
    `burst`; a name never seen has a full bucket. `take` answers 0 and takes a token when
    there is one, else the seconds until there will be one (taking nothing); `peek` answers
    as `take` would, taking nothing. `rate` 0: no limit (both answer 0). `remote`: whether
    an answer waits for another machine (a server calls it off its event loop then).
    In process: `tether.server.keys.RateLimiter`; shared by every server on a store:
    `SharedState.limiter`."""

    rate: float
    burst: int
    remote: bool

    def take(self, name: str) -> float: ...

    def peek(self, name: str) -> float: ...


# A metric's sample as `SharedState` keeps it: (sample name, its labels as sorted JSON)
SampleKey = tuple[str, str]


@runtime_checkable
class SharedState(Protocol):
    """What the `tether serve` processes on one store share, kept in the store (a backend
    offers it or not: `tether.stores.open_shared_state` answers None for the SQLite file,
    whose servers keep all of this per process).

    - `limiter(space, rate, burst)`: a `Limiter` whose buckets are the store's, one set per
      `space` ("rate", "auth") and collection; every process taking from it takes from the
      same bucket.
    - `revoke(name, sha256)` records a key's digest as revoked (True; False when it already
      was); `revoked()` is every revoked digest.
    - `add_counts(worker, deltas)` adds counter increments (by sample) to the collection's
      totals and notes `worker` alive; `counts()` the totals; `live_workers(within_s)` the
      workers noted in the last `within_s` seconds; `leave(worker)` forgets a worker that stops.

    Every member may raise a TetherError (an UpstreamError when the store cannot be reached);
    it must be usable from several threads."""

    location: str

    def limiter(self, space: str, rate: float, burst: int) -> Limiter: ...

    def revoke(self, name: str, sha256: str) -> bool: ...

    def revoked(self) -> frozenset[str]: ...

    def add_counts(self, worker: str, deltas: Mapping[SampleKey, float]) -> None: ...

    def counts(self) -> dict[SampleKey, float]: ...

    def live_workers(self, within_s: float) -> int: ...

    def leave(self, worker: str) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Searcher(Protocol):
    """What answering and evaluation ask of a retriever (`tether.retrieval.Retriever`):
    ranked passages for a query by method, after the filters, and the query's vector.
    `embedder` is None when the index has no vectors (BM25 only)."""

    embedder: Embedder | None

    def resolve_method(self, method: str) -> str: ...

    @property
    def answer_method(self) -> str:
        """What "auto" means when answering (the default method, or one that reads more)."""
        ...

    def search(self, query: str, k: int, filters: Filters, method: str = "auto") -> list[Hit]: ...

    def query_vector(self, query: str) -> np.ndarray: ...

    def warm_queries(self, queries: Sequence[str], batch: int = 32) -> None: ...

    def clear_query_cache(self) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders a short candidate list for one query."""

    name: str

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: Audience = "public"
    ) -> list[Hit]:
        """The top k of `hits` reordered; `audience` is the caller's, for a reranker whose
        scores use statistics over the collection (only what that audience may see)."""
        ...


@runtime_checkable
class Judge(Protocol):
    """Scores how well passages entail a claim, 0 (not at all) to 1 (fully)."""

    name: str

    def score(self, claim: str, passages: Sequence[str]) -> float: ...


@runtime_checkable
class AlignedJudge(Judge, Protocol):
    """A judge that reads a claim's alignment (`tether.verify.align`) instead of passage
    texts; it declares so with `aligned = True`, and the checker then calls `judge`."""

    aligned: bool
    threshold: float

    def judge(
        self,
        features: Mapping[str, float],
        claim: str,
        passages: Sequence[str],
        evidence: str = "",
        flagged: bool = False,
    ) -> float: ...


@runtime_checkable
class PairReader(Protocol):
    """A model that reads two texts together (`tether.embeddings.reader.Reader`): for a
    task's (A, B) pairs it returns the task head's probabilities, (n, 3); `support` reads a
    claim against evidence sentences, all of them when they fit, else packed best first by
    the order `rank()` gives (asked only then); `threshold` holds the calibrated threshold
    per task."""

    @property
    def threshold(self) -> Mapping[str, float]: ...

    def probabilities(self, task: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray: ...

    def support(
        self,
        claim: str,
        sentences: Sequence[str],
        rank: Callable[[], Sequence[int]] | None = None,
    ) -> np.ndarray: ...


class QuestionReader(Protocol):
    """A model that reads a question and passages together (`tether.embeddings.reader.
    Reader`): for each passage, given as (its sentences, their order best first), the
    probabilities (n, 3) that it answers the question, is on its topic without answering,
    is unrelated."""

    def relevance(
        self, question: str, passages: Sequence[tuple[Sequence[str], Sequence[int]]]
    ) -> np.ndarray: ...


@runtime_checkable
class Provider(Protocol):
    """Sends one request to a language model (or a non-model answerer) and returns what came
    back. `capabilities` (a class attribute) says what it is and what "auto" chooses with it
    (answer mode, judge, agent, rewrite); code reads them through `capabilities_of`, never
    from `name`, so a wrapper that forwards them behaves like what it wraps."""

    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def complete(self, request: ModelRequest) -> Completion: ...


def capabilities_of(provider: object) -> Capabilities:
    """The provider's declared capabilities; a provider that declares none (a test double, a
    plugin written before they existed) reads as a remote language model's (`Capabilities()`)."""
    declared = getattr(provider, "capabilities", None)
    return declared if isinstance(declared, Capabilities) else Capabilities()


@runtime_checkable
class StreamingProvider(Protocol):
    """A provider that can hand over its reply's text as it is written (the capability is
    the method: a provider without `stream` answers whole). It repeats `Provider`'s members
    but `capabilities`, so a provider that declares none still streams (an isinstance check
    looks for every member)."""

    name: str

    def complete(self, request: ModelRequest) -> Completion: ...

    def stream(self, request: ModelRequest, on_text: Callable[[str], None]) -> Completion: ...
