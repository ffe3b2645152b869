"""Numbers, codes, dates, times, units, ranges and periods: how the verifier reads them, and
the `number_not_found` check.

`read_quantities(text, language)` reads each quantity once, normalised (1,000 → 1000; French
9,95 → 9.95; March 14, 2026 → 2026-03-14; 9 a.m. → 09:00; TR-2200-07 as a code);
`found_keys` and `unit_keys` give the keys a passage or the question makes available (with
generous passage-side expansions: a date gives its day-month, year-month and year; a time its
hours; a code its numbers; number words count); `qualify` gives each number's unit and the
ranges. `number_flags(claim, known)` flags a claim's quantity found in none of them and not a
computed conclusion (a date plus or minus a known period, days between two known dates, an
amount with a known percentage, one step of arithmetic on the claim's and the question's
numbers): the rules are in `tether.verify.check`'s docstring. Internal to `tether.verify`
except `numbers_in`.

What it cannot do: dates such as 14/03/2026 are compared as written; a unit said in other
words ("1,000 Pine Points") reads as no unit and passes; computed values of more than one
step, averages and unit conversions are flagged, and so is a computed range; the arithmetic
allowance can let a wrong number pass when it happens to be a sum or product of the claim's
other numbers.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from tether.text import code_spans, collapse_code, fold, fold_fast
from tether.types import Flag
from tether.verify.stems import DIGIT, WORD_RE

if TYPE_CHECKING:
    from tether.verify.claims import ClaimInfo

__all__ = [
    "MONTH_NAMES",
    "NUMBER",
    "TODAY",
    "UNITS",
    "UNIT_AFTER",
    "Keys",
    "Known",
    "Quantities",
    "canon_number",
    "found_keys",
    "number_flags",
    "numbers_in",
    "qualify",
    "read_periods",
    "read_quantities",
    "unit_keys",
]

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12, "janvier": 1, "février": 2, "fevrier": 2, "mars": 3,
    "avril": 4, "mai": 5, "juin": 6, "juillet": 7, "août": 8, "aout": 8, "septembre": 9,
    "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
MONTH_NAMES = frozenset(fold(m) for m in _MONTHS)
_ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{1,2})-(\d{1,2})(?![\d-])")
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th|er|re|e)?\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", re.IGNORECASE
)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{4}})\b", re.IGNORECASE)
_TIME_AMPM = re.compile(r"(?<![\d:.,])(\d{1,2})(?::([0-5]\d))?\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)
_TIME_24 = re.compile(r"(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])")
_TIME_H = re.compile(r"(?<![\d.,])([01]?\d|2[0-3])\s?h\s?([0-5]\d)?(?!\w)")
NUMBER = re.compile(
    r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[\u00a0\u202f]\d{3})+(?:,\d+)?"
    r"|\d+(?:[.,]\d+)?)(?!\w|[.,]\d)"
)
_NUMBER_FR = re.compile(r"(?<![\w.,])\d{1,3}(?: \d{3})+(?:,\d+)?(?!\w|[.,]\d)")
_PERCENT_AFTER = re.compile(r"^\s?(?:%|percent\b|per cent\b|pour cent\b|pour-cent\b)", re.I)
_DATE_HINT = re.compile(r"\d{4}-\d")
_TIME_HINT = re.compile(r"\d\s?(?:[aApP]\.?\s?[mM]|[hH])|\d:\d")
_PERIOD_HINT = re.compile(r"day|week|month|year|jour|semaine|mois|\ban")
_NUMERIC_UNIT = re.compile(r"(\d+(?:[.,]\d+)?)-?([^\W\d_]+)")
_WORD_NUMBERS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
    "thousand": 1000, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5,
    "sept": 7, "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "quinze": 15,
    "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60, "cent": 100,
    "mille": 1000, "a": 1, "an": 1, "single": 1, "dozen": 12, "douzaine": 12,
}  # fmt: skip
_WORD_NUMBER = "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True))
# A period is read from its unit back to its number ("45 calendar days", "a 12-month", "30 jours
# ouvrables"), which is much faster than a pattern that starts at every word.
_PERIOD_UNIT = re.compile(
    r"\b(?:(calendar|business|working|full|clear)\s+)?(day|week|month|year)s?\b"
    r"|\b(jour|semaine|mois|an|annee)s?(?:\s+(ouvrable|ouvre|calendaire|franc)s?)?\b"
)
_NUMBER_BEFORE = re.compile(  # "45 days", "a 12-month", and ordinals: "the 24th month", "24e mois"
    rf"(?:^|[^\w])(\d+|{_WORD_NUMBER})(?:(?<=\d)(?:st|nd|rd|th|e|er|eme))?(?:\s+|-)$"
)
_NUMBER_WORD = re.compile(rf"\b({_WORD_NUMBER})\b")
_UNIT = {"jour": "day", "semaine": "week", "mois": "month", "an": "year", "annee": "year"}


@dataclass
class Quantities:
    """The numbers, codes, dates and times of a text, as (key, display) items in text order."""

    items: list[tuple[str, str]] = field(default_factory=list)
    where: list[int] = field(default_factory=list)  # start offset of each item

    def add(self, start: int, key: str, display: str) -> None:
        self.items.append((key, display))
        self.where.append(start)

    dates: list[date] = field(default_factory=list)
    percents: list[float] = field(default_factory=list)
    amounts: list[float] = field(default_factory=list)


def canon_number(raw: str, language: str) -> str:
    s = raw.replace("\u00a0", "").replace("\u202f", "").replace(" ", "")
    if "," in s and "." in s:
        s = s.replace(",", "")
    elif "," in s:
        head, *rest = s.split(",")
        if language != "fr" and len(head) <= 3 and all(len(p) == 3 for p in rest):
            s = head + "".join(rest)  # 1,000 → 1000
        else:
            s = head + "." + "".join(rest)  # 9,95 → 9.95
    try:
        text = format(Decimal(s), "f")
    except InvalidOperation:
        return raw
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def _date_items(text: str, q: Quantities, mask: list[str]) -> None:
    def take(m: re.Match[str], key: str, display: str, day: date | None = None) -> None:
        q.add(m.start(), key, display)
        if day is not None:
            q.dates.append(day)
        for i in range(m.start(), m.end()):
            mask[i] = " "

    for m in _ISO_DATE.finditer(text):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        take(m, "d:" + day.isoformat(), day.isoformat(), day)
    masked = "".join(mask)
    found: list[tuple[re.Match[str], int, int, str | None]] = []
    for m in _DAY_MONTH.finditer(masked):
        found.append((m, int(m.group(1)), _MONTHS[m.group(2).lower()], m.group(3)))
    for m in _MONTH_DAY.finditer(masked):
        if m.group(1) == "may" and not m.group(3):
            continue  # the verb
        found.append((m, int(m.group(2)), _MONTHS[m.group(1).lower()], m.group(3)))
    taken: list[tuple[int, int]] = []
    for m, day_n, month, year in sorted(found, key=lambda f: (f[0].start(), -f[0].end())):
        if any(m.start() < e and s < m.end() for s, e in taken):
            continue  # overlaps one already read
        if year:
            try:
                day = date(int(year), month, day_n)
            except ValueError:
                continue
            take(m, "d:" + day.isoformat(), day.isoformat(), day)
        elif 1 <= day_n <= 31:
            take(m, f"md:{month:02d}-{day_n:02d}", f"{month:02d}-{day_n:02d}")
        else:
            continue
        taken.append((m.start(), m.end()))
    for m in _MONTH_YEAR.finditer("".join(mask)):
        month = _MONTHS[m.group(1).lower()]
        take(m, f"ym:{m.group(2)}-{month:02d}", f"{m.group(2)}-{month:02d}")


def _time_items(q: Quantities, mask: list[str]) -> None:
    for pattern in (_TIME_AMPM, _TIME_24, _TIME_H):
        for m in pattern.finditer("".join(mask)):
            hour = int(m.group(1))
            minute = int(m.group(2) or 0)
            if pattern is _TIME_AMPM:
                if not 1 <= hour <= 12:
                    continue
                hour = hour % 12 + (12 if m.group(3).lower() == "p" else 0)
                key = f"t:{hour:02d}:{minute:02d}"
            else:
                key = f"t:{hour:02d}:{minute:02d}" + ("" if hour >= 12 or hour == 0 else "?")
            q.add(m.start(), key, key[2:7])
            for i in range(m.start(), m.end()):
                mask[i] = " "


def read_quantities(text: str, language: str, words: Sequence[str] | None = None) -> Quantities:
    """Dates, times, codes and numbers of `text`, each read once (read spans are masked);
    `words` may hold the folded text's word tokens, when the caller has them."""
    q = Quantities()
    if not DIGIT.search(text):
        return q
    mask = list(text)
    masked = text
    stale = False  # the mask holds more than `masked`
    if words is None and not _DATE_HINT.search(text):
        words = WORD_RE.findall(fold_fast(text))
    if _DATE_HINT.search(text) or not MONTH_NAMES.isdisjoint(words or ()):
        _date_items(text, q, mask)
        masked = "".join(mask)
    if _TIME_HINT.search(masked):
        _time_items(q, mask)
        masked = "".join(mask)
    for start, end, code in code_spans(masked):
        unit = _NUMERIC_UNIT.fullmatch(code)
        if unit and unit.group(2).islower():
            value = canon_number(unit.group(1), language)
            q.add(start, "n:" + value, value)
            q.amounts.append(float(value))
        elif not code.replace(".", "").replace("-", "").isdigit():
            q.add(start, "c:" + collapse_code(code), code)
        else:
            continue
        mask[start:end] = " " * (end - start)
        stale = True
    if stale:
        masked = "".join(mask)
    spans: list[tuple[int, int]] = []
    if language == "fr":
        for m in _NUMBER_FR.finditer(masked):
            spans.append((m.start(), m.end()))
    for m in NUMBER.finditer(masked):
        if not any(s <= m.start() < e for s, e in spans):
            spans.append((m.start(), m.end()))
    for start, end in sorted(spans):
        value = canon_number(masked[start:end], language)
        q.add(start, "n:" + value, value)
        try:
            q.amounts.append(float(value))
        except ValueError:
            continue
        if _PERCENT_AFTER.match(masked[end : end + 12]):
            q.percents.append(float(value))
    order = sorted(range(len(q.items)), key=q.where.__getitem__)
    q.items = [q.items[i] for i in order]
    q.where = [q.where[i] for i in order]
    return q


