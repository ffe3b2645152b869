"""The one list of number words (`tether.language.number_words`): each reader still sees
exactly the words it read before the lists were merged (issue 45), and the English reader
of the contradiction finder reads compound numbers."""

from __future__ import annotations

import pytest

from tether import asks
from tether.evaluation import judge_training
from tether.language import cues, quantities, stems
from tether.language.clock import read_clock
from tether.language.number_words import read_word_numbers, training_words, words_for

# The lists as each module wrote them before the merge.
_OLD_VERIFY = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
    "thousand": 1000, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5,
    "sept": 7, "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "quinze": 15,
    "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60, "cent": 100,
    "mille": 1000, "a": 1, "an": 1, "single": 1, "dozen": 12, "douzaine": 12,
}  # fmt: skip
_OLD_PARTICLES = frozenset(
    """yes no oui non si one two three four five six seven eight nine ten eleven twelve twenty
    thirty forty fifty sixty hundred thousand deux trois quatre cinq sept huit neuf dix onze
    douze vingt trente quarante cinquante soixante cent mille""".split()
)
_OLD_ASKS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|sixty|ninety|hundred|thousand|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|"
    r"onze|douze|quinze|vingt|trente|quarante|cinquante|soixante|cent|mille|a|an|un|une|half|"
    r"a few|several|quelques"
)
_OLD_SCOPE = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty"
    " deux trois quatre cinq six sept huit neuf dix douze quinze vingt trente".split()
)
_OLD_HEALTH = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    " sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty"
    " ninety".split()
)


def test_the_verifier_reads_the_words_it_read() -> None:
    assert quantities.WORD_NUMBERS == _OLD_VERIFY
    assert list(quantities.WORD_NUMBERS) == list(_OLD_VERIFY)


def test_stems_skip_the_number_words_they_skipped() -> None:
    assert stems._PARTICLES == _OLD_PARTICLES


def test_asks_reads_the_words_it_read() -> None:
    assert asks._NUMBER_WORDS == _OLD_ASKS
    cardinals = _OLD_ASKS[: -len("|a|an|un|une|half|a few|several|quelques")]
    assert asks.NUMBERISH.pattern.startswith(rf"\d|\b(?:{cardinals}|half|twice|")


def test_scope_cues_read_the_words_they_read() -> None:
    assert list(words_for("scope")) == _OLD_SCOPE
    assert cues._NUMBERISH.pattern == r"^(?:\$ ?)?(?:\d|" + "|".join(_OLD_SCOPE) + r")"


def test_the_health_reader_and_the_training_rules_keep_their_words() -> None:
    assert list(words_for("health")) == _OLD_HEALTH
    assert (
        training_words("en")
        == "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
    assert (
        training_words("fr")
        == "zéro un deux trois quatre cinq six sept huit neuf dix onze douze".split()
    )
    assert {"en": training_words("en"), "fr": training_words("fr")} == judge_training._WORDS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("twenty-one days", [(21, 0, 10)]),
        ("Sixty five rooms and twelve desks", [(65, 0, 10), (12, 21, 27)]),
        ("sixteen, not six", [(16, 0, 7), (6, 13, 16)]),
        ("a dozen eggs", []),  # the verifier's "dozen" is not the health view's
    ],
)
def test_read_word_numbers(text: str, expected: list[tuple[int, int, int]]) -> None:
    assert read_word_numbers(text) == expected


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("Open from half past nine in the morning", [570]),
        ("at 9.30pm or noon", [1290, 720]),
        ("twelve o'clock", [720]),
        ("from 12 am", [0]),
        ("at 25:00", []),
    ],
)
def test_read_clock(text: str, minutes: list[int]) -> None:
    assert [m for m, _s, _e in read_clock(text)] == minutes
