"""Deep rerank: tether's reader rereads the top of the rerank list with the question.

`DeepReranker(reader, store, query_vector).rerank(query, hits, k)` takes the list the
sentence reranker made (`tether.retrieval.rerank`) and reads its top `depth` (10) candidates with
the reader's relevance head (`tether.embeddings.reader`: question and passage read together,
P(answers), P(on topic but not answering), P(unrelated)). What the reader sees of a passage is
the window that matters: its title and headings first, then its sentences best first by the
query's e5 cosine to each (the sentence vectors ingest stored), as many as fit in the 128
tokens the question leaves, put back in their own order.

The new order is by `combined`: `weight` x the reader's log-odds of "answers" (on topic counts
`on_topic` of a whole answer) plus the sentence reranker's score, rescaled to the same spread.
The weight and the depth are chosen on tuned-on sets only (see `DEPTH`; the deep rerank
against rerank on every set: bench/retrieval/bench_reader_rank.py, bench/results/reader_rank.md).
The candidates past `depth` keep their order below the reread ones; a standing rule the
retriever put into the top places (`signals["rule"]`) keeps its place. Each hit keeps the reader's
three probabilities in `signals` (`deep_answers`, `deep_on_topic`, `deep_unrelated`), which the
answerability judge and the extractive answerer read.

Audience: the reader reads one question and one passage at a time, so a passage's score does
not depend on any other passage; given the same candidates (the rerank list is the same for
a public caller whatever staff documents exist) the deep list is the same.

Costs: one encoder pass (6 layers, 128 tokens) per candidate (its time a pair:
bench/judge/bench_reader.py, bench/results/reader.md);
repeated (question, passage) pairs come from a bounded cache keyed by the passage's text.

What it cannot do: the reader is small (6 layers of multilingual-e5-small) and was trained on
helper-written question/passage pairs, not on any collection's own questions; it sees 128
tokens, so a passage whose answer is spread over many sentences is read in part; it cannot
add a passage the rerank list did not bring (recall past the top `depth` is the hybrid's).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from tether import deadlines
from tether.linear import clipped_logit
from tether.lru import LRU
from tether.protocols import QuestionReader, Store
from tether.types import Audience, Chunk, Hit

# Chosen on the tuned-on sets (bench/experiments/deep_choose.py over bench/experiments/deep_candidates.py's dumps:
# the held-back fifth of the questions of the sets the reader was fine-tuned on, Larkfield and
# the Python manual whole; the best macro mean of hit@5 and MRR of 7 weights x 3 on-topic
# shares x 4 depths, above rerank's; bench/results/reader_rank.md)
DEPTH = 10  # candidates reread: 10 of rerank's top 20 (20 was no better and costs twice)
WEIGHT = 1.0  # the reader's log-odds against the rerank score's, rescaled to one spread
ON_TOPIC = 0.0  # the share of a whole answer an on-topic passage counts for
CACHE_PAIRS = 4096
_logit = clipped_logit


def window_title(chunk: Chunk) -> str:
    """What the reader reads first of a passage: its document's title and its headings."""
    parts = [chunk.meta.title, *chunk.heading_path]
    seen: list[str] = []
    for p in parts:
        p = (p or "").strip()
        if p and p not in seen:
            seen.append(p)
    return " > ".join(seen)