def numbers_in(text: str, language: str = "en") -> list[str]:
    """The numbers, codes, dates and times of `text`, normalised as the checker compares them
    (1,000 → 1000; 9,95 → 9.95 in French; March 14, 2026 → 2026-03-14; 9 a.m. → 09:00)."""
    return [display for _, display in read_quantities(text, language).items]


_NOT_COUNTED = frozenset(
    {"a", "an", "un", "une", "single", "one", "cent", "mille", "hundred", "thousand"}
)
_CLAIM_WORD_NUMBER = re.compile(
    rf"\b({'|'.join(sorted((w for w in _WORD_NUMBERS if w not in _NOT_COUNTED), key=len, reverse=True))})\b"
)
_WORD_MULTIPLES = {"twice": 2.0, "deux fois": 2.0, "half": 0.5, "moitie": 0.5, "quarter": 0.25,
                   "quart": 0.25, "double": 2.0, "triple": 3.0}  # fmt: skip


def word_numbers(text: str, q: Quantities) -> tuple[list[float], list[str]]:
    """A claim's numbers written as words ("four weeks", "trois fois"): one followed by a unit
    is added to `q` as a number to check (key "n:4", shown as the word); one without a unit
    ("two adult rides") is returned as a count: an operand for arithmetic, checked only when
    the claim computes nothing (`number_flags`). "Twice", "half" and "a quarter" are operands.
    Returns (operands, the words of the counts)."""
    folded = fold_fast(text)
    counts: list[float] = [v for w, v in _WORD_MULTIPLES.items() if re.search(rf"\b{w}\b", folded)]
    words: list[str] = []
    added = False
    for m in _CLAIM_WORD_NUMBER.finditer(folded):
        value = _WORD_NUMBERS[m.group(1)]
        after = UNIT_AFTER.match(folded[m.end() : m.end() + 40])
        if after and UNITS.get(after.group(3).replace(" ", "")):
            q.add(m.start(), f"n:{value}", text[m.start() : m.end()])
            added = True
        else:
            counts.append(float(value))
            words.append(m.group(1))
    if added:
        order = sorted(range(len(q.items)), key=q.where.__getitem__)
        q.items = [q.items[i] for i in order]
        q.where = [q.where[i] for i in order]
    return counts, words


