"""Contradictions between documents in force together: two different documents (not two
versions of one) that, on the same date, state different things about the same subject.

`find_contradictions(store, as_of)` returns `tether.types.Contradiction` records, best first:
- kind `number`: the same number slot with different values ("free delivery from $75"
  against "Free standard delivery from | $99" under the same zone), the numbers compared with
  their units (`verify.quantities`: 1,000 → 1000; a week is 7 days, a year 12 months, so "two
  weeks" against "14 days" is the same value);
- kind `rule`: one side negates what the other states plainly on the same content ("may be
  returned in store" against "cannot be returned in store"; `verify.negation`), or uses the
  opposite permission word (allowed / prohibited, included / excluded, required / optional).

How. The sentences worth comparing are those of the chunks in force on `as_of` (the same
sentences `tether.text.sentence_spans` gives sentence vectors to; a table row is read with
its table's header row) that hold a number or a polarity cue. Candidate pairs are the nearest
sentences of other documents: by the index's sentence vectors when it has them (else the
`embedder`'s vectors of those sentences, else none), together with the sentences sharing
most rare content words (so an index without vectors still gets pairs). Each pair is then
checked with the claim checker's parts (`tether.verify`), each sentence read as a claim
against the other as its passage: the subject must align (most content words shared; for a
number, the words bound to it: its clause's words near it, or a table cell's row label and
column heading), and the only mismatch must be a number of the same unit or a negation;
`verify.align`'s details reject the pairs the issue lists as not contradictions: a
`condition` or exception one side states and the other does not ("unless it is faulty", "if",
"except"), a `period` named otherwise ("per month" against "per year"), and model names that
differ ("Ridgeline 2" against "Ridgeline 3", also in the titles). A document of a type listed
in `exception_types` (default: notices) is, as the bundled governance document says, an
exception for its dates and is never paired. A pair of sentences is reported once; one
sentence against one other document once (its best pair). With a `judge` (the `Judge`
protocol), a pair the judge finds each side supports with the other (both scores at or above
its threshold) is dropped: meant for a model judge (`verify.judges.NLIJudge`, `LLMJudge`);
the learned alignment judge (`verify.learned.AlignmentJudge`) reads words and numbers as
these rules do and, on the demo with planted contradictions, passed both ways 3 of the 7
true findings (it would drop them), so no judge is the default.

Cost: one matrix product over the candidate sentences' vectors (in blocks), then a few
hundred to a few thousand pair checks of a millisecond or so; nothing is loaded unless an
`embedder` is given for an index without sentence vectors (then those sentences are embedded
once, which is the slow part).

What it cannot do: it compares sentences two at a time, so a contradiction that needs two
sentences of one side (a rule in one sentence, its number in the next) or a table cell whose
row or column is named only in an earlier chunk is missed; a contradiction worded with few
common words ("kept" for "not refunded", a synonym) or in two languages (pairs of different
languages are not compared) is missed; a condition on either side stops a finding even when
the unconditional part contradicts the other ("never expire as long as the account stays
open" against "expire after 24 months"); ranges ("3 to 7 days") and dates are not compared;
numbers of different kinds (a count of items against a price) are told apart by their unit
only, so two bare numbers with the same neighbouring words can be read as one slot.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

import numpy as np

from tether.protocols import Embedder, Judge, SearchableStore, Store
from tether.text import fold_fast, sentence_spans, sentence_text, words_of
from tether.types import Chunk, Contradiction, Quote
from tether.verify.align import align
from tether.verify.cues import GENERIC, condition, main_clause, periods, polarity
from tether.verify.negation import CUE_STEMS, negation_mismatch, negation_scope
from tether.verify.passages import Prepared, VerifierCache
from tether.verify.quantities import UNIT_AFTER, qualify, read_quantities
from tether.verify.reading import claim_info
from tether.verify.stems import WORD_RE, content_stem, stem_set

if TYPE_CHECKING:
    from tether.types import Progress

__all__ = ["EXCEPTION_TYPES", "find_contradictions"]

# Thresholds, chosen on the bundled demo collection with contradictions planted in a copy of
# it (bench/bench_health.py); round values.
NEIGHBOURS = 8  # nearest sentences of other documents by vector, per sentence
LEXICAL_NEIGHBOURS = 6  # ... and by rare shared content words
MIN_COSINE = 0.80  # a vector neighbour must be at least this close (multilingual-e5-small)
SUBJECT_SHARE = 0.5  # share of the shorter side's content words the other must hold
SLOT_SHARE = 0.5  # share of a number's bound words the other number's must hold...
SLOT_MIN = 2  # ...and at least this many (or all of them when fewer; two in all)
THIN = 3  # a sentence with this few content words is read with its section heading
EXCEPTION_TYPES: tuple[str, ...] = ("notice",)  # a notice gives more, for its dates only
_COMMON_DF = 0.05  # a content word in more than this share of the sentences is not "rare"

# Permission words whose opposite on the other side, on the same content, is a rule conflict.
_PERMISSION_OPPOSITES = {
    "allowed": {"forbidden", "prohibited"}, "permitted": {"forbidden", "prohibited"},
    "forbidden": {"allowed", "permitted"}, "prohibited": {"allowed", "permitted"},
    "included": {"excluded"}, "excluded": {"included"}, "includes": {"excludes"},
    "excludes": {"includes"}, "required": {"optional"}, "mandatory": {"optional"},
    "optional": {"required", "mandatory"}, "accepted": {"refused"}, "refused": {"accepted"},
}  # fmt: skip
_POLAR_WORDS = frozenset(_PERMISSION_OPPOSITES)
# A unit's canonical base, and the factor to it: "two weeks" and "14 days" are one value.
_BASE = {"week": ("day", 7.0), "year": ("month", 12.0), "hour": ("minute", 60.0)}
_CLAUSE_CUT = re.compile(r"[;:()]|,\s|\s(?:and|or|but|while|whereas|et|ou|mais)\s", re.I)
_WINDOW = 5  # a number's bound words: this many content words either side, in its clause
# Words that do not name a subject: units, scope words, the generic words of cost, time and
# permission (`verify.cues.GENERIC`), and the negation cues.
_NOISE = (
    frozenset(
        content_stem(w)
        for w in (
            "day days week weeks month months year years hour hours minute minutes dollar"
            " dollars percent cent cents km kg points point times business working calendar"
            " extra within most least up over under more less only all every any each also"
            " jours jour semaines mois ans heures fois"
        ).split()
    )
    | GENERIC
    | CUE_STEMS
) - {""}
FOREIGN_MAX = 1  # content words of the shorter sentence that the other's passage lacks
SLOT_FOREIGN_MAX = 0  # ... of the words bound to a number
_NEARBY = 300  # characters either side of a sentence that count as its passage
LONG_SHARE = 0.3  # share of the longer side's content words the other must hold...
FULL_SHARE = 0.8  # ...unless the other holds this share of the shorter side's
_MODEL = re.compile(r"\b([A-Z][A-Za-z]+)[\s-]+((?:[A-Z]{1,4}-?)?\d[\w-]*)")
_WITHOUT = re.compile(r"\b(?:without|sans)\b")
_YEAR = re.compile(r"(?:19|20)\d\d")


@dataclass(frozen=True)
class _Slot:
    """A number of a sentence: its unit (canonical), value (in that unit), the text showing
    it, and the content-word stems bound to it."""

    unit: str
    value: float
    shown: str
    near: frozenset[str]
    label: frozenset[str] = frozenset()  # a table row's label: the other side must name it


@dataclass
class _Unit:
    """A sentence worth comparing: where it is, what it says, read once."""

    chunk: Chunk
    start: int  # offsets in the chunk's text
    end: int
    text: str  # as written (the quote)
    read: str  # what the checks read (a table row with its header row)
    stems: frozenset[str]
    words: str  # folded word string
    slots: tuple[_Slot, ...]
    polar: bool
    scope: tuple[frozenset[str], frozenset[str]]
    names: dict[str, str] = field(default_factory=dict)  # model word → code (text and title)
    content: frozenset[str] = frozenset()  # stems that name the subject (`_NOISE` left out)
    negative: bool = False  # its main clause (its condition left out) holds a negation
    context: frozenset[str] = frozenset()  # the stems around it (`_NEARBY`), title, sections
    section: frozenset[str] = frozenset()  # the content stems of its section heading

    @property
    def doc(self) -> str:
        return self.chunk.meta.doc_id


def find_contradictions(
    store: Store,
    as_of: date,
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    progress: Progress | None = None,
    limit: int = 200,
    exception_types: Collection[str] = EXCEPTION_TYPES,
) -> list[Contradiction]:
    """The contradictions between different documents in force on `as_of`, best first, at
    most `limit` (see the module docstring). `embedder` embeds the sentences of an index
    without sentence vectors (None: such an index is paired by shared words only); `judge`
    drops pairs it finds each side supports; `progress(phase, done, total)` is told of each
    phase; documents of a type in `exception_types` are never paired."""
    step = progress or _silent
    chunks = [
        c for c in store.chunks()
        if c.meta.in_force(as_of) and c.meta.doc_type not in exception_types
    ]  # fmt: skip
    step("read sentences", 0, len(chunks))
    units = [u for c in chunks for u in _units(c)]
    step("read sentences", len(chunks), len(chunks))
    if len({u.doc for u in units}) < 2:
        return []
    pairs = _vector_pairs(store, units, embedder, step) | _lexical_pairs(units)
    cache = VerifierCache()
    found: list[tuple[float, int, int, Contradiction]] = []
    ordered = sorted(pairs)
    step("check pairs", 0, len(ordered))
    for n, (i, j, cos) in enumerate(_with_cosine(ordered)):
        result = _check(units[i], units[j], cos, cache)
        if result is not None and not _judged_same(judge, units[i], units[j]):
            found.append((result.score, i, j, result))
        if n % 500 == 0:
            step("check pairs", n, len(ordered))
    step("check pairs", len(ordered), len(ordered))
    return _deduplicated(found, units, limit)


def _silent(_phase: str, _done: int, _total: int) -> None:
    return None


def _with_cosine(pairs: Iterable[tuple[int, int, float]]) -> Iterable[tuple[int, int, float]]:
    """Each pair once, with its best cosine (a lexical-only pair has NaN)."""
    best: dict[tuple[int, int], float] = {}
    for i, j, cos in pairs:
        old = best.get((i, j))
        if old is None or (not math.isnan(cos) and (math.isnan(old) or cos > old)):
            best[(i, j)] = cos
    return ((i, j, cos) for (i, j), cos in sorted(best.items()))


# ------------------------------------------------------------------ reading sentences


def _units(chunk: Chunk) -> list[_Unit]:
    """The sentences of a chunk (questions left out), read once."""
    text = chunk.text
    language = chunk.meta.language
    headers = _table_headers(chunk)
    title_names = _names(" ".join((chunk.meta.title, *chunk.heading_path)))
    head = " ".join((chunk.meta.title, *chunk.heading_path, chunk.lead))
    out: list[_Unit] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if sentence.rstrip().endswith("?"):
            continue  # a question states nothing
        header = headers.get(start)
        read = f"{header}\n{sentence}" if header else sentence
        folded = fold_fast(read)
        tokens = WORD_RE.findall(folded)
        words = " ".join(tokens)
        plain = _WITHOUT.sub("with", fold_fast(sentence))  # "without X" names a case, not a rule
        scope = negation_scope(plain)
        polar = bool(scope[0]) or not _POLAR_WORDS.isdisjoint(tokens)
        slots = _slots(sentence, header, language)
        stems = stem_set(read, folded, tokens)
        out.append(
            _Unit(
                chunk=chunk,
                start=start,
                end=end,
                text=sentence,
                read=read,
                stems=stems,
                words=words,
                slots=tuple(slots),
                polar=polar,
                scope=scope,
                names={**title_names, **_names(sentence)},
                content=stems - _NOISE,
                negative=polarity(main_clause(" ".join(WORD_RE.findall(plain)))) > 0,
                context=stem_set(f"{head} {text[max(0, start - _NEARBY) : end + _NEARBY]}"),
                section=stem_set(chunk.heading_path[-1]) - _NOISE
                if chunk.heading_path
                else frozenset(),
            )
        )
    return out


def _table_headers(chunk: Chunk) -> dict[int, str]:
    """{start of a table row's line: its table's header row} for the chunk's table rows (the
    header is the first row after prose, or the chunk's repeated `lead`)."""
    out: dict[int, str] = {}
    header = chunk.lead if " | " in chunk.lead else None
    pos = 0
    for line in chunk.text.split("\n"):
        begin, pos = pos, pos + len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        if " | " not in stripped and not stripped.startswith("|"):
            header = None
            continue
        if re.fullmatch(r"[\s|:-]+", stripped):
            continue
        if header is None:
            header = stripped
            continue
        out[begin + len(line) - len(line.lstrip())] = header
    return out


