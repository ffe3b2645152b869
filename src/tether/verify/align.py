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

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tether.text import fold_fast, is_statement, words_of
from tether.types import Detail
from tether.verify.cues import (
    BENIGN_ADDED,
    GENERIC,
    LIMITING,
    OPPOSITES,
    PERIOD_WORDS,
    QUANT_NEIGHBOURS,
    classes,
    condition,
    cue_text,
    main_clause,
    periods,
    polarity,
    related,
)
from tether.verify.passages import Prepared, Sentence
from tether.verify.reading import ClaimInfo, claim_info
from tether.verify.stems import content_stem

__all__ = ["FEATURES", "Alignment", "align", "is_statement"]

_WINDOW = 4  # a number's neighbouring words: this many tokens either side

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
    cited documents' other sections), where a swapped item or place is usually found."""
    heads = [h for p in preps for h in (p.chunk.meta.title, *p.chunk.heading_path)]
    cwords = words_of(claim)
    statement = is_statement(claim, heads)
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
    aligned_tokens = frozenset().union(*(s.tokens for _, s in chosen)) if chosen else frozenset()
    aligned_stems = frozenset().union(*(s.stems for _, s in chosen)) if chosen else frozenset()
    header_stems = frozenset().union(
        *(frozenset(content_stem(w) for w in words_of(h).split()) for h in heads)
    ) if heads else frozenset()  # fmt: skip
    passage_stems = frozenset().union(*(p.stems for p in preps)) if preps else frozenset()
    passage_tokens = (
        frozenset().union(*(p.tokens | p.keys for p in preps)) if preps else frozenset()
    )
    q_stems = frozenset(content_stem(w) for w in words_of(question).split()) - {""}
    evidence = " … ".join(s.text.strip() for _, s in chosen)
    ewords = words_of(evidence)
    cid = chosen[0][0] if chosen else (preps[0].chunk.chunk_id if preps else "")
    details: list[Detail] = []

    def add(kind: str, what: str, against: str = "") -> None:
        details.append(Detail(kind, what, (against or evidence)[:300], cid))

    if not statement:
        add("not_a_statement", claim.strip()[:120], "a question, heading or title, not a statement")

    # words
    stems = info.stems
    known_stems = passage_stems | q_stems
    shown = _surface(claim)
    passage_words = " ".join(words_of(p.chunk.text) for p in preps)  # folded once per claim
    heads5 = {w[:5] for w in passage_words.split() if len(w) >= 5}
    heads5 |= {w[:5] for w in words_of(question).split() if len(w) >= 5}
    absent = sorted(
        w for w in stems
        if w not in known_stems and w not in _UNIT_STEMS
        and not related(fold_fast(shown.get(w, w)), known_stems, heads5)
    )  # fmt: skip
    absent_other = [w for w in absent if w in other_stems]
    generic = [w for w in absent if w in GENERIC]
    elsewhere = sorted(
        w for w in stems
        if w in passage_stems and w not in aligned_stems and w not in header_stems
        and w not in q_stems
    )  # fmt: skip
    for w in absent:
        if w not in GENERIC:
            add("word", shown.get(w, w))
    # numbers
    items = info.quantities.items
    computes = bool(_COMPUTED.search(cwords))  # a claim that computes binds no number to a word
    n_absent = n_elsewhere = n_unbound = 0
    for (key, display), start in zip(items, info.quantities.where, strict=True):
        k = key.rstrip("?") if key.startswith("t:") else key
        if k in aligned_tokens:
            if computes or _MODEL_NUMBER.search(claim[:start]):
                continue  # a claim that computes, or a model's number ("Ridgeline 2")
            if not _bound(claim, start, display, chosen, k):
                n_unbound += 1
                add("number", display)
            continue
        if any(k in s.tokens for p in preps for s in p.sentences):
            n_elsewhere += 1
            holder = next(s for p in preps for s in p.sentences if k in s.tokens)
            add("number", display, holder.text.strip())
        elif k not in passage_tokens:
            n_absent += 1
    # table cells: the row and the column the claim names must hold the number
    wrong_row = wrong_column = 0
    units = info.units or ("",) * len(items)
    for (key, display), start, unit in zip(items, info.quantities.where, units, strict=True):
        if computes or unit == "%" or _MODEL_NUMBER.search(claim[:start]):
            continue  # a claim that computes, a rate, or a model's number ("Ridgeline 2")
        found = _table_binding(key, stems, preps)
        if found is not None:
            kind, row_text = found
            if kind == "row":
                wrong_row += 1
            else:
                wrong_column += 1
            add("cell", display, row_text)
    # opposites: the claim says "after" where its evidence says "before"
    c_set = set(cwords.split())
    best_words = set(words_of(chosen[0][1].text).split()) if chosen else set()
    swapped = sorted(
        w for w in c_set
        if w in OPPOSITES and w not in best_words and OPPOSITES[w] & best_words
        and not (OPPOSITES[w] & c_set)
    )  # fmt: skip
    for w in swapped:
        add("opposite", w, chosen[0][1].text.strip())
    # quantifiers
    c_cls, e_cls = classes(cwords), classes(ewords)
    added = sorted(
        c for c in c_cls - e_cls
        if not (QUANT_NEIGHBOURS.get(c, set()) & e_cls) and c not in BENIGN_ADDED
        and not _clause_has(claim, c, preps, language_of(preps))
    )  # fmt: skip
    dropped = sorted(
        c for c in (e_cls - c_cls) & set(LIMITING)
        if not (QUANT_NEIGHBOURS.get(c, set()) & c_cls)
    )  # fmt: skip
    for c in added:
        add("quantifier", cue_text(cwords, c))
    # conditions the claim leaves out
    # only from a sentence that holds at least half of the claim (not one aligned for a word)
    main = " ".join(
        words_of(s.text) for _, s in chosen
        if len(info.tokens & s.tokens) >= 0.5 * max(len(info.tokens), 1)
    )  # fmt: skip
    cond = condition(main)
    cond_dropped = 0
    if cond is not None and condition(cwords) is None and chosen:
        cue, clause = cond
        clause = _clause_text(chosen, cue) or clause
        clause_stems = {content_stem(w) for w in words_of(clause).split()[1:10]} - {""}
        # the claim states it, or the question does ("My tent came back dirty: what can you
        # deduct?" answered with the fee that applies "if the item comes back dirty")
        if clause_stems and len(clause_stems & (stems | q_stems)) < len(clause_stems) / 3:
            cond_dropped = 1
            add("condition", f"(no '{cue} …')", clause[:200])
    # polarity
    flip = 0
    if chosen and len(stems & chosen[0][1].stems) >= max(1, 0.5 * len(stems)):
        mine, theirs = (
            polarity(main_clause(cwords)),
            polarity(main_clause(words_of(chosen[0][1].text))),
        )
        if (mine > 0) != (theirs > 0):
            flip = 1  # a feature only: the rule in `verify.negation` names a negation
    # periods
    c_per, e_per = periods(cwords), periods(ewords)
    p_all = periods(passage_words)
    period_other = period_absent = 0
    for unit in sorted(c_per - e_per):
        if unit in p_all:
            continue
        if e_per or p_all:
            period_other += 1  # the evidence gives another period
        else:
            period_absent += 1  # the passages give none
        add("period", f"per {unit}")
    n_stems = max(len(stems), 1)
    e_stems = frozenset().union(*(s.stems for _, s in chosen[:1])) if chosen else frozenset()
    features = {
        "share_passages": sum(1 for w in stems if w in passage_stems or w in q_stems) / n_stems,
        "share_aligned": sum(1 for w in stems if w in aligned_stems or w in header_stems) / n_stems,
        "tokens_aligned": len(info.tokens & aligned_tokens) / max(len(info.tokens), 1),
        "words_absent": float(len(absent) - len(generic)),
        "words_absent_share": (len(absent) - len(generic)) / n_stems,
        "words_absent_generic": float(len(generic)),
        "words_absent_nearby": float(len(absent_other)),
        "words_elsewhere": float(len(elsewhere)),
        "numbers": float(len(items)),
        "numbers_absent": float(n_absent),
        "numbers_elsewhere": float(n_elsewhere),
        "numbers_unbound": float(n_unbound),
        "number_other_row": float(wrong_row),
        "number_other_column": float(wrong_column),
        "opposite": float(len(swapped)),
        "quantifier_added": float(len(added)),
        "quantifier_dropped": float(len(dropped)),
        "condition_dropped": float(cond_dropped),
        "negation_flip": float(flip),
        "period_other": float(period_other),
        "period_absent": float(period_absent),
        "not_statement": 0.0 if statement else 1.0,
        "claim_words": _log1p(len(stems)),
        "evidence_words_unused": len(e_stems - stems) / max(len(e_stems), 1),
        "clue_flags": float(clue_flags),
    }
    return Alignment(tuple(chosen), tuple(details), features)


