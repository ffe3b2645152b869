"""Answers written with `[n]` markers: `split_inline` finds the sentences and the markers
that belong to each, `check_inline` turns them into claims and checks them.

A marker inside a sentence belongs to it; a marker between two sentences closes the one
before it, unless it opens a line or the answer opens with a marker (then markers open the
sentence after them). Sentences split inside a quotation are joined again. A sentence
without a valid marker counts (`sentences_without_marker`), except a refusal sentence;
markers outside 1..n are listed (`invalid_markers`).

What it cannot do: sentences are split by rule; a marker range is read only up to 50
numbers ("[1-3]" is 1, 2, 3); a refusal sentence is recognised only as written in
`REFUSAL_SENTENCES` (any case, with or without its final period).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.protocols import SearchableStore
from tether.text import is_refusal, sentences
from tether.types import Answer, Claim, ClaimCheck, Context
from tether.verify.check import check_answer
from tether.verify.options import VerifierOptions
from tether.verify.passages import VerifierCache

__all__ = ["InlineReport", "check_inline", "is_refusal", "split_inline"]


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


def check_inline(
    text: str,
    citations: Sequence[str],
    store: SearchableStore | None,
    context: Context,
    question: str,
    options: VerifierOptions | None = None,
    *,
    cache: VerifierCache | None = None,
    **fields: Any,
) -> InlineReport:
    """Check an answer written with `[n]` markers; marker n cites `citations[n-1]`. The
    options are `check_answer`'s (a `VerifierOptions`, or its fields as keywords)."""
    sentences_out: list[str] = []
    spans: list[tuple[int, int]] = []
    claims: list[Claim] = []
    invalid: list[int] = []
    unmarked = 0
    for start, end, numbers in split_inline(text):
        sentence = _clean_sentence(text[start:end])
        if not sentence:
            continue
        sentences_out.append(sentence)
        spans.append((start, end))
        valid = [n for n in numbers if 1 <= n <= len(citations)]
        invalid += [n for n in numbers if not 1 <= n <= len(citations)]
        if is_refusal(sentence):
            continue
        if not valid:
            unmarked += 1
        claims.append(Claim(sentence, tuple(dict.fromkeys(citations[n - 1] for n in valid))))
    answer = Answer(bool(claims), text, tuple(claims), "inline")
    checks = check_answer(answer, store, context, question, options, cache=cache, **fields)
    return InlineReport(
        sentences=tuple(sentences_out),
        spans=tuple(spans),
        sentences_without_marker=unmarked,
        invalid_markers=tuple(dict.fromkeys(invalid)),
        checks=tuple(checks),
    )
