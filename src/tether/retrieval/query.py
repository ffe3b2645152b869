"""What a query looks like, for fusion: identifiers and quoted phrases lean lexical, plain
questions lean dense.

`query_shape(query)` is a small deterministic classifier (regular expressions, no model):
- identifiers: a word with an inner underscore (`work_mem`), a dotted name (`json.dumps`,
  `os.path`), a call (`lru_cache()`), a leading underscore (`_replace`), inner capitals
  (`NamedTemporaryFile`, `JSONDecodeError`), a command-line option (`--clean`), a code
  (`PW-2200-07`, through `tether.text.codes`), a word of three or more capitals (`VACUUM
  FULL`, `ON CONFLICT`) unless a long query is all capitals (shouting, not SQL);
- quoted phrases ("...", `...`): the user wants those words;
- a question (a question word first, or a question mark) of five or more words with no
  identifier is `natural`: paraphrase is where the embedder helps most;
- a short query (up to four words) with neither is `keyword`;
- a query in another language than most of the collection (when the caller says which),
  without identifiers, is `cross-language`: shared words then mostly point at passages in
  the query's language, not at the answer.
Its `lexical_factor` multiplies the collection's BM25 weight in the fusion (`Retriever`):
x2 identifier or quoted, x0.3 cross-language, x1 otherwise (keyword, natural, mixed: on the
development corpora a factor for those moved nothing, bench/results/real_corpora.md). The
factors were set on four collections (the bundled set, Larkfield, the Python and PostgreSQL
manuals) and checked on the SQLite and Git manuals, held out (bench/results/real_corpora.md:
there plain reciprocal rank fusion made the better hybrid).

What it cannot do: it reads surface form only; a paraphrased question that happens to name an
identifier counts as `mixed`, a product name in capitals counts as an identifier, and it knows
nothing of the collection (the calibration in `tether.retrieval.calibrate` does that part).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tether.text import codes, detect_language

_QUOTED = re.compile(r"\"[^\"]{2,}\"|“[^”]{2,}”|`[^`]{2,}`")
_TOKEN = re.compile(r"(?<![\w.-])(--?)?([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(\(\)?)?")
_CAPS_WORD = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")
_QUESTION_WORDS = frozenset(
    "how what why which when where who can could does do did is are should would will "
    "comment quel quelle quels quelles pourquoi quand où est".split()
)
_WORD = re.compile(r"[\w'-]+")

IDENTIFIER_FACTOR = 2.0
CROSS_LANGUAGE_FACTOR = 0.3
PLAIN_FACTOR = 1.0


@dataclass(frozen=True)
class QueryShape:
    """A query's kind (identifier, keyword, natural, mixed), the identifiers and quoted
    phrases found, and how far it moves the BM25 share of the fusion."""

    kind: str
    identifiers: tuple[str, ...]
    quoted: tuple[str, ...]
    lexical_factor: float


def identifiers(query: str) -> list[str]:
    """The identifier-like tokens of a query, in order (see the module docstring)."""
    found: dict[str, None] = {}
    for m in _TOKEN.finditer(query):
        option, word, call = m.group(1), m.group(2), m.group(3)
        if (
            option
            or call
            or "." in word
            or "_" in word.strip("_")
            or word.startswith("_")
            or _mixed_case(word)
        ):
            found.setdefault((option or "") + word, None)
    for code in codes(query):
        found.setdefault(code, None)
    words = _WORD.findall(query)
    if not query.isupper() or len(words) <= 4:
        for word in _CAPS_WORD.findall(query):
            found.setdefault(word, None)
    return list(found)


def _mixed_case(word: str) -> bool:
    """Inner capitals with lower case around them: ExitStack, JSONDecodeError, camelCase."""
    return any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)


@lru_cache(maxsize=4096)
def query_shape(query: str, collection_language: str | None = None) -> QueryShape:
    """Classify a query (module docstring): deterministic, tens of microseconds, remembered
    for the last 4,096 (query, language) pairs (a rerank search asks twice); with
    `collection_language` (the language most of the collection is written in), a question
    in another language without identifiers is `cross-language`."""
    quoted = tuple(m.group(0)[1:-1] for m in _QUOTED.finditer(query))
    found = tuple(identifiers(_QUOTED.sub(" ", query)))
    words = _WORD.findall(query)
    first = words[0].lower() if words else ""
    question = first in _QUESTION_WORDS or query.rstrip().endswith("?")
    if quoted or (found and (not question or len(words) <= 4)):
        return QueryShape("identifier", found, quoted, IDENTIFIER_FACTOR)
    if collection_language and detect_language(query) != collection_language:
        return QueryShape("cross-language", found, quoted, CROSS_LANGUAGE_FACTOR)
    if found:
        return QueryShape("mixed", found, quoted, PLAIN_FACTOR)
    if question and len(words) >= 5:
        return QueryShape("natural", found, quoted, PLAIN_FACTOR)
    if len(words) <= 4:
        return QueryShape("keyword", found, quoted, PLAIN_FACTOR)
    return QueryShape("natural", found, quoted, PLAIN_FACTOR)