def _table(prep: Prepared) -> list[list[str]]:
    """The cited passage's table as rows of cells, the header row first ([] when none)."""
    lines = [ln for ln in prep.chunk.text.splitlines() if " | " in ln]
    if prep.chunk.lead and " | " in prep.chunk.lead and (not lines or lines[0] != prep.chunk.lead):
        lines.insert(0, prep.chunk.lead)
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    rows = [r for r in rows if not all(re.fullmatch(r"[\s:-]*", c) for c in r)]
    if len(rows) < 3:
        return []
    width = len(rows[0])
    return [r for r in rows if len(r) == width] if width >= 2 else []


def _cell_stems(cell: str) -> frozenset[str]:
    return frozenset(s for w in words_of(cell).split() if (s := content_stem(w)))


def _table_binding(
    key: str, stems: frozenset[str], preps: Sequence[Prepared]
) -> tuple[str, str] | None:
    """("row" | "column", the row's text) when a claim's number stands only in the cells of a
    cited table (not in its prose) and the claim names a row (all of its label's words) that
    holds it in no cell, or names a column (all of its heading's words) while the columns that
    hold it share under half of their heading's words with the claim; else None."""
    from tether.verify.quantities import read_quantities

    if not key.startswith("n:"):
        return None
    for prep in preps:
        rows = _table(prep)
        if not rows:
            continue
        head, body = rows[0], rows[1:]
        language = prep.chunk.meta.language
        holders = [
            (r, j) for r, row in enumerate(body) for j, cell in enumerate(row)
            if j > 0 and any(k == key for k, _ in read_quantities(cell, language).items)
        ]  # fmt: skip
        if not holders or key not in prep.columns:
            continue  # not in this table, or also stated in the passage's prose
        labels = [_cell_stems(row[0]) for row in body]
        named_rows = {r for r, lab in enumerate(labels) if lab and lab <= stems}
        if named_rows:
            best = max(len(labels[r]) for r in named_rows)
            named_rows = {r for r in named_rows if len(labels[r]) == best}
        heads = [_cell_stems(h) for h in head]
        cover = [len(h & stems) / len(h) if h and j > 0 else 0.0 for j, h in enumerate(heads)]
        if named_rows and not any(r in named_rows for r, _ in holders):
            r = next(iter(named_rows))
            return "row", " | ".join(body[r])
        if max(cover, default=0.0) == 1.0 and max(cover[j] for _, j in holders) < 0.5:
            r, _ = holders[0]
            return "column", " | ".join(head) + " … " + " | ".join(body[r])
    return None


