"""The close check of the contradiction finder: two sentences of different documents that
share most of their words and differ in one number of the same unit, or in a negation or a
permission word (`check_close(a, b, cosine, cache)`), and the exclusions the issue lists,
read with the claim checker's parts (`tether.verify`).

How. Each sentence is read as a claim against the other as its passage: the subject must
align (most content words shared; for a number, the words bound to it: its clause's words
near it, or a table cell's row label and column heading), and the only mismatch must be a
number of the same unit or a negation; `verify.align`'s details reject what is not a
contradiction: a `condition` or exception one side states and the other does not ("unless
it is faulty", "if", "except"), a `period` named otherwise ("per month" against "per
year"), and model names that differ ("Ridgeline 2" against "Ridgeline 3", also in the
titles). A negation must deny what the other side states: the words it governs, and the
rest of its clause but for a word (`FOREIGN_MAX`), are the other sentence's ("There are no
late fees on items borrowed with an Access card" denies nothing of "The LMS works out late
fees automatically": its clause names a narrower case). Also here: how a finding quotes its
sentences (`quote`, `subject`, `clause`).

What it cannot do: a contradiction worded with few common words is left to
`contradiction_reworded`; a condition on either side stops a finding even when the
unconditional part contradicts the other ("never expire as long as the account stays open"
against "expire after 24 months").
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection

from tether.health.contradiction_units import (
    NOISE,
    PERMISSION_OPPOSITES,
    POLAR_WORDS,
    Slot,
    Unit,
    groups_differ,
    said_of_others,
    same_unit,
    same_value,
    slots_differ,
)
from tether.language.cues import condition, periods
from tether.language.negation import CUE_STEMS, negation_mismatch
from tether.language.stems import content_stem, stem_set
from tether.text import fold_fast, words_of
from tether.types import Chunk, Contradiction, Quote
from tether.verify.align import align
from tether.verify.passages import Prepared, VerifierCache
from tether.verify.reading import claim_info

__all__ = ["check_close", "clause", "excluded", "names_row", "other_model", "quote", "subject"]

# Thresholds, chosen on the bundled demo collection with contradictions planted in a copy of
# it (bench/health/bench_health.py); round values.
SUBJECT_SHARE = 0.5  # share of the shorter side's content words the other must hold
SLOT_SHARE = 0.5  # share of a number's bound words the other number's must hold...
SLOT_MIN = 2  # ...and at least this many (or all of them when fewer; two in all)
THIN = 3  # a sentence with this few content words is read with its section heading
FOREIGN_MAX = 1  # content words of the shorter sentence that the other's passage lacks
SLOT_FOREIGN_MAX = 0  # ... of the words bound to a number
LONG_SHARE = 0.3  # share of the longer side's content words the other must hold...
FULL_SHARE = 0.8  # ...unless the other holds this share of the shorter side's


def names_row(x: Slot, other: Unit) -> bool:
    """True unless `x` is a table cell whose row the other sentence does not name (its row
    label's words and sizes: "A4 colour" is not "A3 colour")."""
    return x.label <= other.stems and x.codes <= other.codes


def check_close(
    a: Unit, b: Unit, cos: float, cache: VerifierCache
) -> tuple[Contradiction, tuple[Slot, Slot] | None] | None:
    """The contradiction between two sentences of different documents (with its two numbers
    for a number conflict), or None."""
    if a.doc == b.doc or other_model(a, b):
        return None
    sa, sb = a.content, b.content
    shared = sa & sb
    short, long = sorted((len(sa), len(sb)))
    if short == 0 or len(shared) < min(2, short):
        return None
    share = len(shared) / short
    if share < SUBJECT_SHARE or (len(shared) < LONG_SHARE * long and share < FULL_SHARE):
        return None
    if min(len(sa), len(sb)) <= THIN and a.section and b.section and not (a.section & b.section):
        return None  # "The default value is 20." under two different headings
    number = _number_conflict(a, b)
    rule = None
    if number is None:
        claim, passage = (a, b) if len(sa) <= len(sb) else (b, a)
        if len(_first_clause(claim) - passage.context) > FOREIGN_MAX:
            return None  # the shorter side speaks of something the other's passage does not
        rule = _rule_conflict(a, b)
    if number is None and rule is None:
        return None
    if said_of_others(a, b, *number[:2]) if number else groups_differ(a, b):
        return None  # said of different groups of people
    if excluded(a, b, cache) or excluded(b, a, cache):
        return None
    closeness = (
        share if math.isnan(cos) else 0.5 * share + 0.5 * min(1.0, max(0.0, (cos - 0.7) / 0.25))
    )
    if number is not None:
        sa_slot, sb_slot, bound = number
        found = Contradiction(
            kind="number",
            subject=subject(a, bound or shared),
            a=quote(a),
            b=quote(b),
            detail=f"{sa_slot.shown} against {sb_slot.shown}",
            score=round(0.4 + 0.6 * closeness, 3),
        )
        return found, (sa_slot, sb_slot)
    assert rule is not None
    found = Contradiction(
        kind="rule",
        subject=subject(a, shared),
        a=quote(a),
        b=quote(b),
        detail=rule,
        score=round(0.3 + 0.6 * closeness, 3),
    )
    return found, None


def _first_clause(u: Unit) -> frozenset[str]:
    """The content stems of a sentence's first independent clause (up to ";" or ":"): what
    "Plasterboard is not accepted at Ashcombe Lane; please take it to Millfield" states; the
    instruction after it is its own."""
    first = re.split(r"[;:]\s", u.text, maxsplit=1)[0]
    return u.content if first == u.text else frozenset(stem_set(first)) - NOISE


def other_model(a: Unit, b: Unit) -> bool:
    """True when the two sides name one model word with different codes ("Ridgeline 2",
    "Ridgeline 3"), in their text or their document's title and section path."""
    return any(b.names.get(word, code) != code for word, code in a.names.items())


def _number_conflict(a: Unit, b: Unit) -> tuple[Slot, Slot, frozenset[str]] | None:
    """(a's slot, b's slot, their bound words) of the best pair of numbers with one unit and
    the same bound words but different values, neither value found on the other side with
    that unit; None when there is none."""
    best: tuple[tuple[int, int], Slot, Slot, frozenset[str]] | None = None
    for x in a.slots:
        for y in b.slots:
            if not same_unit(x, y) or same_value(x, y):
                continue
            if any(same_unit(x, z) and same_value(x, z) for z in b.slots):
                continue
            if any(same_unit(y, z) and same_value(y, z) for z in a.slots):
                continue
            if not (names_row(x, b) and names_row(y, a)) or slots_differ(x, y):
                continue  # a table row the other side does not name, or another group
            bound = (x.near & b.content) | (y.near & a.content)
            if (
                not all(
                    len(near & other) >= min(SLOT_MIN, len(near))
                    and len(near & other) >= SLOT_SHARE * len(near)
                    for near, other in ((x.near, b.content), (y.near, a.content))
                )
                or not (x.near and y.near)
                or len(bound) < SLOT_MIN
            ):
                continue  # each number's bound words must be the other sentence's
            if (
                len(x.near - b.context) > SLOT_FOREIGN_MAX
                or len(y.near - a.context) > SLOT_FOREIGN_MAX
            ):
                continue  # bound to words the other side's passage does not use
            rank = (len(x.near & y.near), len(bound))
            if best is None or rank > best[0]:
                best = (rank, x, y, bound)
    return None if best is None else best[1:]


def _rule_conflict(a: Unit, b: Unit) -> str | None:
    """The rule detail ("... against ...") when one side negates, or uses the opposite
    permission word for, content the other states plainly; else None."""
    if not (a.polar or b.polar):
        return None
    flipped = False
    if a.negative != b.negative:
        neg, other = (a, b) if a.negative else (b, a)
        negated = neg.scope[0] - NOISE
        # what the negation governs must be what the other side states ("no second delivery
        # fee" does not deny "the delivery fee is kept")
        flipped = (
            bool(negated)
            and len(negated - other.stems) == 0
            # ... and the rest of its clause too, but for a word: "no late fees on items
            # borrowed with an Access card" does not deny "the LMS works out late fees"
            and len(neg.denied - other.stems) <= FOREIGN_MAX
            and (
                negation_mismatch(a.stems, a.scope, b.stems, b.scope, a.words)
                or negation_mismatch(b.stems, b.scope, a.stems, a.scope, b.words)
            )
        )
    if not flipped:
        ta, tb = set(a.words.split()), set(b.words.split())
        flipped = (
            any(
                w in ta
                and w not in tb
                and (PERMISSION_OPPOSITES[w] & tb)
                and not (PERMISSION_OPPOSITES[w] & ta)
                for w in POLAR_WORDS
            )
            and a.negative == b.negative
        )
    if not flipped:
        return None
    return f"{clause(a)} against {clause(b)}"


def excluded(claim: Unit, passage: Unit, cache: VerifierCache) -> bool:
    """True when the claim read against the passage shows what is not a contradiction: a
    condition or exception of the passage that the claim does not state, or a rate's period
    the passage gives otherwise (`verify.align`'s `condition` and `period` details)."""
    info = claim_info(claim.read, claim.chunk.meta.language)
    aligned = align(info, claim.read, [_prepared(passage, cache)])
    kinds = {d.kind for d in aligned.details}
    if "condition" in kinds or "period" in kinds:
        return True
    # a condition of the claim's own that the passage does not state (the check above reads
    # the passage's only), and a period the passage names and the claim does not
    cond = condition(claim.words)
    if cond is not None:
        clause = {s for w in cond[1].split()[1:10] if (s := content_stem(w))}
        if clause and len(clause & passage.stems) < len(clause) / 3:
            return True
    return bool(periods(passage.words) - periods(claim.words)) and bool(claim.slots)


def _prepared(unit: Unit, cache: VerifierCache) -> Prepared:
    """The sentence as a passage of its own (its table header as the chunk's lead), with the
    chunk's document metadata and section."""
    header, _, row = unit.read.rpartition("\n")
    chunk = Chunk(
        chunk_id=f"{unit.chunk.chunk_id}@{unit.start}",
        meta=unit.chunk.meta,
        text=unit.read,
        heading_path=unit.chunk.heading_path,
        start=unit.chunk.start + unit.start,
        end=unit.chunk.start + unit.end,
        ordinal=unit.chunk.ordinal,
        lead=header if header and " | " in row else "",
    )
    return cache.prepare(chunk)


def quote(u: Unit) -> Quote:
    meta = u.chunk.meta
    return Quote(
        doc_id=meta.doc_id,
        version=meta.version,
        title=meta.title,
        chunk_id=u.chunk.chunk_id,
        text=u.read if u.read != u.text and " | " in u.text else u.text,
        owner=meta.owner,
        access=meta.access,
        section=u.chunk.section,
    )


def subject(u: Unit, stems: Collection[str]) -> str:
    """A few of the sentence's words (as written, in its order) whose stems are `stems`."""
    out: list[str] = []
    for word in re.findall(r"[^\W\d_][\w'’-]*", u.read):
        s = content_stem(fold_fast(word))
        if s in stems and word.lower() not in {w.lower() for w in out}:
            out.append(word)
        if len(out) == 6:
            break
    return " ".join(out) or u.chunk.section


def clause(u: Unit) -> str:
    """The sentence shortened for a detail: its clause holding the negation or permission
    word, at most 14 words."""
    text = u.text.strip().rstrip(".")
    parts = [p.strip() for p in re.split(r"[;:]\s|,\s", text) if p.strip()]
    cues = CUE_STEMS | {content_stem(w) for w in POLAR_WORDS}
    for part in parts:
        if any(
            content_stem(w) in cues or w in ("not", "cannot", "no", "never")
            for w in words_of(part).split()
        ):
            text = part
            break
    tokens = text.split()
    return " ".join(tokens[:14]) + (" …" if len(tokens) > 14 else "")
