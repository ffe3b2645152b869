"""What a question asks for, and whether a sentence gives it (English and French).

`asks(question)` names the expected answer type of a question: `quantity` (how many, how
much, how long, a price, a fee, a duration: combien, quel délai), `time` (when, what time,
which day: quand, à quelle heure), `yes_no` (can I, is there: puis-je, est-ce que), or `other`
(what, which, who, where, how to). `gives(kind, sentence)` tells whether a sentence holds an
answer of that type: a number, a number word, "a week", "free" for a quantity; a number, a
weekday, a month, noon for a time; anything for the rest.

The extractive answerer (`tether.providers.extractive`) and the answerability judge
(`tether.answering.answerable`) share these cues, so "what the question asks" means one thing.

What it cannot do: it reads cue words, not grammar: "What is the deposit?" asks for a
quantity only because "deposit" is on its list of amount words, and a question phrased
outside these patterns is `other`; a person, a place or a procedure is not recognised as such
(any sentence may give them). English and French only.
"""

from __future__ import annotations

import re
from typing import Literal

from tether.language.number_words import LOOSE_COUNTS, words_for
from tether.text import fold

AskKind = Literal["money", "duration", "percent", "measure", "count", "time", "yes_no", "other"]
QUANTITIES: tuple[AskKind, ...] = ("money", "duration", "percent", "measure", "count")

# Read on the folded (lower-case, accents removed) question, first match wins (in `asks`).
_AMOUNT_WORDS = (
    r"(?:price|prices|fee|fees|cost|costs|charge|charges|deposit|fine|fines|rate|fare|fares|"
    r"surcharge|refund amount|penalty)"
)
_FR_AMOUNT_WORDS = r"(?:prix|frais|cout|tarif|tarifs|montant|amende|caution|depot|penalite)"
ASKS_MONEY = re.compile(
    r"\bhow much (?:does|do|did|will|would|is|are|was|will it|money|to)\b(?!.*\b(?:notice|time|"
    r"weight|space|room)\b)|\bhow much\b.*\b(?:cost|costs|charge|charged|pay|paid|owe|spend)\b|"
    rf"\b(?:what|which)\b.*\b{_AMOUNT_WORDS}\b|\bcombien (?:coute|coutent|payer|paie|faut-il "
    rf"payer|dois-je payer|ca coute)\b|\b{_FR_AMOUNT_WORDS}\b"
)
ASKS_DURATION = re.compile(
    r"\bhow long\b|\bhow (?:many|much) (?:days?|weeks?|months?|years?|hours?|minutes?|seconds?|"
    r"business days?|notice|time)\b|\bwithin how\b|\bhow (?:soon|often|far in advance|late|"
    r"early)\b|\b(?:what|which) (?:is|are) the (?:\w+ )?(?:period|duration|deadline|notice|"
    r"delay|loan period|grace period|waiting time|turnaround)\b|\bcombien de (?:temps|jours|"
    r"semaines|mois|heures|minutes|annees|ans)\b|\b(?:delai|duree|preavis|periode)\b|"
    r"\bsous combien\b|\ba quelle frequence\b"
)
ASKS_PERCENT = re.compile(
    r"\b(?:what|which) (?:percentage|percent|share|discount|rebate)\b|\bhow much (?:of a )?"
    r"discount\b|\bpourcentage\b|\b(?:quel(?:le)?s?|combien de) (?:remise|rabais|reduction)\b"
)
ASKS_MEASURE = re.compile(
    r"\bhow (?:heavy|big|large|tall|wide|far|hot|cold|fast)\b|\b(?:weigh|weighs|weight|pese|"
    r"pesent|size|height|width|"
    r"length|capacity|temperature|speed|distance|voltage|torque|pressure|load|poids|taille|"
    r"hauteur|largeur|longueur|capacite|temperature|vitesse|distance|tension|couple|charge "
    r"maximale)\b"
)
ASKS_COUNT = re.compile(
    r"\bhow many\b|\bhow much\b|\b(?:what|which) (?:is|are) the (?:\w+ )?(?:limit|maximum|"
    r"minimum|number|amount|quantity)\b|\bup to (?:how|what)\b|\bcombien\b|\b(?:nombre|"
    r"quantite|limite|maximum|minimum)\b"
)
ASKS_TIME = re.compile(
    r"\b(?:when|what time|what (?:day|days|date|hours?)|which (?:day|days|date|month)|until "
    r"when|by when|opening hours|open on|quand|jusqu'a quand|a quelle heure|a partir de quand|"
    r"quel(?:le)?s? (?:jour|jours|date|heure|heures|mois)|horaires?)\b"
)
ASKS_YES_NO = re.compile(
    r"^\s*(?:can|could|do|does|did|is|are|was|were|will|would|may|must|should|has|have|am|"
    r"est-ce|est ce|puis-je|puis je|peut-on|peut on|peut-il|peut-elle|peut|peuvent|dois-je|"
    r"dois je|faut-il|faut il|y a-t-il|y a t il|ai-je|suis-je|existe-t-il|acceptez|"
    r"accepte[sz]?|offrez|proposez|vendez|livrez)\b"
)

