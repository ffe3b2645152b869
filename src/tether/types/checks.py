"""Engine data types of a claim's check: the `Claim` (a statement and the chunk IDs it
cites), the `Evidence` found for it, the `Detail`s its evidence does not match, the `Flag`s a
check raises, and the `ClaimCheck` that holds them.

Frozen data only. What it cannot do: it checks nothing; `tether.verify` fills these in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One statement of an answer and the chunk IDs it cites."""

    text: str
    chunk_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """The sentence(s) of a cited passage that best support a claim."""

    chunk_id: str
    text: str
    start: int  # character offsets into the parsed document's text
    end: int
    score: float = 0.0


@dataclass(frozen=True)
class Detail:
    """One detail of a claim that its evidence does not match (`tether.verify.align`): its
    kind (number, quantifier, condition, negation, period, word, not_a_statement), the
    claim's words, and the evidence text it conflicts with."""

    kind: str
    claim: str
    evidence: str
    chunk_id: str = ""


class Flag(str):
    """One finding of a check: a `kind` (``not_allowed``, ``number_missing``) and an optional
    `arg` (the number, the chunk ID). It is a `str` whose form is ``kind`` or ``kind:arg``, so
    JSON, recordings and comparisons with plain strings stay what they were; code reads
    `.kind`/`.arg` instead of splitting the string again."""

    __slots__ = ()

    def __new__(cls, kind: str, arg: object | None = None) -> Flag:
        if not kind or ":" in kind:
            raise ValueError(f"a flag kind is one word without ':' (got {kind!r})")
        return super().__new__(cls, kind if arg is None else f"{kind}:{arg}")

    @classmethod
    def parse(cls, text: str) -> Flag:
        """The flag written as `text` (``kind`` or ``kind:arg``)."""
        kind, sep, arg = text.partition(":")
        return cls(kind, arg if sep else None)

    @property
    def kind(self) -> str:
        """What the check found (``number_missing``, ``not_allowed``, ...)."""
        return self.partition(":")[0]

    @property
    def arg(self) -> str | None:
        """What it found it about (a number, a chunk ID), or None."""
        _, sep, arg = self.partition(":")
        return arg if sep else None


@dataclass(frozen=True)
class ClaimCheck:
    """The result of checking one claim: flags (empty means ok) and the evidence found."""

    claim: Claim
    flags: tuple[Flag, ...] = ()  # e.g. Flag("missing_id", "abc"), shown as "missing_id:abc"
    evidence: tuple[Evidence, ...] = ()
    entailment: float | None = None
    removed: bool = False  # --strict removed this claim
    withheld: bool = False  # not shown to the public reader (`tether.verify.flags.withhold`)
    details: tuple[Detail, ...] = ()  # what its evidence does not match (`verify.align`)

    @property
    def ok(self) -> bool:
        """True when no check flagged the claim."""
        return not self.flags
