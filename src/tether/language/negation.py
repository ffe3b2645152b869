"""Negation by scope: which content words a text says are not so, and whether a claim and a
passage sentence disagree about that.

`negation_scope(folded)` gives (stems under a negation cue, stems stated outside any
negation) of a folded text; `negation_mismatch(...)` compares a claim's with a sentence's
(the rule is in its docstring and in docs/verification.md). The cues are EN not/no/never/
cannot/n't/without/none/nothing/exclude... and FR ne...pas/jamais/aucun/sans/rien/ni/
ne...plus/exclut; a cue governs the words after it up to the end of its clause, at most
`_SCOPE_WORDS` content words (for French also the verb between "ne" and the cue). Read by
`tether.verify` and `tether.health` (`tether.verify.negation` re-exports it).

What it cannot do: it is a word test: a negation said with other words ("is kept" for "is
not refunded") is not seen, a cue's scope stops at a fixed number of words (a long negated
list is cut), and a pronoun cue ("nothing in the sheet changes it") can read as a negated
predicate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from tether.language.stems import DIGIT, SKIP_WORDS, content_stem
from tether.text import stem

__all__ = ["CUE_STEMS", "NEGATION_CUES", "negation_mismatch", "negation_scope"]

# Negation is compared by scope: the content words a negation cue governs (the words after it
# up to the end of its clause, at most `_SCOPE_WORDS`; for French, also the verb between
# "ne"/"n'" and the cue), less any word the same text also states outside a negation.
NEGATION_CUES = frozenset(
    "not never cannot nothing none nobody neither nor without non no pas jamais aucun aucune"
    " rien sans nul nulle ni exclude excludes excluded excluding exclut excluent exclus exclue"
    " exclues".split()
)
_FR_CUES = frozenset("pas jamais aucun aucune rien plus ni".split())
_NEG_TOKEN = re.compile(r"\w+|[.;:!?,()\[\]]")
_SCOPE_WORDS = 4


_NO_EMPTY: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
_COMPOUND_NO = re.compile(r"\b(no|non)-(?=\w)")  # no-receipt, non-refundable: one word


def negation_scope(
    folded: str, words: Sequence[str] | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(stems under a negation cue, stems stated outside any negation) of a folded text whose
    word tokens are `words` (computed when None); the second is empty when the first is."""
    if words is not None:
        if _HINT_WORDS.isdisjoint(words):
            return _NO_EMPTY
    elif not _NEGATION_HINT.search(folded):
        return _NO_EMPTY
    tokens = _tokens(folded)
    inside: set[int] = set()
    for i, token in enumerate(tokens):
        if token == "plus":
            if not any(t in ("ne", "n") for t in tokens[max(0, i - 4) : i]):
                continue  # "plus" without "ne" means "more"
        elif token not in NEGATION_CUES:
            continue
        if token == "no" and i + 1 < len(tokens) and not tokens[i + 1][0].isalpha():
            continue  # "No." (the answer) or "No. 5"
        inside.add(i)
        if token in _FR_CUES:  # the verb between "ne"/"n'" and the cue
            for j in range(i - 1, max(-1, i - 5), -1):
                if tokens[j] in ("ne", "n"):
                    inside.update(range(j + 1, i))
                    break
        taken = 0
        for k in range(i + 1, len(tokens)):
            t = tokens[k]
            if not t[0].isalnum():
                break
            inside.add(k)
            if t not in SKIP_WORDS:
                taken += 1
                if taken == _SCOPE_WORDS:
                    break
    if not inside:
        return _NO_EMPTY
    under: set[str] = set()
    outside: set[str] = set()
    for k, t in enumerate(tokens):
        s = content_stem(t)
        if s:
            (under if k in inside else outside).add(s)
    return frozenset(under), frozenset(outside)


_NT = re.compile(r"n[’']t\b")


def _tokens(folded: str) -> list[str]:
    """Word and punctuation tokens of a folded text, "n't" read as "not" and "no-receipt",
    "non-refundable" as one negated word."""
    if "n'" in folded or "n’" in folded:
        folded = _NT.sub(" not", folded)
    if "no-" in folded or "non-" in folded:
        folded = _COMPOUND_NO.sub(r"\1", folded)
    return _NEG_TOKEN.findall(folded)


_HINT_WORDS = NEGATION_CUES | {"plus", "t"}
_NEGATION_HINT = re.compile(
    r"\b(?:not|never|cannot|nothing|none|nobody|neither|nor|without|non|no|pas|jamais|aucune?"
    r"|rien|sans|nul|nulle|ni|plus)\b|n[’']t\b"
)


_PRONOUN_CUES = frozenset("plus nothing none nobody neither rien nul nulle".split())


@lru_cache(maxsize=4096)
def _negation_groups(folded: str) -> tuple[frozenset[str], ...]:
    """The stems each negation cue of a folded text governs, one set per cue: the words after
    it up to the end of its clause or the next cue, at most `_SCOPE_WORDS` (used only when the
    pooled test of `negation_mismatch` is undecided). Pronoun cues (nothing, none, rien) are
    left out: what follows them is not what they negate."""
    tokens = _tokens(folded)
    groups: list[frozenset[str]] = []
    for i, token in enumerate(tokens):
        if token not in NEGATION_CUES or token in _PRONOUN_CUES:
            continue  # "nothing to claim from Harbor & Pine" negates no predicate
        if token == "no" and i + 1 < len(tokens) and not tokens[i + 1][0].isalpha():
            continue
        group: set[str] = set()
        taken = 0
        for t in tokens[i + 1 :]:
            if not t[0].isalnum() or t in NEGATION_CUES:
                break
            if t not in SKIP_WORDS:
                if len(t) > 1 and not DIGIT.search(t):
                    group.add(stem(t))
                taken += 1
                if taken == _SCOPE_WORDS:
                    break
        if group:
            groups.append(frozenset(group))
    return tuple(groups)


def negation_mismatch(
    claim_stems: frozenset[str],
    claim_scope: tuple[frozenset[str], frozenset[str]],
    stems: frozenset[str],
    scope: tuple[frozenset[str], frozenset[str]],
    claim_folded: str = "",
) -> bool:
    """True when one side negates content words that the other states only without negation
    (at least two of them, or every one when the negation governs fewer), and the two sides do
    not negate any word in common. When they do, each negation of the claim is taken on its
    own (`_negation_groups` of `claim_folded`, a scope ending at the next cue): one that shares no word with the
    passage's negations and whose words the passage states plainly is a mismatch ("has no
    bicycle workshop but no e-bike service" against "Workshop for bicycles; no e-bike
    service"). That can be wrong when the passage's negation covers a list its scope does
    not reach."""
    (claim_under, claim_outside), (under, outside) = claim_scope, scope
    if claim_under & under:
        return bool(claim_folded) and any(
            not (group & under) and len(group & (stems - under)) >= min(2, len(group))
            for group in _negation_groups(claim_folded)
        )
    sides = (
        (under - outside, claim_stems - claim_under),
        (claim_under - claim_outside, stems - under),
    )
    for negated, plain in sides:
        crossed = negated & plain
        if crossed and len(crossed) >= min(2, len(negated)):
            return True
    return False


CUE_STEMS = frozenset(stem(w) for w in NEGATION_CUES)  # not counted as a clause's words
