"""The sentences the contradiction finder compares, each read once (`read_units(chunk)`):
its words and stems, its numbers as slots (a value, a unit and the words bound to it), its
polarity (a negation in its main clause), the model names it uses and the groups of people
it speaks of. Used by `tether.health.contradictions` and its two checks
(`contradiction_checks`: sentences sharing most words; `contradiction_reworded`: the same
subject in other words).

A slot's unit is canonical so that one value said two ways reads the same: money ("$75",
"£15", "20p" is £0.20), durations in minutes ("two weeks" and "14 days", "48 hours" and
"2 days"), working days apart from days, months (a year is 12), data sizes in MB (1 TB is
1024 GB), percentages, counts of a noun ("10 failed sign-in attempts": unit
"#attempt"; "twelve or more characters": "#charact"), and times of day in minutes after
midnight (unit "clock": "09:30", "half past nine in the morning", "9.30am" are one value).
Numbers written as words ("twelve", "sixty", "twenty-one") are read when a unit or counted
noun follows them. A table row's numbers are bound to the row's label and the column's
heading (the label without its aside: "Fitness class (up to 60 minutes)" is named by
"fitness class"). Each number also names what it is said of, read from the number itself rather than
the whole sentence (`slots_differ`): the groups of people among its bound words ("£60 for an
adult", a cell under "Adult"), the capitalised words near it ("A replacement Valley Card
costs £5"), and a duration's role in a retention period ("held for two weeks": hold;
"unclaimed after 10 days ... is disposed of": end). A one-letter prefix, and "non-", is
joined to its word ("e-books" is "ebooks", "non-folding" is "nonfolding": an e-book is not a
book). A sentence's or step's own number ("2. Creating indexes") is no value. Also read: each main clause's
rule (`Unit.rules`: a modal's polarity and verb, or a plain statement's possible verbs),
the words of the clause a negation is said of (`Unit.denied`), the words that qualify each
noun (`modifiers`: "computer bookings", "holds on e-books") and the title's and headings'
words (`Unit.topic`).

What it cannot do: a unit said with another word ("1,000 Pine Points" against "1,000
points") or a count whose noun comes before the number ("attempts: 5") reads as no unit;
number words are read in English only; a group of people is recognised by a short list of
words (students, staff, members, adults, teens, card holders, customers on the
accessibility register, ...; a visitor card is the visitors') and by a condition on the reader's state ("If you have a
concession on your card", "if you are over 65"), so a group named otherwise ("people who
joined before 2020") is not seen, and a condition in other words ("for those on means-tested
benefits") neither; ranges and dates are left out; a time without am/pm or "in the
morning/evening" is read as written ("6 o'clock" is 06:00); a retention is recognised by a
short list of English verbs (kept, held, stored ...; deleted, disposed, cleared, donated ...),
so "goes to the charity shop" is no end of one. A negation said of a noun phrase after a
comma ("..., not the day you buy them") is a contrast, not a negated main clause; "cannot do
this" and a clause ending in a colon (a list follows) state no rule of their own; "No dogs
are allowed ..." is a negated rule. A group word that opens a name ("Junior Climbing Club",
"Student Union") names no group.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace

from tether.text import fold_fast, sentence_spans, words_of
from tether.types import Chunk
from tether.verify.cues import GENERIC, main_clause, polarity
from tether.verify.negation import CUE_STEMS, negation_scope
from tether.verify.quantities import UNIT_AFTER, UNITS, qualify, read_quantities
from tether.verify.stems import WORD_RE, content_stem, stem_set

__all__ = [
    "GROUP_STEMS",
    "NOISE",
    "PERMISSION_OPPOSITES",
    "PLAIN",
    "POLAR_WORDS",
    "Slot",
    "Unit",
    "groups_differ",
    "modifiers",
    "read_units",
    "said_of_others",
    "same_unit",
    "same_value",
    "slots_differ",
]

_NEARBY = 300  # characters either side of a sentence that count as its passage
_WINDOW = 5  # a number's bound words: this many content words either side, in its clause

# Permission words whose opposite on the other side, on the same content, is a rule conflict.
PERMISSION_OPPOSITES = {
    "allowed": {"forbidden", "prohibited"}, "permitted": {"forbidden", "prohibited"},
    "forbidden": {"allowed", "permitted"}, "prohibited": {"allowed", "permitted"},
    "included": {"excluded"}, "excluded": {"included"}, "includes": {"excludes"},
    "excludes": {"includes"}, "required": {"optional"}, "mandatory": {"optional"},
    "optional": {"required", "mandatory"}, "accepted": {"refused"}, "refused": {"accepted"},
}  # fmt: skip
POLAR_WORDS = frozenset(PERMISSION_OPPOSITES)
# A unit's canonical base and the factor to it: "two weeks" and "14 days" are one value.
_BASE = {
    "week": ("minute", 7 * 1440.0), "day": ("minute", 1440.0), "hour": ("minute", 60.0),
    "year": ("month", 12.0), "kb": ("mb", 1 / 1024), "gb": ("mb", 1024.0),
    "tb": ("mb", 1024.0 * 1024), "p": ("$", 0.01),
    "m": ("mm", 1000.0), "cm": ("mm", 10.0), "in": ("mm", 25.4), "ft": ("mm", 304.8),
}  # fmt: skip
# Units the verifier's reader does not know (it reads them as no unit): data sizes and pence.
_MORE_UNITS = {
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kilobytes": "kb", "megabytes": "mb",
    "gigabytes": "gb", "terabytes": "tb", "p": "p", "pence": "p", "cents": "p", "cent": "p",
    "inch": "in", "inches": "in", "foot": "ft", "feet": "ft", "ft": "ft",
}  # fmt: skip
# One value within a few percent: 1 TB said as 1000 GB or 1024 GB; a length converted between
# inches and centimetres ("six inches (15 cm)")
_TOLERANT = {"mb": 0.03, "mm": 0.05}
_CLAUSE_CUT = re.compile(r"[;:()]|,\s|\s(?:and|or|but|while|whereas|et|ou|mais)\s", re.I)
# Words that do not name a subject: units, scope words, the generic words of cost, time and
# permission (`verify.cues.GENERIC`), and the negation cues.
NOISE = (
    frozenset(
        content_stem(w)
        for w in (
            "day days week weeks month months year years hour hours minute minutes dollar"
            " dollars percent cent cents km kg points point times business working calendar"
            " extra within most least up over under more less only all every any each also"
            " jours jour semaines mois ans heures fois gb tb mb kb pence am pm cm mm metre metres"
            " meter meters inch inches foot feet"
        ).split()
    )
    | GENERIC
    | CUE_STEMS
) - {""}
_MODEL = re.compile(r"\b([A-Z][A-Za-z]+)[\s-]+((?:[A-Z]{1,4}-?)?\d[\w-]*)")
_MODEL_BEFORE = re.compile(r"\b[A-Z][\w-]*[a-z][\w-]*\s$")
_WITHOUT = re.compile(r"\b(?:without|sans)\b")
_BOUND_NOT = re.compile(r"\b(?:no|not)\s+(?:later|earlier|sooner|more|less|fewer|longer)\s+than\b")
_SUBORDINATE = re.compile(
    r"\b(?:when|whenever|where|wherever|who|whom|whose|which|whatever|whichever|whoever"
    r"|because|since|once|until|unless|while|if|after|before)\b.*$"
)
_CONTRACTIONS = {
    "can't": "cannot", "don't": "do not", "doesn't": "does not", "won't": "will not",
    "mustn't": "must not", "needn't": "need not", "isn't": "is not", "aren't": "are not",
}  # fmt: skip
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
_FIRST_PERSON = re.compile(r"(?:I|I'm|I’m|I've|I’ve|My)\b")  # the reader's voice: a FAQ's problem
_YEAR = re.compile(r"(?:19|20)\d\d")
_CODE = re.compile(r"\b[a-z]{1,3}\d{1,2}\b")  # A4, A3, B2: a size or grade (folded)
_LETTER_PREFIX = re.compile(r"\b([A-Za-z])-(?=[A-Za-z]{2})")
_ORDINAL = re.compile(r"\d{1,3}[.)]\s")
_LISTED = re.compile(r",\s+(including|such as|especially|even)\b")
_NON_PREFIX = re.compile(r"\bnon-(?=[A-Za-z]{2})", re.I)
# ", not the day you buy them": a contrast said of a noun phrase, not a negated rule
_CONTRAST = re.compile(
    r"^(?:and |but )?not (?:(?:on|in|at|for|by|from|to|with|just|only) )?"
    r"(?:the|a|an|your|our|its|their|this|that|these|those|any)\b"
)
# "we cannot do this": the rule is said of what came before (no content of its own)
_ANAPHORIC = re.compile(r"\s*do (?:this|that|so|it)\b")
_WORKING = re.compile(r"\s?-?\s?(?:working|business)\s+days?\b", re.I)

# Numbers written as words (English), read when a unit or a counted noun follows.
_ONES = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}  # fmt: skip
_WORD_NUMBER = re.compile(
    rf"\b(?:({'|'.join(_TENS)})(?:[\s-]({'|'.join(list(_ONES)[:9])}))?|({'|'.join(_ONES)}))\b",
    re.I,
)
# After a number: "or more", "or fewer" ... before its unit ("twelve or more characters").
_BOUND_AFTER = re.compile(r"\s+(?:or|and)\s+(?:more|fewer|less|over|above|under|longer)\b", re.I)
_COUNTED = re.compile(r"\s?-?([A-Za-z][A-Za-z'-]*)")
_STOP_COUNT = frozenset(
    "of in on at to for and or a an the per each by from with as is are be was were it its"
    " that this these those than then has have had can may must will".split()
)
# Groups of people a rule or number can be said of; a sentence naming one that the other
# does not, or two documents written for different groups, are not one subject.
_GROUP_WORDS = frozenset(
    """
    student students undergraduate undergraduates postgraduate postgraduates staff employee
    employees faculty alumni visitor visitors guest guests contractor contractors business
    businesses residential senior seniors child children minor minors junior juniors youth
    member members accessibility disabled premium apprentice apprentices intern interns
    volunteer volunteers analyst analysts agent agents associate associates adviser advisers
    advisor advisors adult adults teen teens teenager teenagers holder holders
    """.split()
)
# A condition on the reader's own state names a group too: "If you have a concession on your
# card, ...", "if you are over 65" (not what the reader does: "if you cancel ...", "if you
# have lost your card").
_READER_STATE = re.compile(
    r"\b(?:if|unless)\s+you(?:\s+are|\s+have|\s+hold|'re|’re|'ve got|’ve got)\s+"
    r"(?!(?:\w+ed|been|lost|paid|made|found|sent|left|given|taken|done|seen|forgotten|got)\b)"
    r"([^,;:.]+)",
    re.I,
)
GROUP_STEMS = frozenset(content_stem(w) for w in _GROUP_WORDS) - {""}
_AT_OR = re.compile(r"\b(?:at|on|by) or (after|before|later|earlier)\b", re.I)
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w'’-]*")
_ASIDE = re.compile(r"\([^)]*\)")
_NAME_END = r"(?:Club|Team|Society|Union|Centre|Center|Scheme|Programme|Program)\b"
_IN_NAME = re.compile(rf"\s+[A-Z][a-z]+\s+{_NAME_END}|\s+{_NAME_END}")
# ... and so does a named benefit or scheme the reader's household gets ("If someone in your
# household gets Council Tax Reduction", "if you receive Pension Credit")
_READER_GETS = re.compile(
    r"\b(?i:if|unless)\s+(?i:you|someone in your household|anyone in your household)\s+"
    r"(?i:get|gets|receive|receives|claim|claims)\s+((?:[A-Z][\w'’-]*\s?)+)"
)
_GROUP_NOT_BEFORE = re.compile(r"\s+(?:days?|hours?|weeks?|account|accounts)\b")


# Words before a noun that name no kind of it of their own ("your new password", "the
# standard loan"): `modifiers` reads them, the reworded check does not count them.
PLAIN = frozenset(
    content_stem(w)
    for w in (
        "new current existing same other own standard normal usual regular general default"
        " total whole full maximum minimum"
    ).split()
)
_POSTMODIFIER = frozenset({"on", "for", "with"})
_DETERMINERS = frozenset(
    "the a an your our their his her its this that these those any all some each every".split()
)


@dataclass(frozen=True)
class Slot:
    """A number of a sentence: its unit (canonical), value (in that unit), the text showing
    it, and the content-word stems bound to it."""

    unit: str
    value: float
    shown: str
    near: frozenset[str]
    label: frozenset[str] = frozenset()  # a table row's label: the other side must name it
    codes: frozenset[str] = frozenset()  # sizes or grades in that label ("A4")
    # the groups of people the number is said of ("£60 for an adult", a table cell under
    # "Adult"): its bound words (and a cell's row label and column heading) of `_GROUP_WORDS`
    groups: frozenset[str] = frozenset()
    # capitalised words of its clause near it, but a sentence's first: the named thing the
    # number is said of ("A replacement Valley Card costs £5"); none for a table cell
    names: frozenset[str] = frozenset()
    # "hold": how long something is kept ("held for two weeks", "7 days to collect it");
    # "end": after how long it goes ("unclaimed after 10 days ... is disposed of", "older
    # than sixty days have been deleted"); "" for any other number (`_role`)
    role: str = ""


@dataclass
class Unit:
    """A sentence worth comparing: where it is, what it says, read once."""

    chunk: Chunk
    start: int  # offsets in the chunk's text
    end: int
    text: str  # as written (the quote)
    read: str  # what the checks read (a table row with its header row)
    stems: frozenset[str]
    words: str  # folded word string
    slots: tuple[Slot, ...]
    polar: bool
    scope: tuple[frozenset[str], frozenset[str]]
    names: dict[str, str] = field(default_factory=dict)  # model word → code (text and title)
    content: frozenset[str] = frozenset()  # stems that name the subject (`NOISE` left out)
    negative: bool = False  # its main clause (its condition left out) holds a negation
    context: frozenset[str] = frozenset()  # the stems around it (`_NEARBY`), title, sections
    section: frozenset[str] = frozenset()  # the content stems of its section heading
    codes: frozenset[str] = frozenset()  # sizes or grades it names ("A4")
    groups: frozenset[str] = frozenset()  # the groups of people its first clause names
    title_groups: frozenset[str] = frozenset()  # ... its title and sections name
    # a rule's polarity (1 may/must, -1 may not), its verb and its clause's content stems
    modal: tuple[int, str, frozenset[str]] = (0, "", frozenset())
    # ... each main clause's rule, in order (0: a plain statement): `_rules`
    rules: tuple[tuple[int, str, frozenset[str]], ...] = ()
    # the content stems of the clause holding its negation (`_negated_clause`)
    denied: frozenset[str] = frozenset()
    topic: frozenset[str] = frozenset()  # the content stems of its title and sections

    @property
    def doc(self) -> str:
        return self.chunk.meta.doc_id


def modifiers(u: Unit) -> dict[str, frozenset[str]]:
    """{content stem: the content stems that qualify it in the sentence}: the word just
    before it ("computer bookings") and the one after "on", "for" or "with" and a
    determiner ("holds on e-books"); words of `NOISE` neither qualify nor are qualified.
    A table row has none (its cells are read with their row label: `Slot.label`)."""
    if u.read != u.text:
        return {}
    tokens = u.words.split()
    stems = [content_stem(t) for t in tokens]
    out: dict[str, set[str]] = {}
    for k, head in enumerate(stems):
        if not head or head in NOISE:
            continue
        if k > 0 and stems[k - 1] and stems[k - 1] not in NOISE:
            out.setdefault(head, set()).add(stems[k - 1])
        m = k + 1
        if m < len(tokens) and tokens[m] in _POSTMODIFIER:
            m += 1
            while m < len(tokens) and tokens[m] in _DETERMINERS:
                m += 1
            if m < len(tokens) and stems[m] and stems[m] not in NOISE:
                out.setdefault(head, set()).add(stems[m])
    return {h: frozenset(w) for h, w in out.items()}


def groups_differ(a: Unit, b: Unit) -> bool:
    """True when the sentences name different groups of people ("Undergraduate students"
    against "Postgraduate research students"; "Pine Club members" against no one), or their
    documents are written for different groups (a student guide and a staff guide)."""
    if a.groups != b.groups:
        return True
    if not a.groups and a.title_groups and b.title_groups:
        return not (a.title_groups & b.title_groups)
    return False


def slots_differ(x: Slot, y: Slot) -> bool | None:
    """Whether two numbers are said of different things, read from the numbers themselves:
    True when both name groups of people and not the same ("£50" under "Adult" against
    "£25 for a child", "undergraduate students" against "postgraduate students"), or both
    are bound to capitalised names and no name is shared ("A replacement Valley Card costs £5" against "A replacement Young Person card costs
    £10"); False when both name the same group; None when the numbers do not say (the
    sentences' groups decide: `groups_differ`)."""
    if x.names and y.names and not (x.names & y.names):
        return True
    if x.groups and y.groups:
        return x.groups != y.groups
    return None


def said_of_others(a: Unit, b: Unit, x: Slot, y: Slot) -> bool:
    """Whether the numbers `x` of `a` and `y` of `b` are said of different groups or things:
    as the numbers say (`slots_differ`), else as the sentences do (`groups_differ`)."""
    differ = slots_differ(x, y)
    return groups_differ(a, b) if differ is None else differ


def same_unit(x: Slot, y: Slot) -> bool:
    return x.unit == y.unit


def same_value(x: Slot, y: Slot) -> bool:
    """One value (1 TB and 1000 GB are one data size, six inches and 15 cm one length; else
    equal to rounding)."""
    tolerance = _TOLERANT.get(x.unit, 1e-9)
    return abs(x.value - y.value) <= tolerance * max(abs(x.value), abs(y.value), 1e-12)


def read_units(chunk: Chunk) -> list[Unit]:
    """The sentences of a chunk (questions left out), read once."""
    text = chunk.text
    language = chunk.meta.language
    headers = _table_headers(chunk)
    title_names = _names(" ".join((chunk.meta.title, *chunk.heading_path)))
    head = " ".join((chunk.meta.title, *chunk.heading_path, chunk.lead))
    title_groups = _groups(" ".join((chunk.meta.title, *chunk.heading_path)))
    topic = stem_set(_joined(" ".join((chunk.meta.title, *chunk.heading_path)))) - NOISE
    out: list[Unit] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if sentence.rstrip().endswith("?") or _FIRST_PERSON.match(sentence):
            continue  # a question states nothing, nor a reader's "My phone will not connect"
        header = headers.get(start)
        read = f"{header}\n{sentence}" if header else sentence
        folded = fold_fast(_joined(read))
        tokens = WORD_RE.findall(folded)
        words = " ".join(tokens)
        # "without X" names a case and "no later than" a bound, not a rule
        plain = _BOUND_NOT.sub("within", _WITHOUT.sub("with", fold_fast(_joined(sentence))))
        scope = negation_scope(plain)
        polar = bool(scope[0]) or not POLAR_WORDS.isdisjoint(tokens)
        slots = _slots(sentence, header, language)
        rules = _rules(plain)
        stems = stem_set(read, folded, tokens)
        out.append(
            Unit(
                chunk=chunk,
                start=start,
                end=end,
                text=sentence,
                read=read,
                stems=stems,
                words=words,
                slots=tuple(slots),
                polar=polar,
                scope=scope,
                names={**title_names, **_names(sentence)},
                content=stems - NOISE,
                negative=_negative(plain),
                modal=_modal(rules),
                rules=rules,
                denied=_negated_clause(plain) if scope[0] else frozenset(),
                context=stem_set(
                    _joined(f"{head} {text[max(0, start - _NEARBY) : end + _NEARBY]}")
                ),
                section=stem_set(_joined(chunk.heading_path[-1])) - NOISE
                if chunk.heading_path
                else frozenset(),
                codes=frozenset(_CODE.findall(folded)),
                groups=_groups(re.split(r"[;:]\s", sentence)[0]),
                title_groups=title_groups,
                topic=topic,
            )
        )
    return out


def _negated_clause(plain: str) -> frozenset[str]:
    """The content stems (`NOISE` left out) of the first clause of a folded sentence that
    holds a negation, cut at ";", ":", ", ", "and", "or", "but": what the negation is said
    of ("no late fees on items borrowed with an Access card", where the negation's own
    few words are "late fees on items")."""
    for part in _CLAUSE_CUT.split(plain):
        if negation_scope(part)[0]:
            return stem_set(part) - NOISE
    return frozenset()


def _joined(text: str) -> str:
    """The text with a one-letter prefix joined to its word ("e-books" is "ebooks", "x-ray"
    "xray"): an e-book is not a book; so is "non-" ("non-folding bicycles" are not folding
    ones)."""
    return _NON_PREFIX.sub("non", _LETTER_PREFIX.sub(r"\1", text))


def _negative(plain: str) -> bool:
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


def _modal(
    rules: tuple[tuple[int, str, frozenset[str]], ...],
) -> tuple[int, str, frozenset[str]]:
    """(polarity, verb stem) of the rule a sentence's main clauses state with a modal, its
    negative one first, of its clauses' `rules`: -1 for "cannot", "may not", "must not",
    "does not have to", "not permitted", "do not" (an instruction), +1 for "can", "may",
    "must", "has to", "is allowed to"; (0, "") when it states no rule so; with the stems of
    that clause that name its content."""
    modal = [r for r in rules if r[0]]
    return min(modal, key=lambda r: r[0]) if modal else (0, "", frozenset())


def _rules(plain: str) -> tuple[tuple[int, str, frozenset[str]], ...]:
    """The rule each main clause of a folded sentence states, in order: (polarity, verb
    stem, the clause's content stems), the polarity as in `_modal`, or 0 for a plain
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


def _groups(text: str) -> frozenset[str]:
    """The groups of people a text names (stems; "member of staff" is staff; the capitalised
    words before "members" or "holders" name which: "Pine Club members", "Access card
    holders"), and the content stems of a condition on the reader's state ("if you have a
    concession": `_READER_STATE`)."""
    out: set[str] = set()
    for m in re.finditer(r"[A-Za-z]+", text):
        word = m.group(0).lower()
        if word not in _GROUP_WORDS or _GROUP_NOT_BEFORE.match(text, m.end()):
            continue
        if _IN_NAME.match(text, m.end()) and m.group(0)[0].isupper():
            continue  # "Junior Climbing Club", "Student Union": a name, not its members
        non = text[max(0, m.start() - 4) : m.start()].lower() == "non-"
        out.add(("non-" if non else "") + content_stem(word))  # non-members are not members
        if word in ("members", "member", "holders", "holder") and not non:
            before = re.findall(r"\b([A-Z][a-z]+)\s+", text[max(0, m.start() - 30) : m.start()])
            out.update(content_stem(fold_fast(w)) for w in before[-2:])
    staff = content_stem("staff")
    if staff in out:
        out.discard(content_stem("member"))
    for m in _READER_STATE.finditer(text):
        out.update(stem_set(m.group(1)) - NOISE)
    for m in _READER_GETS.finditer(text):
        out.update(stem_set(m.group(1)) - NOISE)
    return frozenset(s for s in out if s)


def _table_headers(chunk: Chunk) -> dict[int, str]:
    """{start of a table row's line: its table's header row} for the chunk's table rows (the
    header is the first row after prose, or the chunk's repeated `lead`)."""
    out: dict[int, str] = {}
    header = chunk.lead if " | " in chunk.lead else None
    pos = 0
    for line in chunk.text.split("\n"):
        begin, pos = pos, pos + len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        if " | " not in stripped and not stripped.startswith("|"):
            header = None
            continue
        if re.fullmatch(r"[\s|:-]+", stripped):
            continue
        if header is None:
            header = stripped
            continue
        out[begin + len(line) - len(line.lstrip())] = header
    return out


def _names(text: str) -> dict[str, str]:
    """Model names of a text: {word folded: code} ("Ridgeline 2" → {"ridgeline": "2"})."""
    out: dict[str, str] = {}
    for m in _MODEL.finditer(text):
        code = m.group(2)
        if _YEAR.fullmatch(code):
            continue
        after = UNIT_AFTER.match(fold_fast(text[m.end() : m.end() + 20]))
        if after and after.group(3) in ("days", "day", "weeks", "months", "years", "hours"):
            continue  # "Allow 5 days": a quantity
        out.setdefault(fold_fast(m.group(1)), fold_fast(code))
    return out


def _slots(sentence: str, header: str | None, language: str) -> list[Slot]:
    if header is not None:
        return _cell_slots(sentence, header, language)
    clocked = _clock_slots(sentence)
    out = [slot for slot, _span in clocked]
    clocks = [span for _slot, span in clocked]
    q = read_quantities(sentence, language)
    if q.items:
        units, ranges = qualify(sentence, q)
        in_range = {k for pair in ranges for k in pair}
        for k, ((key, display), at, unit) in enumerate(zip(q.items, q.where, units, strict=True)):
            if k in in_range or not key.startswith("n:") or unit == "version":
                continue
            if any(start <= at < end for start, end in clocks):
                continue  # a time of day, read above
            if _ORDINAL.match(sentence, at) and not sentence[:at].strip():
                continue  # "2. Creating Partial Indexes": a section's or a step's number
            if _YEAR.fullmatch(key[2:]) and not unit:
                continue  # a year
            if not unit and _MODEL_BEFORE.search(sentence[max(0, at - 20) : at]):
                continue  # a model's number ("Ridgeline 2"), not "Allow 2 hours"
            slot = _slot(sentence, key[2:], display, at, unit)
            if slot is not None:
                out.append(slot)
    if language == "en":
        out += [w for w in _word_slots(sentence) if w.unit != "#o'clock"]
    return out


# A time of day: "09:30", "9.30am", "9 am", "9 o'clock in the morning", "half past six in
# the evening", "noon", "midnight" (English; a time without am/pm is read as written).
_CLOCK_WORD = "|".join([*list(_ONES)[:12], r"\d{1,2}"])
_CLOCK = re.compile(
    r"(?<![\d:.,])\b(?:(?P<half>half|quarter)\s+(?P<rel>past|to)\s+(?P<h4>" + _CLOCK_WORD + r")\b"
    r"|(?P<h>\d{1,2}):(?P<m>[0-5]\d)(?![\d:])(?:\s?(?P<ap1>[ap])\.?m\b\.?)?"
    r"|(?P<h5>\d{1,2})\.(?P<m5>[0-5]\d)\s?(?P<ap5>[ap])\.?m\b\.?"
    r"|(?P<h2>\d{1,2})\s?(?P<ap2>[ap])\.?m\b\.?"
    r"|(?P<h3>" + _CLOCK_WORD + r")\s+o['’]clock"
    r"|(?P<noon>noon|midday|midnight))"
    r"(?:\s+in\s+the\s+(?P<part>morning|afternoon|evening))?",
    re.I,
)


def _clock_slots(sentence: str) -> list[tuple[Slot, tuple[int, int]]]:
    """The times of day of a sentence as numbers of unit "clock" (minutes after midnight),
    each with where it is written: "09:30" and "half past nine in the morning" are one
    value; "9 o'clock" is 540."""
    out: list[tuple[Slot, tuple[int, int]]] = []
    for m in _CLOCK.finditer(sentence):
        if m.group("noon"):
            minutes = 0 if m.group("noon").lower() == "midnight" else 720
        else:
            word = next(w for w in (m.group(g) for g in ("h", "h5", "h2", "h3", "h4")) if w)
            hour = int(word) if word.isdigit() else _ONES[word.lower()]
            if hour > 24:
                continue
            minutes = hour * 60 + int(m.group("m") or m.group("m5") or 0)
            meridiem = (m.group("ap1") or m.group("ap5") or m.group("ap2") or "").lower()
            part = (m.group("part") or "").lower()
            if (meridiem == "p" or part in ("afternoon", "evening")) and hour < 12:
                minutes += 720
            elif meridiem == "a" and hour == 12:
                minutes -= 720
            if m.group("half"):
                step = 30 if m.group("half").lower() == "half" else 15
                minutes += step if m.group("rel").lower() == "past" else -step
        slot = _slot(sentence, str(minutes), m.group(0), m.start(), "clock")
        if slot is not None:
            out.append((replace(slot, shown=m.group(0)), (m.start(), m.end())))
    return out


def _word_slots(sentence: str) -> list[Slot]:
    """The numbers written as words that a unit or a counted noun follows ("two weeks",
    "twelve or more characters")."""
    out: list[Slot] = []
    for m in _WORD_NUMBER.finditer(sentence):
        if m.group(1):
            value = _TENS[m.group(1).lower()] + (_ONES[m.group(2).lower()] if m.group(2) else 0)
        else:
            value = _ONES[m.group(3).lower()]
        after = UNIT_AFTER.match(fold_fast(sentence[m.end() : m.end() + 40]))
        unit = ""
        if after and not _BOUND_AFTER.match(sentence, m.end()):
            unit = UNITS.get(after.group(3).replace(" ", ""), "")
        slot = _slot(sentence, str(value), sentence[m.start() : m.end()], m.start(), unit)
        if slot is not None and slot.unit:
            out.append(slot)
    return out


def _slot(sentence: str, number: str, display: str, at: int, unit: str) -> Slot | None:
    try:
        value = float(number)
    except ValueError:
        return None
    end = at + len(display)
    if not unit:
        unit = _more_unit(sentence, end)
    if unit == "day" and _WORKING.match(sentence, end):
        unit, factor = "wday", 1.0
    else:
        unit, factor = _BASE.get(unit, (unit, 1.0))
    head = _CLAUSE_CUT.split(_AT_OR.sub(r"\1", sentence[:at]))[-1]  # "at or after 9 o'clock"
    tail = _CLAUSE_CUT.split(sentence[end:])[0]
    before, after = _subject_stems(head), _subject_stems(tail)
    if not before and not after:  # "... and charge you £65": its clause names nothing; the
        before = _subject_stems(sentence[:at])  # earlier clauses do ("We change the lock")
    before, after = before[-_WINDOW:], after[:_WINDOW]
    near = frozenset(before + after)
    value *= factor
    return Slot(unit, value, _shown(sentence, at, display), near, groups=near & GROUP_STEMS,
                names=_near_names(sentence, at - len(head), end, tail),
                role=_role(sentence, at, end, head, tail) if unit in ("minute", "month") else "")  # fmt: skip


def _subject_stems(text: str) -> list[str]:
    """The content stems of `text` in order, but those of `NOISE`."""
    return [s for w in words_of(_joined(text)).split() if (s := content_stem(w)) and s not in NOISE]


# How long something is kept, and after how long it goes: a retention period said either way
_HOLD = re.compile(r"\b(?:kept|keep|keeps|held|hold|holds|stored|retained|retain|retains)\b", re.I)
_HOLD_AFTER = re.compile(r"\s*(?:[a-z]+\s+)?(?:to|in which to)\s+(?:collect|claim|pick)\b", re.I)
_END = re.compile(
    r"\b(?:deleted|disposed|destroyed|cleared|discarded|removed|donated|recycled|shredded"
    r"|thrown away|goes out|go out|sent back|returned to (?:stock|the shelves?))\b",
    re.I,
)
_END_BEFORE = re.compile(r"\b(?:after|older than|more than|over|longer than|beyond)\s+$", re.I)


def _role(sentence: str, at: int, end: int, head: str, tail: str) -> str:
    """A duration's role in its sentence: "hold" ("held at the office for two weeks", "you
    have 7 days to collect it"), "end" ("still unclaimed after 10 days ... goes out",
    "older than sixty days have been deleted"), or "" (`Slot.role`)."""
    if _END_BEFORE.search(sentence[max(0, at - 20) : at]) and _END.search(sentence):
        return "end"
    if _HOLD.search(head) or _HOLD.search(tail) or _HOLD_AFTER.match(sentence, end):
        return "hold"
    return ""


def _near_names(sentence: str, head_start: int, end: int, tail: str) -> frozenset[str]:
    """The capitalised words of a number's clause, a few either side of it, but the
    sentence's first word and words of `_GROUP_WORDS` (folded)."""
    first = len(sentence) - len(sentence.lstrip())
    found = [
        m for m in _CAPITALISED.finditer(sentence, head_start, end + len(tail))
        if m.start() != first and m.group(0).lower() not in _GROUP_WORDS
    ]  # fmt: skip
    before = [m.group(0) for m in found if m.end() <= end][-_WINDOW:]
    after = [m.group(0) for m in found if m.start() >= end][:_WINDOW]
    return frozenset(fold_fast(w) for w in before + after)


def _more_unit(sentence: str, end: int) -> str:
    """The unit the verifier's reader does not give: a data size, pence ("20p"), or the
    noun counted ("10 failed sign-in attempts": "#attempt"); "" when none."""
    rest = sentence[end:]
    m = re.match(r"\s?([A-Za-z]+)\b", rest)
    found = _MORE_UNITS.get(m.group(1).lower(), "") if m else ""
    if found and (found != "p" or (m and (m.start(1) == 0 or m.group(1).lower() == "pence"))):
        return found
    two = re.match(r"\s?([A-Za-z]+)\s+([A-Za-z]+)\b", rest)
    if two and two.group(1).lower() not in _STOP_COUNT and UNITS.get(two.group(2).lower()):
        return UNITS[two.group(2).lower()]  # "48 consecutive hours"
    bound = _BOUND_AFTER.match(rest)
    pos = bound.end() if bound else 0
    counted: list[str] = []
    while len(counted) < 3:
        w = _COUNTED.match(rest, pos)
        if w is None or w.group(1).lower() in _STOP_COUNT:
            break
        counted.append(w.group(1).lower())
        pos = w.end()
    nouns = [w for w in counted if len(w) > 3 and w.endswith("s") and not w.endswith("ss")]
    head = nouns[0] if nouns else (counted[-1] if counted else "")
    stem = content_stem(head)
    if not stem or stem in NOISE:
        return ""
    return "#" + stem


def _shown(text: str, at: int, display: str) -> str:
    """The number as written with its currency sign or unit word ("$75", "45 days")."""
    start = at - 1 if at > 0 and text[at - 1] in "$€£" else at
    m = re.match(r"[\d.,\s\u00a0\u202f]*\d", text[at:])
    end = at + (m.end() if m else len(display))
    after = re.match(r"\s?(?:%|[^\W\d_]+)", text[end:])
    working = _WORKING.match(text, end)
    if working:
        return text[start : working.end()].strip()
    if after and (
        after.group(0).strip() == "%"
        or fold_fast(after.group(0).strip()) in _UNIT_WORDS
        or (after.group(0) == "p")
    ):
        end += after.end()
    return text[start:end].strip()


_UNIT_WORDS = frozenset(
    "day days week weeks month months year years hour hours minute minutes percent km kg points"
    " point times jours jour semaines mois ans heures gb tb mb kb pence characters attempts"
    " cm mm metre metres meter meters inch inches foot feet".split()
)


def _cell_slots(row: str, header: str, language: str) -> list[Slot]:
    """A table row's numbers, each bound to its row label and column heading."""
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    heads = [c.strip() for c in header.strip().strip("|").split("|")]
    if len(cells) < 2:
        return []
    # "Fitness class (up to 60 minutes)" is named by "fitness class": an aside is no name
    label = stem_set(_ASIDE.sub("", cells[0])) or stem_set(cells[0])
    codes = frozenset(_CODE.findall(fold_fast(cells[0])))
    out: list[Slot] = []
    for j, cell in enumerate(cells[1:], start=1):
        q = read_quantities(cell, language)
        if len(q.items) != 1 or not q.items[0][0].startswith("n:"):
            continue
        key, display = q.items[0]
        units, _ = qualify(cell, q)
        head = heads[j] if j < len(heads) else ""
        slot = _slot(cell, key[2:], display, q.where[0], units[0])
        if slot is None:
            continue
        if not slot.unit and cell.strip() == display.strip():  # a bare number: the noun its
            slot = replace(slot, unit=_more_unit(" " + head, 0))  # column counts ("Visits")
        near = (label | stem_set(head) | slot.near) - NOISE
        groups = near & GROUP_STEMS
        out.append(Slot(slot.unit, slot.value, slot.shown, near, label, codes, groups))
    return out
