"""The support gate's floors, fitted two ways:

- `calibrate_gate` (what `tether calibrate` stores in the index): for each method, the highest
  floor that wrongly refuses at most a given share of a question set's answerable questions,
  and what it lets through of those that must be refused;
- `self_calibrate` (run by ingest, no question set and no model): the index against itself.
  Half the bundled off-topic questions (`offtopic_questions`, EN and FR) are searched on the
  index;
  the floor is the mean of their best scores plus z standard deviations (the Profile's
  `gate_offtopic_z`), capped at a low quantile of the best scores of questions generated from
  the index's own passages (`probe_questions`: a heading turned into a question, the content
  words of one sentence). Fitted once per audience on what that audience may see, so the
  public floor depends on public passages only.

What it cannot do: floors are fitted to the questions given (the bundled ones by default), so
they are only as good as their coverage; the self-calibration knows what an off-topic question
scores, not what a near-miss question (a product the shop does not sell) scores, and lets most
of those through (bench/results/gate_carryover.md); it uses the retriever the caller passes and
loads no model.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING

from tether.answering.gate import SELF_CALIBRATION_KEY, self_floor_key, support_score
from tether.config import DEFAULT_PROFILE, Profile
from tether.protocols import SearchableStore, StoreReader
from tether.text import content_words, sentences
from tether.types import Audience, Chunk, Filters, Question

if TYPE_CHECKING:
    from tether.protocols import Searcher

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
    store: StoreReader,
    retriever: Searcher,
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
        # refuse `allowed` at most (a share of 1 or more: all but the best-supported one)
        allowed = max(0, min(int(max_wrongly_refused * len(answerable)), len(answerable) - 1))
        floor = answerable[allowed] if answerable else 0.0

        def row(f: float, method: str = method, answerable=answerable, refuse=refuse) -> GateRow:
            return GateRow(
                method,
                f,
                sum(s < f for s in answerable),
                len(answerable),
                sum(s >= f for s in refuse),
                len(refuse),
            )

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


# ---- calibration of an index against itself (run by ingest) --------------------------------

PROBE_CHUNKS = 10  # chunks sampled (evenly) for generated questions: two questions each at most


# Every OFFTOPIC_STEP-th bundled off-topic question is searched at ingest (20 of 40, EN and FR
# alternate): since the answerability judge decides whether passages answer, the floor is a
# cheap off-topic filter, and half the searches keep calibration a small part of an ingest
# (its cost at ingest: bench/experiments/gate_carryover.py, bench/results/gate_carryover.md).
OFFTOPIC_STEP = 2


def offtopic_questions() -> list[str]:
    """The bundled off-topic questions (EN and FR) that no collection should answer."""
    text = resources.files("tether.evaluation").joinpath("offtopic.txt").read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def probe_questions(chunks: Sequence[Chunk], limit: int = PROBE_CHUNKS) -> list[str]:
    """Questions generated from `limit` chunks sampled evenly: the innermost heading as a
    question ("What about Double charges?"), and the first seven content words of the middle
    sentence of six words or more. No model; crude, but the words are the passage's own."""
    if not chunks:
        return []
    step = max(1, len(chunks) // limit)
    out: list[str] = []
    for chunk in list(chunks)[::step][:limit]:
        french = chunk.meta.language == "fr"
        if chunk.heading_path:
            heading = chunk.heading_path[-1]
            out.append(f"Qu'en est-il de {heading} ?" if french else f"What about {heading}?")
        spans = [chunk.text[a:b] for a, b in sentences(chunk.text)]
        long = [t for t in spans if len(t.split()) >= 6]
        if long:
            out.append(" ".join(content_words(long[len(long) // 2])[:7]) + " ?")
    return out


@dataclass(frozen=True)
class SelfFit:
    """One audience's and method's floor fitted on the index itself, and what it rests on."""

    audience: str
    method: str
    floor: float | None  # None: nothing this audience may see (the Profile's floor applies)
    offtopic_n: int = 0
    offtopic_mean: float = 0.0
    offtopic_sd: float = 0.0
    generated_n: int = 0
    generated_low: float = 0.0  # the Profile's quantile of the generated questions' best scores
    capped: bool = False  # the floor is generated_low (the off-topic side reached above it)


@dataclass(frozen=True)
class SelfCalibration:
    """What `self_calibrate` fitted: one `SelfFit` per audience and method, the rule's values,
    when, and how long it took."""

    fits: tuple[SelfFit, ...]
    z: float
    quantile: float
    at: str
    seconds: float

    def meta(self) -> dict[str, str]:
        """The index meta rows that record it (the floors, and the whole fit as JSON)."""
        rows = {
            self_floor_key(f.method, f.audience): repr(f.floor)
            for f in self.fits
            if f.floor is not None
        }
        rows[SELF_CALIBRATION_KEY] = json.dumps(
            {
                "rule": "floor = mean + z*sd of the off-topic questions' best scores, capped at"
                " the quantile of the generated questions' best scores",
                "offtopic": "tether/evaluation/offtopic.txt",
                "generated": f"headings and sentences of up to {PROBE_CHUNKS} chunks",
                **{k: v for k, v in asdict(self).items() if k != "fits"},
                "fits": [asdict(f) for f in self.fits],
            }
        )
        return rows


def _best_scores(
    retriever: Searcher, queries: Sequence[str], filters: Filters, method: str, k: int
) -> list[float]:
    out = []
    for query in queries:
        hits = retriever.search(query, k, filters, method=method)
        out.append(max((support_score(h) for h in hits), default=0.0))
    return out


def fit_floor(
    offtopic: Sequence[float], generated: Sequence[float], z: float, quantile: float
) -> tuple[float, float, bool]:
    """(floor, the generated side's low quantile, capped): mean + z·sd of `offtopic`, capped at
    the `quantile` of `generated` when there are ten or more of those."""
    mean = statistics.fmean(offtopic)
    sd = statistics.pstdev(offtopic)
    floor = mean + z * sd
    if len(generated) < 10:
        return floor, 0.0, False
    ordered = sorted(generated)
    low = ordered[int(quantile * (len(ordered) - 1))]
    return min(floor, low), low, low < floor


def self_calibrate(
    store: SearchableStore,
    retriever: Searcher,
    profile: Profile = DEFAULT_PROFILE,
    *,
    audiences: Sequence[Audience] = ("public", "staff"),
    k: int = 5,
) -> SelfCalibration:
    """Fit the gate's floor for each of the Profile's `gate_self_methods` and each audience on
    the index itself (see the module docstring); every version counts (as_of None)."""
    started = time.perf_counter()
    offtopic = offtopic_questions()[::OFFTOPIC_STEP]
    chunks = store.chunks()
    fits: list[SelfFit] = []
    done: dict[frozenset[str], list[SelfFit]] = {}  # an audience that sees the same passages
    for audience in audiences:
        filters = Filters(as_of=None, audience=audience)
        allowed = store.allowed_ids(filters)
        same = done.get(frozenset(allowed))
        if same is not None:  # the same passages give the same floors: not searched again
            fits += [replace(f, audience=audience) for f in same]
            continue
        before = len(fits)
        probes = probe_questions([c for c in chunks if c.chunk_id in allowed])
        warm = getattr(retriever, "warm_queries", None)  # embedded in batches, not one by one
        if warm is not None:
            warm([*offtopic, *probes])
        for method in profile.gate_self_methods:
            if not allowed:
                fits.append(SelfFit(audience, method, None))
                continue
            off = _best_scores(retriever, offtopic, filters, method, k)
            gen = _best_scores(retriever, probes, filters, method, k)
            floor, low, capped = fit_floor(
                off, gen, profile.gate_offtopic_z, profile.gate_generated_quantile
            )
            mean, sd = round(statistics.fmean(off), 4), round(statistics.pstdev(off), 4)
            fit = SelfFit(audience, method, round(floor, 4), len(off), mean, sd, len(gen))
            fits.append(replace(fit, generated_low=round(low, 4), capped=capped))
        done[frozenset(allowed)] = fits[before:]
    return SelfCalibration(
        tuple(fits),
        profile.gate_offtopic_z,
        profile.gate_generated_quantile,
        datetime.now(UTC).isoformat(timespec="seconds"),
        round(time.perf_counter() - started, 3),
    )
