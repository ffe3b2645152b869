"""Source standing: which kind of document wins when two passages disagree.

The order is the bundled governance document's (policy > procedure > help > supplier); types
outside it rank through their alias (a notice is a policy, a FAQ is help), others have no rank
and are never weighed against another passage. Retrieval's standing rules and the verifier's
`lower_precedence` share this one order.

What it cannot do: it knows document types, not content; two passages of one type never
outrank each other here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

# Source precedence: which document type wins when two disagree (the bundled governance
# document's order). Types outside the order rank as their alias; others have no rank.
DEFAULT_PRECEDENCE: tuple[str, ...] = ("policy", "procedure", "help", "supplier")
TYPE_ALIASES: dict[str, str] = {
    "governance": "policy",
    "notice": "policy",
    "guide": "help",
    "faq": "help",
}




def source_rank(doc_type: str, precedence: Sequence[str] = DEFAULT_PRECEDENCE) -> int | None:
    """The place of a document type in `precedence` (0 = wins), through `TYPE_ALIASES`; None
    for a type outside the order (never used against another passage)."""
    return _rank_in(doc_type, tuple(precedence))


@functools.lru_cache(maxsize=1024)
def _rank_in(doc_type: str, precedence: tuple[str, ...]) -> int | None:
    order = [p.lower() for p in precedence]
    kind = doc_type.lower()
    if kind in order:
        return order.index(kind)
    alias = TYPE_ALIASES.get(kind)
    return order.index(alias) if alias in order else None