def _names(text: str) -> dict[str, str]:
    """Model names of a text: {word folded: code} ("Ridgeline 2" → {"ridgeline": "2"})."""
    out: dict[str, str] = {}
    for m in _MODEL.finditer(text):
        code = m.group(2)
        if _YEAR.fullmatch(code):
            continue
        after = UNIT_AFTER.match(fold_fast(text[m.end() : m.end() + 20]))
        if after and after.group(3) in ("days", "day", "weeks", "months", "years", "hours"):
            continue  # "Allow 5 days": a quantity
        out.setdefault(fold_fast(m.group(1)), fold_fast(code))
    return out


def _slots(sentence: str, header: str | None, language: str) -> list[_Slot]:
    if header is not None:
        return _cell_slots(sentence, header, language)
    q = read_quantities(sentence, language)
    if not q.items:
        return []
    units, ranges = qualify(sentence, q)
    in_range = {k for pair in ranges for k in pair}
    out: list[_Slot] = []
    for k, ((key, display), at, unit) in enumerate(zip(q.items, q.where, units, strict=True)):
        if k in in_range or not key.startswith("n:") or unit == "version":
            continue
        if _YEAR.fullmatch(key[2:]) and not unit:
            continue  # a year
        if _MODEL_BEFORE.search(sentence[max(0, at - 20) : at]):
            continue  # a model's number ("Ridgeline 2")
        slot = _slot(sentence, key, display, at, unit)
        if slot is not None:
            out.append(slot)
    return out


