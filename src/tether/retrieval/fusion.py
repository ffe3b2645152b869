"""The first stage of the retriever (`tether.retrieval.retriever.Retriever` builds on `Fusion`):
the query vectors (asked once a search, kept per query text or in a shared cache), the BM25 and
dense lists after the filters, and their fusion: reciprocal rank fusion (`rrf_scores`), fixed
(`rrf_weights` and the cosine gate `lexical_gate`) or adaptive (the collection's BM25 weight
times the query's shape factor, `tether.retrieval.query`, with `protect_each` lists' heads led
first in a collection written in one language). What the fusion reads from the collection as a
whole (its languages) is counted over the chunks the caller's audience may see.

What it cannot do: it searches nothing itself (the store ranks; see `tether.stores.dense` and
the store's lexical search); a dense list needs an index built with an embedder and the same
embedder for queries (checked when built); it does no reranking (`Retriever` does).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tether.config import DEFAULT_PROFILE, Profile
from tether.errors import ConflictError, TetherError
from tether.linear import LinearModel
from tether.lru import LRU
from tether.protocols import (
    Embedder,
    QuestionReader,
    Reranker,
    SearchableStore,
    SharedQueryCache,
    Store,
)
from tether.retrieval.deep import DeepReranker
from tether.retrieval.query import QueryShape, query_shape
from tether.retrieval.rerank import SentenceReranker
from tether.types import Audience, Chunk, Filters, Hit

RRF_K = 60
SECOND_LANGUAGE = 0.1  # share of chunks that makes a collection multilingual (adaptive)
QUERY_VECTORS = 512  # a retriever's own query vectors (none over a shared cache)
MASKS = 32  # filter masks kept (per generation, date and audience)


def rrf_scores(
    rankings: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Reciprocal rank fusion: each list adds weight / (k + rank) (rank 1-based) to its
    items; weights default to 1."""
    fused: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + w / (k + rank)
    return fused


