"""The words the alignment reads (`tether.verify.align`): scope words (only, all, never, at
least; seulement, tous, ne ... que) by class, condition cues (if, unless; si, sauf), negation
cues, rate periods (per day, par trajet), opposite words (before/after, nord/sud), the generic
words an answer adds around a fact (cost, allowed, pendant), irregular verb forms, and the
small functions that find them in a folded word string. EN and FR lists, written by hand;
read by `tether.verify` and `tether.health` (`tether.verify.cues` re-exports it).

What it cannot do: it recognises these only as listed words and phrases: a scope, condition
or opposite said otherwise is not seen, and a listed word used in another sense ("over" as
"finished") is read as its cue.
"""

from __future__ import annotations

import re

from tether.language.number_words import words_for
from tether.language.stems import content_stem

# Scope words by class (folded). A claim using a class its evidence does not use states
# something the evidence does not. "each"/"chaque" are left out: they restate a rate ("$2
# each") far more often than they widen a rule.
_QUANTIFIERS: dict[str, tuple[str, ...]] = {
    "only": (
        "only", "solely", "exclusively", "just", "seulement", "uniquement", "exclusivement",
        "ne que", "n que", "rien que",
    ),
    "all": ("all", "every", "any", "entire", "whole", "tous", "toutes", "tout", "toute",
            "n importe", "as many", "as much", "unlimited", "no limit", "illimite", "illimites",
            "illimitee", "autant", "sans limite"),
    "always": ("always", "at any time", "anytime", "toujours", "en tout temps", "a tout moment"),
    "never": ("never", "jamais"),
    "at_least": ("at least", "minimum", "or more", "au moins", "au minimum", "ou plus"),
    "at_most": ("at most", "up to", "maximum", "no more than", "not more than", "au plus",
                "au maximum", "jusqu a", "pas plus de", "or less", "or fewer", "ou moins"),
    "more_than": ("more than", "over", "beyond", "plus de", "au dela"),
    "less_than": ("less than", "fewer than", "under", "moins de", "within", "dans les"),
}  # fmt: skip
# A limit said of an allowance ("up to three times", "within 14 days") restates it.
BENIGN_ADDED = frozenset({"at_most", "less_than"})
# Limiting words the claim must keep: dropping one states a wider rule than the evidence.
LIMITING = ("only", "at_least", "at_most")
# Within/under and up to/at most read alike: a claim may trade one for its neighbour.
QUANT_NEIGHBOURS = {
    "at_most": {"less_than"},
    "less_than": {"at_most"},
    "at_least": {"more_than"},
    "more_than": {"at_least"},
    "all": {"always"},
    "always": {"all"},
}
_CONDITION = (
    "if", "unless", "except", "provided", "providing", "as long as", "so long as", "only when",
    "only after", "only before", "only if", "subject to", "otherwise", "on condition",
    "except for", "excluding", "si", "sauf", "a condition", "pourvu", "a moins",
    "seulement si", "excepte", "hormis", "sous reserve", "a l exception", "sinon",
)  # fmt: skip
# Polarity cues (folded tokens and phrases); "plus" and "que" count only after a "ne"/"n".
_NEGATION = ("not", "no", "never", "cannot", "cant", "nor", "none", "without", "nothing",
             "no longer", "jamais", "aucun", "aucune", "sans", "rien", "ni", "pas", "non")  # fmt: skip
