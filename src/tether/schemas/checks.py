"""Wire models of a claim's check: the `WireClaim` checked (also what a caller sends to be
checked), the `WireEvidence` and `WireDetail`s found, and the `Check` of one claim, whole or as
a public reader gets a withheld one (`Check.withheld_from_public`).

What it cannot do: it checks nothing (`tether.verify` does); it converts a `ClaimCheck`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field

from tether.schemas.base import Wire, fields_of

if TYPE_CHECKING:
    from tether import types


class WireClaim(Wire):
    model_config = ConfigDict(title="Claim")
    __qualname__ = "Claim"  # the name clients see (see `Wire`)

    text: str
    chunk_ids: list[str]


class WireEvidence(Wire):
    """A sentence of a cited passage that supports a claim (offsets into the document text)."""

    model_config = ConfigDict(title="Evidence")
    __qualname__ = "Evidence"  # the name clients see (see `Wire`)

    chunk_id: str
    text: str
    start: int
    end: int
    score: float


class WireDetail(Wire):
    """A detail of a flagged claim that its evidence does not match: its kind (number, cell,
    quantifier, condition, period, opposite, word, not_a_statement), the claim's words, and
    the evidence text it conflicts with."""

    model_config = ConfigDict(title="Detail")
    __qualname__ = "Detail"  # the name clients see (see `Wire`)

    kind: str
    claim: str
    evidence: str
    chunk_id: str


class Check(Wire):
    """One claim's check: its flags (``kind`` or ``kind:arg``; none means ok), the evidence
    found, the judge's entailment score, whether --strict removed it and whether it was
    withheld from a public reader (what is shown: the claims with `withheld` false), and,
    for a flagged claim, the details its evidence does not match."""

    claim: str
    chunk_ids: list[str]
    ok: bool
    flags: list[str]
    entailment: float | None
    removed: bool
    withheld: bool = False
    evidence: list[WireEvidence]
    details: list[WireDetail] = Field([])

    @classmethod
    def from_check(cls, ch: types.ClaimCheck) -> Check:
        return cls(
            claim=ch.claim.text,
            chunk_ids=list(ch.claim.chunk_ids),
            ok=ch.ok,
            flags=[str(f) for f in ch.flags],
            entailment=ch.entailment,
            removed=ch.removed,
            withheld=ch.withheld,
            evidence=[WireEvidence(**fields_of(e, WireEvidence)) for e in ch.evidence],
            details=[WireDetail(**fields_of(d, WireDetail)) for d in ch.details],
        )

    @classmethod
    def withheld_from_public(cls, ch: types.ClaimCheck) -> Check:
        """A check withheld from a public reader as that reader gets it: that a claim was
        withheld and the kinds of its flags (why), never what it said: no claim text, no
        citations, evidence, details or entailment, no flag arguments (a number, a word or an
        ID out of the claim)."""
        kinds = list(dict.fromkeys(_flag_kind(f) for f in ch.flags))
        return cls(
            claim="",
            chunk_ids=[],
            ok=ch.ok,
            flags=kinds,
            entailment=None,
            removed=ch.removed,
            withheld=True,
            evidence=[],
            details=[],
        )


def _flag_kind(flag: str) -> str:
    """`flag`'s kind, without its argument (`number_not_found:45` → `number_not_found`)."""
    return flag.partition(":")[0]
