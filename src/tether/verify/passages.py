"""Passages, prepared once for every check, and the cache that keeps them (`VerifierCache`).

A prepared passage (`Prepared`) holds what the checks read: the stems of its text, title and
section path; every number, date and code key it and its header (version, effective dates)
make available; its sentences with their stems, tokens and negation scope (a table row read
with its header row); the spans addressed to AI assistants (`find_instructions`), and whether
its header (title, type, section path) holds one; and which
numbers it states only in table cells, under which column headings. Scoring a claim against
the sentences (`ranked_sentences`, `best_sentence_score`), its evidence (`evidence_for`), the
word share (`word_share`) and `number_in_other_column` (`column_flags`) live here too.
Internal to `tether.verify` except `VerifierCache`.

What it cannot do: a table whose first row is data has its words counted for every row;
sentences are split by rule (`tether.text.sentences`); a cache that outlives a re-ingest can
keep a removed sibling chunk's instruction (see `VerifierCache`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from tether.language.negation import negation_scope
from tether.language.quantities import (
    NUMBER,
    Quantities,
    canon_number,
    found_keys,
    read_periods,
    read_quantities,
    unit_keys,
)
from tether.language.stems import DIGIT, stem_set
from tether.protocols import StoreReader
from tether.text import collapse_code, fold, fold_fast, sentences
from tether.types import Chunk, Evidence, Flag
from tether.verify.instructions import find_instructions
from tether.verify.reading import ClaimInfo

__all__ = [
    "Prepared",
    "Sentence",
    "VerifierCache",
    "best_sentence_score",
    "column_flags",
    "evidence_for",
    "ranked_sentences",
    "word_share",
]


@dataclass(frozen=True)
class Sentence:
    """One sentence of a prepared passage (a table row is read with its header row)."""

    start: int  # offsets into the parsed document's text
    end: int
    text: str
    tokens: frozenset[str]  # stems and number keys
    stems: frozenset[str]
    scope: tuple[frozenset[str], frozenset[str]]  # stems under a negation, and outside one
    heading: bool


@dataclass(frozen=True)
class Prepared:
    """A passage read once for every check: its stems, number keys, sentences, instruction
    spans and table columns."""

    chunk: Chunk
    stems: frozenset[str]  # every stem of the text, title and section path
    tokens: frozenset[str]  # the union of the sentences' tokens
    keys: frozenset[str]  # every number/date/code key the passage and its header make available
    dates: tuple[date, ...]
    periods: tuple[tuple[int, str, bool], ...]
    percents: tuple[float, ...]
    amounts: tuple[float, ...]
    sentences: tuple[Sentence, ...]
    instructions: tuple[tuple[int, int], ...]  # spans in chunk.text
    # number keys found only in table cells → the stems of those cells' column headings; and
    # the stems of every column heading past the first (the row labels)
    columns: dict[str, frozenset[str]] = field(default_factory=dict)
    headings: frozenset[str] = frozenset()
    # what the passage header shows (title, type, section path) addresses AI assistants
    header_instruction: bool = False


_TABLE_RULE = re.compile(r"[\s|:-]+")  # a table's "---|---" line
_CACHE_MAX = 8192  # prepared passages a VerifierCache keeps (emptied when full)


class VerifierCache:
    """What the checker keeps between calls: hold one for as long as the index stays the same
    (a Workspace holds one; `check_answer` makes a fresh one per call when given none, which
    is correct but prepares every passage again).

    - `prepare(chunk)`: prepared passages (sentences, stems, number keys, instruction spans)
      by chunk ID, at most `_CACHE_MAX`, emptied when full; an entry is used only when its
      chunk equals the one asked for, so a re-ingested chunk is prepared again;
    - `siblings(store)`: per store object (held weakly), what the other chunks of a cited
      document say in instructions (`verify.sources.instruction_flags`), read again when a
      cited chunk is not among them;
    - `vectors(embedder)`: per embedder object (held weakly), sentence vectors by text (the
      cross-language check).

    What it cannot do: it is not thread-safe (one per thread); it does not watch the index:
    a sibling chunk removed since it was read can still count until the cache is dropped (use
    a new one after a re-ingest).
    """

    def __init__(self) -> None:
        self._prepared: dict[str, Prepared] = {}  # by chunk ID
        self._siblings: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._vectors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._documents: dict[tuple[int, str, str, bool], frozenset[str]] = {}

    def prepare(self, chunk: Chunk) -> Prepared:
        """The chunk, prepared (from the cache when it was prepared before)."""
        cached = self._prepared.get(chunk.chunk_id)
        if cached is not None and (cached.chunk is chunk or cached.chunk == chunk):
            return cached
        prepared = _prepare(chunk)
        if len(self._prepared) >= _CACHE_MAX:
            self._prepared.clear()
        self._prepared[chunk.chunk_id] = prepared
        return prepared

    def siblings(self, store: object) -> dict:
        """The sibling-instruction entries kept for `store`, by (doc_id, version); raises
        TypeError when `store` cannot be held weakly (the caller then keeps its own)."""
        return self._siblings.setdefault(store, {})

    def document_stems(
        self, store: StoreReader, doc_id: str, version: str, public: bool
    ) -> frozenset[str]:
        """The stems of every section of one document version that the audience may see (a
        public reader: its public sections only), read once per store and version."""
        key = (id(store), doc_id, version, public)
        found = self._documents.get(key)
        if found is None:
            try:
                chunks = store.chunks(doc_id, version)
            except Exception:  # a store that cannot list a document's chunks: none known
                chunks = []
            found = frozenset().union(
                *(stem_set(c.text) for c in chunks if not public or c.meta.access == "public")
            )
            if len(self._documents) >= _CACHE_MAX:
                self._documents.clear()
            self._documents[key] = found
        return found

    def vectors(self, embedder: object) -> dict[str, np.ndarray]:
        """The sentence vectors kept for `embedder`, by sentence text; raises TypeError when
        `embedder` cannot be held weakly."""
        return self._vectors.setdefault(embedder, {})


def _sentence_tokens(text: str, language: str) -> frozenset[str]:
    q = read_quantities(text, language)
    folded = fold_fast(text)
    return stem_set(text, folded) | found_keys(q, folded)


def _prepare(chunk: Chunk) -> Prepared:
    meta = chunk.meta
    language = meta.language
    # what the passage header shows: title, section path, type, version, effective dates
    # (the version number is kept apart: "4 points" is not found in version 4's header)
    header_text = " ".join([meta.title, *chunk.heading_path, meta.doc_type, "effective"])
    full = f"{header_text}\n{chunk.text}"
    folded = fold(full)
    q = read_quantities(full, language)
    keys, dates = _header_keys(chunk, full, q, folded)
    items, cells, prose, head_cells = _read_body(chunk, header_text)
    return Prepared(
        chunk=chunk,
        stems=stem_set(full),
        tokens=frozenset().union(*(x.tokens for x in items)),
        keys=frozenset(keys),
        dates=tuple(dates),
        periods=tuple(read_periods(folded)),
        percents=tuple(q.percents),
        amounts=tuple(q.amounts),
        sentences=tuple(items),
        instructions=tuple(find_instructions(chunk.text)),
        columns=_table_only(cells, prose, language),
        headings=frozenset().union(*head_cells[1:]) if cells else frozenset(),
        header_instruction=bool(
            find_instructions("\n\n".join([meta.title, meta.doc_type, *chunk.heading_path]))
        ),
    )


def _header_keys(
    chunk: Chunk, full: str, q: Quantities, folded: str
) -> tuple[set[str], list[date]]:
    """(number/date/code keys, dates) of a passage with its header (`full`, read as `q`):
    its version (as "v:N" and as a code) and its effective dates count."""
    meta = chunk.meta
    keys = found_keys(q, folded)
    dates = list(q.dates)
    keys |= unit_keys(full, q, keys)
    keys.add("v:" + canon_number(meta.version, "en") if NUMBER.fullmatch(meta.version) else "")
    keys.add("c:" + collapse_code("v" + meta.version))
    keys.add("c:" + collapse_code(meta.version))
    for when in (meta.effective_from, meta.effective_to):
        if when is not None:
            dates.append(when)
            iso = when.isoformat()
            keys.update({"d:" + iso, "md:" + iso[5:], "ym:" + iso[:7], "n:" + iso[:4]})
            keys.add(f"u:{iso[:4]}|")
    keys.discard("")
    return keys, dates


def _read_body(
    chunk: Chunk, header_text: str
) -> tuple[list[Sentence], dict[str, set[str]], list[str], list[frozenset[str]]]:
    """(sentences, number key → column heading stems over table cells, the prose texts, the
    stems of each column heading) of a chunk's text (its repeated table header excepted)."""
    meta = chunk.meta
    language = meta.language
    body_offset = len(chunk.lead) + 1 if chunk.lead else 0
    body = chunk.text[body_offset:]
    headings = {fold(h).strip(" #") for h in (*chunk.heading_path, meta.title)}
    items: list[Sentence] = []
    # A table row is read with its table's header row: "Atlantic provinces | $7.95 | $99"
    # under "Zone | Standard delivery | ... | Free standard delivery from" holds "free" and
    # "standard delivery" (for evidence, `lower_precedence` and `weaker_citation`). Can be
    # wrong on a table whose first row is data, whose words then count for every row.
    header: frozenset[str] | None = None
    head_cells: list[frozenset[str]] = []
    if "|" in chunk.lead:  # a table split across chunks: its header row is repeated as lead
        head_cells = [stem_set(cell) for cell in chunk.lead.split("|")]
    cells: dict[str, set[str]] = {}  # number key → column heading stems, over table cells
    prose: list[str] = [header_text]
    for s, e in sentences(body):
        text = body[s:e]
        tokens = _sentence_tokens(text, language)
        if "|" not in text:
            header = None
            prose.append(text)
        elif header is None:
            header = stem_set(text)
            if not head_cells or s > 0:
                head_cells = [stem_set(cell) for cell in text.split("|")]
            prose.append(text)
        elif not _TABLE_RULE.fullmatch(text):
            tokens = tokens | header
            for j, cell in enumerate(text.split("|")):
                if 0 < j < len(head_cells) and DIGIT.search(cell):  # past the row labels
                    for key, _ in read_quantities(cell, language).items:
                        if key.startswith("n:"):
                            cells.setdefault(key, set()).update(head_cells[j])
        items.append(
            Sentence(
                start=chunk.start + s,
                end=chunk.start + e,
                text=text,
                tokens=tokens,
                stems=stem_set(text),
                scope=negation_scope(fold_fast(text)),
                heading=fold(text).strip(" #") in headings,
            )
        )
    return items, cells, prose, head_cells


