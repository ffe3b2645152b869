"""The rules a sentence states, as the contradiction finder compares them: each main clause's
rule (`main_rules`: a modal's polarity and verb, or a plain statement's possible verbs), the
sentence's rule with a modal (`rule_modal`), whether its main clause holds a negation
(`negative_main`) and the words of the clause a negation is said of (`negated_clause`).
Read by `contradiction_units` on the folded sentence.

What it cannot do: English modals only; a negation said of a noun phrase after a comma
("..., not the day you buy them") is a contrast, not a negated main clause; "cannot do this"
and a clause ending in a colon (a list follows) state no rule of their own; "No dogs are
allowed ..." is a negated rule; a clause is cut at punctuation and conjunctions, not parsed.
"""

from __future__ import annotations

import itertools
import re

from tether.health.contradiction_lexicon import CLAUSE_CUT, NOISE
from tether.language.cues import main_clause, polarity
from tether.language.negation import negation_scope
from tether.language.stems import WORD_RE, content_stem, stem_set

__all__ = ["main_rules", "negated_clause", "negative_main", "rule_modal"]

_SUBORDINATE = re.compile(
    r"\b(?:when|whenever|where|wherever|who|whom|whose|which|whatever|whichever|whoever"
    r"|because|since|once|until|unless|while|if|after|before)\b.*$"
)
_CONTRACTIONS = {
    "can't": "cannot",
    "don't": "do not",
    "doesn't": "does not",
    "won't": "will not",
    "mustn't": "must not",
    "needn't": "need not",
    "isn't": "is not",
    "aren't": "are not",
}
_CONTRACTION = re.compile("|".join(re.escape(c) for c in _CONTRACTIONS))
_NEG_MODAL = re.compile(
    r"\b(?:cannot|can not|may not|must not|need not|(?:do|does|did) not (?:have|need) to"
    r"|(?:is|are) not (?:allowed|permitted|required)|prohibited|forbidden)\b"
    r"|^no [a-z]+(?: [a-z]+)? (?:is|are) (?:allowed|permitted)\b"
    r"|^(?:please )?(?:do not|never)\b"
)
_POS_MODAL = re.compile(
    r"\b(?:can|may|must|(?:has|have|need|needs) to|(?:is|are) (?:allowed|permitted|required))\b"
)
_SUBJECT_PRONOUNS = frozenset("we you they he she it i who nous vous ils elles il elle on".split())
_NEGATION_WORD = re.compile(r"\b(?:no|not|never|none|nothing|nobody|neither|nor|cannot)\b")
_ANSWER_NO = re.compile(r"no[.,!]\s")
_LISTED = re.compile(r",\s+(including|such as|especially|even)\b")
# ", not the day you buy them": a contrast said of a noun phrase, not a negated rule
_CONTRAST = re.compile(
    r"^(?:and |but )?not (?:(?:on|in|at|for|by|from|to|with|just|only) )?"
    r"(?:the|a|an|your|our|its|their|this|that|these|those|any)\b"
)
# "we cannot do this": the rule is said of what came before (no content of its own)
_ANAPHORIC = re.compile(r"\s*do (?:this|that|so|it)\b")


def negated_clause(plain: str) -> frozenset[str]:
    """The content stems (`NOISE` left out) of the first clause of a folded sentence that
    holds a negation, cut at ";", ":", ", ", "and", "or", "but": what the negation is said
    of ("no late fees on items borrowed with an Access card", where the negation's own
    few words are "late fees on items")."""
    for part in CLAUSE_CUT.split(plain):
        if negation_scope(part)[0]:
            return stem_set(part) - NOISE
    return frozenset()


def negative_main(plain: str) -> bool:
    """True when the main clause of a folded sentence holds a negation: its condition ("if
    ..."), and the clauses a subordinating word opens ("when a user cannot reset ...",
    "whatever data you don't use"), are left out, each up to its clause's end."""
    kept = [
        _SUBORDINATE.sub("", part)
        for part in re.split(r"[,;:]\s", plain)
        if not _CONTRAST.match(part)
    ]
    return polarity(main_clause(" ".join(WORD_RE.findall(" , ".join(kept))))) > 0


def _main_parts(plain: str) -> list[str]:
    """The clauses of a folded sentence without what a subordinating word opens."""
    text = _CONTRACTION.sub(lambda m: _CONTRACTIONS[m.group(0)], plain.replace("’", "'"))
    text = _LISTED.sub(r" \1", text)  # "every route, including the X50": one clause
    return [p for part in re.split(r"[,;:]\s", text) if (p := _SUBORDINATE.sub("", part).strip())]


def _stated_verbs(part: str) -> str:
    """The stems (space-separated) of the words of a plain clause that follow a subject, so
    may be its verb: after a pronoun ("we refund") or a content word that is no adverb ("the
    library refunds"); none at the clause's start (an instruction: "Show the prefix",
    "Update the submodules"), after "please", an -ly adverb ("Initially ignore ...") or
    another function word ("... and fetching missing commits")."""
    out = []
    for before, word in itertools.pairwise(WORD_RE.findall(part)):
        subject = before in _SUBJECT_PRONOUNS or (
            bool(content_stem(before)) and not before.endswith("ly") and before != "please"
        )
        if subject and (stem := content_stem(word)):
            out.append(stem)
    return " ".join(out)


def rule_modal(
    rules: tuple[tuple[int, str, frozenset[str]], ...],
) -> tuple[int, str, frozenset[str]]:
    """(polarity, verb stem) of the rule a sentence's main clauses state with a modal, its
    negative one first, of its clauses' `rules`: -1 for "cannot", "may not", "must not",
    "does not have to", "not permitted", "do not" (an instruction), +1 for "can", "may",
    "must", "has to", "is allowed to"; (0, "") when it states no rule so; with the stems of
    that clause that name its content."""
    modal = [r for r in rules if r[0]]
    return min(modal, key=lambda r: r[0]) if modal else (0, "", frozenset())


def main_rules(plain: str) -> tuple[tuple[int, str, frozenset[str]], ...]:
    """The rule each main clause of a folded sentence states, in order: (polarity, verb
    stem, the clause's content stems), the polarity as in `rule_modal`, or 0 for a plain
    statement without a modal or a negation ("we refund the replacement cost"; its "verb"
    the words that may be its verb, `_stated_verbs`), so that a sentence
    that says two things ("must be booked in advance; they cannot be used on a walk-in
    basis") is read clause by clause. A FAQ's answer that opens with "No." denies what was
    asked (a question not compared): unless it says itself what may not be done, it states
    no rule that can be compared ("No. Bicycles must be returned to a store" answers "Can I
    post a bicycle back?")."""
    denied = _ANSWER_NO.match(plain) is not None
    out: list[tuple[int, str, frozenset[str]]] = []
    if plain.rstrip().endswith(":"):
        return ()  # "Do not issue a penalty fare to:": said of the list that follows
    for part in _main_parts(plain):
        stems = stem_set(part) - NOISE
        for polarity_, pattern in ((-1, _NEG_MODAL), (1, _POS_MODAL)):
            m = pattern.search(part)
            if m is None:
                continue
            if _ANAPHORIC.match(part, m.end()):
                break  # "cannot do this": what it is said of is elsewhere
            after = [content_stem(w) for w in WORD_RE.findall(part[m.end() :])[:4]]
            verb = next((w for w in after if w and w not in ("be", "been")), "")
            if not (denied and polarity_ > 0):
                out.append((polarity_, verb, stems))
            break
        else:
            if stems and not _NEGATION_WORD.search(part):
                out.append((0, _stated_verbs(part), stems))
    return tuple(out)
