"""What the checker's flags are and what to do with them: the flag families (`EXACT_FLAGS`,
`CLUE_FLAGS`, `SOURCE_FLAGS`), `flag_kind`, `describe` (one line a person can read), the
refusal sentences, the strict policy (`apply_strict`: a claim failing an exact check is
removed; no claim left makes the answer a refusal) and what a public reader is shown
(`withhold`: a claim failing an exact, instruction, precedence or number check, or one that
is not a statement, is withheld,
with a notice saying what and why; staff see every claim marked).

What it cannot do: `describe` knows the flags listed here; another string is returned as
it is. The refusal sentences are English and French only (another language gets English).
"""

from __future__ import annotations

import re
from dataclasses import replace

from tether.text import REFUSAL_SENTENCES
from tether.types import Answer, Claim, ClaimCheck, Flag
from tether.verify.options import CROSS_LANGUAGE_CUT

__all__ = [
    "CLUE_FLAGS",
    "EXACT_FLAGS",
    "REFUSAL_SENTENCE",
    "REFUSAL_SENTENCES",
    "REFUSAL_SENTENCE_FR",
    "SOURCE_FLAGS",
    "WITHHELD_FOR_PUBLIC",
    "apply_strict",
    "describe",
    "flag_kind",
    "public_answer",
    "withhold",
]

REFUSAL_SENTENCE = REFUSAL_SENTENCES["en"]  # the sentences are defined once, in tether.text
REFUSAL_SENTENCE_FR = REFUSAL_SENTENCES["fr"]


EXACT_FLAGS: frozenset[str] = frozenset(
    {"no_citation", "missing_id", "not_in_context", "not_allowed"}
)
CLUE_FLAGS: frozenset[str] = frozenset(
    {
        "number_not_found",
        "number_in_other_column",
        "name_not_found",
        "unsupported",
        "negation_mismatch",
        "not_entailed",
        "not_a_statement",
        "quantifier_mismatch",
        "condition_dropped",
        "period_mismatch",
        "opposite_word",
        "number_in_other_row",
        "number_elsewhere",
        "word_not_found",
    }
)
SOURCE_FLAGS: frozenset[str] = frozenset(
    {"instruction_in_claim", "instruction_in_source", "lower_precedence", "weaker_citation"}
)


def flag_kind(flag: str) -> str:
    """The name of a flag without its argument: "missing_id:abc" → "missing_id" (`flag.kind`
    for a `Flag`; this also reads a flag kept as a plain string, as recordings hold them)."""
    return flag.kind if isinstance(flag, Flag) else flag.split(":", 1)[0]


def apply_strict(
    answer: Answer, checks: list[ClaimCheck], *, language: str = "en"
) -> tuple[Answer, list[ClaimCheck]]:
    """Fail closed: a claim with an exact flag is removed (`removed=True`, flags kept).

    When a claim is removed, the answer text is rebuilt from the claims that remain (the old
    text may repeat what was removed). When no claim remains (or an answerable answer had no
    claim at all), the answer becomes a refusal in `language`."""
    return _drop(answer, checks, EXACT_FLAGS, "removed", language)


# What a public reader is not shown: a claim failing an exact check, resting on text addressed
# to AI assistants or on a source ranked below another on the same point, or with a number its
# passages do not hold (staff readers see these claims, marked with their flags).
WITHHELD_FOR_PUBLIC: frozenset[str] = EXACT_FLAGS | {
    "instruction_in_claim",
    "instruction_in_source",
    "lower_precedence",
    "number_not_found",
    "number_in_other_column",
    "number_in_other_row",
    "not_a_statement",
}
_WITHHELD_WHY: dict[str, dict[str, str]] = {
    "en": {
        "exact": "it cites a passage it may not cite",
        "instruction_in_claim": "it is worded as an instruction to an AI assistant",
        "instruction_in_source": "it rests on text addressed to AI assistants",
        "lower_precedence": "it rests on a source that a higher-ranked one overrides",
        "number": "it states a number its passages do not hold",
        "not_a_statement": "it is a question, heading or title, not a statement",
    },
    "fr": {
        "exact": "elle cite un passage qu'elle ne peut pas citer",
        "instruction_in_claim": "elle est rédigée comme une consigne à un assistant d'IA",
        "instruction_in_source": "elle repose sur un texte adressé aux assistants d'IA",
        "lower_precedence": "elle repose sur une source qu'une autre, de rang supérieur, remplace",
        "number": "elle donne un nombre absent de ses passages",
        "not_a_statement": "c'est une question, un titre ou un intertitre, pas un énoncé",
    },
}