_MODEL_BEFORE = re.compile(r"\b[A-Z][\w-]*[a-z][\w-]*\s$")


def _slot(sentence: str, key: str, display: str, at: int, unit: str) -> _Slot | None:
    try:
        value = float(key[2:])
    except ValueError:
        return None
    base, factor = _BASE.get(unit, (unit, 1.0))
    head = _CLAUSE_CUT.split(sentence[:at])[-1]
    tail = _CLAUSE_CUT.split(sentence[at + len(display) :])[0]
    before = [s for w in words_of(head).split() if (s := content_stem(w)) and s not in _NOISE]
    after = [s for w in words_of(tail).split() if (s := content_stem(w)) and s not in _NOISE]
    before, after = before[-_WINDOW:], after[:_WINDOW]
    return _Slot(base, value * factor, _shown(sentence, at, display), frozenset(before + after))


def _shown(text: str, at: int, display: str) -> str:
    """The number as written with its currency sign or unit word ("$75", "45 days")."""
    start = at - 1 if at > 0 and text[at - 1] in "$€£" else at
    m = re.match(r"[\d.,\s\u00a0\u202f]*\d", text[at:])
    end = at + (m.end() if m else len(display))
    after = re.match(r"\s?(?:%|[^\W\d_]+)", text[end:])
    if after and (
        after.group(0).strip() == "%" or fold_fast(after.group(0).strip()) in _UNIT_WORDS
    ):
        end += after.end()
    return text[start:end].strip()


