"""`run_retrieval_eval`: every scorable question of a set through every retrieval method,
measured against its relevant passages (`tether.evaluation.metrics`).

A relevant passage is reachable when the index holds a chunk that matches it and the
question's filters (as_of, audience) let that chunk through; questions with none are not
scored, and the result says how many and why.

What it cannot do: it measures the rankings the given retriever returns; it builds no
retriever and loads no model (the caller passes them), and its timings include whatever
the retriever does per query (the query vector is recomputed for each method).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tether.errors import TetherError
from tether.evaluation.metrics import (
    DEPTH,
    EvalResult,
    QuestionRun,
    aggregate,
    percentile,
    ranking_metrics,
)
from tether.evaluation.questions import matches, passage_label, question_filters
from tether.protocols import Store
from tether.types import Chunk, Filters, Hit, Question, Relevant

if TYPE_CHECKING:
    from tether.protocols import Searcher


class _Reachability:
    """Which relevant passages the index holds, and which of them a question's filters allow."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.by_doc: dict[str, list[Chunk]] = {}
        for c in store.chunks():
            self.by_doc.setdefault(c.doc_id, []).append(c)
        self._allowed: dict[tuple, set[str]] = {}
        self._where: dict[Relevant, set[str]] = {}

    def where(self, rel: Relevant) -> set[str]:
        """IDs of the chunks (any version, any access) that match a relevant passage."""
        if rel not in self._where:
            chunks = self.by_doc.get(rel.doc_id, [])
            self._where[rel] = {c.chunk_id for c in chunks if matches(c, rel)}
        return self._where[rel]

    def allowed(self, filters: Filters) -> set[str]:
        """IDs of the chunks that `filters` let through (read once per as_of and audience)."""
        key = (filters.as_of, filters.audience)
        if key not in self._allowed:
            self._allowed[key] = self.store.allowed_ids(filters)
        return self._allowed[key]


Plan = list[tuple[Question, Filters, list[Relevant]]]


def run_retrieval_eval(
    store: Store,
    retriever: Searcher,
    questions: Sequence[Question],
    methods: Sequence[str],
    k: int = 5,
    progress: Callable[[int, int], None] | None = None,
    *,
    audience: str | None = None,
    questions_file: str = "",
) -> EvalResult:
    """Run every scorable question through every method and measure the rankings.

    `audience` overrides each question's own (for question sets written for the help desk)."""
    if k < 1 or k > DEPTH:
        raise TetherError(f"k must be between 1 and {DEPTH}")
    reach = _Reachability(store)
    plan, skipped, partial = _plan(reach, questions, audience)
    rows, times = _measure(reach, retriever, plan, methods, k, progress)
    timings = {
        m: {
            "median_ms": 1000 * statistics.median(v) if v else 0.0,
            "p95_ms": 1000 * percentile(v, 95) if v else 0.0,
            "mean_ms": 1000 * statistics.fmean(v) if v else 0.0,
        }
        for m, v in times.items()
    }
    n_abstain = sum(1 for _, why in skipped if why.startswith("expects abstention"))
    notes = (
        f"{len(plan)} of {len(questions)} questions scored; {len(skipped)} not scored"
        f" ({n_abstain} expect abstention and list no passage,"
        f" {len(skipped) - n_abstain} have no reachable relevant passage);"
        f" {len(partial)} scored on part of their passages",
    )
    return EvalResult(
        methods=tuple(methods),
        k=k,
        rows=tuple(rows),
        aggregates=aggregate(rows, methods),
        timings=timings,
        n_questions=len(questions),
        skipped=tuple(skipped),
        partial=tuple(partial),
        questions_file=questions_file,
        index=store.location,
        notes=notes,
    )


def _plan(
    reach: _Reachability, questions: Sequence[Question], audience: str | None
) -> tuple[Plan, list[tuple[str, str]], list[tuple[str, str]]]:
    """(what to score: each question with its filters and reachable passages, the questions
    not scored with why, the questions scored on part of their passages with why)."""
    skipped: list[tuple[str, str]] = []
    partial: list[tuple[str, str]] = []
    plan: Plan = []
    for q in questions:
        if not q.relevant:
            why = "expects abstention; no relevant passage" if q.abstain else "no relevant passage"
            skipped.append((q.id, why))
            continue
        filters = question_filters(q, audience)
        allowed = reach.allowed(filters)
        usable: list[Relevant] = []
        missing: list[str] = []
        refused: list[str] = []
        for rel in q.relevant:
            found = reach.where(rel)
            if not found:
                missing.append(passage_label(rel))
            elif not (found & allowed):
                refused.append(passage_label(rel))
            else:
                usable.append(rel)
        reasons = []
        if filters.public and (missing or refused):  # never tell apart "absent" and "staff"
            missing, refused = sorted(missing + refused), []
            reasons.append(
                f"not in what the audience {filters.audience} may see on {filters.as_of}: "
                + ", ".join(missing)
            )
        elif missing:
            reasons.append("not in the index: " + ", ".join(missing))
        if refused:
            reasons.append(
                f"refused by the filters (as_of {filters.as_of}, audience {filters.audience}): "
                + ", ".join(refused)
            )
        if not usable:
            skipped.append((q.id, "; ".join(reasons)))
            continue
        if reasons:
            partial.append((q.id, "; ".join(reasons)))
        plan.append((q, filters, usable))
    return plan, skipped, partial


def _measure(
    reach: _Reachability,
    retriever: Searcher,
    plan: Plan,
    methods: Sequence[str],
    k: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[QuestionRun], dict[str, list[float]]]:
    """(one row per planned question and method, the search times per method)."""
    rows: list[QuestionRun] = []
    times: dict[str, list[float]] = {m: [] for m in methods}
    total = len(plan) * len(methods)
    done = 0
    for q, filters, usable in plan:
        sets = [reach.where(rel) for rel in usable]
        for method in methods:
            if hasattr(retriever, "clear_query_cache"):
                retriever.clear_query_cache()  # each method's time includes the query vector
            began = time.perf_counter()
            hits = retriever.search(q.question, DEPTH, filters, method=method)
            seconds = time.perf_counter() - began
            times[method].append(seconds)
            covers = [
                {j for j, s in enumerate(sets) if h.chunk.chunk_id in s} for h in hits[:DEPTH]
            ]
            ranks = tuple(
                next((i + 1 for i, c in enumerate(covers) if j in c), None)
                for j in range(len(usable))
            )
            rows.append(
                QuestionRun(
                    id=q.id,
                    kind=q.kind,
                    language=q.language,
                    method=method,
                    metrics=ranking_metrics(covers, len(usable), k),
                    expected=tuple(passage_label(r) for r in usable),
                    ranks=ranks,
                    top=tuple(_hit_label(h) for h in hits[:k]),
                    seconds=seconds,
                    question=q.question,
                )
            )
            done += 1
            if progress:
                progress(done, total)
    return rows, times




def _hit_label(hit: Hit) -> str:
    c = hit.chunk
    return f"{c.doc_id} v{c.version} § {c.section}"
