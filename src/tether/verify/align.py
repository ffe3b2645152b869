"""Alignment that explains: a claim aligned to its best evidence sentences, every claim detail
without a match named with the evidence text it conflicts with, and the features the learned
judge (`tether.verify.learned`) reads.

`align(info, claim, preps)` returns an `Alignment`: its `sentences` (the claim's evidence, at
most two sentences of the cited passages), its `details` (each detail of the claim the
evidence does not match, a `tether.types.Detail`: `cell`, `number`, `opposite`,
`quantifier`, `condition`, `period`, `word` or `not_a_statement`; docs/verification.md says
what each means) and its `features` (named in `FEATURES`). Everything here is word, number
and position matching over EN and FR text: nothing is loaded and nothing is learned (the
judge learns how much each feature counts).

What it cannot do: it does not parse sentences, so a detail's binding is judged by position
(words within a few tokens of a number), a condition by its cue word and the words after it,
and a synonym or a paraphrase of a word counts as a word the passage does not hold (the
learned judge weighs how many such words a true paraphrase has); the cue lists are English
and French only; a claim drawn from more than two sentences is aligned to the two best.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tether.language.cues import (
    BENIGN_ADDED,
    GENERIC,
    LIMITING,
    OPPOSITES,
    QUANT_NEIGHBOURS,
    classes,
    condition,
    cue_text,
    main_clause,
    periods,
    polarity,
    related,
)
from tether.language.stems import content_stem
from tether.text import fold_fast, is_statement, words_of
from tether.types import Detail
from tether.verify.bindings import UNIT_STEMS, bound, table_binding
from tether.verify.passages import Prepared, Sentence
from tether.verify.reading import ClaimInfo, claim_info

__all__ = ["FEATURES", "Alignment", "align", "is_statement"]


FEATURES: tuple[str, ...] = (
    "share_passages",  # share of the claim's content words in the cited passages
    "share_aligned",  # ... in its aligned sentences
    "tokens_aligned",  # share of its words and numbers in its aligned sentences
    "words_absent",  # count of content words no cited passage holds (generic ones apart)
    "words_absent_share",  # ... as a share of the claim's content words
    "words_absent_generic",  # ... of the generic words an answer adds (cost, pay, allowed...)
    "words_absent_nearby",  # ... that the passages around them hold (a swapped item)
    "words_elsewhere",  # count held only by a sentence other than the aligned ones
    "numbers",  # count of the claim's numbers
    "numbers_absent",  # count no cited passage holds
    "numbers_elsewhere",  # count only another sentence holds
    "numbers_unbound",  # count whose neighbouring words are not beside them in the evidence
    "number_other_row",  # a table cell read from another row than the one the claim names
    "number_other_column",  # ... from another column than the one the claim names
    "opposite",  # a word whose opposite the evidence uses instead (after for before)
    "quantifier_added",
    "quantifier_dropped",
    "condition_dropped",
    "negation_flip",
    "period_other",  # a rate's period that the evidence gives with another one
    "period_absent",  # a rate's period the passages do not name at all
    "not_statement",
    "claim_words",  # the claim's content words (log scale)
    "evidence_words_unused",  # share of the aligned sentence's content words not in the claim
    "clue_flags",  # count of the rule clues that fired (number, word, negation, name)
)


@dataclass(frozen=True)
class Alignment:
    """A claim aligned to its evidence: the sentences, the unmatched details, the features."""

    sentences: tuple[tuple[str, Sentence], ...]  # (chunk ID, sentence)
    details: tuple[Detail, ...]
    features: dict[str, float]

    @property
    def evidence_text(self) -> str:
        """The aligned sentences joined (what a detail is quoted against by default)."""
        return " … ".join(s.text.strip() for _, s in self.sentences)


def language_of(preps: Sequence[Prepared]) -> str:
    return preps[0].chunk.meta.language if preps else "en"


_CLAIM_CLAUSES = re.compile(r"(?<=[.;!?])\s+|:\s+")


def _clause_has(claim: str, cls: str, preps: Sequence[Prepared], language: str) -> bool:
    """True when the claim's clause that uses a quantifier class is aligned, on its own, to a
    sentence of the passages that uses it too (a claim of several sentences: "... Never leave
    it in an unheated garage." against its third evidence sentence)."""
    for clause in _CLAIM_CLAUSES.split(claim):
        words = words_of(clause)
        if cls not in classes(words):
            continue
        tokens = claim_info(clause, language).tokens
        best = max(
            (s for p in preps for s in p.sentences if not s.heading),
            key=lambda s: len(tokens & s.tokens),
            default=None,
        )
        if best is not None and cls in classes(words_of(best.text)):
            return True
    return False


def _clause_text(chosen: Sequence[tuple[str, Sentence]], cue: str) -> str:
    """The condition clause of an aligned sentence as written: from its cue to the next comma,
    semicolon or full stop ("if the item comes back dirty or incomplete")."""
    pattern = re.compile(
        r"(?<![\w'’])" + r"[\s'’-]+".join(re.escape(w) for w in cue.split()) + r"\b[^,;.:]*",
        re.IGNORECASE,
    )
    for _, sentence in chosen:
        folded = fold_fast(sentence.text)
        m = pattern.search(folded)
        if m:  # shown as written unless folding changed the length (œ → oe)
            shown = sentence.text if len(folded) == len(sentence.text) else folded
            return shown[m.start() : m.end()].strip()
    return ""


def align(
    info: ClaimInfo,
    claim: str,
    preps: Sequence[Prepared],
    *,
    clue_flags: int = 0,
    question: str = "",
    other_stems: frozenset[str] = frozenset(),
) -> Alignment:
    """The claim aligned to its cited passages (the module docstring says what it returns).
    `other_stems`: the words of the passages around them (the context's other passages, the
    cited documents' other sections), where a swapped item or place is usually found. Each
    detail family (`_FAMILIES`: words, numbers, table cells, opposites, quantifiers,
    conditions, polarity, periods) adds its details and features, in that order."""
    heads = [h for p in preps for h in (p.chunk.meta.title, *p.chunk.heading_path)]
    statement = is_statement(claim, heads)
    at = _Aligning.read(info, claim, preps, heads, question, other_stems)
    if not statement:
        at.add(
            "not_a_statement", claim.strip()[:120], "a question, heading or title, not a statement"
        )
    found: dict[str, float] = {
        "not_statement": 0.0 if statement else 1.0,
        "clue_flags": float(clue_flags),
    }
    for family in _FAMILIES:
        found.update(family(at))
    return Alignment(tuple(at.chosen), tuple(at.details), {k: found[k] for k in FEATURES})


@dataclass
class _Aligning:
    """What every detail family reads: the claim, its aligned sentences and the passages,
    each read once; `details` gathers what the families add."""

    info: ClaimInfo
    claim: str
    preps: Sequence[Prepared]
    question: str
    other_stems: frozenset[str]
    chosen: list[tuple[str, Sentence]]
    cwords: str  # the claim's folded words
    ewords: str  # ... and the aligned sentences'
    evidence: str  # the aligned sentences joined (what a detail is quoted against)
    cid: str  # the chunk a detail is quoted from
    aligned_tokens: frozenset[str]
    aligned_stems: frozenset[str]
    header_stems: frozenset[str]
    passage_stems: frozenset[str]
    passage_tokens: frozenset[str]
    passage_words: str  # the cited passages' folded words, once per claim
    q_stems: frozenset[str]
    computes: bool  # a claim that computes binds no number to a word
    details: list[Detail]

    @classmethod
    def read(
        cls,
        info: ClaimInfo,
        claim: str,
        preps: Sequence[Prepared],
        heads: Sequence[str],
        question: str,
        other_stems: frozenset[str],
    ) -> _Aligning:
        chosen = _choose(info, preps)
        evidence = " … ".join(s.text.strip() for _, s in chosen)
        cwords = words_of(claim)
        return cls(
            info=info,
            claim=claim,
            preps=preps,
            question=question,
            other_stems=other_stems,
            chosen=chosen,
            cwords=cwords,
            ewords=words_of(evidence),
            evidence=evidence,
            cid=chosen[0][0] if chosen else (preps[0].chunk.chunk_id if preps else ""),
            aligned_tokens=_union(s.tokens for _, s in chosen),
            aligned_stems=_union(s.stems for _, s in chosen),
            header_stems=_union(
                frozenset(content_stem(w) for w in words_of(h).split()) for h in heads
            ),
            passage_stems=_union(p.stems for p in preps),
            passage_tokens=_union(p.tokens | p.keys for p in preps),
            passage_words=" ".join(words_of(p.chunk.text) for p in preps),
            q_stems=frozenset(content_stem(w) for w in words_of(question).split()) - {""},
            computes=bool(_COMPUTED.search(cwords)),
            details=[],
        )

    def add(self, kind: str, what: str, against: str = "") -> None:
        self.details.append(Detail(kind, what, (against or self.evidence)[:300], self.cid))


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*sets)


