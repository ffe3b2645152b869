"""Training the learned rerank order (`tether.retrieval.rerank.order_features`): queries on
tuned-on collections, the rerank method's candidates for each with what the order reads, a
logistic regression, the model file.

One command rebuilds `src/tether/retrieval/rerank_model.json` (`make rerank-model`):

    python scripts/train_rerank_order.py [--corpora DIR] [--cache DIR] [--out PATH]

Queries, all on collections already tuned on:
- the labelled question sets of the Python, PostgreSQL, SQLite and Git manuals
  (`bench/corpora/NAME/questions.jsonl`), the bundled question set and Larkfield's;
- pseudo-queries made from each collection's own passages (`pseudo_queries`, doc2query-style
  without a model): a section's heading without its number ("Invoking the msgfmt Program"),
  which names what the section is for; and a sentence of a passage with the words of its
  title and headings removed and every second remaining word dropped, so that the words
  left seldom match the passage the way a user's own words would not. The flex manual (no
  question set) gives pseudo-queries only. The held-out manuals (gettext, MkDocs) are never
  read here.

Each query is searched as the rerank method searches (`Retriever.rerank_candidates`); a
candidate is labelled relevant when it matches one of the query's relevant passages
(`tether.evaluation.questions.matches`). Queries whose candidates hold no relevant passage
teach the order nothing and are counted, not used.

Fitting: scikit-learn's LogisticRegression on standardised features (`C` chosen from a short
list), pointwise. Chosen by leave-one-collection-out: each collection's queries are ordered by
a model fitted on the other collections, and hit@5 and MRR within the candidates are compared
with the weighted mean's order (`sentence`); the record of that comparison goes into the
model's `trained` field with the counts and seconds.

What it cannot do: a pseudo-query is not a user's question (a heading is short and a thinned
sentence is ungrammatical); the order can only choose among the candidates the hybrid brings,
so a passage neither list finds stays lost; and a linear model of these features learns how
much each signal counts, nothing about a subject's vocabulary.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tether.evaluation.questions import matches
from tether.linear import LinearModel, fit_scaled
from tether.protocols import SearchableStore
from tether.retrieval.rerank import ORDER_FEATURES, SentenceReranker
from tether.text import content_words, sentences
from tether.types import Audience, Chunk, Filters, Question, Relevant

if TYPE_CHECKING:
    from tether.retrieval.retriever import Retriever

SEED = 11
PSEUDO_PER_KIND = 60  # heading and thinned queries per collection
C_CHOICES = (0.03, 0.1, 0.3, 1.0)
_NUMBERING = re.compile(r"^\s*(?:[A-Z]\.|\d+\.)?(?:\d+\.)*\d*\s+")


@dataclass(frozen=True)
class Query:
    """One query's candidates: what the order reads, the weighted mean, the labels."""

    set: str
    id: str
    kind: str  # the question's kind, or "pseudo-heading" / "pseudo-thinned"
    inputs: tuple[dict[str, float], ...]
    support: tuple[float, ...]
    relevant: tuple[bool, ...]


def _heading_query(chunk: Chunk) -> str | None:
    if not chunk.heading_path:
        return None
    head = _NUMBERING.sub("", chunk.heading_path[-1]).strip().rstrip("¶").strip()
    return head if len(content_words(head)) >= 2 else None


def _thinned_query(chunk: Chunk, rng: random.Random) -> tuple[str, str] | None:
    """(query, the sentence it came from) or None when the chunk has no sentence to use."""
    heads = {w.lower() for w in content_words(" ".join((chunk.meta.title, *chunk.heading_path)))}
    found = [
        chunk.text[a:b].strip()
        for a, b in sentences(chunk.text)
        if 8 <= len(chunk.text[a:b].split()) <= 40
    ]
    if not found:
        return None
    sentence = rng.choice(found)
    kept = [w for w in content_words(sentence) if w.lower() not in heads][::2]
    if len(kept) < 3:
        return None
    return " ".join(kept), sentence


def pseudo_queries(store: SearchableStore, name: str, per_kind: int = PSEUDO_PER_KIND) -> list[Question]:
    """Pseudo-queries from a collection's public passages (see the module docstring), each
    with the passage it was made from as its relevant passage; stable for a given index."""
    rng = random.Random(f"{SEED}:{name}")
    allowed = store.allowed_ids(Filters(audience="public"))
    chunks = sorted(
        (c for c in store.chunks() if c.chunk_id in allowed and len(c.text.split()) >= 20),
        key=lambda c: c.chunk_id,
    )
    rng.shuffle(chunks)
    out: list[Question] = []
    seen: set[str] = set()
    headings = 0
    for c in chunks:
        head = _heading_query(c)
        if head and headings < per_kind and head.lower() not in seen:
            seen.add(head.lower())
            headings += 1
            rel = Relevant(doc_id=c.doc_id, section=c.heading_path[-1])
            out.append(
                Question(f"{name}-h{headings}", head, kind="pseudo-heading", relevant=(rel,))
            )
        if headings >= per_kind:
            break
    thinned = 0
    for c in chunks:
        made = _thinned_query(c, rng)
        if made is None:
            continue
        query, sentence = made
        thinned += 1
        evidence = " ".join(sentence.split()[:12])
        rel = Relevant(doc_id=c.doc_id, evidence=evidence)
        out.append(Question(f"{name}-t{thinned}", query, kind="pseudo-thinned", relevant=(rel,)))
        if thinned >= per_kind:
            break
    return out


