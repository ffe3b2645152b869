"""Citation verification: check every claim of an answer in code, and find its evidence.

`check_answer(answer, store, context, question, options, cache=...)` returns one `ClaimCheck`
per claim, with flags (`tether.types.Flag`; empty means ok), the evidence sentences
(character offsets into the parsed document's text) and, when a judge is given, an
entailment score. The options (`VerifierOptions`: audience, language, as_of, judge, precedence,
threshold, embedder) may also be given as keywords. Pass a `VerifierCache` that lives as long
as the index (without one every passage is prepared again on every call). This module
composes the check families: `verify.quantities` (numbers, dates, units, periods,
arithmetic), `verify.claims` (names, word share, negation, cross-language), `verify.passages`
(passage preparation, evidence, table columns), `verify.sources` (instructions, standing,
better citations), `verify.instructions`, `verify.inline`, `verify.flags` (flag kinds,
descriptions, the strict policy).

Exact checks (code is always right about these):
- `no_citation` — the claim cites nothing;
- `missing_id:ID` — ID is not in the index (made up, mistyped, or an inline marker outside
  1..n that the answer parser kept as `marker:[n]`);
- `not_in_context:ID` — a real chunk that was not among the passages given to the model;
- `not_allowed:ID` — the audience is public and the cited chunk is not public.
A chunk flagged `not_in_context` or `not_allowed` is never read by the other checks: no
evidence, entailment score or clue uses its text (a claim citing nothing else gets only its
exact flags), and the context's passages the audience may not see are not read either.

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
  under `CROSS_LANGUAGE_CUT`. That needs an embedder (the `embedder` option, else the
  judge's `embedder`): without one, such a claim gets the word share, which undercounts
  across languages (a true French claim citing an English passage shares few words and is
  flagged `unsupported:SHARE`); nothing is loaded here.
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
- `not_a_statement` — the claim is a question, or a heading or title of a cited passage
  quoted as it is (`verify.align.is_statement`): it states nothing to check.
- Alignment (`verify.align`): the claim is aligned to its best evidence sentences and every
  detail its evidence does not match is named, with the evidence text, in the check's
  `details`. Flagged whatever the judge says (claims in the language of a cited passage):
  `quantifier_mismatch:WORD` (only, all, always, never, at least... that the evidence does not
  use), `condition_dropped:(no 'CUE …')` (the evidence's condition or exception, which neither
  the claim nor the question states), `period_mismatch:per UNIT` (a rate's period or base the
  evidence gives otherwise), `opposite_word:WORD` (after where the evidence says before, south
  for north), `number_in_other_row:N` (a table cell of another row or column than the one the
  claim names). Flagged only when the learned judge rejects the claim, to say why:
  `number_elsewhere:N` (a number bound to another subject of the evidence) and
  `word_not_found:WORD` (a content word no cited passage holds).
- `not_entailed:SCORE` — the judge scored the claim below the threshold (the `threshold`
  argument, else the judge's own). The learned judge (`verify.learned.AlignmentJudge`, the
  default) reads the alignment's features and says `not_entailed` only when no detail
  explains its verdict; when it accepts a claim, the word-share clue `unsupported:SHARE` is
  dropped (it weighed that share). The other judges (`verify.judges`) score passage texts.

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
  cosine of at least `SAME_POINT_COSINE` (a value of the embedder's Profile) between the two passages: a help answer
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

import contextlib
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from tether.protocols import AlignedJudge, Store
from tether.standing import DEFAULT_PRECEDENCE, TYPE_ALIASES, source_rank
from tether.text import fold_fast
from tether.types import Answer, Chunk, Claim, ClaimCheck, Context, Evidence, Flag
from tether.verify.align import Alignment, align
from tether.verify.claims import (
    CLAUSE_MIN,
    EVIDENCE_MIN,
    NEGATION_SENTENCES,
    UNSUPPORTED_SHARE,
    cross_language_clues,
    name_flags,
    word_clues,
)
from tether.verify.flags import (
    CLUE_FLAGS,
    EXACT_FLAGS,
    REFUSAL_SENTENCE,
    REFUSAL_SENTENCE_FR,
    REFUSAL_SENTENCES,
    SOURCE_FLAGS,
    apply_strict,
    describe,
    flag_kind,
    withhold,
)
from tether.verify.instructions import find_instructions
from tether.verify.numbers import TODAY, Keys, Known, number_flags
from tether.verify.options import CROSS_LANGUAGE_CUT, DEFAULT_JUDGE_THRESHOLD, VerifierOptions
from tether.verify.passages import Prepared, VerifierCache, column_flags
from tether.verify.quantities import (
    found_keys,
    numbers_in,
    read_periods,
    read_quantities,
    unit_keys,
)
from tether.verify.reading import ClaimInfo, claim_info
from tether.verify.sources import (
    SAME_POINT_MIN,
    SAME_POINT_SHARE,
    WEAKER_MARGIN,
    WEAKER_MIN,
    Siblings,
    instruction_flags,
    source_flags,
)

__all__ = [
    "CLAUSE_MIN",
    "CLUE_FLAGS",
    "CROSS_LANGUAGE_CUT",
    "DEFAULT_JUDGE_THRESHOLD",
    "DEFAULT_PRECEDENCE",
    "EVIDENCE_MIN",
    "EXACT_FLAGS",
    "NEGATION_SENTENCES",
    "REFUSAL_SENTENCE",
    "REFUSAL_SENTENCES",
    "REFUSAL_SENTENCE_FR",
    "SAME_POINT_MIN",
    "SAME_POINT_SHARE",
    "SOURCE_FLAGS",
    "TYPE_ALIASES",
    "UNSUPPORTED_SHARE",
    "WEAKER_MARGIN",
    "WEAKER_MIN",
    "VerifierCache",
    "VerifierOptions",
    "apply_strict",
    "check_answer",
    "describe",
    "find_instructions",
    "flag_kind",
    "numbers_in",
    "withhold",
]

_NO_CITATION = Flag("no_citation")
_NOT_A_STATEMENT = Flag("not_a_statement")
# a detail of the claim that its evidence does not match → the flag that names it. The hard
# ones are flagged whatever the judge says (on the tuned-on claim sets they fired on 3 of 216
# supported claims, all quantifier_mismatch, and on 34 of 191 unsupported ones); the soft ones
# (on 43 supported and 65 unsupported) only explain a claim the learned judge rejects.
HARD_DETAILS = {
    "cell": "number_in_other_row",
    "opposite": "opposite_word",
    "quantifier": "quantifier_mismatch",
    "condition": "condition_dropped",
    "period": "period_mismatch",
}
SOFT_DETAILS = {
    "number": "number_elsewhere",
    "word": "word_not_found",
}


def detail_flags(aligned: Alignment, kinds: dict[str, str]) -> list[Flag]:
    """One flag per detail of `kinds` that the claim's evidence does not match
    (`quantifier_mismatch:only`, `number_elsewhere:14`...)."""
    return [Flag(kinds[d.kind], d.claim) for d in aligned.details if d.kind in kinds]


def check_answer(
    answer: Answer,
    store: Store | None,
    context: Context,
    question: str,
    options: VerifierOptions | None = None,
    *,
    cache: VerifierCache | None = None,
    **fields: Any,
) -> list[ClaimCheck]:
    """One ClaimCheck per claim of `answer` (see the module docstring for every flag).

    `options` is a `VerifierOptions`; its fields may be given as keywords instead (or on top of
    it): `check_answer(answer, store, context, question, audience="public", language="en")`.
    `store` (the `Store` protocol: `get_many`, `chunks`, `vector`) finds cited chunks that are
    not in the context, a cited document's other chunks and the chunk vectors; None: only
    the context is known. `cache` keeps prepared passages between calls (a fresh one per call
    when None: correct, but slower). Nothing is loaded here: without an embedder (the option,
    else the judge's), a claim whose cited passages are all in another language is judged by
    word share only (see `VerifierOptions`)."""
    o = _options(options, fields)
    call = _Call(
        answer, store, context, question, o, cache if cache is not None else VerifierCache()
    )
    return [call.check(claim) for claim in answer.claims]


def _options(options: VerifierOptions | None, fields: dict[str, Any]) -> VerifierOptions:
    """`options` with `fields` on top (a TypeError for an unknown field, or a missing
    audience or language)."""
    if options is None:
        return VerifierOptions(**fields)
    return replace(options, **fields) if fields else options


class _Call:
    """What one `check_answer` call reads once (the question, the context's passages, the
    cited chunks) and shares between the answer's claims."""

    __slots__ = (
        "_siblings",
        "_vectors",
        "base_dates",
        "base_keys",
        "cache",
        "chunks",
        "context_preps",
        "embedder",
        "in_context",
        "o",
        "q_info",
        "q_periods",
        "question",
        "shown",
        "store",
        "store_vectors",
        "today_keys",
        "unit_keys_added",
    )

    def __init__(
        self,
        answer: Answer,
        store: Store | None,
        context: Context,
        question: str,
        o: VerifierOptions,
        cache: VerifierCache,
    ) -> None:
        self.o, self.store, self.question, self.cache = o, store, question, cache
        self.in_context: dict[str, Chunk] = {p.chunk.chunk_id: p.chunk for p in context.passages}
        cited_ids = {cid for claim in answer.claims for cid in claim.chunk_ids}
        self.chunks = _lookup(store, [cid for cid in cited_ids if cid not in self.in_context])
        self.chunks.update(self.in_context)
        # what the checks may read: the context's passages the audience may see (a cited
        # chunk outside them is flagged and never read, scored or quoted)
        public = o.audience != "staff"  # any other value: public (fail closed)
        self.shown: dict[str, Chunk] = {
            cid: c for cid, c in self.in_context.items() if not public or c.meta.access == "public"
        }
        self.q_info = read_quantities(question, o.language)
        q_folded = fold_fast(question)
        self.base_keys = found_keys(self.q_info, q_folded)
        self.unit_keys_added = False  # the question's unit and range keys, added when needed
        self.base_dates = list(self.q_info.dates)
        self.today_keys: set[str] = set()
        if o.as_of is not None:
            iso = o.as_of.isoformat()
            self.base_keys.update({"ym:" + iso[:7], "n:" + iso[:4], f"u:{iso[:4]}|"})
            self.today_keys = {"d:" + iso, "md:" + iso[5:]}  # only when the claim says today
            self.base_dates.append(o.as_of)
        self.q_periods = read_periods(q_folded)
        self.context_preps = [
            (cache.prepare(c), source_rank(c.meta.doc_type, o.precedence))
            for c in self.shown.values()
        ]
        self.embedder = o.embedder if o.embedder is not None else getattr(o.judge, "embedder", None)
        # the chunk vectors of the passages the checks may read, read once for this answer
        self.store_vectors = store.vectors_of(list(self.shown)).get if store is not None else None
        self._siblings: Siblings | None = None
        self._vectors: dict[str, np.ndarray] | None = None

    def check(self, claim: Claim) -> ClaimCheck:
        flags, cited = self.citations(claim)
        if not cited:
            return ClaimCheck(claim, tuple(flags))
        o = self.o
        n_exact = len(flags)
        info = claim_info(claim.text, o.language)
        preps = [self.cache.prepare(c) for c in cited]
        if info.quantities.items or info.count_words:
            flags += self.number_clues(info, preps)
        flags += name_flags(claim.text, cited, self.question)
        best: dict[str, float] = {}
        evidence: list[Evidence]
        if any(c.meta.language == o.language for c in cited) or not info.stems:
            found, evidence, best = word_clues(info, claim.text, preps)
        else:
            vectors = self.sentence_vectors()
            found, evidence = cross_language_clues(
                info, claim.text, preps, self.embedder, vectors, o.cross_language_cut
            )
        flags += found
        # the claim aligned to its evidence: the details it does not match, named with the
        # evidence text (always: they explain any flag), and the learned judge's features
        aligned = align(
            info, claim.text, preps, clue_flags=len(flags) - n_exact, question=self.question,
            other_stems=self.nearby_stems(cited),
        )  # fmt: skip
        entailment: float | None = None
        judge = o.judge
        same_language = any(c.meta.language == o.language for c in cited)
        if same_language:  # a scope word, condition or rate the evidence does not state
            flags += detail_flags(aligned, HARD_DETAILS)
        # a judge that reads the alignment (declared by `aligned`), or None
        reader = judge if isinstance(judge, AlignedJudge) and judge.aligned else None
        if reader is not None and same_language:
            entailment = float(
                reader.judge(
                    aligned.features,
                    claim.text,
                    [c.text for c in cited],
                    evidence=aligned.evidence_text,
                    flagged=len(flags) > n_exact,
                )
            )
            if entailment < self.judge_limit():
                flags += detail_flags(aligned, SOFT_DETAILS) or [
                    Flag("not_entailed", f"{entailment:.2f}")
                ]
            else:  # the judge weighed the word share: a paraphrase is not flagged for it
                flags = [
                    f for f in flags if f.kind != "unsupported" or (f.arg or "").startswith("cos=")
                ]
        elif judge is not None and reader is None:
            entailment = float(judge.score(claim.text, [c.text for c in cited]))
            if entailment < self.judge_limit():
                flags.append(Flag("not_entailed", f"{entailment:.2f}"))
        if aligned.features["not_statement"]:
            flags.insert(n_exact, _NOT_A_STATEMENT)
        flags += instruction_flags(info, preps, self.store, self.shown, self.siblings, self.cache)
        flags += source_flags(
            info, preps, self.context_preps, o.precedence, self.store_vectors, best,
            o.same_point_cosine,
        )  # fmt: skip
        flags = list(dict.fromkeys(flags))
        details = aligned.details if len(flags) > n_exact else ()
        return ClaimCheck(claim, tuple(flags), tuple(evidence), entailment, details=details)

    def citations(self, claim: Claim) -> tuple[list[Flag], list[Chunk]]:
        """The exact checks (no_citation, missing_id, not_in_context, not_allowed) and the
        cited chunks the other checks may read: a chunk outside the context, or one the
        audience may not see, is flagged and never read, scored or quoted as evidence."""
        flags = [] if claim.chunk_ids else [_NO_CITATION]
        cited: list[Chunk] = []
        chunks, in_context, public = self.chunks, self.in_context, self.o.audience != "staff"
        for cid in dict.fromkeys(claim.chunk_ids):
            chunk = chunks.get(cid)
            hidden = chunk is not None and public and chunk.meta.access != "public"
            if chunk is None or (hidden and cid not in in_context):
                # a chunk the audience may not see, cited from outside the context, reads
                # exactly as an unknown ID: telling them apart would confirm that a guessed
                # staff passage exists (chunk IDs hash known fields and the text)
                flags.append(Flag("missing_id", cid))
                continue
            if cid not in in_context:
                flags.append(Flag("not_in_context", cid))
            if public and chunk.meta.access != "public":
                flags.append(Flag("not_allowed", cid))
            if cid in self.shown:
                cited.append(chunk)
        return flags, cited

    def number_clues(self, info: ClaimInfo, preps: list[Prepared]) -> list[Flag]:
        """number_not_found and number_in_other_column, against what the question, its date
        and the cited passages make available."""
        if not self.unit_keys_added:
            self.base_keys |= unit_keys(self.question, self.q_info, self.base_keys)
            self.unit_keys_added = True
        q = info.quantities
        says_today = TODAY.search(info.folded) or any(
            key in self.today_keys and start <= 4  # opens with it: "On 2026-10-09, ..."
            for (key, _), start in zip(q.items, q.where, strict=True)
        )
        today = self.today_keys if says_today else set()
        known = Known(
            keys=Keys(self.base_keys, today, *(prep.keys for prep in preps)),
            dates=set(self.base_dates),
            periods=list(self.q_periods),
            percents=list(self.q_info.percents),
            amounts=list(self.q_info.amounts),
            question_amounts=list(self.q_info.amounts),
        )
        for prep in preps:
            known.dates.update(prep.dates)
            known.periods.extend(prep.periods)
            known.percents.extend(prep.percents)
            known.amounts.extend(prep.amounts)
        return number_flags(info, known) + column_flags(info, preps, self.base_keys)

    def nearby_stems(self, cited: list[Chunk]) -> frozenset[str]:
        """The words of the context's passages the claim does not cite and of the cited
        documents' other sections (the audience's own; read once per document version)."""
        ids = {c.chunk_id for c in cited}
        out: set[str] = set()
        for prep, _rank in self.context_preps:
            if prep.chunk.chunk_id not in ids:
                out |= prep.stems
        if self.store is not None:
            public = self.o.audience != "staff"
            for c in cited:
                out |= self.cache.document_stems(self.store, c.doc_id, c.meta.version, public)
        return frozenset(out)

    def judge_limit(self) -> float:
        """The entailment score under which `not_entailed` fires."""
        o = self.o
        limit = o.threshold if o.threshold is not None else getattr(o.judge, "threshold", None)
        return DEFAULT_JUDGE_THRESHOLD if limit is None else float(limit)

    def siblings(self) -> Siblings:
        """The cache's sibling-instruction entries for this store (this call's own when the
        store cannot be held weakly)."""
        if self._siblings is None:
            self._siblings = {}
            with contextlib.suppress(TypeError):  # not weak-referenceable: per call
                self._siblings = self.cache.siblings(self.store)
        return self._siblings

    def sentence_vectors(self) -> dict[str, np.ndarray]:
        """The cache's sentence vectors for the embedder (this call's own when it cannot be
        held weakly, or there is no embedder)."""
        if self._vectors is None:
            self._vectors = {}
            if self.embedder is not None:
                with contextlib.suppress(TypeError):  # not weak-referenceable: per call
                    self._vectors = self.cache.vectors(self.embedder)
        return self._vectors


def _lookup(store: Store | None, ids: Iterable[str]) -> dict[str, Chunk]:
    ids = list(ids)
    if not ids or store is None:
        return {}
    return dict(store.get_many(ids))
