"""Rerankers: reorder a short candidate list (the hybrid top 20) for one query.

- `SentenceReranker` (the default; milliseconds, no model call): a weighted mean of features
  that are all on absolute scales, so its score can be compared with a floor:
  `maxsim`, the best cosine of the query to one of the candidate's sentences (sentence
  vectors are computed at ingest, see `store.sentence_spans`; the chunk cosine stands in when
  a chunk has none); `dense`, the cosine to the whole chunk; `xdense`, the same cosine after
  removing from each side the mean vector of its language (the query's language detected, the
  chunk's from its metadata), mapped to 0..1: e5 vectors carry a strong language component
  that makes an English question prefer English passages, and centring each language removes
  most of it. The means are the audience's: over the vectors of the chunks the caller's
  audience may see (every version), so a public score never moves with staff passages, and
  taken in chunk ID order, so they do not move with the order chunks were written in; `bm25`,
  the BM25 score squashed to 0..1 (b / (b + 5)); `coverage`, the share of the query's content
  words (accents folded, plurals folded) found in the chunk; `heading`, the share found in its
  title and headings;
  `code`, the share of the query's exact codes (PW-2200-07, SPRING15) that the chunk contains,
  and `rrf`, the hybrid fusion score over the best one among the candidates (0..1, whatever
  the fusion's k and weights). The weights were tuned on the bundled
  questions and checked on the held-out Larkfield set (bench/results/retrieval.md).
  `page` is the cosine of the query to the candidate's document's first chunk (the page's
  opening: a man page's NAME line, a Texinfo node's first paragraph), so a question about what
  a page is for reaches its sections.
- The learned order (`order`, a `LinearModel` from `rerank_model.json`, the Profile's
  `rerank_order`): the same candidates sorted by a logistic regression over those features,
  the weighted mean itself, the query's BM25 share, each list's reciprocal rank and each
  feature's gap to the best candidate's (`order_features`), trained on tuned-on manuals'
  questions and pseudo-queries made from their passages (`tether.evaluation.rerank_training`,
  `make rerank-model`). It sets the hit's `score` (a probability); the weighted mean stays in
  `signals["rerank"]`, on the absolute scale the support gate's floors and the answerability
  judge were fitted on (`tether.answering.gate.support_score` reads it there).
- `LLMReranker`: pointwise yes/no by a language model (prompt `prompts/rerank.txt`); the
  score is P(yes) from the first token's log-probabilities when the provider returns them,
  else 1/0 from the text. Seconds per candidate with a local model: only for short lists.
- `CrossEncoderReranker`: a sentence-transformers `CrossEncoder` the user has on disk (the
  optional `rerank` extra). None ships in any package we can install, so none is the default.

`SentenceReranker` reads each candidate's words (content words, its title's and headings',
its codes) from a `ChunkWordsCache`: what a chunk's text gives whatever the query, derived
once and kept, keyed by the chunk's ID and the very text, title and headings they were
derived from (compared in full: a chunk whose text changed is read anew), bounded
(`CHUNK_WORDS` chunks, least recently used dropped) and shared by every thread of the
process (`SHARED_CHUNK_WORDS`).
Splitting 20 candidates into words on every query was half of a cached rerank search's time.

What it cannot do: `SentenceReranker` knows no more than e5-small's sentence vectors and
surface words (no reasoning about negation or conditions), and its learned order only
reweighs those signals: it reads no question and passage together, so a paraphrase that
e5-small does not bridge stays unbridged (a cross-encoder would, at the cost of an encoder
pass per candidate); `LLMReranker` trusts a model's
yes/no; `CrossEncoderReranker` needs `sentence-transformers` (and torch) and a local model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tether.config import DEFAULT_PROFILE
from tether.errors import ProviderError, TetherError
from tether.extras import install_hint
from tether.linear import LinearModel, read_model
from tether.lru import LRU
from tether.prompts import load_prompt
from tether.protocols import Embedder, Provider, Store
from tether.text import (
    codes,
    collapse_code,
    content_words,
    detect_language,
    embed_text,
    fold_plural,
    words,
)
from tether.types import Audience, Chunk, Filters, Hit, Message, ModelRequest

# Tuned on the bundled questions by a random search over the features (objective: recall@5
# + MRR of the reranked hybrid top 20), then checked on the Larkfield questions (held out); see
# bench/results/retrieval.md. Each feature is in 0..1, so the score is a weighted mean. The
# code, heading and rrf features got no weight: BM25 in the hybrid list already brings every
# exact code to the top, and a weight on them lowered MRR; they stay in `signals` for reading.
# The weights are an embedder's tuned values: they live in its Profile (tether.config).
DEFAULT_WEIGHTS: Mapping[str, float] = DEFAULT_PROFILE.rerank_weights
BM25_HALF = 5.0  # the BM25 score that maps to 0.5
LEXICAL_NEUTRAL = 0.5  # adaptive: the BM25 share at which the lexical weights count as listed
MIN_LANGUAGE_CHUNKS = 3  # fewer chunks in a language: centre it on the mean of all chunks
# chunks whose words `SHARED_CHUNK_WORDS` keeps: a few KB each (more for a long manual section
# than for a demo chunk), plus the text the key holds (shared with the chunk while it is
# read): some tens of MB at most
CHUNK_WORDS = 4096
CENTRED = 4096  # a reranker's chunk vectors centred on their language's mean, per audience
ORDER_MODEL_PATH = Path(__file__).with_name("rerank_model.json")
ORDER_REBUILD = "make rerank-model"
_GAPS = ("maxsim", "dense", "xdense", "bm25", "coverage", "page")
# what a learned order reads (`order_features`), in the model file's order
ORDER_FEATURES: tuple[str, ...] = (
    "maxsim",
    "dense",
    "xdense",
    "bm25",
    "coverage",
    "heading",
    "code",
    "rrf",
    "page",
    "sentence",
    "share",
    "bm25_x_share",
    "coverage_x_share",
    "heading_x_share",
    "bm25_rr",
    "dense_rr",
    *(f"{n}_gap" for n in _GAPS),
    "doc_gap",
)


def load_order_model(path: Path | str = ORDER_MODEL_PATH) -> LinearModel:
    """The learned rerank order (see `order_features`); a damaged file is a clear error."""
    return read_model(path, "the rerank order model", ORDER_REBUILD, ORDER_FEATURES)


@lru_cache(maxsize=8)
def order_model(name: str) -> LinearModel:
    """A Profile's `rerank_order`: a file name beside this module, or a path; read once."""
    path = Path(name)
    return load_order_model(path if path.is_absolute() else Path(__file__).with_name(name))