def read_periods(folded: str) -> list[tuple[int, str, bool]]:
    """(n, unit, business days) for each period named in a folded text."""
    out: list[tuple[int, str, bool]] = []
    if not _PERIOD_HINT.search(folded):
        return out
    for m in _PERIOD_UNIT.finditer(folded):
        before = _NUMBER_BEFORE.search(folded, max(0, m.start() - 24), m.start())
        if before is None:
            continue
        raw = before.group(1)
        n = int(raw) if raw.isdigit() else _WORD_NUMBERS.get(raw, 0)
        unit = m.group(2) or _UNIT.get(m.group(3), "")
        modifier = m.group(1) or m.group(4) or ""
        if unit and 0 < n <= 3660:
            out.append((n, unit, modifier in ("business", "working", "ouvrable", "ouvre")))
    return out


def found_keys(q: Quantities, folded: str) -> set[str]:
    """The keys a text makes available to claims (with generous passage-side expansions)."""
    keys: set[str] = set()
    for key, display in q.items:
        keys.add(key)
        if key.startswith("d:"):
            keys.add("md:" + key[7:])
            keys.add("ym:" + key[2:9])
            keys.add("n:" + key[2:6])
        elif key.startswith("t:"):
            hour, minute = int(key[2:4]), int(key[5:7])
            keys.add(key[:7])
            if key.endswith("?"):
                keys.add(f"t:{hour + 12:02d}:{minute:02d}")
            keys.add(f"n:{hour}")
            keys.add(f"n:{hour % 12 or 12}")
        elif key.startswith("c:"):
            for part in re.findall(r"\d+", display):
                keys.add("n:" + str(int(part)))
    for m in _NUMBER_WORD.finditer(folded):
        if m.group(1) not in ("a", "an", "un", "une", "single"):
            keys.add(f"n:{_WORD_NUMBERS[m.group(1)]}")
    return keys