def _choose(info: ClaimInfo, preps: Sequence[Prepared]) -> list[tuple[str, Sentence]]:
    """The claim's evidence: the sentence of the cited passages that shares the most of its
    words and numbers, and the one that adds the most of the rest (at most two)."""
    ranked = sorted(
        (
            (len(info.tokens & s.tokens), -len(s.tokens), i, p.chunk.chunk_id, s)
            for i, p in enumerate(preps)
            for s in p.sentences
            if not s.heading
        ),
        key=lambda t: (-t[0], -t[1]),
    )
    chosen: list[tuple[str, Sentence]] = []
    if ranked:
        first = ranked[0]
        chosen.append((first[3], first[4]))
        covered = info.tokens & first[4].tokens
        extra_best = None
        for _n, _neg, _i, cid, s in ranked[1:]:
            extra = len((info.tokens & s.tokens) - covered)
            if extra and (extra_best is None or extra > extra_best[0]):
                extra_best = (extra, cid, s)
        if extra_best is not None:
            chosen.append((extra_best[1], extra_best[2]))
    return chosen


def _words(at: _Aligning) -> dict[str, float]:
    """Content words: the share the passages and the aligned sentences hold, the words no
    passage holds (a `word` detail each, the generic words apart)."""
    stems, chosen = at.info.stems, at.chosen
    known_stems = at.passage_stems | at.q_stems
    shown = _surface(at.claim)
    heads5 = {w[:5] for w in at.passage_words.split() if len(w) >= 5}
    heads5 |= {w[:5] for w in words_of(at.question).split() if len(w) >= 5}
    absent = sorted(
        w
        for w in stems
        if w not in known_stems
        and w not in UNIT_STEMS
        and not related(fold_fast(shown.get(w, w)), known_stems, heads5)
    )
    absent_other = [w for w in absent if w in at.other_stems]
    generic = [w for w in absent if w in GENERIC]
    elsewhere = sorted(
        w
        for w in stems
        if w in at.passage_stems
        and w not in at.aligned_stems
        and w not in at.header_stems
        and w not in at.q_stems
    )
    for w in absent:
        if w not in GENERIC:
            at.add("word", shown.get(w, w))
    n_stems = max(len(stems), 1)
    e_stems = _union(s.stems for _, s in chosen[:1])
    in_passages = sum(1 for w in stems if w in at.passage_stems or w in at.q_stems)
    in_aligned = sum(1 for w in stems if w in at.aligned_stems or w in at.header_stems)
    return {
        "share_passages": in_passages / n_stems,
        "share_aligned": in_aligned / n_stems,
        "tokens_aligned": len(at.info.tokens & at.aligned_tokens) / max(len(at.info.tokens), 1),
        "words_absent": float(len(absent) - len(generic)),
        "words_absent_share": (len(absent) - len(generic)) / n_stems,
        "words_absent_generic": float(len(generic)),
        "words_absent_nearby": float(len(absent_other)),
        "words_elsewhere": float(len(elsewhere)),
        "claim_words": math.log1p(len(stems)),
        "evidence_words_unused": len(e_stems - stems) / max(len(e_stems), 1),
    }