def order_features(
    feats: Sequence[Mapping[str, float]],
    support: Sequence[float],
    hits: Sequence[Hit],
    share: float,
) -> list[dict[str, float]]:
    """What the learned order reads for each candidate: the sentence reranker's features and
    its score (`sentence`), the query's BM25 share (`share`) and the lexical features times
    it, the reciprocal rank in each list, each main feature's gap to the best candidate's
    (so a question's general difficulty cancels out), and `doc_gap`: the best `maxsim` of
    the candidate's document among the candidates, less the best of all (a page that holds
    the answer lends its other sections some of it)."""
    if not feats:
        return []
    best = {n: max(float(f.get(n, 0.0)) for f in feats) for n in _GAPS}
    by_doc: dict[str, float] = {}
    for f, h in zip(feats, hits, strict=True):
        doc = h.chunk.doc_id
        by_doc[doc] = max(by_doc.get(doc, -1.0), float(f["maxsim"]))
    out: list[dict[str, float]] = []
    for f, s, h in zip(feats, support, hits, strict=True):
        g = {n: float(v) for n, v in f.items()}
        g["sentence"] = float(s)
        g["share"] = share
        for n in ("bm25", "coverage", "heading"):
            g[f"{n}_x_share"] = float(f.get(n, 0.0)) * share
        for n in ("bm25_rank", "dense_rank"):
            rank = h.signals.get(n)
            g[n.replace("_rank", "_rr")] = 1.0 / float(rank) if rank else 0.0
        for n in _GAPS:
            g[f"{n}_gap"] = float(f.get(n, 0.0)) - best[n]
        g["doc_gap"] = by_doc[h.chunk.doc_id] - best["maxsim"]
        out.append(g)
    return out