# Number words (`tether.language.number_words`, its `asks` view), and the loose counts ("a",
# "a few", "half") that also read as a duration's number.
_CARDINALS = "|".join(words_for("asks"))
_NUMBER_WORDS = _CARDINALS + "|" + "|".join(LOOSE_COUNTS)
NUMBERISH = re.compile(
    rf"\d|\b(?:{_CARDINALS}|half|twice|"
    r"once|double|free|no charge|gratuit\w*|sans frais|moitie|"
    r"(?:a|an|one|un|une) (?:day|week|month|year|hour|jour|semaine|mois|an|annee|heure)|"
    r"(?:daily|weekly|monthly|yearly|annual\w*|quotidien\w*|hebdomadaire|mensuel\w*|annuel\w*)|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|weekday\w*|"
    r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche)\b"
)
_MONEY = re.compile(
    r"[$€£¥]|\d\s*(?:dollars?|euros?|cents?|cad|usd|eur|chf|francs?)\b|\b(?:free|no charge|"
    r"at no cost|gratuit\w*|sans frais|offert\w*)\b"
)
_DURATION = re.compile(
    rf"(?:\d+(?:[.,]\d+)?|\b(?:{_NUMBER_WORDS}))[\s-]*(?:(?:business|working|calendar|"
    r"full|clear|ouvrables?|ouvres?|francs?) )?(?:seconds?|secondes?|minutes?|mins?|hours?|hrs?|"
    r"h|days?|nights?|weeks?|months?|years?|jours?|nuits?|semaines?|mois|ans?|annees?|heures?)"
    r"\b|\b(?:same day|next day|overnight|immediately|le jour meme|lendemain|"
    r"daily|weekly|monthly|yearly|annual\w*|quotidien\w*|hebdomadaire|mensuel\w*|annuel\w*)\b"
)
_PERCENT = re.compile(r"%|\b(?:percent|per cent|pour cent|pourcent|half|moitie)\b")
_MEASURE = re.compile(
    r"\d+(?:[.,]\d+)?\s*(?:kg|g|lbs?|pounds?|kilos?|grammes?|grams?|cm|mm|m|km|inch(?:es)?|"
    r"in|ft|feet|foot|l|ml|litres?|liters?|w|kw|watts?|v|volts?|nm|°|degrees?|degres?|km/h|mph)"
    r"\b"
)
TIMEISH = re.compile(
    r"\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|weekday\w*|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|janvier|fevrier|mars|avril|mai|juin|"
    r"juillet|aout|septembre|octobre|novembre|decembre|noon|midnight|midi|minuit|morning|"
    r"evening|matin|soir|daily|tous les jours|every day|holiday\w*|ferie\w*|before|after|avant|"
    r"apres|within|once|twice|immediately|same day|next day|meme jour|lendemain)\b"
)
_GIVES = {
    "money": _MONEY,
    "duration": _DURATION,
    "percent": _PERCENT,
    "measure": _MEASURE,
    "count": NUMBERISH,
    "time": TIMEISH,
}


def asks(question: str) -> AskKind:
    """The type of answer `question` asks for (see the module docstring)."""
    folded = fold(question)
    for kind, cue in (
        ("time", ASKS_TIME),
        ("duration", ASKS_DURATION),
        ("percent", ASKS_PERCENT),
        ("measure", ASKS_MEASURE),
        ("money", ASKS_MONEY),
        ("count", ASKS_COUNT),
    ):
        if cue.search(folded):
            return kind  # type: ignore[return-value]
    if ASKS_YES_NO.search(folded):
        return "yes_no"
    return "other"


def gives(kind: AskKind, sentence: str) -> bool:
    """Whether `sentence` holds an answer of type `kind` (always True for yes/no and other)."""
    cue = _GIVES.get(kind)
    return True if cue is None else bool(cue.search(fold(sentence)))
