"""The numbers of a sentence as the contradiction finder compares them (`read_slots`): each
a `Slot` with a canonical unit and value, the text showing it, the content words bound to it,
the groups of people and the capitalised names it is said of, and its role in a retention
period. Times of day come from `tether.language.clock`, numbers written as words from
`tether.language.number_words`, the rest from the verifier's reader
(`tether.language.quantities`); a table row's numbers are bound to the row's label and the
column's heading. `contradiction_units` reads a sentence's slots with it and re-exports
`Slot`, `same_unit`, `same_value` and `slots_differ`.

What it cannot do: a unit said with another word, or a count whose noun comes before the
number ("attempts: 5"), reads as no unit; ranges and dates are left out; a number's bound
words are found by position (a window of words in its clause), not by parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tether.health.contradiction_lexicon import (
    BASE_UNITS,
    CLAUSE_CUT,
    CODE,
    GROUP_STEMS,
    GROUP_WORDS,
    MORE_UNITS,
    NOISE,
    STOP_COUNT,
    TOLERANT,
    UNIT_WORDS,
    YEAR,
    joined,
)
from tether.language.clock import read_clock
from tether.language.number_words import read_word_numbers
from tether.language.quantities import UNIT_AFTER, UNITS, qualify, read_quantities
from tether.language.stems import content_stem, stem_set
from tether.text import fold_fast, words_of

__all__ = ["Slot", "read_slots", "same_unit", "same_value", "slots_differ"]

_WINDOW = 5  # a number's bound words: this many content words either side, in its clause
_MODEL_BEFORE = re.compile(r"\b[A-Z][\w-]*[a-z][\w-]*\s$")
_ORDINAL = re.compile(r"\d{1,3}[.)]\s")
_WORKING = re.compile(r"\s?-?\s?(?:working|business)\s+days?\b", re.I)
# After a number: "or more", "or fewer" ... before its unit ("twelve or more characters").
_BOUND_AFTER = re.compile(r"\s+(?:or|and)\s+(?:more|fewer|less|over|above|under|longer)\b", re.I)
_COUNTED = re.compile(r"\s?-?([A-Za-z][A-Za-z'-]*)")
_AT_OR = re.compile(r"\b(?:at|on|by) or (after|before|later|earlier)\b", re.I)
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w'’-]*")
_ASIDE = re.compile(r"\([^)]*\)")


@dataclass(frozen=True)
class Slot:
    """A number of a sentence: its unit (canonical), value (in that unit), the text showing
    it, and the content-word stems bound to it."""

    unit: str
    value: float
    shown: str
    near: frozenset[str]
    label: frozenset[str] = frozenset()  # a table row's label: the other side must name it
    codes: frozenset[str] = frozenset()  # sizes or grades in that label ("A4")
    # the groups of people the number is said of ("£60 for an adult", a table cell under
    # "Adult"): its bound words (and a cell's row label and column heading) of `GROUP_WORDS`
    groups: frozenset[str] = frozenset()
    # capitalised words of its clause near it, but a sentence's first: the named thing the
    # number is said of ("A replacement Valley Card costs £5"); none for a table cell
    names: frozenset[str] = frozenset()
    # "hold": how long something is kept ("held for two weeks", "7 days to collect it");
    # "end": after how long it goes ("unclaimed after 10 days ... is disposed of", "older
    # than sixty days have been deleted"); "" for any other number (`_role`)
    role: str = ""


def slots_differ(x: Slot, y: Slot) -> bool | None:
    """Whether two numbers are said of different things, read from the numbers themselves:
    True when both name groups of people and not the same ("£50" under "Adult" against
    "£25 for a child", "undergraduate students" against "postgraduate students"), or both
    are bound to capitalised names and no name is shared ("A replacement Valley Card costs £5" against "A replacement Young Person card costs
    £10"); False when both name the same group; None when the numbers do not say (the
    sentences' groups decide: `groups_differ`)."""
    if x.names and y.names and not (x.names & y.names):
        return True
    if x.groups and y.groups:
        return x.groups != y.groups
    return None


def same_unit(x: Slot, y: Slot) -> bool:
    return x.unit == y.unit


def same_value(x: Slot, y: Slot) -> bool:
    """One value (1 TB and 1000 GB are one data size, six inches and 15 cm one length; else
    equal to rounding)."""
    tolerance = TOLERANT.get(x.unit, 1e-9)
    return abs(x.value - y.value) <= tolerance * max(abs(x.value), abs(y.value), 1e-12)


def read_slots(sentence: str, header: str | None, language: str) -> list[Slot]:
    if header is not None:
        return _cell_slots(sentence, header, language)
    clocked = _clock_slots(sentence)
    out = [slot for slot, _span in clocked]
    clocks = [span for _slot, span in clocked]
    q = read_quantities(sentence, language)
    if q.items:
        units, ranges = qualify(sentence, q)
        in_range = {k for pair in ranges for k in pair}
        for k, ((key, display), at, unit) in enumerate(zip(q.items, q.where, units, strict=True)):
            if k in in_range or not key.startswith("n:") or unit == "version":
                continue
            if any(start <= at < end for start, end in clocks):
                continue  # a time of day, read above
            if _ORDINAL.match(sentence, at) and not sentence[:at].strip():
                continue  # "2. Creating Partial Indexes": a section's or a step's number
            if YEAR.fullmatch(key[2:]) and not unit:
                continue  # a year
            if not unit and _MODEL_BEFORE.search(sentence[max(0, at - 20) : at]):
                continue  # a model's number ("Ridgeline 2"), not "Allow 2 hours"
            slot = _slot(sentence, key[2:], display, at, unit)
            if slot is not None:
                out.append(slot)
    if language == "en":
        out += [w for w in _word_slots(sentence) if w.unit != "#o'clock"]
    return out


def _clock_slots(sentence: str) -> list[tuple[Slot, tuple[int, int]]]:
    """The times of day of a sentence as numbers of unit "clock" (minutes after midnight,
    `tether.language.clock`), each with where it is written: "09:30" and "half past nine in
    the morning" are one value; "9 o'clock" is 540."""
    out: list[tuple[Slot, tuple[int, int]]] = []
    for minutes, start, end in read_clock(sentence):
        shown = sentence[start:end]
        slot = _slot(sentence, str(minutes), shown, start, "clock")
        if slot is not None:
            out.append((replace(slot, shown=shown), (start, end)))
    return out


def _word_slots(sentence: str) -> list[Slot]:
    """The numbers written as words that a unit or a counted noun follows ("two weeks",
    "twelve or more characters")."""
    out: list[Slot] = []
    for value, start, end in read_word_numbers(sentence):
        after = UNIT_AFTER.match(fold_fast(sentence[end : end + 40]))
        unit = ""
        if after and not _BOUND_AFTER.match(sentence, end):
            unit = UNITS.get(after.group(3).replace(" ", ""), "")
        slot = _slot(sentence, str(value), sentence[start:end], start, unit)
        if slot is not None and slot.unit:
            out.append(slot)
    return out


def _slot(sentence: str, number: str, display: str, at: int, unit: str) -> Slot | None:
    try:
        value = float(number)
    except ValueError:
        return None
    end = at + len(display)
    if not unit:
        unit = _more_unit(sentence, end)
    if unit == "day" and _WORKING.match(sentence, end):
        unit, factor = "wday", 1.0
    else:
        unit, factor = BASE_UNITS.get(unit, (unit, 1.0))
    head = CLAUSE_CUT.split(_AT_OR.sub(r"\1", sentence[:at]))[-1]  # "at or after 9 o'clock"
    tail = CLAUSE_CUT.split(sentence[end:])[0]
    before, after = _subject_stems(head), _subject_stems(tail)
    if not before and not after:  # "... and charge you £65": its clause names nothing; the
        before = _subject_stems(sentence[:at])  # earlier clauses do ("We change the lock")
    before, after = before[-_WINDOW:], after[:_WINDOW]
    near = frozenset(before + after)
    value *= factor
    return Slot(
        unit,
        value,
        _shown(sentence, at, display),
        near,
        groups=near & GROUP_STEMS,
        names=_near_names(sentence, at - len(head), end, tail),
        role=_role(sentence, at, end, head, tail) if unit in ("minute", "month") else "",
    )


def _subject_stems(text: str) -> list[str]:
    """The content stems of `text` in order, but those of `NOISE`."""
    return [s for w in words_of(joined(text)).split() if (s := content_stem(w)) and s not in NOISE]


# How long something is kept, and after how long it goes: a retention period said either way
_HOLD = re.compile(r"\b(?:kept|keep|keeps|held|hold|holds|stored|retained|retain|retains)\b", re.I)
_HOLD_AFTER = re.compile(r"\s*(?:[a-z]+\s+)?(?:to|in which to)\s+(?:collect|claim|pick)\b", re.I)
_END = re.compile(
    r"\b(?:deleted|disposed|destroyed|cleared|discarded|removed|donated|recycled|shredded"
    r"|thrown away|goes out|go out|sent back|returned to (?:stock|the shelves?))\b",
    re.I,
)
_END_BEFORE = re.compile(r"\b(?:after|older than|more than|over|longer than|beyond)\s+$", re.I)


def _role(sentence: str, at: int, end: int, head: str, tail: str) -> str:
    """A duration's role in its sentence: "hold" ("held at the office for two weeks", "you
    have 7 days to collect it"), "end" ("still unclaimed after 10 days ... goes out",
    "older than sixty days have been deleted"), or "" (`Slot.role`)."""
    if _END_BEFORE.search(sentence[max(0, at - 20) : at]) and _END.search(sentence):
        return "end"
    if _HOLD.search(head) or _HOLD.search(tail) or _HOLD_AFTER.match(sentence, end):
        return "hold"
    return ""


def _near_names(sentence: str, head_start: int, end: int, tail: str) -> frozenset[str]:
    """The capitalised words of a number's clause, a few either side of it, but the
    sentence's first word and words of `GROUP_WORDS` (folded)."""
    first = len(sentence) - len(sentence.lstrip())
    found = [
        m
        for m in _CAPITALISED.finditer(sentence, head_start, end + len(tail))
        if m.start() != first and m.group(0).lower() not in GROUP_WORDS
    ]
    before = [m.group(0) for m in found if m.end() <= end][-_WINDOW:]
    after = [m.group(0) for m in found if m.start() >= end][:_WINDOW]
    return frozenset(fold_fast(w) for w in before + after)


def _more_unit(sentence: str, end: int) -> str:
    """The unit the verifier's reader does not give: a data size, pence ("20p"), or the
    noun counted ("10 failed sign-in attempts": "#attempt"); "" when none."""
    rest = sentence[end:]
    m = re.match(r"\s?([A-Za-z]+)\b", rest)
    found = MORE_UNITS.get(m.group(1).lower(), "") if m else ""
    if found and (found != "p" or (m and (m.start(1) == 0 or m.group(1).lower() == "pence"))):
        return found
    two = re.match(r"\s?([A-Za-z]+)\s+([A-Za-z]+)\b", rest)
    if two and two.group(1).lower() not in STOP_COUNT and UNITS.get(two.group(2).lower()):
        return UNITS[two.group(2).lower()]  # "48 consecutive hours"
    bound = _BOUND_AFTER.match(rest)
    pos = bound.end() if bound else 0
    counted: list[str] = []
    while len(counted) < 3:
        w = _COUNTED.match(rest, pos)
        if w is None or w.group(1).lower() in STOP_COUNT:
            break
        counted.append(w.group(1).lower())
        pos = w.end()
    nouns = [w for w in counted if len(w) > 3 and w.endswith("s") and not w.endswith("ss")]
    head = nouns[0] if nouns else (counted[-1] if counted else "")
    stem = content_stem(head)
    if not stem or stem in NOISE:
        return ""
    return "#" + stem


def _shown(text: str, at: int, display: str) -> str:
    """The number as written with its currency sign or unit word ("$75", "45 days")."""
    start = at - 1 if at > 0 and text[at - 1] in "$€£" else at
    m = re.match(r"[\d.,\s\u00a0\u202f]*\d", text[at:])
    end = at + (m.end() if m else len(display))
    after = re.match(r"\s?(?:%|[^\W\d_]+)", text[end:])
    working = _WORKING.match(text, end)
    if working:
        return text[start : working.end()].strip()
    if after and (
        after.group(0).strip() == "%"
        or fold_fast(after.group(0).strip()) in UNIT_WORDS
        or (after.group(0) == "p")
    ):
        end += after.end()
    return text[start:end].strip()


def _cell_slots(row: str, header: str, language: str) -> list[Slot]:
    """A table row's numbers, each bound to its row label and column heading."""
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    heads = [c.strip() for c in header.strip().strip("|").split("|")]
    if len(cells) < 2:
        return []
    # "Fitness class (up to 60 minutes)" is named by "fitness class": an aside is no name
    label = stem_set(_ASIDE.sub("", cells[0])) or stem_set(cells[0])
    codes = frozenset(CODE.findall(fold_fast(cells[0])))
    out: list[Slot] = []
    for j, cell in enumerate(cells[1:], start=1):
        q = read_quantities(cell, language)
        if len(q.items) != 1 or not q.items[0][0].startswith("n:"):
            continue
        key, display = q.items[0]
        units, _ = qualify(cell, q)
        head = heads[j] if j < len(heads) else ""
        slot = _slot(cell, key[2:], display, q.where[0], units[0])
        if slot is None:
            continue
        if not slot.unit and cell.strip() == display.strip():  # a bare number: the noun its
            slot = replace(slot, unit=_more_unit(" " + head, 0))  # column counts ("Visits")
        near = (label | stem_set(head) | slot.near) - NOISE
        groups = near & GROUP_STEMS
        out.append(Slot(slot.unit, slot.value, slot.shown, near, label, codes, groups))
    return out
