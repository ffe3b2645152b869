"""Which sentences the contradiction finder compares: candidate pairs of sentences of
different documents (same language), each pair once as (i, j) with i < j.

- `vector_pairs`: each sentence holding a number or a polarity cue with its `NEIGHBOURS`
  nearest sentences of other documents at `MIN_COSINE` or more, by sentence vectors;
- `lexical_pairs`: ... with the sentences sharing most rare content words (so an index
  without vectors still gets pairs);
- `slot_pairs`: each sentence with the sentences of other documents holding a number of the
  same unit with another value (money, days, GB, attempts...), nearest first, at most
  `SLOT_NEIGHBOURS` of them at `SLOT_COSINE` or more: the pairs a reworded number conflict
  is looked for in.

The vectors (`Vectors.build`) are the index's sentence vectors (`Store.sentence_vectors`),
else the `embedder`'s vectors of those sentences (embedded once: the slow part), else none.
Cost: matrix products in blocks of 512 rows; nothing is loaded when the index has vectors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tether.health.contradiction_units import Unit
from tether.protocols import Embedder, SearchableStore
from tether.text import sentence_text
from tether.types import Progress

__all__ = ["Vectors", "lexical_pairs", "slot_pairs", "vector_pairs"]

NEIGHBOURS = 8  # nearest sentences of other documents by vector, per sentence
LEXICAL_NEIGHBOURS = 6  # ... and by rare shared content words
MIN_COSINE = 0.80  # a vector neighbour must be at least this close (multilingual-e5-small)
SLOT_NEIGHBOURS = 20  # sentences with a number of the same unit, per sentence...
SLOT_COSINE = 0.80  # ... at least this close
_COMMON_DF = 0.05  # a content word in more than this share of the sentences is not "rare"
_BLOCK = 512

Pair = tuple[int, int, float]


@dataclass
class Vectors:
    """The units' sentence vectors: `have` (unit indexes with a vector, in row order),
    `matrix` (unit-length rows), `row` (unit index → row)."""

    have: list[int]
    matrix: np.ndarray
    row: dict[int, int]
    chunks: dict[str, np.ndarray]  # chunk_id → its chunk vector (unit length), when stored

    @classmethod
    def build(
        cls, store: SearchableStore, units: list[Unit], embedder: Embedder | None, step: Progress
    ) -> Vectors | None:
        """The index's sentence vectors by span, the rest embedded by `embedder` when one is
        given; None when fewer than two units have one."""
        by_chunk = (
            store.sentence_vectors({u.chunk.chunk_id for u in units}) if store.has_vectors() else {}
        )
        rows: dict[int, np.ndarray] = {}
        for i, u in enumerate(units):
            spans, matrix = by_chunk.get(u.chunk.chunk_id, ([], None))
            if matrix is not None and (u.start, u.end) in spans:
                rows[i] = matrix[spans.index((u.start, u.end))]
        missing = [i for i in range(len(units)) if i not in rows]
        if missing and embedder is not None:
            step("embed sentences", 0, len(missing))
            texts = [sentence_text(units[i].chunk, units[i].start, units[i].end) for i in missing]
            for i, vec in zip(missing, embedder.embed_passages(texts), strict=True):
                rows[i] = np.asarray(vec, dtype=np.float32)
            step("embed sentences", len(missing), len(missing))
        if len(rows) < 2:
            return None
        have = sorted(rows)
        matrix = np.stack([rows[i] for i in have]).astype(np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        chunks = {}
        if store.has_vectors():
            for cid, vec in store.vectors_of({u.chunk.chunk_id for u in units}).items():
                v = np.asarray(vec, dtype=np.float32)
                chunks[cid] = v / max(float(np.linalg.norm(v)), 1e-9)
        return cls(have, matrix, {i: r for r, i in enumerate(have)}, chunks)

    def cosine(self, i: int, j: int) -> float:
        """The cosine of two units' vectors; NaN when either has none."""
        a, b = self.row.get(i), self.row.get(j)
        if a is None or b is None:
            return math.nan
        return float(self.matrix[a] @ self.matrix[b])

    def chunk_cosine(self, a: Unit, b: Unit) -> float:
        """The cosine of the two sentences' chunks (their sections' subjects); NaN when
        either has no chunk vector."""
        x, y = self.chunks.get(a.chunk.chunk_id), self.chunks.get(b.chunk.chunk_id)
        return math.nan if x is None or y is None else float(x @ y)