def _numbers(at: _Aligning) -> dict[str, float]:
    """The claim's numbers: those no cited passage holds, those only another sentence holds
    (a `number` detail quoting it), and those whose neighbouring words the evidence puts
    beside another number (a `number` detail)."""
    items, claim, preps = at.info.quantities.items, at.claim, at.preps
    n_absent = n_elsewhere = n_unbound = 0
    for (key, display), start in zip(items, at.info.quantities.where, strict=True):
        k = key.rstrip("?") if key.startswith("t:") else key
        if k in at.aligned_tokens:
            if at.computes or _MODEL_NUMBER.search(claim[:start]):
                continue  # a claim that computes, or a model's number ("Ridgeline 2")
            if not bound(claim, start, display, at.chosen, k):
                n_unbound += 1
                at.add("number", display)
            continue
        if any(k in s.tokens for p in preps for s in p.sentences):
            n_elsewhere += 1
            holder = next(s for p in preps for s in p.sentences if k in s.tokens)
            at.add("number", display, holder.text.strip())
        elif k not in at.passage_tokens:
            n_absent += 1
    return {
        "numbers": float(len(items)),
        "numbers_absent": float(n_absent),
        "numbers_elsewhere": float(n_elsewhere),
        "numbers_unbound": float(n_unbound),
    }


def _cells(at: _Aligning) -> dict[str, float]:
    """Table cells: the row and the column the claim names must hold the number (a `cell`
    detail quoting the row)."""
    items = at.info.quantities.items
    wrong_row = wrong_column = 0
    units = at.info.units or ("",) * len(items)
    for (key, display), start, unit in zip(items, at.info.quantities.where, units, strict=True):
        if at.computes or unit == "%" or _MODEL_NUMBER.search(at.claim[:start]):
            continue  # a claim that computes, a rate, or a model's number ("Ridgeline 2")
        found = table_binding(key, at.info.stems, at.preps)
        if found is not None:
            kind, row_text = found
            if kind == "row":
                wrong_row += 1
            else:
                wrong_column += 1
            at.add("cell", display, row_text)
    return {"number_other_row": float(wrong_row), "number_other_column": float(wrong_column)}


