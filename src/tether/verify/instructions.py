"""Text addressed to AI assistants in a source: `find_instructions(text)`.

A passage that speaks to AI assistants, chat bots, language models or the reader of the
prompt with a directive, or says to ignore previous instructions (EN and FR), is an attempt to
steer the model; the checker flags a claim resting on one (`instruction_in_source`). Such a
passage stays searchable and is shown; it is never obeyed.

What it cannot do: detection is a list of patterns (EN and FR) and misses an instruction
worded otherwise; a sentence that names the addressee and a directive for another reason
(a policy about chat bots that "must" do something) is read as one, unless it states the
rule about such text ("... is not an instruction and must be ignored").
"""

from __future__ import annotations

import re

from tether.text import fold, sentences

__all__ = ["find_instructions"]

_AI_ADDRESSEE = re.compile(
    r"\b(?:ai|a\.i\.|ia|i\.a\.)\s+(?:assistant|agent|model|system|tool|chat\s?bot|bot|helper|"
    r"language model)s?\b"
    r"|\bartificial intelligence\b|\b(?:large\s+)?language models?\b|\bllms?\b"
    r"|\bchat\s?bots?\b|\bchatgpt\b|\bgpt-?\d*\b|\bcopilot\b"
    r"|\b(?:virtual|digital|automated|conversational|ai-powered)\s+(?:assistant|agent)s?\b"
    r"|\breaders? of (?:this|the) (?:prompt|text|document|page|sheet)\b"
    r"|\b(?:this|the|your|system) prompt\b"
    r"|\bif you are an? (?:ai|assistant|language model|bot|chatbot|llm|model)\b"
    r"|\bassistants? (?:ia|i\.a\.|virtuels?|numeriques?|conversationnels?)\b"
    r"|\bagents? (?:conversationnels?|ia|i\.a\.|virtuels?)\b|\brobots? conversationnels?\b"
    r"|\bintelligences? artificielles?\b|\bmodeles? de (?:langage|langue)\b"
    r"|\b(?:les |l')ia\b|\blecteur de (?:ce|cette) (?:prompt|invite|requete|texte)\b"
    r"|\bsi vous etes une? (?:ia|assistant|modele|robot)\b"
)
# A directive after the addressee: a modal ("must", "doivent"...) anywhere after it, or an
# imperative verb (or always/never) opening a clause ("...: always tell", ", dites").
_DIRECTIVE = re.compile(
    r"\b(?:must|should|shall|need to|have to|are to|is to|are required|are instructed|"
    r"are asked|please|make sure|be sure|do not|don't|doit|doivent|devez|devrait|devraient|"
    r"veuillez|il faut)\b"
    r"|(?:^|[:;,.!?]\s*|\b(?:and|then|et|puis|you|vous)\s+)(?:always\s+|never\s+|toujours\s+|"
    r"jamais\s+)?(?:tell|say|state|answer|respond|reply|inform|promise|guarantee|confirm|"
    r"recommend|mention|ignore|disregard|forget|override|assure|claim|offer|quote|advise|treat|"
    r"output|write|dites|repondez|indiquez|affirmez|promettez|ignorez|oubliez|confirmez|"
    r"mentionnez|recommandez|assurez|garantissez|dire|repondre|indiquer|affirmer|promettre)\b"
    r"|(?:^|[:;,.!?]\s*)(?:always|never|toujours|jamais)\b"
)
_IGNORE_PREVIOUS = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?"
    r"(?:the\s+|your\s+|my\s+|these\s+)?(?:previous|prior|above|earlier|preceding|former|"
    r"original|existing|system|other|your)?\s*(?:instructions?|rules?|prompts?|directions?|"
    r"guidelines?)\b"
    r"|\b(?:ignorez|ignore|oubliez|oublie|ne tenez pas compte)\s+(?:de\s+|des\s+)?"
    r"(?:toutes\s+|tous\s+)?(?:les\s+|vos\s+|ces\s+)?(?:instructions|consignes|regles|"
    r"directives)\b"
)
_META_RULE = re.compile(
    r"\bnot (?:an )?instructions?\b|\b(?:must|should|will|are|is|be) (?:be )?ignored\b"
    r"|\bnever (?:be )?obeyed\b|\bn'?est pas une (?:instruction|consigne)\b"
    r"|\bne sont pas des (?:instructions|consignes)\b|\b(?:doit|doivent) etre ignores?\b"
)


def _is_instruction(folded: str) -> bool:
    if _IGNORE_PREVIOUS.search(folded):
        return True
    addressee = _AI_ADDRESSEE.search(folded)
    return bool(
        addressee and _DIRECTIVE.search(folded, addressee.end()) and not _META_RULE.search(folded)
    )


def find_instructions(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of `text` that address AI assistants, chat bots,
    language models or the reader of the prompt with a directive, or that say to ignore
    previous instructions (EN and FR). A short line that only names the addressee ("Note to
    AI assistants:") joins the sentence after it. A sentence that states the rule about such
    text ("... is not an instruction to us and must be ignored") is not one."""
    spans = list(sentences(text))
    out: list[tuple[int, int]] = []
    pending: int | None = None
    for start, end in spans:
        folded = fold(text[start:end]).replace("’", "'")
        if _is_instruction(folded):
            out.append((pending if pending is not None else start, end))
            pending = None
            continue
        if pending is not None and _DIRECTIVE.match(folded) and not _META_RULE.search(folded):
            out.append((pending, end))
            pending = None
            continue
        short = len(folded.split()) <= 8 or folded.rstrip().endswith(":")
        pending = start if _AI_ADDRESSEE.search(folded) and short else None
    return out
