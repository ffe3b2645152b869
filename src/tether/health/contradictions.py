"""Contradictions between documents in force together: two different documents (not two
versions of one) that, on the same date, state different things about the same subject.

`find_contradictions(store, as_of)` returns `tether.types.Contradiction` records, best first,
each quoting both sentences:
- kind `number`: the same number slot with different values ("free delivery from $75"
  against "Free standard delivery from | $99" under the same zone; "Standard loans last 14
  days" against "A standard loan laptop must be returned within 7 days"), the numbers
  compared with their units (`contradiction_units`: "two weeks" and "14 days", "1 TB" and
  "1024 GB", "twelve characters" and "12 characters" are one value);
- kind `rule`: one side negates what the other states on the same content ("may be returned
  in store" against "cannot be returned in store"), uses the opposite permission word
  (allowed / prohibited, required / optional), or the opposite modal in other words ("A loan
  can be renewed once" against "Loan laptops cannot be renewed"; clause by clause: "must be
  booked in advance; they cannot be used on a walk-in basis" against "need not be booked in
  advance"), or forbids what the other states plainly ("Do not refund a replacement charge"
  against "we refund the replacement cost").

How. The sentences worth comparing are those of the chunks in force on `as_of` (the same
sentences `tether.text.sentence_spans` gives sentence vectors to; a table row is read with
its table's header row), read once (`contradiction_units`), but template lines (one
sentence with other numbers in `TEMPLATE_DOCS` documents: a page's "last modified" footer, a
mail header's date), boilerplate (one sentence in `BOILERPLATE_DOCS` documents) and command
lines ("$ git diff HEAD <3>"). Candidate pairs
(`contradiction_pairs`) are the nearest sentences of other documents by the index's sentence
vectors (else the `embedder`'s, else none), the sentences sharing most rare content words,
and the nearest sentences holding a number of the same unit. Each pair goes to two checks:
- the close check (`contradiction_checks`): the sentences share most content words and
  differ only in a number of the same unit or a negation, read with the claim checker's
  parts (`tether.verify`);
- else the reworded check (`contradiction_reworded`): the same subject said in other words,
  decided by features (sentence and chunk cosines, shared rare words, the words bound to
  both numbers, the ratio of the values, the rule clauses' shared words).
Both keep the exclusions the issue lists: versions of one document (one doc_id) are never
paired; nor documents not in force on `as_of`; a document of a type in `exception_types`
(default: notices) is, as the bundled governance document says, an exception for its dates
and is never paired; different groups of people ("undergraduate" against "postgraduate
research students", a student guide against a staff guide, "Access card holders" or "If you
have a concession on your card" against no one), a kind of the shared thing that one side's
document is about and the other's never names ("Computer bookings" in the computer policy
against "Bookings" in the room booking policy), a negation said of a narrower case than the
other side's ("no late fees on items borrowed with an Access card"), model names that differ
("Ridgeline 2", "Ridgeline 3"), a condition or exception one side states (close check), a
document that states both values for two cases, and the same value in other units are not
contradictions. A pair of sentences is reported once; one sentence against one other
document once (its best pair); a sentence whose number conflicts with the same value in
several documents once, against the most authoritative (policy, then procedure), the others
named in the detail. With a `judge` (the `Judge` protocol), a pair the judge finds each
side supports with the other (both scores at or above its threshold) is dropped: meant for a
model judge (`verify.judges.NLIJudge`, `LLMJudge`); the learned alignment judge
(`verify.learned.AlignmentJudge`) reads words and numbers as these rules do and, on the demo
with planted contradictions, passed both ways some of the true findings (it would drop them),
and its probability for a claim with the other side's number swapped in did not separate the
reworded contradictions from their look-alikes, so no judge is the default.

Measured (bench/health/bench_health_report.py, bench/results/health.md): on ten labelled sets (the
demo with planted faults, Northwind Fibre, Calder University IT, Harrowgate Public Libraries,
Wyvern Valley Buses, Brackenridge Leisure, Thornbury waste and recycling, Ferncliffe Homes,
Severnside Water, Kestrel Vehicle Rental), each but the demo written by another hand and held
out until its one run. Those runs are the figures that count, and they show the finder does
not yet generalise: on every held-out set its contradictions' precision and recall fall well
short of the goal (0.8 / 0.8) and of what it reaches on the sets tuned on (each set's one
held-out run: bench/results/health.md and its history).
Where they are lost (bench/health/bench_contradiction_decider.py): the candidate pairs hold nearly
every labelled contradiction; the decision loses them, and neither a classifier trained on
the checks' own features (each set left out in turn) nor the bundled 1.5B model asked
directly separates them from their look-alikes better than these rules. Their history is in
bench/results/health.md. On software manuals with no planted faults it still reports pairs
(mostly rules; how many: bench/health/bench_health.py, bench/results/health_contradictions.md).

Cost: matrix products over the sentences' vectors (in blocks), then a few thousand pair
checks of a millisecond or so (its seconds on indexed software manuals:
bench/health/bench_health.py, bench/results/health_contradictions.md); nothing is loaded unless an `embedder` is given for an index without
sentence vectors (then those sentences are embedded once, which is the slow part).

What it cannot do: it compares sentences two at a time, so a contradiction that needs two
sentences of one side (a rule in one sentence, its number in the next) or a table cell whose
row or column is named only in an earlier chunk is missed; a reworded contradiction needs
close vectors and shared words bound to both numbers (or a retention said from both
ends), so one worded with synonyms only ("does not roll over" against "carries over"; "must be accompanied by an adult" against
"can use the computers by themselves") is missed, counts of different nouns ("10 e-books"
against "eight digital titles") are not compared, and a rule stated as an instruction
("turn on forwarding") against a prohibition ("forwarding is not permitted") is missed;
two sentences that say different things about things with the same name and close wording
can still be read as one slot; pairs in two languages are not compared; a condition on
either side stops a close finding even when the unconditional part contradicts the other
("never expire as long as the account stays open" against "expire after 24 months");
ranges ("3 to 7 days") and dates are not compared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Literal

from tether.health.contradiction_checks import check_close, quote, subject
from tether.health.contradiction_pairs import (
    Vectors,
    cross_language_pairs,
    lexical_pairs,
    slot_pairs,
    vector_pairs,
)
from tether.health.contradiction_reworded import Corpus, check_reworded
from tether.health.contradiction_units import Slot, Unit, read_units
from tether.protocols import Embedder, Judge, PairReader, Store
from tether.types import Contradiction
from tether.verify.passages import VerifierCache

if TYPE_CHECKING:
    from tether.types import Progress

__all__ = ["EXCEPTION_TYPES", "find_contradictions"]

EXCEPTION_TYPES: tuple[str, ...] = ("notice",)  # a notice gives more, for its dates only
# Which source wins (the bundled governance document): a policy, then a procedure, then
# any other document (guide, help article, FAQ).
AUTHORITY = {"policy": 0, "procedure": 1}


@dataclass(frozen=True)
class _Found:
    score: float
    i: int
    j: int
    contradiction: Contradiction
    slots: tuple[Slot, Slot] | None  # a number conflict's two numbers


def find_contradictions(
    store: Store,
    as_of: date,
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    progress: Progress | None = None,
    limit: int = 200,
    exception_types: Collection[str] = EXCEPTION_TYPES,
    reader: PairReader | None = None,
    keep_rules: bool = False,
) -> list[Contradiction]:
    """The contradictions between different documents in force on `as_of`, best first, at
    most `limit` (see the module docstring). `embedder` embeds the sentences of an index
    without sentence vectors (None: such an index is paired by shared words only); `judge`
    drops pairs it finds each side supports; `progress(phase, done, total)` is told of each
    phase; documents of a type in `exception_types` are never paired. With a `reader`
    (`tether.embeddings.reader`), its conflict head decides each candidate pair instead of
    the rules (`_read_pairs`); the rules' detail, where they found one, explains it; with
    `keep_rules` a pair the rules find is kept whatever the reader says."""
    step = progress or _silent
    chunks = [
        c
        for c in store.chunks()
        if c.meta.in_force(as_of) and c.meta.doc_type not in exception_types
    ]
    step("read sentences", 0, len(chunks))
    units = _without_templates([u for c in chunks for u in read_units(c)])
    step("read sentences", len(chunks), len(chunks))
    if len({u.doc for u in units}) < 2:
        return []
    vectors = Vectors.build(store, units, embedder, step)
    close = vector_pairs(units, vectors) | lexical_pairs(units)
    reworded = slot_pairs(units, vectors)
    corpus = Corpus.build(units)
    cache = VerifierCache()
    if reader is not None:
        ordered = sorted(_with_cosine(close | reworded | cross_language_pairs(units, vectors)))
        read = _read_pairs(reader, units, ordered, vectors, corpus, cache, step, keep_rules)
        return _deduplicated(read, units, limit)
    found: list[_Found] = []
    ordered = sorted(_with_cosine(close | reworded))
    step("check pairs", 0, len(ordered))
    for n, (i, j, cos) in enumerate(ordered):
        result = _rules(units, i, j, cos, vectors, corpus, cache)
        if result is not None and not _judged_same(judge, units[i], units[j]):
            c, slots = result
            found.append(_Found(c.score, i, j, c, slots))
        if n % 500 == 0:
            step("check pairs", n, len(ordered))
    step("check pairs", len(ordered), len(ordered))
    return _deduplicated(found, units, limit)


def _rules(
    units: list[Unit],
    i: int,
    j: int,
    cos: float,
    vectors: Vectors | None,
    corpus: Corpus,
    cache: VerifierCache,
) -> tuple[Contradiction, tuple[Slot, Slot] | None] | None:
    """The rules' finding on one candidate pair: the close check, else the reworded one
    (which needs sentence vectors), else None."""
    result = check_close(units[i], units[j], cos, cache)
    if result is None and vectors is not None:
        a, b = units[i], units[j]
        result = check_reworded(a, b, vectors.cosine(i, j), vectors.chunk_cosine(a, b), corpus)
    return result


READ_BATCH = 64  # candidate pairs read at a time (progress is told after each batch)


def reader_text(u: Unit) -> str:
    """What the reader reads of a sentence: its document's title, then the sentence (a table
    row with its header row), as its contradiction pairs were written for training."""
    title = u.chunk.meta.title
    return f"{title}: {u.read}" if title else u.read


def _read_pairs(
    reader: PairReader,
    units: list[Unit],
    ordered: list[tuple[int, int, float]],
    vectors: Vectors | None,
    corpus: Corpus,
    cache: VerifierCache,
    step: Progress,
    keep_rules: bool = False,
) -> list[_Found]:
    """The candidate pairs the reader reads as contradicting (P(contradiction) of both
    orders, averaged, at or above its `conflict` threshold). Each is reported with the rules'
    kind and detail where the rules found it too, else as a `number` finding when both sides
    hold a number of one unit (else `rule`), with the reader's probability as its detail."""
    cut = float(reader.threshold.get("conflict", 0.5))
    step("read pairs", 0, len(ordered))
    found: list[_Found] = []
    for s in range(0, len(ordered), READ_BATCH):
        part = ordered[s : s + READ_BATCH]
        texts = [(reader_text(units[i]), reader_text(units[j])) for i, j, _ in part]
        fwd = reader.probabilities("conflict", texts)[:, 0]
        back = reader.probabilities("conflict", [(b, a) for a, b in texts])[:, 0]
        for (i, j, cos), p in zip(part, (fwd + back) / 2, strict=True):
            if p < cut and not keep_rules:
                continue
            a, b = units[i], units[j]
            result = _rules(units, i, j, cos, vectors, corpus, cache)
            if p < cut and result is None:
                continue
            if result is not None:
                c, slots = result
                found.append(
                    _Found(round(float(p), 3), i, j, replace(c, score=round(float(p), 3)), slots)
                )
                continue
            units_a = {x.unit for x in a.slots}
            kind: Literal["number", "rule"] = (
                "number" if units_a & {x.unit for x in b.slots} else "rule"
            )
            found.append(
                _Found(
                    round(float(p), 3),
                    i,
                    j,
                    Contradiction(
                        kind=kind,
                        subject=subject(a, a.content & b.content) or a.chunk.meta.title,
                        a=quote(a),
                        b=quote(b),
                        detail=f"read as saying different things (reader {float(p):.2f})",
                        score=round(float(p), 3),
                    ),
                    None,
                )
            )
        step("read pairs", min(s + READ_BATCH, len(ordered)), len(ordered))
    return found