def withhold(
    answer: Answer, checks: list[ClaimCheck], *, audience: str, language: str = "en"
) -> tuple[Answer, list[ClaimCheck], str]:
    """What a reader of `audience` is shown: for the public, each claim with a flag of
    `WITHHELD_FOR_PUBLIC` is withheld (`withheld=True`, flags kept; the answer text rebuilt from
    the claims that remain, a refusal in `language` when none remains), and a notice (in
    `language`, English or French) says how many were withheld and why; staff see every claim
    (marked by its flags) and no notice."""
    if audience == "staff":
        return answer, checks, ""
    shown, out = _drop(answer, checks, WITHHELD_FOR_PUBLIC, "withheld", language)
    shown = public_answer(shown, language)
    withheld = [ch for ch in out if ch.withheld]
    if not withheld:
        return shown, out, ""
    why = _WITHHELD_WHY.get(language, _WITHHELD_WHY["en"])
    reasons: list[str] = []
    for ch in withheld:
        for flag in ch.flags:
            kind = flag_kind(flag)
            key = (
                "exact" if kind in EXACT_FLAGS else "number" if kind.startswith("number_") else kind
            )
            if key in why and why[key] not in reasons:
                reasons.append(why[key])
    n = len(withheld)
    if language == "fr":
        head = f"{n} affirmation{'s' if n > 1 else ''} retenue{'s' if n > 1 else ''}"
        tail = "" if shown.answerable else " ; aucune affirmation vérifiée ne reste"
        return (
            shown,
            out,
            f"{head} (non affichée{'s' if n > 1 else ''}) : {'; '.join(reasons)}{tail}.",
        )
    head = f"{n} claim{'s' if n > 1 else ''} withheld"
    tail = "" if shown.answerable else "; no checked claim remains"
    return shown, out, f"{head}: {'; '.join(reasons)}{tail}."


_MARKER = re.compile(r"\[\d+(?:\s*[,;]\s*\d+)*\]")


def _letters(text: str) -> str:
    return "".join(ch for ch in _MARKER.sub("", text) if ch.isalnum())


def public_answer(answer: Answer, language: str = "en") -> Answer:
    """What a public reader may be shown of an answer: only the text of its claims (each
    checked), never the rest of the model's reply. The answer text is kept when it holds
    nothing but its claims (their words, [n] markers and punctuation), else rebuilt from the
    claims; an answer with no claim, or a refusal, is the standard refusal sentence in
    `language` (a model's own refusal text is not shown: it was never checked)."""
    refusal = REFUSAL_SENTENCES.get(language, REFUSAL_SENTENCE)
    if not answer.answerable or not answer.claims:
        if not answer.answerable and answer.answer == refusal and not answer.claims:
            return answer
        return Answer(False, refusal, (), answer.mode)
    claims = " ".join(c.text for c in answer.claims)
    if _letters(answer.answer) == _letters(claims):
        return answer
    return replace(answer, answer=claims)


def _drop(
    answer: Answer, checks: list[ClaimCheck], kinds: frozenset[str], mark: str, language: str
) -> tuple[Answer, list[ClaimCheck]]:
    """Mark (`mark`: removed or withheld) each claim with a flag of `kinds`; rebuild the answer
    from the claims left, a refusal in `language` when none is left."""
    out: list[ClaimCheck] = []
    kept: list[Claim] = []
    for check in checks:
        if any(flag_kind(f) in kinds for f in check.flags):
            out.append(
                replace(check, removed=True) if mark == "removed" else replace(check, withheld=True)
            )
        else:
            out.append(check)
            if not (check.removed or check.withheld):
                kept.append(check.claim)
    dropped = len(kept) < len(checks)
    if answer.answerable and not kept:
        refusal = REFUSAL_SENTENCES.get(language, REFUSAL_SENTENCE)
        return Answer(False, refusal, (), answer.mode), out
    if dropped:
        return replace(answer, answer=" ".join(c.text for c in kept), claims=tuple(kept)), out
    return answer, out