_UNIT_WORDS = frozenset(
    "day days week weeks month months year years hour hours minute minutes percent km kg points"
    " point times jours jour semaines mois ans heures".split()
)


def _cell_slots(row: str, header: str, language: str) -> list[_Slot]:
    """A table row's numbers, each bound to its row label and column heading."""
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    heads = [c.strip() for c in header.strip().strip("|").split("|")]
    if len(cells) < 2:
        return []
    label = stem_set(cells[0])
    out: list[_Slot] = []
    for j, cell in enumerate(cells[1:], start=1):
        q = read_quantities(cell, language)
        if len(q.items) != 1 or not q.items[0][0].startswith("n:"):
            continue
        key, display = q.items[0]
        units, _ = qualify(cell, q)
        head = heads[j] if j < len(heads) else ""
        slot = _slot(cell, key, display, q.where[0], units[0])
        if slot is None:
            continue
        near = (label | stem_set(head) | slot.near) - _NOISE
        out.append(_Slot(slot.unit, slot.value, slot.shown, near, label))
    return out


# ------------------------------------------------------------------ candidate pairs


def _vector_pairs(
    store: Store, units: list[_Unit], embedder: Embedder | None, step: Progress
) -> set[tuple[int, int, float]]:
    """(i, j, cosine) with i < j: each sentence's nearest sentences of other documents (same
    language) at `MIN_COSINE` or more, by the index's sentence vectors, else `embedder`'s."""
    vectors = _sentence_matrix(store, units, embedder, step)
    if vectors is None:
        return set()
    have, matrix = vectors
    docs = np.array([hash(units[i].doc) for i in have])
    langs = np.array([hash(units[i].chunk.meta.language) for i in have])
    queries = np.array([r for r, i in enumerate(have) if _query(units[i])], dtype=np.int64)
    out: set[tuple[int, int, float]] = set()
    k = min(NEIGHBOURS, len(have) - 1)
    if k <= 0 or not len(queries):
        return out
    for lo in range(0, len(queries), 512):
        rows = queries[lo : lo + 512]
        sims = matrix[rows] @ matrix.T
        sims[(docs[rows][:, None] == docs[None, :]) | (langs[rows][:, None] != langs[None, :])] = -1
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        for r, row in enumerate(top):
            for c in row:
                cos = float(sims[r, c])
                if cos >= MIN_COSINE:
                    a, b = have[int(rows[r])], have[int(c)]
                    out.add((min(a, b), max(a, b), cos))
    return out