# Units and ranges. A number is compared with the word that says what it counts: "$10" (a
# currency sign before or after it, "dollars"), "4 points", "6 business days", "45-day",
# "2.35 kg", "15%". A claim's number with a unit counts as found only when a passage (or the
# question) has it with the same unit or with none (a bare table cell, a code, a date, a
# number word): "4 points" is not found in a passage whose only 4 is "4 years". Units are
# canonical across EN/FR (jours → day, ans → year, dollars → $). A range ("3 to 7", "3-7",
# "between 3 and 7", "de 3 à 7") is also read as a whole, and a number written after
# "version" is compared with the passage's version. It can be wrong: a unit said with
# another word ("45 calendar days" vs "a 45-day window" reads the same, but "1,000 Pine
# Points" vs "1,000 points" reads "pine" as no unit, so passes), and a true range the
# passage gives as two separate limits is flagged.
UNITS: dict[str, str] = {
    "$": "$", "€": "$", "£": "$", "dollar": "$", "dollars": "$", "euro": "$", "euros": "$",
    "cad": "$", "usd": "$", "%": "%", "percent": "%", "pour": "%",
    "day": "day", "days": "day", "jour": "day", "jours": "day",
    "week": "week", "weeks": "week", "semaine": "week", "semaines": "week",
    "month": "month", "months": "month", "mois": "month",
    "year": "year", "years": "year", "yr": "year", "yrs": "year", "an": "year", "ans": "year",
    "annee": "year", "annees": "year",
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "heure": "hour",
    "heures": "hour", "minute": "minute", "minutes": "minute", "min": "minute",
    "point": "point", "points": "point", "pts": "point", "times": "times", "fois": "times",
    "km": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km",
    "m": "m", "metre": "m", "metres": "m", "meter": "m", "meters": "m", "cm": "cm",
    "mm": "mm", "kg": "kg", "g": "g", "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb",
    "ml": "ml", "litre": "l", "litres": "l", "liter": "l", "liters": "l",
    "°c": "deg", "°": "deg", "degree": "deg", "degrees": "deg", "degre": "deg", "degres": "deg",
    "celsius": "deg", "°f": "degf", "fahrenheit": "degf", "bar": "bar", "bars": "bar",
    "psi": "psi", "kpa": "kpa", "w": "w", "watt": "w", "watts": "w", "v": "v", "volt": "v",
    "volts": "v", "kwh": "kwh", "wh": "wh", "mah": "mah", "inch": "in", "inches": "in",
    "pouce": "in", "pouces": "in", "ft": "ft", "feet": "ft", "foot": "ft", "pieds": "ft",
}  # fmt: skip
_NUM_AT = re.compile(r"\d+(?:[.,\u00a0\u202f]\d+)*")
_WORD_AT = re.compile(r"[^\W\d_]+")
UNIT_AFTER = re.compile(
    r"\s?-?\s?(?:(business|working|calendar|full|clear|(extra|more|additional|further))\s+)?"
    r"(%|\$|€|£|°\s?[cf]?(?![^\W\d_])|[^\W\d_]+)(?:\s+(supplementaires?|additionnels?|de plus))?"
)
_CURRENCY_BEFORE = re.compile(r"[$€£]\s?$")
_VERSION_BEFORE = re.compile(r"\b(?:version|ver|v|rev|revision)\.?\s?$")
_RANGE_JOIN = re.compile(r"\s*[$€£]?\s*(?:to|through|thru|-|–|—|à|a|au)\s*[$€£]?\s*")
_RANGE_AND = re.compile(r"\s*[$€£]?\s*(?:and|et)\s*[$€£]?\s*")
_RANGE_OPEN = re.compile(r"\b(?:between|entre)\s*[$€£]?\s*$")