def _terms(text: str) -> set[str]:
    return {fold_plural(w) for w in content_words(text)}


def _code_keys(text: str) -> set[str]:
    return {collapse_code(c) for c in codes(text)}


@dataclass(frozen=True, slots=True)
class ChunkWords:
    """What the sentence reranker reads from a chunk whatever the query: its content words
    (plurals folded), those of its title and headings, and its exact codes (collapsed) in
    its text and headings."""

    text: frozenset[str]
    heading: frozenset[str]
    codes: frozenset[str]


def chunk_words(chunk: Chunk) -> ChunkWords:
    """`chunk`'s `ChunkWords`, derived now."""
    return ChunkWords(
        text=frozenset(_terms(chunk.text)),
        heading=frozenset(_terms(" ".join((chunk.meta.title, *chunk.heading_path)))),
        codes=frozenset(_code_keys(chunk.text + " " + " ".join(chunk.heading_path))),
    )


_WordsKey = tuple[str, str, str, tuple[str, ...]]


class ChunkWordsCache:
    """The `ChunkWords` of the `size` most recently read chunks, keyed by chunk ID, text,
    title and headings (compared in full: a changed chunk is read anew; the strings' hashes
    are computed once per string object, and a store that keeps the chunks it read hands
    the same ones back); thread-safe. A size of 0 keeps nothing (every read derives them)."""

    def __init__(self, size: int = CHUNK_WORDS) -> None:
        self._kept: LRU[_WordsKey, ChunkWords] = LRU(size)

    def of(self, chunk: Chunk) -> ChunkWords:
        """`chunk`'s words: kept ones, or derived now (and kept)."""
        key = (chunk.chunk_id, chunk.text, chunk.meta.title, chunk.heading_path)
        found = self._kept.get(key)
        if found is None:
            found = self._kept.put(key, chunk_words(chunk))
        return found

    def counts(self) -> dict[str, int]:
        """Hits, misses and entries so far."""
        return self._kept.counts()


SHARED_CHUNK_WORDS = ChunkWordsCache()  # the process's: every reranker's unless given one


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


@lru_cache(maxsize=4096)
def _query_language(query: str) -> str:
    return detect_language(query)


