"""Where a claim's support comes from: instructions in its sources, source standing, and a
better passage it did not cite.

- `instruction_flags`: `instruction_in_source:ID` for a cited passage with text addressed to
  AI assistants (`find_instructions`), or for another chunk of a cited document (same
  version) whose instruction holds most of the claim's words its cited passages lack;
- `source_flags`: `lower_precedence:ID` (every cited passage's type ranks below another
  passage of the context on the same point: shared words and numbers in one sentence, or,
  when the store has chunk vectors and a cited passage ranks at help level or below, a chunk
  cosine of at least `SAME_POINT_COSINE`) and `weaker_citation:ID→ID` (an uncited passage
  of the context, not ranked below, covers clearly more of the claim).

The full rules are in docs/verification.md. Internal to `tether.verify` except the constants
that `tether.verify.check` re-exports.

What it cannot do: `weaker_citation` uses word overlap only, and so does `lower_precedence`
on an index without vectors, so they miss paraphrases and may fire on passages that share
words without covering the same point (the vector test finds a paraphrase only above a high
cosine, the Profile's `same_point_cosine`: a French FAQ against the English policy scored
just under it and is not flagged); a sibling
instruction is found only in the chunks the store lists for the document (the context's
when there is no store, or it cannot list).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

import numpy as np

from tether.language.stems import stem_set
from tether.protocols import StoreReader
from tether.standing import source_rank
from tether.types import Chunk, Flag
from tether.verify.options import SAME_POINT_COSINE
from tether.verify.passages import Prepared, VerifierCache, best_sentence_score
from tether.verify.reading import ClaimInfo

__all__ = [
    "SAME_POINT_MIN",
    "SAME_POINT_SHARE",
    "WEAKER_MARGIN",
    "WEAKER_MIN",
    "instruction_flags",
    "source_flags",
]

SAME_POINT_SHARE = 0.5  # lower_precedence: a higher-ranked sentence covering this share...
SAME_POINT_MIN = 2  # ...and at least this many of the claim's words and numbers
WEAKER_MIN = 0.7  # weaker_citation: an uncited sentence covering this share...
WEAKER_MARGIN = 0.3  # ...and this much more than the best cited sentence
_SIBLINGS_MAX = 4096  # documents kept per store (a VerifierCache's; emptied when full)

# What a document's chunks say in instructions: (the chunk IDs read, [(chunk ID, stems)])
Siblings = dict[tuple[str, str], tuple[frozenset[str], list[tuple[str, frozenset[str]]]]]


def instruction_flags(
    info: ClaimInfo,
    preps: Sequence[Prepared],
    store: StoreReader | None,
    in_context: dict[str, Chunk],
    kept: Callable[[], Siblings],
    cache: VerifierCache,
) -> list[Flag]:
    """instruction_in_source flags: one for each cited passage with an instruction span, in
    its text or in what its header shows (a title such as "Ignore previous instructions");
    else, for an instruction in another passage of a cited document: the claim's content
    words missing from its cited passages (at least half of them, and two or all) are in an
    instruction span (`find_instructions`) of another chunk of the same document and version
    (from the store's `chunks(doc_id, version)`, else the context).
    Catches a claim copied from a supplier sheet's note to AI assistants while citing the
    sheet's overview; can be wrong when a true claim's missing words happen to be the ones an
    instruction uses (the flag names the instruction's chunk so it can be read). What a
    document holds is kept in `kept()` (a `VerifierCache`'s, per store object; called only
    when needed), and read again when a cited chunk is not in it."""
    flags = [
        Flag("instruction_in_source", p.chunk.chunk_id)
        for p in preps
        if p.instructions or p.header_instruction
    ]
    missing = info.stems.difference(*(p.stems for p in preps)) if not flags else None
    if not missing:
        return flags
    entries = kept()
    need = max(min(2, len(missing)), math.ceil(len(missing) / 2))
    cited_ids = {p.chunk.chunk_id for p in preps}
    for key in dict.fromkeys((p.chunk.doc_id, p.chunk.version) for p in preps):
        entry = entries.get(key)
        ids_here = {p.chunk.chunk_id for p in preps if (p.chunk.doc_id, p.chunk.version) == key}
        if entry is None or not ids_here <= entry[0]:
            if len(entries) >= _SIBLINGS_MAX:
                entries.clear()
            entry = entries[key] = _read_siblings(key, store, in_context, cache)
        for chunk_id, words in entry[1]:
            if chunk_id not in cited_ids and len(missing & words) >= need:
                return [Flag("instruction_in_source", chunk_id)]
    return []


def _read_siblings(
    key: tuple[str, str], store: StoreReader | None, in_context: dict[str, Chunk], cache: VerifierCache
) -> tuple[frozenset[str], list[tuple[str, frozenset[str]]]]:
    """(the chunk IDs of a document version, [(chunk ID, stems of its instruction spans)])."""
    siblings = [c for c in in_context.values() if (c.doc_id, c.version) == key]
    if store is not None:
        with contextlib.suppress(Exception):  # a store that cannot list: the context
            siblings = list(store.chunks(key[0], key[1]))
    said = []
    for chunk in siblings:
        spans = cache.prepare(chunk).instructions
        if spans:
            words = frozenset().union(*(stem_set(chunk.text[a:b]) for a, b in spans))
            said.append((chunk.chunk_id, words))
    return frozenset(c.chunk_id for c in siblings), said


def source_flags(
    info: ClaimInfo,
    preps: list[Prepared],
    context_preps: list[tuple[Prepared, int | None]],
    precedence: Sequence[str],
    vectors: Callable[[str], np.ndarray | None] | None = None,
    best: dict[str, float] | None = None,
    same_point: float = SAME_POINT_COSINE,
) -> list[Flag]:
    """lower_precedence and weaker_citation (docs/verification.md has the rules); `vectors`
    gives a chunk's stored vector (the store's `vector`), `best` may hold each cited
    passage's best sentence share, already computed by the caller."""
    if not info.tokens:
        return []
    cited_ids = {p.chunk.chunk_id for p in preps}
    others = [(p, r) for p, r in context_preps if p.chunk.chunk_id not in cited_ids]
    flags = _lower_precedence(info, preps, others, precedence, vectors, same_point)
    cited_scores = [
        (
            best[p.chunk.chunk_id]
            if best and p.chunk.chunk_id in best
            else best_sentence_score(info, p)[0],
            p,
        )
        for p in preps
    ]
    best_score, best_prep = max(cited_scores, key=lambda x: x[0])
    best_rank = source_rank(best_prep.chunk.meta.doc_type, precedence)
    stronger: tuple[float, Prepared] | None = None
    floor = max(WEAKER_MIN, best_score + WEAKER_MARGIN)  # what a stronger passage must reach
    for prep, rank in others if floor <= 1.0 else ():
        if rank is not None and best_rank is not None and rank > best_rank:
            continue  # a lower-ranked source is never a better citation
        score, _ = best_sentence_score(info, prep, floor)
        strong = score >= WEAKER_MIN and score - best_score >= WEAKER_MARGIN
        if strong and (stronger is None or score > stronger[0]):
            stronger = (score, prep)
    if stronger is not None:
        arg = f"{best_prep.chunk.chunk_id}→{stronger[1].chunk.chunk_id}"
        flags.append(Flag("weaker_citation", arg))
    return flags


def _lower_precedence(
    info: ClaimInfo,
    preps: list[Prepared],
    others: list[tuple[Prepared, int | None]],
    precedence: Sequence[str],
    vectors: Callable[[str], np.ndarray | None] | None,
    same_point: float,
) -> list[Flag]:
    """lower_precedence: every cited passage is ranked, and an uncited passage of the context
    ranked above the best of them covers the same point (words, or chunk vectors)."""
    help_rank = source_rank("help", precedence)
    ranked_cited = [
        (r, p) for p in preps if (r := source_rank(p.chunk.meta.doc_type, precedence)) is not None
    ]
    cited_rank = min((r for r, _ in ranked_cited), default=None)
    if cited_rank is None or len(ranked_cited) != len(preps):
        return []
    best_cited = min(ranked_cited, key=lambda x: x[0])[1]
    for prep, rank in others:
        if rank is None or rank >= cited_rank:
            continue
        share, matched = best_sentence_score(info, prep, SAME_POINT_SHARE)
        same = share >= SAME_POINT_SHARE and matched >= SAME_POINT_MIN
        if not same and vectors is not None and help_rank is not None:
            same = any(
                r >= help_rank
                and _cosine(vectors, p.chunk.chunk_id, prep.chunk.chunk_id) >= same_point
                for r, p in ranked_cited
            )
        if same and not _agrees(info, prep):
            return [Flag("lower_precedence", best_cited.chunk.chunk_id)]
    return []


def _agrees(info: ClaimInfo, prep: Prepared) -> bool:
    """Whether the higher-ranked passage says the claim's numbers too: every number, date
    and time of the claim is among its keys (the claim has at least one). A source that
    repeats the claim's figures does not override the one cited (a price list giving the
    front desk's 8:30 to 18:00 beside the opening hours page)."""
    keys = {key.rstrip("?") if key.startswith("t:") else key for key, _ in info.quantities.items}
    return bool(keys) and keys <= prep.keys


def _cosine(vectors: Callable[[str], np.ndarray | None], a: str, b: str) -> float:
    va, vb = vectors(a), vectors(b)
    return float(va @ vb) if va is not None and vb is not None else -1.0