def _table_only(
    cells: dict[str, set[str]], prose: list[str], language: str
) -> dict[str, frozenset[str]]:
    """The number keys of table cells that the passage's other text does not also state."""
    if not cells:
        return {}
    said = {key for text in prose for key, _ in read_quantities(text, language).items}
    return {key: frozenset(heads) for key, heads in cells.items() if key not in said}


def column_flags(info: ClaimInfo, preps: Sequence[Prepared], question_keys: set[str]) -> list[Flag]:
    """number_in_other_column: a number of the claim that the cited passages hold only in
    table cells, under column headings the claim does not speak of, while the claim speaks of
    another column of the table ("$150 to rent for 3 days" from the Deposit column, when
    "First day" and "Extra day" are columns)."""
    flags: list[Flag] = []
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
            flags.append(Flag("number_in_other_column", display))
    return flags


def word_share(stems: frozenset[str], preps: Sequence[Prepared]) -> float:
    """Share of `stems` found in the passages' stems (text, title, section)."""
    if len(preps) == 1:
        return len(stems & preps[0].stems) / len(stems)
    return sum(1 for w in stems if any(w in p.stems for p in preps)) / len(stems)


def ranked_sentences(claim: ClaimInfo, prep: Prepared) -> list[tuple[float, Sentence]]:
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


