"""The support gate: refuse before any model call when retrieval found too little.

The gate passes when at least `min_support` retrieved passages clear the method's score floor.
The support score of a hit is, by method: BM25 score (bm25), cosine similarity (dense), the
dense cosine of a fused hit (hybrid: RRF scores carry no absolute meaning, and a hit found only
by BM25 gets its BM25 score mapped below every floor), the reranker's score (rerank). Floors
are calibrated on the bundled questions (`tether calibrate`, `tether.evaluation.calibration`)
and stored in the index; `DEFAULT_FLOORS` are those values.

What it cannot do: the gate judges retrieval strength, not whether the passages answer; a
question phrased very differently from the documents can be refused although answerable
(the trade-off table in the README gives the measured rates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tether.config import DEFAULT_PROFILE
from tether.protocols import Store
from tether.types import Filters, Gate, Hit

# Default floors per method (support score a passage needs to count), see `calibrate`.
DEFAULT_FLOORS: Mapping[str, float] = DEFAULT_PROFILE.gate_floors  # tuned: tether.config
DEFAULT_MIN_SUPPORT = 1


def support_score(hit: Hit) -> float:
    """How strongly one hit supports answering, on its method's scale (see module docstring)."""
    if hit.method == "hybrid":
        return float(hit.signals.get("dense", 0.0))
    return float(hit.score)


def gate(hits: Sequence[Hit], floor: float, min_support: int = DEFAULT_MIN_SUPPORT) -> Gate:
    """Pass when at least `min_support` hits clear `floor`."""
    scores = [support_score(h) for h in hits]
    supporting = sum(s >= floor for s in scores)
    best = max(scores, default=0.0)
    passed = supporting >= min_support
    reason = (
        ""
        if passed
        else f"retrieval too weak: {supporting} passage(s) cleared the floor {floor:.3g}"
        f" (best {best:.3g}); need {min_support}"
    )
    return Gate(passed, floor, min_support, supporting, best, reason)


def filtered_out(store: Store, query: str, filters: Filters) -> str:
    """Why a filtered search found nothing that matches `query` although passages do, in
    counts only (no content): "12 staff-only passages matched; you asked as public", "3
    passages matched but none is in force on 2026-05-01"; "" when the filters are not why."""
    if store.count_lexical(query, filters):
        return ""
    total = store.count_lexical(query, Filters(as_of=None, audience="staff"))
    if not total:
        return ""
    seen = total
    if filters.audience != "staff":
        seen = store.count_lexical(query, Filters(as_of=None, audience=filters.audience))
        if not seen:
            return f"{_passages(total, 'staff-only ')} matched; you asked as {filters.audience}"
    if filters.as_of is not None:
        return f"{_passages(seen)} matched but none is in force on {filters.as_of.isoformat()}"
    return ""


def _passages(n: int, kind: str = "") -> str:
    return f"{n} {kind}passage{'s' if n != 1 else ''}"


def explain(decision: Gate, filtered: str) -> Gate:
    """A refusal whose reason is the filters (`filtered_out`) rather than weak retrieval."""
    if decision.passed or not filtered:
        return decision
    return replace(decision, reason=f"{filtered} (nothing the filters allow matches)")


def floors_for(store: Store, defaults: Mapping[str, float] = DEFAULT_FLOORS) -> dict[str, float]:
    """The calibrated floors stored in the index, else `defaults` (the Profile's)."""
    floors = dict(defaults)
    for method in floors:
        value = store.meta_value(f"gate_floor:{method}")
        if value is not None:
            floors[method] = float(value)
    return floors
