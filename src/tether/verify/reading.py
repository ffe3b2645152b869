"""What a claim says, read once: `claim_info(text, language)` gives a `ClaimInfo` (its stems
and tokens, its quantities with their units and ranges, its periods, the words under a
negation and outside one) that every check of the claim reads.

What it cannot do: it reads words and numbers, not meaning: words are crude stems, EN and FR
only (`tether.verify.stems`); numbers are what `tether.verify.quantities` reads (a unit said
in other words reads as none); a negation governs a window of words after its cue
(`tether.verify.negation`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tether.language.negation import negation_scope
from tether.language.quantities import (
    Quantities,
    qualify,
    read_periods,
    read_quantities,
    word_numbers,
)
from tether.language.stems import WORD_RE, stem_set
from tether.text import fold_fast

__all__ = ["ClaimInfo", "claim_info"]


@dataclass(frozen=True)
class ClaimInfo:
    """A claim (or one clause of it) read once: stems, tokens, quantities, negation scope."""

    stems: frozenset[str]
    tokens: frozenset[str]  # stems and number keys (as passages hold them)
    quantities: Quantities
    periods: tuple[tuple[int, str, bool], ...]
    scope: tuple[frozenset[str], frozenset[str]]  # stems under a negation, and outside one
    folded: str = ""  # the folded text
    units: tuple[str, ...] = ()  # the unit of each quantity item ("" for none)
    ranges: tuple[tuple[int, int], ...] = ()  # pairs of item indexes read as a range
    counts: tuple[float, ...] = ()  # numbers written as words with no unit, and "twice"...
    count_words: tuple[str, ...] = ()  # the words of those counts ("two"), folded


def claim_info(text: str, language: str) -> ClaimInfo:
    """Read a claim written in `language`."""
    folded = fold_fast(text)
    tokens = WORD_RE.findall(folded)
    q = read_quantities(text, language, tokens)
    counts, count_words = word_numbers(text, q)  # "four weeks" is checked; "two rides" counts
    stems = stem_set(text, folded, tokens)
    keys = {key.rstrip("?") if key.startswith("t:") else key for key, _ in q.items}
    units, ranges = qualify(text, q) if q.items else ([], [])
    return ClaimInfo(
        counts=tuple(counts),
        count_words=tuple(count_words),
        stems=stems,
        tokens=stems | frozenset(keys),
        quantities=q,
        periods=tuple(read_periods(folded)),
        scope=negation_scope(folded, tokens),
        folded=folded,
        units=tuple(units),
        ranges=tuple(ranges),
    )