class SentenceReranker:
    """The default reranker: sentence max-similarity plus lexical signals (module docstring)."""

    name = "sentence-maxsim"

    def __init__(
        self,
        store: Store,
        query_vector: Callable[[str], np.ndarray] | Embedder,
        weights: Mapping[str, float] | None = None,
        *,
        lexical_share: Callable[[str, Audience], float] | None = None,
        lexical_weights: Mapping[str, float] | None = None,
        order: LinearModel | None = None,
        words: ChunkWordsCache | None = None,
    ) -> None:
        self.store = store
        self.words = SHARED_CHUNK_WORDS if words is None else words
        self.order = order
        if order is not None:
            self.name = "learned-order"
        self.lexical_share = lexical_share
        self.lexical_weights = dict(
            DEFAULT_PROFILE.rerank_lexical_weights if lexical_weights is None else lexical_weights
        )
        if callable(query_vector):
            self._qvec = query_vector
        else:
            embedder = query_vector
            self._qvec = lambda q: np.asarray(embedder.embed_queries([q]), dtype=np.float32)[0]
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        self._positions: tuple[Any, dict[str, int], np.ndarray] | None = None
        self._means: dict[str, tuple[Any, dict[str, np.ndarray], np.ndarray]] = {}
        # (row, language) -> the chunk vector less its language's mean, unit length (xdense)
        self._centred: dict[str, tuple[Any, LRU[tuple[int, str], np.ndarray]]] = {}
        self._firsts: tuple[Any, dict[tuple[str, str], str]] | None = None

    def features(
        self,
        query: str,
        hits: Sequence[Hit],
        audience: Audience = "public",
        *,
        page: bool = False,
    ) -> list[dict[str, float]]:
        """The feature values of each candidate, in the order given, for a caller of
        `audience` (whose chunks the language means of `xdense` are taken over); with `page`,
        also `page` (which only the learned order reads: finding each document's first chunk
        reads every chunk once per index generation)."""
        q = self._qvec(query)
        sentences = self.store.sentence_vectors(h.chunk.chunk_id for h in hits)
        positions = self._chunk_rows()
        means, overall = self._language_means(audience)
        centred = self._centred_rows(audience)
        qc = _unit(q - means.get(_query_language(query), overall))
        qterms = _terms(query)
        qcodes = _code_keys(query)
        out: list[dict[str, float]] = []
        best_rrf = max((float(h.signals.get("rrf", 0.0) or 0.0) for h in hits), default=0.0)
        firsts = self._first_chunks() if page else {}
        for h in hits:
            c = h.chunk
            dense = h.signals.get("dense")
            if dense is None:
                row = positions[1].get(c.chunk_id)
                dense = float(positions[2][row] @ q) if row is not None else 0.0
            found = sentences.get(c.chunk_id)
            maxsim = float((found[1] @ q).max()) if found is not None and len(found[0]) else dense
            maxsim = max(maxsim, dense)
            row = positions[1].get(c.chunk_id)
            xdense = 0.0
            if row is not None:  # the centred chunk vector is the query's own: kept
                unit = centred.get((row, c.meta.language))
                if unit is None:
                    unit = _unit(positions[2][row] - means.get(c.meta.language, overall))
                    centred.put((row, c.meta.language), unit)
                xdense = float(unit @ qc)
            bm25 = float(h.signals.get("bm25", 0.0) or 0.0)
            known = self.words.of(c)
            rrf = float(h.signals.get("rrf", 0.0) or 0.0)
            found_feats: dict[str, float] = {}
            if page:
                first = positions[1].get(firsts.get((c.doc_id, c.version), c.chunk_id))
                found_feats["page"] = (
                    float(positions[2][first] @ q) if first is not None else float(dense)
                )
            out.append(
                {
                    "maxsim": maxsim,
                    "dense": float(dense),
                    "xdense": (xdense + 1.0) / 2.0,
                    "bm25": bm25 / (bm25 + BM25_HALF) if bm25 > 0 else 0.0,
                    "coverage": len(qterms & known.text) / len(qterms) if qterms else 0.0,
                    "heading": len(qterms & known.heading) / len(qterms) if qterms else 0.0,
                    "code": len(qcodes & known.codes) / len(qcodes) if qcodes else 0.0,
                    "rrf": rrf / best_rrf if best_rrf > 0 else 0.0,
                    **found_feats,
                }
            )
        return out

    def weights_for(self, query: str, audience: Audience = "public") -> dict[str, float]:
        """The feature weights for `query`: fixed, or (with `lexical_share`) the lexical
        features' weights raised by `lexical_weights` x the query's BM25 share /
        `LEXICAL_NEUTRAL`: identifier queries lean on the words, paraphrase less; a share of
        0 (the retriever gives it for a question in another language than the collection, as
        `audience` sees it) keeps the fixed weights."""
        if self.lexical_share is None:
            return self.weights
        scale = self.lexical_share(query, audience) / LEXICAL_NEUTRAL
        return {
            **self.weights,
            **{n: self.weights.get(n, 0.0) + w * scale for n, w in self.lexical_weights.items()},
        }

    def score(
        self, feats: Mapping[str, float], weights: Mapping[str, float] | None = None
    ) -> float:
        weights = self.weights if weights is None else weights
        total = sum(weights.values()) or 1.0
        return sum(w * feats.get(name, 0.0) for name, w in weights.items()) / total

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: Audience = "public"
    ) -> list[Hit]:
        """The candidates in the order of the weighted mean (their `score`), or with an
        `order` model in the order of its probability (their `score`; the weighted mean, on
        the absolute scale the support gate's floors are set on, stays in `signals["rerank"]`)."""
        if not hits:
            return []
        if self.order is None:
            feats, support = self._weighed(query, hits, audience, page=False)
            keys = support
        else:
            feats, support, inputs = self.order_inputs(query, hits, audience)
            keys = [self.order.probability(x) for x in inputs]
        scored = sorted(
            zip(keys, support, range(len(hits)), hits, feats, strict=True),
            key=lambda t: (-t[0], t[2]),
        )
        return [
            replace(
                h,
                score=key,
                rank=r,
                method="rerank",
                signals={
                    **h.signals,
                    **{f"rr_{n}": v for n, v in f.items()},
                    "rerank": s,
                    **({"rr_order": key} if self.order is not None else {}),
                },
            )
            for r, (key, s, _, h, f) in enumerate(scored[:k], start=1)
        ]

    def order_inputs(
        self, query: str, hits: Sequence[Hit], audience: Audience = "public"
    ) -> tuple[list[dict[str, float]], list[float], list[dict[str, float]]]:
        """(features, weighted-mean scores, what a learned order reads) of each candidate."""
        feats, support = self._weighed(query, hits, audience, page=True)
        share = self.lexical_share(query, audience) if self.lexical_share else LEXICAL_NEUTRAL
        return feats, support, order_features(feats, support, hits, share)

    def _weighed(
        self, query: str, hits: Sequence[Hit], audience: Audience, *, page: bool
    ) -> tuple[list[dict[str, float]], list[float]]:
        """(features, weighted-mean score) of each candidate."""
        feats = self.features(query, hits, audience, page=page)
        weights = self.weights_for(query, audience)
        return feats, [self.score(f, weights) for f in feats]

    def _first_chunks(self) -> dict[tuple[str, str], str]:
        """(doc_id, version) -> the ID of its first chunk (the page's opening: a man page's
        NAME, a node's first paragraph), read again when the store changes."""
        generation = self.store.generation()
        if self._firsts is None or self._firsts[0] != generation:
            firsts: dict[tuple[str, str], tuple[int, str]] = {}
            for c in self.store.chunks():
                key = (c.doc_id, c.version)
                if key not in firsts or c.ordinal < firsts[key][0]:
                    firsts[key] = (c.ordinal, c.chunk_id)
            self._firsts = (generation, {k: v[1] for k, v in firsts.items()})
        return self._firsts[1]

    def _chunk_rows(self) -> tuple[Any, dict[str, int], np.ndarray]:
        ids, matrix = self.store.vectors()
        if self._positions is None or self._positions[0] is not ids:
            self._positions = (ids, {c: i for i, c in enumerate(ids)}, matrix)
        return self._positions

    def _centred_rows(self, audience: Audience) -> LRU[tuple[int, str], np.ndarray]:
        """The centred chunk vectors kept for `audience` (`CENTRED`), dropped with the means
        when the store's vectors change."""
        ids = self._chunk_rows()[0]
        found = self._centred.get(audience)
        if found is None or found[0] is not ids:
            found = self._centred[audience] = (ids, LRU(CENTRED))
        return found[1]

    def _language_means(
        self, audience: Audience = "public"
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Mean chunk vector per language (of languages with enough chunks) and overall, over
        the chunks `audience` may see (every version), taken in chunk ID order."""
        ids, positions, matrix = self._chunk_rows()
        found = self._means.get(audience)
        if found is None or found[0] is not ids:
            dim = matrix.shape[1] if matrix.ndim == 2 else 0
            allowed = self.store.allowed_ids(Filters(audience=audience))
            languages = {c.chunk_id: c.meta.language for c in self.store.chunks()}
            seen = sorted(cid for cid in allowed if cid in positions)
            overall = (
                matrix[[positions[cid] for cid in seen]].mean(axis=0)
                if seen
                else np.zeros(dim, dtype=np.float32)
            )
            by_lang: dict[str, list[int]] = {}
            for cid in seen:
                by_lang.setdefault(languages.get(cid, ""), []).append(positions[cid])
            means = {
                lang: matrix[rows].mean(axis=0)
                for lang, rows in by_lang.items()
                if lang and len(rows) >= MIN_LANGUAGE_CHUNKS
            }
            found = self._means[audience] = (ids, means, overall)
        return found[1], found[2]


# ---- LLM reranker ---------------------------------------------------------------------------


def p_yes(top_logprobs: Mapping[str, float], text: str) -> float:
    """P(yes) from first-token log-probabilities ("Yes", "yes", " YES" … summed against the
    "no" forms); from the text (yes 1, no 0, else 0.5) when there are none."""
    yes = sum(math.exp(v) for t, v in top_logprobs.items() if t.strip().lower() == "yes")
    no = sum(math.exp(v) for t, v in top_logprobs.items() if t.strip().lower() == "no")
    if yes + no > 0:
        return yes / (yes + no)
    first = words(text)[:1]
    if first == ["yes"] or first == ["oui"]:
        return 1.0
    if first == ["no"] or first == ["non"]:
        return 0.0
    return 0.5


class LLMReranker:
    """Pointwise yes/no relevance by a language model, for short lists (`max_candidates`);
    candidates past that keep their order after the judged ones."""

    name = "llm-yes-no"

    def __init__(
        self, provider: Provider, *, max_candidates: int = 10, max_chars: int = 2000
    ) -> None:
        self.provider = provider
        self.max_candidates = max_candidates
        self.max_chars = max_chars

    def request(self, query: str, hit: Hit) -> ModelRequest:
        template, prompt_id = load_prompt("rerank")
        passage = embed_text(hit.chunk)[: self.max_chars]
        text = template.replace("$question", query).replace("$passage", passage)
        return ModelRequest(
            messages=(Message("user", text),),
            max_tokens=1,
            purpose="rerank",
            prompt_id=prompt_id,
            chunk_ids=(hit.chunk.chunk_id,),
            logprobs=True,
            question=query,
            passages=((hit.chunk.chunk_id, hit.chunk.text),),
        )

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: Audience = "public"
    ) -> list[Hit]:
        """Each candidate judged on its own (`audience` changes nothing)."""
        head, tail = list(hits[: self.max_candidates]), list(hits[self.max_candidates :])
        scored: list[tuple[float, int, Hit]] = []
        for i, h in enumerate(head):
            try:
                done = self.provider.complete(self.request(query, h))
                p = p_yes(done.top_logprobs, done.text)
            except ProviderError:
                p = 0.5  # unknown: keeps its place among the undecided
            scored.append((p, i, h))
        scored.sort(key=lambda t: (-t[0], t[1]))
        out = [
            replace(h, score=p, rank=r, method="rerank", signals={**h.signals, "p_yes": p})
            for r, (p, _, h) in enumerate(scored, start=1)
        ]
        for h in tail:
            out.append(replace(h, score=0.0, rank=len(out) + 1, method="rerank"))
        return out[:k]


# ---- cross-encoder --------------------------------------------------------------------------


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local folder (or a name already cached)."""

    def __init__(
        self, name_or_path: str, *, max_length: int = 512, batch_size: int = 32, device="cpu"
    ) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise TetherError(
                "the cross-encoder reranker needs sentence-transformers (and torch):"
                f" {install_hint('rerank')}"
            ) from exc
        try:
            self.model = CrossEncoder(name_or_path, max_length=max_length, device=device)
        except Exception as exc:  # the library raises OSError, ValueError, HF errors …
            raise TetherError(f"cannot load the cross-encoder {name_or_path!r}: {exc}") from exc
        self.name = f"cross-encoder:{re.sub(r'.*/', '', str(name_or_path).rstrip('/'))}"
        self.batch_size = batch_size

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: Audience = "public"
    ) -> list[Hit]:
        """Each (query, candidate) pair scored on its own (`audience` changes nothing)."""
        if not hits:
            return []
        pairs = [(query, embed_text(h.chunk)) for h in hits]
        raw = np.asarray(
            self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False),
            dtype=np.float64,
        )
        if raw.ndim > 1:  # a model with several labels: the last is "relevant"
            raw = raw[:, -1]
        order = sorted(range(len(hits)), key=lambda i: (-raw[i], i))
        return [
            replace(
                hits[i],
                score=float(raw[i]),
                rank=r,
                method="rerank",
                signals={**hits[i].signals, "cross_encoder": float(raw[i])},
            )
            for r, i in enumerate(order[:k], start=1)
        ]