def _query(u: Unit) -> bool:
    """A sentence whose neighbours are looked for: one holding a number or a polarity cue
    (the other side of a rule conflict may hold neither)."""
    return bool(u.slots) or u.polar


def _nearest(
    units: list[Unit],
    vectors: Vectors,
    members: list[int],
    queries: list[int],
    k: int,
    floor: float,
    other_language: bool = False,
) -> set[Pair]:
    """(i, j, cosine) for each query's `k` nearest members of other documents (same language,
    or with `other_language` another one) at `floor` or more; `members` and `queries` are
    unit indexes with vectors."""
    out: set[Pair] = set()
    k = min(k, len(members) - 1)
    if k <= 0 or not queries:
        return out
    rows = np.array([vectors.row[i] for i in members], dtype=np.int64)
    sub = vectors.matrix[rows]
    docs = np.array([hash(units[i].doc) for i in members])
    langs = np.array([hash(units[i].chunk.meta.language) for i in members])
    where = {i: n for n, i in enumerate(members)}
    q_pos = np.array([where[i] for i in queries], dtype=np.int64)
    for lo in range(0, len(q_pos), _BLOCK):
        block = q_pos[lo : lo + _BLOCK]
        sims = sub[block] @ sub.T
        other = langs[block][:, None] != langs[None, :]
        sims[(docs[block][:, None] == docs[None, :]) | (~other if other_language else other)] = -1
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, row in enumerate(top):
            for c in row:
                cos = float(sims[r, c])
                if cos >= floor:
                    a, b = members[int(block[r])], members[int(c)]
                    out.add((min(a, b), max(a, b), cos))
    return out


def vector_pairs(units: list[Unit], vectors: Vectors | None) -> set[Pair]:
    """Each sentence with a number or a polarity cue and its nearest sentences of other
    documents (see the module docstring)."""
    if vectors is None:
        return set()
    queries = [i for i in vectors.have if _query(units[i])]
    return _nearest(units, vectors, vectors.have, queries, NEIGHBOURS, MIN_COSINE)


def cross_language_pairs(units: list[Unit], vectors: Vectors | None) -> set[Pair]:
    """Each sentence with a number or a polarity cue and its nearest sentences of other
    documents in another language (e5's vectors are multilingual): candidates for a reader
    that reads both languages; the word checks do not compare them."""
    if vectors is None or len({units[i].chunk.meta.language for i in vectors.have}) < 2:
        return set()
    queries = [i for i in vectors.have if _query(units[i])]
    return _nearest(
        units, vectors, vectors.have, queries, NEIGHBOURS, MIN_COSINE, other_language=True
    )


def slot_pairs(units: list[Unit], vectors: Vectors | None) -> set[Pair]:
    """Pairs of sentences of other documents holding a number of one unit (see the module
    docstring); the values are compared by the check."""
    if vectors is None:
        return set()
    by_unit: dict[str, list[int]] = {}
    for i in vectors.have:
        for unit in {s.unit for s in units[i].slots if s.unit}:
            by_unit.setdefault(unit, []).append(i)
    out: set[Pair] = set()
    for members in by_unit.values():
        if len({units[i].doc for i in members}) > 1:
            out |= _nearest(units, vectors, members, members, SLOT_NEIGHBOURS, SLOT_COSINE)
    return out


def lexical_pairs(units: list[Unit]) -> set[Pair]:
    """(i, j, NaN) with i < j: each sentence's sentences of other documents (same language)
    sharing most rare content words (weighted by rarity), at least two of them."""
    postings: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        for s in u.content:
            postings.setdefault(s, []).append(i)
    cap = max(50, int(_COMMON_DF * len(units)))
    out: set[Pair] = set()
    for i, u in enumerate(units):
        if not _query(u):
            continue
        scores: dict[int, float] = {}
        counts: dict[int, int] = {}
        for s in u.content:
            holders = postings[s]
            if len(holders) > cap:
                continue
            weight = math.log(len(units) / len(holders))
            for j in holders:
                if j != i and units[j].doc != u.doc:
                    scores[j] = scores.get(j, 0.0) + weight
                    counts[j] = counts.get(j, 0) + 1
        ranked = sorted(
            (
                j
                for j in scores
                if counts[j] >= 2 and units[j].chunk.meta.language == u.chunk.meta.language
            ),
            key=lambda j: -scores[j] / math.sqrt(len(units[j].stems) + 1),
        )[:LEXICAL_NEIGHBOURS]
        for j in ranked:
            out.add((min(i, j), max(i, j), math.nan))
    return out