def _query(u: _Unit) -> bool:
    """A sentence whose neighbours are looked for: one holding a number or a polarity cue
    (the other side of a rule conflict may hold neither)."""
    return bool(u.slots) or u.polar


def _sentence_matrix(
    store: SearchableStore, units: list[_Unit], embedder: Embedder | None, step: Progress
) -> tuple[list[int], np.ndarray] | None:
    """(indexes of the units that have a vector, their vectors as rows): the index's sentence
    vectors by span, the rest embedded by `embedder` when one is given."""
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
    return have, matrix


def _lexical_pairs(units: list[_Unit]) -> set[tuple[int, int, float]]:
    """(i, j, NaN) with i < j: each sentence's sentences of other documents (same language)
    sharing most rare content words (weighted by rarity), at least two of them."""
    postings: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        for s in u.content:
            postings.setdefault(s, []).append(i)
    cap = max(50, int(_COMMON_DF * len(units)))
    out: set[tuple[int, int, float]] = set()
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


# ------------------------------------------------------------------ checking a pair


def _check(a: _Unit, b: _Unit, cos: float, cache: VerifierCache) -> Contradiction | None:
    """The contradiction between two sentences of different documents, or None."""
    if a.doc == b.doc or _other_model(a, b):
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
        if len(claim.content - passage.context) > FOREIGN_MAX:
            return None  # the shorter side speaks of something the other's passage does not
        rule = _rule_conflict(a, b)
    if number is None and rule is None:
        return None
    if _excluded(a, b, cache) or _excluded(b, a, cache):
        return None
    closeness = (
        share if math.isnan(cos) else 0.5 * share + 0.5 * min(1.0, max(0.0, (cos - 0.7) / 0.25))
    )
    if number is not None:
        sa_slot, sb_slot, bound = number
        return Contradiction(
            kind="number",
            subject=_subject(a, bound or shared),
            a=_quote(a),
            b=_quote(b),
            detail=f"{sa_slot.shown} against {sb_slot.shown}",
            score=round(0.4 + 0.6 * closeness, 3),
        )
    assert rule is not None
    return Contradiction(
        kind="rule",
        subject=_subject(a, shared),
        a=_quote(a),
        b=_quote(b),
        detail=rule,
        score=round(0.3 + 0.6 * closeness, 3),
    )


def _other_model(a: _Unit, b: _Unit) -> bool:
    """True when the two sides name one model word with different codes ("Ridgeline 2",
    "Ridgeline 3"), in their text or their document's title and section path."""
    return any(b.names.get(word, code) != code for word, code in a.names.items())