def _by_score(item: tuple[float, Sentence]) -> tuple[float, int]:
    return (-item[0], len(item[1].tokens))


def best_sentence_score(claim: ClaimInfo, prep: Prepared, floor: float = 0.0) -> tuple[float, int]:
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


def evidence_for(
    claim: ClaimInfo, prep: Prepared, ranked: list[tuple[float, Sentence]]
) -> list[Evidence]:
    """The claim's evidence in one passage (`ranked`: its sentences by `ranked_sentences`):
    the best sentence that is not a heading, and the one adding most of the claim's tokens
    the first lacks (when it holds a quarter of them), in text order."""
    usable = [(score, s) for score, s in ranked if not s.heading] or ranked
    if not usable:
        return []
    cid = prep.chunk.chunk_id
    first_score, first = usable[0]
    out = [Evidence(cid, first.text, first.start, first.end, round(max(first_score, 0.0), 3))]
    if first_score < 1.0:
        covered = claim.tokens & first.tokens
        best_extra: tuple[int, float, Sentence] | None = None
        for score, s in usable[1:]:
            extra = len((claim.tokens & s.tokens) - covered)
            if extra and score >= 0.25 and (best_extra is None or extra > best_extra[0]):
                best_extra = (extra, score, s)
        if best_extra is not None:
            _, score, s = best_extra
            out.append(Evidence(cid, s.text, s.start, s.end, round(score, 3)))
            out.sort(key=lambda e: e.start)
    return out
