"""Retrieval metrics: hit@k, recall@k, precision@k, MRR and nDCG@k of one ranking, the
per-question row (`QuestionRun`), the whole result (`EvalResult`, with a JSON form) and the
means per method, kind and language.

What it cannot do: relevance is binary (a chunk matches a relevant passage or not), so a
partly relevant chunk counts fully; see the notes below for how each metric is defined.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence, Set
from dataclasses import dataclass

# ---- retrieval metrics ---------------------------------------------------------------------
#
# Relevance is by location (`matches`). For one question with R reachable relevant passages
# and a ranked list of chunks, where `covers[i]` is the set of passages chunk i matches:
# - hit@k: 1 when a chunk in the top k matches a relevant passage;
# - recall@k: the share of the R passages matched by some chunk in the top k;
# - precision@k: the share of the k places held by a chunk that matches a relevant passage;
# - MRR: 1 / the rank of the first matching chunk within the retrieved depth (50), else 0;
# - nDCG@k: binary gains by passage: a chunk gains 1 when it matches a passage no earlier chunk
#   matched (two halves of one section count once), ideal = min(R, k) gains at the top.
# A relevant passage is reachable when the index holds a chunk that matches it and the
# question's filters (as_of, audience) let that chunk through. Questions with no reachable
# passage are not scored (those that expect abstention and list no passage, and those whose
# passages are missing from the ingested documents or refused by the filters); the result
# says how many and why.

METRICS: tuple[str, ...] = ("hit", "recall", "precision", "mrr", "ndcg")
DEPTH = 50  # how deep each ranking is read (MRR, "ranked 17", "not in top 50")


def ranking_metrics(covers: Sequence[Set[int]], n_relevant: int, k: int) -> dict[str, float]:
    """hit@k, recall@k, precision@k, MRR (whole list) and nDCG@k of one ranking.

    `covers[i]` is the set of relevant-passage indices that the chunk at rank i+1 matches."""
    if n_relevant <= 0:
        raise ValueError("a ranking is scored against at least one relevant passage")
    top = covers[:k]
    found = set().union(*top) if top else set()
    first = next((i + 1 for i, c in enumerate(covers) if c), None)
    dcg = 0.0
    seen: set[int] = set()
    for i, c in enumerate(top):
        if c - seen:
            dcg += 1.0 / math.log2(i + 2)
        seen |= c
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(n_relevant, k)))
    return {
        "hit": 1.0 if found else 0.0,
        "recall": len(found) / n_relevant,
        "precision": sum(1 for c in top if c) / k,
        "mrr": 1.0 / first if first else 0.0,
        "ndcg": dcg / ideal,
    }


METRIC_NAMES = {
    "hit": "hit@k",
    "recall": "recall@k",
    "precision": "precision@k",
    "mrr": "MRR",
    "ndcg": "nDCG@k",
}


@dataclass(frozen=True)
class QuestionRun:
    """One question under one method: its metrics and where each relevant passage ranked."""

    id: str
    kind: str
    language: str
    method: str
    metrics: dict[str, float]
    expected: tuple[str, ...]  # labels of the reachable relevant passages
    ranks: tuple[int | None, ...]  # first rank (1-based, within DEPTH) of each, or None
    top: tuple[str, ...]  # the top k as "doc_id vN § section"
    seconds: float
    question: str = ""

    @property
    def ok(self) -> bool:
        return self.metrics["hit"] > 0

    def why(self, k: int) -> str:
        """What was expected and where it ranked (for a failing question)."""
        parts = []
        for label, rank in zip(self.expected, self.ranks, strict=True):
            where = f"ranked {rank}" if rank is not None else f"not in top {DEPTH}"
            parts.append(f"expected {label}: {where}")
        return "; ".join(parts)


@dataclass(frozen=True)
class EvalResult:
    """A retrieval evaluation: per-question rows, aggregates and what was not scored."""

    methods: tuple[str, ...]
    k: int
    rows: tuple[QuestionRun, ...]
    aggregates: dict[str, dict[str, dict]]  # method -> overall | by_kind | by_language
    timings: dict[str, dict[str, float]]  # method -> median_ms, p95_ms, mean_ms
    n_questions: int
    skipped: tuple[tuple[str, str], ...]  # (question id, why it was not scored)
    partial: tuple[tuple[str, str], ...] = ()  # scored on part of its passages: (id, why)
    questions_file: str = ""
    index: str = ""
    notes: tuple[str, ...] = ()

    @property
    def n_scored(self) -> int:
        return len({r.id for r in self.rows})

    def failures(self, method: str) -> list[QuestionRun]:
        return [r for r in self.rows if r.method == method and not r.ok]

    def to_dict(self) -> dict:
        return {
            "k": self.k,
            "depth": DEPTH,
            "methods": list(self.methods),
            "questions_file": self.questions_file,
            "index": self.index,
            "n_questions": self.n_questions,
            "n_scored": self.n_scored,
            "n_skipped": len(self.skipped),
            "skipped": [{"id": i, "reason": r} for i, r in self.skipped],
            "partial": [{"id": i, "reason": r} for i, r in self.partial],
            "aggregates": self.aggregates,
            "timings": self.timings,
            "notes": list(self.notes),
            "rows": [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "language": r.language,
                    "method": r.method,
                    **{m: round(v, 6) for m, v in r.metrics.items()},
                    "expected": [
                        {"passage": e, "rank": rank}
                        for e, rank in zip(r.expected, r.ranks, strict=True)
                    ],
                    "top": list(r.top),
                    "ms": round(r.seconds * 1000, 2),
                    **({} if r.ok else {"why": r.why(self.k)}),
                }
                for r in self.rows
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


def _mean_metrics(rows: Sequence[QuestionRun]) -> dict[str, float]:
    out: dict[str, float] = {"n": float(len(rows))}
    for m in METRICS:
        out[m] = sum(r.metrics[m] for r in rows) / len(rows) if rows else 0.0
    return out


def aggregate(rows: Sequence[QuestionRun], methods: Sequence[str]) -> dict[str, dict[str, dict]]:
    """Mean metrics per method: overall, per kind and per language."""
    result: dict[str, dict[str, dict]] = {}
    for method in methods:
        mine = [r for r in rows if r.method == method]
        by_kind: dict[str, list[QuestionRun]] = {}
        by_lang: dict[str, list[QuestionRun]] = {}
        for r in mine:
            by_kind.setdefault(r.kind, []).append(r)
            by_lang.setdefault(r.language, []).append(r)
        result[method] = {
            "overall": _mean_metrics(mine),
            "by_kind": {kd: _mean_metrics(v) for kd, v in sorted(by_kind.items())},
            "by_language": {lg: _mean_metrics(v) for lg, v in sorted(by_lang.items())},
        }
    return result


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct`th percentile of `values`, interpolated linearly (0.0 for no values)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * pct / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