_NE = re.compile(r"\b(?:ne|n)\s+(?:\w+\s+){0,3}?(pas|plus|jamais|rien|aucun|aucune|que|qu)\b")
_NT = re.compile(r"\w+n[’']t\b")
PERIOD_WORDS = {
    "day": "day", "days": "day", "jour": "day", "jours": "day", "daily": "day",
    "quotidien": "day", "quotidienne": "day", "night": "night", "nuit": "night",
    "week": "week", "semaine": "week", "weekly": "week", "hebdomadaire": "week",
    "month": "month", "mois": "month", "monthly": "month", "mensuel": "month",
    "mensuelle": "month", "year": "year", "an": "year", "annee": "year", "yearly": "year",
    "annual": "year", "annually": "year", "annuel": "year", "annuelle": "year",
    "hour": "hour", "heure": "hour", "hourly": "hour", "ride": "ride", "trip": "ride",
    "trajet": "ride", "passage": "ride", "journey": "ride", "voyage": "ride",
    "item": "item", "article": "item", "document": "item", "person": "person",
    "personne": "person", "passenger": "person", "passager": "person", "rider": "person",
    "member": "person", "membre": "person", "visit": "visit", "visite": "visit",
    "booking": "booking", "reservation": "booking", "order": "order", "commande": "order",
    "vehicle": "vehicle", "vehicule": "vehicle", "bike": "bike", "velo": "bike",
    "household": "household", "menage": "household", "family": "household", "famille": "household",
    "card": "card", "carte": "card", "session": "session", "use": "use", "utilisation": "use",
    "page": "page", "minute": "minute", "minutes": "minute",
}  # fmt: skip
_PER = re.compile(
    r"\b(?:per|each|every|par|chaque|(?<=\d )an?|(?<=dollars )an?|(?<=cents )an?|(?<=\d )la|(?<=\d )le)\s+(\w+)\b|/\s?(\w+)\b|\b(daily|weekly|"
    r"monthly|yearly|annual|annually|hourly|quotidien|quotidienne|hebdomadaire|mensuel|"
    r"mensuelle|annuel|annuelle)\b"
)
# Words whose opposite in the evidence, where the claim's own word is absent, is a swap
# ("counted after tax" against "counted before tax"): EN and FR, folded.
_OPPOSITES_LIST = (
    ("before", "after"), ("above", "below"), ("more", "less"), ("most", "least"),
    ("minimum", "maximum"), ("first", "last"), ("earliest", "latest"), ("earlier", "later"),
    ("north", "south"), ("east", "west"), ("northern", "southern"), ("eastern", "western"),
    ("upper", "lower"), ("inside", "outside"), ("indoor", "outdoor"), ("indoors", "outdoors"),
    ("open", "closed"), ("opens", "closes"), ("included", "excluded"), ("includes", "excludes"),
    ("including", "excluding"), ("increase", "decrease"), ("higher", "lower"),
    ("longer", "shorter"), ("faster", "slower"), ("weekday", "weekend"),
    ("weekdays", "weekends"), ("morning", "evening"), ("mandatory", "optional"),
    ("required", "optional"), ("allowed", "forbidden"), ("allowed", "prohibited"),
    ("permitted", "prohibited"), ("accepted", "refused"), ("domestic", "international"),
    ("arrival", "departure"), ("entry", "exit"), ("buy", "sell"), ("cheaper", "dearer"),
    ("avant", "apres"), ("premier", "dernier"), ("premiere", "derniere"), ("nord", "sud"),
    ("haut", "bas"), ("interieur", "exterieur"), ("ouvert", "ferme"), ("ouverte", "fermee"),
    ("inclus", "exclu"), ("incluse", "exclue"), ("matin", "soir"),
    ("obligatoire", "facultatif"), ("obligatoire", "optionnel"), ("autorise", "interdit"),
    ("permis", "interdit"), ("accepte", "refuse"), ("gratuit", "payant"),
    ("gratuite", "payante"), ("arrivee", "depart"), ("hausse", "baisse"),
    ("superieur", "inferieur"), ("entree", "sortie"), ("achat", "vente"),
)  # fmt: skip
OPPOSITES: dict[str, set[str]] = {}
for _a, _b in _OPPOSITES_LIST:
    OPPOSITES.setdefault(_a, set()).add(_b)
    OPPOSITES.setdefault(_b, set()).add(_a)
# Words an answer adds around what a passage states (verbs of cost, time, permission and
# possession, generic nouns): absent from the passage, they are counted apart from the words
# that carry a claim's content (`words_absent_generic`), so the judge can weigh them less.
GENERIC = frozenset(
    s
    for w in """
    cost costs costing pay pays paid paying charge charged charges price priced take takes
    taken get gets got have has had need needs needed require requires required allow allows
    allowed permit permitted available offer offers offered provide provides provided give
    gives given use uses used using apply applies applied include includes included make
    makes made keep keeps kept let lets receive receives accept accepts accepted come comes
    go goes able possible option options rule rules policy policies time times long period
    customer customers client clients member members person people someone anyone you user
    users rider riders passenger passengers visitor visitors service services way ways also
    still just really actually here there thing things kind stated according note means mean
    counts count last lasts lasting valid available open opens borrowed borrow borrowing
    coute coutent couter payer paye payes prendre prend faut falloir avoir possible permis
    permet permettent offert offre offrent fournit utiliser utilise client clients usager
    usagers membre membres personne personnes regle regles politique temps duree valable
    pendant durant selon aussi encore toujours peut peuvent pouvez doit doivent devez
    chaque like many much
    """.split()
    if (s := content_stem(w))
)


