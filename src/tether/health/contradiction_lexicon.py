"""The contradiction finder's word lists (English, with a few French words): the permission
words whose opposites conflict, the units it adds to the verifier's (data sizes, pence) and
the canonical base each unit is compared in, the words that name no subject (`NOISE`), the
groups of people a rule can be said of, the words that name no kind of a noun (`PLAIN`),
and `joined` (a one-letter prefix joined to its word). Read by `contradiction_slots`,
`contradiction_rules` and `contradiction_units`, which re-exports the public names.

What it cannot do: the lists are hand-written: a unit, a group of people or a permission
word not listed is not seen as one.
"""

from __future__ import annotations

import re

from tether.language.cues import GENERIC
from tether.language.negation import CUE_STEMS
from tether.language.stems import content_stem

__all__ = [
    "BASE_UNITS",
    "CLAUSE_CUT",
    "CODE",
    "GROUP_STEMS",
    "GROUP_WORDS",
    "MORE_UNITS",
    "NOISE",
    "PERMISSION_OPPOSITES",
    "PLAIN",
    "POLAR_WORDS",
    "STOP_COUNT",
    "TOLERANT",
    "UNIT_WORDS",
    "YEAR",
    "joined",
]

# Permission words whose opposite on the other side, on the same content, is a rule conflict.
PERMISSION_OPPOSITES = {
    "allowed": {"forbidden", "prohibited"}, "permitted": {"forbidden", "prohibited"},
    "forbidden": {"allowed", "permitted"}, "prohibited": {"allowed", "permitted"},
    "included": {"excluded"}, "excluded": {"included"}, "includes": {"excludes"},
    "excludes": {"includes"}, "required": {"optional"}, "mandatory": {"optional"},
    "optional": {"required", "mandatory"}, "accepted": {"refused"}, "refused": {"accepted"},
}  # fmt: skip
POLAR_WORDS = frozenset(PERMISSION_OPPOSITES)
# A unit's canonical base and the factor to it: "two weeks" and "14 days" are one value.
BASE_UNITS = {
    "week": ("minute", 7 * 1440.0), "day": ("minute", 1440.0), "hour": ("minute", 60.0),
    "year": ("month", 12.0), "kb": ("mb", 1 / 1024), "gb": ("mb", 1024.0),
    "tb": ("mb", 1024.0 * 1024), "p": ("$", 0.01),
    "m": ("mm", 1000.0), "cm": ("mm", 10.0), "in": ("mm", 25.4), "ft": ("mm", 304.8),
}  # fmt: skip
# Units the verifier's reader does not know (it reads them as no unit): data sizes and pence.
MORE_UNITS = {
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kilobytes": "kb", "megabytes": "mb",
    "gigabytes": "gb", "terabytes": "tb", "p": "p", "pence": "p", "cents": "p", "cent": "p",
    "inch": "in", "inches": "in", "foot": "ft", "feet": "ft", "ft": "ft",
}  # fmt: skip
# One value within a few percent: 1 TB said as 1000 GB or 1024 GB; a length converted between
# inches and centimetres ("six inches (15 cm)")
TOLERANT = {"mb": 0.03, "mm": 0.05}
CLAUSE_CUT = re.compile(r"[;:()]|,\s|\s(?:and|or|but|while|whereas|et|ou|mais)\s", re.I)
# Words that do not name a subject: units, scope words, the generic words of cost, time and
# permission (`tether.language.cues.GENERIC`), and the negation cues.
NOISE = (
    frozenset(
        content_stem(w)
        for w in (
            "day days week weeks month months year years hour hours minute minutes dollar"
            " dollars percent cent cents km kg points point times business working calendar"
            " extra within most least up over under more less only all every any each also"
            " jours jour semaines mois ans heures fois gb tb mb kb pence am pm cm mm metre metres"
            " meter meters inch inches foot feet"
        ).split()
    )
    | GENERIC
    | CUE_STEMS
) - {""}
YEAR = re.compile(r"(?:19|20)\d\d")
CODE = re.compile(r"\b[a-z]{1,3}\d{1,2}\b")  # A4, A3, B2: a size or grade (folded)
_LETTER_PREFIX = re.compile(r"\b([A-Za-z])-(?=[A-Za-z]{2})")
_NON_PREFIX = re.compile(r"\bnon-(?=[A-Za-z]{2})", re.I)
STOP_COUNT = frozenset(
    "of in on at to for and or a an the per each by from with as is are be was were it its"
    " that this these those than then has have had can may must will".split()
)
# Groups of people a rule or number can be said of; a sentence naming one that the other
# does not, or two documents written for different groups, are not one subject.
GROUP_WORDS = frozenset(
    """
    student students undergraduate undergraduates postgraduate postgraduates staff employee
    employees faculty alumni visitor visitors guest guests contractor contractors business
    businesses residential senior seniors child children minor minors junior juniors youth
    member members accessibility disabled premium apprentice apprentices intern interns
    volunteer volunteers analyst analysts agent agents associate associates adviser advisers
    advisor advisors adult adults teen teens teenager teenagers holder holders
    """.split()
)
GROUP_STEMS = frozenset(content_stem(w) for w in GROUP_WORDS) - {""}


# Words before a noun that name no kind of it of their own ("your new password", "the
# standard loan"): `modifiers` reads them, the reworded check does not count them.
PLAIN = frozenset(
    content_stem(w)
    for w in (
        "new current existing same other own standard normal usual regular general default"
        " total whole full maximum minimum"
    ).split()
)
UNIT_WORDS = frozenset(
    "day days week weeks month months year years hour hours minute minutes percent km kg points"
    " point times jours jour semaines mois ans heures gb tb mb kb pence characters attempts"
    " cm mm metre metres meter meters inch inches foot feet".split()
)


def joined(text: str) -> str:
    """The text with a one-letter prefix joined to its word ("e-books" is "ebooks", "x-ray"
    "xray"): an e-book is not a book; so is "non-" ("non-folding bicycles" are not folding
    ones)."""
    return _NON_PREFIX.sub("non", _LETTER_PREFIX.sub(r"\1", text))
