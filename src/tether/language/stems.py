"""The verifier's view of words: content-word stems of a claim or a passage sentence.

A content word is a folded word token of two or more characters that is not an EN/FR stop
word, a month name, a number word or an answer particle (yes, non...), and holds no digit
(numbers, dates and codes are compared as numbers by `verify.quantities`). Its stem is
`tether.text.stem`. Used by every check family of `tether.verify` and by the contradiction
finder (`tether.health`); `tether.verify.stems` re-exports it.

What it cannot do: English and French only; stems are crude (see `tether.text.stem`), so two
words with one stem count as one word and an irregular form ("went", "go") as another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from tether.language.number_words import words_for
from tether.text import STOP_WORDS, fold_fast, stem

__all__ = ["DIGIT", "SKIP_WORDS", "WORD_RE", "content_stem", "stem_set"]

WORD_RE = re.compile(r"\w+")
DIGIT = re.compile(r"\d")

_DATE_WORDS = frozenset(
    """
    january february march april may june july august september october november december jan
    feb mar apr jun jul aug sep sept oct nov dec janvier fevrier mars avril mai juin juillet
    aout septembre octobre novembre decembre er
    """.split()
)


# Answer particles and number words carry no content of their own (numbers are compared as
# numbers; a bare "Yes." or "Non." is not checked for words).
_PARTICLES = frozenset(("yes", "no", "oui", "non", "si", *words_for("stems")))
SKIP_WORDS = STOP_WORDS | _DATE_WORDS | _PARTICLES


def stem_set(
    text: str, folded: str | None = None, tokens: Sequence[str] | None = None
) -> frozenset[str]:
    """Content-word stems; digits and month names are left to the number check. `folded`
    (the folded text) or `tokens` (its word tokens) may be given when the caller has them."""
    if tokens is None:
        tokens = WORD_RE.findall(fold_fast(text) if folded is None else folded)
    return frozenset(s for w in tokens if (s := content_stem(w)))


@lru_cache(maxsize=65536)
def content_stem(word: str) -> str:
    """The stem of a content word; "" for a stop word, a single character or a word with a
    digit (one cached call per token instead of four tests; a memo of a pure function)."""
    if len(word) < 2 or word in SKIP_WORDS or not word[0].isalnum() or DIGIT.search(word):
        return ""
    return stem(word)