def _number_conflict(a: _Unit, b: _Unit) -> tuple[_Slot, _Slot, frozenset[str]] | None:
    """(a's slot, b's slot, their bound words) of the best pair of numbers with one unit and
    the same bound words but different values, neither value found on the other side with
    that unit; None when there is none."""
    best: tuple[tuple[int, int], _Slot, _Slot, frozenset[str]] | None = None
    for x in a.slots:
        for y in b.slots:
            if x.unit != y.unit or math.isclose(x.value, y.value):
                continue
            if any(math.isclose(x.value, z.value) for z in b.slots if z.unit == x.unit):
                continue
            if any(math.isclose(y.value, z.value) for z in a.slots if z.unit == y.unit):
                continue
            if (x.label and not x.label <= b.stems) or (y.label and not y.label <= a.stems):
                continue  # a table row the other side does not name
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


def _rule_conflict(a: _Unit, b: _Unit) -> str | None:
    """The rule detail ("... against ...") when one side negates, or uses the opposite
    permission word for, content the other states plainly; else None."""
    if not (a.polar or b.polar):
        return None
    flipped = False
    if a.negative != b.negative:
        neg, other = (a, b) if a.negative else (b, a)
        negated = neg.scope[0] - _NOISE
        # what the negation governs must be what the other side states ("no second delivery
        # fee" does not deny "the delivery fee is kept")
        flipped = (
            bool(negated)
            and len(negated - other.stems) == 0
            and (
                negation_mismatch(a.stems, a.scope, b.stems, b.scope, a.words)
                or negation_mismatch(b.stems, b.scope, a.stems, a.scope, b.words)
            )
        )
    if not flipped:
        ta, tb = set(a.words.split()), set(b.words.split())
        flipped = any(
            w in ta and w not in tb and (_PERMISSION_OPPOSITES[w] & tb)
            and not (_PERMISSION_OPPOSITES[w] & ta)
            for w in _POLAR_WORDS
        ) and a.negative == b.negative  # fmt: skip
    if not flipped:
        return None
    return f"{_clause(a)} against {_clause(b)}"


def _excluded(claim: _Unit, passage: _Unit, cache: VerifierCache) -> bool:
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


def _prepared(unit: _Unit, cache: VerifierCache) -> Prepared:
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


def _judged_same(judge: Judge | None, a: _Unit, b: _Unit) -> bool:
    """True when `judge` finds each sentence supported by the other (at its threshold)."""
    if judge is None:
        return False
    cut = float(getattr(judge, "threshold", 0.5))
    return judge.score(a.read, [b.read]) >= cut and judge.score(b.read, [a.read]) >= cut


# ------------------------------------------------------------------ the report


def _quote(u: _Unit) -> Quote:
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


def _subject(u: _Unit, stems: Collection[str]) -> str:
    """A few of the sentence's words (as written, in its order) whose stems are `stems`."""
    out: list[str] = []
    for word in re.findall(r"[^\W\d_][\w'’-]*", u.read):
        s = content_stem(fold_fast(word))
        if s in stems and word.lower() not in {w.lower() for w in out}:
            out.append(word)
        if len(out) == 6:
            break
    return " ".join(out) or u.chunk.section


def _clause(u: _Unit) -> str:
    """The sentence shortened for a detail: its clause holding the negation or permission
    word, at most 14 words."""
    text = u.text.strip().rstrip(".")
    parts = [p.strip() for p in re.split(r"[;:]\s|,\s", text) if p.strip()]
    cues = CUE_STEMS | {content_stem(w) for w in _POLAR_WORDS}
    for part in parts:
        if any(
            content_stem(w) in cues or w in ("not", "cannot", "no", "never")
            for w in words_of(part).split()
        ):
            text = part
            break
    tokens = text.split()
    return " ".join(tokens[:14]) + (" …" if len(tokens) > 14 else "")


def _deduplicated(
    found: Sequence[tuple[float, int, int, Contradiction]], units: list[_Unit], limit: int
) -> list[Contradiction]:
    """Best first; one finding per sentence and other document (its best pair)."""
    seen: set[tuple[int, str]] = set()
    out: list[Contradiction] = []
    for _score, i, j, c in sorted(found, key=lambda t: (-t[0], t[1], t[2])):
        if (i, units[j].doc) in seen or (j, units[i].doc) in seen:
            continue
        seen.update({(i, units[j].doc), (j, units[i].doc)})
        out.append(c)
        if len(out) >= limit:
            break
    return out