def candidate_queries(
    name: str,
    retriever: Retriever,
    questions: Iterable[Question],
    audience: Audience | None = None,
) -> tuple[list[Query], int]:
    """Each question's rerank candidates read for the order; (those whose candidates hold a
    relevant passage, how many held none)."""
    reranker = retriever.reranker
    if not isinstance(reranker, SentenceReranker):
        raise TypeError("the learned order is trained on the sentence reranker's features")
    out: list[Query] = []
    missed = 0
    for q in questions:
        if not q.relevant or q.abstain:
            continue
        filters = Filters(as_of=q.as_of, audience=audience or q.audience)
        head, _ = retriever.rerank_candidates(q.question, 5, filters)
        labels = tuple(any(matches(h.chunk, r) for r in q.relevant) for h in head)
        if not any(labels):
            missed += 1
            continue
        _, support, inputs = reranker.order_inputs(q.question, head, filters.audience)
        out.append(Query(name, q.id, q.kind, tuple(inputs), tuple(support), labels))
    return out, missed


def _matrix(queries: Sequence[Query]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array(
        [[row.get(f, 0.0) for f in ORDER_FEATURES] for q in queries for row in q.inputs],
        dtype=np.float64,
    )
    y = np.array([int(label) for q in queries for label in q.relevant])
    return x, y


def _first_rank(keys: Sequence[float], labels: Sequence[bool]) -> int:
    order = sorted(range(len(keys)), key=lambda i: (-keys[i], i))
    return next(r for r, i in enumerate(order, start=1) if labels[i])


def ranks_summary(ranks: Sequence[int]) -> dict[str, float]:
    """hit@5 and MRR of first-relevant ranks (within the candidates)."""
    n = len(ranks) or 1
    return {
        "n": len(ranks),
        "hit5": round(sum(r <= 5 for r in ranks) / n, 4),
        "mrr": round(sum(1.0 / r for r in ranks) / n, 4),
    }


def leave_one_out(queries: Sequence[Query], c: float) -> dict[str, dict[str, dict[str, float]]]:
    """For each collection: the order fitted on the others against the weighted mean, on its
    real questions and on its pseudo-queries."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in sorted({q.set for q in queries}):
        train = [q for q in queries if q.set != name]
        test = [q for q in queries if q.set == name]
        scaler, lr = fit_scaled(*_matrix(train), c, max_iter=4000)
        for part, chosen in (
            ("real", [q for q in test if not q.kind.startswith("pseudo")]),
            ("pseudo", [q for q in test if q.kind.startswith("pseudo")]),
            ("paraphrase", [q for q in test if q.kind == "paraphrase"]),
        ):
            if not chosen:
                continue
            learned, mean = [], []
            for q in chosen:
                x = np.array([[row.get(f, 0.0) for f in ORDER_FEATURES] for row in q.inputs])
                keys = lr.decision_function(scaler.transform(x))
                learned.append(_first_rank(list(keys), q.relevant))
                mean.append(_first_rank(q.support, q.relevant))
            out[f"{name}/{part}"] = {
                "learned": ranks_summary(learned),
                "weighted mean": ranks_summary(mean),
            }
    return out


def _pooled(table: dict[str, dict[str, dict[str, float]]], part: str, who: str) -> float:
    """The question-weighted mean MRR of one part over the collections."""
    rows = [v[who] for k, v in table.items() if k.endswith("/" + part)]
    n = sum(r["n"] for r in rows)
    return sum(r["mrr"] * r["n"] for r in rows) / n if n else 0.0


def fit(queries: Sequence[Query], missed: dict[str, int], seconds_so_far: float) -> LinearModel:
    """The order fitted on every query, with `C` chosen by leave-one-collection-out MRR on
    the real questions; its `trained` record holds the comparison for every `C`."""
    began = time.perf_counter()
    tables = {c: leave_one_out(queries, c) for c in C_CHOICES}
    best = max(C_CHOICES, key=lambda c: (_pooled(tables[c], "real", "learned"), -c))
    scaler, lr = fit_scaled(*_matrix(queries), best, max_iter=4000)
    counts: dict[str, int] = {}
    for q in queries:
        key = f"{q.set}/{'pseudo' if q.kind.startswith('pseudo') else 'real'}"
        counts[key] = counts.get(key, 0) + 1
    trained = {
        "queries": counts,
        "candidates": int(sum(len(q.inputs) for q in queries)),
        "no_relevant_candidate": missed,
        "C": best,
        "leave_one_collection_out": tables[best],
        "pooled_mrr": {
            str(c): {
                part: {
                    who: round(_pooled(tables[c], part, who), 4)
                    for who in ("learned", "weighted mean")
                }
                for part in ("real", "pseudo", "paraphrase")
            }
            for c in C_CHOICES
        },
        "seconds": round(seconds_so_far + time.perf_counter() - began, 1),
    }
    return LinearModel.fitted(ORDER_FEATURES, scaler, lr, 0.5, trained)