def _silent(_phase: str, _done: int, _total: int) -> None:
    return None


TEMPLATE_DOCS = 4  # a sentence shape in this many documents ...
TEMPLATE_VALUES = 3  # ... with this many different numbers in it is a template line
BOILERPLATE_DOCS = 6  # a sentence (numbers aside) in this many documents is boilerplate
_DIGITS = re.compile(r"\d+")
# a command line and its callout ("$ git diff HEAD <3>", ">>> len(x)"): code, not a statement
_COMMAND = re.compile(r"^\s*(?:\$|>>>|%)\s|<\d{1,2}>\s*$")
# words of a date or time stamp that change with it (a mail header's "Mon, 26 Jan 1998 PST")
_DATE_WORDS = frozenset(
    "mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday"
    " jan feb mar apr may jun jul aug sep sept oct nov dec january february march april june"
    " july august september october november december utc gmt pst pdt est edt cst cdt cet"
    " cest bst am pm".split()
)


def _without_templates(units: list[Unit]) -> list[Unit]:
    """The units but template lines: one sentence with its numbers changed in many documents
    ("This page last modified on 2022-08-10 18:45:48 UTC", "Date: Fri, 04 Oct 1996 11:42:18
    PDT") is a page footer or a mail header, not a value stated for one subject. A fact
    repeated in several documents with one of them changed (the planted kind) keeps its few
    values and stays. A sentence in `BOILERPLATE_DOCS` documents or more is boilerplate
    (a page included in many: "Everything below this line in this section is selectively
    included ..."). Command lines of a shell or an interpreter ("$ git diff HEAD <3>") are
    left out too: code, not a statement."""
    shapes: dict[str, tuple[set[str], set[tuple[str, ...]]]] = {}
    keys = []
    for u in units:
        key = " ".join(w for w in _DIGITS.sub("#", u.words).split() if w not in _DATE_WORDS)
        keys.append(key)
        docs, values = shapes.setdefault(key, (set(), set()))
        docs.add(u.doc)
        values.add(tuple(_DIGITS.findall(u.words)))
    return [
        u
        for u, key in zip(units, keys, strict=True)
        if not (
            "#" in key
            and len(shapes[key][0]) >= TEMPLATE_DOCS
            and len(shapes[key][1]) >= TEMPLATE_VALUES
        )
        and len(shapes[key][0]) < BOILERPLATE_DOCS
        and not _COMMAND.search(u.text)
    ]


