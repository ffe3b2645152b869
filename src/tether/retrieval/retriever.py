"""Retrieval: lexical (BM25), dense, hybrid (reciprocal rank fusion) and rerank, after filters.

`Retriever(store, embedder, reranker).search(query, k, filters, method)` returns `Hit`s ranked
1..k. Every method applies the filters (the version in force on `as_of`, what `audience` may
see) BEFORE ranking, so a passage the filters refuse can never take a place in the list:
- bm25: the store's FTS5 search, filtered in SQL;
- dense: the store's `search_dense` (cosine of the query vector to the chunk vectors, the
  rows the filters refuse masked before the top k is taken; brute force, or a faiss HNSW
  graph for large indexes: see `tether.stores.dense`); the retriever holds no vector index;
- hybrid: reciprocal rank fusion (k = 60; weights `rrf_weights`, BM25 0.7 and dense 1) of
  the BM25 and dense top 50, after a cosine gate on the BM25 list: a BM25 candidate takes part only
  when its cosine to the query lies in the upper `lexical_gate` share (default 0.4) of the
  dense top 50's cosine range (top cosine minus 0.4 x (top - 50th)). BM25 alone still finds
  codes and rare words the embedder blurs (they score high on both), but a passage that
  shares a few words and nothing else, such as a French passage for a French question whose
  answer is in English, no longer pushes the dense result down. `lexical_gate=None` fuses
  the plain lists. (Measured in bench/results/retrieval.md; the share and the weight were
  chosen on the bundled questions and checked on Larkfield.)
  That is the fixed fusion (`adaptive=False`). The Profile's default is adaptive
  (`adaptive=True`, set by `tether.app.retriever_for`): a reciprocal rank fusion with k =
  `rrf_k` (the Profile's 10: sharper than 60, so a list's first hits count for more than what
  both lists merely share), no cosine gate, and a BM25 weight (dense 1) that is the
  collection's (`lexical_prior` as a share; measured at ingest from how far dense search keeps
  up with BM25 on pseudo-questions made from its own sentences, `tether.retrieval.calibrate`;
  else the fixed weights' share) times the query's shape factor (`tether.retrieval.query`:
  x2 identifiers and quoted phrases, x0.3 a question in another language than the
  collection). With `protect_each` > 0 (the Profile's is 0) the top that many of each list
  lead the fused list in a collection written in one language. Compared with the fixed
  fusion and plain RRF on real manuals in bench/results/real_corpora.md.
- deep: the rerank list with its top 10 reread by tether's reader, the question and each
  passage together (`tether.retrieval.deep`; about 24 ms a candidate: `ask`'s default, not
  `search`'s).
- rerank: the hybrid top 20 reordered by a `Reranker` (the default, `SentenceReranker`, runs
  in milliseconds; see `tether.retrieval.rerank`); hits past 20 keep their hybrid order.
  Adaptive: the top `keep_each` (5) of the BM25 and of the dense list join the reordered head
  wherever the fusion put them, and the sentence reranker's lexical features weigh more as
  the query's BM25 share grows (none extra for another language, or a non-identifier
  question in a collection of several languages). Two steps
  follow, both on by default (`per_document=None`, `rule_types=()` turn them off):
  - at most `per_document` (3) chunks of one document in the top 10, so that one long
    document (a supplier sheet in five chunks) cannot fill the list; the rest move down
    (the adaptive fusion in a collection written in one language uses
    `per_document_one_language` instead, the Profile's `rerank_per_document`: no cap, as a
    reference page split at its entries holds the answer and its neighbours, and the cap
    pushed the answer out of the top 5);
  - standing rules: when the top 5 holds supplier content, or two passages of different
    standing on the same point (a help article or guide and a passage that outranks it, as
    `documents.source_rank` orders them, with chunk cosine >= 0.92), the passage of a
    governance document (`rule_types`, default doc_type "governance") that names those lower
    sources most often takes 5th place (signal `rule`), unless one is already in the top 5.
    The rule that says which source wins is then in front of the answerer and the verifier.
  The cap, the window and the cosine were chosen on the bundled questions (its contradiction
  and injection-bait kinds) and cannot be checked on Larkfield, which has no governance
  document; bench/results/retrieval.md gives rerank with and without them.

What a caller is told depends only on what its audience may see: the filters apply before
ranking; a public BM25 search scores with the public chunks' statistics (the store's public
lexical table); and what the fusion and the reranker read from the collection as a whole
(the language of most chunks, whether a second language is common, the language means of the
reranker's `xdense`) is counted over the chunks of the caller's audience, every version.

Each `Hit` carries `signals`, the component scores that placed it: `bm25`, `bm25_rank`,
`dense` (the cosine, computed for every fused hit, also those BM25 alone found), `dense_rank`,
`rrf`, and the reranker's features. An optional `rewrite` hook (for example `LLMRewriter`)
rewrites the query before any method sees it.

What it cannot do: a dense search needs an index built with an embedder and the same
embedder to embed queries (checked here, against the name recorded in the index); the query
rewriter costs one model call per query.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tether import deadlines
from tether.config import DEFAULT_PROFILE, Profile
from tether.errors import ConflictError, TetherError
from tether.linear import LinearModel
from tether.lru import LRU
from tether.protocols import (
    Embedder,
    Provider,
    QuestionReader,
    Reranker,
    SearchableStore,
    SharedQueryCache,
    Store,
)
from tether.retrieval.deep import DeepReranker
from tether.retrieval.query import QueryShape, query_shape
from tether.standing import TYPE_ALIASES, source_rank
from tether.text import fold
from tether.types import Audience, Chunk, Filters, Hit, Message, ModelRequest

METHODS: tuple[str, ...] = ("bm25", "dense", "hybrid", "rerank", "deep")
RRF_K = 60
DIVERSITY_WINDOW = 10  # rerank: the top places the per-document cap holds in
RULES_WINDOW = 5  # rerank: the top places a standing rule is checked for and put into
SECOND_LANGUAGE = 0.1  # share of chunks that makes a collection multilingual (adaptive)
QUERY_VECTORS = 512  # a retriever's own query vectors (none over a shared cache)
MASKS = 32  # filter masks kept (per generation, date and audience)


def check_method(method: str) -> str:
    """`method` when it names a method (or is "auto"), else a TetherError saying the choices."""
    if method != "auto" and method not in METHODS:
        raise TetherError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    return method


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


# ---- the retriever --------------------------------------------------------------------------


class Retriever:
    """Ranks chunks of one store for a query, by method, after the filters."""

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
            from tether.retrieval.rerank import SentenceReranker

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

    @property
    def default_method(self) -> str:
        """What "auto" means: rerank when the index has vectors (the best method measured,
        bench/results/retrieval.md), else bm25."""
        return "rerank" if self.has_dense else "bm25"

    @property
    def answer_method(self) -> str:
        """What "auto" means when answering (`ask`): deep when the reader can be loaded (a
        few hundred milliseconds that decide which passages the answer reads), else
        `default_method`."""
        if self.default_method == "rerank" and self.deep is not None:
            return "deep"
        return self.default_method

    # ---- public -------------------------------------------------------------------------------

    def resolve_method(self, method: str) -> str:
        """`method` itself, or `default_method` for "auto"; an unknown name is an error."""
        return self.default_method if check_method(method) == "auto" else method

    def search(self, query: str, k: int, filters: Filters, method: str = "auto") -> list[Hit]:
        """The top k chunks for `query` by `method` ("auto": `default_method`), among the chunks
        `filters` let through."""
        method = self.resolve_method(method)
        if k < 1:
            return []
        if self.rewrite is not None:
            rewritten = self.rewrite(query)
            query = rewritten.strip() or query
        if method == "bm25":
            with self.store.snapshot():
                return _served(self._bm25(query, k, filters), filters)
        self._need_dense(method)
        self._searching.vectors = {}
        try:
            self.query_vector(query)  # first: no read of the index is held while it is embedded
            with self.store.snapshot():  # the search's reads see one state of the index
                if method == "dense":
                    return _served(self._dense_hits(query, k, filters), filters)
                if method == "hybrid":
                    return _served(self._hybrid(query, k, filters), filters)
                if method == "deep":
                    return _served(self._deep_rerank(query, k, filters), filters)
                return _served(self._rerank(query, k, filters), filters)
        finally:
            self._searching.vectors = None

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

    def _rerank(self, query: str, k: int, filters: Filters) -> list[Hit]:
        if self.reranker is None:
            raise TetherError("no reranker configured")
        head, tail = self.rerank_candidates(query, k, filters)
        deadlines.check("the reranker")  # a request past its deadline stops here (the server's)
        reranked = self.reranker.rerank(query, head, len(head), filters.audience)
        deadlines.check("the reranked order")
        if len(reranked) < len(head):  # a reranker that cut the list: keep the rest in order
            seen = {h.chunk.chunk_id for h in reranked}
            reranked = [*reranked, *(h for h in head if h.chunk.chunk_id not in seen)]
        floor = min((h.score for h in reranked), default=0.0)
        # the support gate's scale (a learned order's score is another): `signals["rerank"]`
        support = min((float(h.signals.get("rerank", h.score)) for h in reranked), default=0.0)
        # Hit(...) rather than dataclasses.replace: the same hits, a third of the time
        out = [Hit(h.chunk, h.score, i, "rerank", h.signals) for i, h in enumerate(reranked, 1)]
        for j, h in enumerate(tail, start=len(out) + 1):  # past the reranked head: hybrid order
            below = {**h.signals, "rerank": support - j * 1e-6}
            out.append(Hit(h.chunk, floor - j * 1e-6, j, "rerank", below))
        cap = self.per_document
        if self.adaptive and cap and not self._languages(filters.audience)[1]:
            cap = self.per_document_one_language
        if cap:
            out = _cap_per_document(out, cap, DIVERSITY_WINDOW)
        if self.rule_types:
            out = self._with_rule(out, filters)
        return [replace(h, rank=i) for i, h in enumerate(out[:k], start=1)]

    @property
    def deep(self) -> DeepReranker | None:
        """The deep reranker (the reader loaded at the first call), or None without one."""
        if self._deep is None and self._reader_loader is not None:
            with self._deep_lock:
                if self._deep is None:
                    reader = self._reader_loader()
                    if reader is None:
                        self._reader_loader = None
                        return None
                    self._deep = DeepReranker(reader, self.store, self.query_vector)
        return self._deep

    def _deep_rerank(self, query: str, k: int, filters: Filters) -> list[Hit]:
        """The rerank list with its top reread by the reader (`tether.retrieval.deep`)."""
        deep = self.deep
        if deep is None:
            raise TetherError(
                "the deep method needs tether's reader, which could not be loaded here "
                "(see the log); choose rerank"
            )
        hits = self._rerank(query, max(k, deep.depth), filters)
        return deep.rerank(query, hits, k, filters.audience)

    def rerank_candidates(
        self, query: str, k: int, filters: Filters
    ) -> tuple[list[Hit], list[Hit]]:
        """(what the reranker reorders, the rest in hybrid order) for `query`: the hybrid
        candidates the rerank method starts from (also what a learned order is trained on)."""
        if self.adaptive:  # every fused candidate, so that each list's top reaches the reranker
            depth = max(self.candidates, k)
            candidates = self._hybrid(query, 2 * depth, filters, depth)
        else:
            candidates = self._hybrid(query, max(k, self.rerank_depth), filters)
        return self._rerank_head(candidates)

    def _rerank_head(self, candidates: list[Hit]) -> tuple[list[Hit], list[Hit]]:
        """(what the reranker reorders, the rest in hybrid order): the hybrid top
        `rerank_depth`, plus (adaptive) the top `keep_each` of the BM25 and of the dense list
        wherever the fusion put them."""
        if not self.adaptive:
            return candidates[: self.rerank_depth], candidates[self.rerank_depth :]
        head: list[Hit] = []
        tail: list[Hit] = []
        for i, h in enumerate(candidates):
            top_of_a_list = any(
                h.signals.get(name, 10**9) <= self.keep_each for name in ("bm25_rank", "dense_rank")
            )
            (head if i < self.rerank_depth or top_of_a_list else tail).append(h)
        return head, tail

    def _with_rule(self, hits: list[Hit], filters: Filters) -> list[Hit]:
        """Put the standing rule that governs the sources in the top places at 5th place."""
        window = hits[:RULES_WINDOW]
        if len(window) < 2 or any(h.chunk.meta.doc_type.lower() in self.rule_types for h in window):
            return hits
        vectors = self.store.vectors_of(h.chunk.chunk_id for h in window)
        lower = _lower_sources(window, vectors.get, self.same_point_cosine)
        if not lower:
            return hits
        allowed = self._allowed(filters)
        rules = [(c, text) for c, text in self._rule_chunks() if c.chunk_id in allowed]
        words = [w for t in sorted(lower) for w in _type_words(t)]
        scored = [(_mentions(text, words), -i, c) for i, (c, text) in enumerate(rules)]
        if not scored:
            return hits
        best_count, _, rule = max(scored, key=lambda x: (x[0], x[1]))
        if best_count == 0:
            return hits
        rest = [h for h in hits if h.chunk.chunk_id != rule.chunk_id]
        at = min(RULES_WINDOW, len(rest) + 1) - 1
        score = rest[at].score if at < len(rest) else rest[-1].score
        hit = Hit(rule, score, at + 1, "rerank", {"rule": 1.0, "rule_for": float(len(lower))})
        return [*rest[:at], hit, *rest[at:]]

    def _rule_chunks(self) -> list[tuple[Chunk, str]]:
        """The chunks of the rule documents, each with its headings and text folded (what
        `_mentions` reads), for the index's generation."""
        generation = self.store.generation()
        if self._rules is None or self._rules[0] != generation:
            found = [
                (c, fold(" ".join((*c.heading_path, c.text))))
                for c in self.store.chunks()
                if c.meta.doc_type.lower() in self.rule_types
            ]
            self._rules = (generation, found)
        return self._rules[1]

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


