"""Numbers written as words, EN and FR: the one list, and each reader's view of it.

`NUMBER_WORDS` is the table (word, value, language, the readers that read it). A reader takes
its view by name with `words_for(reader)`, so each sees exactly the words it was written for:

- `verify`: the verifier's quantity reader (`tether.language.quantities.WORD_NUMBERS`; also
  "a", "an", "single", "dozen", "douzaine");
- `stems`: the words `tether.language.stems` treats as carrying no content;
- `asks`: what `tether.asks` counts as a number in an answer (and `LOOSE_COUNTS`, "a few",
  "half", "quelques" ..., for a duration);
- `scope`: what may follow a comparative in `tether.language.cues` ("more than three days");
- `health`: the contradiction finder's English reader (`read_word_numbers`: "twenty-one",
  "twelve"); `tether.language.clock` reads its hours one to twelve;
- `training`: the small numbers the judge's training rules write as words (0 to 12,
  `training_words`).

`read_word_numbers(text)` reads the `health` view's numbers, a tens word joined to a ones
word ("twenty-one", "sixty five") read as one.

What it cannot do: the lists are short and hand-written: a number said otherwise ("a score",
"one hundred and five", "vingt-deux", "soixante-dix") is not read whole, and each reader
reads only its own view (the views differ, as the readers were tuned on them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "LOOSE_COUNTS",
    "MULTIPLES",
    "NUMBER_WORDS",
    "NumberWord",
    "read_word_numbers",
    "training_words",
    "word_values",
    "words_for",
]


@dataclass(frozen=True)
class NumberWord:
    """A number written as a word, its value, its language and the readers that read it."""

    word: str
    value: int
    language: str
    readers: frozenset[str]


# word, value, language, readers (v verify, s stems, a asks, c scope, h health, t training).
# The views differ on purpose: each is the list its reader was tuned with.
_TABLE = """
zero 0 en t
one 1 en vsacht
two 2 en vsacht
three 3 en vsacht
four 4 en vsacht
five 5 en vsacht
six 6 en vsacht
seven 7 en vsacht
eight 8 en vsacht
nine 9 en vsacht
ten 10 en vsacht
eleven 11 en vsacht
twelve 12 en vsacht
thirteen 13 en h
fourteen 14 en h
fifteen 15 en vach
sixteen 16 en h
seventeen 17 en h
eighteen 18 en h
nineteen 19 en h
twenty 20 en vsach
thirty 30 en vsach
forty 40 en vsah
fifty 50 en vsah
sixty 60 en vsah
seventy 70 en h
eighty 80 en h
ninety 90 en vah
hundred 100 en vsa
thousand 1000 en vsa
zéro 0 fr t
un 1 fr vt
une 1 fr v
deux 2 fr vsact
trois 3 fr vsact
quatre 4 fr vsact
cinq 5 fr vsact
six 6 fr vact
sept 7 fr vsact
huit 8 fr vsact
neuf 9 fr vsact
dix 10 fr vsact
onze 11 fr vsat
douze 12 fr vsact
quinze 15 fr vac
vingt 20 fr vsac
trente 30 fr vsac
quarante 40 fr vsa
cinquante 50 fr vsa
soixante 60 fr vsa
cent 100 fr vsa
mille 1000 fr vsa
a 1 en v
an 1 en v
single 1 en v
dozen 12 en v
douzaine 12 fr v
"""
_READERS = {"v": "verify", "s": "stems", "a": "asks", "c": "scope", "h": "health", "t": "training"}
NUMBER_WORDS: tuple[NumberWord, ...] = tuple(
    NumberWord(word, int(value), language, frozenset(_READERS[c] for c in readers))
    for word, value, language, readers in (line.split() for line in _TABLE.strip().splitlines())
)
# What `tether.asks` also reads as a count in an answer ("a week", "a few days", "half").
LOOSE_COUNTS: tuple[str, ...] = ("a", "an", "un", "une", "half", "a few", "several", "quelques")
# Multiples and fractions a claim computes with ("twice", "deux fois", "a quarter").
MULTIPLES: dict[str, float] = {
    "twice": 2.0,
    "deux fois": 2.0,
    "half": 0.5,
    "moitie": 0.5,
    "quarter": 0.25,
    "quart": 0.25,
    "double": 2.0,
    "triple": 3.0,
}


def words_for(reader: str, language: str | None = None) -> tuple[str, ...]:
    """The words of `reader`'s view (in table order; a word in both languages is listed for
    each), of one language when `language` is given."""
    return tuple(
        n.word
        for n in NUMBER_WORDS
        if reader in n.readers and (language is None or n.language == language)
    )


def word_values(reader: str) -> dict[str, int]:
    """{word: value} of `reader`'s view."""
    out: dict[str, int] = {}
    for n in NUMBER_WORDS:
        if reader in n.readers:
            out.setdefault(n.word, n.value)
    return out


def training_words(language: str) -> list[str]:
    """The numbers 0 to 12 as words in `language` ("en" or "fr"), indexed by value."""
    return list(words_for("training", language))


_HEALTH = word_values("health")
_HEALTH_ONES = [w for w, v in _HEALTH.items() if v < 20]
_HEALTH_TENS = [w for w, v in _HEALTH.items() if v >= 20]
_WORD_NUMBER = re.compile(
    rf"\b(?:({'|'.join(_HEALTH_TENS)})(?:[\s-]({'|'.join(_HEALTH_ONES[:9])}))?"
    rf"|({'|'.join(_HEALTH_ONES)}))\b",
    re.I,
)


def read_word_numbers(text: str) -> list[tuple[int, int, int]]:
    """(value, start, end) of each English number word of `text` (the `health` view: one to
    nineteen, and a tens word alone or joined to one to nine: "twenty-one", "sixty five")."""
    out: list[tuple[int, int, int]] = []
    for m in _WORD_NUMBER.finditer(text):
        if m.group(1):
            value = _HEALTH[m.group(1).lower()] + (_HEALTH[m.group(2).lower()] if m.group(2) else 0)
        else:
            value = _HEALTH[m.group(3).lower()]
        out.append((value, m.start(), m.end()))
    return out
