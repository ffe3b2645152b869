"""The `number_not_found` check: a claim's numbers, dates and times against what its cited
passages, the question and the as_of date make available (`tether.verify.quantities` reads
both sides).

`number_flags(claim, known)` flags a claim's quantity found in none of them (compared with its
unit; a range as a whole) and not a computed conclusion: a date plus or minus a known period,
days between two known dates, an amount with a known percentage, one step of arithmetic on
the claim's and the question's numbers (docs/verification.md has the rules). `Known` holds
what is available; `TODAY` tells a claim that speaks of the present (its full date may be the
as_of date). Internal to `tether.verify`.

What it cannot do: computed values of more than one step, averages and unit conversions
(other than days and weeks, months and years, hours and minutes) are flagged, and so is a
computed range; the arithmetic allowance can let a wrong number pass when it happens to be a
sum or product of the claim's other numbers; a unit said in other words ("1,000 Pine Points")
reads as no unit and passes.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from tether.language.quantities import WORD_NUMBERS, canon_number
from tether.types import Flag
from tether.verify.reading import ClaimInfo

__all__ = ["TODAY", "Keys", "Known", "number_flags"]

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
    """True when a claim value not found as written is a computed conclusion (a date plus or
    minus a known period, days between two known dates, an amount with a known percentage)."""
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
    "week": (("day", 7.0),),
    "day": (("week", 1 / 7),),
    "year": (("month", 12.0),),
    "month": (("year", 1 / 12),),
    "hour": (("minute", 60.0),),
    "minute": (("hour", 1 / 60),),
}


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
            key = f"n:{WORD_NUMBERS[word]}"
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