_DESCRIPTIONS: dict[str, str] = {
    "no_citation": "the claim cites no passage (exact check)",
    "missing_id": "{arg} is not in the index, or not a passage this audience may see: a made-up or mistyped ID (exact check)",
    "not_in_context": "{arg} exists but was not among the passages given to the model (exact check)",
    "not_allowed": "{arg} is not public and the audience is public (exact check)",
    "number_not_found": (
        "{arg} is in none of the cited passages, their headers, the question or its date"
        " (a clue, can be wrong: a value computed in a way the checker does not know)"
    ),
    "number_in_other_column": (
        "{arg} is in the cited table only under a column the claim does not speak of, while"
        " the claim speaks of another column (a clue, can be wrong: the claim may name the"
        " column in other words)"
    ),
    "name_not_found": (
        "the claim names {arg}, which the cited passages do not name (or name with another"
        " number or code) and the question does not name either"
        " (a clue, can be wrong: the name may be written differently in the passage)"
    ),
    "unsupported": (
        "only {arg} of the claim's words are found in the cited passages"
        " (a clue, can be wrong: a true paraphrase can share few words)"
    ),
    "negation_mismatch": (
        "the claim and its best evidence sentence differ in negation"
        ' (a clue, can be wrong: "cannot ... unless" and "can ... if" say the same)'
    ),
    "not_entailed": (
        "the entailment judge scored {arg}, below its threshold"
        " (a clue, can be wrong: judges make mistakes)"
    ),
    "not_a_statement": (
        "the claim is a question, a heading or a title, not a statement: it states nothing"
        " to check (a clue, can be wrong: a verbless short answer made of a heading's words)"
    ),
    "quantifier_mismatch": (
        "the claim says {arg}, a scope its evidence does not give (only, all, always, never,"
        " at least...; a clue, can be wrong: the scope may be said in other words)"
    ),
    "condition_dropped": (
        "the evidence holds only {arg}, a condition or exception that neither the claim nor"
        " the question states (a clue, can be wrong: the condition may not apply)"
    ),
    "period_mismatch": (
        "the claim gives a rate {arg}, which its evidence gives with another period or base"
        " (a clue, can be wrong: the rate may be restated, e.g. per week for 7 days)"
    ),
    "opposite_word": (
        "the claim says {arg} where its evidence says the opposite (a clue, can be wrong:"
        " both may be true of different things)"
    ),
    "number_in_other_row": (
        "{arg} is in the cited table, but not in the row or column the claim names"
        " (a clue, can be wrong: the claim may name them in other words)"
    ),
    "number_elsewhere": (
        "{arg} stands in the evidence beside another subject than the claim's (the judge"
        " rejected the claim; a clue, can be wrong: word positions are not grammar)"
    ),
    "word_not_found": (
        "the cited passages do not hold {arg} (the judge rejected the claim; a clue, can be"
        " wrong: a true paraphrase uses other words)"
    ),
    "instruction_in_claim": (
        "the claim itself is worded as text addressed to AI assistants (an instruction the"
        " model passed on); it is shown to staff, never obeyed, and withheld from the public"
    ),
    "instruction_in_source": (
        "passage {arg} (cited, or of a cited document, repeating the claim's unsupported words)"
        " contains text addressed to AI assistants; it is shown, never obeyed:"
        " check that the claim does not come from it (a clue about the source)"
    ),
    "lower_precedence": (
        "the claim rests only on {arg}, a source type ranked below another passage in the"
        " context on the same point (a clue, can be wrong: the overlap may be a coincidence)"
    ),
    "weaker_citation": (
        "another passage supports the claim more directly: {arg}"
        " (a clue, can be wrong: word overlap is not meaning)"
    ),
}


def describe(flag: str) -> str:
    """A one-line human explanation of a flag ("ok" for none)."""
    if not flag or flag == "ok":
        return "no problem found"
    kind, _, arg = flag.partition(":")
    template = _DESCRIPTIONS.get(kind)
    if template is None:
        return flag
    if kind == "unsupported" and arg.startswith("cos="):
        return (
            f"the claim's similarity to its best passage sentence in another language is"
            f" {arg[4:]}, below {CROSS_LANGUAGE_CUT}"
            " (a clue, can be wrong: a multilingual embedding is a rough signal)"
        )
    return template.format(arg=arg or "?")