def _served(hits: list[Hit], filters: Filters) -> list[Hit]:
    """The hits whose chunk, as read, the filters still let through, ranked 1..n: a ranking
    and the reading of its chunks are two reads, and a write committed between them (a
    document relabelled staff, or out of force) must not reach the caller."""
    kept = [h for h in hits if filters.allows(h.chunk.meta)]
    if len(kept) == len(hits):
        return hits
    return [replace(h, rank=i) for i, h in enumerate(kept, start=1)]


def _cap_per_document(hits: list[Hit], cap: int, window: int) -> list[Hit]:
    """At most `cap` chunks of one document (doc_id) in the first `window` places; the
    chunks over the cap move just past the window, in their order."""
    head: list[Hit] = []
    over: list[Hit] = []
    count: dict[str, int] = {}
    rest = iter(hits)
    for h in rest:
        if count.get(h.chunk.doc_id, 0) >= cap:
            over.append(h)
            continue
        count[h.chunk.doc_id] = count.get(h.chunk.doc_id, 0) + 1
        head.append(h)
        if len(head) == window:
            break
    return [*head, *over, *rest]


def _lower_sources(
    window: Sequence[Hit], vector: Callable[[str], np.ndarray | None], same_point: float
) -> set[str]:
    """Doc types in `window` that a governance rule speaks about: supplier content (always),
    and a help-level source on the same point as a passage that outranks it."""
    help_rank = source_rank("help")
    supplier_rank = source_rank("supplier")
    ranks = [source_rank(h.chunk.meta.doc_type) for h in window]
    lower: set[str] = set()
    for h, r in zip(window, ranks, strict=True):
        if r is not None and supplier_rank is not None and r >= supplier_rank:
            lower.add(h.chunk.meta.doc_type.lower())
    if help_rank is None:
        return lower
    for i, (a, ra) in enumerate(zip(window, ranks, strict=True)):
        for b, rb in zip(window[i + 1 :], ranks[i + 1 :], strict=True):
            if ra is None or rb is None or ra == rb or max(ra, rb) < help_rank:
                continue
            va, vb = vector(a.chunk.chunk_id), vector(b.chunk.chunk_id)
            if va is None or vb is None or float(va @ vb) < same_point:
                continue
            lower.add((a if ra > rb else b).chunk.meta.doc_type.lower())
    return lower