def _with_cosine(pairs: Iterable[tuple[int, int, float]]) -> Iterable[tuple[int, int, float]]:
    """Each pair once, with its best cosine (a lexical-only pair has NaN)."""
    best: dict[tuple[int, int], float] = {}
    for i, j, cos in pairs:
        old = best.get((i, j))
        if old is None or (not math.isnan(cos) and (math.isnan(old) or cos > old)):
            best[(i, j)] = cos
    return ((i, j, cos) for (i, j), cos in sorted(best.items()))


def _judged_same(judge: Judge | None, a: Unit, b: Unit) -> bool:
    """True when `judge` finds each sentence supported by the other (at its threshold)."""
    if judge is None:
        return False
    cut = float(getattr(judge, "threshold", 0.5))
    return judge.score(a.read, [b.read]) >= cut and judge.score(b.read, [a.read]) >= cut


def _deduplicated(found: Sequence[_Found], units: list[Unit], limit: int) -> list[Contradiction]:
    """Best first; one finding per sentence and other document (its best pair). A sentence
    whose number conflicts with the same value in several documents is one finding: against
    the most authoritative of them (`AUTHORITY`: policy, then procedure, then the rest; the
    best score among equals), the others named in its detail ("(also in it-faq)")."""
    seen: set[tuple[int, str]] = set()
    kept: list[tuple[Contradiction, list[str]]] = []  # a finding, the other documents
    # (sentence, unit, its value, the other value) → (kept finding, that finding's other side)
    conflicts: dict[tuple[int, str, float, float], tuple[int, int]] = {}
    for f in sorted(found, key=lambda t: (-t.score, t.i, t.j)):
        i, j = f.i, f.j
        if (i, units[j].doc) in seen or (j, units[i].doc) in seen:
            continue
        seen.update({(i, units[j].doc), (j, units[i].doc)})
        keys = []
        if f.slots is not None:
            x, y = f.slots
            keys = [((i, x.unit, x.value, y.value), j), ((j, y.unit, y.value, x.value), i)]
        hit = next(((k, other) for k, other in keys if k in conflicts), None)
        if hit is None:
            for k, other in keys:
                conflicts[k] = (len(kept), other)
            kept.append((f.contradiction, []))
            continue
        key, other = hit
        n, old_other = conflicts[key]
        _old, also = kept[n]
        if _rank(units[other]) < _rank(units[old_other]):  # the more authoritative source
            kept[n] = (f.contradiction, [*also, units[old_other].doc])
            conflicts[key] = (n, other)
        else:
            also.append(units[other].doc)
    out = [
        replace(c, detail=f"{c.detail} (also in {', '.join(also)})") if also else c
        for c, also in kept
    ]
    return out[:limit]


def _rank(u: Unit) -> int:
    return AUTHORITY.get(u.chunk.meta.doc_type, len(AUTHORITY))
