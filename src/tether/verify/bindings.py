"""Where a claim's number is bound, for the alignment (`tether.verify.align`): whether the
words beside it in the claim stand beside it in the evidence (`bound`: "DVDs: 28 days" is not
bound when the evidence says "Books: 28 days. DVDs: 14 days"), and whether a table cell the
claim reads is in the row and the column the claim names (`table_binding`).

What it cannot do: it does not parse: a number's words are those within a few tokens of it in
its clause, a table is read from " | " rows of the cited passage, and a row or column is named
only by all of its label's or heading's words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tether.language.cues import PERIOD_WORDS
from tether.language.quantities import read_quantities
from tether.language.stems import content_stem
from tether.text import words_of
from tether.verify.passages import Prepared, Sentence

__all__ = ["UNIT_STEMS", "bound", "table_binding"]

_WINDOW = 4  # a number's neighbouring words: this many tokens either side
_CLAUSE_CUT = re.compile(r"[,;:()]|\s(?:and|or|but|while|whereas|et|ou|mais|alors que)\s", re.I)
UNIT_STEMS = frozenset(
    content_stem(w)
    for w in (*PERIOD_WORDS, "dollar", "dollars", "percent", "cent", "cents", "times", "fois",
              "hours", "heures", "minutes", "km", "kg", "points", "item", "items")
) - {""}  # fmt: skip


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


def table_binding(
    key: str, stems: frozenset[str], preps: Sequence[Prepared]
) -> tuple[str, str] | None:
    """("row" | "column", the row's text) when a claim's number stands only in the cells of a
    cited table (not in its prose) and the claim names a row (all of its label's words) that
    holds it in no cell, or names a column (all of its heading's words) while the columns that
    hold it share under half of their heading's words with the claim; else None."""
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


def bound(
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
        if (s := content_stem(w)) and s not in UNIT_STEMS
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
