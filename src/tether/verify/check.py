"""Citation verification: check every claim of an answer in code, and find its evidence.

`check_answer(answer, store, context, question, options, cache=...)` returns one `ClaimCheck`
per claim: its flags (`tether.types.Flag`; none means ok), its evidence sentences (character
offsets into the parsed document's text), the judge's entailment score when a judge is given,
and the alignment's details. The options are a `VerifierOptions` (`tether.verify.options`) or
its fields as keywords; pass a `VerifierCache` that lives as long as the index (without one
every passage is prepared again on every call). This module composes the check families:
`verify.claims` (names, word share, negation, cross-language), `verify.numbers` (numbers,
dates, units, computed values), `verify.passages` (evidence, table columns), `verify.sources`
(instructions, standing, better citations) and `verify.align` (the details the evidence does
not match, the learned judge's features), and re-exports the flag families and policies of
`verify.flags`. docs/verification.md describes every flag and its rule.

What it cannot do: the clues are word and number matching, so a true claim worded very
differently from its passage can be flagged `unsupported` and a false claim that reuses its
passage's words and numbers passes every clue; negation, arithmetic, units, names and the
source checks have the limits docs/verification.md lists. It loads nothing: without an
embedder, a claim whose cited passages are all in another language is judged by word share.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from tether.language.quantities import (
    found_keys,
    numbers_in,
    read_periods,
    read_quantities,
    unit_keys,
)
from tether.protocols import AlignedJudge, SearchableStore
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
_INSTRUCTION_IN_CLAIM = Flag("instruction_in_claim")
# a detail of the claim that its evidence does not match → the flag that names it. The hard
# ones are flagged whatever the judge says (on the tuned-on claim sets they fired on few
# supported claims and on many unsupported ones); the soft ones, which also fired on many
# supported claims, only explain a claim the learned judge rejects (the flags on each
# labelled claim: bench/judge/bench_judge.py, bench/results/judge.md).
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
    store: SearchableStore | None,
    context: Context,
    question: str,
    options: VerifierOptions | None = None,
    *,
    cache: VerifierCache | None = None,
    **fields: Any,
) -> list[ClaimCheck]:
    """One ClaimCheck per claim of `answer` (docs/verification.md describes every flag).

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
        store: SearchableStore | None,
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
            info,
            claim.text,
            preps,
            clue_flags=len(flags) - n_exact,
            question=self.question,
            other_stems=self.nearby_stems(cited),
        )
        entailment: float | None = None
        judge = o.judge
        same_language = any(c.meta.language == o.language for c in cited)
        if same_language:  # a scope word, condition or rate the evidence does not state
            flags += detail_flags(aligned, HARD_DETAILS)
        # a judge that reads the alignment (declared by `aligned`), or None; one that reads
        # the sentences with a model (`reads`) is asked across languages too
        reader = judge if isinstance(judge, AlignedJudge) and judge.aligned else None
        reads = reader is not None and bool(getattr(reader, "reads", False))
        if reader is not None and (same_language or reads):
            extra: dict[str, Any] = {}
            if reads:
                sents = [s.text for p in preps for s in p.sentences if s.text.strip()]
                extra = {
                    "sentences": sents,
                    "rank": lambda: self.rank(claim.text, sents, aligned),
                    "same_language": same_language,
                }
            entailment = float(
                reader.judge(
                    aligned.features,
                    claim.text,
                    [c.text for c in cited],
                    evidence=aligned.evidence_text,
                    flagged=len(flags) > n_exact,
                    **extra,
                )
            )
            if entailment < self.judge_limit():
                soft = detail_flags(aligned, SOFT_DETAILS) if same_language else []
                flags += soft or [Flag("not_entailed", f"{entailment:.2f}")]
            else:  # the judge weighed the word share: a paraphrase is not flagged for it
                # (a reading judge read the other language too: the cosine cut yields to it)
                flags = [
                    f
                    for f in flags
                    if f.kind != "unsupported" or ((f.arg or "").startswith("cos=") and not reads)
                ]
        elif judge is not None and reader is None:
            entailment = float(judge.score(claim.text, [c.text for c in cited]))
            if entailment < self.judge_limit():
                flags.append(Flag("not_entailed", f"{entailment:.2f}"))
        if aligned.features["not_statement"]:
            flags.insert(n_exact, _NOT_A_STATEMENT)
        if find_instructions(claim.text):  # the reply passes on an instruction as a claim
            flags.append(_INSTRUCTION_IN_CLAIM)
        flags += instruction_flags(info, preps, self.store, self.shown, self.siblings, self.cache)
        flags += source_flags(
            info,
            preps,
            self.context_preps,
            o.precedence,
            self.store_vectors,
            best,
            o.same_point_cosine,
        )
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

    def rank(self, claim: str, sentences: list[str], aligned: Alignment) -> list[int]:
        """The sentences' order for a reading judge, best first: by e5 cosine to the claim
        (both read as passages, as the reader was trained) when there is an embedder, else
        the alignment's sentences first and the others in their order."""
        if self.embedder is not None:
            cache = self.sentence_vectors()
            missing = [t for t in dict.fromkeys([claim, *sentences]) if t not in cache]
            if missing:
                for t, v in zip(missing, self.embedder.embed_passages(missing), strict=True):
                    cache[t] = v
            q = cache[claim]
            sims = [float(np.dot(cache[t], q)) for t in sentences]
            return sorted(range(len(sentences)), key=lambda i: -sims[i])
        first = {s.text for _, s in aligned.sentences}
        return sorted(range(len(sentences)), key=lambda i: (sentences[i] not in first, i))

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


def _lookup(store: SearchableStore | None, ids: Iterable[str]) -> dict[str, Chunk]:
    ids = list(ids)
    if not ids or store is None:
        return {}
    return dict(store.get_many(ids))
