"""The support gate's floors: for each method, the highest floor that wrongly refuses at most
a given share of the answerable questions, and what it lets through of those that must be
refused (`calibrate_gate`, what `tether calibrate` stores in the index).

What it cannot do: floors are fitted to the question set given (the bundled one by default),
so they are only as good as its coverage; it uses the retriever the caller passes and loads
no model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.answering.gate import support_score
from tether.protocols import Store
from tether.types import Filters, Question

if TYPE_CHECKING:
    from tether.retrieval.retriever import Retriever

# Below this many questions a floor rests on one or two scores: the 2% allowance of wrongly
# refused questions rounds to none, and one odd question moves the floor.
MIN_QUESTIONS = 30


@dataclass(frozen=True)
class GateRow:
    """One floor's trade-off for one method."""

    method: str
    floor: float
    wrongly_refused: int  # answerable questions the gate would refuse
    answerable: int
    let_through: int  # questions that must be refused (unanswerable, staff-only for the public)
    must_refuse: int


@dataclass(frozen=True)
class GateCalibration:
    """The chosen floor per method, its trade-off row, and a few other floors for comparison."""

    floors: dict[str, float]
    chosen: tuple[GateRow, ...]
    table: tuple[GateRow, ...]  # a few floors per method, for the README
    warnings: tuple[str, ...] = ()  # why the floors may not be trustworthy (too few questions)


def calibrate_gate(
    store: Store,
    retriever: Retriever,
    questions: Sequence[Question],
    methods: Sequence[str] = ("bm25", "dense", "hybrid", "rerank"),
    *,
    k: int = 5,
    max_wrongly_refused: float = 0.02,
    progress: Callable[[int, int], None] | None = None,
) -> GateCalibration:
    """For each method: the highest floor that refuses at most `max_wrongly_refused` of the
    answerable questions (min_support 1), and how many must-refuse questions it lets through.

    Answerable: `abstain` false. Must refuse: `abstain` true (unanswerable questions and
    staff-only questions asked by the public). `store` is the index `retriever` searches (not
    read here)."""
    best: dict[str, list[tuple[float, bool]]] = {m: [] for m in methods}
    steps = len(questions) * len(methods)
    done = 0
    for q in questions:
        filters = Filters(as_of=q.as_of, audience=q.audience)
        for method in methods:
            hits = retriever.search(q.question, k, filters, method=method)
            score = max((support_score(h) for h in hits), default=float("-inf"))
            best[method].append((score, q.abstain))
            done += 1
            if progress:
                progress(done, steps)
    floors: dict[str, float] = {}
    chosen: list[GateRow] = []
    table: list[GateRow] = []
    for method, pairs in best.items():
        answerable = sorted(s for s, abstain in pairs if not abstain)
        refuse = [s for s, abstain in pairs if abstain]
        allowed = int(max_wrongly_refused * len(answerable))
        floor = answerable[allowed] if answerable else 0.0  # refuse `allowed` at most

        def row(f: float, method: str = method, answerable=answerable, refuse=refuse) -> GateRow:
            return GateRow(
                method, f, sum(s < f for s in answerable), len(answerable),
                sum(s >= f for s in refuse), len(refuse),
            )  # fmt: skip

        floors[method] = floor
        chosen.append(row(floor))
        quantiles = sorted(
            {answerable[int(p * (len(answerable) - 1))] for p in (0.0, 0.05, 0.1, 0.2, 0.3)}
        )
        table.extend(row(f) for f in quantiles)
    warnings = (
        (
            f"the floors were fitted on {len(questions)} question(s), fewer than {MIN_QUESTIONS}:"
            " one odd question moves them; add questions (answerable and must-refuse) and"
            " calibrate again",
        )
        if len(questions) < MIN_QUESTIONS
        else ()
    )
    return GateCalibration(floors, tuple(chosen), tuple(table), warnings)
