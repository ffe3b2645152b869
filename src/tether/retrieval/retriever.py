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
  passage together (`tether.retrieval.deep`; an encoder pass a candidate, timed in
  bench/results/reader.md: `ask`'s default, not `search`'s).
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

The parts: `fusion` (`Fusion`, the base of `Retriever`: query vectors, the BM25 and dense
lists, their fusion), `rerank_steps` (the per-document cap, the standing rule's sources) and
`rewrite` (`LLMRewriter`); this module resolves the method, reranks and serves.

What it cannot do: a dense search needs an index built with an embedder and the same
embedder to embed queries (checked here, against the name recorded in the index); the query
rewriter costs one model call per query.
"""

from __future__ import annotations

from dataclasses import replace

from tether import deadlines
from tether.errors import TetherError
from tether.options import METHODS as METHODS
from tether.protocols import SearchableStore
from tether.retrieval.deep import DeepReranker
from tether.retrieval.fusion import MASKS as MASKS
from tether.retrieval.fusion import QUERY_VECTORS as QUERY_VECTORS
from tether.retrieval.fusion import RRF_K as RRF_K
from tether.retrieval.fusion import SECOND_LANGUAGE as SECOND_LANGUAGE
from tether.retrieval.fusion import Fusion
from tether.retrieval.fusion import rrf_scores as rrf_scores
from tether.retrieval.rerank_steps import cap_per_document, lower_sources, mentions, type_words
from tether.retrieval.rewrite import LLMRewriter as LLMRewriter
from tether.text import fold
from tether.types import Chunk, Filters, Hit

DIVERSITY_WINDOW = 10  # rerank: the top places the per-document cap holds in
RULES_WINDOW = 5  # rerank: the top places a standing rule is checked for and put into


def check_method(method: str) -> str:
    """`method` when it names a method (or is "auto"), else a TetherError saying the choices."""
    if method != "auto" and method not in METHODS:
        raise TetherError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    return method


class Retriever(Fusion):
    """Ranks chunks of one store for a query, by method, after the filters."""

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
            out = cap_per_document(out, cap, DIVERSITY_WINDOW)
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
        lower = lower_sources(window, vectors.get, self.same_point_cosine)
        if not lower:
            return hits
        allowed = self._allowed(filters)
        rules = [(c, text) for c, text in self._rule_chunks() if c.chunk_id in allowed]
        words = [w for t in sorted(lower) for w in type_words(t)]
        scored = [(mentions(text, words), -i, c) for i, (c, text) in enumerate(rules)]
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
        `mentions` reads), for the index's generation."""
        generation = self.store.generation()
        if self._rules is None or self._rules[0] != generation:
            found = [
                (c, fold(" ".join((*c.heading_path, c.text))))
                for c in self.store.chunks()
                if c.meta.doc_type.lower() in self.rule_types
            ]
            self._rules = (generation, found)
        return self._rules[1]


def _served(hits: list[Hit], filters: Filters) -> list[Hit]:
    """The hits whose chunk, as read, the filters still let through, ranked 1..n: a ranking
    and the reading of its chunks are two reads, and a write committed between them (a
    document relabelled staff, or out of force) must not reach the caller."""
    kept = [h for h in hits if filters.allows(h.chunk.meta)]
    if len(kept) == len(hits):
        return hits
    return [replace(h, rank=i) for i, h in enumerate(kept, start=1)]


def store_has_vectors(store: SearchableStore) -> bool:
    """Whether the index holds chunk vectors (dense methods need them)."""
    return store.has_vectors()
