"""The support gate: refuse before any model call when retrieval found too little.

The gate passes when at least `min_support` retrieved passages clear the method's score floor.
The support score of a hit is, by method: BM25 score (bm25), cosine similarity (dense), the
dense cosine of a fused hit (hybrid: RRF scores carry no absolute meaning, and a hit found only
by BM25 gets its BM25 score mapped below every floor), the reranker's score (rerank).

The floor of a method (`floors_for`), first found wins: the one `tether calibrate` fitted on
the user's questions and stored in the index; the one ingest fitted on the index itself for
the asker's audience (`tether.evaluation.calibration.self_calibrate`: off-topic questions and
questions generated from the passages that audience may see, so a public floor never depends
on staff passages); the Profile's (`DEFAULT_FLOORS`, fitted on the bundled questions). The
decision for a public asker rests on the hits of a public search and that public floor: it
does not depend on whether staff passages match.

What it cannot do: the gate judges retrieval strength, not whether the passages answer (the
answerability judge, `tether.answering.answerable`, decides that after it); its self-fitted
floor is a cheap off-topic filter tuned for recall, so it lets near misses through on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tether.config import DEFAULT_PROFILE
from tether.errors import LimitError, TetherError
from tether.options import DEFAULT_MIN_SUPPORT as DEFAULT_MIN_SUPPORT
from tether.protocols import SearchableStore, StoreReader
from tether.types import Filters, Gate, Hit

# Default floors per method (support score a passage needs to count), see `calibrate`.
DEFAULT_FLOORS: Mapping[str, float] = DEFAULT_PROFILE.gate_floors  # tuned: tether.config


def support_score(hit: Hit) -> float:
    """How strongly one hit supports answering, on its method's scale (see module docstring):
    for a rerank hit the sentence reranker's weighted mean (`signals["rerank"]`), which stays
    on its absolute scale when a learned order sets the hit's score; a deep hit (the reader's
    reorder of the rerank list) keeps that same weighted mean, so the rerank floors serve it."""
    if hit.method == "hybrid":
        return float(hit.signals.get("dense", 0.0))
    if hit.method in ("rerank", "deep"):
        return float(hit.signals.get("rerank", hit.score))
    return float(hit.score)


def floor_method(method: str) -> str:
    """The method whose floor a method's hits are gated on: deep hits on rerank's (their
    support score is the rerank weighted mean, `support_score`)."""
    return "rerank" if method == "deep" else method


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


PUBLIC_HINT = (
    "nothing the public audience may see matched; documents without an access label are"
    " staff-only (label them `access: public`, ingest with --default-access public, or ask as"
    " staff)"
)


def filtered_out(store: SearchableStore, query: str, filters: Filters) -> str:
    """Why a filtered search found nothing that matches `query`, without telling a public
    asker anything about staff content: "3 passages matched but none is in force on
    2026-05-01" (counted among the passages the audience may see), else, for a public asker,
    `PUBLIC_HINT` whenever nothing matched (the same words whether or not staff passages
    match: a count of those would let anyone probe staff documents); "" otherwise."""
    if store.count_lexical(query, filters):
        return ""
    if filters.as_of is not None:
        seen = store.count_lexical(query, Filters(as_of=None, audience=filters.audience))
        if seen:
            return f"{_passages(seen)} matched but none is in force on {filters.as_of.isoformat()}"
    return PUBLIC_HINT if filters.audience != "staff" else ""


def _passages(n: int) -> str:
    return f"{n} passage{'s' if n != 1 else ''}"


def explain(decision: Gate, filtered: str) -> Gate:
    """A refusal whose reason is the filters (`filtered_out`) rather than weak retrieval."""
    if decision.passed or not filtered:
        return decision
    return replace(decision, reason=f"{filtered} (nothing the filters allow matches)")


SELF_CALIBRATION_KEY = "gate_self"  # the index meta row holding the self-calibration (JSON)


def self_floor_key(method: str, audience: str) -> str:
    """The index meta key of the floor ingest fitted for `method` and `audience`."""
    return f"gate_self:{method}:{audience}"


def floors_for(
    store: StoreReader, defaults: Mapping[str, float] = DEFAULT_FLOORS, audience: str = "public"
) -> dict[str, float]:
    """The floor per method for `audience` (see the module docstring for which wins)."""
    floors = dict(defaults)
    for method in floors:
        value = store.meta_value(f"gate_floor:{method}")
        if value is None:
            value = store.meta_value(self_floor_key(method, audience))
        if value is not None:
            floors[method] = float(value)
    return floors


# The longest question or search query accepted, in characters (a page of text; the bundled
# questions are under 200).
MAX_QUESTION_CHARS = 2_000


def check_question(text: str, what: str = "question", *, empty_ok: bool = False) -> None:
    """Refuse, with a `TetherError`, a `what` longer than MAX_QUESTION_CHARS, or an empty one
    unless `empty_ok` (an empty search finds nothing; an empty question is a mistake)."""
    if not empty_ok and not text.strip():
        raise TetherError(f"the {what} is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise LimitError(
            f"the {what} is {len(text):,} characters long; the limit is {MAX_QUESTION_CHARS:,}"
            f" (shorten it)"
        )