def qualify(text: str, q: Quantities) -> tuple[list[str], list[tuple[int, int]]]:
    """(unit of each item, or "" — "version" after the word version; pairs of item indexes
    that form a range). Only plain numbers ("n:" keys) get a unit."""
    units = [""] * len(q.items)  # "day+" for "N extra days"
    ends = [0] * len(q.items)
    for i, ((key, _), start) in enumerate(zip(q.items, q.where, strict=True)):
        if not key.startswith("n:"):
            continue
        m = _NUM_AT.match(text, start) or _WORD_AT.match(text, start)
        end = m.end() if m else start
        ends[i] = end
        before = fold_fast(text[max(0, start - 12) : start])
        if _CURRENCY_BEFORE.search(before):
            units[i] = "$"
            continue
        if _VERSION_BEFORE.search(before):
            units[i] = "version"
            continue
        after = UNIT_AFTER.match(fold_fast(text[end : end + 40]))
        if after:
            units[i] = UNITS.get(after.group(3).replace(" ", ""), "")
            if units[i] and (after.group(2) or after.group(4)):
                units[i] += "+"  # "2 extra days": the days after a first one
    ranges: list[tuple[int, int]] = []
    for i in range(len(q.items) - 1):
        if not (q.items[i][0].startswith("n:") and q.items[i + 1][0].startswith("n:")):
            continue
        between = fold_fast(text[ends[i] : q.where[i + 1]])
        opened = _RANGE_OPEN.search(fold_fast(text[max(0, q.where[i] - 12) : q.where[i]]))
        if _RANGE_JOIN.fullmatch(between) or (opened and _RANGE_AND.fullmatch(between)):
            ranges.append((i, i + 1))
            if not units[i] and units[i + 1] != "version":
                units[i] = units[i + 1]  # "3 to 7 business days": 3 is in days too
    return units, ranges


def unit_keys(text: str, q: Quantities, keys: set[str]) -> set[str]:
    """The unit and range keys a passage or question makes available: "u:N|unit" for a number
    with a unit, "u:N|" for one without (and for every number read from a date, time, code or
    number word), "r:A-B" for a range."""
    out: set[str] = set()
    if not q.items and not keys:
        return out
    units, ranges = qualify(text, q) if q.items else ([], [])
    plain: set[str] = set()
    for (key, _), unit in zip(q.items, units, strict=True):
        if key.startswith("n:"):
            plain.add(key)
            out.add(f"u:{key[2:]}|{'' if unit == 'version' else unit}")
    worded: set[str] = set()  # number words with a unit: "three times" is not 3 weeks
    folded = fold_fast(text)
    for m in _NUMBER_WORD.finditer(folded):
        if m.group(1) in ("a", "an", "un", "une", "single"):
            continue
        after = UNIT_AFTER.match(folded[m.end() : m.end() + 40])
        unit = UNITS.get(after.group(3).replace(" ", ""), "") if after else ""
        if unit:
            value = _WORD_NUMBERS[m.group(1)]
            out.add(f"u:{value}|{unit}")
            worded.add(f"n:{value}")
    for key in keys:
        if key.startswith("n:") and key not in plain and key not in worded:
            out.add(f"u:{key[2:]}|")
    for a, b in ranges:
        out.add(f"r:{q.items[a][0][2:]}-{q.items[b][0][2:]}")
    return out


