"""The two steps after the reranker in `tether.retrieval.retriever` (rerank method): the cap on
chunks of one document in the top places (`cap_per_document`), and what a standing rule speaks
about: the lower sources in the top places (`lower_sources`: supplier content, or a help-level
passage on the same point as one that outranks it), the words naming a source type
(`type_words`), and how often a rule's text names them (`mentions`).

What it cannot do: it reads no store and places nothing; the retriever picks the rule and puts
it in place. Source standing comes from `tether.standing` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from tether.standing import TYPE_ALIASES, source_rank
from tether.text import fold
from tether.types import Hit


def cap_per_document(hits: list[Hit], cap: int, window: int) -> list[Hit]:
    """At most `cap` chunks of one document (doc_id) in the first `window` places; the
    chunks over the cap move just past the window, in their order."""
    head: list[Hit] = []
    over: list[Hit] = []
    count: dict[str, int] = {}
    rest = iter(hits)
    for h in rest:
        if count.get(h.chunk.doc_id, 0) >= cap:
            over.append(h)
            continue
        count[h.chunk.doc_id] = count.get(h.chunk.doc_id, 0) + 1
        head.append(h)
        if len(head) == window:
            break
    return [*head, *over, *rest]


def lower_sources(
    window: Sequence[Hit], vector: Callable[[str], np.ndarray | None], same_point: float
) -> set[str]:
    """Doc types in `window` that a governance rule speaks about: supplier content (always),
    and a help-level source on the same point as a passage that outranks it."""
    help_rank = source_rank("help")
    supplier_rank = source_rank("supplier")
    ranks = [source_rank(h.chunk.meta.doc_type) for h in window]
    lower: set[str] = set()
    for h, r in zip(window, ranks, strict=True):
        if r is not None and supplier_rank is not None and r >= supplier_rank:
            lower.add(h.chunk.meta.doc_type.lower())
    if help_rank is None:
        return lower
    for i, (a, ra) in enumerate(zip(window, ranks, strict=True)):
        for b, rb in zip(window[i + 1 :], ranks[i + 1 :], strict=True):
            if ra is None or rb is None or ra == rb or max(ra, rb) < help_rank:
                continue
            va, vb = vector(a.chunk.chunk_id), vector(b.chunk.chunk_id)
            if va is None or vb is None or float(va @ vb) < same_point:
                continue
            lower.add((a if ra > rb else b).chunk.meta.doc_type.lower())
    return lower


def type_words(doc_type: str) -> list[str]:
    """The words a governance text uses for a source type: the type and its aliases."""
    return [doc_type, *(alias for alias, target in TYPE_ALIASES.items() if target == doc_type)]


def mentions(text: str, words: Sequence[str]) -> int:
    """How often the folded `text` names one of `words` (each at a word's start)."""
    return sum(len(re.findall(rf"\b{re.escape(fold(w))}", text)) for w in words)
