"""Numbers, codes, dates, times, units, ranges and periods: how the verifier reads them.

`read_quantities(text, language)` reads each quantity once, normalised (1,000 → 1000; French
9,95 → 9.95; March 14, 2026 → 2026-03-14; 9 a.m. → 09:00; TR-2200-07 as a code);
`found_keys` and `unit_keys` give the keys a passage or the question makes available (with
generous passage-side expansions: a date gives its day-month, year-month and year; a time its
hours; a code its numbers; number words count); `qualify` gives each number's unit and the
ranges. The `number_not_found` check that compares them is `tether.verify.numbers`. Read by
`tether.verify` and `tether.health` (`tether.verify.quantities` re-exports it); number words
come from `tether.language.number_words` (its `verify` view).

What it cannot do: dates such as 14/03/2026 are compared as written; a unit said in other
words ("1,000 Pine Points") reads as no unit; number words are read in English and French only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation

from tether.language.number_words import MULTIPLES, word_values
from tether.language.stems import DIGIT, WORD_RE
from tether.text import code_spans, collapse_code, fold, fold_fast

__all__ = [
    "MONTH_NAMES",
    "NUMBER",
    "UNITS",
    "UNIT_AFTER",
    "WORD_NUMBERS",
    "Quantities",
    "canon_number",
    "found_keys",
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
WORD_NUMBERS: dict[str, int] = word_values("verify")  # and a, an, single, dozen, douzaine
_WORD_NUMBER = "|".join(sorted(WORD_NUMBERS, key=len, reverse=True))
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
    rf"\b({'|'.join(sorted((w for w in WORD_NUMBERS if w not in _NOT_COUNTED), key=len, reverse=True))})\b"
)


def word_numbers(text: str, q: Quantities) -> tuple[list[float], list[str]]:
    """A claim's numbers written as words ("four weeks", "trois fois"): one followed by a unit
    is added to `q` as a number to check (key "n:4", shown as the word); one without a unit
    ("two adult rides") is returned as a count: an operand for arithmetic, checked only when
    the claim computes nothing (`verify.numbers.number_flags`). "Twice", "half" and "a quarter" are operands.
    Returns (operands, the words of the counts)."""
    folded = fold_fast(text)
    counts: list[float] = [v for w, v in MULTIPLES.items() if re.search(rf"\b{w}\b", folded)]
    words: list[str] = []
    added = False
    for m in _CLAIM_WORD_NUMBER.finditer(folded):
        value = WORD_NUMBERS[m.group(1)]
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
        n = int(raw) if raw.isdigit() else WORD_NUMBERS.get(raw, 0)
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
            keys.add(f"n:{WORD_NUMBERS[m.group(1)]}")
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
            value = WORD_NUMBERS[m.group(1)]
            out.add(f"u:{value}|{unit}")
            worded.add(f"n:{value}")
    for key in keys:
        if key.startswith("n:") and key not in plain and key not in worded:
            out.add(f"u:{key[2:]}|")
    for a, b in ranges:
        out.add(f"r:{q.items[a][0][2:]}-{q.items[b][0][2:]}")
    return out