# A claim that speaks of the present may state the as_of date as written ("today, 30 November").
TODAY = re.compile(
    r"\b(?:today|now|currently|at present|as of|as at|this date|aujourd'hui|aujourd hui"
    r"|maintenant|actuellement|en date du|a ce jour|a cette date|a la date d'aujourd'hui)\b"
)


def _add_period(day: date, n: int, unit: str, business: bool, sign: int) -> date | None:
    try:
        if unit == "day":
            if not business:
                return day + timedelta(days=sign * n)
            current = day
            left = n
            while left:
                current += timedelta(days=sign)
                if current.weekday() < 5:
                    left -= 1
            return current
        if unit == "week":
            return day + timedelta(weeks=sign * n)
        months = n * (12 if unit == "year" else 1) * sign
        total = day.year * 12 + day.month - 1 + months
        year, month = divmod(total, 12)
        month += 1
        return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
    except (OverflowError, ValueError):
        return None


class Keys:
    """Membership over several key sets without copying them."""

    __slots__ = ("sets",)

    def __init__(self, *sets: Collection[str]) -> None:
        self.sets = sets

    def __contains__(self, key: object) -> bool:
        return any(key in s for s in self.sets)


@dataclass
class Known:
    """What the question, its date and the cited passages make available to a claim."""

    keys: Keys
    dates: set[date]
    periods: list[tuple[int, str, bool]]
    percents: list[float]
    amounts: list[float]
    question_amounts: list[float] = field(default_factory=list)