class DeepReranker:
    """See the module docstring. `reader`: a `QuestionReader`; `query_vector(query)`: the
    query's unit e5 vector (the retriever's, cached), to order a passage's sentences."""

    name = "deep"

    def __init__(
        self,
        reader: QuestionReader,
        store: Store,
        query_vector: Callable[[str], np.ndarray],
        *,
        depth: int = DEPTH,
        weight: float = WEIGHT,
        on_topic: float = ON_TOPIC,
    ) -> None:
        self.reader = reader
        self.store = store
        self.query_vector = query_vector
        self.depth = depth
        self.weight = weight
        self.on_topic = on_topic
        self._cache: LRU[tuple[str, str], tuple[float, float, float]] = LRU(CACHE_PAIRS)
        self._lock = threading.Lock()

    def evidence(self, query: str, hits: Sequence[Hit]) -> list[tuple[list[str], list[int]]]:
        """Each candidate as the reader gets it: (title and sentences, their order best
        first: the title, then the sentences by the query's cosine)."""
        found = self.store.sentence_vectors(h.chunk.chunk_id for h in hits)
        q: np.ndarray | None = None
        out: list[tuple[list[str], list[int]]] = []
        for h in hits:
            c = h.chunk
            title = window_title(c)
            held = found.get(c.chunk_id)
            if held is not None and len(held[0]):
                spans, vectors = held
                texts = [c.text[a:b].strip() for a, b in spans]
                if q is None:
                    q = self.query_vector(query)
                best = [int(i) for i in np.argsort(-(vectors @ q), kind="stable")]
            else:
                texts, best = [c.text.strip()], [0]
            sentences = [title, *texts] if title else texts
            order = [0, *(i + 1 for i in best)] if title else best
            out.append((sentences, order))
        return out

    def read(self, query: str, hits: Sequence[Hit]) -> list[tuple[float, float, float]]:
        """The reader's (answers, on topic, unrelated) for each candidate (cached by the
        question and the passage's text)."""
        keys = [
            (query, hashlib.blake2b(h.chunk.text.encode(), digest_size=12).hexdigest())
            for h in hits
        ]
        with self._lock:
            known = [self._cache.get(k) for k in keys]
        todo = [i for i, v in enumerate(known) if v is None]
        if todo:
            evidence = self.evidence(query, [hits[i] for i in todo])
            probs = self.reader.relevance(query, evidence)
            with self._lock:
                for i, row in zip(todo, probs, strict=True):
                    value = (float(row[0]), float(row[1]), float(row[2]))
                    known[i] = value
                    self._cache.put(keys[i], value)
        return [v for v in known if v is not None]

    def combined(self, probs: tuple[float, float, float], base: float, spread: float) -> float:
        """The deep score: the reader's log-odds of an answer plus the rerank score, the
        latter rescaled so that its spread over the candidates is the reader's (`spread`)."""
        answers = probs[0] + self.on_topic * probs[1]
        return self.weight * _logit(answers) + base * spread

    def rerank(
        self, query: str, hits: Sequence[Hit], k: int, audience: Audience = "public"
    ) -> list[Hit]:
        """The top `depth` of `hits` (already in rerank order) reread and reordered by the
        deep score; the rest below them in their order; the top k returned."""
        head, tail = list(hits[: self.depth]), list(hits[self.depth :])
        if not head:
            return []
        deadlines.check("the reader")
        probs = self.read(query, head)
        deadlines.check("the reader's order")
        read = [
            replace(h, method="deep", signals={**h.signals, **_named(p)})
            for h, p in zip(head, probs, strict=True)
        ]
        # a standing rule the retriever put into the top places keeps its place
        pinned = {i: h for i, h in enumerate(read) if "rule" in h.signals}
        free = [(h, p) for h, p in zip(read, probs, strict=True) if "rule" not in h.signals]
        base = [float(h.signals.get("rerank", h.score)) for h, _ in free]
        reader = [_logit(p[0] + self.on_topic * p[1]) for _, p in free]
        spread = _spread(reader) / max(_spread(base), 1e-6) if len(free) > 1 else 0.0
        scored = sorted(
            (
                (self.combined(p, b, spread), i, h)
                for i, ((h, p), b) in enumerate(zip(free, base, strict=True))
            ),
            key=lambda t: (-t[0], t[1]),
        )
        out = [replace(h, score=s, signals={**h.signals, "deep": s}) for s, _, h in scored]
        for i in sorted(pinned):
            at = min(i, len(out))
            score = out[at].score if at < len(out) else (out[-1].score if out else 0.0)
            out.insert(at, replace(pinned[i], score=score))
        floor = min((h.score for h in out), default=0.0)
        for j, h in enumerate(tail, start=1):
            out.append(replace(h, score=floor - j * 1e-6, method="deep"))
        return [replace(h, rank=r) for r, h in enumerate(out[:k], start=1)]


def _named(p: tuple[float, float, float]) -> dict[str, float]:
    return {"deep_answers": p[0], "deep_on_topic": p[1], "deep_unrelated": p[2]}


def _spread(values: Sequence[float]) -> float:
    """The standard deviation of `values` (0 for fewer than two)."""
    if len(values) < 2:
        return 0.0
    return float(np.std(np.asarray(values, dtype=np.float64)))