def _log1p(n: int) -> float:
    import math

    return math.log1p(n)


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
_CLAUSE_CUT = re.compile(r"[,;:()]|\s(?:and|or|but|while|whereas|et|ou|mais|alors que)\s", re.I)
_UNIT_STEMS = frozenset(
    content_stem(w)
    for w in (*PERIOD_WORDS, "dollar", "dollars", "percent", "cent", "cents", "times", "fois",
              "hours", "heures", "minutes", "km", "kg", "points", "item", "items")
) - {""}  # fmt: skip


def _bound(
    claim: str, start: int, display: str, chosen: Sequence[tuple[str, Sentence]],
    key: str,
) -> bool:  # fmt: skip
    """True unless the words beside a number in the claim (its clause, at most `_WINDOW`
    words either side, units left out) stand in an aligned sentence that is not the one
    holding the number: "DVDs: 28 days" is not bound when the evidence says "Books: 28 days.
    DVDs: 14 days", nor is a table cell read from another row."""
    head = _CLAUSE_CUT.split(claim[:start])[-1]
    tail = _CLAUSE_CUT.split(claim[start + len(display) :])[0]
    near = {
        s
        for w in (*words_of(head).split()[-_WINDOW:], *words_of(tail).split()[:_WINDOW])
        if (s := content_stem(w)) and s not in _UNIT_STEMS
    }
    if not near:
        return True
    in_aligned = near & frozenset().union(*(s.stems for _, s in chosen))
    if not in_aligned:
        return True
    holders = [s for _, s in chosen if key in s.tokens and "|" not in s.text]
    if not holders:
        return True
    if not any(not (in_aligned - s.stems) for s in holders):
        return False
    return all(_nearest_number(s.text, display, in_aligned) for s in holders)


_NUMBER_TOKEN = re.compile(r"\d+(?:[.,]\d+)*")


def _nearest_number(text: str, display: str, near: set[str]) -> bool:
    """False when, in a sentence that lists several numbers ("black and white: $0.15 a page;
    colour: $0.50"), a word the claim puts beside its number stands clearly nearer another
    number of the sentence than that one."""
    toks = words_of(text).split()
    target = words_of(display).split()
    mine = [i for i in range(len(toks)) if target and toks[i : i + len(target)] == target]
    others = [  # another number, not one of a range or code with this one ("3 to 7")
        i for i, t in enumerate(toks)
        if _NUMBER_TOKEN.fullmatch(t) and min(abs(i - m) for m in mine) > 3
    ] if mine else []  # fmt: skip
    if not mine or not others:
        return True
    for i, t in enumerate(toks):
        if content_stem(t) in near:
            to_mine = min(abs(i - m) for m in mine)
            to_other = min(abs(i - o) for o in others)
            if to_other + 2 <= to_mine:
                return False
    return True