def _has(words: str, phrase: str) -> bool:
    return f" {phrase} " in f" {words} "


_COMPARATIVE = ("more_than", "less_than", "at_least", "at_most")
_BARE_COMPARATIVES = ("minimum", "maximum", "or more", "or less", "or fewer", "ou plus", "ou moins")
_NUMBERISH = re.compile(r"^(?:\$ ?)?(?:\d|" + "|".join(words_for("scope")) + r")")


def classes(words: str) -> set[str]:
    """The quantifier classes a folded word string uses (a comparative such as "more than"
    or "under" only before a number: "more than 3 days", not "more than a day pass")."""
    found: set[str] = set()
    for cls, cues in _QUANTIFIERS.items():
        for cue in cues:
            for m in re.finditer(rf"(?:^| ){re.escape(cue)}(?= |$)", words):
                if (
                    cls in _COMPARATIVE
                    and cue not in _BARE_COMPARATIVES
                    and not _NUMBERISH.match(words[m.end() :].strip())
                ):
                    continue
                found.add(cls)
                break
    if _NE.search(words) and re.search(r"\b(?:ne|n)\s+(?:\w+\s+){0,3}?(?:que|qu)\b", words):
        found.add("only")
    if "only" in found and any(_has(words, c) for c in ("only if", "only when", "seulement si")):
        # "only if" states a condition; the only-class stays only when "only" is used again
        rest = re.sub(r"\b(?:only if|only when|seulement si)\b", "", words)
        if not any(_has(rest, c) for c in _QUANTIFIERS["only"]):
            found.discard("only")
    if "never" in found:
        found.discard("always")
    return found


def polarity(words: str) -> int:
    """How many negations a folded word string holds (French "ne ... plus/que" counted once)."""
    n = sum(1 for c in _NEGATION if _has(words, c) and c not in ("pas", "non", "no longer"))
    n += len(_NE.findall(words))
    if _has(words, "pas") and not _NE.search(words):
        n += 1
    n += len(_NT.findall(words.replace(" t ", "'t ")))
    n += words.count("no longer")
    if re.search(r"\bn\w* (?:\w+ ){0,3}?(?:que|qu)\b", words):
        n -= 1  # "ne ... que" restricts (only): not a negation
    return max(n, 0)


def main_clause(words: str) -> str:
    """A folded word string without its condition clause ("if no other member ...")."""
    cond = condition(words)
    return words[: len(words) - len(cond[1])].strip() if cond else words


def periods(words: str) -> set[str]:
    found: set[str] = set()
    for m in _PER.finditer(words):
        word = m.group(1) or m.group(2) or m.group(3)
        unit = PERIOD_WORDS.get(word)
        if unit is None and word.endswith("s"):
            unit = PERIOD_WORDS.get(word[:-1])
        if unit is not None:
            found.add(unit)
    return found


def condition(words: str) -> tuple[str, str] | None:
    """(cue, the words after it up to the clause's end) of the first condition in a folded
    word string, or None."""
    best: tuple[int, str] | None = None
    for cue in _CONDITION:
        m = re.search(rf"(?:^| ){re.escape(cue)}(?= )", words)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), cue)
    if best is None:
        return None
    start, cue = best
    return cue, words[start:].strip()


_IRREGULAR = {
    "held": "hold", "kept": "keep", "paid": "pay", "sold": "sell", "bought": "buy",
    "gave": "give", "given": "give", "took": "take", "taken": "take", "left": "leave",
    "made": "make", "sent": "send", "spent": "spend", "lost": "lose", "told": "tell",
    "brought": "bring", "began": "begin", "begun": "begin", "chose": "choose",
    "chosen": "choose", "went": "go", "gone": "go", "got": "get", "wrote": "write",
    "written": "write", "found": "find", "pris": "prendre", "mis": "mettre", "fait": "faire",
    "ouvert": "ouvrir", "offert": "offrir", "vendu": "vendre", "rendu": "rendre",
}  # fmt: skip


def related(word: str, known: frozenset[str], heads5: set[str]) -> bool:
    """True when a claim word (folded) the passages do not hold is a form of one they do: an
    irregular form (held, hold) or the same first five letters (covered, coverage; charging,
    charges)."""
    base = _IRREGULAR.get(word)
    if base and content_stem(base) in known:
        return True
    return len(word) >= 5 and word[:5] in heads5


def cue_text(words: str, cls: str) -> str:
    for cue in _QUANTIFIERS.get(cls, ()):
        if _has(words, cue):
            return cue
    return cls.replace("_", " ")