def _computed(key: str, claim: ClaimInfo, known: Known) -> bool:
    """True when a claim value not found as written is a computed conclusion (see docstring)."""
    periods = set(known.periods) | set(claim.periods)
    bases = set(known.dates)
    for k, _ in claim.quantities.items:
        if k.startswith("d:") and k in known.keys:
            bases.add(date.fromisoformat(k[2:]))
    if key.startswith(("d:", "md:")):
        target = key.split(":", 1)[1]
        for base in bases:
            for n, unit, business in periods:
                for sign in (1, -1):
                    day = _add_period(base, n, unit, business, sign)
                    if day is None:
                        continue
                    days = [day]
                    if unit in ("month", "year"):  # "the last day of the 24th month after"
                        days.append(day.replace(day=calendar.monthrange(day.year, day.month)[1]))
                    for d in days:
                        iso = d.isoformat()
                        if iso == target or iso[5:] == target:
                            return True
        return False
    if key.startswith("n:"):
        try:
            value = float(key[2:])
        except ValueError:
            return False
        days = sorted(bases)
        for i, first in enumerate(days):
            for second in days[i + 1 :]:
                gap = (second - first).days
                if gap == value or (gap % 7 == 0 and gap // 7 == value):
                    return True
        return _percentage(value, known.amounts, known.percents)
    return False


def _percentage(value: float, amounts: Sequence[float], percents: Sequence[float]) -> bool:
    """True when `value` is a percentage of, off or on one of the amounts."""
    for p in percents:
        for a in amounts:
            for result in (a * p / 100, a * (1 - p / 100), a * (1 + p / 100)):
                if math.isclose(result, value, abs_tol=0.005):
                    return True
    return False


def _arithmetic(value: float, operands: Sequence[float], percents: Sequence[float]) -> bool:
    """True when `value` is one step of arithmetic on the operands: a + b, a - b, a - b + 1
    (days 15 to 20 make 6), a × b, a ÷ b, a ± b × c, or a percentage of, off or on an
    operand."""
    if _percentage(value, operands, percents):
        return True
    close = math.isclose
    for i, a in enumerate(operands):
        for j, b in enumerate(operands):
            if i == j:
                continue
            for c in operands[j + 1 :] if len(operands) <= 12 else ():
                if close(a + b * c, value, abs_tol=0.005) or close(a - b * c, value, abs_tol=0.005):
                    return True  # first day plus 2 extra days at $18
            if (
                close(a + b, value, abs_tol=0.005)
                or close(a - b, value, abs_tol=0.005)
                or close(a - b + 1, value, abs_tol=0.005)
                or close(a * b, value, abs_tol=0.005)
                or (b != 0 and close(a / b, value, abs_tol=0.005))
            ):
                return True
    return False


def _found(key: str, known: Known) -> bool:
    probe = key.rstrip("?")
    if probe in known.keys or key in known.keys:
        return True
    if key.startswith("t:") and key.endswith("?"):
        hour, minute = int(key[2:4]), int(key[5:7])
        return f"t:{hour + 12:02d}:{minute:02d}" in known.keys
    if key.startswith("d:"):  # 24 December (in a passage) of 2026 (a known year)
        return "md:" + key[7:] in known.keys and "n:" + key[2:6] in known.keys
    return False


def _found_with_unit(key: str, unit: str, known: Known) -> bool:
    """`_found`, and for a number with a unit, found with that unit or with none."""
    if unit == "version":
        return "v:" + key[2:] in known.keys or _found(key, known)
    unit = unit.rstrip("+")
    if not _found(key, known):
        return False
    if not unit or not key.startswith("n:"):
        return True
    return f"u:{key[2:]}|" in known.keys or f"u:{key[2:]}|{unit}" in known.keys


# The same length said in another unit: "four weeks" for 28 days, "two years" for 24 months.
_CONVERSIONS = {
    "week": (("day", 7.0),), "day": (("week", 1 / 7),), "year": (("month", 12.0),),
    "month": (("year", 1 / 12),), "hour": (("minute", 60.0),), "minute": (("hour", 1 / 60),),
}  # fmt: skip


def _converted(key: str, unit: str, known: Known) -> bool:
    """True when a claim's length is a passage's length said in another unit."""
    if not key.startswith("n:"):
        return False
    try:
        value = float(key[2:])
    except ValueError:
        return False
    for other, factor in _CONVERSIONS.get(unit.rstrip("+"), ()):
        converted = value * factor
        whole = converted > 0 and math.isclose(converted, round(converted), abs_tol=1e-9)
        if whole and f"u:{canon_number(str(round(converted)), 'en')}|{other}" in known.keys:
            return True
    return False


def number_flags(claim: ClaimInfo, known: Known) -> list[Flag]:
    """number_not_found flags. A number is compared with its unit (`qualify`); a range of the
    claim found as a range in a passage or the question is found. A number not found as
    written may still be a conclusion: see `_computed`; and, when the claim shows its work,
    one step of arithmetic (`_arithmetic`) on the claim's other numbers (found or already
    derived) and the question's numbers, repeated until nothing changes ("$71: $35 for the
    first day plus 2 extra days at $18"). An end of a range not found as a range is never
    derived by arithmetic (7 - 1 must not excuse "6 to 7 business days"), and is shown with
    its range ("number_not_found:6 to 7"). "N extra days" (or weeks, points...) may be a known
    number less one (the first day plus 2 extra days of a 3-day rental); that can let a wrong
    count pass when it is one less than another number of the claim or the question."""
    items = claim.quantities.items
    units = claim.units or ("",) * len(items)
    in_range: dict[int, tuple[int, int]] = {}
    found_ranges: set[int] = set()
    for a, b in claim.ranges:
        if f"r:{items[a][0][2:]}-{items[b][0][2:]}" in known.keys:
            found_ranges.update((a, b))
        else:
            in_range[a] = in_range[b] = (a, b)
    pending: list[int] = []
    operands: list[float] = list(known.question_amounts) + list(claim.counts)
    for i, (key, _) in enumerate(items):
        if i in found_ranges or (
            _found_with_unit(key, units[i], known)
            or _converted(key, units[i], known)
            or _computed(key.rstrip("?"), claim, known)
        ):
            if key.startswith("n:"):
                operands.append(float(key[2:]))
        else:
            pending.append(i)
    numeric = [i for i in pending if items[i][0].startswith("n:") and i not in in_range]
    unfound = len(pending)
    if numeric and len(items) + len(claim.counts) > 1:
        _derive(claim, known, units, pending, numeric, operands)
    if numeric and pending:
        _from_passages(claim, known, pending, operands)
    if len(pending) >= 1:
        _date_pairs(claim, known, pending)
    computes = len(pending) < unfound  # a number of the claim was derived from others
    flags: list[Flag] = []
    if not computes:  # a count said in words ("two discount codes") that nothing holds
        for word in claim.count_words:
            key = f"n:{_WORD_NUMBERS[word]}"
            if key not in known.keys and f"u:{key[2:]}|" not in known.keys:
                flags.append(Flag("number_not_found", word))
    for i in pending:
        display = items[i][1]
        if i in in_range:
            a, b = in_range[i]
            display = f"{items[a][1]} to {items[b][1]}"
        flag = Flag("number_not_found", display)
        if flag not in flags:
            flags.append(flag)
    return flags


_SUM_CUE = re.compile(
    r"\b(?:total|totals|together|plus|combined|in all|altogether|sum|adds? up|au total|en tout|"
    r"ensemble|additionn\w*)\b"
)
_DIFFERENCE_CUE = re.compile(
    r"\b(?:difference|less than|more than|cheaper|saves?|saving|savings|de moins|de plus|"
    r"economi\w*|moins cher|ecart)\b"
)


def _from_passages(
    claim: ClaimInfo, known: Known, pending: list[int], operands: list[float]
) -> None:
    """Remove from `pending` the claim's amounts computed from the cited numbers: a count
    of the claim times a passage amount ("two adult rides cost $5.50" at $2.75 a ride), and,
    when the claim says it adds or compares ("in total", "saves", "de moins"), the sum or
    difference of two passage amounts."""
    items = claim.quantities.items
    cited = list(dict.fromkeys(known.amounts))[:40]
    counts = [c for c in (*claim.counts, *operands) if 0 < c <= 100]
    sums = bool(_SUM_CUE.search(claim.folded))
    differences = bool(_DIFFERENCE_CUE.search(claim.folded))
    close = math.isclose
    for i in list(pending):
        key = items[i][0]
        if not key.startswith("n:"):
            continue
        try:
            value = float(key[2:])
        except ValueError:
            continue
        hit = any(close(c * a, value, abs_tol=0.005) for c in counts for a in cited if c != 1)
        if not hit and (sums or differences):
            for j, a in enumerate(cited):
                for b in cited[j + 1 :]:
                    if (sums and close(a + b, value, abs_tol=0.005)) or (
                        differences and close(abs(a - b), value, abs_tol=0.005)
                    ):
                        hit = True
                        break
                if hit:
                    break
        if hit:
            pending.remove(i)


def _date_pairs(claim: ClaimInfo, known: Known, pending: list[int]) -> None:
    """Remove from `pending` two dates of the claim a known period apart ("borrowed on 1
    March, due on 29 March" with a 28-day loan): the first is the premise, the second the
    conclusion, and the arithmetic holds."""
    items = claim.quantities.items
    dates = {i: date.fromisoformat(k[2:]) for i, (k, _) in enumerate(items) if k.startswith("d:")}
    periods = set(known.periods) | set(claim.periods)
    for a, first in dates.items():
        for b, second in dates.items():
            if a == b or not (a in pending or b in pending):
                continue
            for n, unit, business in periods:
                if _add_period(first, n, unit, business, 1) == second:
                    for i in (a, b):
                        if i in pending:
                            pending.remove(i)


def _derive(
    claim: ClaimInfo,
    known: Known,
    units: Sequence[str],
    pending: list[int],
    numeric: list[int],
    operands: list[float],
) -> None:
    """Remove from `pending` (and `numeric`) the claim's numbers that one step of arithmetic
    on `operands` gives, adding each to the operands, until nothing changes."""
    items = claim.quantities.items
    unfound = {items[i][0] for i in pending}
    percents = list(known.percents) + [
        p for p in claim.quantities.percents if "n:" + canon_number(str(p), "en") not in unfound
    ]
    changed = True
    while changed and numeric:
        changed = False
        for i in list(numeric):
            value = float(items[i][0][2:])
            extra = units[i].endswith("+") and any(  # the first day plus 2 extra days: 3
                math.isclose(value + 1, x, abs_tol=0.005) for x in operands
            )
            if extra or _arithmetic(value, operands, percents):
                numeric.remove(i)
                pending.remove(i)
                operands.append(value)
                changed = True
