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
deterministic sample (by a hash of the chunk ID) of at most `n` of each is searched by BM25
and by dense; the BM25 share of the fusion is then measured MRR@10 of BM25 / (BM25 + dense),
shrunk halfway towards the Profile's prior and kept within 0.2..0.6. The result is stored in
the index (meta `fusion_calibration`, JSON: the share, the two MRRs, what it was fitted on and
when) and read by `tether.app.retriever_for`.

What it cannot do: pseudo-questions are not users' questions (they share more words with
their passage than a paraphrase does, which favours BM25: hence the shrinking); a collection
with fewer than `MIN_QUESTIONS` usable questions keeps the Profile's prior; it needs chunk
vectors and the embedder that made them.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tether.protocols import Store
from tether.text import content_words, sentences
from tether.types import Chunk, Filters

META_KEY = "fusion_calibration"
MIN_QUESTIONS = 20
DEPTH = 10
SHRINK = 0.5  # halfway between the measured share and the prior
LOW, HIGH = 0.2, 0.6
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


def calibrate_fusion(store: Store, retriever: Any, prior: float, n: int = 40) -> dict[str, Any]:
    """Measure the BM25 share on pseudo-questions (module docstring), store it, return it."""
    public = store.allowed_ids(PUBLIC)
    chunks = [c for c in store.chunks() if c.chunk_id in public]
    questions = heading_questions(chunks, n) + sentence_questions(chunks, n)
    record: dict[str, Any] = {"lexical_prior": prior, "questions": len(questions)}
    if len(questions) < MIN_QUESTIONS or not store.has_vectors():
        record["fitted_on"] = f"nothing: {len(questions)} pseudo-questions (the prior kept)"
    else:
        bm25 = dense = 0.0
        for text, targets in questions:
            lexical = [cid for cid, _ in store.lexical_ranking(text, DEPTH, PUBLIC)]
            semantic = [
                cid for cid, _ in store.search_dense(retriever.query_vector(text), DEPTH, PUBLIC)
            ]
            bm25 += _mrr(lexical, targets)
            dense += _mrr(semantic, targets)
        bm25, dense = bm25 / len(questions), dense / len(questions)
        measured = bm25 / (bm25 + dense) if bm25 + dense > 0 else prior
        share = min(HIGH, max(LOW, prior + SHRINK * (measured - prior)))
        record.update(
            lexical_prior=round(share, 3),
            bm25_mrr=round(bm25, 3),
            dense_mrr=round(dense, 3),
            fitted_on=(
                f"{len(questions)} pseudo-questions from this collection's public headings"
                f" and sentences, {datetime.now(UTC):%Y-%m-%d}"
            ),
        )
    store.set_meta({META_KEY: json.dumps(record)})
    return record


def load_calibration(store: Store) -> dict[str, Any] | None:
    """The calibration stored in the index, or None (none made, or unreadable)."""
    raw = store.meta_value(META_KEY)
    if not raw:
        return None
    try:
        found = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) and "lexical_prior" in found else None
