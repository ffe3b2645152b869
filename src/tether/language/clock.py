"""Times of day read as minutes after midnight (English): "09:30", "9.30am", "9 am",
"9 o'clock in the morning", "half past six in the evening", "noon", "midnight".

`read_clock(text)` gives (minutes, start, end) for each time of day of a text; the
contradiction finder (`tether.health.contradiction_slots`) compares them as numbers of unit
"clock", so "09:30" and "half past nine in the morning" are one value.

What it cannot do: English only; a time without am/pm or "in the morning/evening" is read as
written ("6 o'clock" is 06:00); an hour word is one to twelve (`number_words`, its `health`
view); a time range ("9-5") is not read.
"""

from __future__ import annotations

import re

from tether.language.number_words import word_values

__all__ = ["read_clock"]

_HOURS = {w: v for w, v in word_values("health").items() if v <= 12}
_CLOCK_WORD = "|".join([*_HOURS, r"\d{1,2}"])
_CLOCK = re.compile(
    r"(?<![\d:.,])\b(?:(?P<half>half|quarter)\s+(?P<rel>past|to)\s+(?P<h4>" + _CLOCK_WORD + r")\b"
    r"|(?P<h>\d{1,2}):(?P<m>[0-5]\d)(?![\d:])(?:\s?(?P<ap1>[ap])\.?m\b\.?)?"
    r"|(?P<h5>\d{1,2})\.(?P<m5>[0-5]\d)\s?(?P<ap5>[ap])\.?m\b\.?"
    r"|(?P<h2>\d{1,2})\s?(?P<ap2>[ap])\.?m\b\.?"
    r"|(?P<h3>" + _CLOCK_WORD + r")\s+o['’]clock"
    r"|(?P<noon>noon|midday|midnight))"
    r"(?:\s+in\s+the\s+(?P<part>morning|afternoon|evening))?",
    re.I,
)


def read_clock(text: str) -> list[tuple[int, int, int]]:
    """(minutes after midnight, start, end) of each time of day of `text` ("9 o'clock" is
    540, "half past nine in the morning" 570); an hour over 24 is no time."""
    out: list[tuple[int, int, int]] = []
    for m in _CLOCK.finditer(text):
        if m.group("noon"):
            minutes = 0 if m.group("noon").lower() == "midnight" else 720
        else:
            word = next(w for w in (m.group(g) for g in ("h", "h5", "h2", "h3", "h4")) if w)
            hour = int(word) if word.isdigit() else _HOURS[word.lower()]
            if hour > 24:
                continue
            minutes = hour * 60 + int(m.group("m") or m.group("m5") or 0)
            meridiem = (m.group("ap1") or m.group("ap5") or m.group("ap2") or "").lower()
            part = (m.group("part") or "").lower()
            if (meridiem == "p" or part in ("afternoon", "evening")) and hour < 12:
                minutes += 720
            elif meridiem == "a" and hour == 12:
                minutes -= 720
            if m.group("half"):
                step = 30 if m.group("half").lower() == "half" else 15
                minutes += step if m.group("rel").lower() == "past" else -step
        out.append((minutes, m.start(), m.end()))
    return out