class Fusion:
    """Query vectors, the BM25 and dense lists after the filters, and their fusion (see the
    module docstring); the base of `Retriever`."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        *,
        profile: Profile = DEFAULT_PROFILE,
        rewrite: Callable[[str], str] | None = None,
        lexical_prior: float | None = None,
        rerank_order: LinearModel | None = None,
        reader: Callable[[], QuestionReader | None] | None = None,
    ) -> None:
        """Over `store`, with the tuned values of `profile` (the index's, `tether.app.
        retriever_for`); `lexical_prior` is the collection's calibrated BM25 weight (None:
        the fixed weights' share), `rerank_order` the learned order (None: the weighted
        mean), `rewrite` a query rewriter, `reader` what loads the reader the `deep` method
        rereads with (asked at the first deep search; None or a None reader: no `deep`)."""
        self.store = store
        self.embedder = embedder
        self.profile = profile
        self.rewrite = rewrite
        self.candidates = profile.fusion_candidates
        self.rerank_depth = profile.rerank_depth
        self.rrf_weights = profile.rrf_weights  # (bm25, dense)
        self.lexical_gate = profile.lexical_gate
        self.per_document = profile.per_document
        self.rule_types = tuple(t.lower() for t in profile.rule_types)
        self.same_point_cosine = profile.same_point_cosine
        self.adaptive = adaptive = profile.adaptive_fusion
        w_bm25, w_dense = profile.rrf_weights
        self.lexical_prior = (
            lexical_prior if lexical_prior is not None else w_bm25 / ((w_bm25 + w_dense) or 1.0)
        )
        self.rrf_k = profile.fusion_rrf_k  # the adaptive fusion's (the fixed one keeps RRF_K)
        self.keep_each = profile.rerank_keep_each
        self.protect_each = profile.fusion_protect_each
        self.per_document_one_language = profile.rerank_per_document
        self._rules: tuple[int, list[tuple[Chunk, str]]] | None = None
        self._language: dict[Audience, tuple[int, tuple[str | None, bool]]] = {}
        # over an embedder with a shared cache (the server's), none of its own: its hits
        # and misses are then all seen there (and on /metrics); one search asks it once
        own = 0 if isinstance(embedder, SharedQueryCache) else QUERY_VECTORS
        self._query_vectors: LRU[str, np.ndarray] = LRU(own)
        self._searching = threading.local()  # the current search's query vectors, per thread
        self._masks: LRU[tuple[Any, ...], set[str]] = LRU(MASKS)
        if embedder is not None:
            _check_embedder(store, embedder)
        if reranker is None and embedder is not None:
            reranker = SentenceReranker(
                store,
                self.query_vector,
                weights=profile.rerank_weights,
                lexical_share=self._rerank_share if adaptive else None,
                lexical_weights=profile.rerank_lexical_weights,
                order=rerank_order,
            )
        self.reranker = reranker
        self._reader_loader = reader
        self._deep: DeepReranker | None = None
        self._deep_lock = threading.Lock()

    @property
    def has_dense(self) -> bool:
        return self.embedder is not None and self.store.has_vectors()

    def query_vector(self, query: str) -> np.ndarray:
        """The embedder's vector for a query: asked once per search; across searches kept in
        the retriever's own cache (per query text), or, when the embedder shares a cache
        (`SharedQueryCache`, the server's), asked of it again, which answers from that cache."""
        if self.embedder is None:
            raise TetherError("no embedder: dense methods are not available")
        memo: dict[str, np.ndarray] | None = getattr(self._searching, "vectors", None)
        vec = memo.get(query) if memo is not None else None
        if vec is not None:
            return vec
        vec = self._query_vectors.get(query)
        if vec is None:
            vec = np.asarray(self.embedder.embed_queries([query]), dtype=np.float32)[0]
            self._query_vectors.put(query, vec)
        if memo is not None:
            memo[query] = vec
        return vec

    def warm_queries(self, queries: Sequence[str], batch: int = 32) -> None:
        """Embed the queries not cached yet in batches (one embedder call per `batch`), so a
        loop over many queries (the calibrations at ingest) does not embed them one by one.
        Nothing happens without an embedder; the cache keeps its size (the last ones stay).
        Over a shared cache (`SharedQueryCache`) the vectors are kept there."""
        if self.embedder is None:
            return
        todo = list(dict.fromkeys(q for q in queries if q not in self._query_vectors))
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            vectors = np.asarray(self.embedder.embed_queries(part), dtype=np.float32)
            for query, vec in zip(part, vectors, strict=True):
                self._query_vectors.put(query, vec)

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (so a timing includes embedding the query): the
        retriever's own, or the shared cache's (every caller's) when its embedder has one."""
        self._query_vectors.clear()
        if isinstance(self.embedder, SharedQueryCache):
            self.embedder.clear_query_cache()

    # ---- methods ------------------------------------------------------------------------------

    def _bm25(self, query: str, k: int, filters: Filters) -> list[Hit]:
        hits = self.store.search_lexical(query, k, filters)
        return [
            replace(h, method="bm25", signals={"bm25": h.score, "bm25_rank": float(h.rank)})
            for h in hits
        ]

    def _dense_ranked(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        return self.store.search_dense(self.query_vector(query), k, filters)

    def _dense_hits(self, query: str, k: int, filters: Filters) -> list[Hit]:
        ranked = self._dense_ranked(query, k, filters)
        chunks = self.store.get_many(cid for cid, _ in ranked)
        return [
            Hit(
                chunk=chunks[cid],
                score=s,
                rank=i,
                method="dense",
                signals={"dense": s, "dense_rank": float(i)},
            )
            for i, (cid, s) in enumerate(ranked, start=1)
            if cid in chunks  # removed by a write committed since the ranking
        ]

    def fusion_weights(
        self, query: str, audience: Audience = "public"
    ) -> tuple[tuple[float, float], bool]:
        """(bm25, dense) fusion weights for `query` asked by `audience`, and whether the
        cosine gate applies.

        Fixed (`rrf_weights`, gate on) unless `adaptive`: then the BM25 weight is the
        collection's (its `lexical_prior` share as a weight against dense 1) times the query's
        shape factor (`query_shape`), and no candidate is gated."""
        if not self.adaptive:
            return self.rrf_weights, True
        share = self.lexical_share(query, audience)
        return (share / (1.0 - share), 1.0), False

    def lexical_share(self, query: str, audience: Audience = "public") -> float:
        """The BM25 share of the fusion for `query`: the collection's weight times the
        query's shape factor (against the language of the collection as `audience` sees it),
        as a share, within 0.05..0.95 (the adaptive reranker scales its lexical features by it
        too)."""
        prior = min(0.95, max(0.05, self.lexical_prior))
        weight = prior / (1.0 - prior) * self._shape(query, audience).lexical_factor
        return min(0.95, max(0.05, weight / (1.0 + weight)))

    def _rerank_share(self, query: str, audience: Audience = "public") -> float:
        """The share the adaptive reranker scales its lexical features by: the fusion's, but
        none where shared words are likely to point at the wrong passage: a question in
        another language than the collection, or any question but one of identifiers in a
        collection written in several languages (the collection as `audience` sees it)."""
        kind = self._shape(query, audience).kind
        if kind == "cross-language" or (self._languages(audience)[1] and kind != "identifier"):
            return 0.0
        return self.lexical_share(query, audience)

    def _shape(self, query: str, audience: Audience = "public") -> QueryShape:
        return query_shape(query, self._languages(audience)[0])

    def _languages(self, audience: Audience = "public") -> tuple[str | None, bool]:
        """(the language of most chunks, whether a second language holds at least
        `SECOND_LANGUAGE` of them), counted over the chunks `audience` may see (every version:
        staff passages never move what the public is told), cached while the index's
        generation stays."""
        generation = self.store.generation()
        found = self._language.get(audience)
        if found is None or found[0] != generation:
            allowed = self._allowed(Filters(audience=audience))
            counts = Counter(
                c.meta.language
                for c in self.store.chunks()
                if c.meta.language and c.chunk_id in allowed
            )
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:2]
            total = sum(counts.values()) or 1
            several = len(ranked) > 1 and ranked[1][1] / total >= SECOND_LANGUAGE
            found = self._language[audience] = (
                generation,
                (ranked[0][0] if ranked else None, several),
            )
        return found[1]

    def _hybrid(self, query: str, k: int, filters: Filters, depth: int | None = None) -> list[Hit]:
        """The top k of the fusion of the BM25 and dense top `depth` (default: the larger of
        `candidates` and k)."""
        depth = depth or max(self.candidates, k)
        lexical = self.store.lexical_ranking(query, depth, filters)
        dense = self._dense_ranked(query, depth, filters)
        weights, gated = self.fusion_weights(query, filters.audience)
        fusing = [cid for cid, _ in lexical]
        if self.lexical_gate is not None and dense and gated:
            top, low = dense[0][1], dense[-1][1]
            floor = top - self.lexical_gate * (top - low)
            lexical_cos = self._cosines(query, fusing)
            fusing = [cid for cid in fusing if lexical_cos[cid] >= floor]
        k_rrf = self.rrf_k if self.adaptive else RRF_K
        fused = rrf_scores([fusing, [cid for cid, _ in dense]], k=k_rrf, weights=weights)
        bm25 = {cid: (s, i) for i, (cid, s) in enumerate(lexical, start=1)}
        dense_rank = {cid: (s, i) for i, (cid, s) in enumerate(dense, start=1)}
        order = sorted(
            fused,
            key=lambda c: (
                -fused[c],
                min(bm25.get(c, (0, 10**9))[1], dense_rank.get(c, (0, 10**9))[1]),
                c,
            ),
        )
        if self.adaptive:
            order = self._protect_heads(query, order, bm25, dense_rank, filters.audience)
        order = order[:k]
        chunks = self.store.get_many(order)
        order = [cid for cid in order if cid in chunks]  # removed since the ranking: left out
        cosines = self._cosines(query, order)
        hits: list[Hit] = []
        for i, cid in enumerate(order, start=1):
            signals = {"rrf": fused[cid], "dense": cosines[cid]}
            if cid in bm25:
                signals["bm25"], signals["bm25_rank"] = bm25[cid][0], float(bm25[cid][1])
            if cid in dense_rank:
                signals["dense_rank"] = float(dense_rank[cid][1])
            hits.append(Hit(chunks[cid], fused[cid], i, "hybrid", signals))
        return hits

    def _protect_heads(
        self,
        query: str,
        order: list[str],
        bm25: Mapping[str, tuple[float, int]],
        dense: Mapping[str, tuple[float, int]],
        audience: Audience = "public",
    ) -> list[str]:
        """Adaptive hybrid: the top `protect_each` of the dense list and of the BM25 list
        come first (in fused order), the rest follow in fused order. Reciprocal rank fusion is
        flat near the top (rank 1 is worth little more than rank 20), so a list's first hit
        that the other list does not hold at all sank below every candidate the two lists
        share. Only in a collection written in one language (where it was measured; a
        collection of several languages keeps the fusion its bundled questions were tuned
        on), and BM25's top not for a question in another language than the collection (the
        collection as `audience` sees it)."""
        if self.protect_each < 1 or self._languages(audience)[1]:
            return order
        cross = self._shape(query, audience).kind == "cross-language"
        lexical = 0 if cross else self.protect_each
        never = (0.0, 10**9)
        first = [
            c
            for c in order
            if bm25.get(c, never)[1] <= lexical or dense.get(c, never)[1] <= self.protect_each
        ]
        led = set(first)
        return [*first, *(c for c in order if c not in led)]

    # ---- helpers ------------------------------------------------------------------------------

    def _need_dense(self, method: str) -> None:
        if self.embedder is None:
            raise TetherError(
                f"method {method!r} needs an embedder; this retriever has none (use bm25)"
            )
        if not self.store.has_vectors():
            raise TetherError(
                f"method {method!r} needs vectors: this index has none; run"
                " `tether ingest FOLDER` with embeddings (the default), or use --method bm25"
            )

    def _allowed(self, filters: Filters) -> set[str]:
        """IDs of the chunks the filters let through (cached until the index changes)."""
        key = ("ids", self.store.generation(), filters.as_of, filters.audience)
        found = self._masks.get(key)
        if found is None:
            found = self._masks.put(key, self.store.allowed_ids(filters))
        return found

    def _cosines(self, query: str, chunk_ids: Sequence[str]) -> dict[str, float]:
        q = self.query_vector(query)
        found = self.store.vectors_of(chunk_ids)
        return {cid: float(found[cid] @ q) if cid in found else 0.0 for cid in chunk_ids}


def _check_embedder(store: SearchableStore, embedder: Embedder) -> None:
    """Queries must be embedded by the embedder the index was built with."""
    built = store.meta_value("embedder")
    want = f"{embedder.name} ({embedder.version})"
    if built is not None and store.has_vectors() and built != want:
        raise ConflictError(
            f"this index was embedded with {built}; queries would be embedded with {want}:"
            " re-ingest with --rebuild, or use the same embedder"
        )
