"""Fusion calibrated on the collection itself: how much BM25 should count, measured at ingest.

`calibrate_fusion(store, retriever)` makes pseudo-questions from the collection, with no
labels and no model call:
- heading questions: each distinct section heading of two or more words that no other
  document repeats ("Examples", "Parameters" are left out), trailing permalink signs removed;
  a chunk under that heading in that document answers it;
- sentence questions: one sentence of 8 to 30 words from a chunk, with every word that also
  stands in the chunk's headings or title removed and only every second word of the rest
  kept (so a question shares some words with its passage, not the whole sentence); that
  chunk answers it.
Only public chunks are used (a staff passage must not move what the public sees). A
deterministic sample (by a hash of the chunk ID) of at most `SENTENCES` (200) sentence
questions is searched by BM25 and by dense, and MRR@10 measured. The BM25 weight of the
fusion (dense weighs 1) follows the
sentence questions' ratio rho = dense MRR / BM25 MRR: `exp(slope x (center - rho))`, within
`WEIGHT_BOUNDS` (the Profile's `fusion_ratio_center` 0.68 and `fusion_ratio_slope` 12). Both
lists find a thinned sentence's own passage easily, BM25 more so (it matches the very words),
so rho says how far the embedder keeps up on this collection's language: of the four
collections the rule was fitted on it was lowest on the PostgreSQL manual (where dense search
is weakest) and highest on the bundled set (where it is strongest), and the weight that made
the hybrid at least as good as the better of its two lists fell as rho rose, roughly
log-linear in rho (each collection's fit: bench/retrieval/bench_real_corpora.py,
bench/results/real_corpora.md). Heading questions are counted, no longer searched: they did
not order the collections (a heading is as easy for both lists), and searching them was a
sizeable share of the calibration's time. The result is stored in the index (meta
`fusion_calibration`, JSON: the weight, its share, the MRRs, what it was fitted on and when)
and read by `tether.app.retriever_for`; a record written by an older rule (no
`lexical_weight`) reads as none, so the next ingest measures again.

What it cannot do: pseudo-questions are not users' questions (they share more words with
their passage than a paraphrase does, which favours BM25: the rule maps rho, it does not use
the fused MRR of the pseudo-questions, which asks for a large BM25 weight everywhere); the
centre and slope come from four collections and one embedder (multilingual-e5-small); a
collection with fewer than `MIN_QUESTIONS` sentence questions keeps the Profile's prior; it
needs chunk vectors and the embedder that made them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tether.config import DEFAULT_PROFILE
from tether.protocols import SearchableStore, Searcher, Store, StoreReader
from tether.text import content_words, sentences
from tether.types import Chunk, Filters

META_KEY = "fusion_calibration"
MIN_QUESTIONS = 20
DEPTH = 10
SENTENCES = 200  # sentence questions: 40 left rho varying too much from sample to sample
WEIGHT_BOUNDS = (0.33, 4.0)  # BM25 weight against dense 1: from a third to four times
PUBLIC = Filters()  # public chunks only: a staff passage must not move what the public sees


def _order(chunk_id: str) -> str:
    return hashlib.sha256(chunk_id.encode()).hexdigest()


def _heading(text: str) -> str:
    return text.rstrip().rstrip("\u00b6").rstrip()


def heading_questions(chunks: Sequence[Chunk], n: int) -> list[tuple[str, set[str]]]:
    """(heading text, IDs of the chunks under it in its document), at most n."""
    by_heading: dict[tuple[str, str], set[str]] = {}
    for c in chunks:
        if c.heading_path:
            by_heading.setdefault((c.doc_id, _heading(c.heading_path[-1])), set()).add(c.chunk_id)
    repeated = Counter(h.casefold() for _, h in by_heading)
    found = [
        (h, ids)
        for (_, h), ids in by_heading.items()
        if len(content_words(h)) >= 2 and repeated[h.casefold()] == 1
    ]
    found.sort(key=lambda item: _order(min(item[1])))
    return found[:n]


def sentence_questions(chunks: Sequence[Chunk], n: int) -> list[tuple[str, set[str]]]:
    """(a thinned sentence of a chunk, {that chunk's ID}), at most n."""
    found: list[tuple[str, set[str]]] = []
    for c in sorted(chunks, key=lambda c: _order(c.chunk_id)):
        heading_words = set(content_words(" ".join((c.meta.title, *c.heading_path))))
        for start, end in sentences(c.text):
            words = c.text[start:end].split()
            if not 8 <= len(words) <= 30:
                continue
            kept = [w for w in words if w.casefold().strip(".,;:()") not in heading_words][::2]
            if len(kept) >= 4:
                found.append((" ".join(kept), {c.chunk_id}))
                break
        if len(found) >= n:
            break
    return found


def _mrr(ranked: Sequence[str], targets: set[str]) -> float:
    for rank, cid in enumerate(ranked[:DEPTH], start=1):
        if cid in targets:
            return 1.0 / rank
    return 0.0


def fusion_weight(ratio: float, center: float | None = None, slope: float | None = None) -> float:
    """The BM25 weight (dense 1) for a dense/BM25 MRR ratio on sentence questions (module
    docstring), within `WEIGHT_BOUNDS`."""
    center = DEFAULT_PROFILE.fusion_ratio_center if center is None else center
    slope = DEFAULT_PROFILE.fusion_ratio_slope if slope is None else slope
    low, high = WEIGHT_BOUNDS
    return min(high, max(low, math.exp(slope * (center - ratio))))


def _mrrs(
    store: SearchableStore, retriever: Searcher, questions: Sequence[tuple[str, set[str]]]
) -> tuple[float, float]:
    """(BM25 MRR@10, dense MRR@10) over `questions`."""
    bm25 = dense = 0.0
    if hasattr(retriever, "warm_queries"):  # their vectors in batches, not one by one
        retriever.warm_queries([text for text, _ in questions])
    for text, targets in questions:
        lexical = [cid for cid, _ in store.lexical_ranking(text, DEPTH, PUBLIC)]
        semantic = [
            cid for cid, _ in store.search_dense(retriever.query_vector(text), DEPTH, PUBLIC)
        ]
        bm25 += _mrr(lexical, targets)
        dense += _mrr(semantic, targets)
    n = max(1, len(questions))
    return bm25 / n, dense / n


def calibrate_fusion(
    store: Store, retriever: Searcher, prior: float, n: int = 40, sentences: int = SENTENCES
) -> dict[str, Any]:
    """Measure the BM25 weight on pseudo-questions (module docstring: at most `sentences`
    sentence questions, `n` heading questions), store it, return it. `prior` (a BM25 share)
    is kept when the collection gives too few questions."""
    public = store.allowed_ids(PUBLIC)
    chunks = [c for c in store.chunks() if c.chunk_id in public]
    headings = heading_questions(chunks, n)
    sentence = sentence_questions(chunks, sentences)
    record: dict[str, Any] = {
        "lexical_prior": prior,
        "lexical_weight": round(prior / (1.0 - prior), 3) if prior < 1 else WEIGHT_BOUNDS[1],
        "questions": len(sentence),
    }
    if len(sentence) < MIN_QUESTIONS or not store.has_vectors():
        record["fitted_on"] = f"nothing: {len(sentence)} sentence questions (the prior kept)"
    else:
        bm25, dense = _mrrs(store, retriever, sentence)
        ratio = dense / bm25 if bm25 > 0 else 1.0
        weight = fusion_weight(ratio)
        record.update(
            lexical_prior=round(weight / (1.0 + weight), 3),
            lexical_weight=round(weight, 3),
            sentence_ratio=round(ratio, 3),
            bm25_mrr=round(bm25, 3),
            dense_mrr=round(dense, 3),
            heading_questions=len(headings),
            fitted_on=(
                f"{len(sentence)} sentence questions from this collection's public passages"
                f" ({len(headings)} heading questions recorded),"
                f" {datetime.now(UTC):%Y-%m-%d}"
            ),
        )
    store.set_meta({META_KEY: json.dumps(record)})
    return record


def load_calibration(store: StoreReader) -> dict[str, Any] | None:
    """The calibration stored in the index, or None (none made, or unreadable)."""
    raw = store.meta_value(META_KEY)
    if not raw:
        return None
    try:
        found = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return valid_calibration(found)


def valid_calibration(found: Any) -> dict[str, Any] | None:
    """`found` when it is a calibration record of this rule (a weight and a share in 0..1),
    else None: written by the older rule, or damaged, it is measured at the next ingest."""
    if not isinstance(found, dict):
        return None
    weight, share = found.get("lexical_weight"), found.get("lexical_prior")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (weight, share))
    if not numbers or not 0 < share < 1:  # type: ignore[operator]
        return None
    return found