def _opposites(at: _Aligning) -> dict[str, float]:
    """The claim says "after" where its evidence says "before" (an `opposite` detail)."""
    c_set = set(at.cwords.split())
    best_words = set(words_of(at.chosen[0][1].text).split()) if at.chosen else set()
    swapped = sorted(
        w
        for w in c_set
        if w in OPPOSITES
        and w not in best_words
        and OPPOSITES[w] & best_words
        and not (OPPOSITES[w] & c_set)
    )
    for w in swapped:
        at.add("opposite", w, at.chosen[0][1].text.strip())
    return {"opposite": float(len(swapped))}


def _quantifiers(at: _Aligning) -> dict[str, float]:
    """Scope words the claim adds (a `quantifier` detail) or drops."""
    c_cls, e_cls = classes(at.cwords), classes(at.ewords)
    added = sorted(
        c
        for c in c_cls - e_cls
        if not (QUANT_NEIGHBOURS.get(c, set()) & e_cls)
        and c not in BENIGN_ADDED
        and not _clause_has(at.claim, c, at.preps, language_of(at.preps))
    )
    dropped = sorted(
        c for c in (e_cls - c_cls) & set(LIMITING) if not (QUANT_NEIGHBOURS.get(c, set()) & c_cls)
    )
    for c in added:
        at.add("quantifier", cue_text(at.cwords, c))
    return {"quantifier_added": float(len(added)), "quantifier_dropped": float(len(dropped))}


def _conditions(at: _Aligning) -> dict[str, float]:
    """A condition of the evidence the claim leaves out (a `condition` detail), read only
    from a sentence that holds at least half of the claim (not one aligned for a word)."""
    info, chosen = at.info, at.chosen
    main = " ".join(
        words_of(s.text)
        for _, s in chosen
        if len(info.tokens & s.tokens) >= 0.5 * max(len(info.tokens), 1)
    )
    cond = condition(main)
    cond_dropped = 0
    if cond is not None and condition(at.cwords) is None and chosen:
        cue, clause = cond
        clause = _clause_text(chosen, cue) or clause
        clause_stems = {content_stem(w) for w in words_of(clause).split()[1:10]} - {""}
        # the claim states it, or the question does ("My tent came back dirty: what can you
        # deduct?" answered with the fee that applies "if the item comes back dirty")
        if clause_stems and len(clause_stems & (info.stems | at.q_stems)) < len(clause_stems) / 3:
            cond_dropped = 1
            at.add("condition", f"(no '{cue} …')", clause[:200])
    return {"condition_dropped": float(cond_dropped)}


def _polarity(at: _Aligning) -> dict[str, float]:
    """A negation on one side only of the claim and its best sentence: a feature only (the
    rule in `tether.language.negation` names a negation)."""
    stems, chosen = at.info.stems, at.chosen
    flip = 0
    if chosen and len(stems & chosen[0][1].stems) >= max(1, 0.5 * len(stems)):
        mine = polarity(main_clause(at.cwords))
        theirs = polarity(main_clause(words_of(chosen[0][1].text)))
        if (mine > 0) != (theirs > 0):
            flip = 1
    return {"negation_flip": float(flip)}


def _periods(at: _Aligning) -> dict[str, float]:
    """A rate's period the evidence gives with another one, or the passages not at all (a
    `period` detail)."""
    c_per, e_per = periods(at.cwords), periods(at.ewords)
    p_all = periods(at.passage_words)
    period_other = period_absent = 0
    for unit in sorted(c_per - e_per):
        if unit in p_all:
            continue
        if e_per or p_all:
            period_other += 1  # the evidence gives another period
        else:
            period_absent += 1  # the passages give none
        at.add("period", f"per {unit}")
    return {"period_other": float(period_other), "period_absent": float(period_absent)}


# The detail families, in the order their details are listed.
_FAMILIES: tuple[Callable[[_Aligning], dict[str, float]], ...] = (
    _words,
    _numbers,
    _cells,
    _opposites,
    _quantifiers,
    _conditions,
    _polarity,
    _periods,
)


def _surface(claim: str) -> dict[str, str]:
    """The claim's words as written, by stem (to name a detail as the reader wrote it)."""
    out: dict[str, str] = {}
    for word in re.findall(r"\w+", claim):
        s = content_stem(fold_fast(word))
        if s and s not in out:
            out[s] = word
    return out


_MODEL_NUMBER = re.compile(r"\b[A-Z][\w-]*[a-z][\w-]*\s$")
_COMPUTED = re.compile(
    r"\b(?:minus|plus|total|times|less|off|discount|after|before tax|moins|rabais|remise|fois)\b"
)