def _type_words(doc_type: str) -> list[str]:
    """The words a governance text uses for a source type: the type and its aliases."""
    return [doc_type, *(alias for alias, target in TYPE_ALIASES.items() if target == doc_type)]


def _mentions(text: str, words: Sequence[str]) -> int:
    """How often the folded `text` names one of `words` (each at a word's start)."""
    return sum(len(re.findall(rf"\b{re.escape(fold(w))}", text)) for w in words)


def store_has_vectors(store: SearchableStore) -> bool:
    """Whether the index holds chunk vectors (dense methods need them)."""
    return store.has_vectors()


def _check_embedder(store: SearchableStore, embedder: Embedder) -> None:
    """Queries must be embedded by the embedder the index was built with."""
    built = store.meta_value("embedder")
    want = f"{embedder.name} ({embedder.version})"
    if built is not None and store.has_vectors() and built != want:
        raise ConflictError(
            f"this index was embedded with {built}; queries would be embedded with {want}:"
            " re-ingest with --rebuild, or use the same embedder"
        )


# ---- query rewriting ------------------------------------------------------------------------


class LLMRewriter:
    """Rewrites a question into a search query with a model (prompt `prompts/rewrite.txt`).

    Any failure (provider error, empty or cut output) returns the question unchanged."""

    name = "llm-rewrite"

    def __init__(self, provider: Provider, *, max_tokens: int = 64) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self._cache: LRU[str, str] = LRU(1024)

    def __call__(self, query: str) -> str:
        found = self._cache.get(query)
        if found is not None:
            return found
        from tether.prompts import load_prompt

        template, prompt_id = load_prompt("rewrite")
        text = template.replace("$question", query)
        request = ModelRequest(
            messages=(Message("user", text),),
            max_tokens=self.max_tokens,
            purpose="rewrite",
            prompt_id=prompt_id,
            question=query,
        )
        try:
            completion = self.provider.complete(request)
        except Exception:  # a rewrite is an optional improvement: never fail the search
            return query
        rewritten = _first_line(completion.text) if completion.finish_reason == "stop" else ""
        return self._cache.put(query, rewritten or query)


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        line = re.sub(r"^(query|search query|requête)\s*:\s*", "", line.strip(), flags=re.I)
        line = line.strip().strip('"').strip()
        if line:
            return line[:500]
    return ""
